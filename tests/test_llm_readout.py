"""Notebook 07's readout (``notebooks/_llm_agent.py``) on LLM run folders written by hand, checked
against independent computations (scipy's Student-t interval and rank correlation, plain sums)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from notebooks import _llm_agent as la
from wmrl.experiments import notebook as nb
from wmrl.experiments.collect import load_runs
from wmrl.experiments.costs import add_totals
from wmrl.experiments.results_page import results_page
from wmrl.ledger import COMPONENTS

TASKS = [("a", "tabular"), ("b", "tabular"), ("c", "text")]
# final held-out percentile per task of each arm (fractions, as eval.parquet holds them)
FINAL = {"untrained": [0.0, 0.0, 0.0], "sft": [0.2, 0.0, 0.1], "grpo": [0.3, 0.1, 0.1], "wm": [0.1, 0.1, 0.0],
         "wmrl": [0.5, 0.0, 0.4]}
PAIRS = pd.DataFrame({"step": [0, 0, 1, 1, 2, 2], "pred": [0.9, 0.9, 0.5, 0.9, 0.2, 0.9],
                      "calibrated": [0.9, 0.9, 0.4, 0.6, 0.2, 0.6], "true": [0.1, 0.0, 0.5, 0.2, 0.0, 1.0]})
WM = {"predictions": 20, "gated": 2, "requests": 24, "repairs": 4, "parse_failures": 2, "no_reply": 0, "defaulted": 3,
      "demoted": 1}
# seconds and items per step and component of a trained run's ledger
LEDGER = {"generation": (30.0, 8), "world_model": (12.0, 6), "execution": (4.0, 2), "update": (50.0, 8)}


def _write(root, arm: str, seed: int = 0) -> None:
    d = root / "train" / "llm-small" / arm / f"seed{seed}"
    d.mkdir(parents=True)
    trained = arm not in ("untrained", "sft")
    step = 3 if trained else 0
    evals = pd.DataFrame([{"step": step, "task": t, "category": c, "percentile": p, "reward": p, "ok_rate": float(p > 0)}
                          for (t, c), p in zip(TASKS, FINAL[arm])])
    evals.to_parquet(d / "eval.parquet")
    comps = {c: LEDGER[c] if trained and not (c == "world_model" and arm == "grpo")
             and not (c == "execution" and arm == "wm") else (0.0, 0) for c in COMPONENTS}
    pd.DataFrame([{"step": s, "component": c, "actual_s": v, "charged_s": v, "count": n}
                  for s in range(step) for c, (v, n) in comps.items()]).to_parquet(d / "ledger.parquet")
    if trained:
        pd.DataFrame({"step": range(step), "train_reward": [0.1, 0.2, 0.3], "real_ok_rate": [0.5, np.nan, 1.0],
                      "status_acc": [0.5, 0.75, 1.0], "kl": [0.0, 0.01, 0.02]}).to_parquet(d / "steps.parquet")
    (PAIRS if arm == "wmrl" else PAIRS.iloc[:0]).to_parquet(d / "pairs.parquet")
    per_cat = evals.groupby("category").percentile.mean()
    summary = {"arm": arm, "seed": seed, "heldout": {"avg": float(per_cat.mean()), "per_category": per_cat.to_dict()},
               "compute": {c: {"actual_s": v * step, "charged_s": v * step, "count": n * step}
                           for c, (v, n) in comps.items()},
               "llm": {"sft": None}, "provenance": {"git_commit": "abc", "date": "2026-12-01"}}
    if arm in ("wm", "wmrl"):
        summary["world_model"] = WM | {"parse_failure_rate": 0.1, "defaulted_rate": 0.15}
    (d / "summary.json").write_text(json.dumps(summary))


@pytest.fixture()
def llm_runs(tmp_path):
    for arm in FINAL:
        _write(tmp_path, arm)
    return tmp_path, add_totals(load_runs("llm-small", tmp_path))


def _design_runs(gains: dict[str, list[float]]) -> pd.DataFrame:
    """Runs (arm, seed, avg as a fraction) whose arms beat sft by ``gains[arm]`` points at seeds 6, 7, ..."""
    seeds = range(6, 6 + len(next(iter(gains.values()))))
    base = {s: 0.30 + 0.01 * (s % 3) for s in seeds}
    rows = [{"arm": "sft", "seed": s, "avg": base[s]} for s in seeds]
    rows += [{"arm": "untrained", "seed": s, "avg": 0.0} for s in seeds]
    rows += [{"arm": arm, "seed": s, "avg": base[s] + g / 100} for arm, gs in gains.items() for s, g in zip(seeds, gs)]
    return pd.DataFrame(rows)


def test_the_design_tests_each_family_by_seed_with_holm_within_it_at_the_looks_level():
    """Per claim the seed-paired t-test (scipy), Holm within its family alone (statsmodels), the look's level; the
    equivalence test and the stopping rule are notebook 15's (tests/test_redeclared.py)."""
    from statsmodels.stats.multitest import multipletests

    gains = {"grpo": [20, 25, 18, 30], "wm": [5, -8, 12, -3], "wmrl": [22, 27, 24, 19]}
    runs = _design_runs(gains)
    design = la.looks(list(range(6, 10)), [4])
    table, history, stopped = la.run_design(runs, design, ["untrained", "sft", "grpo", "wm", "wmrl"])
    assert stopped and set(table.index) == {"L0", "L1", "L1-wm", "L1-wmrl", "L2", "L3", "L4"}
    assert table.family.to_dict() == {"L1": "primary", "L1-wm": "primary", "L1-wmrl": "primary", "L0": "secondary",
                                      "L2": "secondary", "L3": "secondary", "L4": "secondary"}
    ps = {arm: sps.ttest_1samp(g, 0).pvalue for arm, g in gains.items()}
    primary = ["L1", "L1-wm", "L1-wmrl"]
    assert table.loc[primary, "p"].to_numpy() == pytest.approx([ps["grpo"], ps["wm"], ps["wmrl"]])
    assert table.loc[primary, "p_holm"].to_numpy() == pytest.approx(
        multipletests([ps["grpo"], ps["wm"], ps["wmrl"]], method="holm")[1])
    assert table.loc["L1", "verdict"] == table.loc["L1-wmrl", "verdict"] == "reproduced"
    assert table.loc["L1-wm", "verdict"] == "inconclusive"
    d = np.array(gains["wmrl"]) - np.array(gains["grpo"])
    assert table.loc["L2", "mean"] == pytest.approx(d.mean()) and table.loc["L2", "seeds"] == 4
    assert set(history.family) == {"primary", "secondary"} and (history.alpha_look == design[0].alpha).all()


def test_the_next_look_trains_only_the_arms_an_open_claim_compares_and_waits_for_them():
    gains = {"grpo": [20, 25, 18, 30, 21, 26, 22, 28], "wm": [5, -8, 12, -3, 4, -6, 9, -2],
             "wmrl": [22, 27, 24, 19, 23, 25, 21, 26]}
    runs = _design_runs(gains)
    arms = ["untrained", "sft", "grpo", "wm", "wmrl"]
    design = la.looks(list(range(6, 14)), [4, 8])
    assert la.design_arms(None, arms) == arms  # before the first look: every arm
    first = runs[runs.seed < 10]
    table, _, stopped = la.run_design(first, design, arms)
    assert not stopped and int(table.look.max()) == 1
    open_claims = set(table.index[table.verdict == "inconclusive"])
    due = la.design_arms(table, arms)
    assert set(due) == {a for c in la.LLM if c.id in open_claims for a in (c.a, c.b)}
    assert la.design_arms(table.assign(verdict="reproduced"), arms) == []
    # a look is analysed only once every arm due has all its seeds: without wm's, not the primary family's look 2
    assert "L1-wm" in open_claims
    _, history, stopped = la.run_design(pd.concat([first, runs[(runs.seed >= 10) & (runs.arm != "wm")]]), design, arms)
    assert not stopped and not ((history.look == 2) & (history.family == "primary")).any()
    _, history, _ = la.run_design(runs, design, arms)
    assert ((history.look == 2) & (history.family == "primary")).any()


def test_the_earlier_designs_are_recomputed_by_seed_from_their_commits(tmp_path):
    """Each earlier design's runs at its commit (git history), the claims evaluated over its own seeds: the values
    an independent reading of the same summaries gives."""
    import subprocess

    from wmrl.provenance import REPO

    design, commit, seeds = la.EARLIER[1]
    if subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", commit], capture_output=True, check=False).returncode:
        pytest.skip(f"commit {commit} is not in this clone's history")
    cfg = nb.check_params({"MODE": "redraw", "PRESET": "small", "SEEDS": None, "RESULTS_DIR": str(tmp_path),
                           "FIGURES_DIR": str(tmp_path / "figures")}, notebook="07_llm_agent")
    arms = ["untrained", "sft", "grpo", "wm", "wmrl"]
    found = la.earlier_designs(cfg, "llm-small", arms)
    assert list(found.design.unique()) == [d for d, _, _ in la.EARLIER]
    mine = found[found.design == design].set_index("claim")
    avg = {(arm, s): json.loads(subprocess.run(
        ["git", "-C", str(REPO), "show", f"{commit}:results/train/llm-small/{arm}/seed{s}/summary.json"],
        capture_output=True, check=True).stdout)["heldout"]["avg"] for arm in arms for s in seeds}
    d = np.array([avg[("wmrl", s)] - avg[("sft", s)] for s in seeds]) * 100
    lo, hi = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert mine.loc["L1-wmrl", "mean"] == pytest.approx(d.mean())
    assert (mine.loc["L1-wmrl", "lo"], mine.loc["L1-wmrl", "hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert (tmp_path / "llm" / "llm-small" / "earlier.parquet").is_file()  # kept for clones without the history
    assert la.earlier_designs(cfg, "llm-smoke", arms) is None


def test_anchor_fidelity_is_the_pairs_error_and_rank_correlation_and_the_mean_status_accuracy(llm_runs):
    _, runs = llm_runs
    f = la.anchor_fidelity(la.anchor_pairs(runs), la.step_table(runs))
    assert list(f.index) == ["wmrl"]  # the only arm that both predicts and executes
    row = f.loc["wmrl"]
    assert row["MAE raw"] == pytest.approx((PAIRS.pred - PAIRS.true).abs().mean())
    assert row["MAE calibrated"] == pytest.approx((PAIRS.calibrated - PAIRS.true).abs().mean())
    assert row["spearman raw"] == pytest.approx(sps.spearmanr(PAIRS.pred, PAIRS.true).statistic)
    # within a step: step 0's predictions are constant (not ranked); step 1 orders its pair wrongly, step 2 rightly
    assert row["steps ranked"] == 2 and row["spearman within step"] == pytest.approx((-1 + 1) / 2)
    assert row["status accuracy"] == pytest.approx(0.75) and row.pairs == 6


def test_the_world_models_rates_are_per_check_asked_and_the_compute_per_item_is_seconds_over_items(llm_runs):
    _, runs = llm_runs
    c = la.world_model_counts(runs).set_index("arm")
    assert c.loc["wmrl", "parse_failure_rate"] == pytest.approx(2 / (24 - 4))
    assert c.loc["wm", "defaulted_rate"] == pytest.approx(3 / 20)
    comp = la.compute_breakdown(runs, list(FINAL))
    assert list(comp.index) == ["grpo", "wm", "wmrl"]
    assert comp.loc["wmrl", "wm_s_per_solution"] == pytest.approx(12.0 / 6)
    assert comp.loc["wmrl", "execution_s_per_run"] == pytest.approx(4.0 / 2)
    assert np.isnan(comp.loc["grpo", "wm_s_per_solution"]) and np.isnan(comp.loc["wm", "execution_s_per_run"])
    assert comp.loc["grpo", "generation share"] == pytest.approx(30 / (30 + 4 + 50))


def test_the_readouts_sentences_carry_the_computed_numbers_and_the_results_page_has_an_llm_section(llm_runs):
    root, runs = llm_runs
    table, _, _ = la.run_design(runs, la.looks([0], [1]), list(FINAL))
    r = la.readout(runs, list(FINAL), table)
    text = " ".join(r.sentences)
    assert "4 replies could not be parsed" in text and "40 checks" in text  # two runs of (24 - 4) checks, 2 failures each
    assert "40 predictions, 4 of them settled by the deterministic gate" in text
    assert "grpo 75%" in text  # executed training trajectories that ran ok: mean of 0.5 and 1.0 over the logged steps
    assert "wmrl 67%" in text  # two of three held-out samples ran ok
    cfg = nb.check_params({"MODE": "redraw", "PRESET": "small", "SEEDS": None, "RESULTS_DIR": str(root),
                           "FIGURES_DIR": str(root / "figures")}, notebook="07_llm_agent")
    nb.save_claims(table, cfg, "the language-model agent", r.sentences)  # as the notebook declares
    page = results_page(root, "small")
    section = page.split("## The language-model agent", 1)[1]
    assert "| L1 | GRPO improves on the policy it starts from |" in section and "seeds 6-17 in looks after 4, 8 " \
        "and 12 seeds" in section
    assert "| L2 |" in section and "| L0 |" in section
    assert "In short.** No claims could be tested yet" in page  # the LLM claims are not the grammar agent's count
    nb.withdraw_claims(cfg)  # no look analysed: the section names the earlier designs, or is left out
    assert "language-model agent" not in results_page(root, "small")
    earlier = pd.DataFrame([{"design": "seeds 3-5: one", "family": "primary", "comparison": "grpo - sft",
                             "mean": 28.65, "lo": -21.5, "hi": 78.8, "verdict_holm": "inconclusive"}])
    (root / "llm" / "llm-small").mkdir(parents=True)
    earlier.to_parquet(root / "llm" / "llm-small" / "earlier.parquet")
    section = results_page(root, "small").split("## The language-model agent", 1)[1]
    assert "No look of this design is analysed yet." in section
    assert "Earlier designs (a warm start per seed), recomputed with the seed as the unit: seeds 3-5: grpo - sft " \
           "28.6 [-21.5, 78.8] (inconclusive)" in section


def test_a_preset_without_llm_runs_leaves_the_section_out(tmp_path):
    assert "language-model agent" not in results_page(tmp_path, "small")


def test_the_status_confusion_sums_each_arms_anchor_turns_by_predicted_and_real_status(tmp_path):
    for arm in FINAL:
        _write(tmp_path, arm)
    steps = tmp_path / "train" / "llm-small" / "wmrl" / "seed0" / "steps.parquet"
    frame = pd.read_parquet(steps).assign(said_ok_ran_ok=[3, 2, 0], said_ok_ran_timeout=[1, np.nan, np.nan],
                                          said_timeout_ran_timeout=[np.nan, 1, np.nan])
    frame.to_parquet(steps)
    runs = add_totals(load_runs("llm-small", tmp_path))
    c = la.status_confusion(runs)
    assert c.loc[("wmrl", "ok")].to_dict() == {"ok": 5, "timeout": 1}
    assert c.loc[("wmrl", "timeout")].to_dict() == {"ok": 0, "timeout": 1}
    assert set(c.index.unique("arm")) == {"wmrl"}  # grpo and wm have no anchors
    text = " ".join(la.readout(runs, list(FINAL)).sentences)
    assert "On wmrl's 7 anchor turns the world model named the real status 6 times; of the 6 it predicted ok, 5 ran ok " \
           "(the others: timeout 1)." in text
