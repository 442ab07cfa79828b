"""World-model fidelity: how well predicted ladder rewards track real ones (the paper reports none).

A world model that is perfect makes the anchor stream pointless; one that is useless makes the
world-model groups noise. :func:`fidelity_report` measures where a model sits on a fixed set of
``(task, code)`` items, scored once by the world model and once by real execution: the Spearman
rank correlation (what GRPO's group-relative advantages care about), the mean absolute error
(what Online Debiasing has to remove), the status accuracy, and the cost ratio that justifies a
world model at all (world-model seconds per item over execution seconds per item).

The items are the caller's: :func:`wmrl.agent.habits.sample_items` draws them as the untrained
agent writes them (the agent and the world model are siblings, neither imports the other).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from wmrl.reward import ladder_reward
from wmrl.vocabulary import RUNG

__all__ = ["fidelity_report"]

def _real_reward(result) -> float:
    if result.status == "ok":
        return ladder_reward("ok", result.percentile if result.percentile is not None else 0.0)
    return ladder_reward(result.status)


def fidelity_report(world_model, sandbox, items: Sequence[tuple[object, str]], max_workers: int = 1) -> dict:
    """Score ``items`` with both and compare; returns the summary numbers and a per-item ``rows`` frame."""
    if not items:
        raise ValueError("fidelity_report needs at least one (task, code) item")
    t0 = time.perf_counter()
    preds = world_model.predict_many(list(items))
    wm_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    results = sandbox.run_many(list(items), max_workers=max_workers)
    exec_s = time.perf_counter() - t0
    rows = pd.DataFrame({
        "task": [t.name for t, _ in items], "category": [t.category for t, _ in items],
        "real_status": [r.status for r in results], "pred_status": [p.status for p in preds],
        "real_error": [r.error_type for r in results], "pred_error": [p.error_type for p in preds],
        "real_reward": [_real_reward(r) for r in results], "pred_reward": [p.score for p in preds],
        "wall_s": [r.wall_s for r in results],
    })
    rho = spearmanr(rows.pred_reward, rows.real_reward).statistic if rows.real_reward.nunique() > 1 else float("nan")
    return {
        "n": len(rows),
        "spearman": float(rho),
        "mae": float(np.mean(np.abs(rows.pred_reward - rows.real_reward))),
        "status_accuracy": float(np.mean(rows.real_status == rows.pred_status)),
        "rung_accuracy": float(np.mean(rows.real_status.map(RUNG) == rows.pred_status.map(RUNG))),
        "real_ok_rate": float(np.mean(rows.real_status == "ok")),
        "pred_ok_rate": float(np.mean(rows.pred_status == "ok")),
        "wm_s_per_item": wm_s / len(rows),
        "exec_s_per_item": exec_s / len(rows),
        "cost_ratio": (wm_s / len(rows)) / max(exec_s / len(rows), 1e-9),
        "rows": rows,
    }
