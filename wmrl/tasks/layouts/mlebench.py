"""MLE-bench's prepared competitions, read in place (layout checked against openai/mle-bench@783b15a).

Data, as ``mlebench prepare`` writes it (``registry.py``, ``data.py``; default data dir
``~/.cache/mle-bench/data``)::

    <data-dir>/<id>/prepared/public/   description.md, sample_submission.csv, train.csv, and test.csv or
                                       test files (e.g. train.zip/test.zip of images, or test/)
    <data-dir>/<id>/prepared/private/  the answers named by config.yaml (test.csv, answers.csv, ...)

Code, in the checkout::

    <checkout>/mlebench/competitions/<id>/config.yaml    dataset.answers, dataset.sample_submission (both
                                                         relative to the data dir), grader.grade_fn
    <checkout>/mlebench/competitions/<id>/grade.py       grade(submission, answers) -> float
    <checkout>/mlebench/competitions/<id>/leaderboard.csv  Kaggle's board (git-LFS), column ``score``

MLE-bench ranks a score by medals and computes no percentile; wmrl applies MLE-Dojo's position
score (the paper's metric) to the competition's own ``leaderboard.csv``, with the direction
MLE-bench infers from it (``Grader.is_lower_better``: lower is better when the first row's score
is below the last row's) and scores rounded to 5 decimals as ``Grader.__call__`` rounds them.
Refused by name: answers that are not CSV (e.g. ``test.jsonl``), a leaderboard still a git-LFS
pointer, a flat leaderboard (no direction), a missing config, grade module or answers file.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import yaml

from wmrl.tasks.infer import Refused, competition_record
from wmrl.tasks.layouts.base import (
    SourceError,
    board_scores,
    find_checkout,
    make_task,
    read_each,
    relative,
    subfolders,
)
from wmrl.tasks.task import Scoring, Task

__all__ = ["read"]


def _config(name: str, path: Path) -> tuple[str, str, str, str, str]:
    """(answers, sample submission, grader name, grade module, grade function) from a competition's config.yaml."""
    if not path.is_file():
        raise Refused(name, f"no {path}: not an MLE-bench competition of this checkout")
    try:
        cfg = yaml.safe_load(path.read_text())
        answers, sample = cfg["dataset"]["answers"], cfg["dataset"]["sample_submission"]
        grader = str(cfg["grader"].get("name", "grade"))
        module, fn = cfg["grader"]["grade_fn"].split(":")
    except (yaml.YAMLError, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise Refused(name, f"{path} lacks dataset.answers, dataset.sample_submission or grader.grade_fn "
                            f"('module:function') ({type(exc).__name__}: {exc})") from None
    return str(answers), str(sample), grader, module, fn


def _task(folder: Path, src: Path, code_root: Path, category: str | None) -> Task:
    name, root = folder.name, folder / "prepared"
    code = code_root / "mlebench" / "competitions" / name
    answers_rel, sample_rel, grader, module, fn = _config(name, code / "config.yaml")
    answers, sample = src / answers_rel, src / sample_rel
    for what, path in (("answers", answers), ("sample submission", sample)):
        if not path.is_file():
            raise Refused(name, f"its {what} {path} (config.yaml) does not exist; prepare it with mlebench prepare")
    if answers.suffix != ".csv":
        raise Refused(name, f"its answers {answers.name} are not CSV; wmrl grades CSV answers only")
    grade_py = code_root / (module.replace(".", "/") + ".py")
    if not grade_py.is_file():
        raise Refused(name, f"its grade function {module}:{fn} has no file {grade_py}")
    board = code / "leaderboard.csv"
    scores = board_scores(name, board)
    if scores[0] == scores[-1]:
        raise Refused(name, f"{board} starts and ends with the same score, so its direction cannot be told "
                            "(MLE-bench infers it from the first and last rows)")
    description = root / "public" / "description.md"
    if not description.is_file():
        description = code / "description.md"
    if not description.is_file():
        raise Refused(name, f"no description.md in {root / 'public'} or {code}")
    rec = competition_record(
        name, root, public_folder="public", description_file=relative(description, root),
        sample_submission_file=relative(sample, root), answers_file=relative(answers, root),
        source=f"MLE-bench {name}", metric=f"{grader} (MLE-bench {name})",
        higher_is_better=bool(scores[0] > scores[-1]), category=category)
    scoring = Scoring(grader="mlebench", answers=relative(answers, root), boards=(str(board),), code=str(grade_py),
                      code_root=str(code_root), entry=fn, round_digits=5)
    return make_task(rec, scoring)


def read(src: Path, code: Path | None = None, categories: Mapping[str, str] | None = None
         ) -> tuple[list[Task], list[Refused]]:
    """Every competition folder of MLE-bench's data dir ``src``: (tasks, refusals)."""
    if not any((d / "prepared" / "public").is_dir() for d in subfolders(src)):
        raise SourceError(f"{src} holds no MLE-bench competition (expected <id>/prepared/public/ and "
                          "<id>/prepared/private/ as `mlebench prepare` writes them in its data dir)")
    code_root = find_checkout(src, code, "mlebench/competitions", "MLE-bench")
    return read_each(subfolders(src), lambda f: _task(f, src, code_root, (categories or {}).get(f.name)),
                     lambda f: (f / "prepared" / "public").is_dir(), "not prepared (no prepared/public/ in it)")
