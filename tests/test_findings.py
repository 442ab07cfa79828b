"""Notebook sentences computed from results: the VLA's reading of its world model on the rollouts it trains, and
notebook 05's comparison of the two error profiles."""

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
    assert first.startswith("On the trained agent's 10 scripts of the held-out tasks (50% run to a valid submission), "
                            "the train_split profile predicts 60% valid (pessimistic: 20%)")
    assert first.endswith("a within-group Spearman of 0.50 (pessimistic: 0.30).")  # no tuning_split row: no more
    assert "no within-group Spearman" in second and "training tasks" in second
    assert second.endswith("Fitted on the tuning split instead of the training tasks, it predicts 45% valid, a mean "
                           "reward error of +0.030.")
