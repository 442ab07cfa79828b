"""The compute cost model and the paper's GPU-hour arithmetic."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from wmrl.experiments import costs


def test_the_cost_model_recovers_known_fixed_and_per_item_costs():
    rng = np.random.default_rng(0)
    truth = {"generation": (0.5, 0.01), "world_model": (0.0, 0.02), "execution": (1.0, 2.5)}
    rows = []
    for comp, (fixed, per) in truth.items():
        for step in range(50):
            n = int(rng.integers(5, 60))
            rows.append({"step": step, "component": comp, "count": n,
                         "charged_s": fixed + per * n + rng.normal(0, 1e-3)})
    rows += [{"step": s, "component": "update", "count": 1, "charged_s": 0.3} for s in range(50)]
    fit = costs.fit_cost_model(pd.DataFrame(rows))
    for comp, (fixed, per) in truth.items():
        assert fit.loc[comp, "per_item_s"] == pytest.approx(per, rel=1e-2, abs=1e-4)
        assert fit.loc[comp, "fixed_s"] == pytest.approx(fixed, abs=0.01)
    assert fit.loc["update", "per_item_s"] == pytest.approx(0.3) and fit.loc["update", "fixed_s"] == 0.0


def test_projected_speedup_tends_to_one_over_the_anchor_share_when_execution_dominates():
    model = pd.DataFrame({"fixed_s": [0.0] * 4, "per_item_s": [1e-6, 1e-6, 1.0, 1e-6]},
                         index=["generation", "world_model", "execution", "update"])
    t = costs.project_costs(model, ["grpo", "wmrl", "wm"], groups=8, group_size=8, turns=2.0, anchor_fraction=0.125)
    assert t.loc["grpo", "total"] / t.loc["wmrl", "total"] == pytest.approx(8.0, rel=1e-3)
    assert t.loc["wm", "execution"] == 0.0


def test_stream_items_follow_the_trainers_plan_for_every_arm():
    items = {a: costs.stream_items(a, 8, 8, 1.0, 0.1) for a in ("grpo", "wm", "wmrl", "anchor_only")}
    assert items["grpo"]["execution"] == 64 and items["grpo"]["world_model"] == 0
    assert items["wm"]["execution"] == 0 and items["wm"]["world_model"] == 64
    assert items["wmrl"]["execution"] == 8 and items["wmrl"]["world_model"] == 64  # at least one anchor group
    assert items["anchor_only"] == {"generation": 8, "world_model": 0, "execution": 8, "update": 8}


def test_the_papers_gpu_hours_imply_an_anchor_share_far_below_the_stated_one():
    c4, c9 = costs.paper_gpu_hour_check("4B"), costs.paper_gpu_hour_check("9B")
    assert c4["speedup"] == pytest.approx(883 / 286) and c9["speedup"] == pytest.approx(1174 / 349)
    assert c4["execution_at_least"] == 614 and c4["anchor_cost"] == 17
    assert c4["implied_anchor_share_at_most"] == pytest.approx(17 / 614)  # 2.8%, not 10-12.5%
    assert c4["expected_anchor_cost_10pct"] == pytest.approx(61.4) and c4["expected_anchor_cost_12_5pct"] == pytest.approx(76.75)
    assert c9["implied_anchor_share_at_most"] == pytest.approx(19 / 844)


def test_amdahls_law_on_the_papers_totals_passes_through_wmrl_at_the_implied_share():
    c4 = costs.paper_gpu_hour_check("4B")
    assert costs.amdahl_speedup(883, 269, 1.0) == pytest.approx(1.0)
    assert costs.amdahl_speedup(883, 269, 0.0) == pytest.approx(883 / 269)
    assert costs.amdahl_speedup(883, 269, c4["implied_anchor_share_at_most"]) == pytest.approx(883 / 286)
    assert costs.amdahl_speedup(883, 269, 0.10) < 883 / 286  # at the stated 10% the totals allow less than 3.1x


def test_totals_add_every_component_and_report_minutes_and_hours():
    runs = pd.DataFrame({"arm": ["grpo"], "seed": [0], "execution_charged_s": [120.0], "generation_charged_s": [60.0],
                         "execution_actual_s": [30.0]})
    t = costs.add_totals(runs).iloc[0]
    assert t.total_charged_s == 180 and t.total_charged_min == 3 and t.total_charged_h == pytest.approx(0.05)
    assert t.world_model_charged_s == 0 and t.total_actual_s == 30
