"""Importers for the competition layouts users bring, each read in place and never written to.

``LAYOUTS`` maps a layout name to its reader, ``read(src, code=None, categories=None) -> (tasks,
refusals)``: ``mledojo`` (:mod:`.mledojo`), ``mlebench`` (:mod:`.mlebench`), ``dsbench``
(:mod:`.dsbench`), and ``wmrl``, folders of tasks in our own layout with a ``task.json`` each.
:func:`detect_layout` tells which one a folder is in, for reading a user's folder without being
told (``wmrl.tasks.get_pool``). A competition the reader cannot support is refused by name with
its reason (:class:`~wmrl.tasks.infer.Refused`); a source that is not in the layout at all raises
:class:`~wmrl.tasks.layouts.base.SourceError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from wmrl.tasks.infer import Refused
from wmrl.tasks.layouts import dsbench, mlebench, mledojo
from wmrl.tasks.layouts.base import SourceError, read_each, subfolders
from wmrl.tasks.task import Task, load_task

__all__ = ["LAYOUTS", "SourceError", "detect_layout", "read_layout"]


def _task_folder(folder: Path) -> Task:
    if not (folder / "task.json").is_file():
        raise Refused(folder.name, "no task.json, so nothing says which metric grades it")
    try:
        return load_task(folder)
    except (OSError, ValueError) as exc:
        raise Refused(folder.name, str(exc)) from None


def _read_task_folders(src: Path, code: Path | None = None, categories: Mapping[str, str] | None = None
                       ) -> tuple[list[Task], list[Refused]]:
    """Folders of tasks in our layout, each with its task.json (which names its metric)."""
    if code is not None or categories:
        raise SourceError("task folders in wmrl's layout carry their metric and category in task.json; "
                          "--code and --category do not apply")
    return read_each(subfolders(src), _task_folder)


LAYOUTS = {"mledojo": mledojo.read, "mlebench": mlebench.read, "dsbench": dsbench.read, "wmrl": _read_task_folders}


def detect_layout(src: Path) -> str | None:
    """The layout ``src`` is in, or None: DSBench's data/data_resplit/, MLE-bench's <id>/prepared/public/,
    task folders with task.json, MLE-Dojo's <name>/data/public/ (checked in that order)."""
    src = Path(src)
    if (src / "data" / "data_resplit").is_dir():
        return "dsbench"
    folders = subfolders(src) if src.is_dir() else []
    if any((d / "prepared" / "public").is_dir() for d in folders):
        return "mlebench"
    if any((d / "task.json").is_file() for d in folders):
        return "wmrl"
    if any((d / "data" / "public").is_dir() for d in folders):
        return "mledojo"
    return None


def read_layout(layout: str, src: str | Path, code: str | Path | None = None,
                categories: Mapping[str, str] | None = None) -> tuple[list[Task], list[Refused]]:
    """Read every competition of ``src`` in ``layout``; errors name the wrong value and the fix."""
    if layout not in LAYOUTS:
        raise SourceError(f"unknown layout {layout!r}; choose one of {', '.join(LAYOUTS)}")
    src = Path(src)
    if not src.is_dir():
        raise SourceError(f"source {src} is not a folder; pass the folder holding the {layout} competitions")
    return LAYOUTS[layout](src.resolve(), Path(code).resolve() if code is not None else None, categories)
