"""The pool of tasks a run trains and evaluates on: the small pool, an imported one, or a folder read in place.

:func:`get_pool` (``root`` defaults to ``$WMRL_DATA/pool`` or ``<repo>/data/pool``):

- a folder that does not exist or is empty, or the small pool's own folder: prepared by
  :mod:`wmrl.tasks.recipe` when missing or stale, then loaded;
- a pool written by :func:`import_pool` (``python -m wmrl.tasks import``): loaded; its manifest
  points at the competitions where they lie;
- any other folder is someone else's: read in place and never written (a pool ``manifest.json``,
  task folders with ``task.json``, or an MLE-Dojo / MLE-bench / DSBench layout), or, when it is
  none of these, refused with a :class:`~wmrl.tasks.ownership.PoolFolderError` naming what is
  missing.

An imported pool's manifest splits its tasks by the paper's rule (:func:`wmrl.tasks.split_by_size`,
15 smallest per category train, the next 5 held out, unless told otherwise) and lists the
competitions it refused, with the reason. Reading competitions grades each one's sample submission
once with the competition's own code (:func:`wmrl.tasks.competition_code.check_sample`, the same
child process that grades every execution): a grader that cannot load (a module this Python lacks,
a file it cannot read) is refused there, by name, with what to install, instead of failing the
first execution of a training run; the manifest records the sample's outcome. This module is the top of ``wmrl.tasks``: it uses
the recipe and the importers, and neither of them uses it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from wmrl.provenance import write_json_atomic
from wmrl.tasks.competition_code import GradingError, check_sample
from wmrl.tasks.infer import Refused
from wmrl.tasks.layouts import SourceError, detect_layout, read_layout
from wmrl.tasks.ownership import MARKER, PoolFolderError, is_empty, read_marker, refuse_unexpected, write_marker
from wmrl.tasks.recipe import ensure_pool, is_small_pool
from wmrl.tasks.split import split_by_size
from wmrl.tasks.task import Task, default_root, load_task

__all__ = ["IMPORT_RECIPE", "PAPER_SPLIT", "TaskPool", "get_pool", "import_pool", "is_small_pool_root",
           "read_competitions"]

IMPORT_RECIPE = "import"
IMPORT_VERSION = 1
PAPER_SPLIT = (15, 5)  # per category: the 15 smallest train, the next 5 are held out


@dataclass(frozen=True)
class TaskPool:
    """The tasks of a pool, and the paper's train / held-out split of them (from the manifest)."""

    root: Path
    tasks: tuple[Task, ...]
    manifest: dict

    @classmethod
    def from_root(cls, root: Path) -> TaskPool:
        """Load ``root/manifest.json``: an import's records carry their task, the small pool's name a folder."""
        path = Path(root) / "manifest.json"
        try:
            manifest = json.loads(path.read_text())
            records = manifest["tasks"]
            imported = manifest.get("recipe") == IMPORT_RECIPE  # its records carry their task
            tasks = tuple(Task.from_record(rec["task"], where=f"{path}: task {rec['name']!r}") if imported
                          else load_task(Path(root) / rec["name"]) for rec in records)
        except (ValueError, KeyError, TypeError) as exc:
            raise PoolFolderError(f"{path} is not a readable pool manifest ({type(exc).__name__}: {exc}); rebuild "
                                  "or re-import the pool") from None
        for task in tasks:
            task.check_files()
        return cls(Path(root), tasks, manifest)

    def _split(self, which: str) -> list[Task]:
        names = {rec["name"] for rec in self.manifest["tasks"] if rec["split"] == which}
        return [t for t in self.tasks if t.name in names]

    @property
    def train(self) -> list[Task]:
        return self._split("train")

    @property
    def heldout(self) -> list[Task]:
        return self._split("heldout")

    @property
    def tuning(self) -> list[Task]:
        """Tasks no run trains or evaluates on, where the world model's constants are fitted (the small pool's)."""
        return self._split("tuning")

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.tasks]

    def __getitem__(self, name: str) -> Task:
        for t in self.tasks:
            if t.name == name:
                return t
        raise KeyError(f"no task {name!r} in the pool; tasks: {self.names}")

    def __iter__(self):
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)


def _count(what: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"{what} must be a whole number >= 0 (tasks per category), got {n!r}")
    return n


def _check_graders(tasks: list[Task]) -> tuple[list[Task], list[Refused], dict[str, dict]]:
    """Grade each competition's sample once with its own code: (the tasks that load, refusals, sample outcomes).

    The built-in metrics of task folders in wmrl's layout need no check. The child processes run a
    few at a time (each is one Python process; their own limits bound each).
    """
    own = [t for t in tasks if t.scoring.grader != "builtin"]

    def check(task: Task) -> dict | Refused:
        try:
            return check_sample(task)
        except GradingError as exc:
            reason = str(exc).removeprefix(f"{task.name}: ")
            return Refused(task.name, f"its grader cannot grade its sample submission, so no execution of a run "
                                      f"could be graded: {reason}")

    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as workers:
        outcomes = dict(zip((t.name for t in own), workers.map(check, own)))
    refused = [o for o in outcomes.values() if isinstance(o, Refused)]
    samples = {n: o for n, o in outcomes.items() if not isinstance(o, Refused)}
    return [t for t in tasks if not isinstance(outcomes.get(t.name), Refused)], refused, samples


def read_competitions(src: str | os.PathLike, layout: str | None = None, code: str | os.PathLike | None = None,
                      n_train: int = PAPER_SPLIT[0], n_heldout: int = PAPER_SPLIT[1],
                      categories: Mapping[str, str] | None = None) -> TaskPool:
    """The competitions of ``src`` as a pool, read in place, split by size; writes nothing.

    ``layout`` is detected when None; ``code`` is the benchmark's checkout (found above ``src``
    when None); ``categories`` overrides the inferred category of named competitions.
    """
    src = Path(src)
    n_train, n_heldout = _count("n_train", n_train), _count("n_heldout", n_heldout)
    layout = layout or detect_layout(src)
    if layout is None:
        raise SourceError(f"{src} is in none of the layouts wmrl reads (MLE-Dojo <name>/data/public/, MLE-bench "
                          "<id>/prepared/public/, DSBench data/data_resplit/, or task folders with task.json)")
    tasks, refused = read_layout(layout, src, code, categories)
    tasks, unloadable, samples = _check_graders(tasks)
    refused = [*refused, *unloadable]
    unknown = sorted(set(categories or {}) - {t.name for t in tasks} - {r.name for r in refused})
    if unknown:
        raise SourceError(f"--category names competition(s) {unknown} that {src} does not hold; it holds "
                          f"{sorted([t.name for t in tasks] + [r.name for r in refused])}")
    if not tasks:
        raise SourceError(f"no competition in {src} could be read as {layout}: "
                          + "; ".join(str(r) for r in refused) if refused else f"{src} holds no competition")
    records = [{"name": t.name, "category": t.category, "size_bytes": t.size_bytes} for t in tasks]
    split = split_by_size(records, n_train, n_heldout)
    side = {**{n: "train" for n in split.train}, **{n: "heldout" for n in split.heldout}}
    manifest = {
        "recipe": IMPORT_RECIPE, "version": IMPORT_VERSION, "layout": layout, "source": str(src.resolve()),
        "code": str(Path(code).resolve()) if code is not None else None, "n_train": n_train, "n_heldout": n_heldout,
        "tasks": [{"name": t.name, "category": t.category, "size_bytes": t.size_bytes, "n_rows": t.n_rows,
                   "metric": t.metric, "higher_is_better": t.higher_is_better, "source": t.source,
                   "score_kind": t.scoring.score_kind, "split": side.get(t.name, "unused"),
                   "sample_submission": samples.get(t.name), "task": t.to_record()}
                  for t in tasks],
        "refused": [{"name": r.name, "reason": r.reason} for r in refused],
    }
    return TaskPool(src, tuple(tasks), manifest)


def import_pool(layout: str, src: str | os.PathLike, out: str | os.PathLike, code: str | os.PathLike | None = None,
                n_train: int = PAPER_SPLIT[0], n_heldout: int = PAPER_SPLIT[1],
                categories: Mapping[str, str] | None = None) -> TaskPool:
    """Write a pool at ``out`` whose manifest points at the competitions of ``src`` (read-only, not copied).

    ``out`` must be new, empty, or a pool an earlier import wrote (its manifest is replaced);
    it may not lie inside ``src``. See :func:`read_competitions` for the other arguments.
    """
    src, out = Path(src), Path(out)
    if out.exists() and not out.is_dir():
        raise PoolFolderError(f"--out {out} is a file; pass a new or empty folder for the pool")
    if src.is_dir() and out.resolve().is_relative_to(src.resolve()):
        raise PoolFolderError(f"--out {out} lies inside the source {src}, which wmrl only reads; pass a folder outside it")
    if out.is_dir() and not is_empty(out):
        marker = read_marker(out)
        if marker is None or marker["recipe"] != IMPORT_RECIPE:
            raise PoolFolderError(f"--out {out} is not empty and is not a pool wmrl imported (no {MARKER} marker of "
                                  "an import); pass a new or empty folder")
        refuse_unexpected(out, {"manifest.json"}, "overwrite")
    pool = read_competitions(src, layout, code, n_train, n_heldout, categories)
    out.mkdir(parents=True, exist_ok=True)
    write_json_atomic(out / "manifest.json", pool.manifest)
    (out / "manifest.json").chmod(0o644)
    write_marker(out, IMPORT_RECIPE, IMPORT_VERSION)
    return TaskPool(out, pool.tasks, pool.manifest)


def is_small_pool_root(root: str | os.PathLike | None = None) -> bool:
    """True when :func:`get_pool` would give the small pool for ``root`` (None: the default folder), without
    preparing or reading anything: a missing or empty folder (it would be prepared there) or one the
    small pool's recipe wrote."""
    root = Path(root) if root is not None else default_root()
    if not root.is_dir():
        return not root.exists()
    marker = read_marker(root)
    if marker is not None and marker["recipe"] == IMPORT_RECIPE:
        return False
    return is_empty(root) or is_small_pool(root)


def get_pool(root: str | os.PathLike | None = None) -> TaskPool:
    """The pool at ``root`` (see the module docstring); a folder wmrl did not write is only read."""
    root = Path(root) if root is not None else default_root()
    if root.exists() and not root.is_dir():
        raise PoolFolderError(f"pool root {root} is a file; pass a pool folder, a folder of competitions, or a new "
                              "folder to prepare the small pool in")
    marker = read_marker(root)
    if marker is not None and marker["recipe"] == IMPORT_RECIPE:
        return TaskPool.from_root(root)
    if not root.exists() or is_empty(root) or is_small_pool(root):
        ensure_pool(root)
        return TaskPool.from_root(root)
    if marker is not None:
        raise PoolFolderError(f"{root} is marked as a wmrl pool of recipe {marker['recipe']!r}, which this version "
                              "of wmrl does not know; update wmrl or rebuild the pool in a new folder")
    if (root / "manifest.json").is_file():
        return TaskPool.from_root(root)  # someone's pool manifest (e.g. a copied pool): read as it is
    try:
        return read_competitions(root)
    except SourceError as exc:
        raise PoolFolderError(
            f"{root} is neither a wmrl pool ({MARKER} or manifest.json) nor a folder of competitions wmrl can read "
            f"in place ({exc}). Nothing in it was changed. To prepare the small pool, pass a new or empty folder; to "
            "import competitions with their grading code, run python -m wmrl.tasks import --layout "
            "mledojo|mlebench|dsbench SRC --out POOL [--code CHECKOUT]") from None
