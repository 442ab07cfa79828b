"""Online Debiasing against scikit-learn's isotonic regression fitted directly on the same pairs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.isotonic import IsotonicRegression

from wmrl.calibration import OnlineDebiaser


def _pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    r = rng.uniform(0, 1, n)
    r_hat = np.sqrt(r) + 0.1 * rng.normal(size=n)  # a monotone distortion plus noise (Assumption 6)
    return r_hat, r


def test_the_map_is_the_identity_before_min_pairs():
    od = OnlineDebiaser(min_pairs=200, refit_every=64)
    p, t = _pairs(199)
    od.push_many(p, t)
    assert not od.fitted
    x = np.linspace(-1, 2, 7)
    np.testing.assert_array_equal(od.transform(x), x)


def test_first_fit_happens_exactly_at_min_pairs():
    od = OnlineDebiaser(min_pairs=200, refit_every=64)
    p, t = _pairs(200)
    assert od.push_many(p[:150], t[:150]) is False
    assert od.push_many(p[150:], t[150:]) is True
    assert od.fitted and od.n_refits == 1


def test_fitted_map_matches_sklearn_isotonic_on_the_same_pairs():
    p, t = _pairs(500, seed=3)
    od = OnlineDebiaser(min_pairs=200, refit_every=64)
    for i in range(0, 500, 8):  # groups of 8 arrive one step at a time
        od.push_many(p[i : i + 8], t[i : i + 8])
    # refits: the first when the 200th pair arrives, then after every 64 new pairs
    last_fit_n = od.snapshots[-1].n_pairs
    ref = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(p[:last_fit_n], t[:last_fit_n])
    x = np.linspace(p.min() - 0.5, p.max() + 0.5, 301)
    np.testing.assert_allclose(od.transform(x), ref.predict(x), atol=1e-12)


@pytest.mark.parametrize("n_total, expected", [(199, 0), (200, 1), (263, 1), (264, 2), (200 + 64 * 5, 6)])
def test_refit_count_follows_the_schedule_when_pairs_arrive_one_by_one(n_total, expected):
    p, t = _pairs(n_total)
    od = OnlineDebiaser(min_pairs=200, refit_every=64)
    for a, b in zip(p, t):
        od.push_many([a], [b])
    assert od.n_refits == expected


def test_fifo_cap_keeps_only_the_most_recent_pairs():
    p, t = _pairs(400, seed=5)
    od = OnlineDebiaser(min_pairs=50, refit_every=10, max_pairs=100)
    for i in range(0, 400, 10):
        od.push_many(p[i : i + 10], t[i : i + 10])
    ref = IsotonicRegression(out_of_bounds="clip").fit(p[-100:], t[-100:])
    x = np.linspace(0, 1, 50)
    np.testing.assert_allclose(od.transform(x), ref.predict(x), atol=1e-12)
    assert od.n_pairs == 400


def test_snapshots_record_the_drift_of_the_map():
    p, t = _pairs(400)
    od = OnlineDebiaser(min_pairs=200, refit_every=64)
    od.push_many(p, t)
    od.push_many(p[:64] + 0.3, t[:64])  # the world model shifts: the map must move
    assert len(od.snapshots) == 2
    assert not np.allclose(od.snapshots[0](p[:50]), od.snapshots[1](p[:50]))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(-5, 5), st.floats(-5, 5)), min_size=3, max_size=60), st.lists(st.floats(-10, 10), min_size=2, max_size=30))
def test_calibrated_scores_are_monotone_and_within_the_range_of_true_scores(pairs, queries):
    od = OnlineDebiaser(min_pairs=3, refit_every=1)
    p, t = map(np.array, zip(*pairs))
    od.push_many(p, t)
    q = np.sort(np.array(queries))
    out = od.transform(q)
    assert np.all(np.diff(out) >= -1e-12)
    assert out.min() >= t.min() - 1e-12 and out.max() <= t.max() + 1e-12


def test_state_dict_round_trip_gives_the_same_map_and_schedule():
    p, t = _pairs(300)
    a = OnlineDebiaser(min_pairs=200, refit_every=64)
    a.push_many(p[:250], t[:250])
    b = OnlineDebiaser(min_pairs=200, refit_every=64)
    b.load_state_dict(a.state_dict())
    for od in (a, b):
        od.push_many(p[250:], t[250:])
    x = np.linspace(0, 1, 20)
    np.testing.assert_array_equal(a.transform(x), b.transform(x))
    assert a.n_refits == b.n_refits


@pytest.mark.parametrize(
    "pred, true, match",
    [([0.1, 0.2], [0.1], "same shape"), ([0.1, np.nan], [0.1, 0.2], "non-finite"), ([0.1, np.inf], [0.1, 0.2], "non-finite")],
)
def test_bad_pairs_are_rejected_with_a_clear_message(pred, true, match):
    with pytest.raises(ValueError, match=match):
        OnlineDebiaser().push_many(pred, true)


def test_nan_scores_cannot_be_transformed():
    with pytest.raises(ValueError, match="non-finite"):
        OnlineDebiaser().transform([0.2, np.nan])


def test_nonsense_settings_are_refused():
    with pytest.raises(ValueError):
        OnlineDebiaser(min_pairs=1)
    with pytest.raises(ValueError):
        OnlineDebiaser(min_pairs=10, max_pairs=5)


def test_the_debiasers_defaults_are_the_method_configurations():
    from wmrl.beyond import ConditionalDebiaser
    from wmrl.config import MethodConfig

    method, od, cd = MethodConfig(), OnlineDebiaser(), ConditionalDebiaser()
    assert (od.min_pairs, od.refit_every) == (method.od_min_pairs, method.od_refit_every)
    assert (cd.pooled.min_pairs, cd.pooled.refit_every, cd.stratum_min_pairs) == (
        method.od_min_pairs, method.od_refit_every, method.od_condition_min_pairs)
