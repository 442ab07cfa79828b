"""The reward ladder (wmrl/reward.py): one reward per rung, the best turn for a trajectory."""

import pytest

from wmrl.reward import LadderRewards, ladder_reward, trajectory_reward


@pytest.mark.parametrize(
    "status, pct, expected",
    [("malformed", None, 0.0), ("syntax_error", None, 0.0), ("runtime_error", None, 0.1), ("timeout", None, 0.1),
     ("oom", None, 0.1), ("no_submission", None, 0.2), ("invalid_submission", None, 0.2), ("ok", 0.0, 0.5), ("ok", 0.6, 0.8)],
)
def test_the_reward_ladder(status, pct, expected):
    assert ladder_reward(status, pct) == pytest.approx(expected)


def test_ladder_constants_are_configurable_and_bad_input_is_refused():
    assert ladder_reward("runtime_error", ladder=LadderRewards(runtime_error=0.05)) == 0.05
    with pytest.raises(ValueError, match="unknown status"):
        ladder_reward("crashed")
    with pytest.raises(ValueError, match="percentile"):
        ladder_reward("ok", 1.5)
    with pytest.raises(ValueError, match="percentile"):
        ladder_reward("ok")


def test_trajectory_reward_is_the_best_turn():
    assert trajectory_reward([0.1, 0.8, 0.2]) == 0.8
    with pytest.raises(ValueError):
        trajectory_reward([])
