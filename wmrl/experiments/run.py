"""Run one arm at one seed: train, evaluate on held-out tasks, write results with provenance.

``run_arm`` is what the CLI (``python -m wmrl.experiments run``) and the notebooks call. A run
writes, under its output folder (default ``results/train/<preset>/<arm>/seed<S>/``):

- ``summary.json``: config, provenance, final held-out Avg and per-category scores, compute totals;
- ``steps.parquet``: one row per training step (rewards, eta^2, rho, anchor share, fidelity, ...);
- ``eval.parquet``: held-out avg@k per task at each evaluation step;
- ``ledger.parquet``: seconds per step and component, actual and charged;
- ``pairs.parquet`` and ``calibration.json``: anchor pairs and the isotonic map's snapshots.

Nothing is lost on a crash: after every step the whole state (policy, optimiser, calibrator,
RNGs, logs) is checkpointed atomically, and a rerun of the same command resumes from it; for a
fixed seed a resumed run ends where an uninterrupted one ends.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from wmrl.agent import grammar
from wmrl.agent.habits import prior_probabilities
from wmrl.agent.policy import AgentPolicy
from wmrl.experiments.presets import preset_overrides
from wmrl.ledger import ComputeLedger
from wmrl.provenance import REPO, atomic_path, provenance, write_json_atomic
from wmrl.trainer.config import TrainConfig
from wmrl.trainer.grpo import GRPOLearner
from wmrl.trainer.memo import ExecutionMemo
from wmrl.trainer.rollout import Scorer, rollout

__all__ = ["default_out", "evaluate", "make_config", "run_arm"]

RESULTS = REPO / "results"


def make_config(arm: str, preset: str = "small", seed: int = 0, **overrides) -> TrainConfig:
    cfg = {**preset_overrides(preset), **overrides, "arm": arm, "seed": seed}
    if arm == "untrained":
        cfg["steps"] = 0
    return TrainConfig.from_dict(cfg)


def default_out(arm: str, preset: str, seed: int) -> Path:
    return RESULTS / "train" / preset / arm / f"seed{seed}"


def make_policy(seed: int, task_dim: int) -> AgentPolicy:
    """The untrained agent: the grammar's documented prior habits, seeded."""
    torch.manual_seed(seed)
    return AgentPolicy([len(s.options) for s in grammar.SLOTS], task_dim, priors=prior_probabilities())


def make_world_model(cfg: TrainConfig, seed: int, sandbox):
    """The frozen world model of ``cfg``, told the facts of the ``sandbox`` whose outcomes it predicts."""
    if cfg.world_model == "static":
        from wmrl.world_model.static import ProgramAnalysisWorldModel

        return ProgramAnalysisWorldModel.for_sandbox(sandbox, temperature=cfg.wm_temperature, seed=seed)
    from wmrl.world_model.backends import TransformersBackend
    from wmrl.world_model.llm import LLMWorldModel

    return LLMWorldModel(TransformersBackend(), temperature=cfg.wm_temperature, seed=seed,
                         time_limit_s=sandbox.facts.cpu_budget_s)


def per_category(tasks, k: int) -> list:
    """The ``k`` smallest tasks of each category (all of them when ``k`` is 0)."""
    if not k:
        return list(tasks)
    by_cat: dict[str, list] = {}
    for t in sorted(tasks, key=lambda t: t.size_bytes):
        by_cat.setdefault(t.category, []).append(t)
    return [t for cat in sorted(by_cat) for t in by_cat[cat][:k]]


def evaluate(policy, tasks, samples: int, max_turns: int, scorer: Scorer, seed: int, step: int) -> list[dict]:
    """avg@k held-out leaderboard percentile per task, with real execution and real feedback."""
    gen = torch.Generator().manual_seed(int(seed) * 1_000_003 + step)  # never touches training RNGs
    n = len(tasks)
    groups = rollout(policy, list(tasks), np.ones(n, bool), np.zeros(n, bool), samples, max_turns, scorer, gen)
    rows = []
    for task, grp in zip(tasks, groups):
        rows.append({"step": step, "task": task.name, "category": task.category,
                     "percentile": float(np.mean([t.percentile for t in grp])),
                     "reward": float(np.mean([t.real_reward for t in grp])),
                     "ok_rate": float(np.mean([any(x.real.status == "ok" for x in t.turns) for t in grp]))})
    return rows


def headline(evals: pd.DataFrame) -> dict:
    """The paper's metric at the last evaluation: mean per category, Avg = mean of categories."""
    last = evals[evals.step == evals.step.max()]
    per_cat = last.groupby("category")["percentile"].mean()
    return {"avg": float(per_cat.mean()), "per_category": per_cat.to_dict(), "step": int(last.step.iloc[0])}


def _memo_salt(pool, cfg: TrainConfig) -> str:
    manifest = json.dumps(pool.manifest, sort_keys=True, default=str)
    # "cpu-budget": timeout_s counts CPU seconds since the sandbox changed its budget (wall-clock results differ)
    return hashlib.sha256(f"{manifest}|cpu-budget {cfg.timeout_s}|{cfg.memory_mb}".encode()).hexdigest()[:16]


def run_arm(arm: str, preset: str = "small", seed: int = 0, out: str | Path | None = None, *, memo: bool = True,
            memo_path: str | Path | None = None, pool=None, progress: bool = True, **overrides) -> dict:
    """Train ``arm`` at ``preset`` and ``seed`` (resuming if a checkpoint exists); returns the summary."""
    from wmrl.sandbox import Sandbox
    from wmrl.tasks import get_pool

    cfg = make_config(arm, preset, seed, memo=memo, **overrides)
    out = Path(out) if out is not None else default_out(arm, preset, seed)
    out.mkdir(parents=True, exist_ok=True)
    pool = pool if pool is not None else get_pool()
    train_tasks = per_category(pool.train, cfg.train_tasks)
    eval_tasks = per_category(pool.heldout, cfg.eval_tasks)
    if not train_tasks or not eval_tasks:
        raise RuntimeError(f"the pool at {pool.root} has no training or no held-out tasks")
    ledger, eval_ledger = ComputeLedger(), ComputeLedger()
    sandbox = Sandbox("local", timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb)
    db = ExecutionMemo(memo_path or REPO / "data" / "memo.sqlite", _memo_salt(pool, cfg)) if cfg.memo else None
    wm = make_world_model(cfg, seed, sandbox) if cfg.switches.world_model else None
    scorer = Scorer(sandbox, wm, ledger, db, cfg.workers)
    eval_scorer = Scorer(sandbox, None, eval_ledger, db, cfg.workers)
    learner = GRPOLearner(cfg, make_policy(seed, len(grammar.task_features(train_tasks[0]))))
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    state = {"step": 0, "steps": [], "evals": [], "pairs": [], "wall_s": 0.0}
    ckpt = out / "checkpoint.pt"
    if ckpt.exists():
        saved = torch.load(ckpt, weights_only=False)
        if saved["config"] != cfg.to_dict():
            raise RuntimeError(f"{ckpt} was written with another config; delete it or pass the same settings")
        learner.load_state_dict(saved["learner"])
        gen.set_state(saved["gen"])
        rng.bit_generator.state = saved["rng"]
        ledger.load_state_dict(saved["ledger"])
        eval_ledger.load_state_dict(saved["eval_ledger"])
        state = saved["state"]
    bar = tqdm(range(state["step"], cfg.steps), desc=f"{arm} s{seed}", disable=not progress,
               initial=state["step"], total=cfg.steps)
    for step in bar:
        t_step = time.perf_counter()
        n, executed, predicted = learner.plan()
        tasks = [train_tasks[i] for i in rng.choice(len(train_tasks), size=n)]
        if wm is not None and hasattr(wm, "reseed"):
            wm.reseed([seed, step])  # the world model's sampling depends on (seed, step) only: resumable
        log = learner.step(tasks, executed, predicted, scorer, gen)
        ledger.end_step()
        pairs = log.pop("pairs", None)
        if pairs:
            state["pairs"] += [{"step": step, "pred": p, "calibrated": c, "true": t} for p, c, t in zip(*pairs)]
        state["steps"].append({"step": step, **log})
        bar.set_postfix(reward=f"{log['train_reward']:.3f}", rho=f"{log['rho']:.2f}")
        if (step + 1) % cfg.eval_every == 0 and step + 1 < cfg.steps:
            state["evals"] += evaluate(learner.policy, eval_tasks, cfg.eval_samples, cfg.max_turns, eval_scorer, seed, step + 1)
            eval_ledger.end_step()
        state["step"] = step + 1
        state["wall_s"] += time.perf_counter() - t_step
        if state["step"] % cfg.checkpoint_every == 0 or state["step"] == cfg.steps:
            with atomic_path(ckpt) as tmp:
                torch.save({"config": cfg.to_dict(), "learner": learner.state_dict(), "gen": gen.get_state(),
                            "rng": rng.bit_generator.state, "ledger": ledger.state_dict(),
                            "eval_ledger": eval_ledger.state_dict(), "state": state}, tmp)
    if not any(r["step"] == cfg.steps for r in state["evals"]):
        t_eval = time.perf_counter()
        state["evals"] += evaluate(learner.policy, eval_tasks, cfg.eval_samples, cfg.max_turns, eval_scorer, seed, cfg.steps)
        eval_ledger.end_step()
        state["wall_s"] += time.perf_counter() - t_eval
    return _write_results(out, cfg, preset, state, ledger, eval_ledger, learner, db)


def _write_results(out: Path, cfg, preset, state, ledger, eval_ledger, learner, db) -> dict:
    evals = pd.DataFrame(state["evals"])
    tables = {"steps": pd.DataFrame(state["steps"]), "eval": evals, "ledger": ledger.to_frame(),
              "pairs": pd.DataFrame(state["pairs"], columns=["step", "pred", "calibrated", "true"])}
    for name, df in tables.items():
        with atomic_path(out / f"{name}.parquet") as tmp:
            df.to_parquet(tmp, index=False)
    snaps = [{"n_pairs": s.n_pairs, "n_refits": s.n_refits, "x": s.x.tolist(), "y": s.y.tolist()}
             for s in learner.debiaser.snapshots]
    write_json_atomic(out / "calibration.json", snaps)
    totals = ledger.totals()
    summary = {
        "arm": cfg.arm, "preset": preset, "seed": cfg.seed, "heldout": headline(evals),
        "compute": {c: {"actual_s": float(totals.loc[c, "actual_s"]), "charged_s": float(totals.loc[c, "charged_s"]),
                        "count": int(totals.loc[c, "count"])} for c in totals.index},
        "wall_s": state["wall_s"], "steps": cfg.steps,
        "eval_actual_s": float(eval_ledger.to_frame()["actual_s"].sum()) if len(eval_ledger.to_frame()) else 0.0,
        "memo": {"enabled": db is not None, "hits": db.hits if db else 0, "misses": db.misses if db else 0},
        "provenance": provenance(cfg.to_dict(), cfg.seed),
    }
    write_json_atomic(out / "summary.json", summary)
    return summary
