"""What a solution sees of the file system: its task's public folder, read-only, and nobody's other data.

Why deny by default: an imported competition stays where its user keeps it, and beside its public
folder lie what a solution must never read: MLE-bench's ``<id>/raw/`` (the original labelled
data) and ``private/``, the ``raw/`` some MLE-Dojo prepare scripts keep, DSBench's
``data/answers/`` and ``output_model/`` (other models' predictions), the other tasks, the
benchmark's checkout with its leaderboards and grading code, the repository, the data root, the
home folder. No list of names to hide can foresee every source tree, so the local backend hides
whole trees (``solution_view``):

1. every folder at the top of the file system that is not the operating system's (``/home``,
   ``/root``, ``/mnt``, ``/srv``, ``/work``, ... : everything not in ``OS_FOLDERS``) and ``/run``
   are covered by an empty tmpfs, and the scratch folders (``/tmp``, ``/var/tmp``, ``/dev/shm``)
   by a fresh tmpfs of the run's own, so a pool kept there vanishes too;
2. where a task, the repository or the data root lies inside an operating-system folder (e.g.
   ``/opt/data``, ``/var/lib/...``), the highest folder above it that is not the system's own
   (``boundary``) is covered as well;
3. then bound back, read-only and at their own paths: the task's public folder (``$DATA_DIR``)
   and the interpreter's folders (``interpreter_paths``). The folders leading to them are empty
   otherwise: listing a public folder's parent shows the public folder and nothing else.

The docker backend mounts the public folder alone (at ``/wmrl/data``) into an image holding no
data, beside the interpreter's folders when the image uses this machine's.

No view is assembled from several folders: ``$DATA_DIR`` is the task's ``public_dir`` as it is.
MLE-Dojo, MLE-bench and DSBench each keep every file a solution reads (train, test, sample
submission, image folders) in that one folder; a task's files outside it (DSBench's
``data/task/<name>.txt`` description, an MLE-bench ``description.md`` kept in the checkout)
are the agent's prompt, never the solution's input, and a solution does not see them.

Refused before anything runs (``SandboxError``, naming the fix): a task whose answers lie inside
its public folder, and a task kept inside the interpreter's folders, which every solution sees.
"""
from __future__ import annotations

import functools
import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from wmrl.provenance import REPO

__all__ = [
    "CLOSED",
    "OS_FOLDERS",
    "SCRATCH",
    "SandboxError",
    "SolutionView",
    "boundary",
    "closed_parents",
    "interpreter_folders",
    "interpreter_paths",
    "solution_view",
    "top_folders",
]

SCRATCH = ("/tmp", "/var/tmp", "/dev/shm")  # per-run, writable
CLOSED = ("/run",)  # host sockets and runtime state: nothing a solution needs
# The operating system's folders: what the interpreter and its libraries may need, and no one's
# data. A task kept inside one of them costs the folder below it (``boundary``), never the folder.
OS_FOLDERS = frozenset({
    "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/usr", "/etc", "/var", "/opt", "/nix", "/gnu",
    "/snap", "/proc", "/sys", "/dev", *SCRATCH, *CLOSED,
    "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32", "/usr/libexec", "/usr/include",
    "/usr/share", "/usr/src", "/usr/local", "/usr/local/bin", "/usr/local/sbin", "/usr/local/lib",
    "/usr/local/lib64", "/usr/local/include", "/usr/local/share", "/usr/local/etc",
    "/var/lib", "/var/cache", "/var/local", "/var/opt", "/var/spool", "/nix/store", "/gnu/store",
})


class SandboxError(RuntimeError):
    """The sandbox itself failed or refused (not the solution): never charged to the solution as a status."""


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def boundary(path: str | os.PathLike) -> str | None:
    """The highest folder at or above ``path`` that is not the operating system's (None for an OS
    folder itself): covering it hides ``path`` and whatever lies beside it (``raw/``, other tasks)."""
    parts = Path(path).parts
    for depth in range(2, len(parts) + 1):
        folder = str(Path(*parts[:depth]))
        if folder not in OS_FOLDERS:
            return folder
    return None


def top_folders() -> list[str]:
    """The folders at the top of the file system that are not the operating system's: covered whole.
    Links are left alone (``/lib -> usr/lib``): a mount would land on their target."""
    return sorted(e.path for e in os.scandir("/") if e.is_dir(follow_symlinks=False) and e.path not in OS_FOLDERS)


@functools.cache
def interpreter_paths() -> tuple[str, ...]:
    """The folders the solution's interpreter reads: its prefixes, and every folder on the path of
    ``python -I`` (site-packages and what their ``.pth`` files add) outside them, less the
    repository's (a path-style editable install of wmrl must not show the repository). Probed once."""
    probe = subprocess.run([sys.executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                           capture_output=True, text=True, timeout=120, check=True, cwd="/")
    return interpreter_folders((sys.base_prefix, sys.prefix, os.path.dirname(sys.executable)),
                               json.loads(probe.stdout), str(REPO.resolve()))


def interpreter_folders(prefixes, path_entries, repo: str) -> tuple[str, ...]:
    """:func:`interpreter_paths` from its inputs: each folder both where it really is and where the
    interpreter names it. A virtual environment reached through a link (``.venv -> /elsewhere/venv``)
    names its modules by the link's path; shown only at the target, every module the warm server
    had not imported yet would be missing in the sandbox (``ModuleNotFoundError`` for every script)."""
    found: set[str] = set()

    def add(path: str) -> None:
        for seen in dict.fromkeys((os.path.realpath(path), os.path.abspath(path))):
            if not any(_inside(seen, f) for f in found):
                found.add(seen)

    for prefix in prefixes:
        add(prefix)
    for entry in path_entries:
        real = os.path.realpath(entry) if entry else ""
        if os.path.isdir(real) and not _inside(real, repo) and not _inside(repo, real):
            add(entry)
    return tuple(sorted(found))


@functools.lru_cache(maxsize=256)
def closed_parents(paths: tuple[str, ...]) -> tuple[str, ...]:
    """The highest parent of each path that an unprivileged uid may not enter (e.g. /root); a
    missing folder has nothing to open."""
    closed = set()
    for path in paths:
        parts = Path(path).parts
        for i in range(2, len(parts)):
            try:
                mode = os.stat(Path(*parts[:i])).st_mode
            except FileNotFoundError:
                break
            if not mode & stat.S_IXOTH:
                closed.add(str(Path(*parts[:i])))
                break
    return tuple(sorted(closed))


@dataclass(frozen=True)
class SolutionView:
    """What the in-sandbox supervisor mounts (``run_solution.apply_mounts``), paths as on the host.

    ``covers``: (folder, tmpfs mode) emptied first; ``data_dir`` (the public folder, ``$DATA_DIR``)
    and ``expose`` (the interpreter's folders) bound back read-only at their own paths; ``hides``:
    the answers' folder (unless it holds the public folder), emptied again after the binds should a
    bound-back folder hold it after all (``solution_view`` refuses such a task: the last wall,
    enforced in the sandbox itself).
    """

    data_dir: str
    expose: tuple[str, ...]
    covers: tuple[tuple[str, str], ...]
    hides: tuple[str, ...]


def _task_paths(task) -> list[Path]:
    """Every file and folder of the task that the host knows of: its root and the folder holding it,
    its public folder's parent, its answers, leaderboards and grading code (``Task``'s fields;
    a duck-typed task may have only ``root``, ``public_dir`` and ``private_dir``)."""
    root, scoring = Path(task.root), getattr(task, "scoring", None)
    paths = [root, root.parent, Path(task.public_dir).parent, Path(task.private_dir),
             *(Path(p).parent for p in getattr(task, "board_paths", ()))]
    for answers in filter(None, [getattr(task, "answers_path", None)]):
        paths.append(Path(answers).parent)
    for code in filter(None, [getattr(scoring, "code", None), getattr(scoring, "code_root", None)]):
        paths.append(Path(code))
    return paths


def _host_paths() -> list[Path]:
    """The repository, the data root (where the pool and the memo live) and the home folders."""
    from wmrl.tasks import default_root  # the task layer knows where the data root is

    return [REPO, default_root().parent, Path.home(), Path("/root"), Path("/home")]


def solution_view(task, expose: tuple[str, ...] | list[str], base: str | os.PathLike,
                  tops: list[str] | None = None) -> SolutionView:
    """The mounts that show a solution of ``task`` its public folder and the interpreter (``expose``)
    and nothing else; ``base`` is where run folders live, ``tops`` the top folders to cover
    (default ``top_folders()``). Raises SandboxError for a task laid out so that no view can hide
    its answers (see the module's docstring)."""
    data_dir = os.path.abspath(task.public_dir)
    public, private = os.path.realpath(data_dir), os.path.realpath(task.private_dir)
    if _inside(private, public):
        raise SandboxError(f"task {task.name!r}: its answers folder {private} lies inside its public folder "
                           f"{public}, which the solution reads; keep the answers outside the public folder")
    for path in (public, private, os.path.realpath(task.root)):
        for folder in expose:
            if _inside(path, folder):
                raise SandboxError(f"task {task.name!r}: {path} lies inside the interpreter's folder {folder}, which "
                                   f"every solution sees; keep the task's data outside {folder}")
    covered = [*SCRATCH, *CLOSED, *(top_folders() if tops is None else tops)]
    for path in (*_task_paths(task), *_host_paths()):
        folder = boundary(os.path.realpath(path))
        if folder is not None and not any(_inside(folder, c) for c in covered):
            covered.append(folder)
    closed = [p for p in closed_parents((*expose, data_dir, str(base))) if not any(_inside(p, c) for c in covered)]
    covers = [(p, "1777") for p in SCRATCH] + [(p, "0755") for p in sorted(set(covered[len(SCRATCH):]) | set(closed))]
    hides = sorted(p for p in {os.path.abspath(task.private_dir), private} if not _inside(public, p))
    return SolutionView(data_dir, tuple(expose), tuple(covers), tuple(hides))
