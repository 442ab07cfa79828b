"""The trainer's configuration: every field documented, with the paper's value where it has one.

The small preset scales the paper's numbers down so that a run fits a laptop; the paper preset
keeps them. Where the small analog must deviate (Online Debiasing's warm-up, the learning rate
of a 10k-parameter policy instead of a 4B LLM), the field's comment says why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

__all__ = ["ARMS", "SCHEDULING_FIELDS", "ArmSwitches", "TrainConfig", "arm_switches", "experiment_identity"]

#: Fields that set how fast a run goes, not what it computes: two runs that differ only in these
#: are the same experiment (see :func:`experiment_identity`). The sandbox's budget is wall-clock
#: time on one dedicated core per worker, so ``workers`` must never exceed the free cores; the
#: run collector sizes it so (:func:`wmrl.experiments.collect.ensure_runs`).
SCHEDULING_FIELDS = ("workers",)


def experiment_identity(config: dict) -> dict:
    """The experiment a config dict (a stored run's, or ``TrainConfig.to_dict()``) defines.

    Its fields without the :data:`SCHEDULING_FIELDS`: what two runs must share to be the same run.
    """
    return {k: v for k, v in config.items() if k not in SCHEDULING_FIELDS}


#: The paper's arms plus the reviews' missing baseline (Sec. 4, Table 1 and Table 3).
ARMS = ("untrained", "grpo", "wm", "mix", "od", "ivd", "wmrl", "anchor_only")


@dataclass(frozen=True)
class ArmSwitches:
    """What an arm does with each group: who scores it and which corrections apply."""

    train: bool  # False only for the untrained policy
    world_model: bool  # world-model groups exist
    anchors: bool  # some groups are really executed (all of them when world_model is False)
    od: bool  # Online Debiasing (isotonic calibration) of world-model scores
    ivd: bool  # Inverse-Variance Denoising (rho-weighted fusion)
    anchors_only: bool = False  # sample only the anchor groups (same execution budget, no WM)


def arm_switches(arm: str) -> ArmSwitches:
    """The switches of an arm; an unknown arm names the known ones."""
    table = {
        "untrained": ArmSwitches(False, False, False, False, False),
        "grpo": ArmSwitches(True, False, True, False, False),
        "wm": ArmSwitches(True, True, False, False, False),
        "mix": ArmSwitches(True, True, True, False, False),
        "od": ArmSwitches(True, True, True, True, False),
        "ivd": ArmSwitches(True, True, True, False, True),
        "wmrl": ArmSwitches(True, True, True, True, True),
        "anchor_only": ArmSwitches(True, False, True, False, False, anchors_only=True),
    }
    if arm not in table:
        raise ValueError(f"unknown arm {arm!r}; choose one of {', '.join(ARMS)}")
    return table[arm]


@dataclass
class TrainConfig:
    arm: str = "wmrl"
    seed: int = 0
    steps: int = 40
    groups_per_step: int = 8  # paper: 8 groups per step
    group_size: int = 8  # paper: n = 8 trajectories per group
    max_turns: int = 4  # paper: up to 4 turns; a turn that runs ok ends the trajectory
    lr: float = 0.005  # paper 1e-6 for a 4B LLM; Adam on the small policy (KL per step ~0.01)
    kl_coef: float = 0.04  # paper: KL 0.04 to the initial policy
    ent_coef: float = 0.002  # paper: entropy bonus 0.002
    temperature: float = 1.0  # paper: sampling temperature 1.0
    std_normalize: bool = False  # GRPO advantage divided by the group std (Sec. 3.1: optional)
    anchor_fraction: float = 0.1  # paper: ~10% of groups executed
    anchor_min: int = 1  # paper: at least one anchor group per step
    od_min_pairs: int = 200  # paper: identity until 200 pairs
    od_refit_every: int = 64  # paper: refit after every 64 new pairs
    ivd_warmup_groups: int = 0  # 0: derived, warm-up ends one window after OD's first fit
    ivd_window: int = 8  # anchor groups in the running eta^2
    rho_max: float = 4.0  # paper: rho clipped to [1, 4]
    fusion: str = "normalized"  # "normalized" (the paper's equation) or "scale_only" (authors' code)
    world_model: str = "static"  # "static" (program analysis) or "llm" (SmolLM2 via transformers)
    wm_temperature: float = 0.7  # the world model samples its outcome, as an LLM at T=0.7 would
    eval_every: int = 10  # held-out evaluation every k steps (and at the end)
    eval_samples: int = 8  # paper: avg@8
    eval_tasks: int = 0  # held-out tasks per category (the smallest first); 0: all of them
    train_tasks: int = 0  # training tasks per category (the smallest first); 0: all of them
    timeout_s: float = 20.0  # execution budget per run, CPU seconds of the script's process tree (paper: 1200 s)
    memory_mb: int = 2048
    workers: int = 2  # sandbox runs in parallel, one core each (more than the free cores distorts timeouts)
    memo: bool = True  # serve repeated (task, code) from the execution memo, charged at its cost
    checkpoint_every: int = 1

    def __post_init__(self):
        arm_switches(self.arm)
        if self.fusion not in ("normalized", "scale_only"):
            raise ValueError(f"fusion must be 'normalized' or 'scale_only', got {self.fusion!r}")
        if self.world_model not in ("static", "llm"):
            raise ValueError(f"world_model must be 'static' or 'llm', got {self.world_model!r}")
        for name in ("steps", "groups_per_step", "group_size", "max_turns", "eval_samples"):
            if getattr(self, name) < 1 and not (name == "steps" and self.arm == "untrained"):
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")

    @property
    def switches(self) -> ArmSwitches:
        return arm_switches(self.arm)

    def to_dict(self) -> dict:
        return asdict(self)

    def identity(self) -> dict:
        """The experiment this config defines (:func:`experiment_identity` of :meth:`to_dict`)."""
        return experiment_identity(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict) -> TrainConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ValueError(f"unknown config field(s) {unknown}; known: {sorted(known)}")
        return cls(**d)
