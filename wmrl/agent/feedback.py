"""What the agent's next turn sees of the previous one, from a real run or a world model alike.

The contract (docs/CONTRACTS.md) fixes the observation to ``(status, error_type, score_bucket)``;
a real :class:`~wmrl.sandbox.ExecutionResult` carries a percentile, a world-model
:class:`~wmrl.world_model.base.Prediction` a quality bucket, and both map to the same buckets
(:func:`wmrl.vocabulary.feedback_bucket`), so the policy cannot tell which one it got.
"""

from __future__ import annotations

from wmrl.vocabulary import feedback_bucket

__all__ = ["feedback_of"]


def feedback_of(outcome) -> tuple[str, str | None, str | None]:
    """``(status, error_type, score_bucket)`` of an ExecutionResult or a Prediction."""
    if hasattr(outcome, "quality_bucket"):
        bucket = outcome.quality_bucket if outcome.status == "ok" else None
    elif hasattr(outcome, "percentile"):
        bucket = feedback_bucket(outcome.percentile) if outcome.status == "ok" else None
    else:
        raise TypeError(f"expected an ExecutionResult or a Prediction, got {type(outcome).__name__}")
    return outcome.status, outcome.error_type, bucket
