"""The aggregates against rliable's own output (tests/data/rliable_reference.json) and closed forms."""

import json
from pathlib import Path

import numpy as np
import pytest

from wmrl.experiments import aggregates as ag

REFERENCE = json.loads((Path(__file__).parent / "data" / "rliable_reference.json").read_text())
X, Y = np.array(REFERENCE["x"]), np.array(REFERENCE["y"])


def test_point_estimates_equal_rliables():
    assert ag.iqm(X) == pytest.approx(REFERENCE["iqm"]["x"], abs=1e-12)
    assert ag.iqm(Y) == pytest.approx(REFERENCE["iqm"]["y"], abs=1e-12)
    assert ag.probability_of_improvement(Y, X) == pytest.approx(REFERENCE["poi_y_over_x"]["point"], abs=1e-12)
    np.testing.assert_allclose(ag.performance_profile(X, REFERENCE["taus"]), REFERENCE["profile_x"]["point"],
                               atol=1e-12)


def test_stratified_bootstrap_intervals_agree_with_rliables_within_resampling_noise():
    reps = REFERENCE["reps"]
    for arm, m in (("x", X), ("y", Y)):
        _, lo, hi = ag.stratified_bootstrap(ag.iqm, m, seed=1, reps=reps)
        np.testing.assert_allclose([lo, hi], REFERENCE["iqm"][f"{arm}_ci"], atol=0.004)
    _, lo, hi = ag.stratified_bootstrap(ag.probability_of_improvement, Y, X, seed=1, reps=reps)
    np.testing.assert_allclose([lo, hi], REFERENCE["poi_y_over_x"]["ci"], atol=0.006)
    _, lo, hi = ag.stratified_bootstrap(lambda s: ag.performance_profile(s, REFERENCE["taus"]), X, seed=1, reps=reps)
    np.testing.assert_allclose([lo, hi], REFERENCE["profile_x"]["ci"], atol=0.02)


def test_a_bootstrap_redraws_the_same_interval_from_its_seed_and_resamples_within_tasks():
    a = ag.stratified_bootstrap(ag.iqm, X, seed=3, reps=200)
    assert all(np.array_equal(u, v) for u, v in zip(a, ag.stratified_bootstrap(ag.iqm, X, seed=3, reps=200)))
    constant_tasks = np.tile(np.arange(7.0), (12, 1))  # every run scores task t as t: resampling runs changes nothing
    _, lo, hi = ag.stratified_bootstrap(lambda s: s.mean(axis=0), constant_tasks, seed=0, reps=50)
    np.testing.assert_array_equal(lo, np.arange(7.0))
    np.testing.assert_array_equal(hi, np.arange(7.0))


def test_closed_forms_and_bad_input():
    assert ag.iqm(np.arange(8.0)[:, None]) == pytest.approx(3.5)  # the middle four of 0..7
    assert ag.probability_of_improvement(np.ones((3, 2)), np.zeros((4, 2))) == 1.0
    assert ag.probability_of_improvement(np.ones((3, 2)), np.ones((4, 2))) == 0.5
    with pytest.raises(ValueError, match="same tasks"):
        ag.probability_of_improvement(np.ones((3, 2)), np.ones((3, 3)))
    with pytest.raises(ValueError, match="finite"):
        ag.iqm([[np.nan, 1.0]])
