"""Notebook 05's readout: the program-analysis world model's error profile summarised, and its sentences.

The measurement itself (the trained and the untrained agent's scripts, executed once and
predicted by every profile) and the tuning of the ``train_split`` and ``tuning_split`` profiles' constants are notebook 05's
own helper, ``notebooks/_wm_profile.py``.
"""

from __future__ import annotations

import pandas as pd

from wmrl.world_model.fidelity import fidelity_summary

__all__ = ["SUMMARY_COLUMNS", "fidelity_findings", "profile_findings", "summary_table"]

SUMMARY_COLUMNS = ["n", "real_ok_rate", "pred_ok_rate", "status_accuracy", "mae", "mean_error", "spearman",
                   "within_group_spearman", "n_groups"]


def summary_table(rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`fidelity_summary`'s numbers per (agent, tasks, profile) of per-item rows (notebook 05's
    ``profile_rows``: ``_wm_profile.item_rows`` of its measurement)."""
    keys = ["agent", "tasks", "profile"]
    return pd.DataFrame([{**dict(zip(keys, k)), **{c: fidelity_summary(d)[c] for c in SUMMARY_COLUMNS}}
                         for k, d in rows.groupby(keys, sort=False)]).set_index(keys)


def fidelity_findings(rows: pd.DataFrame, steps: pd.DataFrame) -> list[str]:
    """Notebook 05's findings: the world model on a fixed set of scripts, and on the anchors during training."""
    from scipy.stats import spearmanr

    pred_ok, real_ok = (rows.pred_status == "ok").mean(), (rows.real_status == "ok").mean()
    rho = spearmanr(rows.pred_reward, rows.real_reward).statistic
    tone = ("pessimistic, unlike the paper's DEFAULT-TO-PASS LLM world model" if pred_ok < real_ok else
            "optimistic, as the paper's DEFAULT-TO-PASS LLM world model is" if pred_ok > real_ok else
            "neither optimistic nor pessimistic about valid runs")
    late = steps[steps.step >= steps.step.max() / 2]
    per_seed = late.groupby("seed").fid_spearman.mean()
    last = steps[steps.step == steps.step.max()]
    return [
        (f"On {len(rows)} fixed scripts the program-analysis world model ranks scripts with Spearman {rho:.2f} and is "
         f"{tone}: it predicts a valid run for {100 * pred_ok:.0f}% of them against {100 * real_ok:.0f}% real."),
        (f"During WMRL training its within-anchor Spearman in the second half of the run is "
         f"{per_seed.mean():.2f} (per seed {', '.join(f'{v:.2f}' for v in per_seed)}), and at the last step "
         f"rho = {last.rho.mean():.2f} over {last.seed.nunique()} seeds."),
    ]


def profile_findings(summary: pd.DataFrame) -> list[str]:
    """Notebook 05's reading of the error profiles on each agent's scripts, from :func:`summary_table`: one
    sentence per (agent, tasks) with each profile's predicted valid share, mean reward error and within-group
    Spearman, for ``train_split``, ``pessimistic`` and, where it was measured, ``tuning_split`` (the same model
    with its constants fitted on the tuning split instead of the training tasks)."""
    out = []
    for (agent, tasks), d in summary.groupby(level=["agent", "tasks"], sort=False):
        profiles = list(d.index.get_level_values("profile"))
        if "(not tuned on)" in tasks or not {"train_split", "pessimistic"} <= set(profiles):
            continue
        train = d.xs("train_split", level="profile").iloc[0]
        shown = []
        for name in [p for p in ("train_split", "pessimistic", "tuning_split") if p in profiles]:
            r = d.xs(name, level="profile").iloc[0]
            rho = f"{r.within_group_spearman:.2f}" if r.n_groups else "none"
            shown.append(f"{r.pred_ok_rate:.0%}, {r.mean_error:+.3f}, {rho} under {name}")
        out.append(f"The {agent} agent's {int(train.n)} scripts of the {'held-out' if tasks == 'heldout' else 'training'} "
                   f"tasks ({train.real_ok_rate:.0%} run to a valid submission): predicted valid share, mean reward "
                   "error (> 0: optimistic) and within-group Spearman are " + "; ".join(shown) + ".")
    return out
