"""Score one submission with one competition's own metric code: the child process of competition_code.

Run as ``python -I -B _competition_runner.py SPEC_JSON`` in a fresh working folder; it writes
``result.json`` there: ``{"phase": "load" | "score", "ok": bool, "score": float | None,
"higher_is_better": bool | None, "error": str, "missing_module": str | None}``, the last naming the
module a ModuleNotFoundError could not find (so that the parent can say what to install). Before entering the score phase it writes a file
``phase`` so that the parent can tell, when the process is killed by a limit, whose fault it was.

Standalone on purpose: it imports nothing from wmrl (the parent may be anywhere), it limits itself
(CPU seconds, address space, file size) before any competition code loads, and it calls the code
the way each benchmark does:

- MLE-Dojo (``gym/interface.py``): ``metric = Class()``, ``validate_submission(submission,
  answers)``, then ``evaluate(answers, submission)``, both frames read with ``pd.read_csv``;
- MLE-bench (``grade.py``, ``utils.read_csv``): ``grade(submission, answers)``, both read with
  ``float_precision="round_trip"``;
- DSBench (``score4each_com.py``): the script with ``--answer_file --predict_file --path --name``,
  whose ``<path>/<name>/result.txt`` holds the score.
"""

import importlib
import importlib.util
import json
import math
import resource
import runpy
import sys
from pathlib import Path

import pandas as pd


def _limit(limits: dict) -> None:
    for res, value in ((resource.RLIMIT_CPU, limits["cpu_s"]), (resource.RLIMIT_AS, limits["memory_mb"] << 20),
                       (resource.RLIMIT_FSIZE, limits["file_mb"] << 20)):
        hard = resource.getrlimit(res)[1]
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(res, (value, value))


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:2000]


def _failure(phase: str, exc: BaseException) -> dict:
    missing = exc.name if isinstance(exc, ModuleNotFoundError) else None  # not "cannot import name": a version
    return {"phase": phase, "ok": False, "score": None, "error": _error(exc), "missing_module": missing}


def _load(spec: dict):
    """The score function, with everything it needs built before the submission is read."""
    sys.path.insert(0, spec["code_root"])
    code, grader = spec["code"], spec["grader"]
    if grader == "mledojo":
        module_spec = importlib.util.spec_from_file_location("wmrl_competition_metric", code)
        module = importlib.util.module_from_spec(module_spec)
        module_spec.loader.exec_module(module)
        metric = getattr(module, spec["entry"])()
        answers = pd.read_csv(spec["answers"])

        def score(submission_path):
            submission = pd.read_csv(submission_path)
            metric.validate_submission(submission, answers)
            return metric.evaluate(answers, submission), metric.higher_is_better
        return score
    if grader == "mlebench":
        name = ".".join(Path(code).relative_to(spec["code_root"]).with_suffix("").parts)
        grade = getattr(importlib.import_module(name), spec["entry"])
        answers = pd.read_csv(spec["answers"], float_precision="round_trip")
        return lambda submission_path: (grade(pd.read_csv(submission_path, float_precision="round_trip"), answers), None)
    if grader == "dsbench":
        def score(submission_path):
            out = Path("performance")
            (out / spec["name"]).mkdir(parents=True)
            sys.argv = [code, "--answer_file", spec["answers"], "--predict_file", str(submission_path),
                        "--path", str(out), "--name", spec["name"]]
            runpy.run_path(code, run_name="__main__")
            return float((out / spec["name"] / "result.txt").read_text().strip()), None
        return score
    raise ValueError(f"unknown grader {grader!r}")


def main() -> None:
    spec = json.loads(Path(sys.argv[1]).read_text())
    result = Path("result.json")
    _limit(spec["limits"])
    try:
        score = _load(spec)
    except BaseException as exc:  # noqa: BLE001 - the grader failed to load: the parent raises GradingError
        result.write_text(json.dumps(_failure("load", exc)))
        return
    Path("phase").write_text("score")
    try:
        value, higher = score(spec["submission"])
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"the competition's metric returned {value}")
    except ImportError as exc:  # a DSBench script's imports, or a grade function's lazy one: not the submission's fault
        result.write_text(json.dumps(_failure("load", exc)))
        return
    except BaseException as exc:  # noqa: BLE001 - as MLE-Dojo and MLE-bench, any failure here is the submission's
        result.write_text(json.dumps(_failure("score", exc)))
        return
    result.write_text(json.dumps({"phase": "score", "ok": True, "score": value, "higher_is_better": higher,
                                  "error": "", "missing_module": None}))


if __name__ == "__main__":
    main()
