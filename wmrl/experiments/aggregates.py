r"""The field's aggregate metrics over (seed, task) scores, with stratified bootstrap intervals.

Agarwal et al. (2021, *Deep RL at the Edge of the Statistical Precipice*; the ``rliable`` library)
recommend summarising few runs on several tasks by:

- :func:`iqm`: the interquartile mean of every (run, task) score, the mean of the middle 50%
  (``scipy.stats.trim_mean`` at 25%), robust to a task or a run far out;
- :func:`probability_of_improvement`: :math:`P(X > Y)`, the chance that arm X's score on a task beats
  arm Y's on the same task (ties count half), averaged over tasks: the Mann-Whitney U statistic per
  task over :math:`n_X n_Y`;
- :func:`performance_profile`: the share of runs scoring above :math:`\tau`, averaged over tasks, for
  every threshold :math:`\tau`;

each with a percentile interval from the *stratified* bootstrap (:func:`stratified_bootstrap`):
runs are resampled with replacement within each task, independently across tasks (and across the two
arms for the probability of improvement), as rliable's ``StratifiedBootstrap`` and
``StratifiedIndependentBootstrap`` do. ``rliable`` itself does not install beside this project's pins
(its ``arch`` dependency needs pandas < 3), so these are its estimators in a few lines;
``tests/test_aggregates.py`` checks them against a record of rliable's own output
(``scripts/rliable_reference.py``). A score matrix is ``(runs, tasks)``; every bootstrap takes a
seed, so a replay redraws the same intervals.

At this project's scale a run is a seed, and every seed is scored on the same held-out tasks, so the
scores of one seed's tasks are not independent: these aggregates are secondary, beside the
seed-paired tests (:mod:`wmrl.experiments.stats`) that carry the verdicts.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

from wmrl.experiments.stats import ALPHA

__all__ = ["iqm", "performance_profile", "probability_of_improvement", "stratified_bootstrap"]

REPS = 2000  # bootstrap resamples of every interval


def _matrix(scores) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    if s.ndim != 2 or min(s.shape) < 1 or not np.isfinite(s).all():
        raise ValueError(f"scores must be a finite (runs, tasks) matrix, got shape {s.shape}")
    return s


def iqm(scores) -> float:
    """The interquartile mean of every entry of a ``(runs, tasks)`` score matrix."""
    return float(stats.trim_mean(_matrix(scores), proportiontocut=0.25, axis=None))


def probability_of_improvement(x, y) -> float:
    """:math:`P(X > Y) + P(X = Y)/2` per task over the runs of ``x`` and ``y`` (same tasks), averaged over tasks."""
    x, y = _matrix(x), _matrix(y)
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must score the same tasks, got {x.shape[1]} and {y.shape[1]} columns")
    per_task = [(np.sign(x[:, t, None] - y[None, :, t]) + 1).mean() / 2 for t in range(x.shape[1])]
    return float(np.mean(per_task))


def performance_profile(scores, taus) -> np.ndarray:
    """For each threshold in ``taus``, the share of runs scoring above it, averaged over tasks."""
    s = _matrix(scores)
    return np.array([(s > tau).mean(axis=0).mean() for tau in np.asarray(taus, dtype=float)])


def _resample(rng: np.random.Generator, s: np.ndarray) -> np.ndarray:
    """One stratified resample: each task's column redrawn from its own runs, with replacement."""
    rows = rng.integers(0, s.shape[0], size=s.shape)
    return np.take_along_axis(s, rows, axis=0)


def stratified_bootstrap(statistic, *matrices, seed: int = 0, reps: int = REPS,
                         confidence: float = 1 - ALPHA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``statistic(*matrices)`` with its percentile interval over stratified bootstrap resamples.

    Each matrix is resampled on its own (runs within each task), ``reps`` times from a generator seeded
    with ``seed``. Returns ``(estimate, lo, hi)`` as arrays (a scalar statistic gives 0-d arrays).
    """
    mats = [_matrix(m) for m in matrices]
    rng = np.random.default_rng(seed)
    draws = np.array([statistic(*(_resample(rng, m) for m in mats)) for _ in range(reps)])
    tail = 100 * (1 - confidence) / 2
    lo, hi = np.percentile(draws, [tail, 100 - tail], axis=0)
    return np.asarray(statistic(*mats), dtype=float), lo, hi
