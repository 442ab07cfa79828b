"""Multi-turn rollouts of the LLM agent, scored by the sandbox, the world model, or both.

The conversation of one trajectory, as token ids (what GRPO trains on, and what TRL receives)::

    prompt | reply 1 | feedback 1 | reply 2 | feedback 2 | ... | reply k
             ^ model    ^ env        ^ model

Each reply is sampled from the policy given everything before it; each feedback turn is the chat
template's user turn with the report of running the reply (real on executed rows, the world
model's simulation elsewhere). ``env_mask`` is 1 on the model's tokens and 0 on feedback tokens,
so the feedback is context for later turns but never a target of the loss. A turn whose code
runs ok (really, or in the world model's judgement on predicted rows) ends the trajectory; so
does the last of ``max_turns``.

Rewards (Sec. 3.1, the ladder of :mod:`wmrl.reward`): a reply without a code block is
``malformed`` (0.0, neither run nor predicted); the trajectory's reward is its best turn's,
separately for the real runs (executed rows) and the world model's predictions (predicted rows),
so an anchor row carries the ``(r_hat, r)`` pair Online Debiasing needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from wmrl.agent.llm.prompt import feedback_message, task_messages
from wmrl.agent.llm.solution import assemble, extract_code
from wmrl.reward import ladder_reward, trajectory_reward
from wmrl.vocabulary import feedback_bucket
from wmrl.world_model.base import feedback_text

__all__ = ["LLMTrajectory", "LLMTurn", "RolloutSettings", "conversation_ids", "rollout"]


@dataclass(frozen=True)
class RolloutSettings:
    contract: str = "script"
    max_turns: int = 4  # paper: up to 4 turns
    max_new_tokens: int = 4096  # paper: 4096 tokens per turn
    obs_max_tokens: int = 1024  # paper: observations cut to 1024 tokens
    time_limit_s: float = 1200.0
    memory_mb: int = 2048


@dataclass
class LLMTurn:
    reply_ids: list[int]
    reply: str
    code: str | None  # the extracted code block (None: malformed)
    script: str | None  # what the sandbox runs (the code, or the code in the fit_predict scaffold)
    real: object | None = None  # ExecutionResult on executed rows
    pred: object | None = None  # Prediction on predicted rows
    feedback_ids: list[int] = field(default_factory=list)

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
            return feedback_text("malformed", None, None, None, "the reply had no ```python code block")
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


def conversation_ids(tokenizer, messages: list[dict]) -> list[int]:
    """Token ids of ``messages`` rendered by the chat template, ending with the assistant's header."""
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                              return_dict=True)["input_ids"])


def _feedback_turn(tokenizer, messages: list[dict], context_ids: list[int], reply: str, text: str,
                   turn: int, max_turns: int, obs_max_tokens: int) -> tuple[list[int], list[dict]]:
    """The tokens between the end of a reply and the start of the next: the template's user turn.

    Rendered by the chat template from the whole conversation and cut where the tokens generated
    so far end, so the model sees exactly the format the template prescribes. Returns the tokens
    and the conversation with the reply and the feedback appended. The report is cut to
    ``obs_max_tokens`` first.
    """
    text = tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"][:obs_max_tokens])
    conversation = messages + [{"role": "assistant", "content": reply}, feedback_message(text, turn, max_turns)]
    so_far = tokenizer.decode(context_ids)
    full = tokenizer.apply_chat_template(conversation, add_generation_prompt=True, tokenize=False)
    if not full.startswith(so_far):
        raise RuntimeError("the chat template does not extend the conversation it rendered before; "
                           "multi-turn rollouts need a template that renders a prefix the same way each time")
    return tokenizer(full[len(so_far):], add_special_tokens=False)["input_ids"], conversation


def rollout(generator, tokenizer, tasks: list, executed: np.ndarray, predicted: np.ndarray, scorer,
            settings: RolloutSettings, seed: int) -> list[LLMTrajectory]:
    """Roll out one trajectory per row (``tasks[i]``, ``executed[i]``, ``predicted[i]``), turn by turn.

    All active rows advance together: one batched generation per turn, one batched sandbox call
    for the executed rows, one batched world-model call for the predicted rows. ``seed`` fixes the
    sampling of this rollout (turn ``t`` samples with ``seed + 7919 t``).
    """
    s = settings
    rows = []
    messages = []
    for i, task in enumerate(tasks):
        msgs = task_messages(task, s.contract, s.time_limit_s, s.memory_mb)
        messages.append(msgs)
        rows.append(LLMTrajectory(task, i, bool(executed[i]), bool(predicted[i]), conversation_ids(tokenizer, msgs)))
    contexts = [list(r.prompt_ids) for r in rows]
    active = list(range(len(rows)))
    for turn in range(1, s.max_turns + 1):
        with scorer.ledger.time("generation", count=len(active)):
            replies, _ = generator.generate([contexts[i] for i in active], s.max_new_tokens, seed + 7919 * turn)
        turns = {}
        for i, ids in zip(active, replies):
            text = tokenizer.decode(ids, skip_special_tokens=True)
            code = extract_code(text)
            script = assemble(rows[i].task, code, s.contract)
            turns[i] = LLMTurn(list(ids), text, code, script)
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
            t.feedback_ids, messages[i] = _feedback_turn(tokenizer, messages[i], contexts[i], t.reply,
                                                         t.feedback(source), turn, s.max_turns, s.obs_max_tokens)
            contexts[i] += t.feedback_ids
            still.append(i)
        active = still
    return rows

