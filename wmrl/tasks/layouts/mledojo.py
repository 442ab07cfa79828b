"""MLE-Dojo's prepared competitions, read in place (layout checked against MLE-Dojo/MLE-Dojo@667a8fd).

Data, as ``prepare/mle.py`` writes it (``main.py``: a competition's data dir is ``<data-dir>/<name>/data``)::

    <data-dir>/<name>/data/public/   description.txt, sample_submission.csv, train.csv (or e.g. labels.csv),
                                     test.csv or a folder of test files (test/), train/ ...
    <data-dir>/<name>/data/private/  test_answer.csv, public_leaderboard.csv, private_leaderboard.csv

Code, in the checkout (``mledojo/competitions/registry.py``)::

    <checkout>/mledojo/competitions/<name>/utils/metric.py   a subclass of CompetitionMetrics
    <checkout>/mledojo/competitions/<name>/info/{public,private}_leaderboard.csv
    <checkout>/mledojo/metrics/base.py                        what every metric.py imports

A competition needs what ``gym/competition.py`` requires (``public/description.txt``,
``public/sample_submission.csv``, ``private/test_answer.csv``), its ``utils/metric.py``, and at
least one leaderboard, in ``private/`` (where ``prepare/mle.py`` copies them) or else in
``info/``: without one there is no percentile. The direction is the metric class's own
``higher_is_better``, read from its ``__init__`` defaults without running the code (as MLE-Dojo
does, ``CompInfo.higher_is_better`` is not used); the code runs only when :mod:`wmrl.grading`
grades. The target column named by the class's ``value`` default becomes the main target.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

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

__all__ = ["BOARDS", "REQUIRED", "metric_class", "read"]

REQUIRED = ("public/description.txt", "public/sample_submission.csv", "private/test_answer.csv")
BOARDS = ("public_leaderboard.csv", "private_leaderboard.csv")


def metric_class(name: str, path: Path) -> tuple[str, bool, object]:
    """(class name, higher_is_better, value) of the CompetitionMetrics subclass in ``path``, read statically."""
    try:
        tree = ast.parse(path.read_text(), filename=str(path))
    except (SyntaxError, UnicodeDecodeError) as exc:
        raise Refused(name, f"{path} does not parse ({exc})") from None
    for node in tree.body:
        bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", None) for b in getattr(node, "bases", [])}
        if not isinstance(node, ast.ClassDef) or "CompetitionMetrics" not in bases:
            continue
        init = next((f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
        if init is not None:
            args = init.args.args[len(init.args.args) - len(init.args.defaults):]
            defaults = {a.arg: d for a, d in zip(args, init.args.defaults)}
            try:
                higher = ast.literal_eval(defaults["higher_is_better"])
                value = ast.literal_eval(defaults["value"]) if "value" in defaults else None
            except (KeyError, ValueError):
                higher = None
            if isinstance(higher, bool):
                return node.name, higher, value
        raise Refused(name, f"{path}: class {node.name}'s __init__ gives higher_is_better no literal True/False "
                            "default, so its direction cannot be read without running it")
    raise Refused(name, f"{path} defines no subclass of CompetitionMetrics")


def _task(folder: Path, code_root: Path, category: str | None) -> Task:
    name = folder.name
    root = folder / "data" if (folder / "data").is_dir() else folder
    for rel in REQUIRED:
        if not (root / rel).is_file():
            raise Refused(name, f"{root / rel} is missing (MLE-Dojo's Competition.REQUIRED_PATHS)")
    code = code_root / "mledojo" / "competitions" / name
    metric_py = code / "utils" / "metric.py"
    if not metric_py.is_file():
        raise Refused(name, f"no metric code at {metric_py}: MLE-Dojo grades each competition with its utils/metric.py")
    cls, higher, value = metric_class(name, metric_py)
    boards = [root / "private" / b for b in BOARDS if (root / "private" / b).is_file()] or \
             [code / "info" / b for b in BOARDS if (code / "info" / b).is_file()]
    if not boards:
        raise Refused(name, f"no leaderboard in {root / 'private'} or {code / 'info'}, so no percentile can be computed")
    for board in boards:
        board_scores(name, board)
    rec = competition_record(
        name, root, public_folder="public", description_file="public/description.txt",
        sample_submission_file="public/sample_submission.csv", answers_file="private/test_answer.csv",
        source=f"MLE-Dojo {name}", metric=f"{cls} (MLE-Dojo {name})", higher_is_better=higher,
        target_hint=value if isinstance(value, str) else None, category=category)
    scoring = Scoring(grader="mledojo", answers="private/test_answer.csv", boards=tuple(relative(b, root) for b in boards),
                      code=str(metric_py), code_root=str(code_root), entry=cls)
    return make_task(rec, scoring)


def read(src: Path, code: Path | None = None, categories: Mapping[str, str] | None = None
         ) -> tuple[list[Task], list[Refused]]:
    """Every competition folder of MLE-Dojo's data dir ``src``: (tasks, refusals)."""
    folders = [d for d in subfolders(src) if (d / "data" / "public").is_dir() or (d / "public").is_dir()]
    if not folders:
        raise SourceError(f"{src} holds no MLE-Dojo competition (expected <name>/data/public/ and <name>/data/private/"
                          " as MLE-Dojo's prepare/mle.py writes them, e.g. under its data/prepared/)")
    code_root = find_checkout(src, code, "mledojo/metrics/base.py", "MLE-Dojo")
    return read_each(subfolders(src), lambda f: _task(f, code_root, (categories or {}).get(f.name)),
                     lambda f: f in folders, "not prepared (no data/public/ in it)")
