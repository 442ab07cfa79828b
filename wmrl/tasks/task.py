"""A task: a competition's files where they lie, and what wmrl needs to know to run and grade it.

Our pool (like MLE-Dojo) lays a task out as::

    <task>/public/{description.txt, train.csv, test.csv, sample_submission.csv, images/...}
    <task>/private/{test_answer.csv, public_leaderboard.csv, private_leaderboard.csv}
    <task>/task.json          (our pool only: metric, columns, category, ...)

Solutions see ``public/`` only; grading reads the answers and the leaderboards. A real
competition imported from MLE-Dojo, MLE-bench or DSBench (:mod:`wmrl.tasks.layouts`) keeps its
own layout where it lies: a :class:`Task` records where its public folder, description, sample
submission, answers and leaderboards are (paths relative to ``root``, or absolute), and a
:class:`Scoring` says how :mod:`wmrl.grading` scores it. Both are plain data: this package reads
files and never grades, so that grading can import it and not the other way round.

:func:`load_task` loads a folder with a ``task.json``; given ``metric=`` (a built-in metric the
caller vouches for) it also loads a competition folder without one, e.g. one prepared by
MLE-Dojo, reading the other facts off its files (:mod:`wmrl.tasks.infer`). Without ``task.json``
and without ``metric`` it refuses: a guessed metric would grade wrongly.
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from wmrl.provenance import REPO
from wmrl.tasks.infer import folder_record
from wmrl.tasks.metrics import KINDS, METRICS, external_metric, get_metric

__all__ = [
    "CATEGORIES",
    "GRADERS",
    "REQUIRED_FILES",
    "SCORE_KINDS",
    "TASK_TYPES",
    "Scoring",
    "Task",
    "TaskFolderError",
    "data_root",
    "default_root",
    "load_task",
]

REQUIRED_FILES = (
    "public/description.txt", "public/train.csv", "public/test.csv", "public/sample_submission.csv",
    "private/test_answer.csv", "private/public_leaderboard.csv", "private/private_leaderboard.csv",
)
CATEGORIES = ("tabular", "text", "image", "audio")
TASK_TYPES = ("classification", "regression")
# builtin: Task.metric from wmrl.tasks.metrics; the others run the competition's own code.
GRADERS = ("builtin", "mledojo", "mlebench", "dsbench")
# percentile: MLE-Dojo's leaderboard position score; rpg: DSBench's relative performance gap.
SCORE_KINDS = ("percentile", "rpg")
N_EXAMPLE_FILES = 3


class TaskFolderError(ValueError):
    """A task folder or record that cannot be loaded as it is; the message says what to change."""


def _choice(what: str, value, choices) -> None:
    if value not in choices:
        raise TaskFolderError(f"{what} must be one of {', '.join(map(repr, choices))}, got {value!r}")


@dataclass(frozen=True)
class Scoring:
    """How :func:`wmrl.grading.grade` scores a task's submissions (paths relative to the task's root)."""

    grader: str = "builtin"
    score_kind: str = "percentile"
    answers: str = "private/test_answer.csv"
    boards: tuple[str, ...] = ("private/public_leaderboard.csv", "private/private_leaderboard.csv")
    code: str | None = None  # the competition's metric file (module or script)
    code_root: str | None = None  # the folder its imports resolve from (put on sys.path)
    entry: str | None = None  # the metric class (MLE-Dojo) or grade function (MLE-bench) in ``code``
    gt: float | None = None  # rpg: DSBench's GT result (the answers scored against themselves)
    baseline: float | None = None  # rpg: DSBench's baseline result
    round_digits: int | None = None  # MLE-bench rounds every score to 5 decimals

    def __post_init__(self):
        _choice("scoring.grader", self.grader, GRADERS)
        _choice("scoring.score_kind", self.score_kind, SCORE_KINDS)
        if self.grader != "builtin" and not self.code:
            raise TaskFolderError(f"scoring.grader {self.grader!r} runs the competition's own code; scoring.code "
                                  "must name its file")
        if self.score_kind == "percentile" and not self.boards:
            raise TaskFolderError("a percentile needs at least one leaderboard; scoring.boards is empty")
        if self.score_kind == "rpg" and (self.gt is None or self.baseline is None or self.gt == self.baseline):
            raise TaskFolderError(f"DSBench's relative performance gap needs distinct gt and baseline results, "
                                  f"got gt={self.gt!r}, baseline={self.baseline!r}")


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
    # Where the files are (relative to root, or absolute); the defaults are our pool's layout.
    public_folder: str = "public"
    description_file: str = "public/description.txt"
    sample_submission_file: str = "public/sample_submission.csv"
    train_file: str | None = "train.csv"  # inside public/; None when there is none
    test_file: str | None = "test.csv"  # inside public/; None for e.g. a folder of test images
    target_columns: tuple[str, ...] | None = None  # all of them, when there are several
    metric_kind: str | None = None  # the submission kind of an external metric (built-in ones know theirs)
    scoring: Scoring = field(default_factory=Scoring)

    def __post_init__(self):
        _choice(f"task {self.name!r}: category", self.category, CATEGORIES)
        _choice(f"task {self.name!r}: task_type", self.task_type, TASK_TYPES)
        if self.scoring.grader == "builtin":
            if self.metric not in METRICS:
                raise TaskFolderError(f"task {self.name!r}: unknown metric {self.metric!r}; use one of "
                                      f"{sorted(METRICS)}, or import the competition with its own metric code")
        else:
            _choice(f"task {self.name!r}: metric_kind", self.metric_kind, KINDS)
            external_metric(self.metric, self.higher_is_better, self.metric_kind)
        if get_metric(self.metric).higher_is_better != self.higher_is_better:
            raise TaskFolderError(f"task {self.name!r}: higher_is_better={self.higher_is_better} contradicts "
                                  f"metric {self.metric!r}")

    @property
    def public_dir(self) -> Path:
        return self.root / self.public_folder

    @property
    def private_dir(self) -> Path:
        """The folder holding the hidden answers."""
        return self.answers_path.parent

    @property
    def answers_path(self) -> Path:
        return self.root / self.scoring.answers

    @property
    def board_paths(self) -> list[Path]:
        return [self.root / b for b in self.scoring.boards]

    @property
    def sample_submission_path(self) -> Path:
        return self.root / self.sample_submission_file

    @property
    def targets(self) -> tuple[str, ...]:
        return self.target_columns or (self.target_column,)

    @property
    def description(self) -> str:
        return (self.root / self.description_file).read_text()

    @property
    def required_files(self) -> list[Path]:
        """Every file loading, running and grading the task reads."""
        public = [self.public_dir / f for f in (self.train_file, self.test_file) if f]
        code = [Path(self.scoring.code)] if self.scoring.code else []
        return [self.root / self.description_file, *public, self.sample_submission_path, self.answers_path,
                *self.board_paths, *code]

    @cached_property
    def inventory(self) -> dict[str, list[str]]:
        """Public file -> its column names (CSV header); a folder -> a few example file names."""
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
        columns = self.inventory.get(self.train_file, []) if self.train_file else []
        return [c for c in columns if c != self.id_column and c not in self.targets]

    def to_record(self) -> dict:
        """A JSON-able dict that :meth:`from_record` turns back into this task."""
        rec = dataclasses.asdict(self)
        rec["root"] = str(self.root)
        rec["classes"] = list(self.classes) if self.classes is not None else None
        rec["target_columns"] = list(self.target_columns) if self.target_columns else None
        rec["scoring"]["boards"] = list(self.scoring.boards)
        return rec

    @classmethod
    def from_record(cls, rec: dict, root: str | os.PathLike | None = None, where: str = "task record") -> Task:
        """A task from its record (``task.json`` or a pool manifest's entry); ``where`` names it in errors."""
        rec = dict(rec)
        names = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        if root is not None:
            rec["root"] = root
        unknown, missing = sorted(set(rec) - names), sorted(required - set(rec))
        if unknown or missing:
            raise TaskFolderError(f"{where}: unknown field(s) {unknown}, missing field(s) {missing}; "
                                  f"a task record holds {sorted(names)}")
        scoring = rec.get("scoring") or {}
        if not isinstance(scoring, dict) or set(scoring) - {f.name for f in dataclasses.fields(Scoring)}:
            raise TaskFolderError(f"{where}: scoring must be an object with fields "
                                  f"{[f.name for f in dataclasses.fields(Scoring)]}, got {scoring!r}")
        rec["scoring"] = Scoring(**{**scoring, "boards": tuple(scoring.get("boards", Scoring.boards))})
        rec["root"] = Path(rec["root"])
        rec["classes"] = tuple(rec["classes"]) if rec.get("classes") is not None else None
        rec["target_columns"] = tuple(rec["target_columns"]) if rec.get("target_columns") else None
        return cls(**rec)

    def check_files(self) -> None:
        """Raise FileNotFoundError naming the first file the task needs and does not find."""
        for path in self.required_files:
            if not path.is_file():
                rel = path.relative_to(self.root) if path.is_relative_to(self.root) else path
                raise FileNotFoundError(f"task folder {str(self.root)!r} is missing {rel}")


def _read_task_json(path: Path) -> dict:
    try:
        meta = json.loads(path.read_text())
    except ValueError as exc:
        raise TaskFolderError(f"{path} is not valid JSON ({exc}); fix it, or delete it and pass load_task(..., "
                              "metric=...) to read the folder's facts off its files") from None
    if not isinstance(meta, dict):
        raise TaskFolderError(f"{path} must hold a JSON object of task fields, got {type(meta).__name__}")
    return meta


def load_task(path: str | os.PathLike, metric: str | None = None) -> Task:
    """Load one task folder; errors name the value that is wrong or the file that is missing."""
    root = Path(path)
    if not root.exists():
        raise FileNotFoundError(f"task folder {str(root)!r} does not exist; expected a folder holding public/ and "
                                "private/ (or <competition>/data/ as MLE-Dojo prepares it)")
    if not root.is_dir():
        raise NotADirectoryError(f"task folder {str(root)!r} is a file; pass the folder holding public/ and private/")
    if not (root / "public").is_dir() and (root / "data" / "public").is_dir():
        root = root / "data"  # MLE-Dojo keeps a competition's files under <competition>/data/
    if metric is not None and metric not in METRICS:
        raise TaskFolderError(f"unknown metric {metric!r}; use one of {sorted(METRICS)}")
    meta_file = root / "task.json"
    if meta_file.is_file():
        task = Task.from_record(_read_task_json(meta_file), root=root, where=str(meta_file))
        task.check_files()
        if metric is not None and metric != task.metric:
            task = dataclasses.replace(task, metric=metric, higher_is_better=get_metric(metric).higher_is_better)
        return task
    for rel in REQUIRED_FILES:
        if not (root / rel).is_file():
            raise FileNotFoundError(f"task folder {str(root)!r} is missing {rel}")
    if metric is None:
        raise TaskFolderError(
            f"task folder {str(root)!r} has no task.json, so nothing says which metric grades it; pass the one that "
            f"does (load_task(path, metric=...), one of {sorted(METRICS)}), or import the competition with its own "
            "metric code: python -m wmrl.tasks import --layout mledojo|mlebench|dsbench SRC --out POOL")
    return Task.from_record(folder_record(root, metric), where=str(root))


def data_root() -> Path:
    """``$WMRL_DATA`` when set, else ``<repo>/data`` (git-ignored): the pool, the memo, model caches."""
    return Path(os.environ["WMRL_DATA"]) if os.environ.get("WMRL_DATA") else REPO / "data"


def default_root() -> Path:
    """The task pool's folder: ``<data root>/pool``."""
    return data_root() / "pool"
