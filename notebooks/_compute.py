"""Notebook 04's helper: its closing sentences, computed from the compute tables and the paper's GPU-hours."""

from __future__ import annotations

import pandas as pd

from wmrl.experiments import costs, paper

__all__ = ["compute_findings"]


def compute_findings(runs: pd.DataFrame) -> list[str]:
    """Notebook 04's findings: where the charged seconds go, and what the paper's GPU-hours allow."""
    charged = costs.compute_table(runs, sorted(set(runs.arm)), "charged")
    out = []
    if {"grpo", "wmrl"} <= set(charged.index):
        g, w = charged.loc["grpo"], charged.loc["wmrl"]
        out.append(f"Execution is {100 * g.execution / g.total:.1f}% of GRPO's charged compute; WMRL spends "
                   f"{w.total / g.total:.2f} of GRPO's total ({100 * w.execution / g.execution:.0f}% of its execution "
                   f"and {w.world_model:.0f} s of world model), by construction of the anchor share, not a "
                   "finding about learning.")
    for model in ("4B", "9B"):
        c = costs.paper_gpu_hour_check(model)
        at_text = float(costs.amdahl_speedup(c["grpo"], c["wm"], paper.ANCHOR_SHARE_TEXT))
        out.append(f"The paper's {model} totals: GRPO {c['grpo']:.0f}, pure WM {c['wm']:.0f}, WMRL {c['wmrl']:.0f} "
                   f"GPU-hours. Executing {100 * paper.ANCHOR_SHARE_TEXT:.0f}% of groups on top of pure WM would give "
                   f"at most {at_text:.1f}x; the reported {c['speedup']:.1f}x needs an anchor share of at most "
                   f"{100 * c['implied_anchor_share_at_most']:.1f}%.")
    return out
