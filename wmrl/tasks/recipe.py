"""The small pool's recipe: build it on disk in MLE-Dojo's layout (CLI: ``python -m wmrl.tasks.prepare``).

For each data set of :mod:`wmrl.tasks.sources`: cap the rows, shuffle and split them with a fixed
seed (a quarter held out as the test set), write the public files (description, train, test,
sample submission, images) and the private ones (test answers and the two leaderboards of
:mod:`wmrl.tasks.leaderboard`), then a manifest with each task's size, checksum and its side
of the paper's size split (the data sets of :data:`~wmrl.tasks.sources.TUNING` form a third
split, ``tuning``, that no run trains or evaluates on). This module sits below :mod:`wmrl.grading`: it builds data and
grades nothing (the boards score their participants with the metric registry directly).

The build is deterministic and needs no network. It runs in a temporary folder that replaces the
pool only when complete, under a file lock, so two first uses at once build it once and a crash
never leaves half a pool behind. ``RECIPE_VERSION`` is stored in the manifest; bump it whenever
the recipe changes and every pool rebuilds on its next use.

Whose folder it is (:mod:`wmrl.tasks.ownership`): the build writes into a folder that does not
exist yet or is empty, and replaces only a pool of this recipe, i.e. a folder with the marker
``.wmrl-pool`` saying ``"recipe": "small"``, or, for pools built before the marker existed, a
``manifest.json`` with exactly the fields this recipe writes and its seed. Before replacing one
it checks that the folder holds only the manifest, the marker and the task folders the manifest
lists, each with the checksum the manifest recorded; otherwise it stops and names what it found.
Any other folder is refused with a message and left as it was.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import multiprocessing
import os
import shutil
import tempfile
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image
from sklearn.exceptions import ConvergenceWarning
from tqdm import tqdm

from wmrl.provenance import write_json_atomic
from wmrl.tasks.describe import describe
from wmrl.tasks.leaderboard import build_boards
from wmrl.tasks.metrics import get_metric
from wmrl.tasks.ownership import MARKER, PoolFolderError, is_empty, read_marker, refuse_unexpected, write_marker
from wmrl.tasks.sources import LOADERS, SEED, TUNING, Source, load_source
from wmrl.tasks.split import split_by_size
from wmrl.tasks.task import default_root

__all__ = ["POOL_SPLIT", "RECIPE", "RECIPE_VERSION", "ensure_pool", "is_small_pool", "pool_is_current", "prepare_pool", "write_task"]

RECIPE = "small"
RECIPE_VERSION = 4
MAX_ROWS = 4000
TEST_FRACTION = 0.25
# (n_train, n_heldout) per category: smallest n_train train, the next n_heldout held out.
POOL_SPLIT = {"tabular": (8, 3), "text": (3, 2), "image": (3, 2)}
# What this recipe writes into manifest.json and each of its records (how pre-marker pools are recognised).
MANIFEST_FIELDS = {"build_seconds", "seed", "tasks", "version"}
RECORD_FIELDS = {"category", "checksum", "higher_is_better", "metric", "n_rows", "name", "size_bytes", "source", "split"}
BUILDING = ".wmrl-building"  # marks a temporary build folder as this recipe's


def _checksum(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        h.update(str(p.relative_to(folder)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _sample_value(src: Source, y_train: pd.Series):
    """The constant prediction of ``sample_submission.csv``, as on Kaggle: majority class, prior or mean."""
    kind = get_metric(src.metric).kind
    if kind == "label":
        return y_train.value_counts().sort_index().idxmax()
    if kind == "probability":
        return round(float((y_train == max(y_train.unique())).mean()), 4)
    return round(float(y_train.mean()), 4)


def write_task(src: Source, folder: Path) -> dict:
    """Write one task folder and return its manifest record (without the split)."""
    rng = np.random.default_rng(SEED)
    n = min(len(src.frame), MAX_ROWS)
    order = rng.permutation(len(src.frame))[:n]
    frame = src.frame.iloc[order].reset_index(drop=True)
    frame = frame[[c for c in frame.columns if c != src.target] + [src.target]]  # the target last, as on Kaggle
    frame.insert(0, "id", np.arange(1, n + 1))
    pub, priv = folder / "public", folder / "private"
    pub.mkdir(parents=True)
    priv.mkdir(mode=0o700)  # a second wall behind the sandbox's mount namespace: other uids cannot list it
    images = None
    if src.images is not None:
        images = src.images[order]
        (pub / "images").mkdir()
        for i, img in zip(frame["id"], images):
            Image.fromarray(img).save(pub / "images" / f"{i}.png")
        frame.insert(1, "image", [f"images/{i}.png" for i in frame["id"]])
    is_test = np.zeros(n, dtype=bool)
    is_test[rng.choice(n, size=round(TEST_FRACTION * n), replace=False)] = True
    train, test = frame[~is_test], frame[is_test]
    y = src.target
    train.to_csv(pub / "train.csv", index=False)
    test.drop(columns=[y]).to_csv(pub / "test.csv", index=False)
    sample = _sample_value(src, train[y])
    pd.DataFrame({"id": test["id"], y: sample}).to_csv(pub / "sample_submission.csv", index=False)
    test[["id", y]].to_csv(priv / "test_answer.csv", index=False)

    classification = src.task_type == "classification"
    classes = sorted(train[y].dropna().unique().tolist()) if classification else None
    features = [c for c in frame.columns if c not in ("id", y, "image")]
    public_board, private_board = build_boards(
        train[features], test[features], train[y].to_numpy(), test[y].to_numpy(), task_type=src.task_type,
        metric=src.metric, sample_prediction=np.full(len(test), sample, dtype=object if classification else float),
        text_column=src.text_column, positive_label=str(classes[-1]) if classes else None, seed_key=src.name,
        train_images=None if images is None else images[~is_test], test_images=None if images is None else images[is_test])
    public_board.to_csv(priv / "public_leaderboard.csv", index=False)
    private_board.to_csv(priv / "private_leaderboard.csv", index=False)
    (pub / "description.txt").write_text(describe(src, train, test, sample))

    size = sum(p.stat().st_size for p in pub.rglob("*") if p.is_file())
    meta = {
        "name": src.name, "category": src.category, "metric": src.metric,
        "higher_is_better": get_metric(src.metric).higher_is_better, "task_type": src.task_type,
        "id_column": "id", "target_column": y, "size_bytes": size, "n_rows": len(train), "source": src.source,
        "text_column": src.text_column, "image_column": "image" if images is not None else None, "classes": classes,
    }
    (folder / "task.json").write_text(json.dumps(meta, indent=2) + "\n")
    return {k: meta[k] for k in ("name", "category", "size_bytes", "n_rows", "metric", "higher_is_better", "source")} | {
        "checksum": _checksum(folder)}


def _build_task(loader: str, root: Path) -> dict:
    """One task of the pool, built into ``root / <its name>``; its manifest record."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # weak participants are part of the long tail
        src = load_source(loader)
        return write_task(src, root / src.name) | {"tuning": loader in TUNING}


def prepare_pool(root: Path, progress: bool = False, workers: int | None = None) -> dict:
    """Build every task into ``root`` (which must not exist) and write ``manifest.json``.

    The tasks build side by side in ``workers`` fresh processes (default: one per core); each task's build is
    seeded on its own, so the files are the same bytes whatever the count or order."""
    t0 = time.perf_counter()
    workers = max(1, min(workers or os.cpu_count() or 1, len(LOADERS)))
    ctx = multiprocessing.get_context("spawn")  # no threads or OpenMP state forked from the caller
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(_build_task, loader, root) for loader in LOADERS]
        for _ in tqdm(as_completed(futures), total=len(futures), desc="preparing task pool", disable=not progress):
            pass
        built = [f.result() for f in futures]  # LOADERS' order, whatever order they finished in
    tuning = {r["name"] for r in built if r["tuning"]}
    records = [{k: v for k, v in r.items() if k != "tuning"} for r in built]
    split = split_by_size([r for r in records if r["name"] not in tuning], {c: k[0] for c, k in POOL_SPLIT.items()},
                          {c: k[1] for c, k in POOL_SPLIT.items()})
    for rec in records:
        rec["split"] = ("tuning" if rec["name"] in tuning else "train" if rec["name"] in split.train
                        else "heldout" if rec["name"] in split.heldout else "unused")
    manifest = {"version": RECIPE_VERSION, "seed": SEED, "build_seconds": round(time.perf_counter() - t0, 1),
                "tasks": records}
    write_json_atomic(root / "manifest.json", manifest)
    (root / "manifest.json").chmod(0o644)  # readable like every other pool file (the temp file was 0600)
    return manifest


def _manifest(root: Path) -> dict | None:
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    return manifest if isinstance(manifest, dict) else None


def is_small_pool(root: Path) -> bool:
    """True for a folder this recipe wrote: its marker, or (built before markers) its manifest's fields and seed."""
    marker = read_marker(root)
    if marker is not None:
        return marker["recipe"] == RECIPE
    m = _manifest(root)
    return (m is not None and set(m) == MANIFEST_FIELDS and m["seed"] == SEED and isinstance(m["tasks"], list)
            and all(isinstance(r, dict) and set(r) == RECORD_FIELDS for r in m["tasks"]))


def pool_is_current(root: str | os.PathLike | None = None) -> bool:
    """True when ``root`` (None: the default folder) holds this recipe's small pool at its current version."""
    root = Path(root) if root is not None else default_root()
    return is_small_pool(root) and (_manifest(root) or {}).get("version") == RECIPE_VERSION


def _check_replaceable(root: Path) -> None:
    """Refuse to replace ``root`` unless it holds exactly what this recipe wrote there."""
    manifest = _manifest(root)
    if manifest is None or not isinstance(manifest.get("tasks"), list):
        raise PoolFolderError(f"{root} is marked as a wmrl pool but its manifest.json is missing or unreadable, so "
                              "wmrl cannot tell what in it is its own; move anything you keep out of it and delete "
                              "the folder, then rerun")
    names = [rec.get("name") for rec in manifest["tasks"] if isinstance(rec, dict)]
    refuse_unexpected(root, {"manifest.json", *map(str, names)}, "replace")
    for rec in manifest["tasks"]:
        folder = root / str(rec.get("name"))
        if folder.is_dir() and _checksum(folder) != rec.get("checksum"):
            raise PoolFolderError(f"task folder {folder} changed since wmrl wrote it (its checksum differs from "
                                  "manifest.json's), so wmrl will not replace the pool; copy what you changed "
                                  "elsewhere and delete the folder, then rerun")


def _refuse_while_importing_main() -> None:
    """Refuse a build started by a build worker that is still importing its parent's script.

    The build's workers are spawned interpreters, and each first imports the caller's ``__main__``: a
    script that trains at its top level, with no ``if __name__ == "__main__":`` guard, would start a
    second build in every worker, which would wait forever on the first build's lock."""
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise RuntimeError("the small pool is built in worker processes, and this worker is re-running its parent's "
                           "script: put the script's top-level code under `if __name__ == \"__main__\":` (Python's "
                           "multiprocessing rule for scripts that start processes)")


def ensure_pool(root: str | os.PathLike | None = None, force: bool = False, progress: bool = False) -> Path:
    """Prepare the pool at ``root`` unless a current one is there; safe under concurrent first uses.

    Builds into a folder that does not exist or is empty; replaces only this recipe's own pool
    (see the module docstring); raises :class:`PoolFolderError` for any other folder, untouched.
    """
    root = Path(root) if root is not None else default_root()
    if root.exists() and not root.is_dir():
        raise PoolFolderError(f"pool root {root} is a file; pass a folder (a new or empty one to build the pool in)")
    if not force and pool_is_current(root):
        return root
    if root.exists() and not is_empty(root) and not is_small_pool(root):
        marker = read_marker(root)
        found = (f"a wmrl pool of another recipe ({marker['recipe']!r})" if marker else
                 f"not a wmrl pool (no {MARKER} marker, no manifest.json of the small pool's recipe)")
        raise PoolFolderError(
            f"{root} is {found}, so wmrl will not build the small pool there: it builds only into a new or empty "
            "folder or one of its own small pools. Pass another folder (--root), or, to use competitions kept in it, import "
            f"them: python -m wmrl.tasks import --layout mledojo|mlebench|dsbench {root} --out POOL")
    _refuse_while_importing_main()
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second process waits here, then finds the pool built
        if not force and pool_is_current(root):
            return root
        if root.exists() and not is_empty(root):
            _check_replaceable(root)
        for stale in root.parent.glob(f".{root.name}.building-*"):  # left by a killed build; we hold the lock
            if (stale / BUILDING).is_file():
                shutil.rmtree(stale, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}.building-"))
        try:
            (tmp / BUILDING).touch()
            prepare_pool(tmp / "pool", progress=progress)
            write_marker(tmp / "pool", RECIPE, RECIPE_VERSION)
            if is_empty(root):
                root.rmdir()  # fails unless empty: nothing can be lost
            elif root.exists():
                root.rename(tmp / "old")  # this recipe's own pool, checked above
            (tmp / "pool").rename(root)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return root
