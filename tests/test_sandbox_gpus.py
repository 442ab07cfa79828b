"""GPU placement: which host GPUs an execution gets, on every backend and from the configuration.

The placement itself is plain bookkeeping, so it is tested here on CPU: the local backend's
solution reads the ``CUDA_VISIBLE_DEVICES`` it was given, which is what CUDA would enumerate.
"""
import threading

import pytest

from wmrl.config import ConfigError, RunConfig, SandboxConfig
from wmrl.presets import run_config
from wmrl.sandbox import Sandbox, SandboxError
from wmrl.sandbox.gpus import GpuPool, parse_devices, ray_assigned
from wmrl.sandbox.toy import toy_grade, toy_solution
from wmrl.trainer.components import make_sandbox

SHOW_DEVICES = "import os\nprint(repr(os.environ.get('CUDA_VISIBLE_DEVICES')))\n" + toy_solution()


def test_executions_take_the_configured_gpus_in_turn():
    pool = GpuPool(("5", "6", "7"), 1)
    assert [pool.take() for _ in range(4)] == [("5",), ("6",), ("7",), ("5",)]
    pairs = GpuPool(("5", "6", "7"), 2)
    assert [pairs.take() for _ in range(3)] == [("5", "6"), ("7", "5"), ("6", "7")]


def test_concurrent_executions_spread_evenly_over_the_set():
    pool, taken = GpuPool(("0", "1"), 1), []
    threads = [threading.Thread(target=lambda: taken.extend(pool.take())) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == ["0"] * 20 + ["1"] * 20


def test_bad_device_lists_are_refused_by_name():
    assert parse_devices(" 5, 6 ,") == ("5", "6") and parse_devices(None) == ()
    with pytest.raises(ValueError, match="twice"):
        parse_devices("5,5")
    with pytest.raises(ValueError, match="names only 1"):
        GpuPool(("5",), 2)


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_local_gpu_slot_sees_exactly_its_turn_of_the_devices(toy, tmp_path, warm):
    sandbox = Sandbox("local", timeout_s=5, gpus=1, gpu_devices="3,5", grader=toy_grade, base_dir=tmp_path, warm=warm)
    seen = [sandbox.run(toy, SHOW_DEVICES) for _ in range(3)]
    assert [r.status for r in seen] == ["ok"] * 3, seen
    assert [r.stdout_tail.strip() for r in seen] == ["'3'", "'5'", "'3'"]


@pytest.mark.parametrize("warm", [False, True], ids=["cold", "warm"])
def test_a_cpu_slot_on_a_gpu_node_sees_no_gpu(toy, tmp_path, monkeypatch, warm):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # the training process's GPUs must not leak to a solution
    result = Sandbox("local", timeout_s=5, grader=toy_grade, base_dir=tmp_path, warm=warm).run(toy, SHOW_DEVICES)
    assert result.status == "ok" and result.stdout_tail.strip() == "''", result


def test_gpus_without_devices_or_devices_without_gpus_are_refused():
    with pytest.raises(ValueError, match="needs gpu_devices"):
        Sandbox("docker", gpus=1)
    with pytest.raises(ValueError, match="gpus=0"):
        Sandbox("local", gpu_devices="7")
    with pytest.raises(ValueError, match="Ray assigns"):
        Sandbox("docker", gpus=1, gpu_devices="7", executor="ray")


def test_under_ray_the_assigned_gpus_are_used(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")  # what a Ray worker with num_gpus sees
    assert ray_assigned(1) == ("3",)
    with pytest.raises(SandboxError, match="CUDA_VISIBLE_DEVICES=3,5"):
        ray_assigned(3)
    assert Sandbox("docker", gpus=1, executor="ray")._devices() == ("3",)


@pytest.mark.parametrize("fields, named", [
    ({"gpus": 1}, "sandbox.gpu_devices"), ({"gpus": 2, "gpu_devices": "7"}, "at least 2"),
    ({"gpu_devices": "7"}, "gpus=0"), ({"gpus": 1, "gpu_devices": "7", "executor": "ray"}, "Ray assigns"),
    ({"cpus": 0}, "sandbox.cpus"), ({"work_mb": 1}, "sandbox.work_mb"),
])
def test_the_configuration_refuses_a_placement_it_cannot_honour(fields, named):
    with pytest.raises(ConfigError, match=named):
        SandboxConfig(**fields)


def test_the_configuration_reaches_the_sandbox():
    cfg = RunConfig().with_overrides({"sandbox.backend": "local", "sandbox.gpus": 1, "sandbox.gpu_devices": "6,7",
                                      "sandbox.cpus": 2.0, "sandbox.work_mb": 2048})
    sandbox = make_sandbox(cfg.sandbox)
    assert sandbox.gpu_pool.devices == ("6", "7")
    assert (sandbox.limits.cpus, sandbox.limits.tmpfs_mb, sandbox.limits.gpus) == (2.0, 2048, 1)


def test_the_paper_preset_keeps_its_sandboxes_off_the_training_and_world_model_gpus():
    """The 8-GPU recipe: training on GPUs 0-3 (accelerate's gpu_ids), the world model's server on 4."""
    import yaml

    from wmrl.provenance import REPO

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    recipe = yaml.safe_load((REPO / "wmrl/trainer/llm/accelerate/paper_8gpu.yaml").read_text())
    training = set(parse_devices(recipe["gpu_ids"]))
    sandboxes = set(parse_devices(cfg.sandbox.gpu_devices))
    assert len(training) == recipe["num_processes"] == 4 and not training & sandboxes and "4" not in training | sandboxes
    text = (REPO / "wmrl/trainer/llm/accelerate/paper_8gpu.yaml").read_text()
    assert "CUDA_VISIBLE_DEVICES=4 " in text and "CUDA_VISIBLE_DEVICES=8" not in text


def test_which_gpus_ran_the_sandboxes_is_not_part_of_a_runs_identity():
    base = {"sandbox.backend": "docker", "sandbox.gpus": 1}
    on_5 = run_config("grpo", "smoke", overrides={**base, "sandbox.gpu_devices": "5"})
    on_67 = run_config("grpo", "smoke", overrides={**base, "sandbox.gpu_devices": "6,7"})
    assert on_5.identity() == on_67.identity()
    assert on_5.identity() != run_config("grpo", "smoke", overrides={**base, "sandbox.gpu_devices": "5",
                                                                    "sandbox.cpus": 2.0}).identity()


@pytest.mark.parametrize("gpus, world_size", [(1, "1"), (0, "4")])
def test_a_training_process_never_starts_a_local_ray_for_gpu_executions_or_beside_other_processes(
        gpus, world_size, monkeypatch):
    """A local Ray started under accelerate would take the training GPUs: without a running cluster, refused."""
    import ray

    from wmrl.sandbox import ray_executor

    asked = []

    def init(address=None, **kwargs):  # Ray's documented contract: "auto" raises when no cluster is running
        asked.append(address)
        raise ConnectionError("no running cluster")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setenv("WORLD_SIZE", world_size)
    with pytest.raises(SandboxError, match=r"CUDA_VISIBLE_DEVICES=5,6,7 ray start --head --num-gpus 3"):
        ray_executor.connect(gpus)
    assert asked == ["auto"]


@pytest.mark.slow
def test_a_cluster_started_with_the_sandbox_gpus_hands_out_those_gpus_not_the_training_ones(monkeypatch):
    """A cluster started as documented, seeing only the sandbox GPUs (``CUDA_VISIBLE_DEVICES=5,6,7 ray start
    --head --num-gpus 3``), joined with RAY_ADDRESS from a training process that sees GPUs 0-3: every GPU
    execution gets one of 5, 6 and 7."""
    import os

    import ray
    from ray.cluster_utils import Cluster

    from wmrl.sandbox import ray_executor

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,6,7")  # the head's environment when it starts
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 2, "num_gpus": 3})
    try:
        monkeypatch.setenv("RAY_ADDRESS", cluster.address)
        monkeypatch.setenv("WORLD_SIZE", "4")
        monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")  # what accelerate gives a training process
        ray_executor.connect(1)
        shown = ray.get([ray.remote(num_gpus=1, num_cpus=0)(lambda: os.environ["CUDA_VISIBLE_DEVICES"]).remote()
                         for _ in range(6)])
        assert set(shown) <= {"5", "6", "7"}, shown
    finally:
        ray.shutdown()
        cluster.shutdown()
