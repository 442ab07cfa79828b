"""Notebook 15's design (notebooks/_redeclared.py): the measured compute claim, both tests, the stopping rule."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from _fake_runs import write_tables
from notebooks import _redeclared as design
from wmrl.experiments.claims import Claim
from wmrl.presets import notebook_params

RESULTS = Path(__file__).resolve().parent.parent / "results"


def _evals(by_step):
    return [(step, t, "tab", p) for step, p in by_step.items() for t in ("t1", "t2")]


def _curves(tmp_path, wmrl_final, wmrl_cost):
    """untrained 0.2; grpo 10 s a step: 0.3 at step 1, 0.45 at 2, 0.6 at 4; wmrl ``wmrl_cost`` s a step, 4 steps."""
    return pd.DataFrame([
        write_tables(tmp_path / "u", "untrained", 0, _evals({0: 0.2}), [(0, "generation", 0.0, 0.0)]),
        write_tables(tmp_path / "g", "grpo", 0, _evals({1: 0.3, 2: 0.45, 4: 0.6}), [(s, "execution", 10.0, 10.0) for s in range(4)]),
        write_tables(tmp_path / "w", "wmrl", 0, _evals({2: 0.4, 4: wmrl_final}), [(s, "world_model", wmrl_cost, 0.0) for s in range(4)]),
    ])


def test_matched_compute_reads_grpos_last_measurement_within_wmrls_compute_never_between_them(tmp_path):
    claim = design.CLAIMS[2]
    # wmrl spends 4 x 4 = 16 s: grpo's last evaluation within it is step 1 (10 s, 0.3), not a line to step 2 (20 s)
    runs = _curves(tmp_path / "a", 0.5, 4.0)
    assert claim.per_seed(runs).tolist() == pytest.approx([100 * (0.5 - 0.3)])
    assert design.reach_ratio(runs).tolist() == pytest.approx([40.0 / 16.0])  # grpo reaches 0.5 first at step 4
    # wmrl spends 2 s: before grpo's first step, the measurement is the untrained policy's (compute 0)
    runs = _curves(tmp_path / "b", 0.7, 0.5)
    assert claim.per_seed(runs).tolist() == pytest.approx([100 * (0.7 - 0.2)])
    assert np.isnan(design.reach_ratio(runs)).all()  # grpo's measured curve never reaches 0.7: undefined


def _frame(effects, seeds, rng, noise=0.5):
    rows = []
    for s in seeds:
        base = rng.normal(0, 5)
        rows.append({"arm": "b", "seed": s, "avg": base})
        rows += [{"arm": arm, "seed": s, "avg": base + d + noise * rng.normal()} for arm, d in effects.items()]
    return pd.DataFrame(rows)


def test_a_look_calls_a_claim_reproduced_fails_equivalent_or_inconclusive():
    rng = np.random.default_rng(3)
    claims = (Claim("up", "", "", "up", "b", scale=1), Claim("down", "", "", "down", "b", scale=1),
              Claim("null", "", "", "null", "b", scale=1), Claim("vague", "", "", "vague", "b", scale=1))
    runs = pd.concat([_frame({"up": 5.0, "down": -5.0, "null": 0.0}, range(12), rng),
                      _frame({"vague": 2.0}, range(12), rng, noise=6.0).query("arm == 'vague'")])
    t = design.test_look(runs, claims, alpha=0.05)
    assert t.verdict.to_dict() == {"up": "reproduced", "down": "fails", "null": "equivalent", "vague": "inconclusive"}
    v = claims[2].per_seed(runs)
    m, se = v.mean(), v.std(ddof=1) / np.sqrt(len(v))
    one_sided = max(stats.t.sf((m + 3) / se, len(v) - 1), stats.t.cdf((m - 3) / se, len(v) - 1))
    assert t.loc["null", "p_tost"] == pytest.approx(one_sided)


def test_a_resolved_claim_keeps_its_verdict_and_the_next_look_trains_only_the_open_claims_arms():
    rng = np.random.default_rng(5)
    claims = (Claim("big", "", "", "a", "b", scale=1), Claim("small", "", "", "c", "d", scale=1))
    design_ = design.looks(list(range(24)), [12, 24])
    runs = pd.concat([_frame({"a": 4.0}, range(24), rng), _frame({"c": 2.0}, range(24), rng, noise=8.0)
                      .replace({"arm": {"b": "d"}})])
    first = runs[runs.seed < 12]
    table, history, stopped = design.run_looks(first, claims, design_)
    assert not stopped and table.loc["big", "verdict"] == "reproduced" and table.loc["big", "resolved_at"] == 1
    # look 2 needs only c and d: a and b at seeds 12-23 missing does not hold it up, and big is not tested again
    second = pd.concat([first, runs[(runs.seed >= 12) & runs.arm.isin(["c", "d"])]])
    table, history, stopped = design.run_looks(second, claims, design_)
    assert stopped and set(history[history.claim == "big"].look) == {1} and set(history[history.claim == "small"].look) == {1, 2}
    assert table.loc["big", "resolved_at"] == 1


def test_the_family_needs_the_untrained_arm_for_the_compute_claim_and_projects_seeds_to_resolve():
    assert design.arms_due(design.CLAIMS) == list(design.ARMS)
    assert design.arms_due([design.CLAIMS[1]]) == ["grpo", "wmrl"]
    assert design.arms_due([design.CLAIMS[2]]) == ["untrained", "grpo", "wmrl"]
    v = np.array([1.0, 2.0, 3.0, 2.0])  # mean 2, sd 0.816: resolves by excluding 0 as soon as t * sd / sqrt(n) < 2
    n = design.seeds_to_resolve(v)
    half = lambda k: stats.t.ppf(0.975, k - 1) * v.std(ddof=1) / np.sqrt(k)
    assert half(n) < 2 <= half(n - 1)
    assert np.isnan(design.seeds_to_resolve([1.0]))


def test_the_declared_seeds_are_used_by_no_other_campaigns_runs():
    seeds = set(notebook_params("small")["REDECLARED_SEEDS"])
    assert seeds == set(range(18, 66)) and notebook_params("small")["REDECLARED_LOOKS"] == [12, 24, 36, 48]
    family = {"untrained", f"grpo~{design.GRID_TAG}", "wm", "wmrl"}
    for folder in (RESULTS / "train" / "small").glob("*/seed*"):
        if int(folder.name.removeprefix("seed")) in seeds:
            assert folder.parent.name in family, folder


def test_four_looks_get_the_same_levels_every_time():
    """From three looks on the boundaries are integrals scipy takes by quasi-Monte Carlo: seeded, so a redraw
    prints the levels it committed."""
    first = design.obf_levels([0.25, 0.5, 0.75, 1.0])
    assert np.array_equal(first, design.obf_levels([0.25, 0.5, 0.75, 1.0]))
    assert np.all(np.diff(first) > 0) and first[-1] < 0.05


def test_the_closing_sentences_name_an_equivalence_as_such():
    rng = np.random.default_rng(3)
    claims = (Claim("up", "goes up", "", "up", "b", scale=1), Claim("null", "stays", "", "null", "b", scale=1))
    table, _, _ = design.run_looks(_frame({"up": 5.0, "null": 0.0}, range(12), rng), claims,
                                   design.looks(list(range(12)), [12]))
    said = design.what_we_see(table)
    assert said[0].startswith("up (goes up) at look 1: reproduced") and "null (stays) at look 1: equivalent" in said[1]
    assert said[-1] == "Of 2 claims, 1 reproduced, 0 fail, 1 equivalent within ±3 points and 0 not resolved."



def test_the_printed_claims_carry_both_tests_the_verdict_the_resolving_look_and_a_family_where_there_are_several():
    rng = np.random.default_rng(3)
    claims = (Claim("up", "goes up", "", "up", "b", scale=1), Claim("vague", "", "", "vague", "b", scale=1))
    runs = pd.concat([_frame({"up": 5.0}, range(12), rng), _frame({"vague": 2.0}, range(12), rng, noise=6.0)
                      .query("arm == 'vague'")])
    table, _, _ = design.run_looks(runs, claims, design.looks(list(range(12)), [12]))
    shown = design.claims_shown(table)
    assert list(shown.columns[-4:]) == ["p (Holm)", "p TOST (Holm)", "verdict", "look"] and "family" not in shown
    assert shown.verdict.to_dict() == {"up": "reproduced", "vague": "inconclusive"}
    assert shown.loc["up", "look"] == 1 and np.isnan(shown.loc["vague", "look"])
    assert shown.loc["up", "p (Holm)"] == round(table.loc["up", "p_holm"], 4)
    assert "family" in design.claims_shown(table.assign(family="primary"))


@pytest.mark.slow
def test_a_variant_given_its_own_seeds_analyses_them_in_one_look(tmp_path, kernel):
    """A quick variant (``python -m wmrl.reproduce --campaign redeclared --quick``) passes SEEDS, not the preset's
    look sizes: notebook 15 redraws the committed look-1 runs of its first 3 seeds as one look of 3."""
    import shutil

    from _notebooks import run_notebook

    seeds = notebook_params("small")["REDECLARED_SEEDS"][:3]
    for arm in ("untrained", "grpo~evalgrid", "wm", "wmrl"):
        for seed in seeds:
            found = RESULTS / "train" / "small" / arm / f"seed{seed}"
            if not (found / "summary.json").is_file():
                pytest.skip(f"no committed run {found}")
            shutil.copytree(found, tmp_path / "results" / "train" / "small" / arm / f"seed{seed}",
                            ignore=shutil.ignore_patterns("checkpoint.pt", "memo.sqlite"))
    out = run_notebook("15_redeclared", tmp_path, kernel, MODE="redraw", PRESET="small", SEEDS=seeds)
    shown = "".join(o.get("text", "") for c in out.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert f"look 1: seeds {seeds[0]}-{seeds[-1]} (3) at two-sided level 0.0500" in shown
    assert "analysed look 1 of 1; the design has stopped" in shown
