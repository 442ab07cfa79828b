"""The untrained agent's habits: the documented starting point of every arm.

A base LLM asked to write a Kaggle baseline does not pick uniformly among its options: it usually
reads the right file and writes a valid submission, but now and then it guesses a column name,
uses a keyword argument the installed library removed, or reaches for a huge model. These are the
prior probabilities of each grammar option (unlisted options weigh 1 relative to the listed
weights of their slot, after normalisation of the listed ones as given). They are set by hand to
give a realistic first-turn failure rate (about two scripts in three fail somewhere) and are
*not* fitted to any result; :class:`wmrl.agent.policy.AgentPolicy` starts exactly at them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from wmrl.agent import grammar

__all__ = ["HABITS", "habit_choices", "prior_probabilities", "sample_items"]

HABITS: dict[str, dict[str, float]] = {
    "train_file": {"correct": 0.88, "wrong_name": 0.07, "kaggle_path": 0.05},
    "target": {"correct": 0.85, "wrong_column": 0.10, "read_after_drop": 0.05},
    "categorical": {"numeric_only": 0.35, "onehot": 0.3, "ordinal": 0.2, "raw": 0.15},
    "api": {"current": 0.80, "removed_kwarg": 0.15, "removed_method": 0.05},
    "capacity": {"small": 0.3, "medium": 0.35, "large": 0.25, "huge": 0.10},
    "data_use": {"clean": 0.55, "fit_on_all_rows": 0.15, "shuffled_target": 0.10, "subsample": 0.20},
    "submission": {"correct": 0.72, "wrong_columns": 0.12, "wrong_rows": 0.08, "no_write": 0.08},
}


def prior_probabilities() -> list[np.ndarray]:
    """One probability vector per grammar slot, in slot order (uniform where no habit is listed)."""
    out = []
    for slot in grammar.SLOTS:
        habits = HABITS.get(slot.name, {})
        unknown = set(habits) - set(slot.options)
        if unknown:
            raise ValueError(f"habits name options {sorted(unknown)} that slot {slot.name!r} does not have")
        w = np.array([habits.get(o, 1.0 / len(slot.options)) for o in slot.options], dtype=float)
        out.append(w / w.sum())
    return out


def habit_choices(task, rng: np.random.Generator) -> dict[str, str]:
    """One script's decisions drawn as the untrained agent draws them (habits, task's mask applied)."""
    out = {}
    for slot, p, mask in zip(grammar.SLOTS, prior_probabilities(), grammar.option_mask(task)):
        q = np.where(mask, p, 0.0)
        out[slot.name] = slot.options[rng.choice(len(q), p=q / q.sum())]
    return out


def sample_items(tasks: Sequence, n: int, seed: int = 0, choose: Callable | None = None) -> list[tuple[object, str]]:
    """``n`` rendered scripts over ``tasks`` (round robin), decisions drawn by ``choose(task, rng)``;
    by default the untrained agent's habits, so a fixed set has the outcomes training scores."""
    choose = choose or habit_choices
    rng = np.random.default_rng(seed)
    return [(t, grammar.render(t, choose(t, rng))) for t in (tasks[i % len(tasks)] for i in range(n))]
