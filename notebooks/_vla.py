"""Notebook 06's helper: its reading of the world model on the rollouts of the arm trained on it."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["vla_hacking"]


def _quarters(d: pd.DataFrame, col: str) -> tuple[float, float]:
    """Mean of ``col`` over the first and the last quarter of the training steps (all seeds)."""
    q = max(1, int(np.ceil(d.step.max() / 4)))
    return float(d[d.step <= q][col].mean()), float(d[d.step > d.step.max() - q][col].mean())


def vla_hacking(hist: pd.DataFrame, arm: str = "wm", reference: str = "grpo") -> list[str]:
    """Notebook 06's reading of the world model on ``arm``'s own rollouts (``history_table``) against
    ``reference``'s (trained on success, not on progress): does progress rise more, while success rises
    less (the signature of reward hacking), and how well does progress rank success in each?"""
    if arm not in set(hist.arm) or reference not in set(hist.arm):
        return []
    (p0, p1), (s0, s1) = (_quarters(hist[hist.arm == arm], c) for c in ("progress", "train_success"))
    (q0, q1), (t0, t1) = (_quarters(hist[hist.arm == reference], c) for c in ("progress", "train_success"))
    if p1 - p0 > q1 - q0 and s1 - s0 < t1 - t0:
        verdict = (f"{arm}'s progress rises more than {reference}'s while its success rises less, the signature of "
                   "reward hacking")
    else:
        verdict = f"not the signature of reward hacking (progress rising more than {reference}'s while success rises less)"
    out = [(f"On its own training rollouts, the {arm} arm's mean progress goes from {p0:.2f} (first quarter of the "
            f"steps) to {p1:.2f} (last quarter) and its success from {100 * s0:.0f}% to {100 * s1:.0f}%; on "
            f"{reference}'s, progress goes from {q0:.2f} to {q1:.2f} and success from {100 * t0:.0f}% to "
            f"{100 * t1:.0f}% (means over {hist.seed.nunique()} seeds, no interval): {verdict}.")]
    late = hist[hist.step > hist.step.max() / 2].groupby("arm").progress_auc.mean()
    if np.isfinite(late.get(arm, np.nan)) and np.isfinite(late.get(reference, np.nan)):
        out.append(f"In the second half of training, progress ranks a success above a failure with ROC AUC "
                   f"{late[arm]:.2f} on {arm}'s rollouts and {late[reference]:.2f} on {reference}'s (0.5 is chance).")
    return out
