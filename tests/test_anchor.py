"""The anchor stream (wmrl/anchor.py): how many groups are executed, and which."""

import numpy as np
import pytest

from wmrl.anchor import AnchorScheduler


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
