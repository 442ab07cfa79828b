r"""What WMRL does beyond the paper: :class:`BeyondStep`, the paper's step with its hooks filled.

:class:`wmrl.step.WMRLStep` is Algorithm 1 and nothing else; it refuses a configuration that asks
for more. Every departure a configuration can switch on, all off by default
(:class:`~wmrl.config.MethodConfig`, :class:`~wmrl.config.WorldModelConfig`), is here or named here,
and :func:`make_step` builds the paper's step unless a run asks for one:

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
- **regions** (notebook 09): the feature's region, the calibration's or else the world model's
  exploit, is read off each scored script (:func:`region_strata`); the step logs the share of
  scripts in it (``region_share``) and the region of each anchor pair (``pairs.parquet``'s ``region``).
- **the exploit region** (``world_model.exploit``, notebook 09): a world model whose bias the
  policy can find and exploit, the stress test of Assumption 6 (:mod:`wmrl.world_model.exploit`).
- **the oracle world model** (``world_model.kind = "oracle"``, notebook 08): the real outcome
  degraded to a chosen fidelity, the dial of how good a world model must be
  (:mod:`wmrl.world_model.oracle`).

The last two are world models: the step sees only their scores, so they need no hook here.
Which arms each feature acts on is :mod:`wmrl.arms`'s to say (:attr:`~wmrl.arms.Arm.beyond_paper`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wmrl._checks import as_float_array, require_same_length
from wmrl.anchor import AnchorScheduler
from wmrl.arms import Arm
from wmrl.calibration import OnlineDebiaser
from wmrl.config import MethodConfig, RunConfig
from wmrl.step import Routing, StepOutput, WMRLStep, beyond_paper_fields
from wmrl.world_model.exploit import in_region

__all__ = ["BANDWIDTH", "PRIOR_PAIRS", "ActiveAnchors", "BeyondOutput", "BeyondStep", "ConditionalDebiaser",
           "ReliabilityMap", "make_step", "region_strata"]

_METHOD = MethodConfig()


# ================================================================================================
# Active anchors: where the world model has erred, and the choice it drives
# ================================================================================================
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


# ================================================================================================
# Conditional Online Debiasing: one isotonic map per stratum of a feature of the script
# ================================================================================================
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


# ================================================================================================
# Regions: the feature of the script the step logs and, under conditional OD, stratifies
# ================================================================================================
def region_strata(region: str, groups) -> tuple[np.ndarray, float]:
    """``(strata, share)`` of a grammar rollout's ``groups`` (lists of trajectories): per trajectory,
    1 if the script its world-model score came from (its ``scored_turn``) is in ``region``, else 0
    (also when nothing was predicted); and the share of all its turns' scripts in the region."""
    inside = {id(turn): in_region(region, tr.task, turn.code) for g in groups for tr in g for turn in tr.turns}
    strata = np.array([[tr.scored_turn is not None and inside[id(tr.scored_turn)] for tr in g] for g in groups],
                      dtype=int)
    return strata, float(np.mean(list(inside.values())))


# ================================================================================================
# The step beyond the paper
# ================================================================================================
@dataclass
class BeyondOutput(StepOutput):
    """A :class:`~wmrl.step.StepOutput` with the region of each anchor pair (None without strata)."""

    pair_strata: np.ndarray | None = None

    @property
    def pair_columns(self) -> tuple[np.ndarray, ...]:
        return self.pairs + ((self.pair_strata,) if self.pair_strata is not None else ())


class BeyondStep(WMRLStep):
    """:class:`~wmrl.step.WMRLStep` with active anchors, conditional OD and regions, as configured.

    With every feature off it is the paper's step, call for call (``tests/test_beyond.py``).

    Args:
        arm, method, groups_per_step, group_size, seed, std_normalize: :class:`~wmrl.step.WMRLStep`'s.
        region: the region to log (``world_model.exploit``); ``method.od_condition``, when set, is
            the region instead, and its strata calibrate.
    """

    beyond_paper = True

    def __init__(self, arm: str | Arm, method: MethodConfig, groups_per_step: int, group_size: int, seed: int = 0,
                 std_normalize: bool = False, region: str = "none"):
        super().__init__(arm, method, groups_per_step, group_size, seed, std_normalize)
        self.active = method.anchor_selection == "active"
        if self.active and "active_anchors" not in self.arm.beyond_paper:
            raise ValueError(f"method.anchor_selection='active' chooses anchor groups from the world model's "
                             f"predictions; arm {self.arm.name!r} has no such choice (use 'random', or an arm with "
                             "both streams: mix, od, ivd, wmrl)")
        self.active_anchors = ActiveAnchors(self.anchors) if self.active else None
        self.conditional = method.od_condition != "none"  # one map per stratum; else the paper's one map
        if self.conditional:
            self.debiaser = ConditionalDebiaser(method.od_min_pairs, method.od_refit_every,
                                                method.od_condition_min_pairs)
        self.region = method.od_condition if self.conditional else region
        self._read: tuple[np.ndarray, float] | None = None  # read_rollout's (strata, region share), for one call
        self._strata: np.ndarray | None = None  # the current call's strata

    # -- active anchors: routed undecided, chosen after turn 1 -----------------------------------
    def route(self) -> Routing:
        if self.active and self.arm.train:  # every group predicted; anchors chosen from turn 1 (choose_anchors)
            return Routing(self.G, None, np.ones(self.G, bool), choose=self.choose_anchors)
        return super().route()

    def choose_anchors(self, turn1_predictions) -> np.ndarray:
        """The executed mask, from the raw world-model scores of every group's turn 1 (``(G, n)``,
        NaN where a trajectory has no prediction); see :class:`ActiveAnchors`."""
        if not self.active:
            raise ValueError("choose_anchors is for method.anchor_selection='active'; under 'random' the anchors "
                             "are decided by route()")
        return self.active_anchors.choose(turn1_predictions, self.G)

    # -- regions and strata ----------------------------------------------------------------------
    def read_rollout(self, groups) -> None:
        """Read the region of each scored script (:func:`region_strata`) for the next call."""
        self._read = None if self.region == "none" else region_strata(self.region, groups)

    def __call__(self, real, predicted, executed, strata=None) -> BeyondOutput:
        """:meth:`WMRLStep.__call__ <wmrl.step.WMRLStep.__call__>`, and ``strata``: ``(G, n)`` int, the
        stratum of the script each prediction scored; by default the one :meth:`read_rollout` read.
        Needed under conditional calibration; returned for the anchor pairs whenever known."""
        read, self._read = self._read, None
        if strata is None and read is not None:
            strata = read[0]
        if self.conditional and strata is None:
            raise ValueError(f"method.od_condition={self.method.od_condition!r} calibrates per stratum: pass strata "
                             f"of shape {np.shape(real)}")
        if strata is not None:
            if np.shape(strata) != np.shape(real):
                raise ValueError(f"strata {np.shape(strata)} must have the shape of real {np.shape(real)}")
            strata = np.asarray(strata, dtype=int)
        self._strata = strata
        try:
            out = super().__call__(real, predicted, executed)
        finally:
            self._strata = None
        if read is not None:
            out.log["region_share"] = read[1]
        pair_strata = None if strata is None else self._pair_strata(strata, out.anchor_groups)
        return BeyondOutput(**vars(out), pair_strata=pair_strata)

    @staticmethod
    def _pair_strata(strata: np.ndarray, anchor_groups: list) -> np.ndarray:
        return np.concatenate([strata[g] for g in anchor_groups]) if anchor_groups else np.empty(0, int)

    # -- the hooks of WMRLStep -------------------------------------------------------------------
    def _calibrate(self, raw: np.ndarray, have: np.ndarray) -> np.ndarray:
        if self.conditional:  # f_hat_z: each stratum's own map where it has one
            return self.debiaser.transform(raw[have], self._strata[have])
        return super()._calibrate(raw, have)

    def _audit(self, anchor_groups: list, raw: np.ndarray, cal: np.ndarray, real: np.ndarray) -> None:
        super()._audit(anchor_groups, raw, cal, real)
        if self.active:  # the same residuals, by predicted score, for the next choice
            for g in anchor_groups:
                self.active_anchors.observe(raw[g], cal[g], real[g])

    def _push_pairs(self, pairs: tuple, anchor_groups: list) -> None:
        if self.conditional:
            self.debiaser.push_many(pairs[0], pairs[2], self._pair_strata(self._strata, anchor_groups))
        else:
            super()._push_pairs(pairs, anchor_groups)

    def _log(self, rewards, executed, rho, pairs) -> dict:
        return {**super()._log(rewards, executed, rho, pairs), **(self.active_anchors.log() if self.active else {})}

    # -- checkpointing ---------------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = super().state_dict()
        if self.active:
            state["reliability"] = self.active_anchors.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        if self.active:
            self.active_anchors.load_state_dict(state["reliability"])


def make_step(cfg: RunConfig) -> WMRLStep:
    """The step of a grammar run: the paper's :class:`~wmrl.step.WMRLStep`, or :class:`BeyondStep`
    when ``cfg`` asks for active anchors, conditional OD or an exploit region to log."""
    t = cfg.train
    args = (cfg.arm, cfg.method, t.groups_per_step, t.group_size, cfg.seed, t.std_normalize)
    if not beyond_paper_fields(cfg.method) and cfg.world_model.exploit == "none":
        return WMRLStep(*args)
    return BeyondStep(*args, region=cfg.world_model.exploit)
