"""WMRL on TRL's GRPOTrainer: the reward-side algebra on TRL's own code, the hooks, the presets, real runs."""

from __future__ import annotations

import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

trl = pytest.importorskip("trl", reason="the LLM agent needs TRL: pip install -e '.[llm]'")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, smollm2_folder):
    """A randomly initialised one-layer Llama with SmolLM2's tokenizer: TRL's code paths in a second."""
    from wmrl.models import tiny_llama

    return tiny_llama(tmp_path_factory.mktemp("tiny"), smollm2_folder)


def _toy_trainer(folder, tmp_path, scale_rewards: str, rewards: np.ndarray, weights: np.ndarray):
    """A GRPOTrainer whose rollout returns fixed completions and whose reward hook returns w_g * R_gi."""
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    G, n = rewards.shape
    prompts = [[{"role": "user", "content": f"task {g}"}] for g in range(G)]

    def rollout_func(batch, trainer):
        return {"prompt_ids": [[1, 2, 3]] * len(batch), "completion_ids": [[5, 6, 2]] * len(batch), "logprobs": None,
                "row": list(range(len(batch)))}

    def reward(prompts, completions, row, **kwargs):
        return [float(weights[r // n] * rewards[r // n, r % n]) for r in row]

    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, report_to=[], num_generations=n,
                      per_device_train_batch_size=G * n, max_steps=1, scale_rewards=scale_rewards, beta=0.0,
                      gradient_checkpointing=False, logging_steps=1)
    trainer = GRPOTrainer(model=str(folder), reward_funcs=[reward], args=args,
                          train_dataset=Dataset.from_list([{"prompt": p} for p in prompts]), rollout_func=rollout_func)
    trainer.model.train()
    inputs = [{"prompt": prompts[g]} for g in range(G) for _ in range(n)]
    return trainer, inputs


def test_trl_advantages_of_weighted_rewards_are_the_weighted_grpo_advantages(tiny_model, tmp_path):
    """The identity WMRL's IVD relies on, computed by TRL 1.16's own advantage code:
    with scale_rewards='none', rewards w_g R_gi give advantages w_g (R_gi - mean_j R_gj)."""
    rng = np.random.default_rng(0)
    R = rng.choice([0.0, 0.1, 0.2, 0.6, 0.9], size=(3, 4))
    w = np.array([0.5, 0.3, 0.2]) * 3
    trainer, inputs = _toy_trainer(tiny_model, tmp_path, "none", R, w)
    adv = trainer._generate_and_score_completions(inputs)["advantages"].numpy().reshape(3, 4)
    expected = w[:, None] * (R - R.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(adv, expected, atol=1e-6)


def test_std_scaled_advantages_would_cancel_the_group_weights(tiny_model, tmp_path):
    """Why the LLM trainer turns TRL's std scaling off: per-group scaling divides w_g back out."""
    R = np.array([[0.0, 0.1, 0.6, 0.9], [0.2, 0.2, 0.1, 0.6]])
    w = np.array([4.0, 1.0])
    trainer, inputs = _toy_trainer(tiny_model, tmp_path, "group", R, w)
    adv = trainer._generate_and_score_completions(inputs)["advantages"].numpy().reshape(2, 4)
    assert not np.allclose(adv, w[:, None] * (R - R.mean(axis=1, keepdims=True)), atol=1e-3)
    unweighted = (R - R.mean(1, keepdims=True)) / (R.std(1, ddof=1, keepdims=True) + 1e-4)
    np.testing.assert_allclose(adv, unweighted, atol=1e-3)


class _Acc:
    num_processes, process_index = 1, 0


class _Trainer:
    num_generations = 2
    accelerator = _Acc()

    class state:
        global_step = 0


def test_the_warm_start_is_built_once_per_configuration_and_runnable_targets_keep_only_what_ran(pool, tmp_path,
                                                                                                 tiny_model):
    """SFTTrainer fits the habits' solutions of the training tasks (2 steps of the tiny model), into a folder keyed by
    the configuration and reused on the next call; ``llm.sft_targets='runnable'`` fits only the targets that ran ok
    in the sandbox (as :func:`wmrl.trainer.llm.sft.execute_targets` runs them), under a key of its own."""
    from wmrl.agent.llm.prompt import task_messages
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.trainer.components import make_sandbox
    from wmrl.trainer.llm.sft import execute_targets, sft_dataset, sft_folder

    over = {"llm.sft_steps": 2, "llm.sft_per_task": 2, "llm.sft_batch": 1, "llm.contract": "fit_predict"}
    habits = run_config("sft", "llm-smoke", 0, over, agent="llm")
    tasks = per_category(pool.train, habits.train.train_tasks)
    folder, record = sft_folder(habits, tiny_model, tasks, tmp_path)
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()
    rows = sft_dataset(tasks, "fit_predict", 2, 0, make_sandbox(habits.sandbox).facts)
    assert record["examples"] == record["drawn"] == len(rows) and record["steps"] == 2
    assert record["targets"] == "habits" and record["tasks"] == sorted(t.name for t in tasks)
    assert sft_folder(habits, tiny_model, tasks, tmp_path) == (folder, record)  # built once: reused

    runnable = run_config("sft", "llm-smoke", 0, {**over, "llm.sft_targets": "runnable"}, agent="llm")
    ran = execute_targets(rows, tasks, "fit_predict", make_sandbox(runnable.sandbox))
    facts = make_sandbox(runnable.sandbox).facts
    assert all(row["prompt"] == task_messages(task, "fit_predict", facts)  # each target runs on its prompt's task
               for row, (task, _) in zip(rows, ran)) and {t for t, _ in ran} == set(tasks)
    ok = sum(r.status == "ok" for _, r in ran)
    assert 0 < ok < len(rows), f"{ok} of {len(rows)} targets ran: the filter needs both kinds to show what it keeps"
    other, kept = sft_folder(runnable, tiny_model, tasks, tmp_path)
    assert other != folder and kept["targets"] == "runnable"
    assert kept["drawn"] == len(rows) and kept["examples"] == ok


def test_a_runnable_warm_start_with_no_target_that_runs_is_refused_saying_so(pool, tmp_path, tiny_model,
                                                                             monkeypatch):
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.sandbox.result import ExecutionResult
    from wmrl.trainer.llm import sft

    monkeypatch.setattr(sft, "execute_targets", lambda rows, tasks, contract, sandbox: [
        (None, ExecutionResult("runtime_error", "ValueError", 3)) for _ in rows])
    cfg = run_config("sft", "llm-smoke", 0, {"llm.sft_steps": 2, "llm.sft_per_task": 2,
                                              "llm.sft_targets": "runnable"}, agent="llm")
    with pytest.raises(RuntimeError, match="none of the 6 warm-start targets ran ok"):
        sft.sft_folder(cfg, tiny_model, per_category(pool.train, cfg.train.train_tasks), tmp_path)
    assert not any(tmp_path.iterdir()), "nothing is left behind"


_MERGE_SCRIPT = """
import json, sys
from pathlib import Path
from wmrl.trainer.llm.sft import merge_adapter
print(json.dumps(merge_adapter(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]))))
"""


def test_a_lora_warm_start_is_kept_shared_by_every_seed_and_merged_to_the_same_bits_under_other_kernels(
        pool, tmp_path, tiny_model, monkeypatch):
    """With ``llm.sft_lora_rank`` and ``llm.sft_seed`` the warm start is one adapter for every seed, kept beside the
    results with the digest of its merged weights; the merge equals W + (alpha/r) B A computed independently, gives
    the same bits with numpy's and torch's vector kernels switched off, and a lost model folder is merged again
    from the kept adapter, never refitted; an instruct model other than the adapter's is refused."""
    import json
    import os

    import torch
    from safetensors.torch import load_file

    from wmrl.models import tiny_llama
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.trainer.llm import sft

    over = {"llm.sft_steps": 2, "llm.sft_per_task": 2, "llm.sft_batch": 1, "llm.sft_lr": 1e-2,
            "llm.sft_lora_rank": 2, "llm.sft_seed": 7}
    cfgs = [run_config(arm, "llm-smoke", seed, over, agent="llm") for arm, seed in (("sft", 0), ("wmrl", 1))]
    tasks = per_category(pool.train, cfgs[0].train.train_tasks)
    models, kept = tmp_path / "models", tmp_path / "results" / "warm_starts"
    folder, record = sft.sft_folder(cfgs[0], tiny_model, tasks, models, kept=kept)
    assert sft.sft_folder(cfgs[1], tiny_model, tasks, models, kept=kept) == (folder, record)  # one for every seed
    adapter = kept / folder.name
    assert sorted(p.name for p in adapter.iterdir()) == ["adapter_config.json", sft.ADAPTER, "wmrl_sft.json"]
    assert record["seed"] == 7 and record["lora_rank"] == 2 and record["provenance"]["seed"] == 7
    assert json.loads((adapter / "wmrl_sft.json").read_text())["weights_sha256"] == record["weights_sha256"]

    from transformers import AutoModelForCausalLM
    base = AutoModelForCausalLM.from_pretrained(str(tiny_model)).state_dict()
    merged = AutoModelForCausalLM.from_pretrained(str(folder))
    assert sft.weights_sha256(merged) == record["weights_sha256"]
    lora, changed = load_file(str(adapter / sft.ADAPTER)), 0
    for key, a in lora.items():
        if ".lora_A." in key:
            name = key.removeprefix("base_model.model.").replace(".lora_A.weight", ".weight")
            b = lora[key.replace(".lora_A.", ".lora_B.")]
            want = base[name].double() + sft.LORA_ALPHA_PER_RANK * (b.double() @ a.double())
            torch.testing.assert_close(merged.state_dict()[name].double(), want, rtol=0, atol=1e-6)
            changed += not torch.equal(merged.state_dict()[name], base[name])
    assert changed > 0, "the fit moved no weight: the test would not see a merge"

    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default", "NPY_DISABLE_CPU_FEATURES": _numpy_vector_features()}
    other = subprocess.run([sys.executable, "-c", _MERGE_SCRIPT, str(tiny_model), str(adapter), str(tmp_path / "o")],
                           env=env, capture_output=True, text=True, check=True)
    assert json.loads(other.stdout.strip().splitlines()[-1]) == record["weights_sha256"]

    import shutil
    shutil.rmtree(folder)
    monkeypatch.setattr(sft, "_fit", lambda *a, **k: pytest.fail("a kept adapter was fitted again"))
    assert sft.sft_folder(cfgs[1], tiny_model, tasks, models, kept=kept) == (folder, record)
    shutil.rmtree(folder)
    with pytest.raises(RuntimeError, match="differs from the one it was fitted to"):
        sft.sft_folder(cfgs[0], tiny_llama(tmp_path / "other", tiny_model, seed=1), tasks, models, kept=kept)
    assert sft.sft_folder(cfgs[0], tiny_model, tasks, models, kept=kept) == (folder, record)
    shutil.rmtree(adapter)  # a merged folder without its kept adapter is not a warm start of this results folder
    with pytest.raises(RuntimeError, match=f"the warm start {adapter} .* is not built yet"):
        sft.sft_folder(cfgs[0], tiny_model, tasks, models, build=False, kept=kept)


def test_llm_smalls_warm_start_is_the_kept_one_and_merges_to_its_recorded_digest_on_this_cpu(pool, smollm2_folder,
                                                                                                   tmp_path):
    """The adapter committed under results/warm_starts/ is the one an llm-small run at any seed starts from (its key
    is the preset's, on this machine's pool and prompts), and merged into the dequantised instruct model here it
    gives the weights whose digest was kept where it was fitted, on another CPU."""
    import json

    from wmrl.presets import run_config
    from wmrl.provenance import REPO
    from wmrl.runs import per_category
    from wmrl.trainer.llm import sft

    cfg = run_config("wmrl", "llm-small", 11, agent="llm")
    adapter = REPO / "results" / "warm_starts" / f"sft-{sft._key(cfg, per_category(pool.train, cfg.train.train_tasks))}"
    assert (adapter / sft.ADAPTER).is_file(), f"llm-small's warm start {adapter.name} is not the kept one"
    kept = json.loads((adapter / "wmrl_sft.json").read_text())
    assert kept["seed"] == cfg.llm.sft_seed and kept["lora_rank"] == cfg.llm.sft_lora_rank
    assert sft.merge_adapter(smollm2_folder, adapter, tmp_path / "merged") == kept["weights_sha256"]


def _numpy_vector_features() -> str:
    """The SIMD features numpy dispatches to on this CPU, for ``NPY_DISABLE_CPU_FEATURES`` (the baseline ones cannot
    be switched off and are left out)."""
    from numpy._core._multiarray_umath import __cpu_baseline__, __cpu_dispatch__, __cpu_features__

    return " ".join(f for f in __cpu_dispatch__ if __cpu_features__.get(f) and f not in __cpu_baseline__)


def test_the_reward_hook_returns_the_steps_fused_rewards_scaled_by_the_group_count():
    """G w_g R_gi, with R from the WMRL step (real on anchors, calibrated predictions elsewhere)."""
    from wmrl.config import MethodConfig
    from wmrl.step import Routing, WMRLStep
    from wmrl.trainer.llm.grpo import RunLog, WMRLReward

    step = WMRLStep("wmrl", MethodConfig(od_min_pairs=2, od_refit_every=2, ivd_warmup_groups=1, ivd_window=2),
                    groups_per_step=2, group_size=2)
    roll = type("R", (), {"routing": Routing(2, np.array([True, False]), np.array([True, True]))})()
    hook = WMRLReward(step, roll, RunLog(), lambda: _Trainer())
    real = [0.6, 0.1, None, None]
    pred = [0.9, 0.5, 0.7, 0.2]
    got = hook(None, None, wmrl_row=[0, 1, 2, 3], wmrl_real=real, wmrl_pred=pred)
    twin = WMRLStep("wmrl", MethodConfig(od_min_pairs=2, od_refit_every=2, ivd_warmup_groups=1, ivd_window=2),
                    groups_per_step=2, group_size=2)
    out = twin(np.array([[0.6, 0.1], [np.nan, np.nan]]), np.array([[0.9, 0.5], [0.7, 0.2]]), np.array([True, False]))
    np.testing.assert_allclose(got, (2 * out.weights[:, None] * out.rewards).ravel())
    assert got[:2] == pytest.approx([2 * out.weights[0] * 0.6, 2 * out.weights[0] * 0.1])  # anchors: real rewards
    assert hook.log.pairs and hook.log.pairs[0]["pred"] == 0.9 and hook.log.pairs[0]["true"] == 0.6


def test_llm_presets_configure_the_llm_agent_and_the_papers_values():
    from wmrl.config import ConfigError
    from wmrl.presets import run_config

    paper = run_config("wmrl", "llm-paper", agent="llm")
    assert (paper.train.groups_per_step, paper.train.group_size, paper.train.max_turns) == (8, 8, 4)
    assert paper.train.lr == 1e-6 and paper.train.kl_coef == 0.04 and paper.train.ent_coef == 0.002
    assert paper.llm.generation == "vllm" and paper.llm.max_new_tokens == 4096 and paper.llm.obs_max_tokens == 1024
    assert paper.sandbox.backend == "docker" and paper.method.od_min_pairs == 200
    with pytest.raises(ConfigError, match="llm"):
        run_config("wmrl", "llm-smoke", agent="grammar")


def test_the_llm_trainer_refuses_active_anchor_selection_by_name_before_any_work(tmp_path):
    from wmrl.config import ConfigError
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import train

    cfg = run_config("wmrl", "llm-smoke", overrides={"method.anchor_selection": "active"}, agent="llm")
    with pytest.raises(ConfigError, match="anchor_selection='active' is not supported by the LLM trainer"):
        train(cfg, tmp_path / "run", pool=None, preset="llm-smoke")
    cfg = run_config("wmrl", "llm-smoke", overrides={"method.od_condition": "huge_capacity"}, agent="llm")
    with pytest.raises(ConfigError, match="od_condition='huge_capacity' .* not supported by the LLM trainer"):
        train(cfg, tmp_path / "run", pool=None, preset="llm-smoke")
    assert not (tmp_path / "run").exists()


def test_the_trl_config_of_a_run_takes_the_kl_and_entropy_of_its_preset_and_no_std_scaling(tmp_path):
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    assert run_config("wmrl", "llm-paper", agent="llm").train.kl_coef == 0.04  # the paper's; llm-small drops it
    cfg = run_config("wmrl", "llm-small", agent="llm")
    args = trainer_args(cfg, tmp_path, cfg.train.groups_per_step)
    assert args.beta == 0.0 and args.entropy_coef == 0.002 and args.scale_rewards == "none"
    assert args.num_generations == cfg.train.group_size
    rows = cfg.train.groups_per_step * cfg.train.group_size
    assert args.per_device_train_batch_size * args.steps_per_generation == rows  # one generation batch per step
    assert args.gradient_accumulation_steps == args.steps_per_generation  # ... and one optimiser step per batch


@pytest.mark.parametrize("preset", ["llm-smoke", "llm-small", "llm-paper"])
def test_every_llm_presets_trl_configs_build_under_the_installed_transformers(preset, tmp_path):
    """GRPO's and the warm start's TRL configs, as a run of the preset builds them (no model loads): every
    keyword is one the installed TrainingArguments takes, and activation checkpointing is the preset's
    own (TRL's configs default it on)."""
    from wmrl.presets import preset_names, run_config
    from wmrl.trainer.llm.sft import sft_args
    from wmrl.trainer.llm.train import trainer_args

    assert {"llm-smoke", "llm-small", "llm-paper"} == set(preset_names("llm"))
    for arm in ("wmrl", "sft"):
        cfg = run_config(arm, preset, agent="llm")
        grpo = trainer_args(cfg, tmp_path / arm, cfg.train.groups_per_step, num_processes=1)
        sft = sft_args(cfg, tmp_path / arm / "sft")
        assert grpo.gradient_checkpointing is sft.gradient_checkpointing is cfg.llm.gradient_checkpointing
        assert grpo.max_steps == cfg.train.steps and sft.max_steps == cfg.llm.sft_steps
        assert not grpo.bf16 and not sft.bf16 and not grpo.fp16 and not sft.fp16  # float32 on the CPU (no GPU here)
    assert run_config("wmrl", preset, agent="llm").llm.gradient_checkpointing is (preset == "llm-paper")


def test_the_trainer_feeds_the_seeded_prompt_schedule_and_a_resume_skips_exactly_the_trained_steps(pool, tmp_path,
                                                                                                   tiny_model):
    """Each step's tasks come from prompt_schedule (passes over the training tasks in seeded orders), so a run
    resumed after any step trains on the tasks the uninterrupted run trained on next. TRL's own sampler reshuffled
    at each pass from a generator a resumed run restarts: the killed-LLM-run resume test trained other tasks at
    step 1 (llm-smoke: three training tasks, two groups a step, so each pass is one step)."""
    from accelerate import skip_first_batches

    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.step import WMRLStep
    from wmrl.trainer.llm.grpo import RunLog
    from wmrl.trainer.llm.train import build_trainer, prompt_schedule

    cfg = run_config("grpo", "llm-smoke", agent="llm", overrides={"train.steps": 5})
    t = cfg.train
    tasks = per_category(pool.train, t.train_tasks)
    names = [x.name for x in tasks]
    schedule = prompt_schedule(names, t.steps * t.groups_per_step, cfg.seed)
    assert schedule == prompt_schedule(names, t.steps * t.groups_per_step, cfg.seed) != prompt_schedule(
        names, t.steps * t.groups_per_step, cfg.seed + 1)
    for start in range(0, len(schedule) - len(names) + 1, len(names)):  # each full pass: every task once
        assert sorted(schedule[start:start + len(names)]) == sorted(names)

    step = WMRLStep(cfg.arm, cfg.method, t.groups_per_step, t.group_size, seed=cfg.seed)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer = build_trainer(cfg, tmp_path, tiny_model, tasks, tasks, step, t.groups_per_step, None, None, RunLog())
    assert not [w for w in caught if "rollout_func" in str(w.message)]  # TRL's experimental-API notice, once per run
    accum = trainer.args.gradient_accumulation_steps

    loader = trainer.get_train_dataloader()
    assert len(loader) // accum == t.steps  # one pass over the data set is the whole run: no reshuffle
    steps = [[row["task"] for row in batch] for batch in loader]  # a step's generation batch, once per micro-step
    groups = [steps[k * accum][::t.group_size] for k in range(t.steps)]
    assert groups == [schedule[k * t.groups_per_step:(k + 1) * t.groups_per_step] for k in range(t.steps)]
    for k in range(1, t.steps):  # what Trainer does on resuming from checkpoint-k
        resumed = [[row["task"] for row in batch] for batch in skip_first_batches(trainer.get_train_dataloader(),
                                                                                  k * accum)]
        assert resumed == steps[k * accum:]


@pytest.mark.gpu
def test_llm_paper_generates_with_vllm_on_a_gpu(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("vllm", reason="needs vLLM: pip install -e '.[gpu]'")
    from wmrl.experiments.run import run_arm

    summary = run_arm("wmrl", "llm-paper", 0, tmp_path / "run", agent="llm",
                      overrides={"train.steps": 1, "agent.model": "Qwen/Qwen3-0.6B", "world_model.backend": "vllm",
                                 "world_model.model": "Qwen/Qwen3-0.6B", "world_model.base_url": None,
                                 "world_model.gpu_memory_utilization": 0.25, "sandbox.backend": "local",
                                 "sandbox.gpu_devices": "0"})
    assert summary["compute"]["generation"]["count"] > 0
    assert summary["gpu_peak_gib"][0]["reserved"] >= summary["gpu_peak_gib"][0]["allocated"] > 0


# -- real runs on SmolLM2 (slow) -------------------------------------------------------------------------------

# The LLM trainer's distinct paths: both streams with OD and IVD, evaluation only, execution only, world
# model only (`make test-llm`: each end-to-end SmolLM2 run costs minutes on 2 cores; `make test` runs the
# wmrl path on the tiny model, below). What separates mix / od / ivd / anchor_only from these is WMRLStep's
# switches, tested for every arm in tests/test_step.py.
ARMS = ["wmrl", "untrained", "grpo", "wm"]


def _check_llm_run_folder(arm: str, out: Path, summary: dict) -> pd.DataFrame | None:
    """What every LLM run writes, as a grammar run does; the step table of a trained arm."""
    from wmrl.arms import get_arm

    for name in ("summary.json", "steps.parquet", "eval.parquet", "ledger.parquet", "pairs.parquet",
                 "calibration.json"):
        assert (out / name).exists(), name
    evals = pd.read_parquet(out / "eval.parquet")
    assert set(evals.columns) >= {"step", "task", "category", "percentile", "reward", "ok_rate"}
    assert summary["agent"] == "llm" and 0.0 <= summary["heldout"]["avg"] <= 1.0
    assert summary["wall_s"] >= summary["eval_actual_s"] > 0  # the wall time counts the evaluations too
    if arm == "untrained":
        return None
    steps = pd.read_parquet(out / "steps.parquet")
    assert list(steps.step) == [0, 1]
    assert {"rho", "eta2", "train_reward", "kl", "entropy", "loss"} <= set(steps.columns)
    ledger = pd.read_parquet(out / "ledger.parquet")
    assert set(ledger.component) == {"generation", "world_model", "execution", "update"}
    by = ledger.groupby("component")["count"].sum()
    assert by["generation"] > 0 and by["update"] > 0
    assert (by["execution"] > 0) == (arm != "wm")
    assert (by["world_model"] > 0) == (arm not in ("grpo", "anchor_only")) or by["world_model"] == 0
    if arm in ("od", "wmrl"):
        assert steps.od_pairs.iloc[-1] > 0
    if get_arm(arm).world_model:  # the LLM world model's counts, per step and in total
        assert {"wm_requests", "wm_parse_failures", "wm_defaulted", "wm_parse_failure_rate"} <= set(steps.columns)
        assert summary["world_model"]["requests"] == steps.wm_requests.sum() > 0
        assert 0.0 <= summary["world_model"]["parse_failure_rate"] <= 1.0
    else:
        assert "world_model" not in summary
    return steps


class _Killed(RuntimeError):
    """A run stopped where a kill would have stopped it."""


def _every_other_reply_a_solution(pool, scripted: dict, killed_once: Path | None = None):
    """The real generator, its replies then replaced by real code: every other context gets a grammar-rendered
    solution of its task, the rest a script that fails at run time (counted in ``scripted["n"]``). With
    ``killed_once``, the first generation after that file exists raises :class:`_Killed`."""
    from wmrl.agent.grammar import baseline_choices
    from wmrl.agent.llm.solution import reply_for, script_target
    from wmrl.trainer.llm.generate import TransformersGenerator

    tasks = list(pool.train) + list(pool.heldout)

    class EveryOtherReplyASolution(TransformersGenerator):  # the real one, whatever is patched in
        def generate(self, contexts, max_new_tokens, seed):
            if killed_once is not None and killed_once.exists():
                raise _Killed(f"stopped after {killed_once}")
            sampled, logprobs = super().generate(contexts, min(max_new_tokens, 8), seed)  # replaced below
            for i, context in enumerate(contexts):
                text = self.tokenizer.decode(context)
                task = next(t for t in tasks if t.description.strip().splitlines()[0] in text)
                code = script_target(task, baseline_choices(task)) if i % 2 == 0 else "import no_such_module\n"
                sampled[i] = self.tokenizer(reply_for(code), add_special_tokens=False)["input_ids"] + [
                    self.tokenizer.eos_token_id]
                scripted["n"] += 1
            return sampled, logprobs

    return EveryOtherReplyASolution


def _replays_to_every_file(out: Path, record_file: Path, tmp_path: Path, monkeypatch, kw: dict) -> None:
    """Export the record a run at ``out`` was made under and replay the run from it into a fresh folder,
    executing nothing: every file the run wrote comes back."""
    from wmrl import record
    from wmrl.experiments.run import run_arm
    from wmrl.reproduce import compare_outputs
    from wmrl.sandbox.runner import Sandbox

    record.export(record_file)
    monkeypatch.setattr(Sandbox, "_execute", lambda self, task, code: pytest.fail("a replay executed a script"))
    monkeypatch.setenv(record.ENV, f"replay:{record_file.parent}")
    monkeypatch.setattr(record, "_ACTIVE", None)  # opened afresh, as a new process would
    again = tmp_path / "b" / "train" / "llm-smoke" / "wmrl" / "seed0"
    run_arm("wmrl", "llm-smoke", 0, again, memo_path=tmp_path / "other-memo.sqlite", **kw)
    found = compare_outputs(out, again)
    assert not found["differ"] and not found["missing"], found
    assert {"summary.json", "steps.parquet", "eval.parquet", "ledger.parquet", "pairs.parquet"} <= set(
        found["same"] + found["rounding"])


@pytest.mark.slow
def test_the_wmrl_path_runs_end_to_end_on_a_tiny_model_whose_every_other_reply_is_a_real_solution(
        pool, tmp_path, tiny_model, monkeypatch):
    """``run --agent llm --arm wmrl --preset llm-smoke`` with the tiny Llama as policy and frozen world model
    (constrained decoding). The tiny model samples the start of every reply through the real generator
    (a few tokens: the rest would be thrown away), and the replies are then replaced by real code (the
    random model's own text is not code, and may hold the template's special tokens): every other context
    gets a grammar-rendered solution of its task, the rest a script that fails at run time. So turns run in
    the real sandbox, the world model scores scripts, Online Debiasing gets pairs that differ, and TRL
    updates on them. The run is recorded, then replayed from its record without executing anything: every file
    comes back. A run costs about a minute on 2 cores; the same run on SmolLM2 is in `make test-llm`."""
    from wmrl import record
    from wmrl.experiments.run import run_arm
    from wmrl.trainer.llm import train as llm_train

    scripted = {"n": 0}
    monkeypatch.setattr(llm_train, "TransformersGenerator", _every_other_reply_a_solution(pool, scripted))
    record_file = tmp_path / "executions" / "llm.jsonl.gz"
    record_file.parent.mkdir()
    monkeypatch.setenv(record.ENV, f"record:{record_file}")  # what the run measures is recorded
    out = tmp_path / "a" / "train" / "llm-smoke" / "wmrl" / "seed0"
    kw = {"agent": "llm", "progress": False,
          # a turn of real code is up to ~550 tokens: a budget under it is refused by the rollout
          "overrides": {"agent.model": str(tiny_model), "llm.max_new_tokens": 1024}}
    summary = run_arm("wmrl", "llm-smoke", 0, out, memo_path=tmp_path / "memo.sqlite", **kw)
    steps = _check_llm_run_folder("wmrl", out, summary)
    assert scripted["n"] > 0
    pairs = pd.read_parquet(out / "pairs.parquet")
    assert len(pairs) and pairs.true.nunique() > 1  # anchors that ran ok beside replies that did not
    assert (pd.read_parquet(out / "eval.parquet").ok_rate > 0).any()
    assert summary["world_model"]["predictions"] > summary["world_model"]["gated"]  # the model was asked
    assert steps.wm_requests.sum() > 0

    # replayed from its record: nothing executes, no clock is read, and every file comes back
    _replays_to_every_file(out, record_file, tmp_path, monkeypatch, kw)


@pytest.mark.slow
@pytest.mark.llm_heavy
def test_a_recorded_llm_run_stopped_after_a_checkpoint_and_resumed_replays_to_every_file(
        pool, tmp_path, tiny_model, monkeypatch):
    """The tiny-model wmrl run above, recorded, stopped at the first generation after its first checkpoint
    (what step 2 had recorded is lost with it) and resumed from that checkpoint in a record opened afresh, as a
    new process would: its record reads as an uninterrupted run's, so a replay of it, which executes nothing
    and is not interrupted, comes back to every file, the memo's counters in the summary included."""
    from wmrl import record
    from wmrl.experiments.run import run_arm
    from wmrl.trainer.llm import train as llm_train
    from wmrl.trainer.llm.grpo import STATE_FILE

    scripted = {"n": 0}
    out = tmp_path / "a" / "train" / "llm-smoke" / "wmrl" / "seed0"
    record_file = tmp_path / "executions" / "llm.jsonl.gz"
    record_file.parent.mkdir()
    monkeypatch.setenv(record.ENV, f"record:{record_file}")
    kw = {"agent": "llm", "progress": False,
          "overrides": {"agent.model": str(tiny_model), "llm.max_new_tokens": 1024, "train.checkpoint_every": 1}}
    monkeypatch.setattr(llm_train, "TransformersGenerator", _every_other_reply_a_solution(
        pool, scripted, killed_once=out / "trl" / "checkpoint-1" / STATE_FILE))
    with pytest.raises(_Killed):
        run_arm("wmrl", "llm-smoke", 0, out, memo_path=tmp_path / "memo.sqlite", **kw)
    assert not (out / "summary.json").exists() and not (out / "trl" / "checkpoint-2").exists()

    monkeypatch.setattr(record, "_ACTIVE", None)  # a new process opens the record again
    monkeypatch.setattr(llm_train, "TransformersGenerator", _every_other_reply_a_solution(pool, scripted))
    summary = run_arm("wmrl", "llm-smoke", 0, out, memo_path=tmp_path / "memo.sqlite", **kw)
    assert list(pd.read_parquet(out / "steps.parquet").step) == [0, 1]
    assert summary["memo"]["hits"] + summary["memo"]["misses"] > 0

    _replays_to_every_file(out, record_file, tmp_path, monkeypatch, kw)


@pytest.mark.slow
@pytest.mark.llm_heavy
@pytest.mark.parametrize("arm", ARMS)
def test_llm_smoke_runs_each_trainer_path_end_to_end_and_writes_a_grammar_runs_files(arm, pool, tmp_path, smollm2_folder):
    from wmrl.experiments.run import run_arm

    out = tmp_path / arm
    summary = run_arm(arm, "llm-smoke", 0, out, agent="llm", memo_path=tmp_path / "memo.sqlite")
    _check_llm_run_folder(arm, out, summary)


def _run_killed_after_first_checkpoint(arm: str, out: Path, overrides: dict) -> None:
    """Start ``arm`` at llm-smoke in a child process and kill it as soon as its first checkpoint is complete."""
    cmd = [sys.executable, "-m", "wmrl.experiments", "run", "--agent", "llm", "--arm", arm, "--preset", "llm-smoke",
           "--out", str(out), *[a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marker = out / "trl" / "checkpoint-1" / "wmrl_state.pt"
    deadline = time.time() + 1800
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    assert marker.exists(), "the run never checkpointed its first step"
    if (out / "summary.json").exists():
        pytest.skip("the run finished before it could be killed")


@pytest.mark.slow
@pytest.mark.llm_heavy
def test_a_killed_llm_run_resumes_and_ends_bit_identical_to_an_uninterrupted_one(pool, tmp_path, smollm2_folder):
    """A wmrl run (world model, anchors, Online Debiasing and IVD state) killed after its first checkpoint and
    rerun ends where a run never interrupted ends: the same step rows (rewards, eta^2, rho, loss, KL, the world
    model's counts), evaluations, anchor pairs, calibration snapshots, world-model totals and final weights, bit for
    bit. Only the seconds differ."""
    import torch
    from safetensors.torch import load_file

    from wmrl.experiments.run import run_arm

    # the killed run is a fresh process, with torch's default thread count: the reference must use the same
    # (another count rounds float sums differently); a module that changed it for the whole process broke this
    default = subprocess.run([sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
                             capture_output=True, text=True, check=True).stdout.strip()
    assert str(torch.get_num_threads()) == default, "a test changed torch's thread count for the whole process"
    overrides = {"train.checkpoint_every": 1}
    ref = tmp_path / "uninterrupted"
    expected = run_arm("wmrl", "llm-smoke", 0, ref, agent="llm", overrides=overrides, progress=False)
    out = tmp_path / "resumed"
    _run_killed_after_first_checkpoint("wmrl", out, overrides)
    assert not (out / "trl" / "checkpoint-2").exists()
    got = run_arm("wmrl", "llm-smoke", 0, out, agent="llm", overrides=overrides, progress=False)

    for name in ("steps", "eval", "pairs"):
        pd.testing.assert_frame_equal(pd.read_parquet(out / f"{name}.parquet"), pd.read_parquet(ref / f"{name}.parquet"))
    steps = pd.read_parquet(out / "steps.parquet")
    assert list(steps.step) == [0, 1]  # step 0 from the killed run's checkpoint, step 1 from the resumed one
    assert (out / "calibration.json").read_text() == (ref / "calibration.json").read_text()
    assert got["heldout"] == expected["heldout"]
    assert got["world_model"] == expected["world_model"]
    # the memo's counters came back from the checkpoint: every lookup counted once (the reference filled the
    # shared memo first, so hits and misses split differently, but not their sum)
    assert sum(got["memo"][k] for k in ("hits", "misses")) == sum(expected["memo"][k] for k in ("hits", "misses"))
    assert got["world_model"]["requests"] == steps.wm_requests.sum()
    assert got["world_model"]["predictions"] == steps.wm_predictions.sum() > steps.wm_predictions.iloc[-1]  # both steps
    counts = ["step", "component", "count"]
    pd.testing.assert_frame_equal(pd.read_parquet(out / "ledger.parquet")[counts],
                                  pd.read_parquet(ref / "ledger.parquet")[counts])
    final_ref = load_file(ref / "trl" / "checkpoint-2" / "model.safetensors")
    final = load_file(out / "trl" / "checkpoint-2" / "model.safetensors")
    assert final.keys() == final_ref.keys() and all((final[k] == final_ref[k]).all() for k in final)


def test_a_resume_with_another_torch_thread_count_says_it_will_not_be_bit_identical():
    import warnings

    import torch

    from wmrl.trainer.llm.train import _warn_if_other_threads

    with pytest.warns(UserWarning, match="not be bit-identical"):
        _warn_if_other_threads(torch.get_num_threads() + 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _warn_if_other_threads(torch.get_num_threads())
        _warn_if_other_threads(None)  # a checkpoint written before the count was saved


def test_a_run_refuses_to_resume_from_a_checkpoint_of_another_configuration(pool, tmp_path):
    """Resuming a run with changed settings would mix two experiments in one folder: refused, nothing deleted."""
    import torch

    from wmrl.presets import run_config
    from wmrl.trainer.llm.grpo import STATE_FILE
    from wmrl.trainer.llm.train import train

    cfg = run_config("grpo", "llm-smoke", agent="llm")
    ckpt = tmp_path / "trl" / "checkpoint-1"
    ckpt.mkdir(parents=True)
    torch.save({"step": {}, "log": {}, "config": cfg.with_overrides({"train.lr": 1e-3}).identity()}, ckpt / STATE_FILE)
    with pytest.raises(RuntimeError, match="another configuration"):
        train(cfg, tmp_path, pool, "llm-smoke", progress=False)
    assert (ckpt / STATE_FILE).exists()


def test_the_world_models_run_totals_are_the_sums_of_its_logged_steps_with_rates_from_the_sums():
    """What summary.json reports: the per-step counts (which a resumed run restores) summed, rates recomputed."""
    from wmrl.trainer.llm.grpo import RunLog

    log = RunLog(steps=[
        {"step": 0, "wm_reward": 0.4, "wm_requests": 10, "wm_repairs": 2, "wm_parse_failures": 1, "wm_defaulted": 1,
         "wm_predictions": 8, "wm_parse_failure_rate": 1 / 8, "wm_defaulted_rate": 1 / 8},
        {"step": 1, "wm_reward": 0.2, "wm_requests": 6, "wm_repairs": 0, "wm_parse_failures": 0, "wm_defaulted": 3,
         "wm_predictions": 6, "wm_backend_no_reply": 3, "wm_parse_failure_rate": 0.0, "wm_defaulted_rate": 0.5},
    ])
    totals = log.world_model_totals()
    assert totals["requests"] == 16 and totals["parse_failures"] == 1 and totals["backend_no_reply"] == 3
    assert "reward" not in totals  # the mean predicted reward is not a count
    assert totals["parse_failure_rate"] == pytest.approx(1 / 14)  # per check asked: 16 requests - 2 repairs
    assert totals["defaulted_rate"] == pytest.approx(4 / 14)
    assert RunLog(steps=[{"step": 0, "wm_reward": 0.1}]).world_model_totals() is None


def test_llm_paper_rollout_and_reward_path_run_on_cpu_with_a_stub_generator(pool, smollm2_folder):
    """The paper preset's routing (1 anchor group of 8), prompts, rollout and reward hook, without a GPU:
    a stub generator writes a real solution, anchors run in the real sandbox, a stub world model scores the rest."""
    from transformers import AutoTokenizer

    from wmrl.agent.grammar import baseline_choices
    from wmrl.agent.llm.solution import reply_for, script_target
    from wmrl.presets import run_config
    from wmrl.step import WMRLStep
    from wmrl.trainer.llm.grpo import RunLog, WMRLReward, WMRLRollout, prompt_key
    from wmrl.trainer.llm.train import rollout_settings
    from wmrl.trainer.rollout import Scorer
    from wmrl.world_model.base import aggregate

    cfg = run_config("wmrl", "llm-paper", agent="llm", overrides={"sandbox.backend": "local", "sandbox.timeout_s": 30.0})
    tok = AutoTokenizer.from_pretrained(str(smollm2_folder))
    task = pool["iris_species"]
    reply = reply_for(script_target(task, baseline_choices(task)))

    class Stub:
        def generate(self, contexts, max_new_tokens, seed):
            assert max_new_tokens == 4096
            return [tok(reply, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for _ in contexts], None

    class OptimistWM:
        def predict_many(self, items):
            return [aggregate([{"check": "quality", "verdict": "pass", "quality_bucket": "high"}]) for _ in items]

    from wmrl.sandbox.runner import Sandbox

    log = RunLog()
    step = WMRLStep("wmrl", cfg.method, cfg.train.groups_per_step, cfg.train.group_size, seed=0)
    settings = rollout_settings(cfg)
    prompt = settings.messages(task)
    scorer = Scorer(Sandbox("local", timeout_s=30), OptimistWM(), log.ledger, None, 2)
    roll = WMRLRollout(step, {prompt_key(prompt): task}, scorer, settings, 0, log, lambda trainer: Stub())

    class Trainer:
        num_generations, processing_class = 8, tok
        accelerator = type("A", (), {"num_processes": 1, "process_index": 0})()
        state = type("S", (), {"global_step": 0})()

    out = roll([prompt] * 64, Trainer())
    assert roll.routing.executed.sum() == 1 and roll.routing.predicted.all()
    anchor = int(np.flatnonzero(roll.routing.executed)[0])
    real = np.array([np.nan if r is None else r for r in out["wmrl_real"]]).reshape(8, 8)
    assert np.isfinite(real[anchor]).all() and np.isnan(np.delete(real, anchor, axis=0)).all()
    assert (real[anchor] > 0.5).all()  # the baseline script really ran and scored
    assert all(sum(m) == len(m) for m in out["env_mask"])  # one turn each: ok ends the trajectory
    hook = WMRLReward(step, roll, log, lambda: Trainer())
    rewards = hook(None, None, **{k: out[k] for k in ("wmrl_row", "wmrl_real", "wmrl_pred")})
    assert len(rewards) == 64 and all(r is not None for r in rewards)
    assert log.pairs and log.pending["n_executed_groups"] == 1


def test_the_paper_launch_config_is_an_accelerate_fsdp_config():
    import yaml

    from wmrl.trainer import llm

    cfg = yaml.safe_load((Path(llm.__file__).parent / "accelerate" / "paper_8gpu.yaml").read_text())
    assert cfg["distributed_type"] == "FSDP" and cfg["num_processes"] == 4 and cfg["mixed_precision"] == "bf16"


def test_a_warm_start_fitted_to_other_prompt_text_is_another_warm_start(pool, monkeypatch):
    from wmrl.presets import run_config
    from wmrl.trainer.llm import sft

    cfg = run_config("sft", "llm-small", 0, agent="llm")
    tasks = list(pool.train)
    key = sft._key(cfg, tasks)
    assert sft._key(cfg, list(reversed(tasks))) == key  # the same prompts in another order: the same one
    assert sft._key(run_config("wmrl", "llm-small", 9, agent="llm"), tasks) == key  # llm.sft_seed: every seed's
    assert sft._key(run_config("sft", "llm-small", 0, {"llm.sft_seed": 1}, agent="llm"), tasks) != key
    edited = sft.task_messages

    def with_a_new_line(task, contract, facts):
        system, user = edited(task, contract, facts)
        return [system, {**user, "content": user["content"] + "\nThink step by step."}]

    monkeypatch.setattr(sft, "task_messages", with_a_new_line)
    assert sft._key(cfg, tasks) != key
