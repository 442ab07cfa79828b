"""What the three importers share: finding the benchmark's code checkout, reading leaderboards, one task.

Every importer reads in place and writes nothing: a competition's data and its grading code stay
where the user keeps them, and the task records absolute paths to them. Problems with one
competition raise :class:`~wmrl.tasks.infer.Refused` (that competition is left out, named, with
the reason); problems with the whole source raise :class:`SourceError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pandas as pd

from wmrl.tasks.infer import Refused
from wmrl.tasks.task import Scoring, Task

__all__ = [
    "LFS_POINTER",
    "SourceError",
    "board_scores",
    "find_checkout",
    "make_task",
    "read_each",
    "relative",
    "subfolders",
]

LFS_POINTER = b"version https://git-lfs"


class SourceError(ValueError):
    """The source folder (or the code checkout) is not what the layout needs; names what is missing."""


def subfolders(src: Path) -> list[Path]:
    return sorted(d for d in src.iterdir() if d.is_dir() and not d.name.startswith((".", "__")))


def read_each(folders: list[Path], make: Callable[[Path], Task], prepared: Callable[[Path], bool] = lambda f: True,
              not_prepared: str = "") -> tuple[list[Task], list[Refused]]:
    """``make(folder)`` for each folder: (the tasks, the refusals, each naming its competition and why)."""
    tasks, refused = [], []
    for folder in folders:
        try:
            if not prepared(folder):
                raise Refused(folder.name, not_prepared)
            tasks.append(make(folder))
        except Refused as r:
            refused.append(r)
    return tasks, refused


def relative(path: Path, root: Path) -> str:
    """``path`` relative to the task's ``root`` when inside it (the task records it so), else absolute."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path.resolve())


def find_checkout(src: Path, code: Path | None, probe: str, what: str) -> Path:
    """The checkout holding ``probe`` (e.g. ``mledojo/metrics/base.py``): ``code`` or one of its parents
    when given, else ``src`` or one of its parents (a checkout that holds its prepared data)."""
    if code is not None:
        if not Path(code).is_dir():
            raise SourceError(f"--code {code} is not a folder; pass the {what} checkout (the folder holding {probe})")
        found = next((p for p in (Path(code), *Path(code).resolve().parents) if (p / probe).exists()), None)
        if found is None:
            raise SourceError(f"--code {code} is not a {what} checkout: neither it nor a folder above it holds "
                              f"{probe}; pass the folder that holds {probe.split('/')[0]}/")
        return found.resolve()
    found = next((p for p in (src.resolve(), *src.resolve().parents) if (p / probe).exists()), None)
    if found is None:
        raise SourceError(f"{what} grades each competition with code kept in its repository, and no checkout was "
                          f"found at or above {src} (looked for {probe}); pass it: --code PATH")
    return found


def board_scores(name: str, path: Path) -> np.ndarray:
    """The numeric ``score`` column of a leaderboard CSV (rows without a score dropped)."""
    if not path.is_file():
        raise Refused(name, f"its leaderboard {path} does not exist")
    with open(path, "rb") as f:
        if f.read(len(LFS_POINTER)) == LFS_POINTER:
            raise Refused(name, f"{path} is a git-LFS pointer, not the leaderboard; fetch it with `git lfs pull` in "
                                "the checkout, then import again")
    try:
        board = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Refused(name, f"its leaderboard {path} is not a readable CSV ({exc})") from None
    if "score" not in board.columns:
        raise Refused(name, f"its leaderboard {path} has no 'score' column (columns: {list(board.columns)})")
    scores = pd.to_numeric(board["score"], errors="coerce").dropna().to_numpy(dtype=float)
    if scores.size == 0:
        raise Refused(name, f"its leaderboard {path} holds no numeric score")
    return scores


def make_task(record: dict, scoring: Scoring) -> Task:
    """The task of an importer's record; a record the task rejects is a refusal, not a crash."""
    try:
        return Task.from_record({**record, "scoring": asdict(scoring)}, where=f"competition {record['name']!r}")
    except ValueError as exc:
        raise Refused(record["name"], str(exc)) from None
