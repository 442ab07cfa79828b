"""`run_many` fanned out over Ray, on a local two-CPU Ray instance."""
import pytest

from wmrl.sandbox import Sandbox
from wmrl.sandbox.toy import make_toy_task, toy_grade, toy_solution

ray = pytest.importorskip("ray", reason="ray is not installed (the 'scale' extra)")
pytestmark = [pytest.mark.slow, pytest.mark.extended]  # starting a local Ray instance takes half a minute on 2 cores


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_run_many_over_ray_returns_results_in_job_order(local_ray, tmp_path):
    task = make_toy_task(tmp_path / "pool")
    sandbox = Sandbox("local", timeout_s=5, executor="ray", grader=toy_grade, base_dir=tmp_path / "runs")
    jobs = [(task, toy_solution()), (task, "raise KeyError('x')\n"), (task, "import os\nos._exit(0)\n")]
    results = sandbox.run_many(jobs, max_workers=2)
    assert [r.status for r in results] == ["ok", "runtime_error", "no_submission"]
    assert results[1].error_type == "KeyError" and results[0].raw_score == pytest.approx(0.5)


def test_a_gpu_slot_asks_ray_for_its_gpus_and_cpus():
    from wmrl.sandbox.ray_executor import _remote

    options = _remote(2.0, 1)._default_options
    assert (options["num_cpus"], options["num_gpus"]) == (2.0, 1)
