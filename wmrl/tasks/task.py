"""A task in MLE-Dojo's on-disk layout, and the pool of them.

::

    <task>/public/{description.txt, train.csv, test.csv, sample_submission.csv, images/...}
    <task>/private/{test_answer.csv, public_leaderboard.csv, private_leaderboard.csv}
    <task>/task.json          (our pool only: metric, columns, category, ...)

Solutions see ``public/`` only; grading reads ``private/``. :func:`load_task` also loads a
competition folder prepared by MLE-Dojo itself (no ``task.json``): it then reads the id and
target columns from ``sample_submission.csv`` and infers the rest, with the metric defaulting to
accuracy (classification) or RMSE (regression) unless one is given, and a float target with
non-integral values meaning regression unless the given metric says otherwise.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from wmrl.provenance import REPO
from wmrl.tasks.metrics import get_metric

__all__ = ["REQUIRED_FILES", "Task", "TaskPool", "default_root", "get_pool", "load_task"]

REQUIRED_FILES = (
    "public/description.txt", "public/train.csv", "public/test.csv", "public/sample_submission.csv",
    "private/test_answer.csv", "private/public_leaderboard.csv", "private/private_leaderboard.csv",
)
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")
N_EXAMPLE_FILES = 3


@dataclass(frozen=True)
class Task:
    name: str
    category: str
    root: Path
    metric: str
    higher_is_better: bool
    task_type: str
    id_column: str
    target_column: str
    size_bytes: int
    n_rows: int
    source: str
    text_column: str | None = None
    image_column: str | None = None
    classes: tuple | None = field(default=None, repr=False)

    @property
    def public_dir(self) -> Path:
        return self.root / "public"

    @property
    def private_dir(self) -> Path:
        return self.root / "private"

    @property
    def description(self) -> str:
        return (self.public_dir / "description.txt").read_text()

    @cached_property
    def inventory(self) -> dict[str, list[str]]:
        """Public file -> its column names (CSV header); an image folder -> a few example file names."""
        inv: dict[str, list[str]] = {}
        for path in sorted(self.public_dir.iterdir()):
            if path.suffix == ".csv":
                inv[path.name] = list(pd.read_csv(path, nrows=0).columns)
            elif path.is_dir():
                inv[path.name + "/"] = [f"{path.name}/{p.name}" for p in sorted(path.iterdir())[:N_EXAMPLE_FILES]]
            else:
                inv[path.name] = []
        return inv

    @property
    def feature_columns(self) -> list[str]:
        return [c for c in self.inventory["train.csv"] if c not in (self.id_column, self.target_column)]


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _infer_meta(root: Path, metric: str | None) -> dict:
    """What a foreign (MLE-Dojo-prepared) folder does not say, read off its files."""
    id_col, target = list(pd.read_csv(root / "public/sample_submission.csv", nrows=0).columns)[:2]
    train = pd.read_csv(root / "public/train.csv")
    y = train[target] if target in train else pd.read_csv(root / "private/test_answer.csv")[target]
    if metric is not None:  # a given metric settles the task type (a regression target may be integral)
        regression = get_metric(metric).kind == "value"
    else:
        regression = pd.api.types.is_float_dtype(y) and bool((y.dropna() != y.dropna().round()).any())
    task_type = "regression" if regression else "classification"
    metric = metric or ("rmse" if regression else "accuracy")
    obj = [c for c in train.columns if c not in (id_col, target) and train[c].dtype == object]
    image_col = next((c for c in obj if train[c].astype(str).str.lower().str.endswith(IMAGE_SUFFIXES).all()), None)
    text_col = next((c for c in obj if c != image_col and train[c].astype(str).str.len().mean() >= 40), None)
    return {
        "name": root.name, "metric": metric, "higher_is_better": get_metric(metric).higher_is_better,
        "task_type": task_type, "id_column": id_col, "target_column": target,
        "category": "image" if image_col else "text" if text_col else "tabular",
        "size_bytes": _du(root / "public"), "n_rows": len(train), "source": "mle-dojo",
        "text_column": text_col, "image_column": image_col,
        "classes": None if regression else sorted(y.dropna().unique().tolist()),
    }


def load_task(path: str | os.PathLike, metric: str | None = None) -> Task:
    """Load one task folder; raise FileNotFoundError naming the first missing file."""
    root = Path(path)
    if not (root / "public").is_dir() and (root / "data" / "public").is_dir():
        root = root / "data"  # MLE-Dojo keeps a competition's files under <competition>/data/
    for rel in REQUIRED_FILES:
        if not (root / rel).is_file():
            raise FileNotFoundError(f"task folder {str(root)!r} is missing {rel}")
    meta_file = root / "task.json"
    meta = json.loads(meta_file.read_text()) if meta_file.is_file() else _infer_meta(root, metric)
    if metric is not None and metric != meta["metric"]:
        meta.update(metric=metric, higher_is_better=get_metric(metric).higher_is_better)
    meta["classes"] = tuple(meta["classes"]) if meta.get("classes") is not None else None
    return Task(root=root, **meta)


@dataclass(frozen=True)
class TaskPool:
    """The prepared pool: every task, and the paper's train / held-out split of them."""

    root: Path
    tasks: tuple[Task, ...]
    manifest: dict

    @classmethod
    def from_root(cls, root: Path) -> TaskPool:
        manifest = json.loads((root / "manifest.json").read_text())
        return cls(root, tuple(load_task(root / rec["name"]) for rec in manifest["tasks"]), manifest)

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


def default_root() -> Path:
    """``$WMRL_DATA/pool`` when WMRL_DATA is set, else ``<repo>/data/pool`` (git-ignored)."""
    if os.environ.get("WMRL_DATA"):
        return Path(os.environ["WMRL_DATA"]) / "pool"
    return REPO / "data" / "pool"


def get_pool(root: str | os.PathLike | None = None) -> TaskPool:
    """The small pool, prepared on first use (and rebuilt when its recipe version changed)."""
    from wmrl.tasks.prepare import ensure_pool  # prepare imports the leaderboards; import lazily

    root = Path(root) if root is not None else default_root()
    ensure_pool(root)
    return TaskPool.from_root(root)
