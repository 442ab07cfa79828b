r"""Online Debiasing (OD): an isotonic map from world-model scores to real scores (Sec. 3.4).

Background. The world model's score is :math:`\hat r = r + b(\tau) + \xi(\tau)`. Assumption 6
says the bias is a *monotone distortion* of the true score, :math:`b(\tau) = \phi(r(\tau)) - r(\tau)`
with :math:`\phi` non-decreasing. Then :math:`E[r \mid \hat r]` is itself non-decreasing in
:math:`\hat r`, and isotonic regression on the anchor pairs :math:`(\hat r_j, r_j)` estimates it
without any parametric form. Theorem 4 shows the bias term of the bound then shrinks like
:math:`1/(1 + T/T_0)` as anchor pairs accumulate.

Schedule (the paper's): identity until ``min_pairs`` = 200 pairs have arrived, first fit at 200,
then a refit after every ``refit_every`` = 64 new pairs. Every world-model score passes through
the current map before advantages are computed.

Why scikit-learn: :class:`sklearn.isotonic.IsotonicRegression` is the well-tested pool-adjacent-
violators implementation; ``out_of_bounds="clip"`` keeps a score outside the seen range at the
nearest fitted value instead of returning NaN.

What isotonic debiasing cannot do: if the bias depends on features of the code rather than on
the true score (reward hacking, Assumption 6 failing), no map of :math:`\hat r` alone removes it.
The :mod:`wmrl.denoise` audit (:math:`\eta^2`) is where that shows up.

Conditional calibration (beyond the paper; :class:`ConditionalDebiaser`, notebook 09). When the
bias depends on an observable feature :math:`z(\tau)` of the script, Assumption 6 may still hold
*within* each value of the feature: :math:`E[r \mid \hat r, z]` non-decreasing in :math:`\hat r`
for each :math:`z`. Then one isotonic map per stratum of :math:`z` removes what the pooled map
cannot. A stratum has few pairs, so its map replaces the pooled one only once it has its own
``stratum_min_pairs``; until then the stratum is calibrated by the pooled map.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from sklearn.isotonic import IsotonicRegression

from wmrl._checks import as_float_array, require_finite, require_same_length

__all__ = ["CalibrationSnapshot", "ConditionalDebiaser", "OnlineDebiaser"]


@dataclass(frozen=True)
class CalibrationSnapshot:
    """The fitted map at one refit, as the knots of a piecewise-linear non-decreasing function.

    Evaluating it is exactly scikit-learn's ``IsotonicRegression.predict`` with
    ``out_of_bounds="clip"`` (linear interpolation between thresholds, constant outside), so a
    snapshot is both the live map and the record used to plot calibration drift.
    """

    n_pairs: int
    n_refits: int
    x: np.ndarray
    y: np.ndarray

    def __call__(self, scores) -> np.ndarray:
        return np.interp(np.asarray(scores, dtype=float), self.x, self.y)


class OnlineDebiaser:
    """Isotonic calibrator fed by anchor pairs ``(predicted, true)``.

    Args:
        min_pairs: pairs needed before the first fit; the map is the identity until then.
        refit_every: new pairs between two refits after the first fit.
        max_pairs: optional FIFO cap on the pairs kept (old pairs fall out), for a world model
            or policy that drifts; ``None`` keeps every pair, as the paper does.
    """

    def __init__(self, min_pairs: int = 200, refit_every: int = 64, max_pairs: int | None = None):
        if min_pairs < 2:
            raise ValueError(f"min_pairs must be >= 2 to fit a map, got {min_pairs}")
        if refit_every < 1:
            raise ValueError(f"refit_every must be >= 1, got {refit_every}")
        if max_pairs is not None and max_pairs < min_pairs:
            raise ValueError(f"max_pairs ({max_pairs}) must be >= min_pairs ({min_pairs})")
        self.min_pairs = int(min_pairs)
        self.refit_every = int(refit_every)
        self.max_pairs = max_pairs
        self._pred: deque[float] = deque(maxlen=max_pairs)
        self._true: deque[float] = deque(maxlen=max_pairs)
        self._since_fit = 0
        self.n_pairs = 0  # pairs received in total (not capped)
        self.n_refits = 0
        self.snapshots: list[CalibrationSnapshot] = []

    @property
    def fitted(self) -> bool:
        return bool(self.snapshots)

    def push_many(self, predicted, true) -> bool:
        """Add anchor pairs; refit when the schedule says so. Returns True if a refit happened."""
        p = as_float_array(predicted, "predicted", ndim=1)
        t = as_float_array(true, "true", ndim=1)
        require_same_length(p, t, "predicted", "true")
        require_finite(p, "predicted")
        require_finite(t, "true")
        self._pred.extend(p.tolist())
        self._true.extend(t.tolist())
        self.n_pairs += len(p)
        self._since_fit += len(p)
        due = self.n_pairs >= self.min_pairs and (not self.fitted or self._since_fit >= self.refit_every)
        if due:
            self.refit()
        return due

    def refit(self) -> None:
        """Fit :math:`\\hat f = \\arg\\min_{f \\uparrow} \\sum_j (r_j - f(\\hat r_j))^2` on the kept pairs."""
        model = IsotonicRegression(increasing=True, out_of_bounds="clip")
        model.fit(np.fromiter(self._pred, float), np.fromiter(self._true, float))
        self._since_fit = 0
        self.n_refits += 1
        self.snapshots.append(
            CalibrationSnapshot(self.n_pairs, self.n_refits, model.X_thresholds_.copy(), model.y_thresholds_.copy())
        )

    def transform(self, scores) -> np.ndarray:
        """Calibrated scores :math:`\\hat f(\\hat r)`; the identity before the first fit."""
        s = as_float_array(scores, "scores")
        require_finite(s, "scores")
        if not self.snapshots:
            return s.copy()
        return self.snapshots[-1](s)

    def state_dict(self) -> dict:
        return {
            "pred": list(self._pred), "true": list(self._true), "n_pairs": self.n_pairs,
            "n_refits": self.n_refits, "since_fit": self._since_fit,
            "snapshots": [(s.n_pairs, s.n_refits, s.x.tolist(), s.y.tolist()) for s in self.snapshots],
        }

    def load_state_dict(self, state: dict) -> None:
        self._pred = deque(state["pred"], maxlen=self.max_pairs)
        self._true = deque(state["true"], maxlen=self.max_pairs)
        self.snapshots = [CalibrationSnapshot(n, k, np.array(x), np.array(y)) for n, k, x, y in state["snapshots"]]
        self.n_pairs, self.n_refits = state["n_pairs"], state["n_refits"]
        self._since_fit = state["since_fit"]


class ConditionalDebiaser:
    """Online Debiasing per stratum of an observable feature of the script (module docstring).

    The pooled :class:`OnlineDebiaser` keeps the paper's schedule and its identity warm-up: nothing
    is calibrated before the pooled map's first fit. After it, a stratum with at least
    ``stratum_min_pairs`` pairs of its own is calibrated by its own isotonic map, refitted whenever
    new pairs of that stratum arrive (they are few: a refit costs microseconds); any other stratum
    by the pooled map.

    Args:
        min_pairs, refit_every, max_pairs: the pooled map's schedule (:class:`OnlineDebiaser`).
        stratum_min_pairs: a stratum's pairs before its own map is used (>= 2).
    """

    def __init__(self, min_pairs: int = 200, refit_every: int = 64, stratum_min_pairs: int = 4,
                 max_pairs: int | None = None):
        if stratum_min_pairs < 2:
            raise ValueError(f"stratum_min_pairs must be >= 2 to fit a map, got {stratum_min_pairs}")
        self.pooled = OnlineDebiaser(min_pairs, refit_every, max_pairs)
        self.stratum_min_pairs, self.max_pairs = int(stratum_min_pairs), max_pairs
        self.by_stratum: dict[int, OnlineDebiaser] = {}

    # The pooled map is the run's calibration record (calibration.json) and its schedule.
    fitted = property(lambda self: self.pooled.fitted)
    n_pairs = property(lambda self: self.pooled.n_pairs)
    n_refits = property(lambda self: self.pooled.n_refits)
    snapshots = property(lambda self: self.pooled.snapshots)

    def _stratum(self, s: int) -> OnlineDebiaser:
        return self.by_stratum.setdefault(int(s), OnlineDebiaser(self.stratum_min_pairs, 1, self.max_pairs))

    def push_many(self, predicted, true, strata) -> bool:
        """Add anchor pairs with their strata; returns True if the pooled map was refitted."""
        p, t = as_float_array(predicted, "predicted", ndim=1), as_float_array(true, "true", ndim=1)
        z = np.asarray(strata, dtype=int)
        require_same_length(p, z, "predicted", "strata")
        refit = self.pooled.push_many(p, t)
        for s in np.unique(z):
            self._stratum(s).push_many(p[z == s], t[z == s])
        return refit

    def transform(self, scores, strata) -> np.ndarray:
        """Calibrated scores: each stratum's own map where it has one, else the pooled map (the
        identity before the pooled map's first fit)."""
        out = self.pooled.transform(scores)
        if not self.pooled.fitted:
            return out
        s, z = as_float_array(scores, "scores"), np.asarray(strata, dtype=int)
        if z.shape != s.shape:
            raise ValueError(f"strata {z.shape} must have the shape of scores {s.shape}")
        for k, own in self.by_stratum.items():
            if own.fitted and (z == k).any():
                out[z == k] = own.transform(s[z == k])
        return out

    def stratum_fitted(self, s: int) -> bool:
        """Whether stratum ``s`` is calibrated by its own map (after the pooled map's first fit)."""
        return self.pooled.fitted and int(s) in self.by_stratum and self.by_stratum[int(s)].fitted

    def state_dict(self) -> dict:
        return {"pooled": self.pooled.state_dict(), "strata": {str(k): d.state_dict() for k, d in self.by_stratum.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.pooled.load_state_dict(state["pooled"])
        self.by_stratum = {}
        for k, sd in state["strata"].items():
            self._stratum(int(k)).load_state_dict(sd)
