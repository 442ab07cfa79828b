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


def test_the_per_wave_cost_is_what_ray_adds_beyond_its_start_up_and_extrapolates_to_longer_runs():
    from bench.ray_overhead import per_wave_overhead, ratio_for

    # rounds of 2 waves: Ray adds 10 s of start-up and 4, 6 or 8 s a wave
    assert per_wave_overhead([68.0, 72.0, 76.0], [50.0, 50.0, 50.0], [10.0, 10.0, 10.0], waves=2) == 6.0
    with pytest.raises(ValueError, match="as many Ray, local and start-up"):
        per_wave_overhead([1.0], [1.0], [], waves=2)
    # 8 runs, 2 at a time: 4 waves of 100 s locally; Ray adds 20 s once and 5 s a wave
    assert ratio_for(100.0, 8, 2, startup_s=20.0, per_wave_s=5.0) == pytest.approx((400 + 20 + 20) / 400)
    assert ratio_for(3600.0, 8, 2, 20.0, 5.0) < ratio_for(60.0, 8, 2, 20.0, 5.0)  # the fixed part fades
