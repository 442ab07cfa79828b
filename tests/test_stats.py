"""Statistics of a small campaign, checked against scipy and statsmodels and by simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import TTestPower

from wmrl.experiments import stats


def _runs(values: dict[str, list[float]], col: str = "avg") -> pd.DataFrame:
    return pd.DataFrame([{"arm": a, "seed": s, col: v} for a, vs in values.items() for s, v in enumerate(vs)])


def test_the_interval_is_scipys_student_t_interval():
    x = np.array([0.3, 0.5, 0.45, 0.62, 0.38])
    m, lo, hi = stats.mean_ci(x)
    want = sps.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=sps.sem(x))
    assert m == pytest.approx(x.mean()) and (lo, hi) == pytest.approx(want)
    assert np.isnan(stats.mean_ci([0.4])[1])


def test_paired_differences_cancel_what_two_arms_share_at_a_seed():
    # seed effects of +-10 points swamp unpaired intervals, but wmrl is exactly 1 point above grpo at every seed
    runs = _runs({"grpo": [0.10, 0.30, 0.20], "wmrl": [0.11, 0.31, 0.21]})
    m, lo, hi, n = stats.paired_diff(runs, "wmrl", "grpo", scale=100)
    assert n == 3 and m == pytest.approx(1.0) and lo == pytest.approx(1.0) and hi == pytest.approx(1.0)


def test_a_ratio_is_summarised_by_the_geometric_mean_with_a_multiplicative_interval():
    runs = _runs({"grpo": [30.0, 31.0, 29.0, 40.0], "wmrl": [10.0, 10.5, 9.5, 8.0]}, col="s")
    m, lo, hi, _ = stats.paired_diff(runs, "grpo", "wmrl", "s", op="ratio")
    r = np.array([3.0, 31 / 10.5, 29 / 9.5, 5.0])
    assert m == pytest.approx(sps.gmean(r))
    ci = sps.t.interval(0.95, 3, loc=np.log(r).mean(), scale=sps.sem(np.log(r)))
    assert (lo, hi) == pytest.approx(np.exp(ci))
    with pytest.raises(ValueError, match="positive"):
        stats.paired_diff(_runs({"a": [1.0, 0.0], "b": [1.0, 1.0]}), "a", "b", op="ratio")


def test_the_p_value_is_scipys_paired_t_test():
    a, b = np.array([0.52, 0.61, 0.48, 0.7]), np.array([0.5, 0.55, 0.5, 0.6])
    assert stats.t_test_p(a - b) == pytest.approx(sps.ttest_rel(a, b).pvalue)
    assert np.isnan(stats.t_test_p([1.0]))


@pytest.mark.parametrize("n", [2, 3, 4, 6, 10, 30])
def test_the_detectable_difference_is_statsmodels_exact_power_solution(n):
    sd = 7.0
    effect = TTestPower().solve_power(nobs=n, alpha=0.05, power=0.8, alternative="two-sided")
    assert stats.min_detectable_difference(sd, n) == pytest.approx(effect * sd, rel=1e-3)


def test_the_detectable_difference_is_detected_four_times_in_five_by_simulation():
    rng = np.random.default_rng(0)
    n, sd = 3, 1.0
    delta = stats.min_detectable_difference(sd, n)
    d = rng.normal(delta, sd, size=(40_000, n))
    detected = (sps.ttest_1samp(d, 0.0, axis=1).pvalue < 0.05).mean()
    assert detected == pytest.approx(0.8, abs=0.01)


def test_the_closed_form_approximation_understates_the_detectable_difference_at_few_seeds():
    def closed_form(n):
        return (sps.t.ppf(0.975, n - 1) + sps.t.ppf(0.8, n - 1)) / np.sqrt(n)

    assert 1.03 < stats.min_detectable_difference(1.0, 3) / closed_form(3) < 1.06
    assert stats.min_detectable_difference(1.0, 20) == pytest.approx(closed_form(20), rel=0.005)


def test_one_seed_has_no_detectable_difference_and_no_spread_detects_anything():
    assert np.isnan(stats.min_detectable_difference(3.0, 1))
    assert stats.min_detectable_difference(0.0, 5) == 0.0


def test_holm_matches_statsmodels_and_leaves_missing_p_values_out():
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.2])
    assert stats.holm(p) == pytest.approx(multipletests(p, method="holm")[1])
    with_nan = stats.holm([0.01, np.nan, 0.04])
    assert np.isnan(with_nan[1]) and with_nan[[0, 2]] == pytest.approx(multipletests([0.01, 0.04], method="holm")[1])


@pytest.mark.parametrize("lo, hi, expect, want", [
    (0.1, 0.5, ">", "reproduced"), (-0.5, -0.1, ">", "fails"), (-0.1, 0.3, ">", "inconclusive"),
    (-0.5, -0.1, "<", "reproduced"), (0.1, 0.5, "<", "fails"), (float("nan"), float("nan"), ">", "inconclusive"),
])
def test_a_verdict_follows_the_side_of_zero_the_interval_lies_on(lo, hi, expect, want):
    assert stats.verdict(lo, hi, expect) == want


def test_the_arm_table_formats_means_with_intervals_in_arm_order():
    t = stats.arm_table(_runs({"wmrl": [0.1, 0.2, 0.3], "grpo": [0.1, 0.1, 0.1]}), ["grpo", "wmrl"],
                        {"Avg": ("avg", 100, 1)})
    assert t.index.tolist() == ["grpo", "wmrl"] and t.loc["grpo", "Avg"] == "10.0 [10.0, 10.0]"
    assert t.loc["wmrl", "Avg"].startswith("20.0 [") and t.seeds.tolist() == [3, 3]
    s = stats.arm_summary(_runs({"wmrl": [0.1, 0.2, 0.3]}), "avg", ["wmrl"], 100)
    assert s.loc["wmrl", "values"] == pytest.approx([10, 20, 30])


def test_tost_equals_statsmodels_and_the_interval_inside_the_margin():
    from statsmodels.stats.weightstats import ttost_paired

    rng = np.random.default_rng(7)
    for n in (2, 5, 12, 48):
        for mu in (0.0, 1.5, 2.9, 5.0):
            v = rng.normal(mu, 2.5, n)
            p = stats.tost_p(v, 3.0)
            assert p == pytest.approx(ttost_paired(v, np.zeros(n), -3.0, 3.0)[0], rel=1e-10, abs=1e-15)
            _, lo, hi = stats.mean_ci(v, confidence=0.9)  # TOST at 5% each side <=> the 90% interval inside
            assert (p < 0.05) == (-3.0 < lo and hi < 3.0)
    assert np.isnan(stats.tost_p([1.0], 3.0))
    assert stats.tost_p([1.0, 1.0], 3.0) == 0.0 and stats.tost_p([4.0, 4.0], 3.0) == 1.0
    with pytest.raises(ValueError, match="positive"):
        stats.tost_p([1.0, 2.0], 0.0)


def test_a_bounded_columns_interval_is_cut_at_its_range_and_an_unbounded_one_is_not():
    runs = pd.DataFrame({"arm": ["a"] * 3, "seed": [0, 1, 2], "ok": [0.0, 90.0, 90.0], "x": [0.0, 90.0, 90.0]})
    shown = stats.arm_table(runs, ["a"], {"ok": ("ok", 1, 0, (0, 100)), "x": ("x", 1, 0)})
    m, lo, hi = stats.mean_ci([0.0, 90.0, 90.0])
    assert lo < 0 and hi > 100  # the t-interval of three seeds runs past both ends
    assert shown.loc["a", "ok"] == "60 [0, 100]" and shown.loc["a", "x"] == stats.fmt_ci(m, lo, hi, 0)
