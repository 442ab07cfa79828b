"""Grading a submission: its raw score on the hidden answers, then the task's normalised score.

The raw score comes from the built-in metric of the task (our pool: :func:`score_submission`,
which validates the submission first) or, for an imported competition, from the competition's
own code, run in a limited child process (:mod:`wmrl.tasks.competition_code`).

The normalised score is what the reward ladder reads, ``Grade.percentile``; ``Grade.score_kind``
says which it is:

- ``percentile``, MLE-Dojo's position score: sort a board best first; the submission's position
  is the first 1-based index whose entry it is at least as good as (ties favour the submission),
  or ``total + 1`` when it beats nobody; the score is ``(total - position + 1) / total``. So
  beating the whole board gives 1, beating nobody gives 0. The percentile is the mean over the
  task's boards (our pool and MLE-Dojo: public and private; MLE-bench: its one
  ``leaderboard.csv``);
- ``rpg``, DSBench's relative performance gap (``show_result.py``), for DSBench tasks, which have
  no leaderboard: ``max(0, (s - b) / (g - b))`` with ``g`` the answers' own score and ``b`` the
  baseline's; DSBench does not cap it, wmrl clips it at 1 (only float noise exceeds the answers'
  own score). DSBench scores rows by position, so a submission whose ids are not the answers'
  ids in the answers' order is invalid here rather than misgraded.

:func:`grade` never raises on a bad submission: a missing file is ``no_submission``, anything
that cannot be scored is ``invalid_submission``, both with percentile 0 and a reason, because the
reward ladder and the agent's feedback need an outcome for every script. It raises
:class:`GradingError` when the grader itself fails: a wrong grade is never returned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from wmrl.tasks import InvalidSubmissionError, Task, get_metric, validate_submission
from wmrl.tasks.competition_code import run_competition_code
from wmrl.tasks.metrics import canonical_labels

__all__ = ["Grade", "grade", "normalised_score", "position_score", "relative_performance_gap", "score_submission"]


@dataclass(frozen=True)
class Grade:
    status: str  # "ok" | "no_submission" | "invalid_submission"
    raw_score: float | None
    percentile: float  # the normalised score in [0, 1]; see score_kind
    reason: str = ""
    score_kind: str = "percentile"  # "percentile" (leaderboard position) | "rpg" (DSBench's relative gap)


def position_score(score: float, board_scores, higher_is_better: bool) -> float:
    """MLE-Dojo's position score of ``score`` on a board, in [0, 1]."""
    board = np.asarray(board_scores, dtype=float)
    if board.ndim != 1 or board.size == 0:
        raise ValueError(f"board_scores must be a non-empty 1-d sequence, got shape {board.shape}")
    if not np.isfinite(score):
        return 0.0
    best_first = np.sort(board)[::-1] if higher_is_better else np.sort(board)
    at_least_as_good = best_first <= score if higher_is_better else best_first >= score
    total = board.size
    position = int(np.argmax(at_least_as_good)) + 1 if at_least_as_good.any() else total + 1
    return (total - position + 1) / total


def relative_performance_gap(score: float, gt: float, baseline: float) -> float:
    """DSBench's per-task score ``max(0, (score - baseline) / (gt - baseline))`` (uncapped, as DSBench)."""
    if gt == baseline:
        raise ValueError(f"the relative performance gap needs gt != baseline, got {gt}")
    return max(0.0, (score - baseline) / (gt - baseline)) if np.isfinite(score) else 0.0


def _board(path: Path) -> np.ndarray:
    return pd.to_numeric(pd.read_csv(path)["score"], errors="coerce").dropna().to_numpy(dtype=float)


def normalised_score(task: Task, raw: float) -> float:
    """The task's normalised score of a raw score: the mean position score on its boards, or the clipped RPG."""
    s = task.scoring
    if s.score_kind == "rpg":
        return min(1.0, relative_performance_gap(raw, s.gt, s.baseline))
    return float(np.mean([position_score(raw, _board(b), task.higher_is_better) for b in task.board_paths]))


def score_submission(task: Task, submission: pd.DataFrame) -> float:
    """The built-in metric of a submission frame on the hidden answers (raises InvalidSubmissionError)."""
    answers = pd.read_csv(task.answers_path)
    metric = get_metric(task.metric)
    pred = validate_submission(submission, answers, task.id_column, task.target_column, metric, task.classes)
    y = answers[task.target_column]
    y_true = canonical_labels(y) if task.task_type == "classification" else y.to_numpy(dtype=float)
    positive = str(task.classes[-1]) if metric.kind == "probability" else None
    return metric.score(y_true, pred, positive)


def _check_rows_in_order(task: Task, submission: pd.DataFrame) -> None:
    """DSBench's scripts compare rows by position: demand the answers' ids, in the answers' order."""
    answers = pd.read_csv(task.answers_path)
    if len(submission) != len(answers):
        raise InvalidSubmissionError(f"expected {len(answers)} rows, got {len(submission)}")
    if task.id_column in answers.columns:
        if task.id_column not in submission.columns:
            raise InvalidSubmissionError(f"missing id column {task.id_column!r}; expected columns "
                                         f"{[task.id_column, *task.targets]}")
        same = canonical_labels(submission[task.id_column]) == canonical_labels(answers[task.id_column])
        if not same.all():
            raise InvalidSubmissionError(f"rows must follow test.csv's order of {task.id_column!r} (DSBench scores "
                                         f"rows by position); first mismatch at row {int(np.argmin(same))}")


def _read_submission(path: Path) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the submission's fault, never the grader's
        raise InvalidSubmissionError(f"cannot read submission CSV: {type(exc).__name__}: {exc}") from None


def _raw_score(task: Task, path: Path) -> float:
    if task.scoring.grader == "builtin":
        return score_submission(task, _read_submission(path))
    if task.scoring.grader == "dsbench":
        _check_rows_in_order(task, _read_submission(path))
    raw = run_competition_code(task, path)
    digits = task.scoring.round_digits
    return round(raw, digits) if digits is not None else raw


def grade(task: Task, submission_path: str | os.PathLike | None) -> Grade:
    """Grade the CSV at ``submission_path``; never raises on a bad or missing submission."""
    path = Path(submission_path) if submission_path is not None else None
    kind = task.scoring.score_kind
    if path is None or not path.is_file():
        return Grade("no_submission", None, 0.0, f"no submission file at {str(path)!r}", kind)
    try:
        raw = _raw_score(task, path)
    except InvalidSubmissionError as exc:
        return Grade("invalid_submission", None, 0.0, str(exc), kind)
    except ValueError as exc:  # a metric refusing the values (e.g. one class only) is still the submission's fault
        return Grade("invalid_submission", None, 0.0, f"cannot score submission: {exc}", kind)
    return Grade("ok", raw, normalised_score(task, raw), "", kind)
