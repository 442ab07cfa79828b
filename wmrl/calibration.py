r"""Online Debiasing (OD): an isotonic map from world-model scores to real scores (Sec. 3.4).

Background. The world model's score is :math:`\hat r = r + b(\tau) + \xi(\tau)`. Assumption 6
says the bias is a *monotone distortion* of the true score, :math:`b(\tau) = \phi(r(\tau)) - r(\tau)`
with :math:`\phi` non-decreasing. Then :math:`E[r \mid \hat r]` is itself non-decreasing in
:math:`\hat r`, and isotonic regression on the anchor pairs :math:`(\hat r_j, r_j)` estimates it
without any parametric form. Theorem 4 shows the bias term of the bound then shrinks like
:math:`1/(1 + T/T_0)` as anchor pairs accumulate.

Schedule (the paper's, :class:`~wmrl.config.MethodConfig`'s defaults): identity until
``min_pairs`` = 200 pairs have arrived, first fit at 200, then a refit after every ``refit_every``
= 64 new pairs. Every world-model score passes through the current map before advantages are
computed.

Why scikit-learn: :class:`sklearn.isotonic.IsotonicRegression` is the well-tested pool-adjacent-
violators implementation; ``out_of_bounds="clip"`` keeps a score outside the seen range at the
nearest fitted value instead of returning NaN.

What isotonic debiasing cannot do: if the bias depends on features of the code rather than on
the true score (reward hacking, Assumption 6 failing), no map of :math:`\hat r` alone removes it.
The :mod:`wmrl.denoise` audit (:math:`\eta^2`) is where that shows up.

Calibration per stratum of a feature of the script goes beyond the paper: it lives in
:mod:`wmrl.beyond` (:class:`~wmrl.beyond.ConditionalDebiaser`, built on this class).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
from sklearn.isotonic import IsotonicRegression

from wmrl._checks import as_float_array, require_finite, require_same_length
from wmrl.config import MethodConfig

__all__ = ["CalibrationSnapshot", "OnlineDebiaser"]

_METHOD = MethodConfig()


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

    def __init__(self, min_pairs: int = _METHOD.od_min_pairs, refit_every: int = _METHOD.od_refit_every,
                 max_pairs: int | None = None):
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
