"""The anchor stream (wmrl/anchor.py): how many groups are executed, and which."""

import numpy as np
import pytest

from wmrl.anchor import AnchorScheduler
from wmrl.beyond import ReliabilityMap


def test_anchor_count_is_ten_percent_rounded_with_at_least_one():
    s = AnchorScheduler(fraction=0.1, min_per_step=1)
    assert [s.n_anchors(n) for n in (1, 8, 15, 20, 64)] == [1, 1, 2, 2, 6]


def test_anchor_selection_is_seeded_sorted_and_records_the_realised_fraction():
    a, b = AnchorScheduler(0.25, seed=7), AnchorScheduler(0.25, seed=7)
    picks = [a.select(8) for _ in range(5)]
    assert all(np.array_equal(p, b.select(8)) for p in picks)
    assert all(np.all(np.diff(p) > 0) and len(p) == 2 for p in picks)
    assert a.realised_fraction == pytest.approx(0.25)
    c = AnchorScheduler(0.1)
    c.select(8)
    assert c.realised_fraction == pytest.approx(1 / 8)  # 12.5%, not 10%


def test_anchor_scheduler_refuses_nonsense():
    with pytest.raises(ValueError):
        AnchorScheduler(fraction=1.5)
    with pytest.raises(ValueError):
        AnchorScheduler().select(0)


# The paper's random rule's draws, 8 groups a step: the scheduler's stream that active selection shares must
# leave them as they are, or the random arms' committed runs would not retrain.
GOLDEN_RANDOM = {
    (0.1, 0): [[6], [5], [4], [2], [2], [0], [0], [0]],
    (0.25, 3): [[0, 5], [1, 7], [4, 6], [0, 2], [3, 4], [1, 5], [0, 7], [2, 7]],
    (0.5, 11): [[0, 3, 5, 6], [0, 1, 2, 3], [0, 2, 5, 7], [0, 1, 3, 7], [0, 2, 4, 6], [2, 5, 6, 7], [0, 1, 2, 4],
                [1, 4, 5, 7]],
}


@pytest.mark.parametrize("fraction, seed", list(GOLDEN_RANDOM))
def test_random_selection_draws_its_fixed_groups(fraction, seed):
    s = AnchorScheduler(fraction, 1, seed=seed)
    assert [s.select(8).tolist() for _ in range(8)] == GOLDEN_RANDOM[(fraction, seed)]


@pytest.mark.parametrize("fraction", [0.0, 0.05, 0.1, 0.125, 0.25, 0.5, 0.75, 1.0])
@pytest.mark.parametrize("n_groups", [1, 3, 8, 20])
def test_active_selection_executes_exactly_as_many_groups_as_random_selection(fraction, n_groups):
    random, active = AnchorScheduler(fraction, seed=1), AnchorScheduler(fraction, seed=1)
    priority = np.random.default_rng(0).uniform(size=n_groups)
    assert len(active.select_by(priority)) == len(random.select(n_groups)) == random.n_anchors(n_groups)
    assert active.realised_fraction == random.realised_fraction


def test_active_selection_picks_the_groups_of_highest_priority():
    s = AnchorScheduler(0.25, seed=0)  # 2 of 8
    assert s.select_by([0.1, 0.9, 0.3, np.nan, 0.2, 0.8, 0.0, 0.5]).tolist() == [1, 5]
    assert 3 in s.select_by([0.0, 0.0, 0.0, 0.7, 0.0, 0.0, 0.0, 0.0])  # one clear first, a tie for second


def test_ties_and_missing_priorities_are_broken_uniformly_at_random():
    s = AnchorScheduler(0.25, seed=0)
    counts = np.zeros(8)
    for _ in range(4000):
        counts[s.select_by(np.full(8, np.nan))] += 1
    np.testing.assert_allclose(counts / 4000, 2 / 8, atol=0.03)  # every group alike: the random rule again
    top = np.zeros(8)
    for _ in range(2000):
        top[s.select_by([0.1, 0.5, 0.5, 0.5, 0.1, 0.1, 0.1, 0.1])] += 1
    assert top[[0, 4, 5, 6, 7]].sum() == 0  # only the three tied leaders are ever chosen ...
    np.testing.assert_allclose(top[1:4] / 2000, 2 / 3, atol=0.04)  # ... each two times in three


def test_active_selection_is_seeded_and_resumes_where_it_left_off():
    a, b = AnchorScheduler(0.25, seed=4), AnchorScheduler(0.25, seed=4)
    ties = np.zeros(8)
    first = [a.select_by(ties).tolist() for _ in range(3)]
    assert first == [b.select_by(ties).tolist() for _ in range(3)]
    c = AnchorScheduler(0.25, seed=99)
    c.load_state_dict(a.state_dict())
    assert [a.select_by(ties).tolist() for _ in range(3)] == [c.select_by(ties).tolist() for _ in range(3)]


def test_the_reliability_map_is_the_shrunk_local_mean_of_the_squared_residuals():
    m = ReliabilityMap(bandwidth=0.05, prior_pairs=4.0)
    assert np.isnan(m.expected([0.5])).all()  # nothing seen: no information
    pred = np.array([0.1, 0.1, 0.12, 0.875, 0.875, 0.5])
    res2 = np.array([0.01, 0.03, 0.02, 0.2, 0.4, 0.0])
    m.observe(pred, res2)
    mean = res2.mean()
    expected = [
        (0.01 + 0.03 + 0.02 + 4 * mean) / (3 + 4),  # 0.1: the three pairs within 0.05
        (0.2 + 0.4 + 4 * mean) / (2 + 4),  # 0.875
        mean,  # 0.3: no pair near, the overall mean
    ]
    np.testing.assert_allclose(m.expected([0.1, 0.875, 0.3]), expected)
    assert np.isnan(m.expected([np.nan]))[0]
    groups = np.array([[0.1, 0.875], [0.3, np.nan]])
    np.testing.assert_allclose(m.group_priority(groups), [(expected[0] + expected[1]) / 2, mean])
    twin = ReliabilityMap()
    twin.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(twin.expected([0.1, 0.875]), m.expected([0.1, 0.875]))


def test_the_reliability_map_refuses_residuals_it_cannot_use():
    m = ReliabilityMap()
    with pytest.raises(ValueError, match="non-negative"):
        m.observe([0.1, 0.2], [0.1])
    with pytest.raises(ValueError, match="non-negative"):
        m.observe([0.1], [-1.0])
    with pytest.raises(ValueError, match="one value per group"):
        AnchorScheduler().select_by([])


def test_the_schedulers_defaults_are_the_method_configurations():
    from wmrl.config import MethodConfig

    method, s = MethodConfig(), AnchorScheduler()
    assert (s.fraction, s.min_per_step) == (method.anchor_fraction, method.anchor_min)
