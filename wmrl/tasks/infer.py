"""What a competition's files say about it: id and target columns, task type, classes, category, size.

A competition states its metric in code (or the caller names one) and keeps its files in its own
layout; everything else wmrl tells an agent about a task (which columns, classification or
regression, the category that the paper's split works within) is read off the files here, and
cheaply, because real competitions are gigabytes: CSV headers, the target columns, the first
rows of the training file, file suffixes, sizes from ``stat``. Nothing here decides how a
submission is scored, and nothing here writes.

Rules, in order (each documented where it is applied):

- the sample submission's first column is the id, the others are the targets (several for
  one-hot or multi-output competitions);
- a target is a regression target when it is numeric and either non-integral or has more than
  ``DISTINCT_FOR_REGRESSION`` distinct values; several class-probability columns make a
  classification task whose classes are the column names;
- the category is ``audio`` or ``image`` when the public files hold such media (in folders, in
  zips or named in a column), ``text`` when a string column averages ``TEXT_MIN_LENGTH``
  characters or more, else ``tabular``; the importer's caller may override it.
"""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pandas as pd

from wmrl.tasks.metrics import get_metric

__all__ = ["Refused", "competition_record", "count_rows", "folder_bytes", "folder_record", "public_files"]

SAMPLE_ROWS = 2000
MAX_CLASSES = 1000
DISTINCT_FOR_REGRESSION = 20
TEXT_MIN_LENGTH = 40
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp", ".gif", ".dcm")
AUDIO_SUFFIXES = (".wav", ".aif", ".aiff", ".mp3", ".flac", ".ogg")
N_PEEK = 50


class Refused(Exception):
    """A competition wmrl does not support as it is: names it and says why (and what would fix it)."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name}: {reason}")
        self.name, self.reason = name, reason


def folder_bytes(folder: Path) -> int:
    return sum(os.stat(os.path.join(d, f)).st_size for d, _, files in os.walk(folder) for f in files)


def count_rows(csv: Path) -> int:
    """Data rows of a CSV by counting line ends (a quoted field holding line breaks counts more)."""
    lines, last = 0, b"\n"
    with open(csv, "rb") as f:
        while chunk := f.read(1 << 22):
            lines += chunk.count(b"\n")
            last = chunk[-1:]
    return max(lines + (last != b"\n") - 1, 0)


def public_files(public: Path, sample: Path) -> tuple[str | None, str | None]:
    """(train file, test file) in ``public``: train.csv, else its one other CSV (MLE-Dojo's dog breeds
    ship labels.csv); test.csv, or None when the test set is a folder or zip of files."""
    csvs = sorted(p.name for p in public.glob("*.csv") if p.resolve() != sample.resolve())
    others = [c for c in csvs if c != "test.csv"]
    train = "train.csv" if "train.csv" in csvs else others[0] if len(others) == 1 else None
    return train, "test.csv" if "test.csv" in csvs else None


def _read_csv(name: str, path: Path, **kwargs) -> pd.DataFrame:
    try:
        return pd.read_csv(path, **kwargs)
    except FileNotFoundError:
        raise Refused(name, f"{path} does not exist") from None
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' parser errors are ValueErrors
        raise Refused(name, f"{path} is not a readable CSV ({type(exc).__name__}: {exc})") from None


def _media(public: Path) -> str | None:
    """'audio' or 'image' when the public files (loose, in folders, in zips) hold such media."""
    names: list[str] = []
    for entry in sorted(public.iterdir()):
        if entry.is_dir():
            names += [p.name for _, p in zip(range(N_PEEK), entry.rglob("*"))]
        elif entry.suffix == ".zip":
            with zipfile.ZipFile(entry) as z:
                names += z.namelist()[:N_PEEK]
        else:
            names.append(entry.name)
    suffixes = {Path(n).suffix.lower() for n in names}
    return "audio" if suffixes & set(AUDIO_SUFFIXES) else "image" if suffixes & set(IMAGE_SUFFIXES) else None


def _strings(s: pd.Series) -> bool:
    return not pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _continuous(s: pd.Series) -> bool:
    if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
        return False
    v = s.dropna()
    return bool((v != v.round()).any()) or v.nunique() > DISTINCT_FOR_REGRESSION


def _probabilities(frame: pd.DataFrame) -> bool:
    """A sample submission of probabilities: numeric, within [0, 1], not all 0/1 (e.g. 0.5 or 1/120)."""
    if not all(pd.api.types.is_numeric_dtype(frame[c]) and not pd.api.types.is_bool_dtype(frame[c]) for c in frame):
        return False
    v = frame.to_numpy(dtype=float)
    return bool(((v >= 0) & (v <= 1)).all() and (v != v.round()).any())


def _sorted_classes(values) -> list:
    try:
        return sorted(values)
    except TypeError:  # mixed types: order by spelling
        return sorted(values, key=str)


def competition_record(name: str, root: Path, *, public_folder: str, description_file: str,
                       sample_submission_file: str, answers_file: str, source: str, metric: str,
                       higher_is_better: bool, metric_kind: str | None = None, regression: bool | None = None,
                       target_hint: str | None = None, category: str | None = None) -> dict:
    """The task record (see :class:`wmrl.tasks.Task`, without ``scoring``) of one competition.

    ``metric_kind`` and ``regression`` come from a built-in metric when the caller names one, and
    are read off the files otherwise; ``target_hint`` names the main target among several (MLE-Dojo's
    metric ``value``); ``category`` overrides the inferred one. Raises :class:`Refused`.
    """
    root = Path(root)
    public, sample_path = root / public_folder, root / sample_submission_file
    if not public.is_dir():
        raise Refused(name, f"its public folder {public} does not exist")
    sample = _read_csv(name, sample_path, nrows=200)
    columns = [str(c) for c in sample.columns]
    if len(columns) < 2:
        raise Refused(name, f"{sample_path} has the column(s) {columns}; wmrl needs an id column and at least one "
                            "target column")
    id_col, targets = columns[0], columns[1:]
    target = target_hint if target_hint in targets else targets[0]
    train_file, test_file = public_files(public, sample_path)
    train = _read_csv(name, public / train_file, nrows=SAMPLE_ROWS) if train_file else None
    answers = root / answers_file
    missing = [t for t in targets if t not in set(_read_csv(name, answers, nrows=0).columns)]
    if missing:
        raise Refused(name, f"its answers {answers} lack the submission's target column(s) {missing}, so wmrl cannot "
                            "tell the agent what the target is")
    y = train[targets] if train is not None and set(targets) <= set(train.columns) else \
        _read_csv(name, answers, usecols=targets)
    if regression is None:  # a target is continuous when numeric and non-integral or many-valued
        regression = any(_continuous(y[t]) for t in targets)
    if metric_kind is None:
        metric_kind = "value" if regression else "probability" if _probabilities(sample[targets]) else "label"
    classes = None
    if not regression:  # several targets: one probability column per class, the columns name the classes
        values = y[target].dropna().unique().tolist()
        classes = targets if len(targets) > 1 else _sorted_classes(values) if len(values) <= MAX_CLASSES else None
    strings = [c for c in (train.columns if train is not None else []) if c not in targets and _strings(train[c])]
    image_col = next((c for c in strings if train[c].astype(str).str.lower().str.endswith(IMAGE_SUFFIXES).all()), None)
    text_col = next((c for c in strings if c not in (image_col, id_col)
                     and train[c].astype(str).str.len().mean() >= TEXT_MIN_LENGTH), None)
    media = _media(public)
    category = category or ("audio" if media == "audio" else "image" if image_col or media == "image"
                            else "text" if text_col else "tabular")
    return {
        "name": name, "category": category, "metric": metric, "higher_is_better": bool(higher_is_better),
        "task_type": "regression" if regression else "classification", "id_column": id_col, "target_column": target,
        "size_bytes": folder_bytes(public), "n_rows": count_rows(public / train_file) if train_file else 0,
        "source": source, "text_column": text_col, "image_column": image_col, "classes": classes,
        "root": str(root), "public_folder": public_folder, "description_file": description_file,
        "sample_submission_file": sample_submission_file, "train_file": train_file, "test_file": test_file,
        "target_columns": targets if len(targets) > 1 else None, "metric_kind": metric_kind,
    }


def folder_record(root: Path, metric: str) -> dict:
    """A folder in our (and MLE-Dojo's) layout without ``task.json``, graded by the built-in ``metric``."""
    root = Path(root)
    m = get_metric(metric)
    name = root.parent.name if root.name == "data" else root.name  # MLE-Dojo: <competition>/data/
    rec = competition_record(name, root, public_folder="public", description_file="public/description.txt",
                             sample_submission_file="public/sample_submission.csv",
                             answers_file="private/test_answer.csv", source="MLE-Dojo layout", metric=metric,
                             higher_is_better=m.higher_is_better, metric_kind=m.kind, regression=m.kind == "value")
    return rec | {"metric_kind": None}
