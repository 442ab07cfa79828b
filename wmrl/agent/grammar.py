"""The solution grammar: a fixed sequence of decisions rendered into a complete Python script.

The small-scale agent does not write code token by token; it picks one option per slot and
:func:`render` turns the picks into a readable Kaggle-style baseline that really runs in the
sandbox. The slots and their options are the same for every task (the policy has one softmax head
per slot); :func:`option_mask` closes the options that make no sense for a task's category or type.

Mistakes are options like any other and are never masked: a wrong file or column, a keyword the
installed library removed, a configuration far beyond the time budget, a malformed submission,
a shuffled target. Each is written the way real agents write it, so that every one of the world
model's eight checks has something to catch - and the shuffled target, which only a run exposes,
is a bias the world model really has.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from wmrl.agent.script import build_script
from wmrl.tasks.metrics import get_metric
from wmrl.vocabulary import MODEL_FAMILIES

__all__ = [
    "SLOTS",
    "SLOT_NAMES",
    "Slot",
    "baseline_choices",
    "option_mask",
    "random_choices",
    "render",
    "task_features",
]


@dataclass(frozen=True)
class Slot:
    name: str
    options: tuple[str, ...]
    doc: str


SLOTS: tuple[Slot, ...] = (
    Slot("train_file", ("correct", "wrong_name", "kaggle_path"),
         "correct: DATA_DIR / 'train.csv'; wrong_name: 'train_data.csv' (FileNotFoundError); kaggle_path: a "
         "hard-coded /kaggle/input/... path copied from a notebook (FileNotFoundError)."),
    Slot("target", ("correct", "wrong_column", "read_after_drop"),
         "correct: the task's target column; wrong_column: a plausible name that is not in train.csv (KeyError); "
         "read_after_drop: drops the target from train, then reads it (KeyError)."),
    Slot("categorical", ("numeric_only", "onehot", "ordinal", "raw"),
         "Tabular only. numeric_only: drop non-numeric columns; onehot / ordinal: encode them; raw: pass string "
         "columns to the model (ValueError when the table has any)."),
    Slot("preprocess", ("none", "impute", "standardize", "impute_standardize"),
         "Tabular and image. impute: median SimpleImputer; standardize: StandardScaler (keeps NaN, so a "
         "NaN-intolerant model still fails on tables with missing values)."),
    Slot("text_features", ("none", "tfidf_word", "tfidf_char", "hashing", "count"),
         "Text only (and required there): TF-IDF on words or char n-grams, HashingVectorizer, CountVectorizer."),
    Slot("ngram", ("uni", "uni_bi", "uni_tri"),
         "Text only: word n-grams (1,1)/(1,2)/(1,3); char n-grams (2,3)/(2,4)/(2,5)."),
    Slot("image_features", ("none", "flatten", "downsample", "stats"),
         "Image only (and required there): grey 32x32 pixels flattened; 12x12 thumbnails; intensity histogram, "
         "gradient and row/column statistics."),
    Slot("model", MODEL_FAMILIES,
         "Model family; regressors where the task is regression (naive_bayes is masked there). Text uses "
         "ComplementNB / LinearSVC and TruncatedSVD before boosting."),
    Slot("capacity", ("small", "medium", "large", "huge"),
         "Hyperparameter level; huge (5000 trees on all features, 50k boosting rounds, C=1e5 with tiny tolerance) is far beyond "
         "the time budget on all but the smallest tasks."),
    Slot("api", ("current", "removed_kwarg", "removed_method"),
         "current: today's API; removed_kwarg: a keyword the installed library removed (multi_class, normalize, "
         "sparse, squared, error_bad_lines: TypeError); removed_method: DataFrame.append (AttributeError)."),
    Slot("validation", ("none", "holdout", "cv5"),
         "Score before the final fit: nothing, a 20% holdout, or 5-fold cross-validation (6 fits in all)."),
    Slot("data_use", ("clean", "fit_on_all_rows", "shuffled_target", "subsample"),
         "clean: fit everything on train; fit_on_all_rows: fit encoders/scalers/vectorizers on train+test "
         "(harmless); shuffled_target: shuffles the target alone, misaligning it with the rows (runs, scores at "
         "chance; invisible to static analysis); subsample: final fit on a 20% subsample 'to save time'."),
    Slot("submission", ("correct", "wrong_columns", "wrong_rows", "no_write"),
         "correct: sample_submission's columns, one row per test id; wrong_columns: target named 'prediction'; "
         "wrong_rows: predictions for the train rows; no_write: builds the frame but never writes it."),
)
SLOT_NAMES = tuple(s.name for s in SLOTS)
_BY_NAME = {s.name: s for s in SLOTS}
# Slots that only apply to some categories; elsewhere only the first (neutral) option is open.
_ONLY_FOR = {"categorical": ("tabular",), "preprocess": ("tabular", "image"), "text_features": ("text",),
             "ngram": ("text",), "image_features": ("image",)}


def option_mask(task) -> list[np.ndarray]:
    """One boolean array per slot (SLOTS order): True where the option is open for this task."""
    masks = []
    for slot in SLOTS:
        m = np.ones(len(slot.options), dtype=bool)
        if slot.name in _ONLY_FOR:
            applies = task.category in _ONLY_FOR[slot.name]
            m[:] = applies
            m[0] = True
            if applies and slot.name in ("text_features", "image_features"):
                m[0] = False  # the category's features are required, "none" would not run at all
        if slot.name == "model" and task.task_type == "regression":
            m[slot.options.index("naive_bayes")] = False
        masks.append(m)
    return masks


def _check_choices(task, choices: Mapping[str, str]) -> dict[str, str]:
    missing = [n for n in SLOT_NAMES if n not in choices]
    unknown = [n for n in choices if n not in _BY_NAME]
    if missing or unknown:
        raise ValueError(f"choices must name every slot exactly: missing {missing}, unknown {unknown}")
    for slot, m in zip(SLOTS, option_mask(task)):
        opt = choices[slot.name]
        if opt not in slot.options:
            raise ValueError(f"slot {slot.name!r} has no option {opt!r}; options: {slot.options}")
        if not m[slot.options.index(opt)]:
            raise ValueError(f"option {slot.name}={opt!r} is masked for task {task.name!r} ({task.category}, "
                             f"{task.task_type})")
    return dict(choices)


def baseline_choices(task) -> dict[str, str]:
    """A sane default per task: runs, writes a valid submission, scores above the dummy."""
    return {"train_file": "correct", "target": "correct",
            "categorical": "onehot" if task.category == "tabular" else "numeric_only",
            "preprocess": {"tabular": "impute_standardize", "image": "standardize"}.get(task.category, "none"),
            "text_features": "tfidf_word" if task.category == "text" else "none",
            "ngram": "uni_bi" if task.category == "text" else "uni",
            "image_features": "downsample" if task.category == "image" else "none",
            "model": "linear" if task.category == "text" else "forest", "capacity": "medium", "api": "current",
            "validation": "holdout", "data_use": "clean", "submission": "correct"}


def random_choices(task, rng: np.random.Generator) -> dict[str, str]:
    """Uniform over the open options of every slot (the untrained policy draws from
    :func:`wmrl.agent.habits.habit_choices` instead)."""
    return {s.name: s.options[rng.choice(np.flatnonzero(m))] for s, m in zip(SLOTS, option_mask(task))}


def task_features(task) -> np.ndarray:
    """Fixed-length description the policy conditions on (9 floats, all roughly in [0, 1])."""
    n_classes = len(task.classes) if task.classes else 0
    kind = get_metric(task.metric).kind
    return np.array([task.category == "tabular", task.category == "text", task.category == "image",
                     task.task_type == "regression", kind == "probability",
                     np.log10(max(task.n_rows, 1)) / 4.0, np.log10(len(task.feature_columns) + 1) / 3.0,
                     np.log2(max(n_classes, 1)) / 4.0, bool(task.higher_is_better)], dtype=np.float32)


def render(task, choices: Mapping[str, str]) -> str:
    """The complete script for ``task`` under ``choices`` (deterministic: same inputs, same text)."""
    return build_script(task, _check_choices(task, choices), get_metric(task.metric).kind)
