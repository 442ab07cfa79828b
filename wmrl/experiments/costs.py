r"""Compute accounting for the notebooks: totals, breakdowns, a fitted cost model and the paper's arithmetic.

- :func:`add_totals`: a run's total charged / actual seconds over the ledger's components.
- :func:`compute_table`: mean seconds per component per arm.
- :func:`fit_cost_model` / :func:`stream_items` / :func:`project_costs`: seconds per step and
  component as ``fixed + per_item * items``, fitted to the measured ledger and evaluated at another
  training shape (groups, trajectories, execution budget, anchor share), e.g. the paper's.
- :func:`paper_gpu_hour_check` and :func:`amdahl_speedup`: what Table 1's GPU-hours imply. If
  WMRL and pure WM generate and update alike, GRPO = X + E and pure WM = X + W, so a run that
  executes a share ``a`` of GRPO's groups costs about X + W + aE, and the speedup over GRPO is
  ``GRPO / (WM + a (GRPO - WM))`` (Amdahl's law with the non-execution part as the serial part).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wmrl.anchor import AnchorScheduler
from wmrl.arms import get_arm
from wmrl.experiments.paper import ANCHOR_SHARE_APPENDIX, ANCHOR_SHARE_TEXT, gpu_hours
from wmrl.ledger import COMPONENTS

__all__ = ["RAY_OVERHEAD", "add_totals", "amdahl_speedup", "compute_table", "fit_cost_model", "paper_gpu_hour_check",
           "project_costs", "ray_wall_s", "stream_items", "waves"]


def add_totals(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``total_charged_s`` / ``total_actual_s`` (all components) and ``*_min`` / ``*_h`` columns."""
    runs = runs.copy()
    for kind in ("charged", "actual"):
        cols = [f"{c}_{kind}_s" for c in COMPONENTS]
        for c in cols:  # a component a run never used (all of them for `untrained`) cost nothing
            runs[c] = runs[c].fillna(0.0) if c in runs else 0.0
        runs[f"total_{kind}_s"] = runs[cols].sum(axis=1)
        for c in [*cols, f"total_{kind}_s"]:
            runs[c.removesuffix("_s") + "_min"] = runs[c] / 60.0
            runs[c.removesuffix("_s") + "_h"] = runs[c] / 3600.0
    return runs


def compute_table(runs: pd.DataFrame, arms, kind: str = "charged") -> pd.DataFrame:
    """Mean seconds per component per arm (``kind``: ``charged`` or ``actual``), plus the total."""
    cols = [f"{c}_{kind}_s" for c in COMPONENTS]
    for c in cols:
        if c not in runs:
            runs = runs.assign(**{c: 0.0})
    t = runs[runs.arm.isin(arms)].groupby("arm")[cols].mean().reindex(list(arms)).fillna(0.0)
    t.columns = list(COMPONENTS)
    t["total"] = t.sum(axis=1)
    return t


def fit_cost_model(ledger: pd.DataFrame, value: str = "charged_s") -> pd.DataFrame:
    """Per component, least squares ``seconds_per_step = fixed_s + per_item_s * items``.

    ``ledger`` is the long table of ``ledger.parquet`` (``component, count, <value>``), with
    ``count`` the items a component handled in the step (scripts generated, predicted, executed;
    trajectories updated). A component whose item count never varies cannot separate a fixed
    cost from a per-item one; it gets ``fixed_s = 0`` and the ratio estimate.
    """
    rows = []
    for comp, d in ledger[ledger["count"] > 0].groupby("component"):
        x, y = d["count"].to_numpy(float), d[value].to_numpy(float)
        if np.ptp(x) > 0:
            (per_item, fixed), *_ = np.linalg.lstsq(np.c_[x, np.ones_like(x)], y, rcond=None)
            if fixed < 0:  # a negative overhead is noise: refit through the origin
                per_item, fixed = float(x @ y / (x @ x)), 0.0
        else:
            per_item, fixed = float(y.sum() / x.sum()), 0.0
        pred = fixed + per_item * x
        ss = float(((y - y.mean()) ** 2).sum())
        rows.append({"component": comp, "fixed_s": float(fixed), "per_item_s": float(per_item), "steps": len(d),
                     "r2": 1 - float(((y - pred) ** 2).sum()) / ss if ss > 0 else float("nan")})
    return pd.DataFrame(rows).set_index("component")


def stream_items(arm: str, groups: int, group_size: int, turns: float, anchor_fraction: float,
                 anchor_min: int = 1) -> dict[str, float]:
    """Items per step and component for an arm at a training shape (the step object's routing).

    ``turns`` is the mean number of turns per trajectory; an executed or predicted script is
    one turn of one trajectory. Anchor groups are scored by both the sandbox and the world model.
    """
    a = get_arm(arm)
    n_anchor = AnchorScheduler(anchor_fraction, anchor_min).n_anchors(groups)
    sampled = n_anchor if a.anchors_only else groups
    executed = sampled if a.executes_every_group else n_anchor if a.anchors else 0
    predicted = groups if a.world_model else 0
    return {"generation": sampled * group_size * turns, "world_model": predicted * group_size * turns,
            "execution": executed * group_size * turns, "update": float(sampled * group_size)}


def project_costs(model: pd.DataFrame, arms, groups: int, group_size: int, turns: float,
                  anchor_fraction: float, scale: dict[str, float] | None = None) -> pd.DataFrame:
    """Seconds per step and component for each arm at a shape, from a :func:`fit_cost_model` fit.

    ``scale`` multiplies a component's unit cost, e.g. ``{"execution": 1200 / 20}`` for scripts
    that use the same share of a 60x larger execution budget.
    """
    scale = scale or {}
    rows = {}
    for arm in arms:
        items = stream_items(arm, groups, group_size, turns, anchor_fraction)
        rows[arm] = {c: (float(model.loc[c, "fixed_s"] + model.loc[c, "per_item_s"] * items[c]) * scale.get(c, 1.0)
                         if c in model.index and items[c] > 0 else 0.0) for c in COMPONENTS}
    t = pd.DataFrame.from_dict(rows, orient="index")[list(COMPONENTS)]
    t["total"] = t.sum(axis=1)
    return t


def paper_gpu_hour_check(model: str = "4B") -> dict[str, float]:
    """The reviews' check of Table 1: is WMRL - pure WM consistent with a 10-12.5% anchor share?

    With the same generation and update in both runs, GRPO = X + E and pure WM = X + W, so
    execution E >= GRPO - WM (equality when the world model costs nothing), and WMRL - WM is
    what the anchors' executions cost, a * E. Hence the implied anchor share is at most
    (WMRL - WM) / (GRPO - WM); at the paper's stated share the anchors should cost a * E.
    """
    h = gpu_hours(model)
    exec_min = h["grpo"] - h["wm"]
    anchor_cost = h["wmrl"] - h["wm"]
    return {
        "grpo": h["grpo"], "wmrl": h["wmrl"], "wm": h["wm"],
        "speedup": h["grpo"] / h["wmrl"],
        "execution_at_least": exec_min,
        "anchor_cost": anchor_cost,
        "implied_anchor_share_at_most": anchor_cost / exec_min,
        "expected_anchor_cost_10pct": ANCHOR_SHARE_TEXT * exec_min,
        "expected_anchor_cost_12_5pct": ANCHOR_SHARE_APPENDIX * exec_min,
    }


def amdahl_speedup(grpo: float, wm: float, anchor_share) -> np.ndarray:
    """GRPO's cost over that of a run executing ``anchor_share`` of GRPO's groups, ``grpo / (wm + a (grpo - wm))``:
    with Table 1's GPU-hours, an upper bound on the speedup the paper's totals allow at anchor share ``a``."""
    a = np.asarray(anchor_share, dtype=float)
    return grpo / (wm + a * (grpo - wm))


#: Under ``RESULTS_DIR``: Ray's measured cost on one machine, its start-up and its cost per wave of runs
#: trained side by side (``python -m bench.ray_overhead``).
RAY_OVERHEAD = "bench/ray_overhead.json"


def waves(runs: int, at_once: int) -> int:
    """How many rounds ``runs`` runs take ``at_once`` side by side: ``ceil(runs / at_once)``."""
    return -(-runs // at_once)


def ray_wall_s(runs: int, run_s: float, at_once: int, overhead: dict) -> float:
    """The wall seconds of ``runs`` runs of ``run_s`` seconds each, ``at_once`` side by side, through Ray: one wave
    after another, each costing Ray's measured ``per_wave_overhead_s`` on top, and Ray's ``median_startup_s`` once
    (``overhead``: :data:`RAY_OVERHEAD`'s content)."""
    return waves(runs, at_once) * (run_s + overhead["per_wave_overhead_s"]) + overhead["median_startup_s"]
