"""What only the docker backend has: GPU requests and the container's own CPU account.

The hostile-program suite runs against docker too (tests/test_sandbox_hostile.py, marked
``docker``); `.ci/run` installs and starts an engine and builds the offline image when it can.
"""
import shutil

import pytest

from wmrl.sandbox import Sandbox
from wmrl.sandbox.docker_backend import LABEL, device_requests, docker_available
from wmrl.sandbox.toy import forking_burner, toy_grade, toy_solution

docker = pytest.importorskip("docker", reason="the docker SDK is not installed (the 'scale' extra)")


def test_no_gpus_asks_for_no_devices():
    assert device_requests(()) == []


def test_gpus_are_asked_for_by_id_never_by_count(monkeypatch):
    """A request by count lets the engine choose, and it gives every container the first GPU."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")  # the training processes' GPUs: not the sandbox's
    (request,) = device_requests(("6", "7"))
    assert (request["DeviceIDs"], request["Capabilities"], request["Count"]) == (["6", "7"], [["gpu"]], 0)


@pytest.mark.docker
def test_a_containers_cpu_time_is_read_from_its_own_cgroup_less_the_supervisor(toy, tmp_path):
    if (reason := docker_available()) is not None:
        pytest.skip(f"docker: {reason}")
    sandbox = Sandbox("docker", timeout_s=1.5, wall_timeout_s=6, grader=toy_grade, base_dir=tmp_path)
    quick = sandbox.run(toy, toy_solution())
    assert quick.status == "ok" and quick.cpu_s < 0.2, quick  # the supervisor's own start-up is not charged
    tree = sandbox.run(toy, forking_burner(2, 0.3, then=toy_solution()))
    assert tree.status == "ok" and 0.55 <= tree.cpu_s < 1.5, tree


@pytest.mark.docker
def test_a_container_runs_its_solution_below_its_supervisor(toy, tmp_path):
    """The supervisor shares the container's CPU quota with the solution: at equal priority a fork bomb can starve
    it, and the solution then runs several times past its budget. The solution runs at nice SOLUTION_NICE instead; the
    hostile-program suite checks the fork bomb's budget on every backend."""
    from wmrl.sandbox.docker_backend import SOLUTION_NICE

    if (reason := docker_available()) is not None:
        pytest.skip(f"docker: {reason}")
    sandbox = Sandbox("docker", timeout_s=1.5, wall_timeout_s=6, grader=toy_grade, base_dir=tmp_path)
    seen = sandbox.run(toy, "import os\nprint(os.nice(0))\n" + toy_solution())
    assert seen.status == "ok" and seen.stdout_tail.strip() == str(SOLUTION_NICE), seen


@pytest.mark.docker
def test_the_hosts_watchdog_stops_a_container_whose_supervisor_lets_it_run_past_its_budget(toy, tmp_path, monkeypatch):
    """The supervisor is told a budget of 60 CPU s, as if it were starved of the CPU to enforce 1.5 s: the host's
    watchdog, outside the container's limits, kills the container a little past 1.5 + WATCHDOG_SLACK_S CPU s."""
    from wmrl.sandbox.docker_backend import WATCHDOG_SLACK_S
    from wmrl.sandbox.local import RunDir
    from wmrl.sandbox.toy import cpu_burner

    if (reason := docker_available()) is not None:
        pytest.skip(f"docker: {reason}")
    spec = RunDir.spec
    monkeypatch.setattr(RunDir, "spec", lambda self, *a, **k: {**spec(self, *a, **k), "cpu_limit_s": 60.0})
    sandbox = Sandbox("docker", timeout_s=1.5, wall_timeout_s=20, grader=toy_grade, base_dir=tmp_path)
    result = sandbox.run(toy, cpu_burner(30))
    assert (result.status, result.limit) == ("timeout", "cpu"), result
    assert "host watchdog's account" in result.reason and 1.5 + WATCHDOG_SLACK_S < result.cpu_s < 1.5 + WATCHDOG_SLACK_S + 1.0
    assert result.wall_s < 10, result
    left = docker.from_env().containers.list(all=True, filters={"label": LABEL})
    assert [c.name for c in left if c.labels[LABEL].startswith(str(tmp_path))] == []


@pytest.mark.docker
@pytest.mark.gpu
def test_a_gpu_sandbox_sees_its_gpu(toy, tmp_path):
    if shutil.which("nvidia-smi") is None:
        pytest.skip("no NVIDIA GPU (driver) on this machine")
    if (reason := docker_available("wmrl-sandbox:cuda")) is not None:
        pytest.skip(f"docker: {reason} (sandbox/Dockerfile.cuda)")
    sandbox = Sandbox("docker", timeout_s=60, gpus=1, gpu_devices="0", image="wmrl-sandbox:cuda", grader=toy_grade,
                      base_dir=tmp_path)
    code = "import torch\nassert torch.cuda.device_count() == 1, torch.cuda.device_count()\n" \
           "print(torch.ones(2, device='cuda').sum().item())\n" + toy_solution()
    result = sandbox.run(toy, code)
    assert result.status == "ok" and result.stdout_tail.strip() == "2.0", result


@pytest.mark.docker
def test_a_docker_sandbox_states_the_libraries_its_images_interpreter_reports(tmp_path):
    """The prompts' library versions are asked of the interpreter inside the image (the offline image runs this
    machine's, read-only, so it reports this interpreter's versions; a CUDA image reports its own)."""
    from wmrl.sandbox import library_versions

    if (reason := docker_available()) is not None:
        pytest.skip(f"docker: {reason}")
    facts = Sandbox("docker", base_dir=tmp_path).facts
    assert facts.library_versions() == library_versions() and dict(facts.libraries)["python"]
