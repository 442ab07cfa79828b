"""Notebook sentences computed from results: the VLA's reading of its world model on the rollouts it trains,
notebook 05's comparison of the error profiles, notebook 09's exploitation and audits, notebook 11's first fits."""

from __future__ import annotations

import numpy as np
import pandas as pd

from notebooks._vla import vla_hacking
from wmrl.experiments.wm_profile import profile_findings


def _history(arm: str, progress, success, auc) -> pd.DataFrame:
    return pd.DataFrame([{"arm": arm, "seed": seed, "step": step + 1, "progress": p + 0.01 * seed,
                          "train_success": s, "progress_auc": a}
                         for seed in (0, 1) for step, (p, s, a) in enumerate(zip(progress, success, auc))])


def test_progress_rising_more_than_the_references_while_success_rises_less_is_called_hacking():
    hist = pd.concat([_history("wm", np.linspace(0.6, 0.9, 8), np.linspace(0.4, 0.1, 8), [0.6] * 4 + [0.3] * 4),
                      _history("grpo", [0.6] * 8, np.linspace(0.4, 0.6, 8), [0.7] * 8)])
    first, auc = vla_hacking(hist)
    # quarters of 8 steps: steps 1-2 and 7-8; wm progress 0.6 -> 0.9 (+0.005 from the two seeds' offsets)
    assert "mean progress goes from 0.63 (first quarter of the steps) to 0.88 (last quarter)" in first
    assert "its success from 38% to 12%" in first and "success from 41% to 59%" in first
    assert first.endswith("the signature of reward hacking.") and "not the signature" not in first
    assert "ROC AUC 0.30 on wm's rollouts and 0.70 on grpo's" in auc


def test_success_keeping_pace_with_progress_is_not_called_hacking_and_missing_arms_say_nothing():
    hist = pd.concat([_history("wm", np.linspace(0.6, 0.9, 8), np.linspace(0.4, 0.8, 8), [0.7] * 8),
                      _history("grpo", [0.6] * 8, np.linspace(0.4, 0.6, 8), [0.7] * 8)])
    assert "not the signature of reward hacking" in vla_hacking(hist)[0]
    assert vla_hacking(hist[hist.arm == "wm"]) == []


def test_the_profile_sentences_compare_the_profiles_on_each_agents_scripts():
    def row(agent, tasks, profile, pred_ok, mean_error, within, groups):
        return {"agent": agent, "tasks": tasks, "profile": profile, "n": 10, "real_ok_rate": 0.5, "pred_ok_rate": pred_ok,
                "mean_error": mean_error, "within_group_spearman": within, "n_groups": groups}

    summary = pd.DataFrame([row("trained", "heldout", "pessimistic", 0.2, -0.1, 0.3, 2),
                            row("trained", "heldout", "train_split", 0.6, 0.05, 0.5, 2),
                            row("trained", "train (not tuned on)", "train_split", 0.6, 0.05, 0.5, 2),
                            row("untrained", "train", "pessimistic", 0.1, -0.2, float("nan"), 0),
                            row("untrained", "train", "train_split", 0.4, 0.0, float("nan"), 0),
                            row("untrained", "train", "tuning_split", 0.45, 0.03, float("nan"), 0)]).set_index(
        ["agent", "tasks", "profile"])
    first, second = profile_findings(summary)  # the "(not tuned on)" subset is not read twice
    assert first.startswith("The trained agent's 10 scripts of the held-out tasks (50% run to a valid submission): ")
    assert first.endswith("are 60%, +0.050, 0.50 under train_split; 20%, -0.100, 0.30 under pessimistic.")
    assert "training tasks" in second  # no group of 3 scripts with different rewards: no Spearman
    assert second.endswith("40%, +0.000, none under train_split; 10%, -0.200, none under pessimistic; "
                           "45%, +0.030, none under tuning_split.")


def test_the_first_fit_sentence_names_each_fit_once_and_a_shared_second_half_once():
    from notebooks._regime import NEVER, regime_findings

    rows = []
    for seed, noise in enumerate([0.0, 0.02, -0.02]):
        rows.append({"arm": "od", "seed": seed, "first_fit": NEVER, "mse": 1.0, "mse_late": 1.0})
        rows.append({"arm": "od", "seed": seed, "first_fit": 8, "mse": 0.5 + noise, "mse_late": 0.9 + noise})
        rows.append({"arm": "od", "seed": seed, "first_fit": 16, "mse": 1.0 + noise, "mse_late": 0.9 + noise})
    spread = pd.DataFrame(columns=["arm"])
    (shared,) = regime_findings(pd.DataFrame(rows), spread, from_step=3)
    assert shared.startswith("Refit on the anchor pairs of 3 runs with both streams")
    assert "0.50 [0.45, 0.55] after 8 pairs (lower), 1.00 [0.95, 1.05] after 16 pairs (not measurably different)" in shared
    assert shared.endswith("in the run's second half, 0.90 [0.85, 0.95] whatever the first fit.")
    for r in rows:
        r["mse_late"] += 0.2 * (r["first_fit"] == 16)
    (each,) = regime_findings(pd.DataFrame(rows), spread, from_step=3)
    assert each.endswith("second half, 0.90 [0.85, 0.95] after 8 pairs, 1.10 [1.05, 1.15] after 16 pairs.")


def test_the_stress_sentences_list_every_arm_once():
    from notebooks._exploit_stress import WINDOW, stress_findings

    runs = pd.DataFrame({"arm": ["wm~exploit"] * 3 + ["wmrl~exploit"] * 3, "region_early": [5.0, 6, 7, 5, 6, 7],
                         "region_late": [30.0, 31, 32, 8, 8, 8]})
    detection = {"wmrl~exploit": pd.Series([1.0, np.nan, 8.0]), "od~exploit": pd.Series([np.nan] * 3)}
    share, audit = stress_findings(runs, ["wm~exploit", "wmrl~exploit"], detection)
    assert share == (f"The share of sampled scripts in the exploited region, over the first {WINDOW} steps and the last "
                     f"{WINDOW}: wm~exploit 6% to 31% (25 [25, 25] points, 3 seeds); wmrl~exploit 6% to 8% "
                     "(2 [-0, 4] points, 3 seeds).")
    assert audit == ("The audit passed the largest eta^2 of the honest run in wmrl~exploit at step 1, 8 (2 of 3 seeds); "
                     "od~exploit at no step of 3 seeds.")
