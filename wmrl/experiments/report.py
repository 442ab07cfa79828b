"""Tables, claim verdicts and the compute cost model shared by notebooks 01-05 and the template.

Why a module and not notebook cells: the verdict rule ("does the small analog reproduce the
paper's claim?") and the cost model must be the same in every notebook and must be unit-tested
(``tests/test_report.py``), since a notebook's conclusion is only as good as them.

- :func:`arm_summary` / :func:`arm_table`: per arm, mean and 95% Student-t interval over seeds.
- :func:`paired_diff` / :func:`claims_table` / :func:`verdict`: a claim is *reproduced* when the
  95% interval of the seed-paired difference lies on the paper's side of zero, *fails* when it
  lies on the other side, and is *inconclusive* otherwise (including with one seed).
- :func:`fit_cost_model` / :func:`project_costs`: seconds per step and component as
  ``fixed + per_item * items``, fitted to the measured ledger and evaluated at another shape
  (groups, trajectories, execution budget, anchor share), e.g. the paper's.
- :func:`paper_gpu_hour_check`: the reviews' consistency check of Table 1's GPU-hours.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from wmrl.anchor import AnchorScheduler
from wmrl.arms import get_arm
from wmrl.experiments.collect import mean_ci
from wmrl.experiments.notebook import ARM_COLORS, ParameterError
from wmrl.experiments.paper import ANCHOR_SHARE_APPENDIX, ANCHOR_SHARE_TEXT, gpu_hours
from wmrl.ledger import COMPONENTS

__all__ = [
    "VERDICTS",
    "Claim",
    "add_totals",
    "arm_summary",
    "arm_table",
    "bar_ci",
    "check_runs_present",
    "claims_table",
    "compare_to_paper",
    "compute_table",
    "eval_curves",
    "fit_cost_model",
    "fmt_ci",
    "paired_diff",
    "paper_gpu_hour_check",
    "plot_curves",
    "project_costs",
    "stream_items",
    "verdict",
]

VERDICTS = ("reproduced", "fails", "inconclusive")


def fmt_ci(mean: float, lo: float, hi: float, digits: int = 1) -> str:
    """``"16.4 [15.1, 17.7]"``; the interval is dropped when it is undefined (one seed)."""
    if np.isnan(lo) or np.isnan(hi):
        return f"{mean:.{digits}f} (n=1)"
    return f"{mean:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def check_runs_present(runs: pd.DataFrame, arms, seeds) -> None:
    """Fail with the missing (arm, seed) pairs and how to train them, instead of a KeyError later."""
    have = set(zip(runs.arm, runs.seed))
    missing = [(a, s) for a in arms for s in seeds if (a, s) not in have]
    if missing:
        raise ParameterError(
            f"missing runs {missing}; train them with MODE='train' (papermill: -p MODE train) or "
            f"`python -m wmrl.experiments run --arm ARM --seed SEED`, or pass SEEDS/ARMS that exist")


def add_totals(runs: pd.DataFrame) -> pd.DataFrame:
    """Add ``total_charged_s`` / ``total_actual_s`` (all components) and ``*_h`` hour columns."""
    runs = runs.copy()
    for kind in ("charged", "actual"):
        cols = [f"{c}_{kind}_s" for c in COMPONENTS]
        for c in cols:  # a component a run never used (all of them for `untrained`) cost nothing
            runs[c] = runs[c].fillna(0.0) if c in runs else 0.0
        runs[f"total_{kind}_s"] = runs[cols].sum(axis=1)
        for c in [*cols, f"total_{kind}_s"]:
            runs[c.removesuffix("_s") + "_h"] = runs[c] / 3600.0
    return runs


def arm_summary(runs: pd.DataFrame, col: str, arms, scale: float = 1.0) -> pd.DataFrame:
    """Mean and 95% interval of ``runs[col] * scale`` per arm (rows in ``arms`` order)."""
    rows = []
    for arm in arms:
        v = runs.loc[runs.arm == arm, col].dropna().to_numpy(float) * scale
        if len(v) == 0:
            raise KeyError(f"no runs of arm {arm!r} with a value for {col!r}")
        m, lo, hi = mean_ci(v)
        rows.append({"arm": arm, "mean": m, "lo": lo, "hi": hi, "n": len(v)})
    return pd.DataFrame(rows).set_index("arm")


def arm_table(runs: pd.DataFrame, arms, cols: dict[str, tuple[str, float, int]]) -> pd.DataFrame:
    """A display table: one row per arm, one ``"mean [lo, hi]"`` column per ``{label: (col, scale, digits)}``."""
    out = pd.DataFrame(index=pd.Index(list(arms), name="arm"))
    for label, (col, scale, digits) in cols.items():
        s = arm_summary(runs, col, arms, scale)
        out[label] = [fmt_ci(r["mean"], r["lo"], r["hi"], digits) for _, r in s.iterrows()]
    out["seeds"] = [int((runs.arm == a).sum()) for a in arms]
    return out


def paired_diff(runs: pd.DataFrame, a: str, b: str, col: str = "avg", scale: float = 1.0,
                op: str = "diff") -> tuple[float, float, float, int]:
    """Mean and 95% interval of ``a - b`` (``op="diff"``) or ``a / b`` (``"ratio"``), paired by seed.

    Pairing by seed removes what two arms share at one seed (the same tasks drawn, the same
    evaluation sampler), which is why it is tighter than comparing two unpaired intervals.
    """
    x = runs[runs.arm == a].set_index("seed")[col] * scale
    y = runs[runs.arm == b].set_index("seed")[col] * scale
    seeds = sorted(set(x.index) & set(y.index))
    if not seeds:
        raise KeyError(f"arms {a!r} and {b!r} share no seed")
    x, y = x.loc[seeds].to_numpy(float), y.loc[seeds].to_numpy(float)
    d = x - y if op == "diff" else x / y
    m, lo, hi = mean_ci(d)
    return m, lo, hi, len(seeds)


def verdict(lo: float, hi: float, expect: str, null: float = 0.0) -> str:
    """``reproduced`` / ``fails`` / ``inconclusive`` for an interval and the paper's direction.

    ``expect=">"``: the paper says the quantity exceeds ``null``; ``"<"``: it is below it.
    """
    if expect not in (">", "<"):
        raise ValueError(f"expect must be '>' or '<', got {expect!r}")
    if np.isnan(lo) or np.isnan(hi):
        return "inconclusive"
    above, below = lo > null, hi < null
    if expect == ">":
        return "reproduced" if above else "fails" if below else "inconclusive"
    return "reproduced" if below else "fails" if above else "inconclusive"


@dataclass(frozen=True)
class Claim:
    """A paper claim as a seed-paired comparison ``a (op) b`` expected ``expect`` ``null``."""

    id: str
    statement: str
    paper: str  # the paper's numbers behind the claim, for the reader
    a: str
    b: str
    col: str = "avg"
    expect: str = ">"
    op: str = "diff"
    scale: float = 100.0  # held-out Avg is reported in percentile points, as the paper does
    digits: int = 1

    @property
    def null(self) -> float:
        return 1.0 if self.op == "ratio" else 0.0


def claims_table(runs: pd.DataFrame, claims) -> pd.DataFrame:
    """One row per claim: the paper's numbers, ours with the 95% interval, and the verdict."""
    rows = []
    for c in claims:
        m, lo, hi, n = paired_diff(runs, c.a, c.b, c.col, c.scale if c.op == "diff" else 1.0, c.op)
        sym = "-" if c.op == "diff" else "/"
        rows.append({"claim": c.id, "statement": c.statement, "paper": c.paper,
                     "ours": f"{c.a} {sym} {c.b} = {fmt_ci(m, lo, hi, c.digits)}", "seeds": n,
                     "verdict": verdict(lo, hi, c.expect, c.null)})
    return pd.DataFrame(rows).set_index("claim")


def compare_to_paper(ours: pd.DataFrame, paper_table: pd.DataFrame, cols, models=("4B", "9B")) -> pd.DataFrame:
    """``ours`` (indexed by arm) with the paper's ``cols`` per model joined on the right."""
    beside = ours.copy()
    p = paper_table.set_index("arm")
    for model in models if "model" in p else [None]:
        part = p if model is None else p[p.model == model]
        for c in cols:
            label = f"paper {model} {c}" if model else f"paper {c}"
            beside[label] = [part.loc[a, c] if a in part.index else None for a in beside.index]
    return beside


def eval_curves(evals: pd.DataFrame, scale: float = 100.0) -> pd.DataFrame:
    """Held-out Avg (mean over categories of the per-category mean) per arm and step, 95% over seeds."""
    per_seed = (evals.groupby(["arm", "seed", "step", "category"]).percentile.mean()
                .groupby(["arm", "seed", "step"]).mean().mul(scale).reset_index())
    rows = []
    for (arm, step), d in per_seed.groupby(["arm", "step"]):
        m, lo, hi = mean_ci(d.percentile)
        rows.append({"arm": arm, "step": step, "mean": m, "lo": lo, "hi": hi})
    return pd.DataFrame(rows)


def bar_ci(ax, summary: pd.DataFrame, ylabel: str = "", title: str = "", *, colors: dict | None = None) -> None:
    """Bars of ``summary`` (from :func:`arm_summary`) with 95% error bars (none with one seed).

    ``colors`` maps arm -> colour (default :data:`~wmrl.experiments.notebook.ARM_COLORS`).
    """
    colors = ARM_COLORS if colors is None else colors
    x = np.arange(len(summary))
    err = np.vstack([summary["mean"] - summary["lo"], summary["hi"] - summary["mean"]])
    ax.bar(x, summary["mean"], color=[colors.get(a, "tab:gray") for a in summary.index],
           yerr=None if np.isnan(err).all() else err, capsize=4)
    ax.set_xticks(x, summary.index)
    ax.set(ylabel=ylabel, title=title)


def plot_curves(ax, curves: pd.DataFrame, arms, *, colors: dict | None = None, alpha: float = 0.15) -> None:
    """Held-out learning curves (from :func:`eval_curves`): mean per evaluation step and its 95% band."""
    colors = ARM_COLORS if colors is None else colors
    for arm in arms:
        c = curves[curves.arm == arm]
        ax.plot(c.step, c["mean"], "o-", color=colors.get(arm), label=arm)
        ax.fill_between(c.step, c.lo, c.hi, color=colors.get(arm), alpha=alpha)
    ax.set(xlabel="training step", ylabel="held-out Avg (percentile points)", title="Learning curves")
    ax.legend(fontsize=8)


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
