"""Notebook 11's measurements against independent computations: the prequential replay against
scikit-learn's isotonic regression fitted by hand at the schedule's points, the advantage spread
against numpy's SD of each group, and the claims built from the variants."""

import numpy as np
import pandas as pd
import pytest
from sklearn.isotonic import IsotonicRegression

from notebooks import _regime as regime
from wmrl.calibration import OnlineDebiaser
from wmrl.config import ConfigError


def _stream(steps=6, n=4, seed=0, arm="od"):
    """One run's anchor pairs: ``n`` a step, world-model scores a monotone distortion of the truth plus noise."""
    rng = np.random.default_rng(seed)
    true = rng.uniform(0, 1, (steps, n))
    pred = np.clip(0.4 + 0.6 * np.sqrt(true) + 0.15 * rng.normal(size=true.shape), 0, 1)
    return pd.DataFrame({"arm": arm, "seed": seed, "step": np.repeat(np.arange(steps), n), "pred": pred.ravel(),
                         "calibrated": pred.ravel(), "true": true.ravel()})


def test_the_replay_calibrates_each_step_with_the_map_fitted_on_the_earlier_steps_only():
    pairs = _stream(steps=6, n=4)
    row = regime.prequential_calibration(pairs, [8], refit_every=8).query("first_fit == 8").iloc[0]
    p, t = pairs.pred.to_numpy(), pairs.true.to_numpy()
    expected = []
    for step in range(6):  # 4 pairs a step: fits after steps 1 (8 pairs) and 3 (16), so steps 2-3 and 4-5 share a map
        have = {0: 0, 1: 0, 2: 8, 3: 8, 4: 16, 5: 16}[step]
        x = p[4 * step:4 * step + 4]
        if have == 0:
            expected.append(x)
        else:
            iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(p[:have], t[:have])
            expected.append(iso.predict(x))
    expected = np.concatenate(expected)
    np.testing.assert_allclose(row.calibrated, expected, atol=1e-12)
    assert row.mse == pytest.approx(np.mean((expected - t) ** 2))
    late = pairs.step.to_numpy() >= 2.5  # the second half: steps >= half the last step
    assert row.mse_late == pytest.approx(np.mean((expected[late] - t[late]) ** 2))


def test_a_first_fit_that_never_comes_is_the_identity_and_scores_the_raw_error():
    pairs = _stream(steps=3, n=4, seed=1)
    preq = regime.prequential_calibration(pairs, [100], refit_every=8).set_index("first_fit")
    raw = np.mean((pairs.pred - pairs.true) ** 2)
    assert preq.loc[100, "mse"] == pytest.approx(raw) and preq.loc[regime.NEVER, "mse"] == pytest.approx(raw)


def test_the_calibration_table_pairs_each_schedule_with_the_identity_of_the_same_run():
    pairs = pd.concat([_stream(steps=8, seed=s) for s in range(3)])
    preq = regime.prequential_calibration(pairs, [4, 8], refit_every=4)
    table = regime.calibration_table(preq)
    assert table.loc[regime.NEVER, "/ raw, whole run"].startswith("1.00 [1.00, 1.00]")
    ratio = regime.relative_to_identity(preq).set_index(["arm", "seed", "first_fit"])
    raw = preq[preq.first_fit == regime.NEVER].set_index("seed").mse
    assert ratio.loc[("od", 1, 4), "mse"] == pytest.approx(preq.set_index(["seed", "first_fit"]).loc[(1, 4), "mse"] / raw[1])
    assert list(table.runs) == [3, 3, 3]


def test_the_spread_of_each_anchor_group_is_numpys_population_sd():
    pairs = _stream(steps=2, n=4).assign(calibrated=lambda d: 0.5 * d.pred)  # a map that halves the spread
    pairs = pd.concat([pairs, pairs.assign(step=pairs.step + 2)])  # two steps more, same groups
    spread = regime.advantage_spread(pairs, group_size=2)
    assert len(spread) == 8  # 4 steps x 2 groups of 2
    first = pairs.iloc[:2]
    assert spread.iloc[0].sd_raw == pytest.approx(np.std(first.pred)) and spread.iloc[0].sd_real == pytest.approx(
        np.std(first.true))
    summary = regime.spread_summary(spread, from_step=2)
    assert summary.groups.item() == 4
    assert summary.cal_over_raw.item() == pytest.approx(0.5)
    per_step = regime.spread_summary(spread, from_step=0, by=("arm", "seed", "step"))
    assert list(per_step.step) == [0, 1, 2, 3] and per_step.cal_over_raw.to_numpy() == pytest.approx([0.5] * 4)


def test_a_step_that_is_not_whole_groups_is_refused():
    with pytest.raises(ValueError, match="not a whole number of groups of 3"):
        regime.advantage_spread(_stream(steps=1, n=4), group_size=3)


def test_the_first_calibrated_step_follows_the_first_refit_in_every_run():
    steps = pd.DataFrame({"seed": [0, 0, 0, 1, 1, 1], "step": [0, 1, 2] * 2, "od_refits": [0, 1, 1, 0, 0, 1]})
    assert regime.first_fit_step(steps) == 3  # seed 1 fits after step 2
    with pytest.raises(ValueError, match="never fitted"):
        regime.first_fit_step(steps.assign(od_refits=0))


def test_the_claims_compare_each_variant_in_the_papers_direction():
    v = regime.variants("small", [8, 32], 4)
    table = {c.id: c for c in regime.method_regime(v, default_fit=16, default_warmup=8)}
    assert (table["F-8"].a, table["F-8"].b) == ("od", "od~first_fit-8")  # earlier: expected to cost
    assert (table["F-32"].a, table["F-32"].b) == ("od~first_fit-32", "od")  # later: expected to gain
    assert (table["S-OD"].a, table["S-OD"].b) == ("od~std", "mix~std")
    assert (table["W-4"].a, table["W-4"].b) == ("ivd~warmup_4", "ivd")  # IVD for longer: expected to gain
    assert v.first_fits[0].overrides == {"method.od_min_pairs": 8} and v.std.overrides == {"train.std_normalize": True}


@pytest.mark.parametrize("warmup", [0, 2.5, True, "4"])
def test_a_warm_up_that_is_not_a_whole_number_of_groups_is_refused_by_name(warmup):
    with pytest.raises(ConfigError, match="IVD warm-up"):
        regime.variants("small", [8, 32], warmup)


def test_the_default_warm_up_is_the_steps_rule_one_window_after_ods_first_fit():
    assert regime.default_ivd_warmup("small") == 16 // 4 + 4  # first fit after 4 steps of 4 pairs, window of 4


def test_the_logged_warm_up_counts_anchor_groups_until_eta2_cal_is_recorded():
    steps = pd.DataFrame({"arm": "ivd", "seed": 0, "step": range(4), "n_executed_groups": 2,
                          "eta2_cal": [np.nan, np.nan, 0.1, 0.1], "rho": [1, 1, 1.5, 2.0]})
    row = regime.ivd_active_share(steps).iloc[0]
    assert (row.warmup_groups, row.ivd_share, row.mean_rho) == (6, 0.5, 1.375)


def _run_folder(root, arm, seed, pairs, min_pairs=4, refit=4, group=4):
    """A run folder as readout reads it: summary.json's configuration, pairs.parquet and steps.parquet."""
    import json

    d = root / arm / f"seed{seed}"
    d.mkdir(parents=True)
    config = {"method": {"od_min_pairs": min_pairs, "od_refit_every": refit}, "train": {"group_size": group}}
    (d / "summary.json").write_text(json.dumps({"provenance": {"config": config}}))
    pairs.drop(columns=["arm", "seed"]).to_parquet(d / "pairs.parquet")
    steps = pairs.groupby("step").size().cumsum().rename("od_pairs").reset_index()
    steps.assign(od_refits=(steps.od_pairs >= min_pairs).astype(int)).to_parquet(d / "steps.parquet")
    return {"arm": arm, "seed": seed, "dir": str(d)}


def test_the_readout_refuses_a_replay_that_is_not_the_runs_od(tmp_path):
    stream = _stream(steps=4, n=4)
    od = OnlineDebiaser(4, 4)
    calibrated = []
    for _, g in stream.groupby("step"):  # what the trainer logs: each step through the map before its pairs
        calibrated.append(od.transform(g.pred.to_numpy()))
        od.push_many(g.pred.to_numpy(), g.true.to_numpy())
    good = stream.assign(calibrated=np.concatenate(calibrated))
    base = pd.DataFrame([_run_folder(tmp_path / "a", "od", 0, good), _run_folder(tmp_path / "a", "mix", 0, stream)])
    r = regime.readout(base, [8])
    assert (r.first_fit, r.refit_every, r.group_size, r.from_step) == (4, 4, 4, 1)
    bad = pd.DataFrame([_run_folder(tmp_path / "b", "od", 0, good.assign(calibrated=good.pred))])
    with pytest.raises(AssertionError, match="does not give its logged scores"):
        regime.readout(bad, [8])
    mixed = pd.DataFrame([_run_folder(tmp_path / "c", "od", 0, good), _run_folder(tmp_path / "c", "mix", 0, stream, refit=8)])
    with pytest.raises(ValueError, match="od_refit_every"):
        regime.readout(mixed, [8])
