"""A run's own cgroups: one memory limit and one CPU account for the solution's whole process tree.

Why besides rlimits: an rlimit is per process, so a solution that forks (joblib, a fork bomb)
could still take the machine's memory in sum, and its children's CPU time would escape a
per-process CPU limit. A memory group bounds the sum (its ``oom_kill`` counter tells the host
that a SIGKILL was the kernel's OOM killer); a CPU account counts every process and thread of
the run, also those that already exited, which is what the CPU-seconds budget needs (the
supervisor reads it, see ``runtime/run_solution.py``).

The groups are created *inside* the caller's own groups (never moving anything out of them).
Memory uses the cgroup-v1 memory controller, which needs no delegation; CPU uses v1 ``cpuacct``
where it is mounted, else a plain cgroup-v2 group, whose ``cpu.stat`` reports ``usage_usec``
whatever controllers are enabled. Where a hierarchy is missing or not writable the group is
simply absent (the supervisor then reads the tree's CPU time from ``/proc``), and ``isolation``
says which groups a run has.
"""
from __future__ import annotations

import functools
import os
import signal
import time
from pathlib import Path

__all__ = ["RunCgroups", "cpu_account_of", "cpu_cgroup_root", "cpu_seconds", "memory_cgroup_root", "process_groups",
           "run_group_paths"]


@functools.cache
def _own_groups() -> dict[str, Path]:
    """This process's group folder per v1 controller, and under "unified" its v2 group."""
    return process_groups("self")


def process_groups(pid: int | str) -> dict[str, Path]:
    """The group folders of process ``pid`` as this process sees them (empty when it has ended)."""
    try:
        membership = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        mounts = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return {}
    points: dict[str, tuple[str, Path]] = {}  # controller -> (mount's root in the hierarchy, mount point)
    for line in mounts:
        left, _, right = line.partition(" - ")
        fields, (fstype, _source, options) = left.split(), right.split()[:3]
        root, point = fields[3], Path(fields[4])
        if fstype == "cgroup2":
            points.setdefault("unified", (root, point))
        elif fstype == "cgroup":
            for option in options.split(","):
                points.setdefault(option, (root, point))
    groups = {}
    for line in membership:
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else ["unified"]:
            if name in points:
                root, point = points[name]
                relative = os.path.relpath(path, root) if path.startswith(root) else None
                if relative is not None:
                    groups[name] = (point / relative).resolve()
    return groups


def _writable(group: Path | None) -> Path | None:
    """``group`` when a child group can be made in it here, else None."""
    if group is None:
        return None
    probe = group / f"wmrl-probe-{os.getpid()}"
    try:
        probe.mkdir()
        probe.rmdir()
    except OSError:
        return None
    return group


@functools.cache
def memory_cgroup_root() -> Path | None:
    """This process's own v1 memory group, when it is writable, else None."""
    return _writable(_own_groups().get("memory"))


@functools.cache
def cpu_cgroup_root() -> tuple[Path, str] | None:
    """(folder, kind) of this process's own CPU-accounting group: v1 "cpuacct", else v2 "cpu.stat"."""
    groups = _own_groups()
    if (root := _writable(groups.get("cpuacct"))) is not None:
        return root, "cpuacct"
    if (root := _writable(groups.get("unified"))) is not None and (root / "cpu.stat").exists():
        return root, "cpu.stat"
    return None


_USAGE_FILE = {"cpuacct": "cpuacct.usage", "cpu.stat": "cpu.stat"}


def cpu_account_of(pid: int) -> tuple[Path, str] | None:
    """(usage file, kind) of the CPU account of process ``pid``'s group, read-only, or None."""
    groups = process_groups(pid)
    for kind, controller in (("cpuacct", "cpuacct"), ("cpu.stat", "unified")):
        if controller in groups and (usage := groups[controller] / _USAGE_FILE[kind]).exists():
            return usage, kind
    return None


def cpu_seconds(usage: Path, kind: str) -> float:
    """CPU seconds in a group's usage file (the runtime's ``CpuMeter`` parses the same two formats
    inside a container, where this package cannot be imported)."""
    text = usage.read_text()
    if kind == "cpuacct":
        return int(text) / 1e9
    return next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("usage_usec ")) / 1e6


def run_group_paths(name: str) -> list[Path]:
    """Where the groups of the run named ``name`` live (for removing those of a host that died)."""
    cpu = cpu_cgroup_root()
    return [root / f"wmrl-{name}" for root in (memory_cgroup_root(), cpu[0] if cpu else None) if root is not None]


class RunCgroups:
    """The groups of one run: ``memory`` (a limit) and ``cpu`` (an account), each possibly None."""

    def __init__(self, memory: Path | None, cpu: Path | None, cpu_kind: str | None):
        self.memory, self.cpu, self.cpu_kind = memory, cpu, cpu_kind

    @classmethod
    def create(cls, name: str, memory_mb: int, memory: bool = True, cpu: bool = True) -> RunCgroups:
        mem_root, cpu_root = memory_cgroup_root() if memory else None, cpu_cgroup_root() if cpu else None
        groups = cls(None, None, None)
        if mem_root is not None:
            groups.memory = mem_root / f"wmrl-{name}"
            groups.memory.mkdir()
            (groups.memory / "memory.limit_in_bytes").write_text(str(memory_mb << 20))
        if cpu_root is not None:
            groups.cpu, groups.cpu_kind = cpu_root[0] / f"wmrl-{name}", cpu_root[1]
            groups.cpu.mkdir()
        return groups

    @property
    def names(self) -> list[str]:
        """For ``isolation``: "memcg" and/or "cpucg"."""
        return [label for label, group in (("memcg", self.memory), ("cpucg", self.cpu)) if group is not None]

    def spec(self) -> dict:
        """The supervisor's part of a run's spec: groups to join, the CPU account to read."""
        account = {"files": [[str(self.cpu / _USAGE_FILE[self.cpu_kind]), self.cpu_kind]]} if self.cpu else None
        return {"cgroups": [str(g) for g in (self.memory, self.cpu) if g is not None], "cpu_account": account}

    def close(self) -> bool:
        """Kill what is left in the groups and remove them; True when the OOM killer fired."""
        killed = False
        if self.memory is not None:
            try:
                text = (self.memory / "memory.oom_control").read_text()
                killed = int(dict(ln.split() for ln in text.splitlines()).get("oom_kill", 0)) > 0
            except (OSError, ValueError):
                pass
        for group in (self.memory, self.cpu):
            if group is not None:
                _remove(group)
        return killed


def _remove(group: Path) -> None:
    for _ in range(50):  # normally empty already; not when the supervisor itself was killed
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            try:
                pids = (group / "cgroup.procs").read_text().split()
            except OSError:
                pids = []
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
