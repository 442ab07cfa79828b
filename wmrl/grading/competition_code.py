"""Running a competition's own metric code on the grading host, in a separate process with limits.

An imported competition is scored by its benchmark's code (MLE-Dojo's ``utils/metric.py``,
MLE-bench's ``grade.py``, DSBench's ``<name>_eval.py``), never by a metric wmrl guesses. The code
comes from the user's checkout of the benchmark; the submission comes from the agent. The code
runs in a child process (``_competition_runner.py``) so that a metric that hangs or explodes on a
huge submission cannot take the trainer with it: a fresh temporary working folder, a scrubbed
environment with one thread per math library, ``python -I -B`` (no user paths; no bytecode
written into the user's checkout), limits on CPU seconds, address space and file size that the
child sets on itself before any competition code loads, and a wall-clock timeout after which its
whole process group is killed. This is not the solution sandbox (:mod:`wmrl.sandbox`, a layer
above grading, isolates untrusted programs); it is a resource fence around trusted-but-fallible
grading code.

Whose fault a failure is decides what it becomes: failing to load the code or read the answers
is the grader's, and raises :class:`GradingError` (a grade wmrl cannot trust is never returned);
failing on the submission (its reading, the competition's validation, the metric) is the
submission's, and raises :class:`~wmrl.tasks.InvalidSubmissionError` with the competition's own
message, as MLE-Dojo and MLE-bench treat any exception of their graders.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from wmrl.tasks import InvalidSubmissionError, Task

__all__ = ["LIMITS", "GradingError", "run_competition_code"]

RUNNER = Path(__file__).with_name("_competition_runner.py")
LIMITS = {"cpu_s": 600, "memory_mb": 16384, "file_mb": 1024, "wall_s": 1200.0}
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


class GradingError(RuntimeError):
    """The grader itself failed (its code, its answers): no grade is returned rather than a wrong one."""


def _environment(work: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8"}
    return env | dict.fromkeys(_THREAD_VARS, "1")


def run_competition_code(task: Task, submission: Path, limits: dict | None = None) -> tuple[float, bool | None]:
    """(raw score, the metric's own higher_is_better or None) of ``submission`` by ``task``'s own code."""
    limits = {**LIMITS, **(limits or {})}
    s = task.scoring
    spec = {"grader": s.grader, "code": s.code, "code_root": s.code_root, "entry": s.entry, "name": task.name,
            "answers": str(task.answers_path), "submission": str(Path(submission).resolve()),
            "limits": {k: int(limits[k]) for k in ("cpu_s", "memory_mb", "file_mb")}}
    with tempfile.TemporaryDirectory(prefix="wmrl-grade-") as work:
        (Path(work) / "spec.json").write_text(json.dumps(spec))
        proc = subprocess.Popen([sys.executable, "-I", "-B", str(RUNNER), "spec.json"], cwd=work,
                                env=_environment(work), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            _, stderr = proc.communicate(timeout=limits["wall_s"])
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            stderr = f"killed after {limits['wall_s']} s of wall-clock time".encode()
        try:
            result = json.loads((Path(work) / "result.json").read_text())
        except (OSError, ValueError):
            result = None
        scoring_started = (Path(work) / "phase").is_file()
    if result is None:
        tail = stderr.decode(errors="replace")[-600:].strip()
        if scoring_started:
            raise InvalidSubmissionError(f"grading the submission exceeded the grader's limits ({limits}; exit "
                                         f"{proc.returncode}): {tail}")
        raise GradingError(f"{task.name}: the competition's grading code died while loading (exit {proc.returncode}):"
                           f" {tail}")
    if result["phase"] == "load":
        raise GradingError(f"{task.name}: the competition's grading code {s.code} failed to load: {result['error']}. "
                           "Check that this Python has the packages it imports and that the files it reads exist.")
    if not result["ok"]:
        raise InvalidSubmissionError(result["error"])
    return float(result["score"]), result.get("higher_is_better")
