"""Local backend: one solution in Linux namespaces under a throw-away uid, graded on the host.

Why this shape: real solutions take seconds and the trainer runs thousands, so a container
per run is too slow here; namespaces + rlimits cost tens of milliseconds. The solution must
never read the hidden answers even when the host runs as root, hence two independent walls:
a private mount namespace that shows the task's public folder and the interpreter and covers
every other folder that may hold data with an empty tmpfs (``view.solution_view``), and a fresh
uid (unique per run, so concurrent runs cannot read each other or share a process budget) for
which every root-owned file of mode 0600/0700 is unreadable. Whatever the kernel refuses is
recorded in ``isolation`` instead of failing.

Two launchers run the same supervisor: "cold" starts ``unshare ... python -I run_solution.py``
per run; "warm" (the default where it applies, see ``warm_available``) forks a server that has
already imported numpy/pandas/scikit-learn, saving ~1.5-2 s of CPU per run (``wmrl.sandbox.warm``).

The budget (``Limits``) is CPU seconds of the solution's whole process tree, measured by the
supervisor from the run's CPU cgroup where one can be made (``cgroup``), else from ``/proc``; a
wall-clock limit stays as a generous backstop against programs that sleep or block.
"""
from __future__ import annotations

import functools
import marshal
import math
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from wmrl.config import SandboxConfig

from . import warm as warm_launcher
from .cgroup import RunCgroups, cpu_cgroup_root, memory_cgroup_root
from .view import SandboxError, SolutionView, closed_parents, interpreter_paths, solution_view

__all__ = [
    "RUNTIME",
    "UID_RANGE",
    "Limits",
    "LocalBackend",
    "RunDir",
    "default_wall_timeout",
    "probe_namespaces",
    "solution_env",
    "warm_available",
]

RUNTIME = Path(__file__).resolve().parent / "runtime" / "run_solution.py"  # package data
_NS_FLAGS = ["--mount", "--net", "--pid", "--fork", "--kill-child", "--mount-proc"]
UID_RANGE = range(1_000_000, 2_000_000)  # one fresh uid per run, never a real account
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                "VECLIB_MAXIMUM_THREADS", "BLIS_NUM_THREADS")


def default_wall_timeout(cpu_s: float) -> float:
    """The wall-clock backstop of a ``cpu_s`` CPU-second budget, for programs that sleep or block: 5x, since
    on a shared machine a CPU-bound script may get a third of a core or less."""
    return max(5.0 * cpu_s, cpu_s + 10.0)


@dataclass(frozen=True)
class Limits:
    """Per-run budgets; the rlimits are applied to the solution only, never to the supervisor.

    ``timeout_s`` is the budget in CPU seconds of the solution's whole process tree (children
    and threads included); ``wall_timeout_s`` the wall-clock backstop (None: ``default_wall_timeout``).
    Both end a run as ``timeout``; its ``limit`` says which one fired.
    """

    timeout_s: float = 60.0
    memory_mb: int = 2048
    cpus: float = SandboxConfig.cpus
    wall_timeout_s: float | None = None
    gpus: int = 0
    tmpfs_mb: int = SandboxConfig.work_mb  # the private work folder, /tmp, /var/tmp, /dev/shm
    nproc: int = 256         # processes + threads of the run's uid
    fsize_mb: int = 1024     # largest file the solution may write
    nofile: int = 1024
    tail_bytes: int = 2048   # head and tail kept of stdout and of stderr
    kill_grace_s: float = 0.5

    def __post_init__(self):
        checks = [("timeout_s", self.timeout_s > 0, "a positive number of CPU seconds, e.g. 2.0"),
                  ("memory_mb", self.memory_mb >= 64, "at least 64 (MB)"),
                  ("cpus", self.cpus > 0, "a positive number of cores, e.g. 1"),
                  ("gpus", isinstance(self.gpus, int) and self.gpus >= 0, "a whole number of GPUs >= 0")]
        for name, ok, expected in checks:
            if not ok:
                raise ValueError(f"sandbox {name}={getattr(self, name)!r}: expected {expected}")
        if self.wall_timeout_s is None:
            object.__setattr__(self, "wall_timeout_s", default_wall_timeout(self.timeout_s))
        elif not self.wall_timeout_s >= self.timeout_s:
            raise ValueError(f"sandbox wall_timeout_s={self.wall_timeout_s!r} is below the CPU budget timeout_s="
                             f"{self.timeout_s!r}: the backstop would become the real limit again; leave it None "
                             f"for the default {default_wall_timeout(self.timeout_s):g} s or pass a larger value")

    def rlimits(self) -> dict[str, int]:
        """Per-process limits. Without RLIMIT_AS when the run has GPUs: CUDA reserves tens of GB of
        address space at start-up, so only the (container's) memory cgroup bounds such a run."""
        cpu = math.ceil(self.timeout_s) + 2  # per process, a backstop; the supervisor counts the whole tree
        limits = {"RLIMIT_CPU": cpu, "RLIMIT_AS": self.memory_mb << 20, "RLIMIT_NPROC": self.nproc,
                  "RLIMIT_FSIZE": self.fsize_mb << 20, "RLIMIT_NOFILE": self.nofile, "RLIMIT_CORE": 0}
        if self.gpus:
            del limits["RLIMIT_AS"]
        return limits

    @property
    def host_backstop_s(self) -> float:
        """How long the host waits for the supervisor before killing it (it enforces the limits itself)."""
        return self.wall_timeout_s + self.kill_grace_s + 10.0


def solution_env(workdir: str, data_dir: str, cpus: float, cuda_devices: tuple[str, ...] | None = None) -> dict[str, str]:
    """A scrubbed environment: nothing of the host's leaks in, thread pools sized to ``cpus``.

    ``cuda_devices``: the host GPUs the solution may use, as ``CUDA_VISIBLE_DEVICES`` (an empty
    tuple hides every GPU, so that a CPU slot on a GPU node cannot take a training GPU); None
    leaves the variable unset (a container sees only the GPUs it was given anyway).
    """
    threads = str(max(1, int(cpus)))
    gpu = {} if cuda_devices is None else {"CUDA_VISIBLE_DEVICES": ",".join(cuda_devices)}
    return {**gpu, "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": workdir, "TMPDIR": workdir, "USER": "sandbox",
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0",
            "PYTHONUNBUFFERED": "1", "MPLBACKEND": "Agg", "DATA_DIR": data_dir,
            "SUBMISSION_PATH": os.path.join(workdir, "submission.csv"), **{v: threads for v in _THREAD_VARS}}


@functools.cache
def probe_namespaces() -> tuple[list[str], str]:
    """The namespace prefix this kernel allows, and its name for ``isolation`` (probed once)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return [], "no-namespaces"
    root = os.geteuid() == 0
    prefix = [unshare, *_NS_FLAGS] if root else [unshare, "--user", "--map-root-user", *_NS_FLAGS]
    if subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False).returncode == 0:
        return prefix, ("" if root else "userns+") + "mountns+netns+pidns"
    return [], "no-namespaces"


def warm_available(prefix: list[str], cpus: float) -> str | None:
    """None when the warm launcher can give a run exactly what the cold one does, else why not.

    It enters namespaces itself as root (a user namespace would need uid maps written from
    outside) and preloads single-threaded libraries, which matches only runs with one thread.
    """
    if prefix and "--user" in prefix:
        return "namespaces need a user namespace (not root)"
    if max(1, int(cpus)) != 1:
        return "cpus > 1 (the preloaded thread pools have one thread)"
    if not hasattr(os, "pidfd_open"):
        return "os.pidfd_open is missing"
    return None


@dataclass
class RunDir:
    """``root/`` (0711) holds ``work/`` (the solution's) and ``meta/`` (0700 root: code, status, submission)."""

    root: Path
    uid: int | None

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def meta(self) -> Path:
        return self.root / "meta"

    @classmethod
    def create(cls, base: Path, code: str, drop_uid: bool) -> RunDir:
        base.mkdir(mode=0o711, parents=True, exist_ok=True)
        root = Path(tempfile.mkdtemp(prefix="run-", dir=base))
        root.chmod(0o711)
        uid = UID_RANGE[secrets.randbelow(len(UID_RANGE))] if drop_uid else None
        run = cls(root, uid)
        run.meta.mkdir(mode=0o700)
        run.work.mkdir(mode=0o700)  # used as is without namespaces; the supervisor hands it over
        (run.meta / "solution.py").write_text(code)
        return run

    def spec(self, view: SolutionView, limits: Limits, mounts: bool) -> dict:
        """What the in-sandbox supervisor needs; paths are as the solution will see them."""
        return {"workdir": str(self.work), "solution": str(self.work / "solution.py"), "meta_dir": str(self.meta),
                "public_dir": view.data_dir, "uid": self.uid, "mounts": mounts, "work_tmpfs": mounts,
                "cover": [list(c) for c in view.covers], "expose": list(view.expose), "hide": list(view.hides),
                "tmpfs_mb": limits.tmpfs_mb,
                "limits": limits.rlimits(), "cpu_limit_s": limits.timeout_s, "wall_limit_s": limits.wall_timeout_s,
                "kill_grace_s": limits.kill_grace_s,
                "tail_bytes": limits.tail_bytes, "max_submission_mb": 512}

    def status(self) -> dict | None:
        """The supervisor's status record, or None when it wrote none."""
        try:
            return marshal.loads((self.meta / "status").read_bytes())
        except (OSError, EOFError, ValueError, TypeError):
            return None

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class LocalBackend:
    """Launches the supervisor (cold: ``unshare ... python -I run_solution.py SPEC``; warm: a
    fork of a preloaded server) and waits with a backstop. ``warm`` asks for the warm launcher;
    it is used when ``warm_available`` allows and ``isolation`` then ends in ``+warm``."""

    def __init__(self, limits: Limits, base_dir: Path | None = None, warm: bool = True):
        if not RUNTIME.is_file():
            raise FileNotFoundError(f"sandbox runtime missing at {RUNTIME}; run wmrl from a repository checkout")
        self.limits = limits
        self.base = Path(base_dir or Path(tempfile.gettempdir()) / "wmrl-sandbox")
        self.prefix, ns = probe_namespaces()
        self.expose = interpreter_paths()
        # Without a mount namespace a closed parent of the interpreter cannot be bound open, and a
        # dropped uid could not import the standard library: keep the uid then, and say so.
        self.drop_uid = os.geteuid() == 0 and (bool(self.prefix) or not closed_parents(self.expose))
        self.memcg = os.geteuid() == 0 and memory_cgroup_root() is not None
        self.cpucg = os.geteuid() == 0 and cpu_cgroup_root() is not None
        self.warm = warm and warm_available(self.prefix, limits.cpus) is None
        self.isolation = "+".join(filter(None, [ns, "uid" if self.drop_uid else "", "memcg" if self.memcg else "",
                                                "cpucg" if self.cpucg else "", "rlimits", "scrubbed-env",
                                                "warm" if self.warm else ""]))

    def execute(self, task, code: str, devices: tuple[str, ...] = ()) -> tuple[RunDir, dict | None, bool, float]:
        """Run once on the host GPUs ``devices`` (none: every GPU hidden); returns (run dir, supervisor
        status or None, killed by the host backstop, wall)."""
        view = solution_view(task, self.expose, self.base)  # before anything is created: it may refuse the task
        run = RunDir.create(self.base, code, self.drop_uid)
        spec = run.spec(view, self.limits, mounts=bool(self.prefix))
        groups = RunCgroups.create(run.root.name, self.limits.memory_mb, memory=self.memcg, cpu=self.cpucg)
        spec.update(groups.spec())
        env = solution_env(spec["workdir"], spec["public_dir"], self.limits.cpus, tuple(devices))
        if self.warm:  # a fork inherits the server's process state: the spec says what to change
            spec.update(env=env, namespaces=bool(self.prefix))
        (run.meta / "spec").write_bytes(marshal.dumps(spec))
        backstop = self.limits.host_backstop_s
        start = time.monotonic()
        try:
            killed, failure = self._launch_warm(run, backstop) if self.warm else self._launch_cold(run, env, backstop)
        finally:
            oom_killed = groups.close()
        status = run.status()
        if status is not None:
            status["oom_killed"] = oom_killed
        if status is None and not killed:
            run.remove()
            raise SandboxError(failure)
        return run, status, killed, time.monotonic() - start

    def _launch_cold(self, run: RunDir, env: dict[str, str], backstop: float) -> tuple[bool, str]:
        """(killed by the backstop, failure text) of ``unshare ... run_solution.py`` for ``run``."""
        cmd = [*self.prefix, sys.executable, "-I", str(RUNTIME), str(run.meta / "spec")]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                env=env, start_new_session=True, close_fds=True)
        try:
            _, err = proc.communicate(timeout=backstop)
            killed = False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # --kill-child takes the whole namespace with it
            _, err = proc.communicate()
            killed = True
        return killed, f"sandbox supervisor failed (exit {proc.returncode}): {err.decode(errors='replace')[-800:]}"

    def _launch_warm(self, run: RunDir, backstop: float) -> tuple[bool, str]:
        """The same from a preloaded server; one that must be started gets a run's scrubbed
        environment with paths that lead nowhere, so its imports cannot remember a real one."""
        try:
            return warm_launcher.run_job(run.meta / "spec", backstop,
                                         solution_env(os.devnull, os.devnull, self.limits.cpus))
        except RuntimeError as exc:  # the server could not start or died: the sandbox's failure, said clearly
            run.remove()
            raise SandboxError(f"{exc} (Sandbox(..., warm=False) uses the cold launcher)") from exc
