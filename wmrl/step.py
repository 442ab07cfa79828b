r"""One WMRL step, reward side: Algorithm 1 of the paper in one object.

Every trainer (the grammar agent's, the LLM agent's on TRL, the VLA's) and the theory notebook's
simulator call :class:`WMRLStep`; none of them routes groups, calibrates scores or weights
gradients itself. The object is pure numpy: it sees rewards and scores, never a policy.

Algorithm 1, per training step, as :meth:`WMRLStep.route` and :meth:`WMRLStep.__call__` run it:

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

This class is the paper's method only. What goes beyond it (active anchors, conditional OD,
regions) is :class:`wmrl.beyond.BeyondStep`, a subclass that overrides the routing and the hooks
marked below (``read_rollout``, ``_calibrate``, ``_audit``, ``_push_pairs``); a configuration
that asks for any of it is refused here with the name of that class.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import spearmanr

from wmrl.advantage import group_advantages
from wmrl.anchor import AnchorScheduler
from wmrl.arms import Arm, get_arm
from wmrl.calibration import OnlineDebiaser
from wmrl.config import MethodConfig
from wmrl.denoise import InverseVarianceWeighter, fused_group_weights

__all__ = ["Routing", "StepOutput", "WMRLStep", "beyond_paper_fields", "ivd_warmup_groups"]


# ================================================================================================
# What a step hands the trainer
# ================================================================================================
@dataclass(frozen=True)
class Routing:
    """Which groups a step samples, executes and predicts."""

    n_groups: int  # groups to sample (fewer than groups_per_step only for anchor_only)
    #: (n_groups,) bool: run in the sandbox; real reward and real feedback. None: not decided yet,
    #: ``choose`` decides from turn 1's world-model scores (active selection, :mod:`wmrl.beyond`)
    executed: np.ndarray | None
    predicted: np.ndarray  # (n_groups,) bool: scored by the world model
    #: maps turn 1's ``(n_groups, n)`` raw world-model scores to ``executed``; None when it is decided
    choose: Callable[[np.ndarray], np.ndarray] | None = None

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
    #: the anchor groups whose pairs ``pairs`` holds, in order (executed, and predicted in full)
    anchor_groups: list = field(default_factory=list)

    @property
    def pair_columns(self) -> tuple[np.ndarray, ...]:
        """The anchor pairs as the run's ``pairs.parquet`` columns (:data:`wmrl.runs.PAIR_COLUMNS`)."""
        return self.pairs


def ivd_warmup_groups(method: MethodConfig, anchors_per_step: int, group_size: int) -> int:
    """Anchor groups before :math:`\\eta^2_{cal}` is recorded.

    ``method.ivd_warmup_groups`` when set; else one full window after Online Debiasing's first fit,
    so that :math:`\\eta^2_{cal}` measures the *calibrated* world model, as the paper defines it.
    """
    if method.ivd_warmup_groups:
        return method.ivd_warmup_groups
    per_step = max(1, anchors_per_step) * group_size
    return math.ceil(method.od_min_pairs / per_step) * max(1, anchors_per_step) + method.ivd_window


def beyond_paper_fields(method: MethodConfig) -> list[str]:
    """The fields of ``method`` set to something the paper does not do (empty: the paper's method)."""
    return [f"method.{name}={value!r}" for name, value, paper in (
        ("anchor_selection", method.anchor_selection, "random"), ("od_condition", method.od_condition, "none"))
        if value != paper]


# ================================================================================================
# The step
# ================================================================================================
class WMRLStep:
    """Anchor routing, Online Debiasing, the IVD audit and the fused group weights of one arm.

    Args:
        arm: an arm name or :class:`~wmrl.arms.Arm`.
        method: the anchor / OD / IVD knobs (the paper's: see :func:`beyond_paper_fields`).
        groups_per_step: groups a step samples (G).
        group_size: trajectories per group (n).
        seed: seeds the anchor scheduler; two processes with the same seed select the same groups.
        std_normalize: divide advantages by the group's std (Sec. 3.1: optional).
    """

    #: whether this class implements the fields of :func:`beyond_paper_fields` (:class:`wmrl.beyond.BeyondStep`)
    beyond_paper = False

    def __init__(self, arm: str | Arm, method: MethodConfig, groups_per_step: int, group_size: int, seed: int = 0,
                 std_normalize: bool = False):
        self.arm = get_arm(arm)
        if groups_per_step < 1 or group_size < 1:
            raise ValueError(f"groups_per_step and group_size must be >= 1, got {groups_per_step}, {group_size}")
        if not self.beyond_paper and (beyond := beyond_paper_fields(method)):
            raise ValueError(f"{', '.join(beyond)} goes beyond the paper: build wmrl.beyond.BeyondStep "
                             "(wmrl.beyond.make_step picks the step a configuration needs)")
        self.method, self.G, self.n, self.std_normalize = method, groups_per_step, group_size, std_normalize
        self.anchors = AnchorScheduler(method.anchor_fraction, method.anchor_min, seed=seed)
        warmup = ivd_warmup_groups(method, self.anchors.n_anchors(groups_per_step), group_size)
        self.ivd = InverseVarianceWeighter(warmup_groups=warmup, window=method.ivd_window, rho_max=method.rho_max)
        self.debiaser = OnlineDebiaser(method.od_min_pairs, method.od_refit_every)

    # -- 1. route: which groups are executed (G_E), which predicted ----------------------------
    def route(self) -> Routing:
        """This step's groups: how many to sample, which to execute, which to predict."""
        a, G = self.arm, self.G
        if not a.train:
            raise ValueError(f"arm {a.name!r} does not train; it has no steps to route")
        if a.executes_every_group:  # grpo and anchor_only: every sampled group runs in the sandbox
            n = len(self.anchors.select(G)) if a.anchors_only else G  # anchor_only samples wmrl's anchors only
            return Routing(n, np.ones(n, bool), np.zeros(n, bool))
        executed = np.zeros(G, bool)
        if a.anchors:
            executed[self.anchors.select(G)] = True
        return Routing(G, executed, np.ones(G, bool))

    # -- 2-5. the step: OD, the eta^2 audit, OD's pairs, IVD weights and advantages ----------------
    def __call__(self, real, predicted, executed) -> StepOutput:
        """Training rewards, fused weights and advantages of one step; updates OD and IVD.

        Args:
            real: ``(G, n)`` real rewards; NaN where a group was not executed.
            predicted: ``(G, n)`` raw world-model scores; NaN where not predicted (or ungraded).
            executed: ``(G,)`` bool, the routing's ``executed``.
        """
        real, raw, executed = self._checked(real, predicted, executed)
        # 2. OD: r_tilde = f_hat(r_hat) with the map *before* this step; training rewards R
        have = ~np.isnan(raw)
        cal = raw.copy()
        if self.arm.od and have.any():
            cal[have] = self._calibrate(raw, have)
        rewards = np.where(executed[:, None], real, cal)
        # 3. audit: eta^2, the out-of-sample residual of the calibrated world model on the anchor groups
        anchor_groups = [g for g in np.flatnonzero(executed) if have[g].all()] if self.arm.world_model else []
        self._audit(anchor_groups, raw, cal, real)
        pairs = tuple(np.concatenate([m[g] for g in anchor_groups]) if anchor_groups else np.empty(0)
                      for m in (raw, cal, real))
        # 4. OD learns: this step's anchor pairs (r_hat, r); refit on schedule
        if self.arm.od and anchor_groups:
            self._push_pairs(pairs, anchor_groups)
        # 5. IVD: w = rho/D on G_E, 1/D on G_WM; GRPO: A = R - mean_group R
        rho = self.ivd.rho if self.arm.ivd else 1.0
        weights = fused_group_weights(executed, rho, self.method.fusion)
        advantages = group_advantages(rewards, std_normalize=self.std_normalize)
        return StepOutput(rewards, weights, advantages, self._log(rewards, executed, rho, pairs), pairs, anchor_groups)

    # -- the hooks :class:`wmrl.beyond.BeyondStep` overrides -----------------------------------------
    def read_rollout(self, groups) -> None:
        """The trainer shows the step the trajectories it is about to score. The paper's step reads
        only their rewards and scores (:meth:`__call__`); :class:`wmrl.beyond.BeyondStep` reads the
        region of each scored script."""

    def _calibrate(self, raw: np.ndarray, have: np.ndarray) -> np.ndarray:
        """r_tilde of the predicted entries ``raw[have]``: one isotonic map of the score."""
        return self.debiaser.transform(raw[have])

    def _audit(self, anchor_groups: list, raw: np.ndarray, cal: np.ndarray, real: np.ndarray) -> None:
        """Feed each complete anchor group's calibrated scores and real rewards to the eta^2 estimate."""
        for g in anchor_groups:
            self.ivd.observe(cal[g], real[g])

    def _push_pairs(self, pairs: tuple, anchor_groups: list) -> None:
        """Add the anchor pairs (raw prediction, real) to Online Debiasing."""
        self.debiaser.push_many(pairs[0], pairs[2])

    # -- input checks and the log --------------------------------------------------------------
    def _checked(self, real, predicted, executed) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        real = np.asarray(real, dtype=float)
        raw = np.asarray(predicted, dtype=float)
        executed = np.asarray(executed, dtype=bool)
        if real.ndim != 2 or raw.shape != real.shape or executed.shape != (real.shape[0],):
            raise ValueError(f"real {real.shape}, predicted {raw.shape} and executed {executed.shape} must be "
                             "(G, n), (G, n) and (G,)")
        if np.isnan(real[executed]).all(axis=-1).any():
            raise ValueError("an executed group has no real reward; mark ungraded trajectories NaN, not whole groups")
        if (~executed).any() and not self.arm.world_model:
            raise ValueError(f"arm {self.arm.name!r} has no world model, so every group must be executed")
        return real, raw, executed

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
        }

    # -- checkpointing -------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"anchors": self.anchors.state_dict(), "debiaser": self.debiaser.state_dict(),
                "ivd": self.ivd.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.anchors.load_state_dict(state["anchors"])
        self.debiaser.load_state_dict(state["debiaser"])
        self.ivd.load_state_dict(state["ivd"])
