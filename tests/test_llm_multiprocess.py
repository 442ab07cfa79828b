"""The LLM trainer across processes: a step's rows shared, the process group's timeout, devices, one run folder.

The fast tests check the arithmetic against TRL's and torch's own code; the end-to-end one launches
``torchrun --nproc_per_node 2`` on gloo (``make test-llm``).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("trl", reason="the LLM agent needs TRL: pip install -e '.[llm]'")


def _at_processes(monkeypatch, n: int) -> None:
    """Make TRL's config validation see ``n`` processes (its ``world_size``), as under a launcher."""
    from trl import GRPOConfig

    monkeypatch.setattr(GRPOConfig, "world_size", property(lambda self: n))


@pytest.mark.parametrize("processes", [8, 4])
def test_llm_paper_on_several_processes_is_one_step_of_8_groups_in_trls_own_arithmetic(monkeypatch, tmp_path,
                                                                                      processes):
    """TRL's generation batch is per_device x processes x steps_per_generation rows (GRPOConfig.__post_init__):
    at 8 processes (and at paper_8gpu.yaml's 4) it must still be the step's 64 rows, shared evenly, the 8 groups
    the WMRL step routes."""
    from wmrl.presets import run_config
    from wmrl.step import WMRLStep
    from wmrl.trainer.llm.train import trainer_args

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    t = cfg.train
    _at_processes(monkeypatch, processes)
    args = trainer_args(cfg, tmp_path, t.groups_per_step, num_processes=processes)
    assert args.world_size == processes
    assert args.generation_batch_size == t.groups_per_step * t.group_size == 64
    share = 64 // processes
    assert args.per_device_train_batch_size * args.steps_per_generation == share  # each process's share
    assert args.per_device_train_batch_size <= cfg.llm.micro_batch
    assert args.gradient_accumulation_steps == args.steps_per_generation  # one optimiser step per generation
    routed = WMRLStep(cfg.arm, cfg.method, t.groups_per_step, t.group_size, seed=0).route().n_groups
    assert args.generation_batch_size // args.num_generations == routed == 8
    # what WMRLRollout checks on each process: its prompts times the processes, in groups of n
    assert processes * share // args.num_generations == routed

    anchors = run_config("anchor_only", "llm-paper", agent="llm")  # one anchor group of 8 rows in all
    step = WMRLStep("anchor_only", anchors.method, t.groups_per_step, t.group_size, seed=0)
    a = trainer_args(anchors, tmp_path, step.anchors.n_anchors(t.groups_per_step), num_processes=processes)
    assert a.generation_batch_size == 8
    assert a.per_device_train_batch_size * a.steps_per_generation == 8 // processes


def test_a_step_that_the_processes_cannot_share_evenly_is_refused_by_name(monkeypatch, tmp_path):
    from wmrl.config import ConfigError
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    _at_processes(monkeypatch, 3)
    with pytest.raises(ConfigError, match="64 trajectories, which 3 processes cannot share evenly"):
        trainer_args(cfg, tmp_path, cfg.train.groups_per_step, num_processes=3)


def test_a_config_built_for_other_processes_than_trl_sees_is_refused(monkeypatch, tmp_path):
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    _at_processes(monkeypatch, 4)
    with pytest.raises(RuntimeError, match="generation batch is 32 rows on its 4 processes, not the step's 64"):
        trainer_args(cfg, tmp_path, cfg.train.groups_per_step, num_processes=8)


def test_the_collective_timeout_covers_a_processs_executions_at_the_sandboxs_wall_backstop():
    """llm-paper: 1200 CPU s a script, backstop 5 x 1200 s wall; 4 turns; 8 workers a process. At 8 processes a
    process holds 8 training rows (one batch of workers) and, with 16 held-out tasks x 8 samples, 16 evaluation
    rows (two batches): 4 turns x 2 batches x 6000 s, plus the margin."""
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import COLLECTIVE_MARGIN_S, collective_timeout_s

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    assert collective_timeout_s(cfg, 8, 16) == 4 * 2 * 6000.0 + COLLECTIVE_MARGIN_S
    assert collective_timeout_s(cfg, 8, 8) == 4 * 1 * 6000.0 + COLLECTIVE_MARGIN_S
    one = collective_timeout_s(cfg, 1, 8)  # one process: 64 training rows, 8 batches
    assert one == 4 * 8 * 6000.0 + COLLECTIVE_MARGIN_S
    backstop = cfg.with_overrides({"sandbox.wall_timeout_s": 1500.0})
    assert collective_timeout_s(backstop, 8, 8) == 4 * 1500.0 + COLLECTIVE_MARGIN_S
    assert collective_timeout_s(cfg, 8, 8) > 1800  # torch's default would kill the run


def test_trls_ddp_timeout_is_the_collective_timeout(tmp_path):
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    cfg = run_config("wmrl", "llm-smoke", agent="llm")
    args = trainer_args(cfg, tmp_path, cfg.train.groups_per_step, num_processes=1, timeout_s=4321.5)
    assert args.ddp_timeout == 4322


def test_the_run_starts_the_process_group_with_its_timeout_and_provenance_reads_it_back(tmp_path):
    """On CPU, TRL's config starts the process group without its ddp_timeout, so the run starts it first; the
    timeout is read back from torch's own process group (a one-process gloo group, as torchrun sets it up)."""
    code = textwrap.dedent("""
        import json
        from wmrl.presets import run_config
        from wmrl.provenance import processes
        from wmrl.trainer.llm.train import _start_processes
        state = _start_processes(run_config("wmrl", "llm-smoke", agent="llm"), 4321.0)
        print(json.dumps({"n": state.num_processes, "processes": processes()}))
    """)
    env = {**os.environ, "RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1",
           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(29_000 + os.getpid() % 1000), "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"n": 1, "processes": {"count": 1, "collective_timeout_s": 4321.0}}


def test_provenance_counts_one_process_without_a_launcher(monkeypatch):
    from wmrl.provenance import provenance

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    assert provenance()["processes"]["count"] == 1
    monkeypatch.setenv("WORLD_SIZE", "8")
    assert provenance()["processes"]["count"] == 8


def test_summed_ledgers_add_every_processs_seconds_and_counts_per_step_and_component():
    from wmrl.ledger import COMPONENTS, ComputeLedger

    a, b = ComputeLedger(), ComputeLedger()
    for step in range(2):
        a.charge("generation", 1.0 + step, count=2)
        a.charge("update", 3.0)
        b.charge("generation", 0.5, 0.25, count=2)
        b.charge("execution", 2.0, 7.0)
        b.charge("oracle", 1.0, 4.0, count=3)  # recorded apart, summed apart
        a.end_step()
        b.end_step()
    total = ComputeLedger.summed([a, b])
    frame = total.to_frame()
    assert list(frame.columns) == ["step", "component", "actual_s", "charged_s", "count"]
    assert list(frame.component) == list(COMPONENTS) * 2 and list(frame.step) == [0] * 4 + [1] * 4
    gen = frame[frame.component == "generation"]
    assert gen.actual_s.tolist() == [1.5, 2.5] and gen.charged_s.tolist() == [1.25, 2.25] and gen["count"].sum() == 8
    assert total.totals().loc["execution", "charged_s"] == 14.0 and total.totals().loc["update", "count"] == 2
    assert total.apart_totals() == {"oracle": {"actual_s": 2.0, "charged_s": 8.0, "count": 6}}
    assert total.step == 2
    pd.testing.assert_frame_equal(ComputeLedger.summed([a]).to_frame(), a.to_frame())  # one process: unchanged
    assert ComputeLedger.from_state_dict(total.state_dict()).to_frame().equals(frame)


def test_a_resumed_process_other_than_the_main_one_restarts_its_bills_at_the_saved_step():
    """A checkpoint holds every process's bills summed: the main process takes them, the others start empty at
    the saved step, so the run's final sum counts each bill once."""
    from wmrl.ledger import ComputeLedger
    from wmrl.trainer.llm.grpo import RunLog

    saved = RunLog(steps=[{"step": 0}])
    saved.ledger.charge("update", 2.0, count=2)
    saved.ledger.end_step()
    main, other = RunLog(), RunLog()
    main.load_state_dict(saved.state_dict(), main=True)
    other.load_state_dict(saved.state_dict(), main=False)
    assert main.ledger.to_frame().equals(saved.ledger.to_frame())
    assert other.ledger.step == 1 and other.ledger.to_frame().empty and other.steps == [{"step": 0}]
    for log in (main, other):  # the next step, one update on each process
        log.ledger.charge("update", 1.0)
        log.ledger.end_step()
    total = ComputeLedger.summed([main.ledger, other.ledger]).to_frame()
    assert total[total.component == "update"]["count"].tolist() == [2, 2]


def test_a_checkpoint_keeps_the_memo_counters_and_a_resumed_run_counts_each_lookup_once(tmp_path):
    """The memo's hit and miss counters are saved with the log; on resuming the main process takes them and the
    others count from zero, so the counters summed at the end are those of a run never interrupted."""
    from wmrl.trainer.llm.grpo import RunLog
    from wmrl.trainer.memo import ExecutionMemo

    def memo(name):
        return ExecutionMemo(tmp_path / f"{name}.sqlite", salt="s")

    saved = RunLog(memo=memo("saved"))
    saved.memo.put("t", "a", {"status": "ok"})
    saved.memo.get("t", "a"), saved.memo.get("t", "b")
    state = saved.state_dict()
    assert state["memo"] == {"hits": 1, "misses": 1}
    main, other = RunLog(memo=memo("main")), RunLog(memo=memo("other"))
    main.load_state_dict(state, main=True)
    other.load_state_dict(state, main=False)
    assert main.memo.state_dict() == {"hits": 1, "misses": 1} and other.memo.state_dict() == {"hits": 0, "misses": 0}
    old = RunLog(memo=memo("old"))
    old.load_state_dict({k: v for k, v in state.items() if k != "memo"})  # a checkpoint written without counters
    assert old.memo.state_dict() == {"hits": 0, "misses": 0}


def test_the_steps_rollout_statistics_come_from_every_processs_rows():
    """The reward hook sees every process's rows (gathered), and the step's row is their statistics, not those of
    the rows this process rolled out."""
    from wmrl.trainer.llm.grpo import step_stats

    mine = [(1, False, 10, True, (("ok", "ok"),)), (2, True, 30, None, ())]
    theirs = [(2, False, 20, False, (("ok", "timeout"),)), (2, False, 40, None, ())]
    got = step_stats(mine + theirs)
    assert got["mean_turns"] == 1.75 and got["malformed_rate"] == 0.25 and got["completion_tokens"] == 25.0
    assert got["real_ok_rate"] == 0.5 and got["status_acc"] == 0.5
    assert (got["said_ok_ran_ok"], got["said_ok_ran_timeout"]) == (1, 1) and "said_timeout_ran_ok" not in got
    assert math.isnan(step_stats([(1, False, 5, None, ())])["status_acc"])


def test_the_execution_memo_takes_writes_and_reads_from_concurrent_processes(tmp_path):
    """Two processes of one run share its memo (SQLite, with a busy timeout): every write lands, nothing raises."""
    code = textwrap.dedent("""
        import sys
        from wmrl.trainer.memo import ExecutionMemo
        rank, path = int(sys.argv[1]), sys.argv[2]
        memo = ExecutionMemo(path, "salt")
        for i in range(200):
            memo.put("t", f"code{rank}-{i}", {"status": "ok", "i": i})
            memo.put("t", f"shared-{i}", {"status": "ok", "i": i})
            memo.get("t", f"code{1 - rank}-{i}")
        memo.close()
    """)
    path = tmp_path / "memo.sqlite"
    procs = [subprocess.Popen([sys.executable, "-c", code, str(r), str(path)], stderr=subprocess.PIPE, text=True)
             for r in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    from wmrl.trainer.memo import ExecutionMemo

    memo = ExecutionMemo(path, "salt")
    assert all(memo.get("t", f"code{r}-{i}") == {"status": "ok", "i": i} for r in range(2) for i in range(200))
    assert all(memo.get("t", f"shared-{i}") is not None for i in range(200))


def test_the_llm_device_is_a_configuration_field_and_a_missing_gpu_is_named(monkeypatch):
    import torch

    from wmrl.agent.llm.model import llm_device, load_causal_lm
    from wmrl.config import ConfigError, LLMConfig

    assert LLMConfig().device == "auto" and load_causal_lm.__defaults__ == ("auto",)  # the config's default
    assert llm_device("cpu") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert llm_device("auto") == torch.device("cpu")
    with pytest.raises(ConfigError, match="llm.device='cuda' but CUDA sees no GPU"):
        llm_device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setenv("LOCAL_RANK", "3")
    assert llm_device("auto") == torch.device("cuda", 3)  # under a launcher: this process's own GPU
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    with pytest.raises(ConfigError, match="process 3 of 4 on this node has no GPU of its own: CUDA sees 1"):
        llm_device("auto")
    with pytest.raises(ConfigError, match="llm.device='gpu' is not valid"):
        llm_device("gpu")
    with pytest.raises(ConfigError, match="llm.device='gpu' is not valid"):
        LLMConfig(device="gpu")


def test_the_paper_preset_checkpoints_activations_and_saves_every_tenth_step(tmp_path, monkeypatch):
    from wmrl.config import SCHEDULING_FIELDS
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import trainer_args

    paper = run_config("wmrl", "llm-paper", agent="llm")
    assert paper.llm.gradient_checkpointing and paper.llm.micro_batch == 1 and paper.train.checkpoint_every == 10
    _at_processes(monkeypatch, 8)
    args = trainer_args(paper, tmp_path, 8, num_processes=8)
    assert args.gradient_checkpointing and args.save_steps == 10
    monkeypatch.undo()
    small = run_config("wmrl", "llm-small", agent="llm")
    assert not small.llm.gradient_checkpointing
    assert not trainer_args(small, tmp_path, 4, num_processes=1).gradient_checkpointing
    assert {"llm.device", "llm.gradient_checkpointing"} <= set(SCHEDULING_FIELDS)  # how, not what, a run computes


def test_a_run_of_several_processes_refuses_to_build_a_missing_warm_start(pool, tmp_path):
    from wmrl.presets import run_config
    from wmrl.trainer.llm.sft import sft_folder

    cfg = run_config("sft", "llm-smoke", 0, {"llm.sft_steps": 2}, agent="llm")
    with pytest.raises(RuntimeError, match="a run of several processes does not build it; build it first"):
        sft_folder(cfg, tmp_path / "base", list(pool.train)[:1], tmp_path / "models", build=False)
    assert not (tmp_path / "models").exists()


# -- two processes on gloo, end to end (make test-llm) -----------------------------------------------------------

# The CLI's main under torchrun, with two additions: each write of the run folder is logged with the writing
# process's rank, and the policy's replies are real code (every other one a grammar-rendered solution of its
# task, the rest a script that fails at run time: the tiny model's own text is not code), so that both processes
# execute, ask the world model and bill their work.
_LAUNCH = """
import os, sys
from wmrl.agent.grammar import baseline_choices
from wmrl.agent.llm.solution import reply_for, script_target
from wmrl.tasks import get_pool
from wmrl.trainer.llm import train as llm_train

write_run = llm_train.write_run
pool = get_pool()
tasks = list(pool.train) + list(pool.heldout)


def counted(out, *args, **kwargs):
    with open(os.environ["WMRL_TEST_WRITES"], "a") as f:
        f.write(os.environ.get("RANK", "?") + "\\n")
    return write_run(out, *args, **kwargs)


class EveryOtherReplyASolution(llm_train.TransformersGenerator):
    def generate(self, contexts, max_new_tokens, seed):
        sampled, logprobs = super().generate(contexts, min(max_new_tokens, 8), seed)  # replaced below
        for i, context in enumerate(contexts):
            text = self.tokenizer.decode(context)
            task = next(t for t in tasks if t.description.strip().splitlines()[0] in text)
            code = script_target(task, baseline_choices(task)) if i % 2 == 0 else "import no_such_module\\n"
            sampled[i] = self.tokenizer(reply_for(code), add_special_tokens=False)["input_ids"] + [
                self.tokenizer.eos_token_id]
        return sampled, logprobs


llm_train.write_run = counted
llm_train.TransformersGenerator = EveryOtherReplyASolution
from wmrl.experiments.__main__ import main

sys.exit(main(sys.argv[1:]))
"""


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory, smollm2_folder):
    from wmrl.models import tiny_llama

    return tiny_llama(tmp_path_factory.mktemp("tiny"), smollm2_folder)


def _torchrun(script: Path, out: Path, writes: Path, overrides: dict, log: Path) -> subprocess.Popen:
    """``torchrun --standalone --nproc_per_node 2`` of the CLI's ``run --agent llm --arm wmrl --preset llm-smoke``."""
    torchrun = Path(sys.executable).with_name("torchrun")
    cmd = [str(torchrun), "--standalone", "--nproc_per_node", "2", str(script), "run", "--agent", "llm", "--arm",
           "wmrl", "--preset", "llm-smoke", "--out", str(out),
           *[a for k, v in overrides.items() for a in ("--set", f"{k}={v}")]]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "WMRL_TEST_WRITES": str(writes)}
    with open(log, "w") as f:  # a file, not a pipe: a full pipe would stall the workers while the test waits
        return subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)


def _kill_tree(proc: subprocess.Popen) -> None:
    """SIGKILL torchrun and its workers (torchrun starts them in process groups of their own)."""
    import psutil

    workers = psutil.Process(proc.pid).children(recursive=True)
    for p in [*workers, psutil.Process(proc.pid)]:
        try:
            p.send_signal(signal.SIGKILL)
        except psutil.NoSuchProcess:
            pass
    proc.wait()
    psutil.wait_procs(workers, timeout=60)


@pytest.mark.slow
@pytest.mark.llm_heavy
def test_two_processes_on_gloo_train_llm_smoke_to_the_end_write_once_bill_both_and_resume_after_a_kill(
        pool, tmp_path, tiny_model):
    """``torchrun --nproc_per_node 2 -m wmrl.experiments run --agent llm --arm wmrl --preset llm-smoke`` (the tiny
    Llama as policy and world model, replies replaced by real code), killed as soon as its first checkpoint is
    complete and launched again: it resumes and trains to the end; the main process alone writes the run
    folder; provenance records 2 processes and the process group's timeout; each step's ledger bills both
    processes' work (two updates; a generation and a world-model prediction per row and turn of all 4 rows, as
    the gathered step statistics count them; the anchor group's executions); every held-out task is evaluated,
    its rows shared over the processes and gathered."""
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.trainer.llm.grpo import STATE_FILE
    from wmrl.trainer.llm.train import collective_timeout_s

    script = tmp_path / "launch.py"
    script.write_text(_LAUNCH)
    out, writes, log = tmp_path / "run", tmp_path / "writes.txt", tmp_path / "torchrun.log"
    # a turn of real code is up to ~550 tokens
    overrides = {"agent.model": str(tiny_model), "llm.max_new_tokens": 1024, "train.checkpoint_every": 1}
    proc = _torchrun(script, out, writes, overrides, log)
    marker = out / "trl" / "checkpoint-1" / STATE_FILE
    deadline = time.time() + 1800
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    _kill_tree(proc)
    assert marker.exists(), f"the 2-process run never checkpointed its first step:\n{log.read_text()[-4000:]}"
    if (out / "summary.json").exists():
        pytest.skip("the run finished before it could be killed")
    assert not (out / "trl" / "checkpoint-2").exists()

    proc = _torchrun(script, out, writes, overrides, log)
    assert proc.wait(timeout=1800) == 0, log.read_text()[-4000:]
    assert writes.read_text().split() == ["0"], "the run folder is written by the main process, once"
    summary = json.loads((out / "summary.json").read_text())
    cfg = run_config("wmrl", "llm-smoke", 0, overrides, agent="llm")
    heldout = per_category(pool.heldout, cfg.eval.tasks)
    timeout = collective_timeout_s(cfg, 2, len(heldout))
    assert summary["provenance"]["processes"] == {"count": 2, "collective_timeout_s": timeout}

    steps = pd.read_parquet(out / "steps.parquet")
    assert list(steps.step) == [0, 1]  # step 0 from the killed run's checkpoint, step 1 after the restart
    assert (steps.n_executed_groups == 1).all() and (steps.malformed_rate == 0).all()
    ledger = pd.read_parquet(out / "ledger.parquet")
    by = ledger.pivot(index="step", columns="component", values="count")
    assert by["update"].tolist() == [2, 2], "each step bills both processes' update"
    rows = cfg.train.groups_per_step * cfg.train.group_size
    every_turn = (steps.mean_turns * rows).to_numpy()  # every row's turns, over both processes
    np.testing.assert_array_equal(by.loc[[0, 1], "generation"].to_numpy(), every_turn)
    np.testing.assert_array_equal(by.loc[[0, 1], "world_model"].to_numpy(), every_turn)  # wmrl predicts every row
    assert (by.loc[[0, 1], "execution"] >= cfg.train.group_size).all()  # the anchor group's first turns at least

    evals = pd.read_parquet(out / "eval.parquet")
    assert sorted(evals[evals.step == cfg.train.steps].task) == sorted(t.name for t in heldout)
    assert (evals.ok_rate > 0).any() and summary["eval_actual_s"] > 0


_SERVER_MODE = textwrap.dedent('''
    """Two processes ask TRL's own VLLMGeneration (server mode, a fake vLLM client) through VLLMGenerator."""
    import json, sys
    import torch
    from accelerate import PartialState
    import trl.generation.vllm_generation as vg
    from wmrl.trainer.llm.generate import VLLMGenerator

    state = PartialState(cpu=True)  # gloo, as the trainer under torchrun on CPU

    class Client:  # the server's reply: each prompt's tokens plus 100, in the order asked
        asked = []
        def generate(self, prompts, features=None, **params):
            Client.asked.append(len(prompts))
            return {"prompt_ids": prompts, "completion_ids": [[t + 100 for t in p] for p in prompts], "logprobs": None}

    engine = object.__new__(vg.VLLMGeneration)
    engine.__dict__.update(mode="server", vllm_client=Client(), accelerator=state, temperature=1.0, top_p=1.0,
                           top_k=0, min_p=None, repetition_penalty=1.0, max_completion_length=64, logprobs=0,
                           generation_kwargs={}, structured_outputs_regex=None, enable_sleep_mode=False)
    args = type("Args", (), {"vllm_importance_sampling_correction": False})()
    gen = VLLMGenerator(type("Trainer", (), {"vllm_generation": engine, "args": args})())
    turns = {0: [[[1, 2], [3], [4, 5, 6]], [[8]], []], 1: [[[7]], [], []]}[state.process_index]
    out = [gen.generate(contexts, 5, seed=0)[0] for contexts in turns]
    with open(f"{sys.argv[1]}/{state.process_index}.json", "w") as f:
        json.dump({"out": out, "asked": Client.asked}, f)
    state.wait_for_everyone()
    torch.distributed.destroy_process_group()  # gloo's threads stopped before exit, not torn down by it
''')


def test_processes_with_unequal_rows_each_get_their_own_completions_from_trls_vllm_server_mode(tmp_path):
    """TRL's server mode hands process i the rows i * len(prompts) onwards of the gathered batch; a rollout's
    processes hold unequal numbers of rows (3 and 1, then 1 and 0, then none), and each must still get the
    completions of its own prompts, in its order (torchrun, two processes on gloo, TRL's own generate)."""
    script = tmp_path / "server_mode.py"
    script.write_text(_SERVER_MODE)
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", str(script), str(tmp_path)],
                          cwd=Path(__file__).resolve().parent.parent, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = {r: json.loads((tmp_path / f"{r}.json").read_text()) for r in (0, 1)}
    assert got[0]["out"] == [[[101, 102], [103], [104, 105, 106]], [[108]], []]
    assert got[1]["out"] == [[[107]], [], []]
    assert got[0]["asked"] == [6, 2]  # both processes' rows, padded alike; the empty last turn asks nothing


_EVAL_IN_STEP = textwrap.dedent('''
    """Two processes evaluate a policy whose every forward pass is a collective, as FSDP's are; one holds no row."""
    import json, sys
    import torch, torch.distributed as dist
    from accelerate import PartialState
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from wmrl.ledger import ComputeLedger
    from wmrl.presets import run_config
    from wmrl.tasks import get_pool
    from wmrl.trainer.components import make_sandbox
    from wmrl.trainer.llm.train import evaluate
    from wmrl.trainer.rollout import Scorer

    state = PartialState(cpu=True)  # gloo, as the trainer under torchrun on CPU
    model, tok = AutoModelForCausalLM.from_pretrained(sys.argv[1]), AutoTokenizer.from_pretrained(sys.argv[1])
    tok.padding_side = "left"
    forwards = []

    def gather_shards(module, args):  # what FSDP does before each forward pass: a collective of every process
        forwards.append(1)
        dist.all_reduce(torch.zeros(1))

    model.register_forward_pre_hook(gather_shards)
    cfg = run_config("untrained", "llm-smoke", agent="llm",
                     overrides={"eval.samples": 1, "llm.max_new_tokens": 6, "train.max_turns": 2})
    scorer = Scorer(make_sandbox(cfg.sandbox), None, ComputeLedger(), None, 1)
    rows = evaluate(model, tok, [get_pool().heldout[0]], cfg, scorer, step=0)
    with open(f"{sys.argv[2]}/{state.process_index}.json", "w") as f:
        json.dump({"rows": rows, "forwards": len(forwards)}, f)
    state.wait_for_everyone()
    dist.destroy_process_group()  # gloo's threads stopped before exit, not torn down by it
''')


def test_an_evaluation_with_unequal_rows_per_process_finishes_when_every_forward_pass_is_a_collective(
        pool, tiny_model, tmp_path):
    """Under FSDP each forward pass of the policy gathers its shards from every process, so the processes must
    make the same forward passes. One held-out row over two processes leaves process 1 none: it still samples in
    step (a filler batch, generate's synced_gpus), and both finish with the same rows (torchrun, gloo)."""
    script = tmp_path / "eval_in_step.py"
    script.write_text(_EVAL_IN_STEP)
    torchrun = Path(sys.executable).with_name("torchrun")
    repo = Path(__file__).resolve().parent.parent
    done = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node", "2", str(script), str(tiny_model),
                           str(tmp_path)], cwd=repo, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(repo)}, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    got = [json.loads((tmp_path / f"{r}.json").read_text()) for r in (0, 1)]
    assert got[0]["rows"] == got[1]["rows"] and len(got[0]["rows"]) == 1
    assert got[0]["forwards"] == got[1]["forwards"] > 0
