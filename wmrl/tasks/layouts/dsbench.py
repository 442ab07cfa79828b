"""DSBench's data-modeling tasks, read in place (checked against LiqiangJing/DSBench@ba78609).

``src`` is DSBench's ``data_modeling/`` folder with ``data.zip`` (from its Hugging Face dataset)
and ``save_performance.zip`` unzipped in it, as its readme says; the paths are those its
``score4each_com.py`` and ``show_result.py`` read, and MLE-Dojo's ``prepare/dsbench.py``::

    data/data_resplit/<name>/   train.csv, test.csv and the sample submission (its name varies,
                                e.g. sample_solution.csv: it is the folder's one other CSV)
    data/answers/<name>/test_answer.csv
    data/task/<name>.txt        the task's description
    evaluation/<name>_eval.py   --answer_file A --predict_file P --path D --name N writes D/N/result.txt
    save_performance/GT/<name>/result.txt        the answers scored against themselves
    save_performance/baseline/<name>/result.txt  the baseline's score

DSBench has no leaderboards and computes no percentile: ``show_result.py`` scores a task by the
relative performance gap ``max(0, (s - b) / (g - b))`` with ``g`` the GT and ``b`` the baseline
result. An imported DSBench task says so: its ``scoring.score_kind`` is ``"rpg"``, never
``"percentile"``. The direction is read as ``show_result.py`` reads it (higher is better when
GT > baseline); a task whose GT equals its baseline, or whose results are missing or ``nan``, is
refused by name. ``--code`` may name another ``data_modeling/`` holding ``evaluation/`` and
``save_performance/`` when the data was unzipped elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from wmrl.tasks.infer import Refused, competition_record
from wmrl.tasks.layouts.base import SourceError, find_checkout, make_task, read_each, subfolders
from wmrl.tasks.task import Scoring, Task

__all__ = ["read"]


def _result(name: str, path: Path) -> float:
    try:
        value = float(path.read_text().strip())
    except FileNotFoundError:
        raise Refused(name, f"no {path} (unzip DSBench's save_performance.zip into data_modeling/)") from None
    except ValueError:
        raise Refused(name, f"{path} does not hold a number") from None
    if not math.isfinite(value):
        raise Refused(name, f"{path} holds {value}, so the relative performance gap is undefined")
    return value


def _task(folder: Path, src: Path, code_root: Path, category: str | None) -> Task:
    name = folder.name
    answers, description = src / "data" / "answers" / name / "test_answer.csv", src / "data" / "task" / f"{name}.txt"
    script = code_root / "evaluation" / f"{name}_eval.py"
    for what, path in (("answers", answers), ("description", description), ("evaluation script", script)):
        if not path.is_file():
            raise Refused(name, f"its {what} {path} does not exist")
    samples = sorted(p.name for p in folder.glob("*.csv") if p.name not in ("train.csv", "test.csv"))
    if len(samples) != 1 or not (folder / "train.csv").is_file() or not (folder / "test.csv").is_file():
        raise Refused(name, f"{folder} must hold train.csv, test.csv and one sample submission CSV; it holds "
                            f"{sorted(p.name for p in folder.iterdir())}")
    gt = _result(name, code_root / "save_performance" / "GT" / name / "result.txt")
    baseline = _result(name, code_root / "save_performance" / "baseline" / name / "result.txt")
    if gt == baseline:
        raise Refused(name, f"its GT and baseline results are equal ({gt}), so the relative performance gap is "
                            "undefined")
    rel = f"data/data_resplit/{name}"
    rec = competition_record(
        name, src, public_folder=rel, description_file=f"data/task/{name}.txt",
        sample_submission_file=f"{rel}/{samples[0]}", answers_file=f"data/answers/{name}/test_answer.csv",
        source=f"DSBench {name}", metric=f"{script.name} (DSBench {name})", higher_is_better=gt > baseline,
        category=category)
    scoring = Scoring(grader="dsbench", score_kind="rpg", answers=f"data/answers/{name}/test_answer.csv", boards=(),
                      code=str(script), code_root=str(code_root), gt=gt, baseline=baseline)
    return make_task(rec, scoring)


def read(src: Path, code: Path | None = None, categories: Mapping[str, str] | None = None
         ) -> tuple[list[Task], list[Refused]]:
    """Every task folder of ``src/data/data_resplit``: (tasks, refusals)."""
    resplit = src / "data" / "data_resplit"
    if not resplit.is_dir():
        raise SourceError(f"{src} is not DSBench's data_modeling folder: {resplit} is missing (unzip data.zip there)")
    code_root = find_checkout(src, code or src, "evaluation", "DSBench data_modeling")
    return read_each(subfolders(resplit), lambda f: _task(f, src, code_root, (categories or {}).get(f.name)))
