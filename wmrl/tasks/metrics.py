"""The metric registry and the submission validator shared by grading and the leaderboards.

Every task names one metric here. A metric knows its direction (``higher_is_better``), which
the position score needs to sort a leaderboard best first, and its *kind*, which fixes what a
submission's target column must hold:

- ``label``: the predicted class, spelled as in ``train.csv`` (accuracy, balanced accuracy, F1).
- ``probability``: binary tasks only; the probability of the positive class, which is the last
  of the sorted class labels (ROC-AUC, log-loss).
- ``value``: a number (regression metrics).

A real competition imported from MLE-Dojo, MLE-bench or DSBench is scored by its own code, not by
a metric of this registry. Its task registers an *external* metric under its own name
(:func:`external_metric`) with the direction and submission kind the importer read off the
competition, so that ``get_metric(task.metric)`` answers for every loaded task; the external
metric's ``fn`` refuses to score, because :mod:`wmrl.grading` runs the competition's code instead.

:func:`validate_submission` turns a garbage submission into an :class:`InvalidSubmissionError`
whose message says what is wrong, because that message is the feedback an agent learns from.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn import metrics as skm

__all__ = [
    "KINDS",
    "METRICS",
    "InvalidSubmissionError",
    "Metric",
    "canonical_labels",
    "external_metric",
    "get_metric",
    "validate_submission",
]


KINDS = ("label", "probability", "value")


class InvalidSubmissionError(ValueError):
    """A submission that cannot be scored (wrong rows, columns, ids, NaN, values)."""


@dataclass(frozen=True)
class Metric:
    name: str
    fn: Callable[[np.ndarray, np.ndarray], float]
    higher_is_better: bool
    kind: str  # "label" | "probability" | "value"

    def score(self, y_true, y_pred, positive_label: str | None = None) -> float:
        """Score aligned predictions; probability metrics compare against ``y_true == positive_label``."""
        y_true = np.asarray(y_true)
        if self.kind == "probability":
            if positive_label is None:
                raise ValueError(f"metric {self.name!r} needs the positive class label")
            y_true = (y_true == positive_label).astype(int)
        return float(self.fn(y_true, np.asarray(y_pred)))


def _rmse(y, p):
    return float(np.sqrt(np.mean((np.asarray(y, float) - np.asarray(p, float)) ** 2)))


def _log_loss(y, p):
    return skm.log_loss(y, np.clip(np.asarray(p, float), 1e-15, 1 - 1e-15), labels=[0, 1])


METRICS: dict[str, Metric] = {
    m.name: m
    for m in (
        Metric("accuracy", skm.accuracy_score, True, "label"),
        Metric("balanced_accuracy", skm.balanced_accuracy_score, True, "label"),
        Metric("f1_macro", lambda y, p: skm.f1_score(y, p, average="macro"), True, "label"),
        Metric("roc_auc", skm.roc_auc_score, True, "probability"),
        Metric("log_loss", _log_loss, False, "probability"),
        Metric("rmse", _rmse, False, "value"),
        Metric("mae", skm.mean_absolute_error, False, "value"),
        Metric("r2", skm.r2_score, True, "value"),
    )
}


_EXTERNAL: dict[str, Metric] = {}


def _scored_by_competition_code(y_true, y_pred):
    raise TypeError("an external metric is the competition's own code; wmrl.grading.grade runs it")


def external_metric(name: str, higher_is_better: bool, kind: str) -> Metric:
    """Register (once) and return the metric of a competition graded by its own code."""
    if kind not in KINDS:
        raise ValueError(f"metric kind must be one of {KINDS}, got {kind!r}")
    if name in METRICS:
        raise ValueError(f"external metric name {name!r} is taken by a built-in metric; name it after its competition")
    metric = Metric(name, _scored_by_competition_code, bool(higher_is_better), kind)
    known = _EXTERNAL.setdefault(name, metric)
    if (known.higher_is_better, known.kind) != (metric.higher_is_better, metric.kind):
        raise ValueError(f"external metric {name!r} is already registered with higher_is_better="
                         f"{known.higher_is_better}, kind={known.kind!r}; got {metric.higher_is_better}, {kind!r}")
    return known


def get_metric(name: str) -> Metric:
    """A built-in metric, or the external metric of a loaded imported task."""
    try:
        return METRICS.get(name) or _EXTERNAL[name]
    except KeyError:
        raise KeyError(f"unknown metric {name!r}; known: {sorted(METRICS)} (or a loaded imported task's own)") from None


def canonical_labels(values) -> np.ndarray:
    """Class labels as strings, with integral numbers spelled without a decimal point.

    A script that writes ``3.0`` for class ``3`` (pandas upcasts ints to float easily) has made
    the right prediction; comparing strings after this step accepts it.
    """
    s = pd.Series(values)
    if pd.api.types.is_bool_dtype(s):
        return s.astype(str).to_numpy()
    if pd.api.types.is_numeric_dtype(s):
        arr = s.to_numpy(dtype=float)
        if np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)):
            return arr.astype(np.int64).astype(str)
    return s.astype(str).to_numpy()


def _few(values, k: int = 3) -> str:
    values = list(values)
    return ", ".join(map(repr, values[:k])) + (f" (+{len(values) - k} more)" if len(values) > k else "")


def validate_submission(
    submission: pd.DataFrame,
    answers: pd.DataFrame,
    id_column: str,
    target_column: str,
    metric: str | Metric,
    classes=None,
) -> np.ndarray:
    """Check a submission against the answers and return its predictions in the answers' row order.

    Raises :class:`InvalidSubmissionError` naming the first problem found: missing or extra
    columns, wrong row count, duplicate or unknown ids, NaN, non-numeric values, probabilities
    outside [0, 1], or labels that are not classes of the task.
    """
    m = get_metric(metric) if isinstance(metric, str) else metric
    cols = list(submission.columns)
    missing = [c for c in (id_column, target_column) if c not in cols]
    if missing:
        raise InvalidSubmissionError(f"missing column(s) {_few(missing)}; expected columns {[id_column, target_column]}, got {cols}")
    extra = [c for c in cols if c not in (id_column, target_column)]
    if extra:
        raise InvalidSubmissionError(f"unexpected column(s) {_few(extra)}; expected only {[id_column, target_column]}")
    if len(submission) != len(answers):
        raise InvalidSubmissionError(f"expected {len(answers)} rows, got {len(submission)}")
    sub_ids = pd.Series(canonical_labels(submission[id_column].to_numpy()))
    ans_ids = pd.Series(canonical_labels(answers[id_column].to_numpy()))
    if sub_ids.duplicated().any():
        raise InvalidSubmissionError(f"duplicate id(s) {_few(sub_ids[sub_ids.duplicated()].unique())}")
    unknown = sorted(set(sub_ids) - set(ans_ids))
    if unknown:
        raise InvalidSubmissionError(f"id(s) not in the test set: {_few(unknown)}")
    pred = submission[target_column].set_axis(sub_ids).reindex(ans_ids)
    n_nan = int(pred.isna().sum())
    if n_nan:
        raise InvalidSubmissionError(f"column {target_column!r} has {n_nan} missing (NaN) value(s)")
    if m.kind == "label":
        out = canonical_labels(pred.to_numpy())
        if classes is not None:
            bad = sorted(set(out) - set(canonical_labels(list(classes))))
            if bad:
                raise InvalidSubmissionError(f"column {target_column!r} holds value(s) that are not classes: {_few(bad)}; "
                                             f"classes are {_few(canonical_labels(list(classes)), 10)}")
        return out
    values = pd.to_numeric(pred, errors="coerce")
    if values.isna().any():
        raise InvalidSubmissionError(f"column {target_column!r} must be numeric for metric {m.name!r}; "
                                     f"non-numeric value(s) {_few(pred[values.isna()].unique())}")
    out = values.to_numpy(dtype=float)
    if not np.all(np.isfinite(out)):
        raise InvalidSubmissionError(f"column {target_column!r} has infinite value(s)")
    if m.kind == "probability" and (out.min() < 0 or out.max() > 1):
        raise InvalidSubmissionError(f"column {target_column!r} must hold probabilities in [0, 1] for metric {m.name!r}")
    return out
