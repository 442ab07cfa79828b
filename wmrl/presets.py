"""The one preset registry: named sizes of every experiment, nanoGPT style.

A preset is a flat block of values that override the documented defaults, for each thing a
preset sizes:

- ``run``: dotted overrides of :class:`wmrl.config.RunConfig` (the agent trainers);
- ``vla``: overrides of :class:`wmrl.vla.config.VLAConfig` (the embodied transfer, notebook 06);
- ``notebook``: the notebooks' own parameters (``SEEDS``, ``MAIN_ARMS``, ``THEORY_*``, ...), which
  a notebook's ``parameters`` cell leaves at ``None`` to take from here.

The CLI (``--preset``), Python (``RunConfig`` via :func:`run_config`) and the notebooks
(``PRESET = "small"``) all read this table; there is no second copy in YAML.

=============  =======  ===================================================================
preset         agent    what it is for
=============  =======  ===================================================================
smoke          grammar  seconds per run; every code path, IVD and OD warmed up (CI)
small          grammar  the laptop reproduction (``make reproduce``), 2 CPU cores
llm-smoke      llm      SmolLM2-135M on CPU, two GRPO steps of every arm in about a minute each (CI)
llm-small      llm      SmolLM2-135M on 2 CPU cores: SFT warm start, then GRPO
llm-paper      llm      the paper's settings: Qwen-class 4B/9B, 8x8 groups, 4 turns, vLLM, GPUs
=============  =======  ===================================================================

The paper's own settings train a language model (lr 1e-6 moves nothing in the grammar policy),
so they live in the ``llm-paper`` preset of the LLM agent; asking for a preset with the wrong
agent is an error that names the right one. The LLM presets' notes say how they were sized.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from wmrl.arms import get_arm
from wmrl.config import ConfigError, RunConfig, WorldModelConfig

__all__ = ["PRESETS", "Preset", "get_preset", "notebook_params", "preset_names", "run_config"]


@dataclass(frozen=True)
class Preset:
    name: str
    agent: str  # the agent kind its run settings are for ("grammar" or "llm")
    doc: str
    run: dict = field(default_factory=dict)
    vla: dict | None = None
    notebook: dict = field(default_factory=dict)
    #: its tasks must be real competitions (``python -m wmrl.tasks import``, then ``paths.pool``): a run
    #: of it on the small pool, the default ``paths.pool``, is refused before anything loads
    imported_pool: bool = False


# The notebooks' arms: which rows each table shows (training runs are shared across notebooks).
_NOTEBOOK_ARMS = {
    "MAIN_ARMS": ["untrained", "grpo", "wm", "wmrl"],  # 01_main_table: Table 1's rows
    "ABLATION_ARMS": ["grpo", "mix", "ivd", "od", "wmrl"],  # 02_ablations: Table 3's rows + GRPO
    "ANCHOR_ARMS": ["grpo", "anchor_only", "wmrl"],  # 03_anchor_only
    "COMPUTE_ARMS": ["grpo", "wm", "wmrl", "anchor_only"],  # 04_compute
    "VLA_ARMS": ["sft", "grpo", "wm", "mix", "od", "ivd", "wmrl"],  # 06_vla: Table 2's rows + Table 3's on the VLA
    # 08_fidelity_dial: the arms trained at every fidelity level, the bands they are read against, and
    # the arms that mark the program-analysis world model's profiles on the fidelity axis
    "FIDELITY_ARMS": ["wm", "mix", "od", "wmrl"],
    "FIDELITY_END_ARMS": [],  # arms trained at the dial's two ends only (its lowest and highest noise)
    "FIDELITY_BANDS": ["grpo", "anchor_only"],
    "FIDELITY_PROFILE_ARMS": ["wmrl"],
}
# 08_fidelity_dial's marks and distortion (its levels are sized per preset); the default profile's mark is
# the default runs themselves
_DEFAULT_PROFILE = WorldModelConfig().profile
_FIDELITY_DIAL = {"FIDELITY_DISTORTION": "optimistic", "FIDELITY_PROFILES": [_DEFAULT_PROFILE, "pessimistic"]}
# 07_llm_agent: which LLM preset, arms and seeds the notebook reads at each grammar preset, and its looks (seeds
# analysed at each; notebooks/_llm_agent.py declares the design). At `small`, seeds no earlier llm-small design
# ran at (0-2 and 3-5 did), in looks of four: about the two hours a look may take on 2 cores
_LLM_AGENT = {"smoke": {"LLM_PRESET": "llm-smoke", "LLM_ARMS": ["untrained", "wmrl"], "LLM_SEEDS": [0],
                        "LLM_LOOKS": [1]},
              "small": {"LLM_PRESET": "llm-small", "LLM_ARMS": ["untrained", "sft", "grpo", "wm", "wmrl"],
                        "LLM_SEEDS": list(range(6, 18)), "LLM_LOOKS": [4, 8, 12]}}
# 09_exploit_stress: the exploitable world model's region, the arms trained with it (read against their
# default runs), the arms trained with it and conditional calibration, and the reference without a world model
_STRESS = {"STRESS_EXPLOIT": "huge_capacity", "STRESS_ARMS": ["wm", "od", "wmrl"], "STRESS_FIXES": ["wmrl"],
           "STRESS_REFERENCE": "grpo", "STRESS_REGION_FAMILIES": None, "STRESS_REGION_TASKS": 0}

PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset(
        "smoke", "grammar",
        "Seconds per run; exercises every code path. One anchor group of three trajectories a step, Online "
        "Debiasing's first fit after that group and IVD's warm-up after one anchor group, so a two-step run "
        "already calibrates and weights by rho (tests can check both). The execution budget is `small`'s 2 CPU "
        "seconds: a smoke run's time is mostly its scripts that time out.",
        run={"train.steps": 2, "train.groups_per_step": 3, "train.group_size": 3, "train.max_turns": 2,
             "train.lr": 0.005, "train.train_tasks": 1, "eval.every": 2, "eval.samples": 2, "eval.tasks": 1,
             "method.anchor_fraction": 0.34, "method.od_min_pairs": 3, "method.od_refit_every": 3,
             "method.ivd_warmup_groups": 1, "method.ivd_window": 2, "sandbox.timeout_s": 2.0},
        vla={"sft.demo_states": 4, "sft.bc_epochs": 3, "sft.progress_epochs": 5, "sft.progress_prefixes": 4,
             "train.horizon": 30, "train.steps": 2, "train.groups_per_step": 2, "train.group_size": 4,
             "train.ppo_epochs": 1, "method.od_min_pairs": 4, "method.od_refit_every": 4,
             "method.ivd_warmup_groups": 1, "method.ivd_window": 2, "eval.states": 18, "eval.samples": 1},
        notebook={"SEEDS": [0], "THEORY_K": 10, "THEORY_GAMMAS": [4.0, 1.0], "THEORY_HORIZON": 600.0,
                  "THEORY_GAMMA": 2.0, "THEORY_STEPS": 120, "THEORY_MC_REPS": 300, "THEORY_BIAS_PAIRS": 512,
                  **_NOTEBOOK_ARMS, "FIDELITY_N": 12, "FIDELITY_SEED": 0,
                  "FIDELITY_LLM_N": 1,  # one SmolLM2 check of a script: about 28 s on 2 cores
                  "FIDELITY_PROFILE_PER_TASK": 1, "FIDELITY_PROFILE_TASKS": 2,
                  # 10_anchor_budget: 3 groups a step, so 5% -> 1 group (the default runs), 50% -> 2
                  "BUDGET_SHARES": [0.05, 0.5], "BUDGET_ARMS": ["wmrl", "anchor_only"], "BUDGET_ACTIVE_SHARES": [0.05],
                  **_FIDELITY_DIAL, "FIDELITY_LEVELS": [0.0, 1.0], "FIDELITY_ARMS": ["wm", "wmrl"],
                  "FIDELITY_END_ARMS": ["mix"],
                  # 11_method_regime: OD's first fit (method.od_min_pairs) against the preset's 3 (a step
                  # has 3 pairs), and IVD's warm-up (method.ivd_warmup_groups) against the preset's 1
                  "REGIME_FIRST_FITS": [2, 6], "REGIME_IVD_WARMUP": 2,
                  # 12_confirmatory: at the smoke preset it reuses the seed-0 runs of notebooks 02 and 11
                  "CONFIRM_SEEDS": [0],
                  # 13_primary: one look at seed 0, the core campaign's (not confirmatory at this preset)
                  "PRIMARY_SEEDS": [0], "PRIMARY_LOOKS": [1],
                  # 15_redeclared: one look at seed 0 (a code check, not a claim)
                  "REDECLARED_SEEDS": [0], "REDECLARED_LOOKS": [1],
                  # 09_exploit_stress: the region's real outcomes on one task, for one family in it and one not
                  **_STRESS, "STRESS_REGION_FAMILIES": ["forest", "knn"], "STRESS_REGION_TASKS": 1,
                  **_LLM_AGENT["smoke"]},
    ),
    Preset(
        "small", "grammar",
        "The laptop reproduction (2 CPU cores, every arm x 3 seeds inside `make reproduce`): the paper's 8 "
        "groups a step (so one anchor group is 12.5%, as in the paper's App. D) of 4 trajectories instead of "
        "8, 3 turns instead of 4, 16 steps, a 2 s execution budget (CPU seconds of the solution's process "
        "tree), avg@4 on every held-out task every 3 steps (learning curves of 7 points: steps 0, 3, ..., 15 "
        "and 16) and avg@8 (the paper's) at the end. The budget is short because a timeout costs the whole "
        "budget and teaches only that the script was slow, while the scripts that run ok finish well within "
        "it. Online Debiasing's schedule is scaled with the run: the paper waits for 200 pairs (25 steps of "
        "one anchor group of 8) in runs of hundreds of steps; here the first fit comes after 16 pairs (4 "
        "steps) and a refit every 8 pairs (2 steps).",
        run={"train.steps": 16, "train.groups_per_step": 8, "train.group_size": 4, "train.max_turns": 3,
             "train.lr": 0.01, "eval.every": 3, "eval.samples": 4, "eval.final_samples": 8, "method.od_min_pairs": 16,
             "method.od_refit_every": 8, "method.ivd_window": 4, "sandbox.timeout_s": 2.0},
        vla={},  # the documented defaults of wmrl.vla.config.VLAConfig are this preset's sizes
        notebook={"SEEDS": [0, 1, 2], "THEORY_K": 10, "THEORY_GAMMAS": [4.0, 2.0, 1.0, 0.5],
                  "THEORY_HORIZON": 2400.0, "THEORY_GAMMA": 2.0, "THEORY_STEPS": 1000, "THEORY_MC_REPS": 4000,
                  "THEORY_BIAS_PAIRS": 4096, **_NOTEBOOK_ARMS, "FIDELITY_N": 96, "FIDELITY_SEED": 0,
                  "FIDELITY_LLM_N": 6, "FIDELITY_PROFILE_PER_TASK": 8,
                  "FIDELITY_PROFILE_TASKS": 0,
                  # 10_anchor_budget: of 8 groups, 5% and 12.5% -> 1 (the default runs), 25% -> 2, 50% -> 4
                  "BUDGET_SHARES": [0.05, 0.125, 0.25, 0.5], "BUDGET_ARMS": ["wmrl", "anchor_only"],
                  "BUDGET_ACTIVE_SHARES": [0.125, 0.25],
                  # 08_fidelity_dial: an oracle run executes every script to know its truth, so it costs
                  # about what a grpo run does; wmrl and the pure world model (D1, D3) at three levels
                  # (18 runs) beside the default runs, which mark the default profile (notebook 05 compares the others);
                  # mix and od at the two ends only (12 runs): at the middle level too (6 more, about 25
                  # minutes), the dial campaign would pass its 2 hours
                  **_FIDELITY_DIAL, "FIDELITY_LEVELS": [0.0, 0.2, 1.0], "FIDELITY_ARMS": ["wm", "wmrl"],
                  "FIDELITY_END_ARMS": ["mix", "od"],
                  "FIDELITY_PROFILES": [_DEFAULT_PROFILE],
                  # 11_method_regime: OD's first fit against the preset's 16 pairs (a run has 64; the paper
                  # waits for 200), and IVD warm after 4 anchor groups against the default 8 (half the run)
                  "REGIME_FIRST_FITS": [8, 32], "REGIME_IVD_WARMUP": 4,
                  # 12_confirmatory: seeds no notebook trained or looked at before its claims were fixed
                  "CONFIRM_SEEDS": [3, 4, 5],
                  # 13_primary: the primary family's seeds, which no other notebook trains, analysed in two
                  # looks (8 seeds, then all 12; notebooks/_primary.py)
                  "PRIMARY_SEEDS": list(range(6, 18)), "PRIMARY_LOOKS": [8, 12],
                  # 15_redeclared: the family declared again at seeds no run had used, in looks of 12
                  # seeds up to 48 (notebooks/_redeclared.py)
                  "REDECLARED_SEEDS": list(range(18, 66)), "REDECLARED_LOOKS": [12, 24, 36, 48],
                  # 09_exploit_stress: 12 runs of about 3 minutes (the exploited scripts time out when executed)
                  **_STRESS, **_LLM_AGENT["small"]},
    ),
)}
PRESETS.update({p.name: p for p in (
    Preset(
        "llm-smoke", "llm",
        "CI for the LLM agent on TRL: SmolLM2-135M-Instruct on CPU, two steps of two groups of two, two turns of "
        "at most 48 tokens (replies are cut short, so most fail fast: the point is every code path, not "
        "learning), one anchor group (50%), the LLM world model's holistic prompt (its 48-token replies are "
        "mostly cut short and default to pass, which this preset alone allows: world_model.max_defaulted_share "
        "1.0), Online Debiasing after two pairs and IVD warm after one anchor group; a 2-step SFT warm start for "
        "the sft arm.",
        run={"train.steps": 2, "train.groups_per_step": 2, "train.group_size": 2, "train.max_turns": 2,
             "train.lr": 1e-5, "train.train_tasks": 1, "train.checkpoint_every": 2, "eval.every": 2,
             "eval.samples": 1, "eval.tasks": 1, "method.anchor_fraction": 0.5, "method.od_min_pairs": 2,
             "method.od_refit_every": 2, "method.ivd_warmup_groups": 1, "method.ivd_window": 2,
             "sandbox.timeout_s": 5.0, "world_model.kind": "llm", "llm.max_new_tokens": 48, "llm.obs_max_tokens": 64,
             "llm.sft_steps": 0, "llm.sft_per_task": 2, "llm.sft_batch": 2, "llm.micro_batch": 2,
             "world_model.mode": "holistic", "world_model.max_new_tokens": 48,
             "world_model.max_defaulted_share": 1.0},
    ),
    Preset(
        "llm-small", "llm",
        "The LLM agent (SmolLM2-135M-Instruct) on 2 CPU cores, sized so that four seeds of every arm (a look of "
        "notebook 07) train within the campaign's two hours (`python -m bench.llm_bench` times a step and measures the runnable "
        "rate and the warm start's targets, on the training tasks). The agent chooses and does not code: it "
        "replies with a plan, the grammar's design decisions as key=value lines (llm.contract=plan), which the "
        "grammar's renderer turns into the script, in one turn of at most 64 tokens; the world model is the "
        "program-analysis model (world_model.kind=static), since the frozen 135M policy does not tell one "
        "script from another (notebook 05). Every trained arm at every seed starts from one supervised warm start "
        "(TRL's SFTTrainer, 30 steps of 4 at lr 5e-4, drawn and fitted at seed 0: a rank-8 LoRA adapter on every "
        "linear layer, kept in results/warm_starts/) on the plans of the grammar habits' design "
        "decisions for the training tasks, 8 drawn per task, the failing ones included; GRPO then takes 8 steps "
        "of 4 groups of 4 (one anchor group, 25%) at lr 3e-5 without the KL term (a quarter of the update's "
        "time goes to the reference model's forward pass, and eight steps stay close to the start); rollouts and "
        "evaluation sample at temperature 0.7. Online Debiasing fits first after 8 pairs (two steps) and "
        "refits every step, IVD weights by rho after 3 anchor groups; avg@8 on every held-out task at the end "
        "only. Departures from the paper, each listed in notebook 07: the warm start, the plan contract, one "
        "turn, the world model, the temperature, the learning rate and the KL term.",
        run={"train.steps": 8, "train.groups_per_step": 4, "train.group_size": 4, "train.max_turns": 1,
             "train.lr": 3e-5, "train.kl_coef": 0.0, "eval.every": 9, "eval.samples": 8,
             "method.anchor_fraction": 0.25, "method.od_min_pairs": 8, "method.od_refit_every": 4,
             "method.ivd_window": 2, "method.ivd_warmup_groups": 3, "sandbox.timeout_s": 10.0,
             "world_model.kind": "static", "llm.contract": "plan", "train.temperature": 0.7,
             "llm.sft_targets": "habits", "llm.max_new_tokens": 64, "llm.obs_max_tokens": 128, "llm.sft_steps": 30,
             "llm.sft_per_task": 8, "llm.sft_batch": 4, "llm.micro_batch": 4, "llm.sft_seed": 0,
             "llm.sft_lora_rank": 8, "llm.sft_lr": 5e-4},
    ),
    Preset(
        "llm-paper", "llm",
        "The paper's settings (Sec. 4.1): a Qwen-class 4B/9B instruct model, 8 groups x 8 trajectories a step, "
        "4 turns of 4096 tokens, observations cut to 1024, lr 1e-6, KL 0.04, entropy 0.002 (TRL's dapo loss: "
        "policy, KL and entropy per token of the step), temperature 1.0, "
        "~10% anchors (one group of eight), OD after 200 pairs and every 64, rho <= 4, avg@8, a 1200 s "
        "execution budget in Docker sandboxes, vLLM generation; launched with accelerate (the command is in "
        "wmrl/trainer/llm/accelerate/paper_8gpu.yaml). A step is the 64 trajectories in total, whatever the "
        "number of processes (4 on the 8-GPU node, whose other 4 GPUs serve the world model and the sandboxes: "
        "16 rows each). Sized to fit a 4B model (Qwen3-4B: 36 layers, hidden "
        "2560, vocabulary 151,936) on 80 GB cards, assuming 4 processes under FSDP full sharding in bf16: "
        "fp32 weights, gradients and Adam's two moments are 16 bytes a parameter, 64 GB over 4 cards (16 GB "
        "each), the reference model for the KL (an fp32 copy, sharded too) another 4 GB each; a trajectory reaches ~21k tokens (a prompt "
        "and 4 turns of 4096 + 1024 + 32), so one row per forward/backward pass (its logits are ~6.4 GB in "
        "bf16, ~13 GB upcast to fp32 for the log-softmax) with gradient checkpointing (activations kept at "
        "36 layer boundaries, ~4 GB, instead of every layer's), leaving room for the colocated vLLM engine's "
        "weights and KV cache. A checkpoint (weights and optimiser state, ~64 GB, each process writing its own "
        "shard) every 10 steps, not every "
        "step: a step takes minutes to hours (executions of up to 1200 CPU s), so a kill loses at most 10. "
        "Each execution gets a slot like a Kaggle GPU notebook's: one GPU, 4 CPU cores, 32 GB of memory and "
        "8 GB each of /tmp and /dev/shm (a DataLoader's workers pass batches through /dev/shm); eight such slots "
        "on the node's three sandbox GPUs take 32 cores and 256 GB of host memory, 64 GB of it shared memory.",
        run={"agent.model": "Qwen/Qwen3-4B", "train.steps": 400, "train.groups_per_step": 8, "train.group_size": 8,
             "train.max_turns": 4, "train.lr": 1e-6, "eval.every": 50, "eval.samples": 8,
             "method.od_min_pairs": 200, "method.od_refit_every": 64, "sandbox.timeout_s": 1200.0,
             "sandbox.backend": "docker", "sandbox.gpus": 1, "sandbox.gpu_devices": "5,6,7",
             "sandbox.cpus": 4.0, "sandbox.memory_mb": 32768, "sandbox.work_mb": 8192,
             "sandbox.image": "wmrl-sandbox:cuda", "sandbox.workers": 8, "world_model.kind": "llm",
             "world_model.backend": "openai", "world_model.base_url": "http://127.0.0.1:8001/v1",
             "world_model.model": "Qwen/Qwen3-4B", "llm.max_new_tokens": 4096, "llm.obs_max_tokens": 1024,
             "llm.micro_batch": 1, "llm.gradient_checkpointing": True, "llm.device": "auto",
             "train.checkpoint_every": 10, "llm.generation": "vllm", "llm.vllm_mode": "colocate",
             "world_model.mode": "decomposed", "world_model.max_new_tokens": 512, "llm.loss_type": "dapo"},
        imported_pool=True,
    ),
)})

#: Presets that were renamed, and what to use instead.
_MOVED = {"paper": "the paper's settings train a language model: use --agent llm --preset llm-paper "
                   "(at lr 1e-6 the grammar policy would not move)"}


def preset_names(agent: str | None = None) -> list[str]:
    """Every preset's name (of one agent kind, if given)."""
    return [n for n, p in PRESETS.items() if agent is None or p.agent == agent]


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name lists the known ones."""
    if name in _MOVED:
        raise ConfigError(f"preset {name!r}: {_MOVED[name]}")
    if name not in PRESETS:
        raise ConfigError(f"unknown preset {name!r}; choose one of {preset_names()}")
    return PRESETS[name]


def run_config(arm: str, preset: str = "small", seed: int = 0, overrides: dict | None = None,
               agent: str | None = None) -> RunConfig:
    """The :class:`RunConfig` of ``arm`` at ``seed`` under ``preset``, with dotted ``overrides`` on top.

    ``agent`` (optional) must match the preset's agent: a grammar preset never silently runs an LLM,
    nor the other way round.
    """
    p = get_preset(preset)
    if agent is not None and agent != p.agent:
        others = preset_names(agent)
        raise ConfigError(f"preset {preset!r} is for the {p.agent} agent, not {agent!r}; "
                          f"presets for the {agent} agent: {others or 'none yet'}")
    cfg = RunConfig(arm=arm, seed=seed).with_overrides({"agent.kind": p.agent, **p.run, **(overrides or {})})
    if not get_arm(arm).train:  # an arm that never trains has no training settings to differ by
        cfg = cfg.with_overrides({"train.steps": 0})
    return cfg


def notebook_params(name: str) -> dict:
    """The notebooks' parameters of preset ``name`` (a copy: callers may change it)."""
    return copy.deepcopy(get_preset(name).notebook)
