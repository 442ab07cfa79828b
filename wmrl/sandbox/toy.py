"""A tiny MLE-Dojo-shaped task and grader, for the sandbox's own tests and benchmark.

The sandbox must be testable (and benchmarkable) without preparing the real pool, and its tests
need an answer file with a recognisable secret to prove that nothing leaks.
"""
from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .local import UID_RANGE

__all__ = ["SECRET", "ToyGrade", "ToyTask", "cpu_burner", "forking_burner", "make_toy_task", "sandbox_processes",
           "toy_grade", "toy_solution"]

SECRET = "WMRL-SECRET-ANSWER-7f3a"


@dataclass(frozen=True)
class ToyTask:
    name: str
    root: Path

    @property
    def public_dir(self) -> Path:
        return self.root / "public"

    @property
    def private_dir(self) -> Path:
        return self.root / "private"


@dataclass(frozen=True)
class ToyGrade:
    status: str
    raw_score: float | None
    percentile: float | None
    reason: str


def make_toy_task(pool: Path, name: str = "toy") -> ToyTask:
    """``pool/name/{public,private}``: 8 train rows, 4 test rows, answers carrying ``SECRET``."""
    task = ToyTask(name, Path(pool) / name)
    task.public_dir.mkdir(parents=True, exist_ok=True)
    task.private_dir.mkdir(parents=True, exist_ok=True)
    (task.public_dir / "description.txt").write_text(
        "Predict y from x. Read files from $DATA_DIR; write $SUBMISSION_PATH with columns id,y.\n")
    pd.DataFrame({"id": range(8), "x": [i / 8 for i in range(8)], "y": [i % 2 for i in range(8)]}).to_csv(
        task.public_dir / "train.csv", index=False)
    pd.DataFrame({"id": range(8, 12), "x": [0.1, 0.4, 0.6, 0.9]}).to_csv(task.public_dir / "test.csv", index=False)
    pd.DataFrame({"id": range(8, 12), "y": 0}).to_csv(task.public_dir / "sample_submission.csv", index=False)
    answers = pd.DataFrame({"id": range(8, 12), "y": [0, 1, 0, 1], "note": SECRET})
    answers.to_csv(task.private_dir / "test_answer.csv", index=False)
    return task


def toy_grade(task: ToyTask, submission_path: Path) -> ToyGrade:
    """Accuracy, with the checks the real grader makes (columns, rows, ids, NaN)."""
    if not Path(submission_path).exists():
        return ToyGrade("no_submission", None, None, "no submission file")
    sub = pd.read_csv(submission_path)
    answers = pd.read_csv(task.private_dir / "test_answer.csv")
    if list(sub.columns) != ["id", "y"]:
        return ToyGrade("invalid_submission", None, None, f"expected column(s) id,y; got {list(sub.columns)}")
    if len(sub) != len(answers):
        return ToyGrade("invalid_submission", None, None, f"expected {len(answers)} rows, got {len(sub)}")
    if sub["y"].isna().any():
        return ToyGrade("invalid_submission", None, None, "NaN in column y")
    if set(sub["id"]) != set(answers["id"]):
        return ToyGrade("invalid_submission", None, None, "id(s) not in the test set")
    merged = answers.merge(sub, on="id", suffixes=("", "_pred"))
    accuracy = float((merged["y"] == merged["y_pred"]).mean())
    return ToyGrade("ok", accuracy, accuracy, "graded (toy: percentile = accuracy)")


def toy_solution(header: str = "id,y", rows: str = "[(i, 1) for i in ids]") -> str:
    """A fast solution (stdlib only) writing ``header`` and the Python expression ``rows``."""
    return textwrap.dedent(f"""
        import csv, os
        with open(os.path.join(os.environ["DATA_DIR"], "test.csv")) as fh:
            ids = [int(row["id"]) for row in csv.DictReader(fh)]
        with open(os.environ["SUBMISSION_PATH"], "w") as fh:
            fh.write("{header}\\n" + "".join(",".join(map(str, r)) + "\\n" for r in {rows}))
        """)


def cpu_burner(seconds: float) -> str:
    """Code that spends ``seconds`` of its own process's CPU time (pure Python, one thread)."""
    return f"import time as _time\n_t = _time.process_time()\nwhile _time.process_time() - _t < {seconds}:\n    pass\n"


def forking_burner(children: int, seconds: float, then: str = "") -> str:
    """A parent that forks ``children`` workers burning ``seconds`` of CPU each, waits for them,
    then runs ``then``: the tree's CPU time is about ``children * seconds``, no process's alone is."""
    worker = textwrap.indent(cpu_burner(seconds), " " * 8)
    return (f"import os\nfor _ in range({children}):\n    if os.fork() == 0:\n{worker}        os._exit(0)\n"
            f"for _ in range({children}):\n    os.wait()\n{textwrap.dedent(then)}")


def sandbox_processes(base_dir: str | os.PathLike) -> list[int]:
    """PIDs of live processes of runs under ``base_dir`` (should be empty between runs).

    A run's processes carry a sandbox uid and either the supervisor's command line (which
    names the run folder) or a working folder inside it; other sandboxes on the same machine
    are not counted.
    """
    base, found = str(base_dir), []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.stat(f"/proc/{entry}").st_uid not in UID_RANGE:
                continue
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().decode(errors="replace")
            if base in cmdline or os.readlink(f"/proc/{entry}/cwd").startswith(base):
                found.append(int(entry))
        except OSError:
            continue
    return found
