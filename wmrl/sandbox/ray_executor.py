"""Fan ``Sandbox.run_many`` out over a Ray cluster (a sandbox farm larger than one machine).

Why Ray: it is the existing engine for this (scheduling, retries of lost nodes, resource
accounting), so the project writes no scheduler of its own. Each Ray task rebuilds the
sandbox from its configuration on the node that runs it (backends hold no picklable state),
runs one job and returns a plain ``ExecutionResult``. ``max_workers`` caps how many jobs are in
flight at once; each task asks Ray for the sandbox's ``cpus`` CPUs and ``gpus`` GPUs (a GPU
slot), so Ray never oversubscribes a node, and the docker backend hands the container exactly
the GPUs Ray assigned (``docker_backend.device_requests``).
"""
from __future__ import annotations

import functools
import os

from .view import SandboxError

__all__ = ["connect", "run_many_ray"]


def _run_one(sandbox, task, code):
    return sandbox._execute(task, code)  # the caller records or replays, in the jobs' order


@functools.lru_cache(maxsize=8)
def _remote(cpus: float, gpus: int):
    import ray

    return ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=0)(_run_one)


def connect(gpus: int) -> None:
    """Connect to Ray: the running cluster (``RAY_ADDRESS``, else the last one ``ray start`` began here), else,
    for executions without GPUs from a single process, a local Ray started for them.

    Executions with GPUs, and any from one of several training processes (``WORLD_SIZE`` > 1), need a running
    cluster: a local Ray started from a training process would take that process's GPUs for its own (accelerate
    sets ``CUDA_VISIBLE_DEVICES`` to the training GPUs) and each process would start one of its own, so the
    sandboxes would run on the training GPUs and oversubscribe the node.
    """
    import ray

    if ray.is_initialized():
        return
    if not gpus and int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        ray.init(include_dashboard=False, log_to_driver=False)
        return
    try:
        ray.init(address="auto", include_dashboard=False, log_to_driver=False)
    except ConnectionError:
        why = (f"executions with {gpus} GPU(s) each" if gpus else
               f"{os.environ['WORLD_SIZE']} training processes")
        raise SandboxError(
            f"sandbox.executor=ray with {why} needs a running Ray cluster, not one started by a training process "
            "(it would see that process's GPUs and each process would start its own): start it with the sandbox "
            "GPUs only, e.g. `CUDA_VISIBLE_DEVICES=5,6,7 ray start --head --num-gpus 3`, then run the training "
            "with RAY_ADDRESS=auto (docs/paper_scale.md)") from None


def run_many_ray(sandbox, jobs: list[tuple], max_workers: int | None = None) -> list:
    """Results in the order of ``jobs``, on the cluster :func:`connect` finds."""
    import ray

    connect(sandbox.limits.gpus)
    remote = _remote(sandbox.limits.cpus, sandbox.limits.gpus)
    shipped = ray.put(sandbox)
    limit = max_workers or len(jobs) or 1
    pending, results = {}, [None] * len(jobs)
    for index, (task, code) in enumerate(jobs):
        if len(pending) >= limit:
            done, _ = ray.wait(list(pending), num_returns=1)
            results[pending.pop(done[0])] = ray.get(done[0])
        pending[remote.remote(shipped, task, code)] = index
    for ref, index in pending.items():
        results[index] = ray.get(ref)
    return results
