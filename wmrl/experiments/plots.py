"""One visual language for every notebook's figures: colours, intervals, seeds, labels.

Rules every figure follows (checked by ``tests/test_notebooks.py`` on the figures the notebooks
draw from the committed results, through :func:`describe_axes`, which :func:`save_figure
<wmrl.experiments.notebook.save_figure>` records in each figure's sidecar):

- an arm has one colour everywhere (:data:`ARM_COLORS`), a compute component too
  (:data:`COMPONENT_COLORS`);
- an interval is a 95% Student-t interval over seeds and its legend entry says so
  (:data:`CI_LABEL`); where seeds are few, each seed is drawn too (a dot, or a thin line);
- every axis has a label with its unit, and every panel a title or a legend;
- a learning curve with fewer than :data:`MIN_EVAL_POINTS` evaluation
  points says so on the panel.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from wmrl.experiments.stats import mean_ci

__all__ = [
    "ARM_COLORS",
    "CI_LABEL",
    "CI_LOG_LABEL",
    "COMPONENT_COLORS",
    "MIN_EVAL_POINTS",
    "SEED_DOTS_UP_TO",
    "STYLE",
    "arm_color",
    "bar_ci",
    "describe_axes",
    "figure_problems",
    "mean_band",
    "plot_curves",
    "use_style",
]

#: One colour per arm in every notebook's figures (``sft`` is the VLA analog's untrained policy).
ARM_COLORS = {"untrained": "tab:gray", "sft": "0.5", "grpo": "k", "wm": "tab:red", "mix": "tab:orange",
              "ivd": "tab:cyan", "od": "tab:blue", "wmrl": "tab:green", "anchor_only": "tab:purple"}
#: One colour per compute component of the ledger.
COMPONENT_COLORS = {"generation": "tab:blue", "world_model": "tab:orange", "execution": "tab:red",
                    "update": "tab:green"}
CI_LABEL = "95% CI over seeds (Student t)"
CI_LOG_LABEL = "95% CI over seeds (Student t on the log)"
SEED_DOTS_UP_TO = 10  # draw every seed when there are at most this many
#: Fewer evaluation points than this and a learning curve says it is too coarse to read a shape from.
MIN_EVAL_POINTS = 6
#: The notebooks' matplotlib settings.
STYLE = {"figure.dpi": 100, "axes.grid": True, "grid.alpha": 0.3, "axes.spines.top": False,
         "axes.spines.right": False, "legend.fontsize": 8}


def use_style() -> None:
    """Apply :data:`STYLE`: every notebook's figures look alike."""
    plt.rcParams.update(STYLE)


def arm_color(arm: str) -> str:
    """The arm's colour; a tagged variant (``wmrl~tag``) takes its base arm's."""
    return ARM_COLORS.get(arm.split("~")[0], "tab:brown")


def bar_ci(ax, summary: pd.DataFrame, ylabel: str, title: str, *, colors: dict | None = None) -> None:
    """Bars of per-arm means (from :func:`~wmrl.experiments.stats.arm_summary`), 95% CI bars, one dot per seed."""
    x = np.arange(len(summary))
    color = [(colors or {}).get(a) or arm_color(a) for a in summary.index]
    err = np.vstack([summary["mean"] - summary["lo"], summary["hi"] - summary["mean"]])
    has_ci = not np.isnan(err).all()
    ax.bar(x, summary["mean"], color=color, alpha=0.55, yerr=err if has_ci else None, capsize=4,
           error_kw={"elinewidth": 1.2})
    handles = [Patch(color="0.6", alpha=0.55, label="mean over seeds")]
    if has_ci:
        handles.append(Line2D([], [], color="k", lw=1.2, label=CI_LABEL))
    if "values" in summary and summary.n.max() <= SEED_DOTS_UP_TO:
        for i, vals in enumerate(summary["values"]):
            jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else np.zeros(1)
            ax.plot(x[i] + jitter, vals, "o", ms=4, color="k", mfc="white", zorder=3)
        handles.append(Line2D([], [], ls="", marker="o", ms=4, color="k", mfc="white", label="one seed"))
    ax.set_xticks(x, summary.index, rotation=20 if len(x) > 4 else 0)
    ax.set(xlabel="arm", ylabel=ylabel, title=title)
    ax.legend(handles=handles, loc="best")


def mean_band(ax, data: pd.DataFrame, x: str, y: str, *, by: str | None = None, color=None, label=None,
              ls: str = "-", marker: str | None = None, band: bool = True, bounds: tuple | None = None,
              unit: str | None = None, log: bool = False) -> None:
    """Mean of ``y`` at each ``by`` (default ``x``; its mean ``x`` is the abscissa) with a 95% CI band over rows.

    ``bounds``: the range ``y`` can take (a Student-t band over three seeds easily leaves it);
    ``unit``: a column (``"seed"``) whose rows are also drawn as thin lines when there are few;
    ``log``: for a positive quantity on a log axis, the geometric mean and the interval of the log
    (:data:`CI_LOG_LABEL`), which stays positive.
    """
    by = by or x
    rows = []
    for _, d in data.dropna(subset=[y]).groupby(by):
        v = d[y].to_numpy(float)
        m, lo, hi = np.exp(mean_ci(np.log(v))) if log else mean_ci(v)
        rows.append((d[x].mean(), m, lo, hi))
    if not rows:
        return
    xs, m, lo, hi = map(np.array, zip(*sorted(rows)))
    ax.plot(xs, m, ls, color=color, label=label, marker=marker, ms=4)
    if band and not np.isnan(lo).all():
        if bounds is not None:
            lo, hi = np.clip(lo, *bounds), np.clip(hi, *bounds)
        ax.fill_between(xs, lo, hi, color=color, alpha=0.15, lw=0)
    if unit is not None and data[unit].nunique() <= SEED_DOTS_UP_TO:
        for _, d in data.groupby(unit):
            ax.plot(d[x], d[y], "-", color=color, lw=0.6, alpha=0.45)


def plot_curves(ax, curves: pd.DataFrame, arms, *, x: str = "step", reference: str | None = None,
                xlabel: str | None = None, ylabel: str = "held-out Avg (percentile points)", title: str = "",
                levels: dict[str, float] | None = None, log: bool = False) -> None:
    """Learning curves (from :func:`~wmrl.experiments.curves.learning_curves`): mean, 95% band, each seed.

    ``x``: ``"step"`` or a compute column (``"compute_s"``, ``"compute_min"``); the mean is drawn at
    each evaluation step's mean ``x``. ``reference``: an arm drawn in grey behind the others.
    ``levels``: labelled horizontal lines (e.g. a target score). ``log``: a symmetric-log x axis,
    linear up to the smallest positive ``x`` and logarithmic above, so that arms whose compute
    differs by orders of magnitude are all readable and the untrained start (``x = 0``) still shows.
    """
    seeds = curves.seed.nunique()
    for arm in ([reference] if reference else []) + [a for a in arms if a != reference]:
        d = curves[curves.arm == arm]
        if d.empty:
            continue
        ref = arm == reference
        color = "0.55" if ref else arm_color(arm)
        mean_band(ax, d, x, "avg", by="step", color=color, label=f"{arm} (mean)" + (", reference" if ref else ""),
                  ls="--" if ref else "-", marker="o", band=not ref)
        if seeds <= SEED_DOTS_UP_TO and not ref:
            for _, s in d.groupby("seed"):
                ax.plot(s[x], s.avg, "-", color=color, lw=0.6, alpha=0.45)
    for label, level in (levels or {}).items():
        ax.axhline(level, color="k", ls=":", lw=1, label=label)
    handles, _ = ax.get_legend_handles_labels()
    handles += [Patch(color="0.5", alpha=0.15, label=CI_LABEL), Line2D([], [], color="0.5", lw=0.6, label="one seed")]
    ax.legend(handles=handles, loc="best")
    points = curves.step.nunique()
    if points < MIN_EVAL_POINTS:
        ax.text(0.01, 0.01, f"only {points} evaluation points (< {MIN_EVAL_POINTS}): the shape between them is "
                "not measured", transform=ax.transAxes, fontsize=7, color="tab:red", va="bottom")
    xlabel = xlabel or ("training step" if x == "step" else x)
    if log:
        positive = curves[x][curves[x] > 0]
        ax.set_xscale("symlog", linthresh=float(positive.min()) if len(positive) else 1.0, linscale=0.5)
        ax.set_xlim(left=0)  # compute is never negative
        xlabel += " (log scale above the first evaluation)"
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title or f"Learning curves ({seeds} seeds)")


def describe_axes(fig) -> list[dict]:
    """What each visible panel of ``fig`` shows, from matplotlib's objects: title, axis labels, legend entries."""
    out = []
    for ax in fig.axes:
        if not ax.axison or hasattr(ax, "_colorbar"):  # switched-off panels and colour bars carry no data
            continue
        legend = ax.get_legend()
        out.append({"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                    "xscale": ax.get_xscale(), "yscale": ax.get_yscale(),
                    "legend": [t.get_text() for t in legend.get_texts()] if legend else []})
    return out


def figure_problems(panels: list[dict]) -> list[str]:
    """What a reviewer would miss in a figure described by :func:`describe_axes` (empty: nothing)."""
    problems = []
    for i, p in enumerate(panels):
        name = p["title"] or f"panel {i}"
        for axis in ("xlabel", "ylabel"):
            if not p[axis].strip():
                problems.append(f"{name}: no {axis}")
        if not p["title"].strip() and not p["legend"]:
            problems.append(f"panel {i}: neither a title nor a legend")
    return problems
