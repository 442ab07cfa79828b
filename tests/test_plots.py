"""The figures' visual language and the checks a figure must pass."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from wmrl.experiments import plots, stats


def test_a_panel_without_axis_labels_or_a_title_or_legend_is_reported():
    fig, (a, b) = plt.subplots(1, 2)
    a.plot([0, 1])
    b.plot([0, 1], label="x")
    b.set(xlabel="step", ylabel="reward", title="ok")
    b.legend()
    problems = plots.figure_problems(plots.describe_axes(fig))
    plt.close(fig)
    assert problems == ["panel 0: no xlabel", "panel 0: no ylabel", "panel 0: neither a title nor a legend"]


def test_bars_show_the_interval_and_every_seed_and_say_so_in_the_legend():
    runs = pd.DataFrame({"arm": ["grpo"] * 3 + ["wmrl"] * 3, "seed": [0, 1, 2] * 2, "avg": [0.5, 0.6, 0.55, 0.4, 0.5, 0.7]})
    fig, ax = plt.subplots()
    plots.bar_ci(ax, stats.arm_summary(runs, "avg", ["grpo", "wmrl"], 100), "held-out Avg (points)", "t")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    dots = [ln for ln in ax.lines if ln.get_marker() == "o"]
    plt.close(fig)
    assert plots.CI_LABEL in legend and "one seed" in legend
    assert sorted(np.concatenate([d.get_ydata() for d in dots]).round(1)) == [40.0, 50.0, 50.0, 55.0, 60.0, 70.0]


def test_a_curve_with_few_evaluation_points_says_so():
    curves = pd.DataFrame({"arm": ["wmrl"] * 4, "seed": [0, 0, 1, 1], "step": [0, 8, 0, 8], "avg": [30, 40, 32, 44.0],
                           "compute_s": [0, 5, 0, 6.0]})
    fig, ax = plt.subplots()
    plots.plot_curves(ax, curves, ["wmrl"])
    texts = [t.get_text() for t in ax.texts]
    plt.close(fig)
    assert any("only 2 evaluation points" in t for t in texts)


def test_a_tagged_variant_takes_its_base_arms_colour():
    assert plots.arm_color("wmrl~scale_only") == plots.ARM_COLORS["wmrl"]


def test_curves_against_compute_on_a_log_axis_keep_the_zero_start_and_separate_cheap_from_costly_arms():
    curves = pd.DataFrame({"arm": ["wm"] * 3 + ["grpo"] * 3, "seed": [0] * 6, "step": [0, 8, 16] * 2,
                           "avg": [30, 40, 45, 30, 50, 60.0], "compute_min": [0, 0.02, 0.05, 0, 2.5, 5.0]})
    fig, ax = plt.subplots()
    plots.plot_curves(ax, curves, ["wm", "grpo"], x="compute_min", log=True)
    scale, xlabel = ax.get_xscale(), ax.get_xlabel()
    to_axes = ax.transAxes.inverted().transform
    x_of = {v: to_axes(ax.transData.transform((v, 0)))[0] for v in (0, 0.05, 5.0)}
    plt.close(fig)
    assert scale == "symlog" and "log" in xlabel and x_of[0] == pytest.approx(0, abs=1e-9)  # starts at zero
    # wm's whole curve gets a visible share of the axis, not a sliver at zero
    assert x_of[0.05] - x_of[0] > 0.2 * (x_of[5.0] - x_of[0])
