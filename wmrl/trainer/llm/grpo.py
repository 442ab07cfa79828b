r"""WMRL on TRL's GRPOTrainer: the rollout function, the reward hook and the bookkeeping callback.

TRL owns the GRPO update (sequence log-probs, the KL to the initial policy, the entropy bonus,
the optimiser, gradient accumulation, checkpoints); WMRL plugs in at three places:

1. :class:`WMRLRollout` is GRPOTrainer's ``rollout_func``. Once per generation batch it asks the
   WMRL step for this step's routing (every process holds the same seeded step object, so every
   process selects the same anchor groups without communicating), maps its rows to groups
   (global row index // ``num_generations``), and rolls out multi-turn trajectories
   (:func:`wmrl.trainer.llm.rollout.rollout`): executed groups get the sandbox's feedback, the
   others the world model's. It returns the token ids with ``env_mask`` (feedback tokens 0: out
   of the loss) and, per row, the real reward and the raw world-model score.
2. :class:`WMRLReward` is the reward function. It gathers the rows of every process, calls the
   WMRL step (Online Debiasing, the :math:`\eta^2` audit, IVD weights; :mod:`wmrl.step`), and
   returns :math:`G\,w_g R_{gi}`. With TRL's ``scale_rewards="none"`` the advantage is
   :math:`A_{gi} = r_{gi} - \mathrm{mean}_j r_{gj}`, linear in a group's rewards, so a group
   scaled by :math:`G w_g` gets advantages :math:`G w_g A_{gi}`: the fused gradient
   :math:`g = \sum_g w_g \frac1n \sum_i A_{gi} \nabla\log\pi(\tau_{gi})` times :math:`G`, which is
   plain GRPO's scale when every :math:`w_g = 1/G` (``tests/test_llm_trainer.py`` checks this on
   TRL's own advantage code).
3. :class:`WMRLCallback` closes each step: it bills the update's seconds to the compute ledger,
   logs the LLM world model's counts of the step (requests, parse failures, verdicts defaulted to
   PASS: :meth:`~wmrl.world_model.llm.LLMWorldModel.step_stats`) into the step's row, evaluates on
   held-out tasks on schedule, and stores the step object, the ledgers and the run's logs next to
   each of TRL's checkpoints, so that a killed run resumes where it stopped. The run's world-model
   totals are the sums of the logged rows (:meth:`RunLog.world_model_totals`), so a resumed run
   counts the steps before its restart too.

Under several processes every process holds a share of a step's rows: the reward hook gathers
them (rewards and the step's statistics), the callback sums the world model's counts over the
processes, and a checkpoint stores the ledgers summed over the processes (:meth:`RunLog.merged_state`);
a resumed run gives those sums to the main process, whose bills they already include.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import torch
from transformers import TrainerCallback

from wmrl import record as clock
from wmrl.ledger import ComputeLedger
from wmrl.provenance import atomic_path
from wmrl.trainer.llm.rollout import RolloutSettings, rollout, sampling_logprobs
from wmrl.trainer.memo import ExecutionMemo
from wmrl.trainer.rollout import charge_shared_server, world_model_totals
from wmrl.world_model.llm import stat_rates

__all__ = ["SAID", "RunLog", "WMRLCallback", "WMRLReward", "WMRLRollout", "prompt_key", "row_stats", "step_stats",
           "summed_stats"]

STATE_FILE = "wmrl_state.pt"
#: the prefix of a step's status-confusion counts on the anchors (``said_ok_ran_timeout``: predicted ok, timed out)
SAID = "said_"
#: the prefix of the world model's per-step counts in a step's row (``wm_parse_failures``, ...)
WM_STAT = "wm_"


def prompt_key(prompt: list[dict]) -> str:
    """A conversation's identity (TRL hands ``rollout_func`` the prompts only, not the other columns)."""
    return "\x1e".join(f"{m['role']}\x1f{m['content']}" for m in prompt)


@dataclass
class RunLog:
    """What a run records besides the model: per-step rows, evaluations, anchor pairs, two ledgers."""

    steps: list[dict] = field(default_factory=list)
    evals: list[dict] = field(default_factory=list)
    pairs: list[dict] = field(default_factory=list)
    wall_s: float = 0.0
    ledger: ComputeLedger = field(default_factory=ComputeLedger)
    eval_ledger: ComputeLedger = field(default_factory=ComputeLedger)
    pending: dict = field(default_factory=dict)  # the current step's row, filled by rollout and reward
    rollout_s: float = 0.0  # seconds of this step spent in rollout_func and the reward hook
    memo: ExecutionMemo | None = None  # the run's execution memo, whose hit and miss counters are checkpointed

    def state_dict(self) -> dict:
        return {"steps": self.steps, "evals": self.evals, "pairs": self.pairs, "wall_s": self.wall_s,
                "ledger": self.ledger.state_dict(), "eval_ledger": self.eval_ledger.state_dict(),
                "memo": self.memo.state_dict() if self.memo is not None else None}

    def load_state_dict(self, s: dict, main: bool = True) -> None:
        """Restore ``s``; its ledgers and memo counters (every process's, :meth:`merged_state`) go to the ``main``
        process only, the others' start at the saved step with nothing billed or counted, so the run's sum counts
        each bill and each memo lookup once."""
        self.steps, self.evals, self.pairs, self.wall_s = list(s["steps"]), list(s["evals"]), list(s["pairs"]), s["wall_s"]
        for ledger, saved in ((self.ledger, s["ledger"]), (self.eval_ledger, s["eval_ledger"])):
            ledger.load_state_dict(saved if main else {"step": saved["step"], "rows": [], "apart": []})
        if self.memo is not None and s.get("memo"):  # a checkpoint from before the counters were kept has none
            self.memo.load_state_dict(s["memo"] if main else {"hits": 0, "misses": 0})

    def merged_state(self) -> dict:
        """:meth:`state_dict` with each ledger and the memo counters summed over the processes (a collective: every
        process calls it)."""
        from accelerate import PartialState
        from accelerate.utils import gather_object

        state = self.state_dict()
        if PartialState().num_processes > 1:
            parts = gather_object([(state["ledger"], state["eval_ledger"], state["memo"])])
            state["ledger"] = ComputeLedger.summed([ComputeLedger.from_state_dict(p[0]) for p in parts]).state_dict()
            state["eval_ledger"] = ComputeLedger.summed(
                [ComputeLedger.from_state_dict(p[1]) for p in parts]).state_dict()
            if state["memo"] is not None:
                state["memo"] = {k: sum(p[2][k] for p in parts) for k in state["memo"]}
        return state

    def world_model_totals(self) -> dict | None:
        """The LLM world model's counts summed over the logged steps, with the run's rates (None: no LLM world model)."""
        return world_model_totals(self.steps)


class WMRLRollout:
    """GRPOTrainer's ``rollout_func``: routing, multi-turn rollouts, rewards per row."""

    def __init__(self, step, tasks_by_prompt: dict, scorer, settings: RolloutSettings, seed: int, log: RunLog,
                 generator_for, world_model=None):
        self.step, self.tasks_by_prompt, self.scorer, self.settings = step, tasks_by_prompt, scorer, settings
        self.seed, self.log, self.generator_for, self.world_model = int(seed), log, generator_for, world_model
        self.routing = None
        self.trajectories: list = []

    def __call__(self, prompts: list, trainer) -> dict:
        t0 = clock.wall()
        n, acc = trainer.num_generations, trainer.accelerator
        offset = acc.process_index * len(prompts)
        routing = self.step.route()  # once per generation batch, identically on every process
        n_groups = acc.num_processes * len(prompts) // n
        if routing.n_groups != n_groups:
            raise RuntimeError(f"the WMRL step routes {routing.n_groups} groups but the trainer's generation batch "
                               f"holds {n_groups} groups of {n}; build the trainer with the step's group count")
        groups = [(offset + i) // n for i in range(len(prompts))]
        tasks = [self.tasks_by_prompt[prompt_key(p)] for p in prompts]
        step_no = trainer.state.global_step
        if self.world_model is not None and hasattr(self.world_model, "reseed"):
            self.world_model.reseed([self.seed, step_no])  # replayable: depends on (seed, step) only
        rows = rollout(self.generator_for(trainer), trainer.processing_class, tasks, routing.executed[groups],
                       routing.predicted[groups], self.scorer, self.settings,
                       seed=self.seed * 1_000_003 + step_no * 10_007 + acc.process_index)
        self.routing, self.trajectories = routing, rows
        stats = [row_stats(r) for r in rows]
        self.log.pending = step_stats(stats)  # this process's rows; the reward hook replaces it with every row's
        self.log.rollout_s += clock.wall() - t0
        return {
            "prompt_ids": [r.prompt_ids for r in rows],
            "completion_ids": [r.completion_ids for r in rows],
            "logprobs": sampling_logprobs(rows),  # vLLM's, for TRL's importance-sampling correction
            "env_mask": [r.env_mask for r in rows],
            "wmrl_row": [offset + i for i in range(len(rows))],
            "wmrl_real": [r.real_reward for r in rows],
            "wmrl_pred": [r.wm_reward for r in rows],
            "wmrl_stats": stats,
        }


def row_stats(r) -> tuple:
    """What a step's row of statistics needs from one trajectory: ``(turns, first turn malformed, completion
    tokens, ran ok (None: not executed), the (predicted, real) status of each turn both run and predicted)``."""
    both = tuple((t.pred.status, t.real.status) for t in r.turns if t.real is not None and t.pred is not None)
    ok = any(t.real is not None and t.real.status == "ok" for t in r.turns) if r.executed else None
    return len(r.turns), bool(r.turns[0].malformed), sum(len(t.reply_ids) for t in r.turns), ok, both


def step_stats(stats: list[tuple]) -> dict:
    """A step's rollout statistics from :func:`row_stats` of its rows: means, and on the turns both run and
    predicted (the anchors) the world model's status accuracy and its confusion counts, one
    ``said_<predicted>_ran_<real>`` column per pair that occurred (:data:`SAID`)."""
    both = [pair for s in stats for pair in s[4]]
    out = {
        "mean_turns": float(np.mean([s[0] for s in stats])),
        "malformed_rate": float(np.mean([s[1] for s in stats])),
        "completion_tokens": float(np.mean([s[2] for s in stats])),
        "real_ok_rate": _rate([s[3] for s in stats if s[3] is not None]),
        "status_acc": float(np.mean([p == r for p, r in both])) if both else math.nan,
    }
    for (said, ran), n in sorted(Counter(both).items()):
        out[f"{SAID}{said}_ran_{ran}"] = n
    return out


def _rate(flags) -> float:
    flags = list(flags)
    return float(np.mean(flags)) if flags else math.nan


class WMRLReward:
    """The reward hook: the WMRL step on the gathered batch, returning :math:`G\\,w_g R_{gi}` per local row."""

    __name__ = "wmrl"

    def __init__(self, step, rollout_func: WMRLRollout, log: RunLog, trainer_ref):
        self.step, self.rollout_func, self.log, self.trainer_ref = step, rollout_func, log, trainer_ref

    def __call__(self, prompts, completions, wmrl_row, wmrl_real, wmrl_pred, wmrl_stats=None,
                 **kwargs) -> list[float | None]:
        from accelerate.utils import gather_object

        t0 = clock.wall()
        trainer = self.trainer_ref()
        n = trainer.num_generations
        local_stats = wmrl_stats if wmrl_stats is not None else [None] * len(wmrl_row)
        rows = gather_object(list(zip(wmrl_row, wmrl_real, wmrl_pred, local_stats)))
        rows.sort(key=lambda r: r[0])
        if wmrl_stats is not None:  # the step's statistics over every process's rows
            self.log.pending = step_stats([r[3] for r in rows])
        wm = getattr(self.rollout_func, "world_model", None)
        if wm is not None and hasattr(wm, "check_defaulted"):  # before the step is learnt from, on every process
            wm.check_defaulted(summed_stats(wm.pending_stats()))
        real = np.array([np.nan if r[1] is None else r[1] for r in rows], float).reshape(-1, n)
        pred = np.array([np.nan if r[2] is None else r[2] for r in rows], float).reshape(-1, n)
        routing = self.rollout_func.routing
        out = self.step(real, pred, routing.executed)
        scaled = len(out.weights) * out.weights[:, None] * out.rewards  # G w_g R_gi: advantages become G w_g A_gi
        p, c, t = out.pairs
        step_no = trainer.state.global_step
        self.log.pairs += [{"step": step_no, "pred": float(a), "calibrated": float(b), "true": float(d)}
                           for a, b, d in zip(p, c, t)]
        wm = [r[2] for r in rows if r[2] is not None]
        re = [r[1] for r in rows if r[1] is not None]
        self.log.pending.update(out.log, real_reward=float(np.mean(re)) if re else math.nan,
                                wm_reward=float(np.mean(wm)) if wm else math.nan)
        local = {row: i for i, row in enumerate(r[0] for r in rows)}
        flat = scaled.ravel()
        self.log.rollout_s += clock.wall() - t0
        return [None if np.isnan(flat[local[r]]) else float(flat[local[r]]) for r in wmrl_row]


class WMRLCallback(TrainerCallback):
    """Closes each optimiser step: ledger, evaluation on schedule, WMRL state beside TRL's checkpoints."""

    def __init__(self, step, log: RunLog, evaluate, evaluate_after, world_model=None, config: dict | None = None):
        self.step, self.log, self.evaluate = step, log, evaluate
        self.evaluate_after = evaluate_after  # evaluate_after(steps done) -> whether the schedule evaluates there
        self.world_model = world_model
        self.config = config  # the run's identity, saved beside each checkpoint (a resume must match it)
        self._t0 = 0.0

    def on_step_begin(self, args, state, control, **kwargs):
        self._t0 = clock.wall()
        self.log.rollout_s = 0.0

    def on_step_end(self, args, state, control, model=None, **kwargs):
        wall = clock.wall() - self._t0
        # the optimiser's share: forward/backward of the policy and the reference model, the optimiser step
        self.log.ledger.charge("update", max(0.0, wall - self.log.rollout_s))
        self._charge_shared_server()
        self.log.ledger.end_step()
        wm = self.world_model
        row = {"step": state.global_step - 1, **self.log.pending}
        if wm is not None and hasattr(wm, "step_stats"):  # checked before the update, over every process's counts
            row.update({WM_STAT + k: v for k, v in summed_stats(wm.step_stats(check=False)).items()})
        self.log.steps.append(row)
        self.log.pending = {}
        self.log.wall_s += wall
        if self.evaluate_after(state.global_step):
            t0 = clock.wall()
            self.log.evals += self.evaluate(model, state.global_step)
            self.log.eval_ledger.end_step()
            self.log.wall_s += clock.wall() - t0

    def _charge_shared_server(self):
        """The step's share of a world-model server every process calls, from every process's call spans (a
        collective), so that the run's summed ledger bills the server's busy time once."""
        wm = self.world_model
        if wm is None or not getattr(wm, "server_shared", False):
            return
        from accelerate import PartialState

        mine, ps = wm.take_server_spans(), PartialState()
        if ps.num_processes > 1:
            from accelerate.utils import gather_object

            every = gather_object([mine])
        else:
            every = [mine]
        charge_shared_server(self.log.ledger, wm, every, ps.process_index)

    def on_log(self, args, state, control, logs=None, **kwargs):
        """TRL's own metrics of the step (loss, KL, entropy, ...) join the step's row; with vLLM, so do its
        importance-sampling ratios and the sampler's log-prob gap, which say how far the correction reaches."""
        if not logs or not self.log.steps or "loss" not in logs:
            return
        keep = {"loss": "loss", "kl": "kl", "entropy": "entropy", "grad_norm": "grad_norm",
                "learning_rate": "lr", "completions/mean_length": "mean_length",
                **{f"sampling/importance_sampling_ratio/{s}": f"is_ratio_{s}" for s in ("min", "mean", "max")},
                **{f"sampling/sampling_logp_difference/{s}": f"sampler_logp_gap_{s}" for s in ("mean", "max")}}
        self.log.steps[-1].update({new: float(logs[old]) for old, new in keep.items() if old in logs})

    def on_save(self, args, state, control, **kwargs):
        from accelerate import PartialState
        from accelerate.utils import gather_object

        folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
        log = self.log.merged_state()  # every process, before the main one alone writes
        # each process's place in its execution record (None without one), where a resumed run goes on from
        positions = [clock.position()]
        if PartialState().num_processes > 1:
            positions = gather_object(positions)
        if os.path.isdir(folder) and state.is_world_process_zero:
            with atomic_path(os.path.join(folder, STATE_FILE)) as tmp:  # a kill mid-write leaves no half file
                torch.save({"step": self.step.state_dict(), "log": log, "config": self.config,
                            "torch_threads": torch.get_num_threads(), "positions": positions}, tmp)


def summed_stats(stats: dict) -> dict:
    """The world model's counts of a step summed over the processes (each asks about its own rows), rates
    recomputed from the sums (:func:`~wmrl.world_model.llm.stat_rates`). A collective under several processes."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    if PartialState().num_processes == 1:
        return stats
    parts = gather_object([stats])
    counts = {k: sum(p.get(k, 0) for p in parts) for k in stats if not k.endswith("_rate")}
    return counts | stat_rates(counts)
