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

One warm start for every seed (``llm.sft_seed``), kept: with ``llm.sft_lora_rank`` > 0 the fine-tune is a
LoRA adapter on every linear layer (peft, through SFTTrainer's ``peft_config``), small enough to keep
under ``<results>/warm_starts/``, beside the runs it starts. The model a run loads is the instruct model
plus that adapter, merged by :func:`merge_adapter` in float64 from its saved file, elementwise in a fixed
order, so the merge gives the same bits on every CPU (a matrix product's summation order, and with it its
last bits, is the kernel's choice); the kept record holds their digest, and a merge that differs from it
is refused. The run that builds the adapter starts from the merged file as well, never from the
in-memory fit.
"""

from __future__ import annotations

import dataclasses
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
from wmrl.provenance import provenance

__all__ = ["ADAPTER", "execute_targets", "lora_config", "merge_adapter", "sft_args", "sft_dataset", "sft_folder",
           "solution_target", "weights_sha256"]

#: The adapter's weights file (peft's name for it), in a kept warm start's folder.
ADAPTER = "adapter_model.safetensors"
#: ``lora_alpha`` over the rank: the adapter's update is scaled by 2, whatever the rank.
LORA_ALPHA_PER_RANK = 2


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


def sft_seed(cfg) -> int:
    """The seed the warm start of ``cfg`` is drawn and fitted with: ``llm.sft_seed``, else the run's."""
    return cfg.seed if cfg.llm.sft_seed is None else cfg.llm.sft_seed


def _key(cfg, tasks) -> str:
    """The warm start's folder name: a digest of everything that shapes it, the instruct model by its
    ``agent.model`` setting (not its folder, which differs from machine to machine), its prompts' text included (so a
    warm start fitted to an edited prompt or task description is another one, never a stale reuse) and the
    sandbox limits its runnable targets were filtered under."""
    from wmrl.trainer.components import make_sandbox

    facts = make_sandbox(cfg.sandbox).facts
    prompts = json.dumps([task_messages(t, cfg.llm.contract, facts) for t in sorted(tasks, key=lambda t: t.name)])
    spec = {"base": cfg.agent.model, "contract": cfg.llm.contract, "tasks": sorted(t.name for t in tasks),
            "steps": cfg.llm.sft_steps, "lr": cfg.llm.sft_lr, "batch": cfg.llm.sft_batch,
            "per_task": cfg.llm.sft_per_task, "seed": sft_seed(cfg), "targets": cfg.llm.sft_targets,
            "lora_rank": cfg.llm.sft_lora_rank,
            "prompt_sandbox": {"cpu_budget_s": facts.cpu_budget_s, "wall_timeout_s": facts.wall_timeout_s,
                               "memory_mb": facts.memory_mb, "cpus": facts.cpus, "gpus": facts.gpus},
            "prompts": hashlib.sha256(prompts.encode()).hexdigest()[:16]}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def sft_args(cfg, out: Path, progress: bool = False):
    """TRL's SFTConfig of the warm start of ``cfg``, writing its trainer state under ``out``."""
    from trl import SFTConfig

    from wmrl.agent.llm.model import llm_device, training_precision

    return SFTConfig(output_dir=str(out), max_steps=cfg.llm.sft_steps, learning_rate=cfg.llm.sft_lr,
                     **training_precision(cfg.llm.device),
                     per_device_train_batch_size=cfg.llm.sft_batch, gradient_accumulation_steps=1,
                     lr_scheduler_type="cosine", warmup_steps=max(1, cfg.llm.sft_steps // 10), logging_steps=5,
                     save_strategy="no", report_to=[], seed=sft_seed(cfg),
                     use_cpu=llm_device(cfg.llm.device).type == "cpu",
                     gradient_checkpointing=cfg.llm.gradient_checkpointing,
                     completion_only_loss=True, max_length=4096, disable_tqdm=not progress)


def lora_config(rank: int):
    """peft's LoraConfig of a rank-``rank`` warm start: every linear layer but the output head, no dropout."""
    from peft import LoraConfig

    return LoraConfig(r=rank, lora_alpha=LORA_ALPHA_PER_RANK * rank, lora_dropout=0.0, target_modules="all-linear",
                      bias="none", task_type="CAUSAL_LM")


def weights_sha256(model) -> str:
    """sha256 of a model's weights: every tensor of its state dict by name, in name order, its bytes."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


def merge_adapter(base: Path, adapter: Path, out: Path) -> str:
    """Write the instruct model at ``base`` plus the LoRA adapter in folder ``adapter`` to ``out``; return
    the merged weights' :func:`weights_sha256`.

    Each merged weight is ``W + (alpha / r) * sum_k outer(B[:, k], A[k, :])`` evaluated in float64, one
    elementwise product and one sum per rank component in order of ``k``, then rounded once to ``W``'s
    dtype. Every step is a single IEEE operation, correctly rounded, so no CPU's choice of kernel (the
    order of a dot product's terms, a fused multiply-add) changes a bit; peft's own merge is a matrix
    product in the weight's dtype, whose last bits are the kernel's."""
    import numpy as np
    import torch
    from safetensors.torch import load_file

    from wmrl.agent.llm.model import load_causal_lm

    settings = json.loads((adapter / "adapter_config.json").read_text())
    rank, alpha = int(settings["r"]), float(settings["lora_alpha"])
    scale = alpha / (rank ** 0.5 if settings.get("use_rslora") else rank)
    tensors = load_file(str(adapter / ADAPTER))
    model, tokenizer = load_causal_lm(base, "cpu")
    params = dict(model.named_parameters())
    merged = 0
    with torch.no_grad():
        for key in sorted(k for k in tensors if k.endswith(".lora_A.weight")):
            name = key.removeprefix("base_model.model.").removesuffix(".lora_A.weight") + ".weight"
            if name not in params:
                raise ValueError(f"the adapter in {adapter} changes {name}, which the model at {base} does not have: "
                                 "it was fitted to another model")
            a = tensors[key].double().numpy()
            b = tensors[key.replace(".lora_A.", ".lora_B.")].double().numpy()
            delta = np.zeros((b.shape[0], a.shape[1]))
            for k in range(a.shape[0]):
                delta += np.multiply.outer(b[:, k], a[k])
            weight = params[name]
            total = weight.detach().double().numpy() + scale * delta
            weight.copy_(torch.from_numpy(total).to(weight.dtype))
            merged += 1
    if not merged:
        raise ValueError(f"the adapter in {adapter} holds no LoRA weights")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return weights_sha256(model)


def sft_folder(cfg, base: Path, tasks, models: Path, progress: bool = False, build: bool = True,
               kept: Path | None = None) -> tuple[Path, dict]:
    """The warm-started model folder for ``cfg`` (built on first use); returns it and its build record.

    ``build=False`` refuses to build a missing one, saying how to: a run of several processes takes
    the warm start ready-made, since one process alone cannot train it while the others wait in
    their process group (SFTTrainer would make it a collective of all of them). With a LoRA warm start
    (``llm.sft_lora_rank`` > 0) the adapter is kept in ``kept`` (``<results>/warm_starts``) and the
    model folder merged from it; an adapter kept there is never refitted."""
    key = _key(cfg, tasks)
    final = models / f"sft-{key}"
    record = final / "wmrl_sft.json"
    cached = json.loads(record.read_text()) if record.exists() else None
    lora = cfg.llm.sft_lora_rank > 0
    if lora and kept is None:
        raise ValueError("a LoRA warm start (llm.sft_lora_rank > 0) needs a folder to keep its adapter in")
    adapter = kept / f"sft-{key}" if lora else None
    if lora and (adapter / ADAPTER).exists():  # the merged folder counts only as a merge of this kept adapter
        digest = json.loads((adapter / "wmrl_sft.json").read_text()).get("weights_sha256")
        if cached is not None and digest is not None and cached.get("weights_sha256") == digest:
            return final, cached
        return _merged(base, adapter, final)
    if cached is not None and not lora:
        return final, cached
    if not build:
        raise RuntimeError(f"the warm start {adapter or final} (llm.sft_steps={cfg.llm.sft_steps}) is not built yet, "
                           "and a run of several processes does not build it; build it first with one process, e.g. "
                           f"python -m wmrl.experiments run --agent llm --arm sft --seed {cfg.seed} with this run's "
                           "preset and --set overrides, then launch this run again")
    models.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=models, prefix=f".{final.name}."))
    try:
        out, info = _fit(cfg, base, tasks, tmp, progress)
        if lora:
            info["provenance"] = provenance(config={"llm": dataclasses.asdict(cfg.llm), "agent.model": cfg.agent.model},
                                            seed=sft_seed(cfg))
            _keep(out, info, adapter)
            return _merged(base, adapter, final)
        (out / "wmrl_sft.json").write_text(json.dumps(info, indent=1))
        _replace(out, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final, info


def _fit(cfg, base: Path, tasks, tmp: Path, progress: bool) -> tuple[Path, dict]:
    """Fit the warm start under ``tmp``: the fitted model's folder (under LoRA, the adapter's) and its record."""
    import time

    from datasets import Dataset
    from trl import SFTTrainer

    from wmrl.agent.llm.model import load_causal_lm
    from wmrl.trainer.components import make_sandbox

    rows = sft_dataset(tasks, cfg.llm.contract, cfg.llm.sft_per_task, sft_seed(cfg), make_sandbox(cfg.sandbox).facts)
    drawn = len(rows)
    if cfg.llm.sft_targets == "runnable":
        ran = [r.status == "ok" for _, r in execute_targets(rows, tasks, cfg.llm.contract, make_sandbox(cfg.sandbox))]
        rows = [row for row, ok in zip(rows, ran) if ok]
        if not rows:
            raise RuntimeError(f"none of the {drawn} warm-start targets ran ok: nothing to fit with "
                               "llm.sft_targets='runnable'")
    model, tokenizer = load_causal_lm(base, cfg.llm.device)
    tokenizer.padding_side = "right"  # training batches pad on the right
    args = sft_args(cfg, tmp / "trainer", progress)
    data = Dataset.from_list([{"prompt": r["prompt"], "completion": r["completion"]} for r in rows])
    lora = lora_config(cfg.llm.sft_lora_rank) if cfg.llm.sft_lora_rank > 0 else None
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer, peft_config=lora)
    t0 = time.perf_counter()
    result = trainer.train()
    seconds = time.perf_counter() - t0
    out = tmp / "model"
    trainer.model.save_pretrained(out)  # under LoRA: the adapter alone
    if lora is None:
        tokenizer.padding_side = "left"
        tokenizer.save_pretrained(out)
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    info = {"examples": len(rows), "drawn": drawn, "targets": cfg.llm.sft_targets, "steps": cfg.llm.sft_steps,
            "seconds": seconds, "seed": sft_seed(cfg), "lora_rank": cfg.llm.sft_lora_rank,
            "train_loss": float(result.training_loss), "first_loss": losses[0] if losses else None,
            "last_loss": losses[-1] if losses else None,
            "tokens": int(max((h.get("num_tokens", 0) for h in trainer.state.log_history), default=0)),
            "tasks": sorted(t.name for t in tasks), "base": cfg.agent.model, "contract": cfg.llm.contract}
    return out, info


def _keep(adapter_tmp: Path, info: dict, adapter: Path) -> None:
    """Move a fitted adapter to its kept folder ``adapter`` with its record (its merged digest comes later)."""
    (adapter_tmp / "wmrl_sft.json").write_text(json.dumps(info, indent=1))
    for extra in adapter_tmp.iterdir():  # peft's README.md: a model card for the Hub, not part of the adapter
        if extra.name not in (ADAPTER, "adapter_config.json", "wmrl_sft.json"):
            extra.unlink()
    adapter.parent.mkdir(parents=True, exist_ok=True)
    _replace(adapter_tmp, adapter)


def _merged(base: Path, adapter: Path, final: Path) -> tuple[Path, dict]:
    """The model folder ``final``: ``base`` plus the kept adapter, checked against the digest kept with it (the
    first merge of a new adapter records it)."""
    kept_record = adapter / "wmrl_sft.json"
    info = json.loads(kept_record.read_text())
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}."))
    try:
        digest = merge_adapter(base, adapter, tmp / "model")
        if info.get("weights_sha256") is None:
            info["weights_sha256"] = digest
            kept_record.write_text(json.dumps(info, indent=1))
        elif info["weights_sha256"] != digest:
            raise RuntimeError(f"the instruct model at {base} plus the adapter kept in {adapter} gives other weights "
                               f"(sha256 {digest[:12]}) than when it was kept ({info['weights_sha256'][:12]}): the "
                               "instruct model differs from the one it was fitted to")
        (tmp / "model" / "wmrl_sft.json").write_text(json.dumps(info, indent=1))
        _replace(tmp / "model", final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final, info


def _replace(src: Path, dst: Path) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    src.rename(dst)
