"""World-model fidelity: how well predicted ladder rewards track real ones (the paper reports none).

A world model that is perfect makes the anchor stream pointless; one that is useless makes the
world-model groups noise. :func:`fidelity_report` measures where a model sits on a set of
``(task, code)`` items, scored once by the world model and once by real execution:

- the Spearman rank correlation over all items, and **within groups** (the scripts of one task):
  GRPO's advantages ``A_i = r_i - mean_j r_j`` only compare the scripts of one group, so the
  within-group ranking is what a world-model group's gradient is made of;
- the mean absolute error and the mean error (what Online Debiasing has to remove), a
  **calibration** table (mean real reward per bin of predicted reward: a monotone table is
  Assumption 6's monotone distortion, one above the diagonal an optimistic model);
- the status **confusion** matrix, the status and rung accuracy, the predicted and real ok rates;
- the cost ratio that justifies a world model at all (world-model seconds per item over
  execution seconds per item).

:func:`fidelity_summary` computes the numbers from a rows frame alone (one row per item, with
``real_reward``, ``pred_reward``, ``real_status``, ``pred_status`` and ``group``), so a caller
that already executed the items (a rollout, a notebook comparing two world models on the same
runs) scores them without running anything twice.

The items are the caller's: :func:`wmrl.agent.habits.sample_items` draws them as the untrained
agent writes them (the agent and the world model are siblings, neither imports the other).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from wmrl import record as clock
from wmrl.reward import ladder_reward
from wmrl.vocabulary import RUNG

__all__ = ["CALIBRATION_BINS", "calibration_table", "fidelity_report", "fidelity_rows", "fidelity_summary",
           "real_reward", "within_group_spearman"]

#: Edges of the predicted-reward bins of :func:`calibration_table` (the ladder's rungs fall in
#: separate bins: 0, 0.1, 0.2 and the ok range 0.5-1 split in four).
CALIBRATION_BINS = (0.0, 0.05, 0.15, 0.35, 0.625, 0.75, 0.875, 1.0001)


def real_reward(result) -> float:
    """The ladder reward of a real execution result."""
    if result.status == "ok":
        return ladder_reward("ok", result.percentile if result.percentile is not None else 0.0)
    return ladder_reward(result.status)


def fidelity_rows(items: Sequence[tuple[object, str]], results: Sequence, preds: Sequence,
                  groups: Sequence | None = None) -> pd.DataFrame:
    """One row per item: its task, group (default: the task), real and predicted status and reward."""
    if not len(items) == len(results) == len(preds):
        raise ValueError(f"items, results and predictions must match one to one; got {len(items)}, {len(results)}, "
                         f"{len(preds)}")
    return pd.DataFrame({
        "task": [t.name for t, _ in items], "category": [t.category for t, _ in items],
        "group": list(groups) if groups is not None else [t.name for t, _ in items],
        "real_status": [r.status for r in results], "pred_status": [p.status for p in preds],
        "real_error": [r.error_type for r in results], "pred_error": [p.error_type for p in preds],
        "real_reward": [real_reward(r) for r in results], "pred_reward": [p.score for p in preds],
        "wall_s": [r.wall_s for r in results],
    })


def within_group_spearman(rows: pd.DataFrame, min_size: int = 3) -> tuple[float, int]:
    """Mean over groups (of ``min_size`` items or more, real rewards not all equal) of the Spearman correlation
    of predicted and real reward, and the group count; a constant prediction counts as 0, so it cannot score
    well. ``(nan, 0)`` when no group counts."""
    values = []
    for _, g in rows.groupby("group", sort=False):
        if len(g) < min_size or g.real_reward.nunique() < 2:
            continue
        values.append(0.0 if g.pred_reward.nunique() < 2 else float(spearmanr(g.pred_reward, g.real_reward).statistic))
    return (float(np.mean(values)) if values else float("nan")), len(values)


def calibration_table(rows: pd.DataFrame, bins: Sequence[float] = CALIBRATION_BINS) -> pd.DataFrame:
    """Per bin of predicted reward: item count, mean predicted and mean real reward (empty bins left out)."""
    b = pd.cut(rows.pred_reward, list(bins), right=False, include_lowest=True)
    table = rows.groupby(b, observed=True).agg(n=("real_reward", "size"), pred=("pred_reward", "mean"),
                                               real=("real_reward", "mean"))
    table.index = [f"[{iv.left:.3g}, {min(iv.right, 1.0):.3g})" for iv in table.index]
    return table


def fidelity_summary(rows: pd.DataFrame) -> dict:
    """The fidelity numbers of a rows frame (see the module docstring); ``confusion`` and
    ``calibration`` are frames (real status in rows, predicted in columns; bins of predicted reward)."""
    if rows.empty:
        raise ValueError("fidelity_summary needs at least one row")
    both_vary = rows.real_reward.nunique() > 1 and rows.pred_reward.nunique() > 1
    within, n_groups = within_group_spearman(rows)
    return {
        "n": len(rows),
        "spearman": float(spearmanr(rows.pred_reward, rows.real_reward).statistic) if both_vary else float("nan"),
        "within_group_spearman": within,
        "n_groups": n_groups,
        "mae": float(np.mean(np.abs(rows.pred_reward - rows.real_reward))),
        "mean_error": float(np.mean(rows.pred_reward - rows.real_reward)),
        "status_accuracy": float(np.mean(rows.real_status == rows.pred_status)),
        "rung_accuracy": float(np.mean(rows.real_status.map(RUNG) == rows.pred_status.map(RUNG))),
        "real_ok_rate": float(np.mean(rows.real_status == "ok")),
        "pred_ok_rate": float(np.mean(rows.pred_status == "ok")),
        "confusion": pd.crosstab(rows.real_status, rows.pred_status),
        "calibration": calibration_table(rows),
    }


def fidelity_report(world_model, sandbox, items: Sequence[tuple[object, str]], max_workers: int = 1,
                    groups: Sequence | None = None) -> dict:
    """Score ``items`` with both and compare: :func:`fidelity_summary`'s numbers, the cost ratio and
    the per-item ``rows`` frame. ``groups`` names each item's group (default: its task)."""
    if not items:
        raise ValueError("fidelity_report needs at least one (task, code) item")
    t0 = clock.wall()
    preds = world_model.predict_many(list(items))
    wm_s = clock.wall() - t0
    t0 = clock.wall()
    results = sandbox.run_many(list(items), max_workers=max_workers)
    exec_s = clock.wall() - t0
    rows = fidelity_rows(items, results, preds, groups)
    n = len(rows)
    return {**fidelity_summary(rows), "wm_s_per_item": wm_s / n, "exec_s_per_item": exec_s / n,
            "cost_ratio": (wm_s / n) / max(exec_s / n, 1e-9), "rows": rows}
