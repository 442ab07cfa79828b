"""The grammar agent's training run: train, evaluate on held-out tasks, write the run folder.

A thin driver: the WMRL step (:mod:`wmrl.step`) does the method, :class:`~wmrl.trainer.grpo.GRPOLearner`
the policy update, :func:`~wmrl.trainer.rollout.rollout` the multi-turn rollouts; this module
wires them to the task pool, the sandbox and the world model, evaluates, checkpoints and writes
the files of :mod:`wmrl.runs`.

A world model that counts its requests (the LLM world model) has its counts of each step in the
step's row (``wm_requests``, ``wm_no_reply``, ``wm_defaulted_rate``, ...) and their sums in the
summary's ``world_model``; a step whose verdicts defaulted to pass beyond
``world_model.max_defaulted_share`` stops the run before it is learnt from.

Nothing is lost on a crash: after every step the whole state (policy, optimiser, step object,
RNGs, logs) is checkpointed atomically, and a rerun of the same config resumes from it; for a
fixed seed a resumed run ends where an uninterrupted one ends.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from wmrl import record as clock
from wmrl.agent import grammar
from wmrl.agent.habits import prior_probabilities
from wmrl.agent.policy import AgentPolicy
from wmrl.config import RunConfig
from wmrl.ledger import ComputeLedger
from wmrl.progress import tqdm
from wmrl.provenance import atomic_path
from wmrl.runs import PAIR_COLUMNS, per_category, write_run
from wmrl.trainer.components import make_memo, make_oracle_memo, make_sandbox, make_world_model
from wmrl.trainer.grpo import GRPOLearner
from wmrl.trainer.rollout import Scorer, charge_shared_server, rollout, world_model_totals

__all__ = ["evaluate", "make_policy", "train"]


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
        if db is not None and saved.get("memo"):  # a checkpoint from before the counters were kept has none
            db.load_state_dict(saved["memo"])
        state = saved["state"]
    bar = tqdm(range(state["step"], t.steps), desc=f"{cfg.arm} s{cfg.seed}", disable=not progress,
               initial=state["step"], total=t.steps)
    for step in bar:
        t_step = clock.wall()
        routing = learner.wmrl.route()
        tasks = [train_tasks[i] for i in rng.choice(len(train_tasks), size=routing.n_groups)]
        if wm is not None and hasattr(wm, "reseed"):
            wm.reseed([cfg.seed, step])  # the world model's sampling depends on (seed, step) only: resumable
        log = learner.step(tasks, routing.executed, routing.predicted, scorer, (cfg.seed, TRAIN_STREAM, step))
        charge_shared_server(ledger, wm)
        ledger.end_step()
        pairs = log.pop("pairs", None)
        if pairs:
            state["pairs"] += [{"step": step, **dict(zip(PAIR_COLUMNS, row))} for row in zip(*pairs)]
        state["steps"].append({"step": step, **log})
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
