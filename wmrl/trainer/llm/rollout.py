"""Multi-turn rollouts of the LLM agent, scored by the sandbox, the world model, or both.

The conversation of one trajectory, as token ids (what GRPO trains on, and what TRL receives)::

    prompt | reply 1 | feedback 1 | reply 2 | feedback 2 | ... | reply k
             ^ model    ^ env        ^ model

Each reply is sampled from the policy given everything before it; each feedback turn is the chat
template's user turn with the report of running the reply (real on executed rows, the world
model's simulation elsewhere). ``env_mask`` is 1 on the model's tokens and 0 on feedback tokens,
so the feedback is context for later turns but never a target of the loss. A turn whose code
runs ok (really, or in the world model's judgement on predicted rows) ends the trajectory; so
does the last of ``max_turns``. Each reply is at most ``max_new_tokens`` long, on every generator.

The conversation is never re-rendered: the tokens generated so far stay as they were, and each
feedback turn appends only the chat template's own text between the end of a reply and the
start of the next (:func:`feedback_ids`). Re-rendering would not extend the generated tokens
with templates that rewrite history, as Qwen3's does: it drops the ``<think>`` blocks of earlier
assistant turns. The code of a reply is taken after its thinking
(:func:`wmrl.agent.llm.solution.extract_code`), and ``enable_thinking`` is handed to the template.

With vLLM, the sampler's per-token log-probs of each reply travel with the trajectory
(:attr:`LLMTrajectory.logprobs`, feedback positions 0.0, which ``env_mask`` keeps out of every
term), for TRL's importance-sampling correction of the gap between vLLM and the trained policy.

Rewards (Sec. 3.1, the ladder of :mod:`wmrl.reward`): a reply without a code block (under the
``plan`` contract: a reply that is not a valid plan, its feedback saying why) is
``malformed`` (0.0, neither run nor predicted); the trajectory's reward is its best turn's,
separately for the real runs (executed rows) and the world model's predictions (predicted rows),
so an anchor row carries the ``(r_hat, r)`` pair Online Debiasing needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wmrl.agent.llm.prompt import feedback_message, task_messages
from wmrl.agent.llm.solution import NO_CODE, solution_for
from wmrl.config import LLMConfig, TrainConfig
from wmrl.reward import ladder_reward, trajectory_reward
from wmrl.sandbox import SandboxFacts
from wmrl.vocabulary import feedback_bucket
from wmrl.world_model.base import feedback_text

__all__ = ["LLMTrajectory", "LLMTurn", "RolloutSettings", "conversation_ids", "feedback_ids", "rollout",
           "sampling_logprobs"]


@dataclass(frozen=True, kw_only=True)
class RolloutSettings:
    """How a rollout runs; the defaults are the configuration's (:class:`~wmrl.config.LLMConfig`, ``TrainConfig``).

    ``sandbox`` is the sandbox that runs the code: the first turn's prompt states its limits.
    """

    sandbox: SandboxFacts
    contract: str = LLMConfig.contract
    max_turns: int = TrainConfig.max_turns
    max_new_tokens: int = LLMConfig.max_new_tokens  # the per-turn cap of every generator
    obs_max_tokens: int = LLMConfig.obs_max_tokens
    enable_thinking: bool = LLMConfig.enable_thinking

    def __post_init__(self):
        for name in ("max_turns", "max_new_tokens", "obs_max_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"RolloutSettings.{name} must be >= 1, got {getattr(self, name)}")

    def messages(self, task) -> list[dict]:
        """The first turn's conversation for ``task`` (what TRL's data set holds, and what the rollout renders)."""
        return task_messages(task, self.contract, self.sandbox)


@dataclass
class LLMTurn:
    reply_ids: list[int]
    reply: str
    code: str | None  # the extracted code block, or the plan's text (None: no code block)
    script: str | None  # what the sandbox runs (the code, the code in the fit_predict scaffold, the plan rendered)
    real: object | None = None  # ExecutionResult on executed rows
    pred: object | None = None  # Prediction on predicted rows
    feedback_ids: list[int] = field(default_factory=list)
    reply_logprobs: list[float | None] | None = None  # the sampler's, per reply token (None: not reported)
    reason: str = NO_CODE  # why a malformed reply has no script (what its feedback says)

    @property
    def malformed(self) -> bool:
        return self.script is None

    @property
    def real_reward(self) -> float | None:
        if self.malformed:
            return 0.0
        return None if self.real is None else ladder_reward(self.real.status, self.real.percentile)

    @property
    def pred_reward(self) -> float | None:
        if self.malformed:
            return 0.0
        return None if self.pred is None else self.pred.score

    def status(self, source: str) -> str:
        if self.malformed:
            return "malformed"
        return (self.real if source == "real" else self.pred).status

    def feedback(self, source: str) -> str:
        """The report the next turn reads: the sandbox's (``real``) or the world model's (``wm``)."""
        if self.malformed:
            return feedback_text("malformed", None, None, None, self.reason)
        if source == "wm":
            return self.pred.feedback_text
        r = self.real
        bucket = feedback_bucket(r.percentile) if r.status == "ok" else None
        return feedback_text(r.status, r.error_type, r.error_line, bucket, r.reason if r.status != "ok" else "")


@dataclass
class LLMTrajectory:
    task: object
    group: int
    executed: bool
    predicted: bool
    prompt_ids: list[int]
    turns: list[LLMTurn] = field(default_factory=list)

    @property
    def completion_ids(self) -> list[int]:
        return [t for turn in self.turns for t in (*turn.reply_ids, *turn.feedback_ids)]

    @property
    def env_mask(self) -> list[int]:
        return [m for turn in self.turns for m in ([1] * len(turn.reply_ids) + [0] * len(turn.feedback_ids))]

    @property
    def logprobs(self) -> list[float | None] | None:
        """The sampler's log-prob of each completion token, aligned with :attr:`completion_ids`.

        Feedback tokens were not sampled: they get 0.0, and ``env_mask`` keeps them out of the loss
        and of TRL's importance-sampling ratio. None when a reply's log-probs were not reported.
        """
        if any(turn.reply_logprobs is None for turn in self.turns):
            return None
        return [lp for turn in self.turns for lp in (*turn.reply_logprobs, *[0.0] * len(turn.feedback_ids))]

    @property
    def real_reward(self) -> float | None:
        """Best real turn (the trajectory reward of Sec. 3.1); None if never executed."""
        rs = [t.real_reward for t in self.turns if t.real_reward is not None] if self.executed else []
        return trajectory_reward(rs) if rs else None

    @property
    def wm_reward(self) -> float | None:
        """Best predicted turn; None if the world model was not asked."""
        ps = [t.pred_reward for t in self.turns if t.pred_reward is not None] if self.predicted else []
        return trajectory_reward(ps) if ps else None

    @property
    def percentile(self) -> float:
        """Leaderboard position score of the best real turn (0 without a valid submission)."""
        oks = [t.real.percentile for t in self.turns if t.real is not None and t.real.status == "ok"]
        return max(oks) if oks else 0.0


def sampling_logprobs(rows: list[LLMTrajectory]) -> list[list[float | None]] | None:
    """Every row's :attr:`LLMTrajectory.logprobs` (TRL's ``logprobs``), or None when any row lacks them."""
    out = [r.logprobs for r in rows]
    return None if any(lp is None for lp in out) else out


def _render(tokenizer, messages: list[dict], enable_thinking: bool) -> str:
    return tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False,
                                         enable_thinking=enable_thinking)


def conversation_ids(tokenizer, messages: list[dict], enable_thinking: bool = LLMConfig.enable_thinking) -> list[int]:
    """Token ids of ``messages`` rendered by the chat template, ending with the assistant's header."""
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True, return_dict=True,
                                              enable_thinking=enable_thinking)["input_ids"])


#: stands for the reply while the template renders what follows it (no template or report contains it)
_REPLY = "\u2063wmrl-reply\u2063"


def feedback_ids(tokenizer, messages: list[dict], reply_ids: list[int], feedback: dict,
                 enable_thinking: bool = LLMConfig.enable_thinking) -> list[int]:
    """The tokens between the end of a reply and the start of the next: the template's user turn.

    ``messages`` is the conversation before the reply. The template renders it with a placeholder
    reply and the ``feedback`` message after it, and with the next generation prompt; the text
    after the placeholder is what the template puts between two replies (the assistant's end of
    turn, the user turn, the next assistant header). A reply that ended with the end-of-turn token
    already holds that token, so its text is not repeated; a reply cut by the token budget gets it
    here. Nothing generated is re-rendered, so the conversation's tokens always extend the ones
    the model sampled, whatever the template does to earlier turns.
    """
    rendered = _render(tokenizer, [*messages, {"role": "assistant", "content": _REPLY}, feedback], enable_thinking)
    if rendered.count(_REPLY) != 1:
        raise RuntimeError("the chat template did not render the assistant's reply exactly once; multi-turn "
                           "rollouts need a template that renders each assistant message's content")
    tail = rendered.split(_REPLY, 1)[1]
    if reply_ids and reply_ids[-1] in set(tokenizer.all_special_ids):
        end = tokenizer.decode([reply_ids[-1]], skip_special_tokens=False)
        if end and tail.startswith(end):
            tail = tail[len(end):]
    return list(tokenizer(tail, add_special_tokens=False)["input_ids"])


def _report(tokenizer, text: str, turn: int, max_turns: int, obs_max_tokens: int, contract: str = "script") -> dict:
    """The feedback turn's message, its report cut to ``obs_max_tokens`` tokens (the paper's 1024)."""
    text = tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"][:obs_max_tokens])
    return feedback_message(text, turn, max_turns, contract)


def rollout(generator, tokenizer, tasks: list, executed: np.ndarray, predicted: np.ndarray, scorer,
            settings: RolloutSettings, seed: int) -> list[LLMTrajectory]:
    """Roll out one trajectory per row (``tasks[i]``, ``executed[i]``, ``predicted[i]``), turn by turn.

    All active rows advance together: one batched generation per turn, one batched sandbox call
    for the executed rows, one batched world-model call for the predicted rows. ``seed`` fixes the
    sampling of this rollout (turn ``t`` samples with ``seed + 7919 t``). Every turn calls the
    generator, with an empty list once no row is left (server-mode vLLM needs every process to call).
    """
    s = settings
    rows = []
    messages = []
    for i, task in enumerate(tasks):
        msgs = s.messages(task)
        messages.append(msgs)
        rows.append(LLMTrajectory(task, i, bool(executed[i]), bool(predicted[i]),
                                  conversation_ids(tokenizer, msgs, s.enable_thinking)))
    contexts = [list(r.prompt_ids) for r in rows]
    active = list(range(len(rows)))
    for turn in range(1, s.max_turns + 1):
        with scorer.ledger.time("generation", count=len(active)):
            replies, logprobs = generator.generate([contexts[i] for i in active], s.max_new_tokens,
                                                   seed + 7919 * turn)
        if len(replies) != len(active):
            raise RuntimeError(f"the generator returned {len(replies)} completions for {len(active)} contexts")
        turns = {}
        for k, (i, ids) in enumerate(zip(active, replies)):
            if len(ids) > s.max_new_tokens:
                raise RuntimeError(f"the generator returned a turn of {len(ids)} tokens, over the per-turn "
                                   f"budget max_new_tokens={s.max_new_tokens}")
            text = tokenizer.decode(ids, skip_special_tokens=True)
            sol = solution_for(rows[i].task, text, s.contract)
            turns[i] = LLMTurn(list(ids), text, sol.code, sol.script, reason=sol.reason,
                               reply_logprobs=None if logprobs is None else list(logprobs[k]))
            contexts[i] += list(ids)
        runnable = [i for i in active if not turns[i].malformed]
        ex = [i for i in runnable if rows[i].executed]
        pr = [i for i in runnable if rows[i].predicted]
        for i, res in zip(ex, scorer.execute([(rows[i].task, turns[i].script) for i in ex])):
            turns[i].real = res
        for i, p in zip(pr, scorer.predict([(rows[i].task, turns[i].script) for i in pr])):
            turns[i].pred = p
        still = []
        for i in active:
            t = turns[i]
            rows[i].turns.append(t)
            source = "real" if rows[i].executed else "wm"
            if t.status(source) == "ok" or turn == s.max_turns:
                continue
            report = _report(tokenizer, t.feedback(source), turn, s.max_turns, s.obs_max_tokens, s.contract)
            t.feedback_ids = feedback_ids(tokenizer, messages[i], t.reply_ids, report, s.enable_thinking)
            messages[i] = [*messages[i], {"role": "assistant", "content": t.reply}, report]
            contexts[i] += t.feedback_ids
            still.append(i)
        active = still
    return rows

