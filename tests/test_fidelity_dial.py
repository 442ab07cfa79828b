"""Notebook 08's analysis (notebooks/_fidelity_dial.py): the measured fidelity of a level, the
break-even fidelity and its interval, checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from notebooks._fidelity_dial import (
    break_even,
    crossing,
    dial_claims,
    dial_frame,
    level_arms,
    oracle_overrides,
    oracle_tag,
    profile_overrides,
    profile_tag,
)
from wmrl.config import WorldModelConfig
from wmrl.presets import notebook_params, preset_names, run_config


def test_the_crossing_is_the_lowest_x_from_which_the_curve_stays_at_or_above_zero():
    xs = [0.2, 0.4, 0.6, 0.8]
    assert crossing(xs, [-4, -2, 1, 3]) == pytest.approx(0.4 + 0.2 * 2 / 3)
    assert crossing(xs, [-1, 2, -1, 3]) == pytest.approx(0.6 + 0.2 * 1 / 4)  # read at the last crossing from below
    assert crossing(xs, [0, 1, 2, 3]) == -math.inf  # never below: at or below the lowest level
    assert crossing(xs, [1, 2, 3, -1]) == math.inf  # ends below: above the highest level
    assert math.isnan(crossing(xs, [1, np.nan, 3, 4]))


def test_the_break_even_interval_inverts_the_pointwise_student_t_intervals():
    x = [0.9, 0.2, 0.5]  # unordered: break_even orders the levels by fidelity
    diffs = [[3, 5, 4], [-6, -4, -5], [-2, 0, -1]]  # means 4, -5, -1; SD 1 at every level
    half = stats.t.ppf(0.975, 2) / np.sqrt(3)
    m = {0.2: -5.0, 0.5: -1.0, 0.9: 4.0}

    def cross(lvl):  # the piecewise-linear crossing through the three points, by hand
        (x0, y0), (x1, y1) = [(a, b) for a, b in lvl if b < 0][-1], next((a, b) for a, b in lvl if b >= 0)
        return x0 - y0 * (x1 - x0) / (y1 - y0)

    b = break_even(x, diffs)
    assert b.x == pytest.approx(cross([(k, v) for k, v in m.items()]))
    assert b.lo == pytest.approx(cross([(k, v + half) for k, v in m.items()]))  # where the upper bound reaches 0
    assert b.hi == pytest.approx(cross([(k, v - half) for k, v in m.items()]))  # where the lower bound reaches 0
    assert b.lo < b.x < b.hi and b.seeds == 3 and (b.x_min, b.x_max) == (0.2, 0.9)
    assert b.text() == f"{b.x:.2f} [{b.lo:.2f}, {b.hi:.2f}]"


def test_a_break_even_outside_the_measured_range_is_reported_as_a_bound():
    above = break_even([0.2, 0.9], [[1, 2, 3], [2, 3, 4]])
    assert above.x == -math.inf and above.text().startswith("<= 0.20")
    below = break_even([0.2, 0.9], [[-3, -2, -1], [-2, -3, -4]])
    assert below.x == math.inf and below.text() == "> 0.90 [> 0.90, > 0.90]"
    one_seed = break_even([0.2, 0.9], [[-1], [1]])
    assert one_seed.x == pytest.approx(0.55) and math.isnan(one_seed.lo) and one_seed.text() == "0.55"
    with pytest.raises(ValueError, match=r"must be \(L,\) and \(L, S\)"):
        break_even([0.2, 0.9], [1, 2])


def test_a_level_sits_at_the_mean_fidelity_of_its_arms_with_anchors_at_each_seed():
    tag = oracle_tag(0.2)
    runs = pd.DataFrame({"arm": [f"{a}~{tag}" for a in ("wm", "mix", "wmrl") for _ in (0, 1)], "seed": [0, 1] * 3,
                         "avg": [0.5, 0.6, 0.55, 0.65, 0.6, 0.7]})
    steps = pd.DataFrame({"arm": [f"mix~{tag}"] * 4 + [f"wmrl~{tag}"] * 4, "seed": [0, 0, 1, 1] * 2,
                          "fid_spearman": [0.2, 0.4, 0.5, np.nan, 0.6, 0.8, 0.7, 0.9]})
    d = dial_frame(runs, steps, [0.2], ["wm", "mix", "wmrl"]).set_index(["arm", "seed"])
    assert d.loc[("mix", 0), "spearman"] == pytest.approx(0.3) and d.loc[("mix", 1), "spearman"] == pytest.approx(0.5)
    assert math.isnan(d.loc[("wm", 0), "spearman"])  # no anchors, no pairs
    assert d.loc[("wm", 0), "x"] == pytest.approx((0.3 + 0.7) / 2) and d.loc[("wm", 1), "x"] == pytest.approx(0.65)
    assert d.loc[("wmrl", 1), "avg"] == pytest.approx(70.0)
    with pytest.raises(ValueError, match="no arm with anchors"):
        dial_frame(runs[runs.arm.str.startswith("wm~")], steps, [0.2], ["wm"])


def test_tags_and_overrides_name_a_level_and_change_the_run_they_describe():
    assert (oracle_tag(0.2), oracle_tag(0), oracle_tag(1.0, "identity")) == ("oracle-0.2", "oracle-0",
                                                                             "oracle-identity-1")
    cfg = run_config("wmrl", "smoke", overrides=oracle_overrides(0.2, "identity"))
    assert (cfg.world_model.kind, cfg.world_model.oracle_noise, cfg.world_model.oracle_distortion) == (
        "oracle", 0.2, "identity")
    assert profile_tag("tuning_split") is None and profile_overrides("tuning_split") == {}  # the default runs
    assert profile_tag("train_split") == "wm-train_split" and profile_overrides("train_split") == {
        "world_model.profile": "train_split"}
    assert profile_tag("pessimistic") == "wm-pessimistic"
    assert run_config("wmrl", "smoke", overrides=profile_overrides("pessimistic")).world_model.profile == "pessimistic"


def test_every_dial_marks_the_default_profile_with_the_default_runs():
    """The dial's first mark is the default profile, whose runs are the untagged default ones."""
    dials = {n: notebook_params(n)["FIDELITY_PROFILES"] for n in preset_names("grammar")}
    assert dials and all(profiles[0] == WorldModelConfig().profile for profiles in dials.values()), dials


def test_the_claims_compare_the_most_and_least_faithful_levels_and_the_references():
    found = {c.id: (c.a, c.b, c.expect) for c in dial_claims("oracle-0", "oracle-1", ["wm", "mix", "wmrl"])}
    assert found["D1"] == ("wm~oracle-0", "wm~oracle-1", ">") and found["D3"] == ("wmrl~oracle-1", "wm~oracle-1", ">")
    assert found["D5"] == ("wmrl~oracle-1", "grpo", "<") and found["D6"] == ("wmrl~oracle-0", "grpo", ">")
    assert set(found) == {"D1", "D2", "D3", "D4", "D5", "D6", "D8"}
    assert found["D8"] == ("wmrl~oracle-1", "mix~oracle-1", ">")  # both corrections against none, poor world model
    assert {c.id for c in dial_claims("oracle-0", "oracle-1", ["mix"])} == set()
    assert {c.id: (c.a, c.b) for c in dial_claims("oracle-0", "oracle-1", ["mix", "od"])} == {
        "D7": ("od~oracle-1", "mix~oracle-1")}


def test_end_arms_are_trained_at_the_two_ends_of_the_dial_only():
    assert level_arms([1.0, 0.0, 0.2], ["wm", "wmrl"], ["mix", "od", "wm"]) == {
        0.0: ["wm", "wmrl", "mix", "od"], 0.2: ["wm", "wmrl"], 1.0: ["wm", "wmrl", "mix", "od"]}
    assert level_arms([0.0, 1.0], ["wmrl"]) == {0.0: ["wmrl"], 1.0: ["wmrl"]}


def test_an_end_arm_sits_at_its_levels_fidelity_measured_on_the_every_level_arms_alone():
    levels = [0.0, 0.2, 1.0]
    labels = [(a, s) for s in levels for a in ("wmrl", *(("mix",) if s != 0.2 else ()))]
    runs = pd.DataFrame({"arm": [f"{a}~{oracle_tag(s)}" for a, s in labels for _ in (0, 1)],
                         "seed": [0, 1] * len(labels), "avg": np.linspace(0.3, 0.7, 2 * len(labels))})
    # mix's anchors rank worse than wmrl's; the level's x must not move with them
    steps = pd.DataFrame({"arm": [f"{a}~{oracle_tag(s)}" for a, s in labels for _ in (0, 1)],
                          "seed": [0, 1] * len(labels),
                          "fid_spearman": [0.1 if a == "mix" else 0.9 - s / 2 for a, s in labels for _ in (0, 1)]})
    d = dial_frame(runs, steps, levels, ["wmrl"], end_arms=["mix"])
    assert sorted(d[d.arm == "mix"].noise.unique()) == [0.0, 1.0]  # the ends only
    assert len(d[d.arm == "wmrl"]) == 6
    for _, r in d.iterrows():
        assert r.x == pytest.approx(0.9 - r.noise / 2)  # wmrl's fidelity, mix's 0.1 left out
    assert (d[d.arm == "mix"].spearman == 0.1).all()
