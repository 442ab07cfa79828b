"""What every world model shares: the prediction, the protocol, the gate and the aggregation.

A world model stands in for a real execution (Sec. 3.2 of the paper). Whatever reads the code -
an LLM answering eight check prompts or a program analysis - ends in the same place: a predicted
execution status, and the reward ladder of :mod:`wmrl.reward` applied to it (statuses, quality
buckets and their scores are :mod:`wmrl.vocabulary`'s). Keeping that last
step here means the two world models cannot drift apart in how a verdict becomes a reward.

Execution order. A real script stops at its first exception, so when several checks fail the
prediction reports the one a real run would hit first:

1. a crash (``imports_names``, ``data_refs``, ``api_calls``, ``shape_dtype``, ``other_runtime``):
   the failing check with the smallest ``error_line`` wins; without lines, this list's order wins;
2. else ``compute_budget`` -> ``timeout``;
3. else ``submission`` -> ``no_submission`` or ``invalid_submission`` (checked after the run ends);
4. else ``ok``, with the ``quality`` check's bucket mapped to a position score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from wmrl.reward import ladder_reward
from wmrl.vocabulary import QUALITY_PERCENTILE

__all__ = [
    "CHECKS",
    "CRASH_CHECKS",
    "Prediction",
    "WorldModel",
    "aggregate",
    "feedback_text",
    "gate",
]

#: The eight decomposed checks, in the order the prompts ask them.
CHECKS = (
    "imports_names",
    "api_calls",
    "data_refs",
    "shape_dtype",
    "compute_budget",
    "other_runtime",
    "submission",
    "quality",
)
#: Checks whose failure is an exception raised while the script runs, in execution order.
CRASH_CHECKS = ("imports_names", "data_refs", "api_calls", "shape_dtype", "other_runtime")


@dataclass(frozen=True)
class Prediction:
    """A world model's guess at one execution: the same fields the agent's feedback reads."""

    status: str
    error_type: str | None
    error_line: int | None
    quality_bucket: str | None
    score: float
    verdicts: list[dict] = field(default_factory=list)
    feedback_text: str = ""


@runtime_checkable
class WorldModel(Protocol):
    """Anything that predicts execution outcomes (see docs/CONTRACTS.md)."""

    def predict(self, task, code: str) -> Prediction: ...

    def predict_many(self, items: Sequence[tuple[object, str]]) -> list[Prediction]: ...


def _failed(status: str, error_type: str | None, error_line: int | None, detail: str) -> Prediction:
    return Prediction(status, error_type, error_line, None, ladder_reward(status), [],
                      feedback_text(status, error_type, error_line, None, detail))


def gate(code: str) -> Prediction | None:
    """Score code that cannot run at all, before any model is asked (None: let the model judge).

    Empty code and code that does not compile get the ladder's bottom rung deterministically; an
    LLM asked about them would only add noise, and calls cost time.
    """
    if not isinstance(code, str) or not code.strip():
        return _failed("malformed", None, None, "no code to run")
    try:
        compile(code, "<solution>", "exec")
    except SyntaxError as exc:  # IndentationError and TabError are SyntaxErrors too
        return _failed("syntax_error", type(exc).__name__, exc.lineno, str(exc.msg))
    except ValueError as exc:  # e.g. a NUL byte in the source
        return _failed("syntax_error", "SyntaxError", None, str(exc))
    return None


def _line_key(verdict: dict, order: Sequence[str]) -> tuple[float, int]:
    line = verdict.get("error_line")
    return (line if isinstance(line, int) else float("inf"), order.index(verdict["check"]))


def aggregate(verdicts: Sequence[dict]) -> Prediction:
    """Turn per-check verdicts (dicts with ``check``, ``verdict`` ...) into one prediction.

    A missing check counts as a pass (DEFAULT TO PASS); a missing or unknown quality bucket
    counts as ``low`` so that a model which says nothing about quality earns no bonus.
    """
    by_check = {v["check"]: v for v in verdicts}
    failed = [v for v in verdicts if v.get("verdict") == "fail" and v["check"] != "quality"]
    crashes = sorted((v for v in failed if v["check"] in CRASH_CHECKS), key=lambda v: _line_key(v, CRASH_CHECKS))
    budget = [v for v in failed if v["check"] == "compute_budget"]
    submission = [v for v in failed if v["check"] == "submission"]
    bucket = None
    if crashes:
        first, status = crashes[0], "runtime_error"
        error_type = first.get("error_type") or "RuntimeError"
    elif budget:
        first, status, error_type = budget[0], "timeout", "TimeoutError"
    elif submission:
        first = submission[0]
        error_type = first.get("error_type") or "InvalidSubmission"
        status = "no_submission" if error_type.replace("_", "").lower() == "nosubmission" else "invalid_submission"
    else:
        first, status, error_type = None, "ok", None
        bucket = by_check.get("quality", {}).get("quality_bucket")
        bucket = bucket if bucket in QUALITY_PERCENTILE else "low"
    error_line = first.get("error_line") if first else None
    score = ladder_reward(status, QUALITY_PERCENTILE[bucket] if bucket else None)
    detail = (first.get("env_feedback") or first.get("reason") or "") if first else ""
    return Prediction(status, error_type, error_line, bucket, score, list(verdicts),
                      feedback_text(status, error_type, error_line, bucket, detail))


def feedback_text(status: str, error_type: str | None, error_line: int | None, bucket: str | None,
                  detail: str = "", max_chars: int = 400) -> str:
    """The observation the agent's next turn reads: short, the same shape for real and predicted runs."""
    head = f"status: {status}"
    if error_type:
        head += f" ({error_type}" + (f" at line {error_line}" if error_line else "") + ")"
    if bucket:
        head += f"; score bucket: {bucket}"
    detail = " ".join(str(detail).split())
    return head if not detail else f"{head}\n{detail[:max_chars]}"
