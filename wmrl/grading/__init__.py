"""Grading: a submission's raw score on the hidden answers and its normalised score (MLE-Dojo's position
score on the task's leaderboards, or DSBench's relative performance gap).

``grade(task, submission_path)`` returns a :class:`Grade` (status, raw score, percentile, reason, score
kind); ``position_score(score, board_scores, higher_is_better)`` is MLE-Dojo's formula. Imported
competitions are scored by their own code in a limited child process (:mod:`wmrl.tasks.competition_code`,
which the import step also uses to refuse a grader that cannot load).
This package imports :mod:`wmrl.tasks` and nothing above it; nothing in ``wmrl.tasks`` imports it.
"""

from wmrl.grading.grade import (
    Grade,
    grade,
    normalised_score,
    position_score,
    relative_performance_gap,
    score_submission,
)
from wmrl.tasks.competition_code import GradingError

__all__ = [
    "Grade",
    "GradingError",
    "grade",
    "normalised_score",
    "position_score",
    "relative_performance_gap",
    "score_submission",
]
