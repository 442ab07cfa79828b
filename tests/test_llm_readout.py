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


def test_the_task_paired_interval_is_the_student_t_interval_of_the_per_task_differences(llm_runs):
    _, runs = llm_runs
    t = la.task_paired(la.final_evals(runs))
    d = 100 * (np.array(FINAL["wmrl"]) - np.array(FINAL["grpo"]))
    lo, hi = sps.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=sps.sem(d))
    assert t.loc["L2", "mean"] == pytest.approx(d.mean())
    assert (t.loc["L2", "lo"], t.loc["L2", "hi"]) == (pytest.approx(lo), pytest.approx(hi))
    assert (t.loc["L2", "first ahead"], t.loc["L2", "tied"], t.loc["L2", "second ahead"]) == (2, 0, 1)
    assert t.loc["L2", "pairs"] == 3 and t.loc["L2", "verdict over tasks"] == "inconclusive"
    assert set(t.index) == {"L0", "L1", "L1-wm", "L1-wmrl", "L2", "L3", "L4"}
    assert t.loc["L2", "p"] == pytest.approx(sps.ttest_1samp(d, 0).pvalue)
    # Holm within the declared family (L1, L1-wm, L1-wmrl) and, apart, within the rest (L0, L2-L4)
    from statsmodels.stats.multitest import multipletests

    for family in (["L1", "L1-wm", "L1-wmrl"], ["L0", "L2", "L3", "L4"]):
        expected = multipletests(t.loc[family, "p"].to_numpy(), method="holm")[1]
        assert t.loc[family, "p_holm"].to_numpy() == pytest.approx(expected)


def test_a_task_paired_verdict_needs_the_holm_adjusted_p_below_the_level():
    rows, wmrl = [], (2.0, -0.6, 1.5, -0.1, 1.0, 0.2)  # wmrl - sft: p = 0.034 alone, 0.068 after Holm (x2)
    for seed in (0, 1):
        for i, task in enumerate("abcdef"):
            rows += [{"arm": "sft", "seed": seed, "task": task, "percentile": 10.0 + i},
                     {"arm": "grpo", "seed": seed, "task": task, "percentile": 14.0 + i + 0.5 * (-1) ** i},
                     {"arm": "wm", "seed": seed, "task": task, "percentile": 10.6 + i + 1.5 * (-1) ** i},
                     {"arm": "wmrl", "seed": seed, "task": task, "percentile": 10.0 + i + wmrl[i]}]
    t = la.task_paired(pd.DataFrame(rows))
    assert t.loc["L1", "verdict over tasks"] == "reproduced" and t.loc["L1", "p_holm"] < 0.05
    assert t.loc["L1-wm", "verdict over tasks"] == "inconclusive"
    unadjusted = t.loc["L1-wmrl"]
    assert unadjusted.lo > 0 and unadjusted.p < 0.05  # its own interval excludes 0 ...
    assert unadjusted.p_holm >= 0.05 and unadjusted["verdict over tasks"] == "inconclusive"  # ... Holm's does not


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
    r = la.readout(runs, list(FINAL))
    text = " ".join(r.sentences)
    assert "4 replies could not be parsed" in text and "40 checks" in text  # two runs of (24 - 4) checks, 2 failures each
    assert "40 predictions, 4 of them settled by the deterministic gate" in text
    assert "grpo 75%" in text  # executed training trajectories that ran ok: mean of 0.5 and 1.0 over the logged steps
    assert "wmrl 67%" in text  # two of three held-out samples ran ok
    cfg = nb.check_params({"MODE": "redraw", "PRESET": "small", "SEEDS": None, "RESULTS_DIR": str(root),
                           "FIGURES_DIR": str(root / "figures")}, notebook="07_llm_agent")
    nb.save_claims(la.declaration(r), cfg, "the language-model agent", r.sentences)  # as the notebook declares
    page = results_page(root, "small")
    section = page.split("## The language-model agent", 1)[1]
    over = r.by_task.loc["L1", "over tasks (95% CI)"]
    assert "| L1 | GRPO improves on the policy it starts from |" in section and over in section
    assert "| L2 |" in section and "| L0 |" in section
    assert "In short.** No claims could be tested yet" in page  # the LLM claims are not the grammar agent's count


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
