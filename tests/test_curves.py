"""Learning curves against steps and charged compute, and the compute needed to reach a score (C3)."""

from __future__ import annotations

import numpy as np
import pytest

from _fake_runs import fake_campaign
from wmrl.experiments import curves


def test_reach_interpolates_like_numpy_on_a_rising_curve():
    xs, ys = np.array([0.0, 10.0, 25.0, 40.0]), np.array([0.2, 0.4, 0.45, 0.9])
    for target in (0.2, 0.3, 0.44, 0.8):
        assert curves.reach(xs, ys, target) == pytest.approx(np.interp(target, ys, xs))
    assert np.isnan(curves.reach(xs, ys, 0.95))


def test_reach_takes_the_first_crossing_of_a_noisy_curve():
    assert curves.reach([0, 10, 20, 30], [0.1, 0.6, 0.3, 0.9], 0.5) == pytest.approx(8.0)


def test_a_curve_point_carries_the_compute_spent_before_it_and_starts_from_the_untrained_policy(tmp_path):
    c = curves.learning_curves(fake_campaign(tmp_path))
    g = c[(c.arm == "grpo") & (c.seed == 0)].set_index("step")
    assert g.avg.to_dict() == pytest.approx({0: 30.0, 8: 50.0, 16: 60.0})
    assert g.compute_s.to_dict() == pytest.approx({0: 0.0, 8: 80.0, 16: 160.0})  # 10 s a step, steps 0..s-1
    assert "untrained" not in set(c.arm)


def test_the_speedup_is_what_each_arm_spends_to_reach_grpos_final_score(tmp_path):
    t = curves.compute_to_reach(curves.learning_curves(fake_campaign(tmp_path)), "wmrl", "grpo")
    # seed 0: grpo reaches 60 at 160 s; wmrl passes 55 at 16 s and 65 at 32 s, so 60 at 24 s
    assert t.loc[0, "reach_grpo_s"] == pytest.approx(160.0) and t.loc[0, "reach_wmrl_s"] == pytest.approx(24.0)
    assert t.loc[0, "speedup"] == pytest.approx(160 / 24)
    assert np.isnan(t.loc[1, "speedup"]) and t.loc[1, "final_wmrl_s"] == pytest.approx(32.0)


def test_summarised_curves_give_a_students_t_band_over_seeds(tmp_path):
    s = curves.summarise_curves(curves.learning_curves(fake_campaign(tmp_path)))
    row = s[(s.arm == "wmrl") & (s.step == 8)].iloc[0]
    assert row["mean"] == pytest.approx(50.0) and row.seeds == 2 and row.lo < min(45, 55) and row.hi > max(45, 55)
