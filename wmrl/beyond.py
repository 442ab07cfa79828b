r"""What WMRL does beyond the paper, behind one boundary.

:mod:`wmrl.step` reads as Algorithm 1; every departure a configuration can switch on, all off by
default (:class:`~wmrl.config.MethodConfig`, :class:`~wmrl.config.WorldModelConfig`), is here or
named here:

- **active anchors** (``method.anchor_selection = "active"``, notebook 10): the anchor groups are
  chosen after turn 1 of every group has been generated and predicted, where the world model is
  least reliable, instead of at random before generation. Reliability is read off the anchors
  already executed (:class:`ReliabilityMap`): the squared residual of the calibrated world
  model, the quantity the :math:`\eta^2` audit averages, resolved by the predicted score. A
  group's priority is the expected squared residual at its members' turn-1 predictions; a region
  of scores no anchor has visited yet counts as average. Both rules execute the same number of
  groups (:meth:`~wmrl.anchor.AnchorScheduler.n_anchors`), so they compare at the same execution
  budget, and the anchors are still known before turn 2 and executed from turn 1.
  Why this signal and not the world model's own confidence: on the untrained agent's turn-1
  scripts the program-analysis world model's verdict confidence is, if anything, negatively
  rank-correlated with its error, while its error depends strongly on the predicted score itself
  (near zero at a predicted "no valid submission", largest at high predicted scores).
- **conditional Online Debiasing** (``method.od_condition``, notebook 09,
  :class:`ConditionalDebiaser`): when the world model's bias depends on an observable feature
  :math:`z(\tau)` of the script, Assumption 6 may still hold *within* each value of the feature
  (:math:`E[r \mid \hat r, z]` non-decreasing in :math:`\hat r` for each :math:`z`), and one
  isotonic map per stratum removes what the pooled map cannot. A stratum has few pairs, so its
  map replaces the pooled one only once it has ``stratum_min_pairs`` of its own.
- **the exploit region** (``world_model.exploit``, notebook 09): a world model whose bias the
  policy can find and exploit, the stress test of Assumption 6 (:mod:`wmrl.world_model.exploit`).
- **the oracle world model** (``world_model.kind = "oracle"``, notebook 08): the real outcome
  degraded to a chosen fidelity, the dial of how good a world model must be
  (:mod:`wmrl.world_model.oracle`).
"""

from __future__ import annotations

import numpy as np

from wmrl._checks import as_float_array, require_same_length
from wmrl.anchor import AnchorScheduler
from wmrl.calibration import OnlineDebiaser
from wmrl.config import MethodConfig

__all__ = ["BANDWIDTH", "PRIOR_PAIRS", "ActiveAnchors", "ConditionalDebiaser", "ReliabilityMap"]

_METHOD = MethodConfig()

#: Anchor pairs whose predicted score lies within this distance of a score inform its reliability.
#: The program-analysis world model's scores sit on the reward ladder's rungs (0, 0.1, 0.2 and
#: 0.525-0.875 by quality bucket, at least 0.075 apart), so there it pools identical scores.
BANDWIDTH = 0.05
#: Pseudo-pairs at the overall mean residual that every local estimate is shrunk towards, so that
#: a score seen once does not decide the next choice on its own.
PRIOR_PAIRS = 4.0


class ReliabilityMap:
    r"""Where the world model has erred: the anchors' squared residuals, by predicted score.

    Each executed anchor trajectory leaves ``(raw predicted score, (calibrated - real)^2)``: the
    residual of the :math:`\eta^2` audit, out of sample (the map before its step). The expected
    squared residual at a score :math:`p` is the shrunk local mean

    .. math::  m(p) = \frac{\sum_{j:\,|\hat r_j - p| \le h} e_j + \kappa\,\bar e}{N_h(p) + \kappa},

    with :math:`h` = :data:`BANDWIDTH`, :math:`\kappa` = :data:`PRIOR_PAIRS` and :math:`\bar e` the
    mean over every pair; NaN before the first pair.
    """

    def __init__(self, bandwidth: float = BANDWIDTH, prior_pairs: float = PRIOR_PAIRS):
        if bandwidth < 0 or prior_pairs <= 0:
            raise ValueError(f"bandwidth must be >= 0 and prior_pairs > 0, got {bandwidth}, {prior_pairs}")
        self.bandwidth, self.prior_pairs = float(bandwidth), float(prior_pairs)
        self.predicted: list[float] = []
        self.residual2: list[float] = []

    def observe(self, predicted, residual2) -> None:
        """Add anchor pairs: raw predicted scores and their squared residuals (finite, same length)."""
        p, e = np.asarray(predicted, dtype=float).ravel(), np.asarray(residual2, dtype=float).ravel()
        if p.shape != e.shape or not (np.isfinite(p).all() and np.isfinite(e).all()) or (e < 0).any():
            raise ValueError("observe needs finite predicted scores and non-negative squared residuals of one length, "
                             f"got shapes {p.shape} and {e.shape}")
        self.predicted += p.tolist()
        self.residual2 += e.tolist()

    def expected(self, scores) -> np.ndarray:
        """:math:`m(p)` at each score (NaN where the score is NaN, or before any pair)."""
        s = np.asarray(scores, dtype=float)
        if not self.predicted:
            return np.full(s.shape, np.nan)
        p, e = np.asarray(self.predicted), np.asarray(self.residual2)
        near = np.abs(s[..., None] - p) <= self.bandwidth  # (..., pairs)
        out = (near @ e + self.prior_pairs * e.mean()) / (near.sum(-1) + self.prior_pairs)
        return np.where(np.isnan(s), np.nan, out)

    def group_priority(self, scores) -> np.ndarray:
        """Per group (rows of ``(G, n)`` scores): the mean expected squared residual of its members."""
        m = self.expected(scores)
        with np.errstate(all="ignore"):
            return np.array([np.nan if np.isnan(row).all() else np.nanmean(row) for row in np.atleast_2d(m)])

    def state_dict(self) -> dict:
        return {"predicted": list(self.predicted), "residual2": list(self.residual2)}

    def load_state_dict(self, state: dict) -> None:
        self.predicted, self.residual2 = list(state["predicted"]), list(state["residual2"])


class ActiveAnchors:
    """Active anchor selection for one run: the reliability map, the choice and what it logs.

    :class:`~wmrl.step.WMRLStep` holds one under ``method.anchor_selection = "active"``: the
    routing leaves the anchors open, :meth:`choose` picks them from turn 1's predictions with the
    step's own scheduler (the random rule's budget and seeded stream), and :meth:`observe` feeds
    each executed anchor group's residuals back.
    """

    def __init__(self, scheduler: AnchorScheduler):
        self.scheduler = scheduler
        self.reliability = ReliabilityMap()
        self._priority = (np.nan, np.nan)  # the last choice's mean priority: chosen groups, all groups

    def choose(self, turn1_predictions, n_groups: int) -> np.ndarray:
        """The executed mask: the groups of highest :meth:`ReliabilityMap.group_priority` at their
        turn-1 raw world-model scores (``(n_groups, n)``, NaN where a trajectory has no prediction)."""
        scores = np.asarray(turn1_predictions, dtype=float)
        if scores.ndim != 2 or scores.shape[0] != n_groups:
            raise ValueError(f"turn1_predictions must be (groups_per_step={n_groups}, group size), got {scores.shape}")
        priority = self.reliability.group_priority(scores)
        executed = np.zeros(n_groups, bool)
        executed[self.scheduler.select_by(priority)] = True
        with np.errstate(all="ignore"):  # logged by the next step: how much the choice differs from the mean
            self._priority = (float(np.nanmean(priority[executed])), float(np.nanmean(priority))) \
                if np.isfinite(priority).any() else (np.nan, np.nan)
        return executed

    def observe(self, raw, calibrated, real) -> None:
        """One executed anchor group: its raw scores and squared residuals (NaN real rewards skipped)."""
        ok = ~np.isnan(real)
        self.reliability.observe(raw[ok], (calibrated[ok] - real[ok]) ** 2)

    def log(self) -> dict:
        return {"anchor_priority": self._priority[0], "mean_priority": self._priority[1]}

    def state_dict(self) -> dict:
        return self.reliability.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.reliability.load_state_dict(state)


class ConditionalDebiaser:
    """Online Debiasing per stratum of an observable feature of the script.

    The pooled :class:`OnlineDebiaser` keeps the paper's schedule and its identity warm-up: nothing
    is calibrated before the pooled map's first fit. After it, a stratum with at least
    ``stratum_min_pairs`` pairs of its own is calibrated by its own isotonic map, refitted whenever
    new pairs of that stratum arrive (they are few: a refit costs microseconds); any other stratum
    by the pooled map.

    Args:
        min_pairs, refit_every, max_pairs: the pooled map's schedule (:class:`OnlineDebiaser`).
        stratum_min_pairs: a stratum's pairs before its own map is used (>= 2).
    """

    def __init__(self, min_pairs: int = _METHOD.od_min_pairs, refit_every: int = _METHOD.od_refit_every,
                 stratum_min_pairs: int = _METHOD.od_condition_min_pairs, max_pairs: int | None = None):
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
