"""The reward ladder: from an execution outcome (real or predicted) to a scalar reward.

The raw leaderboard percentile is zero for every failure, so it cannot tell a script that almost
ran from one that does not parse. The ladder of the authors' code gives partial credit for
getting further down the pipeline, which is what an agent must learn first:

=========================================  ==========================
outcome                                    reward
=========================================  ==========================
malformed reply, syntax error               0.0
runtime error (incl. timeout, out of memory) 0.1
ran, but no valid submission               0.2
valid submission                           0.5 + 0.5 * percentile
=========================================  ==========================

A multi-turn trajectory is rewarded by its best turn (:func:`trajectory_reward`).
Status names and rungs are the shared vocabulary's (:mod:`wmrl.vocabulary`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from wmrl.vocabulary import RUNG, STATUSES

__all__ = ["STATUSES", "LadderRewards", "ladder_reward", "trajectory_reward"]


@dataclass(frozen=True)
class LadderRewards:
    """The ladder's constants; override to ablate the shaping."""

    malformed: float = 0.0
    runtime_error: float = 0.1
    no_valid_submission: float = 0.2
    valid_base: float = 0.5
    valid_scale: float = 0.5

    def rung(self, status: str) -> float | None:
        """The constant reward of a failing status, None for ``ok``."""
        if status not in RUNG:
            raise ValueError(f"unknown status {status!r}; expected one of {STATUSES}")
        return (self.malformed, self.runtime_error, self.no_valid_submission, None)[RUNG[status]]


DEFAULT_LADDER = LadderRewards()


def ladder_reward(status: str, percentile: float | None = None, ladder: LadderRewards = DEFAULT_LADDER) -> float:
    """Reward of one turn. ``percentile`` (in [0, 1]) is required, and used, only when status is ``ok``."""
    fixed = ladder.rung(status)
    if fixed is not None:
        return fixed
    if percentile is None or not math.isfinite(percentile) or not 0.0 <= percentile <= 1.0:
        raise ValueError(f"status 'ok' needs a percentile in [0, 1], got {percentile!r}")
    return ladder.valid_base + ladder.valid_scale * float(percentile)


def trajectory_reward(turn_rewards) -> float:
    """A trajectory's reward is its best turn's."""
    turn_rewards = list(turn_rewards)
    if not turn_rewards:
        raise ValueError("a trajectory needs at least one turn")
    return max(turn_rewards)
