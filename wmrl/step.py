r"""One WMRL step, reward side: Algorithm 1 of the paper in one object.

Every trainer (the grammar agent's, the LLM agent's on TRL, the VLA's) and the theory notebook's
simulator call :class:`WMRLStep`; none of them routes groups, calibrates scores or weights
gradients itself. The object is pure numpy: it sees rewards and scores, never a policy.

Algorithm 1, per training step, with the line of :meth:`WMRLStep.__call__` that implements it:

.. code-block:: text

    route:   G_E <- anchor groups (~10%, >= 1)             AnchorScheduler.select        (Sec. 3.3)
             every group is scored by the world model; G_E is also executed
    (the trainer rolls out: real rewards r on G_E, raw world-model scores r_hat on every group)
    OD:      r_tilde = f_hat(r_hat)                         OnlineDebiaser.transform      (Sec. 3.4)
    rewards: R_g = r on g in G_E, r_tilde on g in G_WM
    audit:   eta^2 <- mean (r_tilde - r)^2 over recent anchor groups                     (Sec. 3.5)
             eta^2_cal recorded once, at the end of warm-up
    OD:      push the anchor pairs (r_hat, r); refit f_hat on schedule (200 pairs, then every 64)
    IVD:     rho = clip(1 + eta^2 / eta^2_cal, 1, rho_max)
             w_g = rho / D on G_E, 1 / D on G_WM,  D = rho |G_E| + |G_WM|
    GRPO:    A_gi = R_gi - mean_j R_gj                      group_advantages              (Sec. 3.1)
    (the trainer's loss: g = sum_g w_g (1/n) sum_i A_gi grad log pi(tau_gi), + KL, - entropy)

Order matters in two places, and the order above is the paper's definition:

- this step's world-model scores are calibrated with the map *before* this step's pairs are
  added, so that no group is scored by a map fitted on its own outcomes;
- the :math:`\eta^2` audit sees the same calibrated scores (an out-of-sample residual), and it
  runs in every arm that has both streams (``mix`` and ``od`` too, for the diagnostics), while
  :math:`\rho` weights the gradient only in the arms with IVD.

The arm (:mod:`wmrl.arms`) decides which lines run: ``grpo`` and ``anchor_only`` execute every
sampled group, ``wm`` none, ``mix`` anchors without corrections, ``od``/``ivd``/``wmrl`` add them.

Beyond the paper (:mod:`wmrl.beyond`, off by default, each in a marked block of this module):
``method.anchor_selection = "active"`` leaves :meth:`WMRLStep.route`'s anchors open (``executed``
is None); the trainer generates turn 1 of every group, has the world model predict it, and calls
:meth:`WMRLStep.choose_anchors`, which picks the groups where the world model has erred most, at
the random rule's budget. ``method.od_condition`` calibrates per stratum of a feature of the
script (``strata``). The exploit region and the oracle world model are world models
(:mod:`wmrl.world_model.exploit`, :mod:`wmrl.world_model.oracle`): this object sees only their scores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr

from wmrl.advantage import group_advantages
from wmrl.anchor import AnchorScheduler
from wmrl.arms import Arm, get_arm
from wmrl.beyond import ActiveAnchors, ConditionalDebiaser
from wmrl.calibration import OnlineDebiaser
from wmrl.config import MethodConfig
from wmrl.denoise import InverseVarianceWeighter, fused_group_weights

__all__ = ["Routing", "StepOutput", "WMRLStep", "ivd_warmup_groups"]


@dataclass(frozen=True)
class Routing:
    """Which groups a step samples, executes and predicts."""

    n_groups: int  # groups to sample (fewer than groups_per_step only for anchor_only)
    #: (n_groups,) bool: run in the sandbox; real reward and real feedback. None: not decided yet
    #: (active selection: :meth:`WMRLStep.choose_anchors` decides after turn 1 is predicted)
    executed: np.ndarray | None
    predicted: np.ndarray  # (n_groups,) bool: scored by the world model

    @property
    def decided(self) -> bool:
        """Whether the anchors are known already (always, under the paper's random selection)."""
        return self.executed is not None


@dataclass
class StepOutput:
    """What the trainer needs from a step, and what it logs."""

    rewards: np.ndarray  # (G, n) training rewards: real on executed groups, calibrated predictions elsewhere
    weights: np.ndarray  # (G,) fused group weights w_g
    advantages: np.ndarray  # (G, n) group advantages of ``rewards``
    log: dict = field(default_factory=dict)
    #: this step's anchor pairs ``(raw prediction, calibrated prediction, real)``, flat; empty arrays if none
    pairs: tuple[np.ndarray, np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.empty(0), np.empty(0), np.empty(0)))
    #: the stratum of each anchor pair, in ``pairs``' order; None when the step was given no strata
    pair_strata: np.ndarray | None = None


def ivd_warmup_groups(method: MethodConfig, anchors_per_step: int, group_size: int) -> int:
    """Anchor groups before :math:`\\eta^2_{cal}` is recorded.

    ``method.ivd_warmup_groups`` when set; else one full window after Online Debiasing's first fit,
    so that :math:`\\eta^2_{cal}` measures the *calibrated* world model, as the paper defines it.
    """
    if method.ivd_warmup_groups:
        return method.ivd_warmup_groups
    per_step = max(1, anchors_per_step) * group_size
    return math.ceil(method.od_min_pairs / per_step) * max(1, anchors_per_step) + method.ivd_window


class WMRLStep:
    """Anchor routing, Online Debiasing, the IVD audit and the fused group weights of one arm.

    Args:
        arm: an arm name or :class:`~wmrl.arms.Arm`.
        method: the anchor / OD / IVD knobs.
        groups_per_step: groups a step samples (G).
        group_size: trajectories per group (n).
        seed: seeds the anchor scheduler; two processes with the same seed select the same groups.
        std_normalize: divide advantages by the group's std (Sec. 3.1: optional).
    """

    def __init__(self, arm: str | Arm, method: MethodConfig, groups_per_step: int, group_size: int, seed: int = 0,
                 std_normalize: bool = False):
        self.arm = get_arm(arm)
        if groups_per_step < 1 or group_size < 1:
            raise ValueError(f"groups_per_step and group_size must be >= 1, got {groups_per_step}, {group_size}")
        self.method, self.G, self.n, self.std_normalize = method, groups_per_step, group_size, std_normalize
        self.anchors = AnchorScheduler(method.anchor_fraction, method.anchor_min, seed=seed)
        warmup = ivd_warmup_groups(method, self.anchors.n_anchors(groups_per_step), group_size)
        self.ivd = InverseVarianceWeighter(warmup_groups=warmup, window=method.ivd_window, rho_max=method.rho_max)
        # -- beyond the paper (wmrl.beyond): active anchors, conditional OD; both off by default --
        self.active = method.anchor_selection == "active"
        if self.active and not self.arm.mixes_streams:
            raise ValueError(f"method.anchor_selection='active' chooses anchor groups from the world model's "
                             f"predictions; arm {self.arm.name!r} has no such choice (use 'random', or an arm with "
                             "both streams: mix, od, ivd, wmrl)")
        self.active_anchors = ActiveAnchors(self.anchors) if self.active else None
        self.conditional = method.od_condition != "none"  # one map per stratum; else the paper's one map
        self.debiaser = (ConditionalDebiaser(method.od_min_pairs, method.od_refit_every, method.od_condition_min_pairs)
                         if self.conditional else OnlineDebiaser(method.od_min_pairs, method.od_refit_every))

    # -- routing ----------------------------------------------------------------------------
    def route(self) -> Routing:
        """This step's groups: how many to sample, which to execute, which to predict."""
        a, G = self.arm, self.G
        if not a.train:
            raise ValueError(f"arm {a.name!r} does not train; it has no steps to route")
        if a.executes_every_group:  # grpo and anchor_only: every sampled group runs in the sandbox
            n = len(self.anchors.select(G)) if a.anchors_only else G  # anchor_only samples wmrl's anchors only
            return Routing(n, np.ones(n, bool), np.zeros(n, bool))
        if self.active:  # beyond the paper: every group predicted, anchors chosen after turn 1 (choose_anchors)
            return Routing(G, None, np.ones(G, bool))
        executed = np.zeros(G, bool)
        if a.anchors:
            executed[self.anchors.select(G)] = True
        return Routing(G, executed, np.ones(G, bool))

    def choose_anchors(self, turn1_predictions) -> np.ndarray:
        """Beyond the paper, active selection: the executed mask, from the raw world-model scores of
        every group's turn 1 (``(G, n)``, NaN where a trajectory has no prediction); see
        :class:`~wmrl.beyond.ActiveAnchors`."""
        if not self.active:
            raise ValueError("choose_anchors is for method.anchor_selection='active'; under 'random' the anchors "
                             "are decided by route()")
        return self.active_anchors.choose(turn1_predictions, self.G)

    # -- the step ---------------------------------------------------------------------------
    def __call__(self, real, predicted, executed, strata=None) -> StepOutput:
        """Training rewards, fused weights and advantages of one step; updates OD and IVD.

        Args:
            real: ``(G, n)`` real rewards; NaN where a group was not executed.
            predicted: ``(G, n)`` raw world-model scores; NaN where not predicted (or ungraded).
            executed: ``(G,)`` bool, the routing's ``executed``.
            strata: ``(G, n)`` int, the stratum of the script each prediction scored: needed under
                conditional calibration (``method.od_condition``), returned for the anchor pairs
                (``StepOutput.pair_strata``) whenever given.
        """
        real = np.asarray(real, dtype=float)
        raw = np.asarray(predicted, dtype=float)
        executed = np.asarray(executed, dtype=bool)
        if real.ndim != 2 or raw.shape != real.shape or executed.shape != (real.shape[0],):
            raise ValueError(f"real {real.shape}, predicted {raw.shape} and executed {executed.shape} must be "
                             "(G, n), (G, n) and (G,)")
        if self.conditional and strata is None:  # beyond the paper: strata, for conditional OD
            raise ValueError(f"method.od_condition={self.method.od_condition!r} calibrates per stratum: pass strata "
                             f"of shape {real.shape}")
        if strata is not None:
            if np.shape(strata) != real.shape:
                raise ValueError(f"strata {np.shape(strata)} must have the shape of real {real.shape}")
            strata = np.asarray(strata, dtype=int)
        if np.isnan(real[executed]).all(axis=-1).any():
            raise ValueError("an executed group has no real reward; mark ungraded trajectories NaN, not whole groups")
        if (~executed).any() and not self.arm.world_model:
            raise ValueError(f"arm {self.arm.name!r} has no world model, so every group must be executed")
        have = ~np.isnan(raw)
        cal = raw.copy()
        if self.arm.od and have.any():  # r_tilde = f_hat(r_hat), the map before this step (per stratum: f_hat_z)
            cal[have] = (self.debiaser.transform(raw[have], strata[have]) if self.conditional
                         else self.debiaser.transform(raw[have]))
        rewards = np.where(executed[:, None], real, cal)

        anchor_groups = [g for g in np.flatnonzero(executed) if have[g].all()] if self.arm.world_model else []
        for g in anchor_groups:
            self.ivd.observe(cal[g], real[g])  # eta^2: out-of-sample residual of the calibrated world model
            if self.active:  # beyond the paper: the same residuals, by predicted score, for active selection
                self.active_anchors.observe(raw[g], cal[g], real[g])
        pairs = tuple(np.concatenate([m[g] for g in anchor_groups]) if anchor_groups else np.empty(0)
                      for m in (raw, cal, real))
        pair_strata = None if strata is None else \
            np.concatenate([strata[g] for g in anchor_groups]) if anchor_groups else np.empty(0, int)
        if self.arm.od and anchor_groups:  # OD: add this step's pairs; refit on schedule
            self.debiaser.push_many(pairs[0], pairs[2], *([pair_strata] if self.conditional else []))

        rho = self.ivd.rho if self.arm.ivd else 1.0
        weights = fused_group_weights(executed, rho, self.method.fusion)  # w = rho/D on G_E, 1/D on G_WM
        advantages = group_advantages(rewards, std_normalize=self.std_normalize)  # A = R - mean_group R
        return StepOutput(rewards, weights, advantages, self._log(rewards, executed, rho, pairs), pairs, pair_strata)

    def _log(self, rewards, executed, rho, pairs) -> dict:
        p, c, t = pairs
        fidelity = {}
        if p.size:
            fidelity = {
                "fid_spearman": float(spearmanr(p, t).statistic) if np.ptp(p) > 0 and np.ptp(t) > 0 else np.nan,
                "fid_mae_raw": float(np.abs(p - t).mean()),
                "fid_mae_cal": float(np.abs(c - t).mean()),
            }
        return {
            "rho": rho,
            "eta2": self.ivd.eta2 if self.arm.mixes_streams else np.nan,
            "eta2_cal": self.ivd.eta2_cal if self.ivd.eta2_cal is not None else np.nan,
            "od_pairs": self.debiaser.n_pairs, "od_refits": self.debiaser.n_refits,
            "anchor_fraction": self.anchors.realised_fraction,
            "n_executed_groups": int(executed.sum()), "n_groups": len(executed),
            "train_reward": float(np.nanmean(rewards)),
            **fidelity,
            **(self.active_anchors.log() if self.active else {}),
        }

    # -- checkpointing ----------------------------------------------------------------------
    def state_dict(self) -> dict:
        state = {"anchors": self.anchors.state_dict(), "debiaser": self.debiaser.state_dict(),
                 "ivd": self.ivd.state_dict()}
        if self.active:
            state["reliability"] = self.active_anchors.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.anchors.load_state_dict(state["anchors"])
        self.debiaser.load_state_dict(state["debiaser"])
        self.ivd.load_state_dict(state["ivd"])
        if self.active:
            self.active_anchors.load_state_dict(state["reliability"])
