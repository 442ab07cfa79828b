r"""The grammar agent's training run, read top to bottom: one step of Algorithm 1, then the run around it.

1. **The agent and its evaluation**: the untrained policy; avg@k on held-out tasks, really executed.
2. **One training step** (:class:`GRPOLearner`), in the paper's order:

   a. route: which groups are anchors (executed), which are predicted (:meth:`wmrl.step.WMRLStep.route`);
   b. roll out: anchors in the sandbox (and through the world model, for pairs), the rest through
      the world model only (:func:`wmrl.trainer.rollout.rollout`);
   c. scores: per trajectory its best turn on the reward ladder (:mod:`wmrl.reward`), real and predicted;
   d. the WMRL step: Online Debiasing, the :math:`\eta^2` audit, IVD weights, group advantages
      (:class:`wmrl.step.WMRLStep`, pure numpy);
   e. the loss, next to the advantages: :math:`-\sum_g w_g \frac1n\sum_i A_{gi}\log\pi(\tau_{gi})
      + \beta\,\mathrm{KL}(\pi\|\pi_0) - c\,H(\pi)`; one Adam step.

3. **The run**: tasks, sandbox, world model, resume, the loop, checkpoints, the run folder (:mod:`wmrl.runs`).

What goes beyond the paper (active anchors, conditional OD, regions) is the step's business
(:func:`wmrl.beyond.make_step` builds :class:`~wmrl.beyond.BeyondStep` when a run asks for it):
this file has no branch for it.

A world model that counts its requests (the LLM world model) has its counts of each step in the
step's row (``wm_requests``, ``wm_no_reply``, ``wm_defaulted_rate``, ...) and their sums in the
summary's ``world_model``; a step whose verdicts defaulted to pass beyond
``world_model.max_defaulted_share`` stops the run before it is learnt from.

Nothing is lost on a crash: after every step the whole state (policy, optimiser, step object,
RNGs, logs) is checkpointed atomically, and a rerun of the same config resumes from it; for a
fixed seed a resumed run ends where an uninterrupted one ends.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import torch

from wmrl import record as clock
from wmrl.agent import grammar
from wmrl.agent.habits import prior_probabilities
from wmrl.agent.policy import AgentPolicy
from wmrl.beyond import make_step
from wmrl.config import RunConfig
from wmrl.ledger import ComputeLedger
from wmrl.progress import tqdm
from wmrl.provenance import atomic_path
from wmrl.runs import PAIR_COLUMNS, per_category, write_run
from wmrl.step import Routing
from wmrl.trainer.components import make_memo, make_oracle_memo, make_sandbox, make_world_model
from wmrl.trainer.rollout import Scorer, Trajectory, charge_shared_server, rollout, world_model_step, world_model_totals

__all__ = ["GRPOLearner", "evaluate", "make_policy", "train"]


# ================================================================================================
# 1. The agent and its evaluation
# ================================================================================================
def make_policy(seed: int, task_dim: int) -> AgentPolicy:
    """The untrained agent: the grammar's documented prior habits, seeded."""
    torch.manual_seed(seed)
    return AgentPolicy([len(s.options) for s in grammar.SLOTS], task_dim, priors=prior_probabilities())


#: sampling keys: training draws (seed, TRAIN_STREAM, step, ...), evaluation draws (seed, EVAL_STREAM, ...)
TRAIN_STREAM, EVAL_STREAM = 0, 1


def evaluate(policy, tasks, samples: int, max_turns: int, scorer: Scorer, seed: int, step: int) -> list[dict]:
    """avg@k held-out leaderboard percentile per task, with real execution and real feedback.

    Sample ``j`` of task ``t`` draws the same numbers at every evaluation of every arm of a seed
    (:func:`~wmrl.trainer.rollout.row_uniforms`): the arms' evaluations are paired draw by draw.
    """
    n = len(tasks)
    groups = rollout(policy, list(tasks), np.ones(n, bool), np.zeros(n, bool), samples, max_turns, scorer,
                     (int(seed), EVAL_STREAM))
    rows = []
    for task, grp in zip(tasks, groups):
        rows.append({"step": step, "task": task.name, "category": task.category, "samples": samples,
                     "percentile": float(np.mean([t.percentile for t in grp])),
                     "reward": float(np.mean([t.real_reward for t in grp])),
                     "ok_rate": float(np.mean([any(x.real.status == "ok" for x in t.turns) for t in grp]))})
    return rows


# ================================================================================================
# 2. One training step: Algorithm 1
# ================================================================================================
class GRPOLearner:
    """The state that training changes: policy, optimiser, reference policy and the WMRL step (``wmrl``)."""

    def __init__(self, cfg: RunConfig, policy):
        self.cfg = cfg
        self.policy = policy
        self.reference = copy.deepcopy(policy).requires_grad_(False)  # pi_0 for the KL term
        self.optim = torch.optim.Adam(policy.parameters(), lr=cfg.train.lr)
        self.wmrl = make_step(cfg)

    def step(self, tasks: list, routing: Routing, scorer: Scorer, key: tuple) -> dict:
        """Roll out one group per task (sampling key ``key``) as ``routing`` (2a) says, then learn from
        it; returns the step's log, the world model's counts of the step among it (``wm_*``)."""
        t = self.cfg.train
        # -- 2b. roll out: an undecided routing has its anchors chosen after turn 1 (routing.choose) --
        groups = rollout(self.policy, tasks, routing.executed, routing.predicted, t.group_size, t.max_turns, scorer,
                         key, t.temperature, choose=routing.choose)
        wm_row = world_model_step(scorer.world_model)  # before the update: a step of defaults is never learnt
        with scorer.ledger.time("update"):
            return self._learn(groups, np.array([g[0].anchor for g in groups])) | wm_row

    def _learn(self, groups: list[list[Trajectory]], executed: np.ndarray) -> dict:
        cfg = self.cfg.train
        # -- 2c. scores: a trajectory's best turn on the ladder; NaN where never executed / predicted --
        real = np.array([[np.nan if tr.real_reward is None else tr.real_reward for tr in g] for g in groups])
        raw_wm = np.array([[np.nan if tr.wm_reward is None else tr.wm_reward for tr in g] for g in groups])
        flat = [tr for g in groups for tr in g]
        # -- 2d. the WMRL step: rewards R (real on G_E, calibrated r_hat on G_WM), weights w_g, advantages A --
        self.wmrl.read_rollout(groups)
        out = self.wmrl(real, raw_wm, executed)
        # -- 2e. the loss: policy gradient with the fused weights, KL to pi_0, entropy bonus; one Adam step --
        turn_rows = [(i, turn) for i, tr in enumerate(flat) for turn in tr.turns]
        idx = torch.as_tensor([i for i, _ in turn_rows])

        def stack(attr):
            return torch.as_tensor(np.stack([getattr(turn, attr) for _, turn in turn_rows]))

        feats = torch.as_tensor(np.stack([grammar.task_features(flat[i].task) for i, _ in turn_rows]),
                                dtype=torch.float32)
        masks = torch.as_tensor(np.stack([np.concatenate(grammar.option_mask(flat[i].task)) for i, _ in turn_rows]))
        args = (feats, stack("feedback_in"), stack("prev_choices"), masks, stack("choices").long())
        logp_turn, tables = self.policy.evaluate(*args)
        with torch.no_grad():
            _, ref_tables = self.reference.evaluate(*args)
        logp = torch.zeros(len(flat)).index_add(0, idx, logp_turn)  # log pi(tau) = sum over turns
        # g = sum_g w_g (1/n) sum_i A_gi grad log pi(tau_gi)
        coef = torch.as_tensor((out.weights[:, None] * out.advantages / cfg.group_size).ravel(), dtype=torch.float32)
        pg = -(coef * logp).sum()
        kl = sum(((lp.exp() * (lp - rl)).sum(1)) for lp, rl in zip(tables, ref_tables)).mean()
        ent = sum((-(lp.exp() * lp).sum(1)) for lp in tables).mean()
        loss = pg + cfg.kl_coef * kl - cfg.ent_coef * ent
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        # -- what the step logs --
        turns_both = [turn for tr in flat for turn in tr.turns if turn.real is not None and turn.pred is not None]
        return {
            **out.log, "pairs": tuple(p.tolist() for p in out.pair_columns) if out.pairs[0].size else None,
            "loss": loss.item(), "kl": kl.item(), "entropy": ent.item(),
            "real_reward": float(np.nanmean(real)) if np.isfinite(real).any() else np.nan,
            "wm_reward": float(np.nanmean(raw_wm)) if np.isfinite(raw_wm).any() else np.nan,
            "status_acc": float(np.mean([t.real.status == t.pred.status for t in turns_both])) if turns_both else np.nan,
            "mean_turns": float(np.mean([len(tr.turns) for tr in flat])),
        }

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "reference": self.reference.state_dict(),
                "optim": self.optim.state_dict(), "wmrl": self.wmrl.state_dict()}

    def load_state_dict(self, s: dict) -> None:
        self.policy.load_state_dict(s["policy"])
        self.reference.load_state_dict(s["reference"])
        self.optim.load_state_dict(s["optim"])
        self.wmrl.load_state_dict(s["wmrl"])


# ================================================================================================
# 3. The run: setup, resume, the loop, checkpoints, the run folder
# ================================================================================================
def train(cfg: RunConfig, out: Path, pool, preset: str, *, memo_path: str | Path | None = None,
          progress: bool = True) -> dict:
    """Train (resuming if a checkpoint exists), evaluate and write the run folder ``out``; returns the summary.

    Under an execution record (:mod:`wmrl.record`) the run is its own context, named after
    its folder (``run:train/<preset>/<label>/seed<S>``); a resumed run continues it from the position
    its checkpoint saved."""
    out = Path(out)
    ckpt = out / "checkpoint.pt"
    saved = torch.load(ckpt, weights_only=False) if ckpt.exists() else None
    with clock.context(clock.run_context(out), None if saved is None else saved.get("position", 0)):
        return _train(cfg, out, pool, preset, saved, memo_path, progress)


def _train(cfg: RunConfig, out: Path, pool, preset: str, saved: dict | None, memo_path, progress: bool) -> dict:
    t, ev = cfg.train, cfg.eval
    train_tasks = per_category(pool.train, t.train_tasks)
    eval_tasks = per_category(pool.heldout, ev.tasks)
    if not train_tasks or not eval_tasks:
        raise RuntimeError(f"the pool at {pool.root} has no training or no held-out tasks")
    out.mkdir(parents=True, exist_ok=True)
    ledger, eval_ledger = ComputeLedger(), ComputeLedger()
    sandbox = make_sandbox(cfg.sandbox)
    db = make_memo(cfg, pool, out, memo_path)
    wm = make_world_model(cfg.world_model, sandbox, cfg.seed, memo=make_oracle_memo(cfg, pool, memo_path),
                          workers=cfg.sandbox.workers) if cfg.arm_spec.world_model else None
    scorer = Scorer(sandbox, wm, ledger, db, cfg.sandbox.workers)
    eval_scorer = Scorer(sandbox, None, eval_ledger, db, cfg.sandbox.workers)
    learner = GRPOLearner(cfg, make_policy(cfg.seed, len(grammar.task_features(train_tasks[0]))))
    rng = np.random.default_rng(cfg.seed)
    state = {"step": 0, "steps": [], "evals": [], "pairs": [], "wall_s": 0.0}
    ckpt = out / "checkpoint.pt"
    if saved is not None:
        if saved["config"] != cfg.to_dict():
            raise RuntimeError(f"{ckpt} was written with another config; delete it or pass the same settings")
        learner.load_state_dict(saved["learner"])
        rng.bit_generator.state = saved["rng"]
        ledger.load_state_dict(saved["ledger"])
        eval_ledger.load_state_dict(saved["eval_ledger"])
        if db is not None and saved.get("memo"):  # a checkpoint without the memo's counters counts from zero
            db.load_state_dict(saved["memo"])
        state = saved["state"]
    bar = tqdm(range(state["step"], t.steps), desc=f"{cfg.arm} s{cfg.seed}", disable=not progress,
               initial=state["step"], total=t.steps)
    for step in bar:
        t_step = clock.wall()
        # -- 2a. route, then sample one task per group; the world model's sampling depends on (seed, step) --
        routing = learner.wmrl.route()
        tasks = [train_tasks[i] for i in rng.choice(len(train_tasks), size=routing.n_groups)]
        if wm is not None and hasattr(wm, "reseed"):
            wm.reseed([cfg.seed, step])
        log = learner.step(tasks, routing, scorer, (cfg.seed, TRAIN_STREAM, step))
        charge_shared_server(ledger, wm)
        ledger.end_step()
        _record_step(state, step, log)
        bar.set_postfix(reward=f"{log['train_reward']:.3f}", rho=f"{log['rho']:.2f}")
        if ev.due(step + 1, t.steps):
            state["evals"] += evaluate(learner.policy, eval_tasks, ev.samples, t.max_turns, eval_scorer, cfg.seed,
                                       step + 1)
            eval_ledger.end_step()
        state["step"] = step + 1
        state["wall_s"] += clock.wall() - t_step
        if state["step"] % t.checkpoint_every == 0 or state["step"] == t.steps:
            with atomic_path(ckpt) as tmp:
                torch.save({"config": cfg.to_dict(), "learner": learner.state_dict(),
                            "rng": rng.bit_generator.state, "ledger": ledger.state_dict(),
                            "eval_ledger": eval_ledger.state_dict(), "state": state,
                            "memo": db.state_dict() if db is not None else None,
                            "position": clock.position()}, tmp)
    return _finish(cfg, out, preset, learner, state, eval_tasks, eval_scorer, ledger, eval_ledger, db)


def _record_step(state: dict, step: int, log: dict) -> None:
    """The step's row, and its anchor pairs as rows of ``pairs.parquet``."""
    pairs = log.pop("pairs", None)
    if pairs:
        state["pairs"] += [{"step": step, **dict(zip(PAIR_COLUMNS, row))} for row in zip(*pairs)]
    state["steps"].append({"step": step, **log})


def _finish(cfg: RunConfig, out: Path, preset: str, learner: GRPOLearner, state: dict, eval_tasks, eval_scorer,
            ledger: ComputeLedger, eval_ledger: ComputeLedger, db) -> dict:
    """The final evaluation (unless the loop's last one was it) and the run folder; returns the summary."""
    t, ev = cfg.train, cfg.eval
    if not any(r["step"] == t.steps for r in state["evals"]):
        t_eval = clock.wall()
        state["evals"] += evaluate(learner.policy, eval_tasks, ev.final_samples or ev.samples, t.max_turns,
                                   eval_scorer, cfg.seed, t.steps)
        eval_ledger.end_step()
        state["wall_s"] += clock.wall() - t_eval
    memo = {"enabled": db is not None, "hits": db.hits if db else 0, "misses": db.misses if db else 0}
    extra = {"memo": memo}
    if (totals := world_model_totals(state["steps"])) is not None:
        extra["world_model"] = totals
    return write_run(out, cfg, preset, steps=state["steps"], evals=state["evals"], pairs=state["pairs"],
                     ledger=ledger, eval_ledger=eval_ledger, snapshots=learner.wmrl.debiaser.snapshots,
                     wall_s=state["wall_s"], extra=extra)
