"""The VLA analog's typed configuration: one :class:`VLAConfig` per run, sized by the preset registry.

A run is :class:`VLAConfig`: the arm and seed, and one section per stage,

=============  ==========================================================================
``sft``        the starting point: DART demos, behaviour cloning, the progress world model
``train``      GRPO post-training (groups, rollouts, horizon, clipped surrogate)
``method``     Algorithm 1's knobs, :class:`wmrl.config.MethodConfig` (anchors, OD, IVD)
``eval``       the evaluation on the fixed initial states
=============  ==========================================================================

Fields are addressed by their dotted names, as in :mod:`wmrl.config`: ``--set
method.od_min_pairs=16`` on the CLI, ``{"train.steps": 20}`` from Python and in a preset's ``vla``
block (:mod:`wmrl.presets`, the only place presets live). The whole configuration is the run's
identity: the SFT cache is keyed by the ``sft`` section and the seed, a run folder's checkpoint
and result by the whole config (nothing here only schedules a run: worker processes and output
folders are arguments, not configuration).

Arms come from :mod:`wmrl.arms`; ``untrained`` does not apply (the VLA starts from its SFT
policy, the arm ``sft``).

Sizing (``make bench``'s vla section times it): a Meta-World step costs a millisecond or two on
one free core, so a GRPO step of ``groups_per_step * group_size`` rollouts of up to ``horizon`` steps
costs seconds, and the final evaluation (3 tasks x ``eval.states`` x ``eval.samples`` rollouts)
is the largest single item. The defaults are the ``small`` preset.

Anchor schedule at this scale (why not the paper's 200/64): one anchor group of ``group_size``
rollouts a step yields 8 pairs, so the paper's 200-pair warm-up would never end in a short run.
Online Debiasing first fits after ``method.od_min_pairs`` = 24 pairs (3 steps) and refits every
step after; IVD's warm-up (``method.ivd_warmup_groups`` = 4 anchor groups) ends one step later,
so eta^2_cal measures the calibrated world model, as the paper defines it.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field

from wmrl.arms import arm_names, get_arm
from wmrl.config import ConfigError, ConfigTree, MethodConfig, at_least, check_section
from wmrl.presets import get_preset

__all__ = ["N_STATES", "N_TRAIN", "TASKS", "VLA_ARMS", "SFTConfig", "VLAConfig", "VLAEvalConfig", "VLATrainConfig",
           "vla_config"]

# reach: one stage; push: reach then push; pick-place: reach, grasp, lift, carry (multi-stage).
TASKS = ("reach-v3", "push-v3", "pick-place-v3")
N_STATES = 50   # fixed initial states per task, as LIBERO's 50 per task
N_TRAIN = 16    # the first 16 are the training (in-domain) states
#: Every arm of :mod:`wmrl.arms` but ``untrained``: the VLA's starting point is ``sft``.
VLA_ARMS = tuple(a for a in arm_names() if a != "untrained")


@dataclass(frozen=True)
class SFTConfig:
    """The starting point of every arm of a seed: demos, behaviour cloning, the frozen world model."""

    SECTION: typing.ClassVar[str] = "sft"
    demo_states: int = 16  # DART demos from the first k training states of each task
    demos_per_state: int = 1
    demo_noise: float = 0.3  # std of the Gaussian noise on the executed expert action (DART)
    demo_horizon: int = 150  # steps a demo may take
    bc_epochs: int = 20
    bc_lr: float = 1e-3
    bc_batch: int = 256
    progress_epochs: int = 100  # the progress estimator (world model), trained on the same demos
    progress_lr: float = 1e-3
    progress_prefixes: int = 16  # demo prefixes per demo, each labelled with its share of the demo

    def __post_init__(self):
        check_section(self)
        at_least(self, demo_states=1, demos_per_state=1, demo_horizon=1, bc_epochs=0, bc_batch=1,
                 progress_epochs=0, progress_prefixes=1)
        if self.demo_states > N_TRAIN:
            raise ConfigError(f"sft.demo_states must be <= {N_TRAIN} (the training states), got {self.demo_states}")


@dataclass(frozen=True)
class VLATrainConfig:
    """GRPO post-training: the clipped surrogate on per-step likelihood ratios (:mod:`wmrl.vla.train`)."""

    SECTION: typing.ClassVar[str] = "train"
    steps: int = 12
    groups_per_step: int = 4  # (task, training state) pairs a step; paper: 8 groups
    group_size: int = 8  # rollouts per group; paper: n = 8
    horizon: int = 100  # environment steps a rollout may take (it ends at its first success)
    lr: float = 3e-4  # at 1e-3 a first small run collapsed (training-state success 0.47 -> 0.0 by step 10)
    ppo_epochs: int = 4  # clipped-surrogate epochs on a step's rollouts
    clip: float = 0.2  # the surrogate's epsilon
    std_normalize: bool = True  # divide group advantages by the group std (Sec. 3.1: optional)

    def __post_init__(self):
        check_section(self)
        at_least(self, steps=0, groups_per_step=1, group_size=1, horizon=1, ppo_epochs=1)
        if not 0.0 < self.clip < 1.0:
            raise ConfigError(f"train.clip must be in (0, 1), got {self.clip}")


@dataclass(frozen=True)
class VLAEvalConfig:
    """The evaluation: ``samples`` rollouts from each of the first ``states`` fixed initial states."""

    SECTION: typing.ClassVar[str] = "eval"
    states: int = 50  # the first k of the 50 states per task (0-15 in-domain, 16-49 OOD)
    samples: int = 2  # rollouts per state (avg@k, Best@k, All@k)

    def __post_init__(self):
        check_section(self)
        at_least(self, states=1, samples=1)
        if self.states > N_STATES:
            raise ConfigError(f"eval.states must be <= {N_STATES} (the fixed initial states per task), "
                              f"got {self.states}")


def _vla_method() -> MethodConfig:
    """Algorithm 1's knobs at this scale (see the module docstring for the schedule)."""
    return MethodConfig(od_min_pairs=24, od_refit_every=8, ivd_warmup_groups=4, ivd_window=6)


@dataclass(frozen=True)
class VLAConfig(ConfigTree):
    """One VLA run: an arm at a seed, and every section. :meth:`to_dict` is the run's identity."""

    arm: str = "wmrl"
    seed: int = 0
    sft: SFTConfig = field(default_factory=SFTConfig)
    train: VLATrainConfig = field(default_factory=VLATrainConfig)
    method: MethodConfig = field(default_factory=_vla_method)
    eval: VLAEvalConfig = field(default_factory=VLAEvalConfig)

    def __post_init__(self):
        if self.arm == "untrained":
            raise ConfigError("arm 'untrained' does not apply to the VLA: every arm starts from the behaviour-"
                              f"cloned policy, evaluated as arm 'sft'; choose one of {', '.join(VLA_ARMS)}")
        if self.arm not in VLA_ARMS:
            raise ConfigError(f"unknown arm {self.arm!r}; choose one of {', '.join(VLA_ARMS)}")
        self.check_arm_and_seed()
        if self.method.anchor_selection != "random":
            raise ConfigError(f"method.anchor_selection={self.method.anchor_selection!r} is not supported by the VLA "
                              "trainer: its progress estimator scores a rollout only after it ends, so there is no "
                              "turn 1 to choose anchors from; use 'random' (the paper's rule)")
        if self.method.od_condition != "none":
            raise ConfigError(f"method.od_condition={self.method.od_condition!r} conditions on a feature of a solution "
                              "script; a VLA rollout has none: use 'none' (the paper's one map)")


def vla_config(arm: str, preset: str = "small", seed: int = 0, overrides: dict | None = None) -> VLAConfig:
    """The :class:`VLAConfig` of ``arm`` at ``seed`` under ``preset`` (its ``vla`` block), ``overrides`` on top."""
    p = get_preset(preset)
    if p.vla is None:
        raise ConfigError(f"preset {preset!r} has no VLA settings (its 'vla' block in wmrl/presets.py is None)")
    base = VLAConfig(arm=arm, seed=seed).with_overrides(p.vla)
    if not get_arm(arm).train:  # sft is evaluated as it starts: no training settings to differ by
        base = base.with_overrides({"train.steps": 0})
    return base.with_overrides(overrides)
