"""The variance decomposition (evaluation vs training noise) and campaign sizing."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from wmrl.experiments import noise, stats


def test_variance_components_recover_known_evaluation_and_training_noise():
    rng = np.random.default_rng(1)
    seeds, reps, sd_train, sd_eval = 400, 5, 3.0, 6.0
    policy = rng.normal(50, sd_train, seeds)
    df = pd.DataFrame([{"seed": s, "avg": policy[s] + rng.normal(0, sd_eval)} for s in range(seeds) for _ in range(reps)])
    c = noise.variance_components(df)
    assert c["var_eval"] == pytest.approx(sd_eval**2, rel=0.05)
    assert c["var_train"] == pytest.approx(sd_train**2, rel=0.15)
    assert c["n0"] == reps and c["eval_share"] == pytest.approx(36 / 45, abs=0.03)


def test_variance_components_match_the_one_way_anova_mean_squares():
    df = pd.DataFrame({"seed": [0, 0, 0, 1, 1, 1, 2, 2, 2], "avg": [1.0, 2.0, 3.0, 4.0, 6.0, 5.0, 9.0, 7.0, 8.0]})
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    table = anova_lm(ols("avg ~ C(seed)", df).fit())
    ms_between, ms_within = table["mean_sq"].iloc[0], table["mean_sq"].iloc[1]
    c = noise.variance_components(df)
    assert c["var_eval"] == pytest.approx(ms_within)
    assert c["var_train"] == pytest.approx((ms_between - ms_within) / 3)


def test_a_policy_fixed_across_seeds_measures_evaluation_noise_alone():
    runs = pd.DataFrame({"arm": ["untrained"] * 3 + ["wmrl"] * 3, "seed": [0, 1, 2] * 2,
                         "avg": [0.30, 0.40, 0.35, 0.2, 0.6, 0.4]})
    t = noise.noise_from_fixed_policy(runs, ["untrained", "wmrl"], scale=100)
    var_eval, var_total = np.var([30, 40, 35], ddof=1), np.var([20, 60, 40], ddof=1)
    assert t.loc["untrained", "sd_eval"] == pytest.approx(np.sqrt(var_eval)) and t.loc["untrained", "sd_train"] == 0
    assert t.loc["wmrl", "sd_train"] == pytest.approx(np.sqrt(var_total - var_eval))
    assert t.loc["wmrl", "eval_share"] == pytest.approx(var_eval / var_total)
    with pytest.raises(ValueError, match="two seeds"):
        noise.noise_from_fixed_policy(runs[runs.seed == 0], ["wmrl"])


def test_repeated_evaluations_of_trained_policies_give_the_pooled_within_policy_variance_and_its_share():
    from statsmodels.formula.api import ols
    from statsmodels.stats.anova import anova_lm

    repeats = pd.DataFrame({"arm": ["grpo"] * 8, "seed": [0] * 4 + [1] * 4, "repeat": [0, 1, 2, 3] * 2,
                            "avg": [0.50, 0.56, 0.47, 0.55, 0.40, 0.44, 0.37, 0.41]})
    check = pd.concat([repeats, repeats.iloc[[0]].assign(repeat=-1, avg=0.9)])  # the own-draws check is left out
    runs = pd.DataFrame({"arm": ["untrained"] * 3 + ["grpo"] * 3, "seed": [0, 1, 2] * 2,
                         "avg": [0.30, 0.33, 0.28, 0.52, 0.40, 0.61]})
    t = noise.repeat_noise(check, runs).loc["grpo"]
    ms_within = anova_lm(ols("avg ~ C(seed)", repeats.assign(avg=100 * repeats.avg)).fit())["mean_sq"].iloc[1]
    assert t.sd_eval == pytest.approx(np.sqrt(ms_within)) and (t.policies, t.evaluations) == (2, 8)
    assert t.sd_eval_lo < t.sd_eval < t.sd_eval_hi
    total = np.var([52, 40, 61], ddof=1)
    assert t.eval_share == pytest.approx(ms_within / total) and t.eval_share_lo < t.eval_share < t.eval_share_hi
    assert t.sd_untrained == pytest.approx(np.std([30, 33, 28], ddof=1))
    with pytest.raises(ValueError, match="two evaluations"):
        noise.repeat_noise(repeats[repeats.repeat == 0], runs)


def test_the_evaluation_sds_interval_covers_the_true_sd_95_percent_of_the_time():
    rng = np.random.default_rng(3)
    hits = []
    for _ in range(2000):
        runs = pd.DataFrame({"arm": ["untrained"] * 5, "seed": range(5), "avg": rng.normal(0.3, 0.04, 5)})
        r = noise.noise_from_fixed_policy(runs, ["untrained"], scale=100).iloc[0]
        hits.append(r.sd_eval_lo <= 4.0 <= r.sd_eval_hi)
        assert r.sd_eval_lo < r.sd_eval < r.sd_eval_hi
    assert np.mean(hits) == pytest.approx(0.95, abs=0.015)


def test_common_random_numbers_and_repeats_shrink_only_the_evaluation_part():
    base = noise.projected_mdd(4.0, 36.0, seeds=5)
    assert base == pytest.approx(stats.min_detectable_difference(np.sqrt(2 * 4 + 2 * 36), 5))
    assert noise.projected_mdd(4.0, 36.0, seeds=5, eval_corr=1.0) == pytest.approx(
        stats.min_detectable_difference(np.sqrt(8.0), 5))
    assert noise.projected_mdd(4.0, 36.0, seeds=5, eval_reps=4) < base
    assert noise.projected_mdd(4.0, 36.0, seeds=10) < base


def test_seeds_to_detect_is_the_fewest_seeds_that_reach_the_target():
    var_train, var_eval = 24.0, 9.6
    n = noise.seeds_to_detect(3.0, var_train, var_eval)
    assert noise.projected_mdd(var_train, var_eval, n) <= 3.0 < noise.projected_mdd(var_train, var_eval, n - 1)
    # Many seeds: the t-test is nearly the z-test, n ~ (z_{1-a/2} + z_power)^2 SD(d)^2 / target^2 (t needs a little more).
    z = norm.ppf(1 - stats.ALPHA / 2) + norm.ppf(stats.POWER)
    closed = z**2 * 2 * (var_train + var_eval) / 3.0**2
    assert closed <= n <= closed + 3
    assert noise.seeds_to_detect(3.0, var_train, var_eval, eval_reps=4, eval_corr=0.5) < n  # less evaluation noise
    assert noise.seeds_to_detect(3.0, var_train, var_eval, max_seeds=10) is None
    with pytest.raises(ValueError, match="positive difference"):
        noise.seeds_to_detect(0.0, var_train, var_eval)


def test_campaign_sizing_projects_designs_and_their_hours_from_the_runs():
    """Two arms at three seeds: the components are noise_from_fixed_policy's, each design's detectable difference
    projected_mdd's, and a design's hours its seeds times one run of each arm (wall time, plus the final
    evaluation again for each further repeat)."""
    runs = pd.DataFrame({"arm": ["untrained"] * 3 + ["wmrl"] * 3, "seed": [0, 1, 2] * 2,
                         "avg": [0.30, 0.40, 0.35, 0.2, 0.6, 0.4],
                         "wall_s": [100.0, 100.0, 100.0, 500.0, 700.0, 600.0], "eval_wall_s": [100.0] * 3 + [300.0] * 3})
    s = noise.campaign_sizing(runs, ["untrained", "wmrl"], goal=3.0)
    var_eval = np.var([30, 40, 35], ddof=1)
    var_train = np.var([20, 60, 40], ddof=1) - var_eval
    assert (s.var_eval, s.var_train) == (pytest.approx(var_eval), pytest.approx(var_train))
    assert s.train_share == pytest.approx(var_train / (var_train + var_eval))
    first, repeats = s.designs.iloc[0], s.designs.iloc[2]  # the seeds measured at one repeat; 10 seeds at four
    assert first.seeds == 3 and first.detectable == pytest.approx(noise.projected_mdd(var_train, var_eval, 3))
    assert first.hours == pytest.approx(3 * (100 + 600) / 3600)
    assert (repeats.seeds, repeats.eval_reps) == (10, 4)
    assert repeats.hours == pytest.approx(10 * ((100 + 3 * 100) + (600 + 3 * 300)) / 3600)
    n = noise.seeds_to_detect(3.0, var_train, var_eval)
    assert s.to_goal.seeds.iloc[0] == n and s.to_goal.hours.iloc[0] == pytest.approx(n * 700 / 3600)
    assert s.sentence().startswith(f"To detect 3 points on the headline comparisons would take {n} seeds at 1 ")
    with pytest.raises(ValueError, match="needs 'untrained' and a trained arm"):
        noise.campaign_sizing(runs, ["wmrl"], goal=3.0)


def test_a_goal_out_of_reach_says_so():
    runs = pd.DataFrame({"arm": ["untrained"] * 2 + ["wmrl"] * 2, "seed": [0, 1] * 2, "avg": [0.3, 0.4, 0.0, 1.0],
                         "wall_s": [1.0] * 4, "eval_wall_s": [1.0] * 4})
    s = noise.campaign_sizing(runs, ["untrained", "wmrl"], goal=0.01)
    assert s.to_goal.seeds.isna().all() and "more than 10000 seeds" in s.sentence() and "; - hours" in s.sentence()
