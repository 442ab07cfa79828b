"""The anchor budget's analysis (notebooks/_anchor_budget.py): which runs a sweep needs, and
which share reaches GRPO's score for the least compute."""

import numpy as np
import pandas as pd
import pytest

from notebooks import _anchor_budget as budget
from wmrl.config import ConfigError


def test_shares_that_round_to_the_same_group_count_are_one_run_and_the_default_count_reuses_the_default_runs():
    plan = budget.budget_plan("small", ["wmrl", "anchor_only"], [0.05, 0.125, 0.25, 0.5], [0.125, 0.25])
    got = [(r.label, r.selection, r.requested, r.groups, r.share) for r in plan]
    assert got == [
        ("wmrl", "random", (0.05, 0.125), 1, 0.125),  # 8 groups a step: 5% and 12.5% are one group, as is 10%
        ("wmrl~budget-0.25", "random", (0.25,), 2, 0.25),
        ("wmrl~budget-0.5", "random", (0.5,), 4, 0.5),
        ("anchor_only", "random", (0.05, 0.125), 1, 0.125),
        ("anchor_only~budget-0.25", "random", (0.25,), 2, 0.25),
        ("anchor_only~budget-0.5", "random", (0.5,), 4, 0.5),
        ("wmrl~active-0.1", "active", (0.125,), 1, 0.125),  # the default share's count, trained at the default share
        ("wmrl~active-0.25", "active", (0.25,), 2, 0.25),
    ]
    assert plan[1].overrides == {"method.anchor_fraction": 0.25}
    assert plan[6].overrides == {"method.anchor_selection": "active"}


@pytest.mark.parametrize("shares, arms, match", [([0.0], ["wmrl"], "in \\(0, 1\\]"), ([1.5], ["wmrl"], "in \\(0, 1\\]"),
                                                  (["a"], ["wmrl"], "number"), ([0.5], ["wmlr"], "unknown arm")])
def test_a_bad_share_or_arm_is_refused_naming_it(shares, arms, match):
    with pytest.raises(ConfigError, match=match):
        budget.budget_plan("small", arms, shares)


def test_active_anchors_for_an_arm_without_a_world_model_are_refused():
    with pytest.raises(ConfigError, match="anchor_only"):
        budget.budget_plan("small", ["wmrl"], [0.25], [0.25], active_arm="anchor_only")


def _reach(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame([{"label": k, "seed": s, "reach_s": v} for k, vs in values.items() for s, v in enumerate(vs)])


def test_the_minimising_share_is_resolved_only_when_every_other_ratio_lies_above_one():
    clear = budget.minimising_share(_reach({"grpo": [100, 110, 90, 105], "a": [20, 22, 19, 21], "b": [40, 41, 44, 39]}))
    assert clear["best"] == "a" and clear["resolved"] and not clear["tied"]
    m, lo, _ = clear["ratios"]["b"]
    assert lo > 1 and m == pytest.approx(np.exp(np.mean(np.log(np.array([40, 41, 44, 39]) / [20, 22, 19, 21]))))
    close = budget.minimising_share(_reach({"grpo": [100, 110, 90], "a": [20, 40, 19], "b": [30, 22, 25]}))
    assert close["best"] in ("a", "b") and close["tied"] and not close["resolved"]


def test_runs_that_miss_grpos_score_are_no_candidates_and_uninformative_seeds_are_set_aside():
    out = budget.minimising_share(_reach({"grpo": [0, 100, 90, 95], "a": [0, 20, np.nan, 30], "b": [0, 50, 45, 60]}))
    assert out["uninformative"] == [0]  # the untrained policy already scores grpo's final score there
    assert out["missed"] == {"a": [2]}
    assert out["best"] == "b" and "a" not in out["ratios"]
    none = budget.minimising_share(_reach({"grpo": [np.nan, 100], "a": [5, np.nan]}))
    assert none["best"] is None and not none["resolved"]


def test_the_claims_pair_each_wmrl_share_with_anchor_only_at_its_count_and_active_with_random():
    plan = budget.budget_plan("small", ["wmrl", "anchor_only"], [0.125, 0.5], [0.5])
    claims = {c.id: (c.a, c.b, c.col) for c in budget.budget_claims(plan)}
    assert claims == {"B4": ("wmrl~budget-0.5", "anchor_only~budget-0.5", "avg"),
                      "AA4": ("wmrl~active-0.5", "wmrl~budget-0.5", "avg"),
                      "M4": ("wmrl~active-0.5", "wmrl~budget-0.5", "anchor_residual")}
