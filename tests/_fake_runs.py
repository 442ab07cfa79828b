"""Run folders written by hand (``eval.parquet``, ``ledger.parquet``), for the analysis tests."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wmrl.ledger import COMPONENTS


def write_run(root: Path, arm: str, seed: int, evals: dict[int, float], step_cost: float, steps: int) -> dict:
    """One run whose held-out Avg is ``evals[step]`` and which is charged ``step_cost`` s of execution a step."""
    d = root / arm / f"seed{seed}"
    d.mkdir(parents=True)
    pd.DataFrame([{"step": s, "task": "t", "category": "tabular", "percentile": p} for s, p in evals.items()]).to_parquet(
        d / "eval.parquet")
    pd.DataFrame([{"step": s, "component": c, "actual_s": 0.0, "charged_s": step_cost if c == "execution" else 0.0,
                   "count": 1} for s in range(steps) for c in COMPONENTS],
                 columns=["step", "component", "actual_s", "charged_s", "count"]).to_parquet(d / "ledger.parquet")
    final = evals[max(evals)]
    return {"arm": arm, "seed": seed, "dir": str(d), "avg": final, "total_charged_s": step_cost * steps}


def write_tables(folder: Path, arm: str, seed: int, evals, ledger) -> dict:
    """A run folder from rows: ``evals`` as ``(step, task, category, percentile)``, ``ledger`` as ``(step,
    component, charged_s, actual_s)``; returns its row of a runs frame."""
    folder.mkdir(parents=True)
    pd.DataFrame(evals, columns=["step", "task", "category", "percentile"]).to_parquet(folder / "eval.parquet")
    pd.DataFrame(ledger, columns=["step", "component", "charged_s", "actual_s"]).to_parquet(folder / "ledger.parquet")
    return {"arm": arm, "seed": seed, "dir": str(folder)}


def fake_campaign(root: Path) -> pd.DataFrame:
    """untrained / grpo / wmrl at seeds 0 and 1; at seed 1 wmrl never reaches grpo's final score."""
    rows = []
    for seed, wmrl_final in ((0, 0.65), (1, 0.50)):
        rows.append(write_run(root, "untrained", seed, {0: 0.30}, 0.0, 0))
        rows.append(write_run(root, "grpo", seed, {8: 0.50, 16: 0.60}, 10.0, 16))
        rows.append(write_run(root, "wmrl", seed, {8: 0.55 if seed == 0 else 0.45, 16: wmrl_final}, 2.0, 16))
    return pd.DataFrame(rows)
