"""The program-analysis world model's error profile, summarised: notebook 05's table and RESULTS.md's.

The measurement itself (the trained and the untrained agent's scripts, executed once and
predicted by both profiles) and the tuning of the ``paper`` profile's constants are notebook 05's
own helper, ``notebooks/_wm_profile.py``.
"""

from __future__ import annotations

import pandas as pd

from wmrl.world_model.fidelity import fidelity_summary

__all__ = ["SUMMARY_COLUMNS", "summary_table"]

SUMMARY_COLUMNS = ["n", "real_ok_rate", "pred_ok_rate", "status_accuracy", "mae", "mean_error", "spearman",
                   "within_group_spearman", "n_groups"]


def summary_table(rows: pd.DataFrame) -> pd.DataFrame:
    """:func:`fidelity_summary`'s numbers per (agent, tasks, profile) of per-item rows (notebook 05's
    ``profile_rows``: ``_wm_profile.item_rows`` of its measurement)."""
    keys = ["agent", "tasks", "profile"]
    return pd.DataFrame([{**dict(zip(keys, k)), **{c: fidelity_summary(d)[c] for c in SUMMARY_COLUMNS}}
                         for k, d in rows.groupby(keys, sort=False)]).set_index(keys)
