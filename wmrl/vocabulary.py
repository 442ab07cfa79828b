"""The words every layer shares: execution statuses, the reward ladder's rungs, score buckets, model families.

The sandbox reports a status, the world model predicts one, the reward ladder prices it, the
agent's next turn reads it, and the fidelity report compares real and predicted ones. If each of
them spelled the vocabulary its own way they could drift apart silently (a status the ladder does
not know, a bucket edge the agent sees differently from the world model). So the words live here,
at the bottom of the import graph, where the sandbox, the world model and the agent can all read
them without importing each other.

- **Statuses.** A real execution ends in one of :data:`EXECUTION_STATUSES`; a model's reply that
  holds no code at all is ``malformed`` (only a world model or an LLM agent can produce it).
  The order is fixed: the agent's policy one-hot encodes the status in this order.
- **Rungs.** The reward ladder of the authors' code (:mod:`wmrl.reward`) has four rungs; statuses
  on one rung earn the same reward: 0 does not run at all, 1 crashes or runs out of a budget,
  2 runs but leaves no valid submission, 3 a valid submission (scored by its percentile).
- **Buckets.** The coarse score an agent sees after a turn, and the world model's quality guess:
  ``low / fair / mid / high``, standing for position scores 0.05 / 0.20 / 0.45 / 0.75 (the
  authors' map). A real percentile maps to the bucket whose score is nearest.
- **Model families.** What a solution fits, in the grammar's words: the agent's ``model`` slot
  offers these, its templates render them, and the program-analysis world model's quality prior
  and cost model are keyed by them.
"""

from __future__ import annotations

__all__ = [
    "EXECUTION_STATUSES",
    "MODEL_FAMILIES",
    "QUALITY_BUCKETS",
    "QUALITY_PERCENTILE",
    "RUNG",
    "STATUSES",
    "feedback_bucket",
]

#: How a real execution ends (the sandbox's statuses).
EXECUTION_STATUSES = ("ok", "syntax_error", "runtime_error", "timeout", "oom", "no_submission", "invalid_submission")
#: Every status an outcome can have: the sandbox's, plus ``malformed`` for a reply with no code.
STATUSES = EXECUTION_STATUSES + ("malformed",)

#: The ladder rung of each status (0 lowest): statuses on one rung earn the same reward.
RUNG = {"malformed": 0, "syntax_error": 0, "runtime_error": 1, "timeout": 1, "oom": 1,
        "no_submission": 2, "invalid_submission": 2, "ok": 3}

QUALITY_BUCKETS = ("low", "fair", "mid", "high")
#: Position score a bucket stands for (the authors' map); the ladder turns it into 0.5 + 0.5 * p.
QUALITY_PERCENTILE = {"low": 0.05, "fair": 0.20, "mid": 0.45, "high": 0.75}
# Midpoints between neighbouring bucket scores, so feedback_bucket(QUALITY_PERCENTILE[b]) == b.
_BUCKET_EDGES = ((0.125, "low"), (0.325, "fair"), (0.60, "mid"))

#: The model families a solution can fit, in the grammar's order.
MODEL_FAMILIES = ("dummy", "linear", "knn", "naive_bayes", "tree", "forest", "boosting", "svm")


def feedback_bucket(percentile: float | None) -> str | None:
    """The coarse score bucket an agent sees, from a real or predicted position score."""
    if percentile is None:
        return None
    for edge, name in _BUCKET_EDGES:
        if percentile < edge:
            return name
    return "high"
