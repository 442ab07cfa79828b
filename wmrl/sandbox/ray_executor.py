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

__all__ = ["run_many_ray"]


def _run_one(sandbox, task, code):
    return sandbox._execute(task, code)  # the caller records or replays, in the jobs' order


@functools.lru_cache(maxsize=8)
def _remote(cpus: float, gpus: int):
    import ray

    return ray.remote(num_cpus=cpus, num_gpus=gpus, max_retries=0)(_run_one)


def run_many_ray(sandbox, jobs: list[tuple], max_workers: int | None = None) -> list:
    """Results in the order of ``jobs``; starts a local Ray if none is connected."""
    import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
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
