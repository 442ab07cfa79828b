"""The LLM agent's training run: warm start, GRPO on TRL, held-out evaluation, the run folder.

A thin driver, like the grammar agent's (:mod:`wmrl.trainer.grammar`): the WMRL step
(:mod:`wmrl.step`) does the method, TRL's GRPOTrainer the policy update, :mod:`.grpo` the glue;
this module builds the parts from the :class:`~wmrl.config.RunConfig`, resumes from the last
checkpoint if there is one, and writes the same files as a grammar run
(:func:`wmrl.runs.write_run`), so notebooks read both alike.

Several processes (``torchrun``, ``accelerate launch``): a step is the preset's groups in total,
shared over the processes (:func:`trainer_args`); every process rolls out its share of the step
and of each held-out evaluation (:func:`evaluate`), and the rows are gathered; the ledgers are the
sums of every process's bills; the main process alone writes the run folder. The process group
waits for a collective as long as the sandbox's budget lets one process keep the others waiting
(:func:`collective_timeout_s`).

Arms: ``untrained`` evaluates the instruct model as it ships; ``sft`` the supervised warm start
(``llm.sft_steps`` > 0); the trained arms start from the warm start when there is one, else from
the instruct model, and run GRPO with the arm's routing and corrections.

The frozen world model is the initial policy: the same weights the trained arms start from,
loaded once more and never updated (``world_model.model`` overrides it).
"""

from __future__ import annotations

import json
import math
import os
import warnings
import weakref
from datetime import timedelta
from pathlib import Path

import numpy as np

from wmrl import record as clock
from wmrl.agent.llm.model import llm_device, training_precision
from wmrl.config import ConfigError, RunConfig, experiment_identity
from wmrl.ledger import ComputeLedger
from wmrl.models import smollm2_folder
from wmrl.runs import RESULTS, per_category, write_run
from wmrl.sandbox.local import default_wall_timeout
from wmrl.step import WMRLStep
from wmrl.tasks import data_root
from wmrl.trainer.components import make_memo, make_oracle_memo, make_sandbox, make_world_model
from wmrl.trainer.llm.generate import TransformersGenerator, VLLMGenerator
from wmrl.trainer.llm.grpo import STATE_FILE, RunLog, WMRLCallback, WMRLReward, WMRLRollout, prompt_key
from wmrl.trainer.llm.rollout import RolloutSettings, rollout
from wmrl.trainer.rollout import Scorer

__all__ = ["COLLECTIVE_MARGIN_S", "GENERATION_BATCH", "collective_timeout_s", "eval_generator", "evaluate",
           "gpu_peak_gib", "initial_model", "prompt_schedule", "rollout_settings", "train", "trainer_args",
           "warm_starts"]

#: Rows sampled together by the in-process generator (its KV cache is small next to the update's logits).
GENERATION_BATCH = 8
#: What a collective may wait beyond the executions (generation, the world model, the update): torch's
#: own default process-group timeout.
COLLECTIVE_MARGIN_S = 1800.0


def rollout_settings(cfg: RunConfig) -> RolloutSettings:
    """The rollout's settings; its prompts state the limits of the sandbox ``cfg.sandbox`` builds."""
    return RolloutSettings(sandbox=make_sandbox(cfg.sandbox).facts, contract=cfg.llm.contract,
                           max_turns=cfg.train.max_turns, max_new_tokens=cfg.llm.max_new_tokens,
                           obs_max_tokens=cfg.llm.obs_max_tokens, enable_thinking=cfg.llm.enable_thinking)


def base_model(cfg: RunConfig) -> Path:
    """The instruct model as a Hugging Face folder (SmolLM2 is dequantised from its GGUF on first use)."""
    if cfg.agent.model == "smollm2-135m":
        return smollm2_folder()
    return Path(cfg.agent.model)


def initial_model(cfg: RunConfig, pool, progress: bool = False, build: bool = True) -> tuple[Path, dict | None]:
    """The policy a run starts from (the warm start when ``llm.sft_steps`` > 0) and the SFT record.

    ``build=False`` (a run of several processes) refuses to build a missing warm start: it is trained
    by one process, before the run (:func:`wmrl.trainer.llm.sft.sft_folder`)."""
    base = base_model(cfg)
    if cfg.arm == "untrained" or cfg.llm.sft_steps == 0:
        if cfg.arm == "sft":
            raise ValueError("arm 'sft' needs a warm start: set llm.sft_steps > 0")
        return base, None
    from wmrl.trainer.llm.sft import sft_folder

    return sft_folder(cfg, base, per_category(pool.train, cfg.train.train_tasks), data_root() / "models", progress,
                      build=build, kept=warm_starts(cfg))


def warm_starts(cfg: RunConfig) -> Path:
    """Where LoRA warm starts are kept: ``<results>/warm_starts`` (``paths.results_dir``, else the repository's)."""
    return Path(cfg.paths.results_dir or RESULTS) / "warm_starts"


def evaluate(model, tokenizer, tasks, cfg: RunConfig, scorer: Scorer, step: int, generator=None) -> list[dict]:
    """avg@k held-out leaderboard percentile per task, with real execution and real feedback.

    Under several processes each rolls out a contiguous share of the ``tasks x eval.samples`` rows
    (its own seed, so the draws differ from a one-process run's), and every process gets every row
    back (a collective: all processes call this together). Every process rolls out, its share empty or
    not, so each turn calls ``generator`` on all of them alike (vLLM's server mode and a sharded policy
    need that); the default samples ``model`` in-process, in step across processes."""
    from accelerate import PartialState
    from accelerate.utils import gather_object

    state = PartialState()
    ev = cfg.eval
    rows_tasks = [t for t in tasks for _ in range(ev.samples)]
    share = -(-len(rows_tasks) // state.num_processes)
    mine = rows_tasks[state.process_index * share:(state.process_index + 1) * share]
    n = len(mine)
    gen = generator or TransformersGenerator(model, tokenizer, cfg.train.temperature, batch_size=GENERATION_BATCH,
                                             synced=state.num_processes > 1)
    seed = cfg.seed * 1_000_003 + 999_983 + step + 7_919_011 * state.process_index  # never a training seed
    trajs = rollout(gen, tokenizer, mine, np.ones(n, bool), np.zeros(n, bool), scorer, rollout_settings(cfg),
                    seed=seed)
    scored = [(t.percentile, t.real_reward, any(x.real is not None and x.real.status == "ok" for x in t.turns))
              for t in trajs]
    scored = gather_object(scored) if state.num_processes > 1 else scored
    out = []
    for i, task in enumerate(tasks):
        grp = scored[i * ev.samples:(i + 1) * ev.samples]
        out.append({"step": step, "task": task.name, "category": task.category,
                    "percentile": float(np.mean([g[0] for g in grp])), "reward": float(np.mean([g[1] for g in grp])),
                    "ok_rate": float(np.mean([g[2] for g in grp]))})
    return out


def eval_generator(cfg: RunConfig, trainer) -> VLLMGenerator | None:
    """What a held-out evaluation during training samples with: the training's vLLM engine, its weights synced
    to the policy first when an optimiser step has changed it since (TRL syncs before each generation batch,
    so they would lag one step); None without vLLM, for :func:`evaluate`'s in-process default."""
    if cfg.llm.generation != "vllm":
        return None
    if trainer.state.global_step != trainer._last_loaded_step:  # TRL's own test before its sync
        trainer.vllm_generation.sync_weights()
        trainer._last_loaded_step = trainer.state.global_step
    return VLLMGenerator(trainer)


def prompt_schedule(names: list[str], n_rows: int, seed: int) -> list[str]:
    """The training task of every group of the run, in order: passes over ``names``, each in its own seeded order.

    Fixed before training rather than left to TRL's sampler, which reshuffles at each pass over the
    data set from one generator that a resumed run restarts: a run resumed after its first pass
    would then train on other tasks than the uninterrupted run did. Fed to the trainer unshuffled,
    this schedule is a function of the seed alone, and a resumed run skips exactly the groups it
    has trained.
    """
    rng = np.random.default_rng(seed)
    order: list[str] = []
    while len(order) < n_rows:
        order += [names[i] for i in rng.permutation(len(names))]
    return order[:n_rows]


def collective_timeout_s(cfg: RunConfig, num_processes: int, n_eval_tasks: int) -> float:
    """How long a process may wait for the others at a collective (the process group's timeout), in seconds.

    One process can keep the others waiting (in the reward hook's gather, in an evaluation's) while
    it executes its rows: its share of a step (every row, for the arms that execute everything) or
    of the largest held-out evaluation, in batches of ``sandbox.workers``, each batch up to
    ``train.max_turns`` turns of the sandbox's wall-clock backstop (``sandbox.wall_timeout_s``, by
    default a multiple of the CPU budget). Those seconds plus :data:`COLLECTIVE_MARGIN_S`; a shorter
    timeout (torch's default is the margin alone) kills a run whose scripts use their budget.
    """
    t, sb, ev = cfg.train, cfg.sandbox, cfg.eval
    wall = sb.wall_timeout_s if sb.wall_timeout_s is not None else default_wall_timeout(sb.timeout_s)
    train_rows = -(-t.groups_per_step * t.group_size // num_processes) if cfg.arm_spec.train else 0
    eval_rows = -(-n_eval_tasks * max(ev.samples, ev.final_samples) // num_processes)
    batches = -(-max(train_rows, eval_rows) // sb.workers)
    return t.max_turns * batches * wall + COLLECTIVE_MARGIN_S


def _start_processes(cfg: RunConfig, timeout_s: float):
    """accelerate's process state of this run, its process group (when there are several) waiting up to
    ``timeout_s`` at a collective.

    The first ``PartialState`` of a process creates the group and fixes its timeout; TRL's config
    creates one with its ``ddp_timeout`` on GPUs only (on CPU it passes no timeout), so the run creates
    it first, the same on both."""
    import torch
    from accelerate import PartialState
    from accelerate.utils import InitProcessGroupKwargs

    if torch.distributed.is_available() and torch.distributed.is_initialized():
        warnings.warn("the process group was started before the run: its timeout stays what it was, not the "
                      f"{timeout_s:.0f} s the sandbox's budget needs", stacklevel=3)
    kwargs = InitProcessGroupKwargs(timeout=timedelta(seconds=timeout_s)).to_kwargs()
    return PartialState(cpu=llm_device(cfg.llm.device).type == "cpu", **kwargs)


def trainer_args(cfg: RunConfig, out: Path, n_groups: int, num_processes: int | None = None,
                 timeout_s: float = COLLECTIVE_MARGIN_S):
    """TRL's GRPOConfig for the run: one optimiser step per generation batch of ``n_groups`` x n rows in total.

    The rows are shared over ``num_processes`` (default: accelerate's count), so a step is the same
    whatever the number of processes: TRL's generation batch is ``per_device_train_batch_size x
    num_processes x steps_per_generation`` rows. A process's share goes through in micro-batches
    of at most ``llm.micro_batch`` rows, accumulated into one optimiser step. ``timeout_s`` is TRL's
    ``ddp_timeout`` (see :func:`collective_timeout_s`).

    The loss's scaling, as TRL 1.16 computes it (``tests/test_llm_loss_scaling.py`` checks it on
    TRL's own loss code). With N rows in the step, n_i model tokens in row i (``env_mask`` 1) and
    T = sum n_i, the policy and KL terms sum each row's token terms, so a row weighs by its
    advantage alone (the paper's sequence log-probability; IVD's ``G w_g`` passes through), over
    ``N x max_completion_length`` (``dr_grpo``) or T (``dapo``); the entropy bonus is always
    ``ent_coef`` times the mean token entropy. Against the per-token policy and KL terms the bonus
    weighs ``ent_coef`` under ``dapo`` (llm-paper: KL 0.04 and entropy 0.002 as the paper quotes
    them), and ``ent_coef x max_completion_length / mean n_i`` under ``dr_grpo`` (the small
    presets' default, kept for their committed runs). Adam divides out the gradient's overall
    scale, so the normaliser barely changes the step's size; it changes how the terms weigh.
    """
    from trl import GRPOConfig

    if num_processes is None:
        from accelerate import PartialState

        num_processes = PartialState().num_processes
    t, llm = cfg.train, cfg.llm
    rows = n_groups * t.group_size
    if rows % num_processes:
        raise ConfigError(f"a step of {n_groups} groups of {t.group_size} is {rows} trajectories, which "
                          f"{num_processes} processes cannot share evenly; launch a number of processes that "
                          f"divides {rows}, or change train.groups_per_step or train.group_size")
    local = rows // num_processes
    micro = math.gcd(local, llm.micro_batch)
    accum = local // micro
    args = GRPOConfig(
        output_dir=str(out / "trl"), seed=cfg.seed, use_cpu=llm_device(llm.device).type == "cpu", report_to=[],
        **training_precision(llm.device),
        max_steps=t.steps, learning_rate=t.lr, lr_scheduler_type="constant", warmup_steps=0,
        num_generations=t.group_size, per_device_train_batch_size=micro, gradient_accumulation_steps=accum,
        steps_per_generation=accum, num_iterations=1,
        beta=t.kl_coef,  # KL to the initial policy (paper 0.04)
        entropy_coef=t.ent_coef,  # entropy bonus (paper 0.002)
        temperature=t.temperature, top_p=1.0, top_k=0,
        scale_rewards="group" if t.std_normalize else "none",  # "none": advantages linear in rewards (IVD's w_g)
        loss_type=llm.loss_type, max_completion_length=t.max_turns * (llm.max_new_tokens + llm.obs_max_tokens + 32),
        mask_truncated_completions=False, logging_steps=1, save_strategy="steps", save_steps=t.checkpoint_every,
        save_total_limit=1, disable_tqdm=True, shuffle_dataset=False,  # the order is prompt_schedule's
        gradient_checkpointing=llm.gradient_checkpointing, ddp_timeout=math.ceil(timeout_s),
        use_vllm=llm.generation == "vllm", vllm_mode=llm.vllm_mode,
        vllm_importance_sampling_mode=llm.importance_sampling,
        vllm_importance_sampling_clip_max=llm.importance_sampling_cap,
    )
    if args.generation_batch_size != rows:
        raise RuntimeError(f"TRL's generation batch is {args.generation_batch_size} rows on its {args.world_size} "
                           f"processes, not the step's {rows} (built for {num_processes} processes)")
    return args


def _last_checkpoint(folder: Path) -> Path | None:
    ckpts = sorted(folder.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    ckpts = [c for c in ckpts if (c / STATE_FILE).exists()]
    return ckpts[-1] if ckpts else None


def _resume_point(out: Path, cfg: RunConfig) -> tuple[Path | None, dict | None]:
    """The last complete checkpoint of the run in ``out`` and the WMRL state saved beside it (None, None: none).

    A checkpoint of another configuration is refused before anything is loaded or trained: resuming
    it would mix two experiments in one run folder.
    """
    resume = _last_checkpoint(out / "trl")
    if resume is None:
        return None, None
    import torch

    saved = torch.load(resume / STATE_FILE, weights_only=False)
    if saved.get("config") is None or experiment_identity(saved["config"]) != cfg.identity():
        raise RuntimeError(f"{resume} was written by a run with another configuration; rerun with the same "
                           f"settings, or delete {out / 'trl'} to start this one afresh")
    return resume, saved


def train(cfg: RunConfig, out: Path, pool, preset: str, *, memo_path=None, progress: bool = True) -> dict:
    """Warm-start, train (resuming from the last checkpoint), evaluate and write the run folder ``out``."""
    from wmrl.agent.llm.model import load_causal_lm

    if cfg.method.anchor_selection != "random":
        raise ConfigError(f"method.anchor_selection={cfg.method.anchor_selection!r} is not supported by the LLM "
                          "trainer: TRL's rollout_func routes a whole generation batch before it generates, and "
                          "choosing anchors after turn 1 would need every process to agree on the world model's "
                          "turn-1 predictions first; use 'random' (the paper's rule) or the grammar agent")
    if cfg.method.od_condition != "none":
        raise ConfigError(f"method.od_condition={cfg.method.od_condition!r} (conditional calibration, notebook 09) is "
                          "not supported by the LLM trainer: its reward hook does not read the scripts' features; "
                          "use 'none' (the paper's one map) or the grammar agent")

    t = cfg.train
    train_tasks = per_category(pool.train, t.train_tasks)
    eval_tasks = per_category(pool.heldout, cfg.eval.tasks)
    if not train_tasks or not eval_tasks:
        raise RuntimeError(f"the pool at {pool.root} has no training or no held-out tasks")
    timeout_s = collective_timeout_s(cfg, int(os.environ.get("WORLD_SIZE", "1")), len(eval_tasks))
    procs = _start_processes(cfg, timeout_s)
    out.mkdir(parents=True, exist_ok=True)
    resume, saved = _resume_point(out, cfg)
    init, sft_info = initial_model(cfg, pool, progress, build=procs.num_processes == 1)
    # under an execution record (wmrl.record) the run is its own context, named after its folder (one per
    # process when there are several); a resumed run goes on from the positions its checkpoint saved
    name = clock.run_context(out, procs.process_index if procs.num_processes > 1 else None)
    positions = (saved or {}).get("positions") or []
    at = positions[procs.process_index] if len(positions) == procs.num_processes else None
    with clock.context(name, at):
        sandbox = make_sandbox(cfg.sandbox)
        db = make_memo(cfg, pool, out, memo_path)
        log = RunLog(memo=db)
        eval_scorer = Scorer(sandbox, None, log.eval_ledger, db, cfg.sandbox.workers)
        # the starting model's folder as the data root names it: the same on every machine
        where = init.relative_to(data_root()) if init.is_relative_to(data_root()) else init
        extra = {"llm": {"initial_model": str(where), "sft": sft_info}}
        if not cfg.arm_spec.train:
            model, tokenizer = load_causal_lm(init, cfg.llm.device)
            t0 = clock.wall()
            log.evals = evaluate(model, tokenizer, eval_tasks, cfg, eval_scorer, 0)
            log.eval_ledger.end_step()
            log.wall_s += clock.wall() - t0  # a run's wall time counts its evaluations, as a grammar run's does
            return _write(out, cfg, preset, log, None, extra)
        wm = None
        if cfg.arm_spec.world_model:
            wm = make_world_model(cfg.world_model, sandbox, cfg.seed, agent_model=str(init),
                                  memo=make_oracle_memo(cfg, pool), workers=cfg.sandbox.workers)
        scorer = Scorer(sandbox, wm, log.ledger, db, cfg.sandbox.workers)
        step = WMRLStep(cfg.arm, cfg.method, t.groups_per_step, t.group_size, seed=cfg.seed,
                        std_normalize=t.std_normalize)
        n_groups = step.anchors.n_anchors(t.groups_per_step) if cfg.arm_spec.anchors_only else t.groups_per_step
        trainer = build_trainer(cfg, out, init, train_tasks, eval_tasks, step, n_groups, scorer, eval_scorer, log, wm,
                                timeout_s=timeout_s)
        if saved is not None:
            step.load_state_dict(saved["step"])
            log.load_state_dict(saved["log"], main=procs.is_main_process)
            _warn_if_other_threads(saved.get("torch_threads"))
        trainer.train(resume_from_checkpoint=str(resume) if resume else None)
        if not any(r["step"] == t.steps for r in log.evals):
            t0 = clock.wall()
            log.evals += evaluate(trainer.model, trainer.processing_class, eval_tasks, cfg, eval_scorer, t.steps,
                                  eval_generator(cfg, trainer))
            log.eval_ledger.end_step()
            log.wall_s += clock.wall() - t0
        return _write(out, cfg, preset, log, step, extra)


def _warn_if_other_threads(saved: int | None) -> None:
    """A float sum split over another number of threads rounds differently, so a run resumed with another
    torch thread count continues correctly but not bit-identically to the uninterrupted run."""
    import torch

    if saved is not None and saved != torch.get_num_threads():
        warnings.warn(f"this run's checkpoint was written with {saved} torch threads and resumes with "
                      f"{torch.get_num_threads()}: it continues, but its numbers will not be bit-identical to an "
                      "uninterrupted run's", stacklevel=3)


def build_trainer(cfg: RunConfig, out: Path, init: Path, train_tasks, eval_tasks, step, n_groups: int, scorer,
                  eval_scorer, log: RunLog, wm=None, timeout_s: float = COLLECTIVE_MARGIN_S):
    """The GRPOTrainer of a run, with WMRL's rollout function, reward hook and callback wired in.

    The data set is the run's schedule of groups (:func:`prompt_schedule`), ``n_groups`` a step in
    total: TRL's sampler hands each process its contiguous share of a step's rows."""
    from accelerate import PartialState
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOTrainer

    settings = rollout_settings(cfg)
    prompts = {t.name: settings.messages(t)
               for t in train_tasks}
    schedule = prompt_schedule([t.name for t in train_tasks], cfg.train.steps * n_groups, cfg.seed)
    dataset = Dataset.from_list([{"prompt": prompts[name], "task": name} for name in schedule])
    by_prompt = {prompt_key(prompts[t.name]): t for t in train_tasks}
    tokenizer = AutoTokenizer.from_pretrained(str(init))
    tokenizer.padding_side = "left"
    if cfg.llm.generation == "vllm":
        def generator_for(trainer):
            return VLLMGenerator(trainer)
    else:
        def generator_for(trainer):
            return TransformersGenerator(trainer.accelerator.unwrap_model(trainer.model), trainer.processing_class,
                                         cfg.train.temperature, batch_size=GENERATION_BATCH)
    roll = WMRLRollout(step, by_prompt, scorer, settings, cfg.seed, log, generator_for, wm)
    holder: list = []
    reward = WMRLReward(step, roll, log, lambda: holder[0]())

    def run_eval(model, at_step):
        return evaluate(model, tokenizer, eval_tasks, cfg, eval_scorer, at_step, eval_generator(cfg, holder[0]()))

    callback = WMRLCallback(step, log, run_eval, lambda done: cfg.eval.due(done, cfg.train.steps), wm,
                            config=cfg.identity())
    args = trainer_args(cfg, out, n_groups, PartialState().num_processes, timeout_s)
    with warnings.catch_warnings():  # TRL calls rollout_func experimental; the pinned TRL is the one tested
        warnings.filterwarnings("ignore", message="You are using 'rollout_func'", category=UserWarning)
        trainer = GRPOTrainer(model=str(init), reward_funcs=[reward], args=args, train_dataset=dataset,
                              processing_class=tokenizer, rollout_func=roll, callbacks=[callback])
    holder.append(weakref.ref(trainer))
    return trainer


def gpu_peak_gib() -> dict | None:
    """This process's peak CUDA memory over the run, in GiB (``allocated``: tensors; ``reserved``: what the caching
    allocator held); None without CUDA."""
    import torch

    if not torch.cuda.is_available() or not torch.cuda.is_initialized():
        return None
    return {"allocated": round(torch.cuda.max_memory_allocated() / 2**30, 3),
            "reserved": round(torch.cuda.max_memory_reserved() / 2**30, 3)}


def _write(out, cfg, preset, log: RunLog, step, extra) -> dict:
    """Write the run folder once (the main process), every process's bills and memo counters summed
    (:meth:`RunLog.merged_state`); every process gets the summary.

    A collective under several processes: each calls it at the end of the run."""
    from accelerate import PartialState

    state = PartialState()
    peak = gpu_peak_gib()
    if peak is not None:  # each process's own GPU, in process order
        from accelerate.utils import gather_object

        extra["gpu_peak_gib"] = gather_object([peak]) if state.num_processes > 1 else [peak]
    merged = log.merged_state()
    ledger, eval_ledger = (ComputeLedger.from_state_dict(merged[k]) for k in ("ledger", "eval_ledger"))
    memo = {"enabled": log.memo is not None, **(merged["memo"] or {"hits": 0, "misses": 0})}
    totals = log.world_model_totals()
    if totals is not None:
        extra["world_model"] = totals
    summary = None
    if state.is_main_process:
        summary = write_run(out, cfg, preset, steps=log.steps, evals=log.evals, pairs=log.pairs, ledger=ledger,
                            eval_ledger=eval_ledger, snapshots=step.debiaser.snapshots if step else [],
                            wall_s=log.wall_s, extra={"memo": memo, **extra})
    if state.num_processes > 1:
        state.wait_for_everyone()
    return summary if summary is not None else json.loads((out / "summary.json").read_text())
