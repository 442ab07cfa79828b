"""`Sandbox`: the one entry point for real execution, whatever backend runs the code.

Grading stays here, on the host, after the solution's processes are gone: only the host may
read the private answers, and it grades the supervisor's root-owned copy of the submission.
What a world model must know about the sandbox it predicts (budget, start-up, libraries) is
``Sandbox.facts``, one read-only record, so no caller parses ``isolation``.
"""
from __future__ import annotations

import importlib.util
import os
import re
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wmrl.config import SandboxConfig
from wmrl.record import active, content_key

from .gpus import GpuPool, parse_devices, ray_assigned
from .local import Limits, LocalBackend, RunDir
from .result import ExecutionResult, classify, timeout_limit
from .runtime.versions import LIBRARIES, library_versions
from .view import SandboxError
from .warm import PRELOAD

__all__ = ["LIBRARIES", "Sandbox", "SandboxFacts", "library_versions"]


@dataclass(frozen=True)
class SandboxFacts:
    """What a script meets in this sandbox, as the world models' prompts state it.

    ``cpu_budget_s``: CPU seconds of the script's whole process tree (children and threads
    together) before it is a timeout; ``wall_timeout_s``: the wall-clock backstop for scripts
    that sleep or block; ``warm_start``: scripts start in an interpreter that has already
    imported ``preloaded`` (their import time is then neither spent nor counted); ``libraries``:
    the Python and library versions of the interpreter that runs the scripts, as ``(name, version)``
    pairs (a Docker image's own, not this machine's); ``work_mb``: the size of ``/tmp``, of ``/dev/shm``
    (where a PyTorch DataLoader's workers pass their batches) and of the private work folder, each.
    """

    backend: str
    cpu_budget_s: float
    wall_timeout_s: float
    memory_mb: int
    cpus: float
    gpus: int
    warm_start: bool
    preloaded: tuple[str, ...]
    libraries: tuple[tuple[str, str], ...] = ()
    work_mb: int = SandboxConfig.work_mb

    def library_versions(self) -> dict[str, str]:
        """The versions a prompt names: ``libraries``, or this interpreter's for facts that do not say."""
        return dict(self.libraries) if self.libraries else library_versions()


class Sandbox:
    """Runs solution scripts for tasks: ``run(task, code)`` and ``run_many(jobs, max_workers)``.

    ``timeout_s`` is the budget in CPU seconds of the solution's whole process tree;
    ``wall_timeout_s`` a wall-clock backstop against sleeping or blocked programs (default
    ``max(5 * timeout_s, timeout_s + 10)``); both end a run as ``timeout`` and the result's
    ``limit`` says which. ``backend`` is "local" (namespaces, this machine) or "docker" (one
    container per run, ``image``). ``gpus`` > 0 gives each execution that many GPUs: under the
    threads executor taken in turn from ``gpu_devices`` (host CUDA indices or UUIDs, e.g. ``"5,6,7"``;
    :mod:`.gpus`), under Ray the ones Ray assigned. Docker's device cgroup confines a container to
    its GPUs; the local backend only sets the solution's ``CUDA_VISIBLE_DEVICES`` (every GPU hidden
    with ``gpus=0``), which a solution that resets it can get round. ``work_mb`` sizes the run's
    private work folder, ``/tmp`` and ``/dev/shm``.
    ``executor`` is "threads" (this machine) or "ray" (fan ``run_many`` out over a Ray cluster,
    each job asking for ``cpus`` CPUs and ``gpus`` GPUs). ``grader`` defaults to
    ``wmrl.grading.grade``. ``warm`` (local backend only) runs solutions from a server that has
    already imported numpy/pandas/scikit-learn (see ``local``), with the same isolation and
    statuses; ``facts.warm_start`` says whether it is in use.
    """

    def __init__(self, backend: str = "local", timeout_s: float = 60.0, memory_mb: int = 2048,
                 cpus: float = SandboxConfig.cpus, *, wall_timeout_s: float | None = None, gpus: int = 0,
                 gpu_devices: str | Sequence[str] | None = None, work_mb: int = SandboxConfig.work_mb,
                 executor: str = "threads", image: str | None = None, warm: bool = True, grader=None,
                 base_dir: str | os.PathLike | None = None):
        if backend not in ("local", "docker"):
            raise ValueError(f"backend must be 'local' or 'docker', not {backend!r}")
        if executor not in ("threads", "ray"):
            raise ValueError(f"executor must be 'threads' or 'ray', not {executor!r}")
        devices = parse_devices(gpu_devices)
        if devices and executor == "ray":
            raise ValueError(f"gpu_devices={gpu_devices!r} is for the threads executor; under executor='ray' Ray "
                             "assigns each execution its GPUs (leave gpu_devices unset)")
        if devices and not gpus:
            raise ValueError(f"gpu_devices={gpu_devices!r} but gpus=0: set gpus (GPUs per execution) too, or drop "
                             "gpu_devices")
        if gpus and executor == "threads" and not devices:
            raise ValueError(f"gpus={gpus!r} needs gpu_devices, the host GPUs executions may use (e.g. "
                             "gpu_devices='7'): without them every execution would land on the same first GPU, "
                             "a training GPU on a training node")
        self.backend, self.executor, self.grader = backend, executor, grader
        self.limits = Limits(timeout_s=timeout_s, memory_mb=memory_mb, cpus=cpus, wall_timeout_s=wall_timeout_s,
                             gpus=gpus, tmpfs_mb=work_mb)
        self.gpu_pool = GpuPool(devices, gpus) if devices else None
        self.base_dir, self.image, self.warm = base_dir, image, warm
        self._impl = None

    def __getstate__(self):  # Ray ships the configuration; each worker builds its own backend
        return {**self.__dict__, "_impl": None}

    @property
    def impl(self):
        if self._impl is None:
            if self.backend == "local":
                self._impl = LocalBackend(self.limits, Path(self.base_dir) if self.base_dir else None, self.warm)
            else:
                from .docker_backend import DockerBackend
                self._impl = DockerBackend(self.limits, self.base_dir, self.image)
        return self._impl

    @property
    def isolation(self) -> str:
        return self.impl.isolation

    @property
    def facts(self) -> SandboxFacts:
        warm = self.backend == "local" and self.impl.warm
        libraries = library_versions() if self.backend == "local" else self._image_libraries()
        return SandboxFacts(self.backend, self.limits.timeout_s, self.limits.wall_timeout_s, self.limits.memory_mb,
                            self.limits.cpus, self.limits.gpus, warm, PRELOAD if warm else (),
                            tuple(sorted(libraries.items())), self.limits.tmpfs_mb)

    def _image_libraries(self) -> dict[str, str]:
        """The Docker image's own versions, or none where no engine or image is there to ask (then nothing can
        run either, and a prompt built meanwhile names this interpreter's)."""
        try:
            return self.impl.library_versions()
        except SandboxError:
            return {}

    def run(self, task, code: str) -> ExecutionResult:
        """Execute ``code`` for ``task``; under an active execution record (:mod:`wmrl.record`) the result is
        recorded, or served from the record without executing."""
        return self._recorded([(task, code)], lambda jobs: [self._execute(*jobs[0])])[0]

    def _record_key(self, task, code: str) -> str:
        return content_key("sandbox", task.name, code, repr(self.limits))

    def _recorded(self, jobs: list[tuple], execute) -> list[ExecutionResult]:
        record = active()
        if record is None:
            return execute(jobs)
        if record.mode == "replay":
            return [ExecutionResult(**record.observe("sandbox", self._record_key(t, c), None)) for t, c in jobs]
        results = execute(jobs)
        for (task, code), res in zip(jobs, results):  # in the jobs' order, whatever order they finished in
            record.observe("sandbox", self._record_key(task, code), res.to_dict())
        return results

    def _execute(self, task, code: str) -> ExecutionResult:
        try:
            compile(code, "solution.py", "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as exc:  # caught on the host: no process needed
            return ExecutionResult("syntax_error", type(exc).__name__, getattr(exc, "lineno", None),
                                   stderr_tail=f"{type(exc).__name__}: {exc}", isolation=self.isolation,
                                   reason=f"{type(exc).__name__}: {exc}")
        run, status, killed, wall = self.impl.execute(task, code, self._devices())
        try:
            return self._finish(task, run, status or {}, killed, wall)
        finally:
            run.remove()

    def _devices(self) -> tuple[str, ...]:
        """This execution's host GPUs: its turn of ``gpu_devices``, Ray's assignment, or none."""
        if not self.limits.gpus:
            return ()
        return self.gpu_pool.take() if self.gpu_pool is not None else ray_assigned(self.limits.gpus)

    def _finish(self, task, run: RunDir, status: dict, killed: bool, wall: float) -> ExecutionResult:
        kind, error_type, error_line, reason = classify(status, killed, self.limits)
        result = ExecutionResult(kind, error_type, error_line, status.get("stdout", ""), status.get("stderr", ""),
                                 round(wall, 4), round(status.get("cpu_s") or 0.0, 4), isolation=self.isolation,
                                 reason=reason, limit=timeout_limit(status, killed))
        if kind != "ok":
            return result
        collected = status.get("submission", "absent")
        if collected == "absent":
            result.status, result.reason = "no_submission", "the script wrote no file at $SUBMISSION_PATH"
            return result
        if collected.startswith("refused"):
            result.status, result.reason = "invalid_submission", collected.removeprefix("refused: ")
            return result
        submission = run.meta / "submission.csv"  # the supervisor's root-owned copy
        grade = self.grader
        if grade is None:
            from wmrl.grading import grade  # imported late: grading is a sibling package
        verdict = grade(task, submission)
        result.status, result.reason = verdict.status, verdict.reason
        result.raw_score, result.percentile = verdict.raw_score, verdict.percentile
        return result

    def run_many(self, jobs: list[tuple], max_workers: int | None = None) -> list[ExecutionResult]:
        """Results in the order of ``jobs``; ``max_workers`` defaults to one per CPU."""
        return self._recorded(list(jobs), lambda jobs: self._execute_many(jobs, max_workers))

    def _execute_many(self, jobs: list[tuple], max_workers: int | None) -> list[ExecutionResult]:
        if self.executor == "ray":
            from .ray_executor import run_many_ray
            return run_many_ray(self, jobs, max_workers)
        workers = max(1, min(max_workers or os.cpu_count() or 1, len(jobs) or 1))
        with ThreadPoolExecutor(workers, thread_name_prefix="wmrl-sandbox") as pool:
            results = list(pool.map(lambda job: self._execute(*job), jobs))
        if self.backend == "local":
            check_interpreter_seen(results)
        return results


_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def check_interpreter_seen(results: list[ExecutionResult], at_least: int = 2) -> None:
    """Raise :class:`SandboxError` when every one of ``results`` (``at_least`` of them) failed to import a
    module that this very interpreter has: the sandbox then does not show the interpreter's folders.

    The local backend's solutions run on the host's interpreter, so a module the host finds and every
    solution misses is the sandbox's fault, not the agents'. Left unnoticed it turns every reward into
    the failure rung and every held-out score into 0 with no word of why (a venv reached through a link
    can do exactly that; see ``view.interpreter_folders``). A single such failure is left alone:
    a solution may hide a module from itself (``sys.path.clear()``), but not every solution of a batch.
    """
    missing = [m.group(1) for r in results if r.status == "runtime_error" and (m := _MISSING.search(r.reason))]
    if len(results) < at_least or len(missing) < len(results):
        return
    found = {}
    for name in sorted(set(missing)):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:  # the host lacks it too: the agents' imports, not the sandbox
            return
        found[name] = spec.origin
    where = "; ".join(f"{name} at {origin}" for name, origin in found.items())
    raise SandboxError(f"all {len(results)} solutions of a batch failed with ModuleNotFoundError for modules this "
                       f"interpreter ({sys.executable}) imports: {where}. The sandbox does not show the interpreter's "
                       "folders, so every reward would be wrong; check that the interpreter's prefix and site-packages "
                       "(and any link to them) are readable inside the sandbox (wmrl.sandbox.view.interpreter_folders)")
