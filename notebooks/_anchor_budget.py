"""Notebook 10's two panels: score against compute by anchor share, and the compute at GRPO's score.

The numbers they draw are :mod:`wmrl.experiments.anchor_budget`'s (shared with RESULTS.md).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from wmrl.experiments.anchor_budget import REFERENCE, BudgetRun
from wmrl.experiments.plots import CI_LABEL, CI_LOG_LABEL, arm_color
from wmrl.experiments.stats import mean_ci

__all__ = ["pareto_panel", "reach_panel"]

MARKERS = {"random": "o", "active": "*", "every group": "s"}  # one marker per selection rule
ACTIVE_COLOR = "tab:olive"  # wmrl with active anchors, beside wmrl's green


def _color(run: BudgetRun | None) -> str:
    return arm_color(REFERENCE) if run is None else ACTIVE_COLOR if run.selection == "active" else arm_color(run.arm)


def pareto_panel(ax, runs: pd.DataFrame, plan: list[BudgetRun], untrained_level: float | None = None) -> None:
    """Held-out Avg against total charged compute: per (arm, rule) a line through its shares, each point
    the mean with 95% intervals over seeds on both axes (seeds as dots), labelled by realised share.
    Compute is positive and drawn on a log axis, so its centre and interval are taken on the log (a
    geometric mean, as in :func:`reach_panel`): an arithmetic interval ran below zero off the axis."""
    series = list(dict.fromkeys((r.arm, r.selection) for r in plan)) + [(REFERENCE, "every group")]
    for arm, selection in series:
        members = [r for r in plan if (r.arm, r.selection) == (arm, selection)] or [None]
        xs, ys = [], []
        for r in members:
            d = runs[runs.arm == (r.label if r else REFERENCE)]
            mx, xlo, xhi = np.exp(mean_ci(np.log(d.total_charged_min)))
            my, ylo, yhi = mean_ci(d.avg * 100)
            color = _color(r)
            ax.plot(d.total_charged_min, d.avg * 100, "o", ms=3, color=color, mfc="white", alpha=0.7)
            ax.errorbar([mx], [my], xerr=None if np.isnan(xlo) else [[mx - xlo], [xhi - mx]],
                        yerr=None if np.isnan(ylo) else [[my - ylo], [yhi - my]], fmt=MARKERS[selection], ms=8,
                        color=color, capsize=3)
            ax.annotate(f"{100 * (r.share if r else 1):.0f}%", (mx, my), textcoords="offset points", xytext=(5, 5),
                        fontsize=8, color=color)
            xs.append(mx), ys.append(my)
        ax.plot(xs, ys, "-", color=color, lw=1, label=arm if arm == REFERENCE else f"{arm} ({selection} anchors)")
    if untrained_level is not None:
        ax.axhline(untrained_level, color=arm_color("untrained"), ls="--", lw=1, label="untrained (mean)")
    handles, _ = ax.get_legend_handles_labels()
    handles += [plt.Line2D([], [], color="k", marker="o",
                           label=f"mean, {CI_LABEL} on both axes (compute: on the log)"),
                plt.Line2D([], [], ls="", marker="o", ms=3, color="k", mfc="white", label="one seed")]
    ax.legend(handles=handles, loc="best")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # labelled minor ticks overlap within a decade
    ax.set(xlabel="charged compute per run (CPU-minutes, log scale)", ylabel="held-out Avg (percentile points)",
           title="Score against compute, by anchor share (labels: realised share)")


def reach_panel(ax, reach: pd.DataFrame, runs: pd.DataFrame, plan: list[BudgetRun]) -> None:
    """Per run label, the compute to reach GRPO's final score (``anchor_budget.compute_at_grpo_score``): geometric mean
    with its 95% interval over the seeds that reach it, each seed, and a hollow marker at a run's whole
    compute where a seed never reached it."""
    by_label = {r.label: r for r in plan}
    order = [REFERENCE] + [r.label for r in plan]
    drawn = 0
    for i, label in enumerate(order):
        d, color = reach[reach.label == label], _color(by_label.get(label))
        got = d[d.reach_s > 0]
        if len(got):
            m, lo, hi = np.exp(mean_ci(np.log(got.reach_s / 60)))
            ax.errorbar([i], [m], yerr=None if np.isnan(lo) else [[m - lo], [hi - m]], fmt="s", color=color, capsize=4)
            ax.plot(np.full(len(got), i), got.reach_s / 60, "o", ms=3, color=color, mfc="white")
        miss = runs[(runs.arm == label) & runs.seed.isin(d.seed[d.reach_s.isna()])]
        ax.plot(np.full(len(miss), i), miss.total_charged_min, "v", ms=6, color=color, mfc="none")
        drawn += len(got) + int((miss.total_charged_min > 0).sum())
    at_start = sorted(set(reach.seed[reach.reach_s == 0]))
    if at_start:  # nothing to say about cost there: the untrained policy already scores GRPO's final score
        ax.text(0.01, 0.01, f"left out: seed(s) {', '.join(map(str, at_start))}, where the untrained policy already "
                "scores GRPO's final score", transform=ax.transAxes, fontsize=7, color="tab:red", va="bottom")
    ax.set_xticks(range(len(order)), [f"{lab}\n{100 * (by_label[lab].share if lab in by_label else 1):.0f}%"
                                      for lab in order], rotation=20, fontsize=7)
    if drawn:
        ax.set_yscale("log")
    ax.legend(handles=[plt.Line2D([], [], color="k", marker="s", label=f"geometric mean, {CI_LOG_LABEL}"),
                       plt.Line2D([], [], ls="", marker="o", ms=3, color="k", mfc="white", label="one seed"),
                       plt.Line2D([], [], ls="", marker="v", color="k", mfc="none",
                                  label="seed that never reached it (at its whole compute)")], loc="best")
    ax.set(xlabel="runs (realised anchor share)", ylabel="compute to reach GRPO's final score (CPU-min, log scale)",
           title="Compute at GRPO's final held-out score, per share")
