"""Provenance stamped on every result file: config, seed, git commit, date, machine, processes, executions.

It also knows where the repository is (``REPO``), in one place: every module that needs the
root (results, parameters, notebooks, the default data pool) imports it from here. In a checkout
(an editable install included) that is the folder holding the package and ``pyproject.toml``; an
installed wheel has no checkout around it (the sandbox's runtime travels inside the package), so
there it is the current working folder: run from the folder that should hold ``results/``.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from wmrl.record import ENV as EXECUTIONS_ENV

__all__ = ["REPO", "atomic_path", "code_digest", "code_version", "committed_bytes", "committed_files", "cpu_model", "executions",
           "find_repo", "float32_kernels", "processes", "provenance", "write_json_atomic"]


def find_repo() -> Path:
    """The checkout that holds this package, else (an installed wheel) the current working folder."""
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").is_file() and (here / "wmrl" / "__init__.py").is_file():
        return here
    return Path.cwd().resolve()


REPO = find_repo()

CODE_PATHS = ("wmrl", "sandbox", "params", "pyproject.toml", "Makefile")


def _git(*args: str) -> str:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=False)
        return out.stdout.strip() if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def committed_files(rev: str, paths: list[str]) -> dict[str, bytes | None]:
    """Each of ``paths`` (relative to the repository root) as commit ``rev`` holds it, read by one ``git cat-file
    --batch``: None for a path the commit lacks, and for every path where ``rev`` is not in this clone's history
    or there is no clone (an installed wheel)."""
    found: dict[str, bytes | None] = dict.fromkeys(paths)
    if not paths:
        return found
    query = "".join(f"{rev}:{path}\n" for path in paths).encode()
    try:
        out = subprocess.run(["git", "cat-file", "--batch"], cwd=REPO, input=query, capture_output=True, timeout=120,
                             check=False)
    except (OSError, subprocess.SubprocessError):
        return found
    if out.returncode != 0:
        return found
    blob, at = out.stdout, 0
    for path in paths:
        end = blob.index(b"\n", at)
        header = blob[at:end].split()
        at = end + 1
        if len(header) == 3 and header[1] == b"blob":
            size = int(header[2])
            found[path] = blob[at:at + size]
            at += size + 1
        elif len(header) == 3:  # a tree or other object: its contents follow, but it is not a file
            at += int(header[2]) + 1
    return found


def committed_bytes(rev: str, path: str) -> bytes | None:
    """The file at ``path`` (relative to the repository root) as commit ``rev`` holds it, or None
    (:func:`committed_files`)."""
    return committed_files(rev, [path])[path]


def code_version() -> str:
    """The code this checkout runs: its commit, and a digest of its uncommitted changes to the code (none:
    the commit alone). Two processes with the same version run the same code (:data:`CODE_PATHS`)."""
    commit = _git("rev-parse", "HEAD")
    diff = _git("diff", "HEAD", "--", *CODE_PATHS)
    return commit if not diff else f"{commit}+{hashlib.sha256(diff.encode()).hexdigest()[:12]}"


def code_digest() -> str:
    """A digest of the code this checkout runs (:data:`CODE_PATHS` as committed, and any uncommitted change to
    them): unlike :func:`code_version`, the same across commits that leave the code alone (results, notes)."""
    trees = _git("ls-tree", "HEAD", "--", *CODE_PATHS)
    diff = _git("diff", "HEAD", "--", *CODE_PATHS)
    return hashlib.sha256(f"{trees}\0{diff}".encode()).hexdigest()[:16]


def provenance(config: dict | None = None, seed: int | None = None) -> dict:
    """Who made a result, from what, when and where."""
    commit = _git("rev-parse", "HEAD")
    # Dirty means the *code* differs from the commit; regenerated results/figures/notebooks do not count.
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", *CODE_PATHS)
    return {
        "config": config or {},
        "seed": seed,
        "git_commit": commit,
        "git_dirty": bool(dirty) and dirty != "unknown",
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "hostname": platform.node(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu": cpu_model(),
            **float32_kernels(),
            "cpu_count": os.cpu_count(),
            "load": machine_load(),
        },
        "processes": processes(),
        "executions": executions(),
    }


def processes() -> dict:
    """How many processes made the result, and how long they waited at most for each other.

    ``count`` is the size of torch's process group when one is running (torchrun, accelerate
    launch), else the launcher's ``WORLD_SIZE``, else 1; ``collective_timeout_s`` the group's
    timeout as torch holds it (absent when there is no group, or torch does not say). torch is
    read only if the process has already imported it: a result written without it never waits
    for the import.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return {"count": int(os.environ.get("WORLD_SIZE", "1"))}
    out = {"count": int(dist.get_world_size())}
    timeout = _group_timeout_s(dist)
    if timeout is not None:
        out["collective_timeout_s"] = timeout
    return out


def _group_timeout_s(dist) -> float | None:
    """The default process group's timeout in seconds, from its backend's options (None: not readable)."""
    import torch

    group = dist.distributed_c10d._get_default_group()
    for device in ("cpu", "cuda"):
        try:
            return float(group._get_backend(torch.device(device)).options._timeout.total_seconds())
        except (AttributeError, RuntimeError, ValueError):
            continue
    return None


def executions() -> str | None:
    """How the result's executions were obtained: measured afresh and recorded (``record:<file>``), served
    from a record (``replay:<folder or file>``), the path relative to the repository when inside it; None
    when no record was active (:mod:`wmrl.record`)."""
    spec = os.environ.get(EXECUTIONS_ENV)
    if not spec or ":" not in spec:
        return spec or None
    mode, path = spec.split(":", 1)
    try:
        path = Path(path).resolve().relative_to(REPO).as_posix()
    except ValueError:
        pass
    return f"{mode}:{path}"


def cpu_model() -> str:
    """The processor's model name (Linux: ``/proc/cpuinfo``). float32 arithmetic's last bits depend on it (its
    vector instructions, the BLAS code path it gets), so a replay on another one can round otherwise."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "unknown")
    except OSError:
        return platform.processor() or "unknown"


def float32_kernels() -> dict:
    """``{"float32_kernels": "AVX512" | "AVX2" | ...}``, torch's CPU capability when torch is loaded: float32
    rounds alike within one class, so a run replays to the bit on its recording CPU's class."""
    torch = sys.modules.get("torch")
    return {"float32_kernels": torch.backends.cpu.get_cpu_capability()} if torch is not None else {}


def machine_load() -> dict:
    """How busy the machine was when a result was written. Wall times depend on it (budgets count
    CPU seconds, so outcomes do not), and a reader can tell an idle run from a busy one."""
    one, five, fifteen = os.getloadavg()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"loadavg_1m": one, "loadavg_5m": five, "loadavg_15m": fifteen, "cores_usable": usable}


class atomic_path:
    """Context manager yielding a temporary path that replaces ``path`` only on success.

    A crash mid-write leaves the previous file intact (nothing lost on a crash).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __enter__(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        os.close(fd)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600 files; results are for everyone to read
        self.tmp = Path(tmp)
        return self.tmp

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)


def write_json_atomic(path: str | os.PathLike, obj) -> None:
    """Write JSON atomically (temp file + rename)."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")
