"""The supervised warm start: TRL's SFTTrainer on grammar-rendered solutions of the training tasks.

The paper starts GRPO from an instruct model that already writes runnable code. A 135M model does
not (``python -m bench.llm_bench`` measures its runnable rate), so the CPU path first fine-tunes it on solutions the
grammar agent renders (:func:`wmrl.agent.grammar.render`, compacted) for the *training* tasks
only - the held-out tasks are never seen. The solutions are drawn from the grammar agent's
documented habits (:mod:`wmrl.agent.habits`), mistakes included, so the warm-started model inherits
a realistic failure rate instead of a perfect one, and GRPO has something to learn.

Each example is the rollout's first-turn conversation (:func:`wmrl.agent.llm.prompt.task_messages`)
as the prompt and the solution in a fenced block as the completion; the loss is on the completion
only. Under the ``plan`` contract the completion is the plan of the same design decisions
(:func:`wmrl.agent.llm.plan.plan_text` of :func:`~wmrl.agent.llm.plan.design_choices`): the habits'
slips in what the renderer writes (file, column, API, submission) are a coder's, not a planner's, so
the plan keeps the design ones alone (a model family too slow for the budget, a dummy model, ...). The result is a model folder under the data root, keyed by everything that shapes it
(base model, contract, tasks, steps, learning rate, batch, seed, targets, prompts), built once and atomically.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import numpy as np

from wmrl.agent.habits import habit_choices
from wmrl.agent.llm.plan import design_choices, plan_text
from wmrl.agent.llm.prompt import task_messages
from wmrl.agent.llm.solution import fit_predict_target, reply_for, script_target

__all__ = ["execute_targets", "sft_args", "sft_dataset", "sft_folder", "solution_target"]


def solution_target(task, choices, contract: str) -> str:
    """The code (under ``plan``: the plan) a warm-started model should write for ``task`` under grammar ``choices``."""
    if contract == "plan":
        return plan_text(task, design_choices(choices))
    return script_target(task, choices) if contract == "script" else fit_predict_target(task, choices)


def sft_dataset(tasks, contract: str, per_task: int, seed: int, sandbox) -> list[dict]:
    """``per_task`` prompt/completion examples per training task, solutions drawn from the habits; each row
    names its ``task`` (which :func:`execute_targets` runs it on; SFTTrainer is given prompt and completion only).
    The prompts are the rollout's: they state the limits of ``sandbox`` (the run's ``Sandbox.facts``)."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in tasks:
        prompt = task_messages(task, contract, sandbox)
        seen = set()
        for _ in range(per_task):
            code = solution_target(task, habit_choices(task, rng), contract)
            if code in seen:  # a few tasks have few distinct scripts; duplicates would only overweight them
                continue
            seen.add(code)
            rows.append({"task": task.name, "prompt": prompt,
                         "completion": [{"role": "assistant", "content": reply_for(code, contract)}]})
    order = rng.permutation(len(rows))
    return [rows[i] for i in order]


def execute_targets(rows: list[dict], tasks, contract: str, sandbox) -> list[tuple[object, object]]:
    """Each row's ``(task, ExecutionResult)``: its target solution, assembled as a rollout would, run in ``sandbox``.

    ``rows`` are :func:`sft_dataset`'s for ``tasks``."""
    from wmrl.agent.llm.solution import solution_for

    by_name = {t.name: t for t in tasks}
    jobs = []
    for row in rows:
        task = by_name[row["task"]]
        jobs.append((task, solution_for(task, row["completion"][0]["content"], contract).script))
    return list(zip((t for t, _ in jobs), sandbox.run_many(jobs)))


def _key(base: Path, cfg, tasks) -> str:
    """The warm start's folder name: a digest of everything that shapes it, its prompts' text included (so a
    warm start fitted to an edited prompt or task description is another one, never a stale reuse) and the
    sandbox limits its runnable targets were filtered under."""
    from wmrl.trainer.components import make_sandbox

    facts = make_sandbox(cfg.sandbox).facts
    prompts = json.dumps([task_messages(t, cfg.llm.contract, facts) for t in sorted(tasks, key=lambda t: t.name)])
    spec = {"base": str(base), "contract": cfg.llm.contract, "tasks": sorted(t.name for t in tasks),
            "steps": cfg.llm.sft_steps, "lr": cfg.llm.sft_lr, "batch": cfg.llm.sft_batch,
            "per_task": cfg.llm.sft_per_task, "seed": cfg.seed, "targets": cfg.llm.sft_targets,
            "prompt_sandbox": {"cpu_budget_s": facts.cpu_budget_s, "wall_timeout_s": facts.wall_timeout_s,
                               "memory_mb": facts.memory_mb, "cpus": facts.cpus, "gpus": facts.gpus},
            "prompts": hashlib.sha256(prompts.encode()).hexdigest()[:16]}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def sft_args(cfg, out: Path, progress: bool = False):
    """TRL's SFTConfig of the warm start of ``cfg``, writing its trainer state under ``out``."""
    from trl import SFTConfig

    from wmrl.agent.llm.model import llm_device

    return SFTConfig(output_dir=str(out), max_steps=cfg.llm.sft_steps, learning_rate=cfg.llm.sft_lr,
                     per_device_train_batch_size=cfg.llm.sft_batch, gradient_accumulation_steps=1,
                     lr_scheduler_type="cosine", warmup_steps=max(1, cfg.llm.sft_steps // 10), logging_steps=5,
                     save_strategy="no", report_to=[], seed=cfg.seed,
                     use_cpu=llm_device(cfg.llm.device).type == "cpu",
                     gradient_checkpointing=cfg.llm.gradient_checkpointing,
                     completion_only_loss=True, max_length=4096, disable_tqdm=not progress)


def sft_folder(cfg, base: Path, tasks, models: Path, progress: bool = False, build: bool = True) -> tuple[Path, dict]:
    """The warm-started model folder for ``cfg`` (built on first use); returns it and its build record.

    ``build=False`` refuses to build a missing one, saying how to: a run of several processes takes
    the warm start ready-made, since one process alone cannot train it while the others wait in
    their process group (SFTTrainer would make it a collective of all of them)."""
    final = models / f"sft-{_key(base, cfg, tasks)}"
    record = final / "wmrl_sft.json"
    if record.exists():
        return final, json.loads(record.read_text())
    if not build:
        raise RuntimeError(f"the warm start {final} (llm.sft_steps={cfg.llm.sft_steps}) is not built yet, and a run "
                           "of several processes does not build it; build it first with one process, e.g. "
                           f"python -m wmrl.experiments run --agent llm --arm sft --seed {cfg.seed} with this run's "
                           "preset and --set overrides, then launch this run again")
    import time

    from datasets import Dataset
    from trl import SFTTrainer

    from wmrl.agent.llm.model import load_causal_lm
    from wmrl.trainer.components import make_sandbox

    models.mkdir(parents=True, exist_ok=True)
    rows = sft_dataset(tasks, cfg.llm.contract, cfg.llm.sft_per_task, cfg.seed, make_sandbox(cfg.sandbox).facts)
    drawn = len(rows)
    if cfg.llm.sft_targets == "runnable":
        ran = [r.status == "ok" for _, r in execute_targets(rows, tasks, cfg.llm.contract, make_sandbox(cfg.sandbox))]
        rows = [row for row, ok in zip(rows, ran) if ok]
        if not rows:
            raise RuntimeError(f"none of the {drawn} warm-start targets ran ok: nothing to fit with "
                               "llm.sft_targets='runnable'")
    tmp = Path(tempfile.mkdtemp(dir=models, prefix=f".{final.name}."))
    try:
        model, tokenizer = load_causal_lm(base, cfg.llm.device)
        tokenizer.padding_side = "right"  # training batches pad on the right
        args = sft_args(cfg, tmp / "trainer", progress)
        data = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
        trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer)
        t0 = time.perf_counter()
        result = trainer.train()
        seconds = time.perf_counter() - t0
        out = tmp / "model"
        trainer.model.save_pretrained(out)
        tokenizer.padding_side = "left"
        tokenizer.save_pretrained(out)
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        info = {"examples": len(rows), "drawn": drawn, "targets": cfg.llm.sft_targets, "steps": cfg.llm.sft_steps,
                "seconds": seconds,
                "train_loss": float(result.training_loss), "first_loss": losses[0] if losses else None,
                "last_loss": losses[-1] if losses else None,
                "tokens": int(max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0)),
                "tasks": sorted(t.name for t in tasks), "base": str(base), "contract": cfg.llm.contract}
        (out / "wmrl_sft.json").write_text(json.dumps(info, indent=1))
        if final.exists():
            shutil.rmtree(final)
        out.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final, info

