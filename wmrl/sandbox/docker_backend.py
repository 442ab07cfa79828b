"""Docker backend: one container per run, the same supervisor and result type as the local one.

Why keep the supervisor inside the container: timeouts, capped output, leftover killing and
traceback parsing then behave identically on every backend, and Docker only adds its own walls
(no network, read-only root, tmpfs work folder, memory/CPU/pids cgroup limits, every capability
dropped but the five the supervisor needs to hand the work folder over, read the submission
back, drop to the solution's uid and kill its leftovers; the solution itself runs with none).
Images: ``wmrl-sandbox:offline`` (the default; ``sandbox/build_offline.sh``, for machines without
a registry: label ``wmrl.python=host``, this machine's interpreter and venv are mounted read-only),
``sandbox/Dockerfile`` (own Python; CPU machines that reach a registry) and ``sandbox/Dockerfile.cuda``
(own Python, CUDA torch, torchvision, LightGBM, XGBoost; GPU nodes that reach one, the llm-paper
preset's ``wmrl-sandbox:cuda``).

Limits come from the sandbox's ``Limits``: memory (plus 256 MB for the supervisor), CPU rate
(``nano_cpus``), processes (``pids_limit``), GPUs (``device_requests`` by id: the execution's share
of ``sandbox.gpu_devices``, or what Ray assigned; :mod:`.gpus`), the work folder's size
(``tmpfs_mb``) and the budget, which the supervisor enforces as everywhere. One difference from the local backend:
the CPU account is the container's own cgroup, read from inside (``/sys/fs/cgroup``), less the
supervisor's own CPU time, so a run's ``cpu_s`` includes the kernel's work of setting up the
container's processes that a local run's group does not see (a few milliseconds); where the
container sees no cgroup file the supervisor falls back to ``/proc`` (it is PID 1 there). Because
that supervisor shares the container's limits, the host keeps a second guard outside them
(``CpuWatchdog``): it kills a container whose account passes the budget by ``WATCHDOG_SLACK_S``
per CPU of its quota.
"""
from __future__ import annotations

import json
import marshal
import os
import sys
import threading
import time
from pathlib import Path

from .cgroup import cpu_account_of, cpu_seconds
from .local import RUNTIME, Limits, RunDir, solution_env
from .view import SandboxError, interpreter_paths, solution_view

__all__ = ["CONTAINER_CPU_ACCOUNT", "DEFAULT_IMAGE", "LABEL", "SOLUTION_NICE", "WATCHDOG_SLACK_S", "CpuWatchdog",
           "DockerBackend", "device_requests", "docker_available"]

DEFAULT_IMAGE = "wmrl-sandbox:offline"
LABEL = "wmrl.sandbox.run"  # on every run's container (value: its run folder), so a leftover one can be found
# Paths inside the container, under one folder so that they never shadow a mounted host path.
_IN = {"work": "/wmrl/work", "data": "/wmrl/data", "meta": "/wmrl/meta", "runtime": "/wmrl/run_solution.py",
       "versions": "/wmrl/versions.py"}
_VERSIONS = RUNTIME.with_name("versions.py")  # package data, beside the supervisor
_IMAGE_VERSIONS: dict[str, dict[str, str]] = {}  # image id -> the versions its interpreter reported
# The solution's niceness inside its container. The supervisor shares the container's CPU quota
# (``nano_cpus``) with it; at equal weight a fork bomb's hundred processes can starve the supervisor
# of the CPU it needs to notice the budget and kill them, and the solution then runs several times
# past its budget. At nice 19 each solution process weighs 1/68 of the supervisor in the scheduler, so the
# budget is enforced on time; the CPU seconds a solution may use are unchanged.
SOLUTION_NICE = 19
# The container's own CPU account as seen from inside: cgroup v2 (private cgroup namespace), else v1.
CONTAINER_CPU_ACCOUNT = {"files": [["/sys/fs/cgroup/cpu.stat", "cpu.stat"],
                                   ["/sys/fs/cgroup/cpuacct/cpuacct.usage", "cpuacct"],
                                   ["/sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "cpuacct"]],
                         "minus_self": True}


# How far past its budget a container's CPU account may run, per CPU of its quota, before the host's
# watchdog kills it: the supervisor's own poll (0.05 s) and kill grace (0.5 s), and a margin.
WATCHDOG_SLACK_S = 1.0


class CpuWatchdog:
    """The host's second guard on a container's CPU budget, outside the container's limits.

    Why: the supervisor that enforces the budget runs inside the container and shares its CPU
    quota with the solution, so a fork bomb can run well past its budget before the supervisor gets
    the CPU to stop it, whatever the solution's niceness. This thread reads the container's CPU account from this machine's side of its cgroup every
    ``interval`` seconds, less the supervisor's own CPU time as the supervisor does (it can be
    large: reading gigabytes of output), and kills the container once that passes ``limit_s``; the
    run then ends as a CPU timeout charged with that reading (``fired_at``), its output lost with
    its supervisor. Where the container's group is not visible here (a remote engine) it does nothing.
    """

    def __init__(self, container, limit_s: float, interval: float = 0.1):
        container.reload()
        pid = container.attrs["State"]["Pid"]  # on the engine's machine: ours only if the group names the container
        account = cpu_account_of(pid) if pid else None
        self.account = account if account is not None and container.id in str(account[0]) else None
        self.container, self.supervisor, self.limit_s, self.interval = container, pid, limit_s, interval
        self.tick = os.sysconf("SC_CLK_TCK")
        self.fired_at: float | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True, name="wmrl-cpu-watchdog")
        if self.account is not None:
            self._thread.start()

    def _watch(self):
        from docker.errors import APIError

        while not self._done.wait(self.interval):
            try:  # the solution's share, as the supervisor counts it: the group's account less its own time
                with open(f"/proc/{self.supervisor}/stat", "rb") as fh:
                    utime, stime = fh.read().rsplit(b")", 1)[1].split()[11:13]  # fields 14 and 15 of proc(5)
                used = cpu_seconds(*self.account) - (int(utime) + int(stime)) / self.tick
            except (OSError, ValueError, StopIteration):  # the container has ended and its group is gone
                return
            if used > self.limit_s:
                self.fired_at = used
                try:
                    self.container.kill()
                except APIError:  # it ended on its own meanwhile
                    pass
                return

    def stop(self):
        self._done.set()
        if self._thread.is_alive():
            self._thread.join()


def docker_available(image: str = DEFAULT_IMAGE) -> str | None:
    """None when an engine responds and ``image`` exists, else the reason it cannot be used."""
    try:
        import docker
        import requests
    except ImportError:
        return "the docker SDK is not installed (pip install docker, the 'scale' extra)"
    try:
        client = docker.from_env(timeout=10)
        client.ping()
        client.images.get(image)
    except docker.errors.ImageNotFound:
        return f"docker image {image!r} is missing (build it with sandbox/build_offline.sh)"
    except (docker.errors.DockerException, requests.RequestException, OSError) as exc:  # all mean "no engine"
        return f"no docker engine responds ({type(exc).__name__}: {exc})"
    return None


def device_requests(devices: tuple[str, ...]) -> list:
    """The docker SDK's request for exactly the host GPUs ``devices``, by id: a request by ``count``
    would give every container the same first GPU."""
    if not devices:
        return []
    from docker.types import DeviceRequest

    return [DeviceRequest(device_ids=list(devices), capabilities=[["gpu"]])]


class DockerBackend:
    def __init__(self, limits: Limits, base_dir: str | os.PathLike | None = None, image: str | None = None):
        import docker

        reason = docker_available(image or DEFAULT_IMAGE)
        if reason:
            raise SandboxError(reason)
        self.limits, self.image = limits, image or DEFAULT_IMAGE
        self.client = docker.from_env(timeout=30)
        self.base = Path(base_dir or Path("/tmp") / "wmrl-sandbox-docker")
        python = self.client.images.get(self.image).labels.get("wmrl.python", "python")
        self.host_python = python == "host"
        self.python = sys.executable if self.host_python else python
        self.isolation = ("docker:network=none+read-only-root+caps-dropped+uid+cgroup-limits+rlimits+scrubbed-env"
                          + (f"+gpus={limits.gpus}" if limits.gpus else ""))

    def _volumes(self, public: str, run: RunDir) -> dict:
        """Of the host, a container sees the task's public folder and nothing else of anyone's data:
        beside it only the run's meta folder (root's, 0700), the supervisor and, for an image using
        this machine's interpreter, the interpreter's folders (``view.interpreter_paths``)."""
        volumes = {str(run.meta): {"bind": _IN["meta"], "mode": "rw"},
                   os.path.realpath(public): {"bind": _IN["data"], "mode": "ro"},
                   str(RUNTIME): {"bind": _IN["runtime"], "mode": "ro"}}
        if self.host_python:
            volumes.update({p: {"bind": p, "mode": "ro"} for p in interpreter_paths()})
        return volumes

    def library_versions(self) -> dict[str, str]:
        """Python and library versions of the interpreter that runs solutions in this image, asked of that
        interpreter itself (once per image): a CUDA image's own torch, LightGBM and XGBoost, not the host's."""
        image_id = self.client.images.get(self.image).id
        if image_id not in _IMAGE_VERSIONS:
            mounts = {str(_VERSIONS): {"bind": _IN["versions"], "mode": "ro"}}
            if self.host_python:
                mounts.update({p: {"bind": p, "mode": "ro"} for p in interpreter_paths()})
            out = self.client.containers.run(self.image, [self.python, "-I", _IN["versions"]], network_mode="none",
                                             read_only=True, volumes=mounts, remove=True, stderr=True)
            try:
                _IMAGE_VERSIONS[image_id] = json.loads(out)
            except ValueError as exc:
                raise SandboxError(f"the interpreter of image {self.image!r} did not report its libraries: "
                                   f"{out[-400:]!r}") from exc
        return dict(_IMAGE_VERSIONS[image_id])

    def execute(self, task, code: str, devices: tuple[str, ...] = ()) -> tuple[RunDir, dict | None, bool, float]:
        # The view's checks refuse a task no mount could keep apart from its answers; its covers
        # are not needed here: a container starts from an image that holds no data.
        view = solution_view(task, interpreter_paths() if self.host_python else (), self.base)
        run = RunDir.create(self.base, code, drop_uid=os.geteuid() == 0)
        spec = run.spec(view, self.limits, mounts=False)
        spec.update(workdir=_IN["work"], solution=f"{_IN['work']}/solution.py", public_dir=_IN["data"],
                    meta_dir=_IN["meta"], cover=[], expose=[], hide=[], cgroups=[],
                    cpu_account=CONTAINER_CPU_ACCOUNT, nice=SOLUTION_NICE)
        (run.meta / "spec").write_bytes(marshal.dumps(spec))
        lim = self.limits
        start = time.monotonic()
        container = self.client.containers.create(
            self.image, [self.python, "-I", _IN["runtime"], f"{_IN['meta']}/spec"],
            network_mode="none", read_only=True, volumes=self._volumes(view.data_dir, run),
            tmpfs={**{p: f"size={lim.tmpfs_mb}m,mode=1777" for p in ("/tmp", "/var/tmp")},
                   _IN["work"]: f"size={lim.tmpfs_mb}m,mode=0700"},
            shm_size=f"{lim.tmpfs_mb}m", environment=solution_env(_IN["work"], _IN["data"], lim.cpus),
            mem_limit=f"{lim.memory_mb + 256}m", memswap_limit=f"{lim.memory_mb + 256}m",
            nano_cpus=int(lim.cpus * 1e9), pids_limit=lim.nproc + 16, device_requests=device_requests(tuple(devices)),
            cap_drop=["ALL"], cap_add=["SETUID", "SETGID", "KILL", "CHOWN", "DAC_READ_SEARCH"],
            security_opt=["no-new-privileges"], working_dir=_IN["work"], labels={LABEL: str(run.root)})
        import requests

        killed, watchdog = False, None
        try:
            container.start()
            watchdog = CpuWatchdog(container, lim.timeout_s + WATCHDOG_SLACK_S * max(1.0, lim.cpus))
            try:
                container.wait(timeout=lim.host_backstop_s + 10)
            except requests.RequestException:  # the engine's wait timed out: the supervisor itself is stuck
                container.kill()
                killed = True
        finally:  # never leave a container behind, even when it failed to start
            if watchdog is not None:
                watchdog.stop()
            container.reload()
            oom_killed = bool(container.attrs.get("State", {}).get("OOMKilled"))
            logs = container.logs(stdout=False, stderr=True, tail=20).decode(errors="replace")
            container.remove(force=True)
        status = run.status()
        if status is None and watchdog.fired_at is not None:  # the supervisor was killed before it could report
            status = {"timed_out": "cpu", "cpu_s": watchdog.fired_at, "wall_s": time.monotonic() - start,
                      "cpu_source": "the host watchdog's"}  # no output: it was lost with the supervisor
        if status is not None:
            status["oom_killed"] = oom_killed
        if status is None and not killed:
            run.remove()
            raise SandboxError(f"sandbox supervisor failed in docker: {logs[-800:]}")
        return run, status, killed, time.monotonic() - start
