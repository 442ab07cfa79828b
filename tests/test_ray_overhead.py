"""The Ray-overhead benchmark's arithmetic (the benchmark itself runs campaigns: ``python -m bench.ray_overhead``)."""

from __future__ import annotations

import pytest

from bench.ray_overhead import main, paired_ratios


def test_the_ratio_pairs_each_ray_time_with_the_local_time_of_its_round():
    assert paired_ratios([12.0, 9.0, 10.5], [10.0, 10.0, 10.5]) == [1.2, 0.9, 1.0]


def test_unpaired_or_missing_times_and_no_repeats_are_refused():
    with pytest.raises(ValueError, match="as many Ray as local"):
        paired_ratios([1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="at least one"):
        paired_ratios([], [])
    with pytest.raises(SystemExit):
        main(["--repeats", "0"])
