"""Claims tables: paired estimates, detectable differences, Holm-corrected verdicts, sentences from numbers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from _fake_runs import fake_campaign
from wmrl.experiments import claims, paper, stats


def _runs(values: dict[str, list[float]], col: str = "avg") -> pd.DataFrame:
    return pd.DataFrame([{"arm": a, "seed": s, col: v} for a, vs in values.items() for s, v in enumerate(vs)])


RUNS = _runs({"grpo": [0.50, 0.55, 0.60, 0.52], "wmrl": [0.53, 0.57, 0.64, 0.55], "wm": [0.47, 0.56, 0.50, 0.49],
              "mix": [0.40, 0.70, 0.45, 0.66]})
CLAIMS = [claims.Claim("A", "wmrl beats grpo", "p", "wmrl", "grpo"),
          claims.Claim("B", "wm below grpo", "p", "wm", "grpo", expect="<"),
          claims.Claim("C", "mix beats grpo", "p", "mix", "grpo")]


def test_each_claim_row_is_the_paired_estimate_its_detectable_difference_and_p_value():
    t = claims.evaluate_claims(RUNS, CLAIMS)
    d = stats.paired_values(RUNS, "wmrl", "grpo", scale=100)
    m, lo, hi = stats.mean_ci(d)
    assert (t.loc["A", "mean"], t.loc["A", "lo"], t.loc["A", "hi"]) == pytest.approx((m, lo, hi))
    assert t.loc["A", "mdd"] == pytest.approx(stats.min_detectable_difference(d.std(ddof=1), 4))
    assert t.loc["A", "p"] == pytest.approx(stats.t_test_p(d))
    assert t.p_holm.to_numpy() == pytest.approx(multipletests(t.p.to_numpy(), method="holm")[1])


def test_holm_can_overturn_a_raw_verdict_and_the_sentence_says_so():
    t = claims.evaluate_claims(RUNS, CLAIMS)
    assert t.loc["A", "verdict"] == "reproduced" and t.loc["A", "p"] < 0.05
    assert (t.loc["A", "verdict_holm"] == "reproduced") == (t.loc["A", "p_holm"] < 0.05)
    raw_only = t[(t.verdict != t.verdict_holm)]
    for cid in raw_only.index:
        assert any(s.startswith(cid) and "not after Holm" in s for s in claims.what_we_see(t))


def test_sentences_report_direction_and_resolution_from_the_numbers():
    t = claims.evaluate_claims(RUNS, CLAIMS)
    text = claims.what_we_see(t)
    c = next(s for s in text if s.startswith("C "))
    assert "not resolved" in c and "the claim's way" in c and "includes 0" in c
    assert f"{t.loc['C', 'mdd']:.1f} points" in c
    assert text[-1].startswith("Of 3 claims, ") and f"{(t.verdict == 'reproduced').sum()} reproduced" in text[-1]
    flipped = claims.evaluate_claims(RUNS, [claims.Claim("D", "grpo beats mix", "p", "grpo", "mix")])
    assert flipped.loc["D", "mean"] < 0 and "points the other way" in claims.what_we_see(flipped)[0]


def test_a_single_seed_is_always_inconclusive():
    table = claims.evaluate_claims(_runs({"grpo": [0.1], "wmrl": [0.9]}), [claims.Claim("C1", "s", "p", "wmrl", "grpo")])
    assert table.loc["C1", "verdict"] == "inconclusive" and table.loc["C1", "verdict_holm"] == "inconclusive"
    assert "(n=1)" in claims.claims_display(table).loc["C1", "ours (95% CI)"]


def test_a_ratio_claim_is_judged_against_one_on_the_log_scale():
    runs = pd.DataFrame({"arm": ["grpo"] * 3 + ["wmrl"] * 3, "seed": [0, 1, 2] * 2,
                         "execution_charged_s": [30.0, 31.0, 29.0, 10.0, 10.5, 9.5]})
    claim = claims.Claim("R", "speedup", "3.1x", "grpo", "wmrl", col="execution_charged_s", op="ratio", digits=1)
    row = claims.claims_display(claims.evaluate_claims(runs, [claim])).loc["R"]
    assert row.verdict == "reproduced" and "grpo / wmrl = 3.0x [" in row["ours (95% CI)"]
    assert row["detectable (80%)"].startswith("x")


def test_the_compute_claim_is_matched_compute_and_defined_at_every_seed(tmp_path):
    """C3 at wmrl's total compute (16 steps x 2 s = 32 s), against grpo's curve there: between the untrained 0.30
    at 0 s and grpo's 0.50 at 80 s, 0.38; seed 1, where wmrl never reaches grpo's final score, counts too."""
    runs = fake_campaign(tmp_path)
    t = claims.evaluate_claims(runs, [c for c in claims.MAIN if c.id == "C3"])
    assert t.loc["C3", "seeds"] == 2 and not t.loc["C3", "note"]
    assert t.loc["C3", "mean"] == pytest.approx(((0.65 - 0.38) + (0.50 - 0.38)) / 2 * 100)


def test_the_claim_lists_quote_the_paper_from_the_paper_module():
    c3 = next(c for c in claims.MAIN if c.id == "C3")
    assert f"{paper.speedup('4B'):.1f}x" in c3.paper and isinstance(c3, claims.MatchedCompute)
    c23 = next(c for c in claims.ABLATION if c.id == "C23")
    assert c23.paper.startswith("15.7 vs 15.2") and "+2.4" in c23.paper  # 28.1 - 25.7 on 4B DSBench
    assert claims.VLA[3].paper == "41.2 vs 38.3 (+2.9)"
    assert np.all([c.a != c.b for c in claims.MAIN + claims.ABLATION + claims.ANCHOR_ONLY + claims.VLA])


def test_no_claim_with_both_arms_present_gives_an_empty_table_with_the_usual_columns():
    """A smoke run of two arms (notebook 07's untrained and wmrl) tests none of its claims: the table is empty,
    not an error, and keeps the columns the sentences and pages read."""
    runs = _runs({"grpo": [0.1, 0.2], "wmrl": [0.5, 0.7]})
    full = claims.evaluate_claims(runs, [claims.Claim("C1", "s", "p", "wmrl", "grpo")])
    empty = claims.evaluate_claims(runs, [])
    assert empty.empty and list(empty.columns) == list(full.columns) and empty.index.name == "claim"
