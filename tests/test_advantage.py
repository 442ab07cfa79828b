"""GRPO group advantages (wmrl/advantage.py) against hand-computed values."""

import numpy as np
import pytest

from wmrl.advantage import group_advantages


def test_advantages_are_rewards_minus_the_group_mean():
    r = np.array([[0.0, 0.5, 1.0, 0.5], [0.2, 0.2, 0.2, 0.6]])
    expected = np.array([[-0.5, 0.0, 0.5, 0.0], [-0.1, -0.1, -0.1, 0.3]])
    np.testing.assert_allclose(group_advantages(r), expected)


def test_std_normalised_advantages_divide_by_the_population_std():
    r = np.array([[1.0, 3.0]])
    np.testing.assert_allclose(group_advantages(r, std_normalize=True, eps=0.0), [[-1.0, 1.0]])


def test_ungraded_trajectories_get_zero_and_do_not_shift_the_baseline():
    r = np.array([[1.0, np.nan, 3.0, 2.0]])
    np.testing.assert_allclose(group_advantages(r), [[-1.0, 0.0, 1.0, 0.0]])


def test_groups_with_fewer_than_two_grades_or_equal_rewards_carry_no_signal():
    r = np.array([[np.nan, 0.7, np.nan], [0.4, 0.4, 0.4], [np.nan] * 3])
    np.testing.assert_allclose(group_advantages(r, std_normalize=True), np.zeros((3, 3)), atol=1e-9)


@pytest.mark.parametrize("bad, match", [(np.zeros((0, 4)), "empty"), ([[1.0, np.inf]], "inf"), ([1.0, 2.0], "2-dimensional")])
def test_bad_rewards_are_rejected(bad, match):
    with pytest.raises(ValueError, match=match):
        group_advantages(bad)
