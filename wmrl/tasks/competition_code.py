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

A grader that cannot import a module says which one and what to install: the packages each
benchmark's graders import beyond wmrl's own dependencies are the optional extra of the same name
in pyproject.toml (``mlebench``, ``mledojo``; DSBench's scripts import only what wmrl needs
anyway). :func:`check_sample` grades a competition's sample submission once, so that the import
step (:func:`wmrl.tasks.read_competitions`) refuses a grader that cannot load, by name, before
any training starts, rather than the first execution of a run failing on it.

This lives in :mod:`wmrl.tasks`, below :mod:`wmrl.grading` (which turns its raw scores into
grades), because the import step needs it and may not import the layer above.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from wmrl.tasks.metrics import InvalidSubmissionError
from wmrl.tasks.task import Task

__all__ = ["EXTRA_MODULES", "LIMITS", "GradingError", "check_sample", "install_hint", "run_competition_code"]

RUNNER = Path(__file__).with_name("_competition_runner.py")
LIMITS = {"cpu_s": 600, "memory_mb": 16384, "file_mb": 1024, "wall_s": 1200.0}
_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")
#: grader (= the extra of pyproject.toml that installs it) -> (benchmark, the top-level modules its
#: grading code imports that wmrl's own dependencies lack). The pins live in pyproject.toml only;
#: tests/test_grader_imports.py checks that each module here is provided by a package of that extra.
#: MLE-bench: ``mlebench/utils.py`` imports py7zr at module level and every grader reaches it
#: (through ``mlebench.competitions.utils`` or ``mlebench.grade_helpers``); Levenshtein, pyquaternion,
#: shapely and pycocotools are imported by a few competitions' grade.py (tensorflow only by two
#: competitions' prepare.py, so it is left out). MLE-Dojo: Levenshtein, in two utils/metric.py.
EXTRA_MODULES = {
    "mlebench": ("MLE-bench", ("py7zr", "Levenshtein", "pyquaternion", "shapely", "pycocotools")),
    "mledojo": ("MLE-Dojo", ("Levenshtein",)),
}


class GradingError(RuntimeError):
    """The grader itself failed (its code, its answers): no grade is returned rather than a wrong one."""


def _environment(work: str) -> dict[str, str]:
    env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": work, "TMPDIR": work, "LANG": "C.UTF-8"}
    return env | dict.fromkeys(_THREAD_VARS, "1")


def install_hint(grader: str, module: str | None) -> str:
    """What to install so that ``grader``'s code finds ``module`` (the name an ImportError gave)."""
    if not module:
        return ("Check that this Python has the packages it imports, at the versions it needs, and that the files it "
                "reads exist.")
    top = module.split(".")[0]
    benchmark, modules = EXTRA_MODULES.get(grader, (grader, ()))
    if top in modules:
        return (f"Install what {benchmark}'s graders import into the Python that grades ({sys.executable}): "
                f"pip install -e '.[{grader}]' in wmrl's checkout (pyproject.toml's {grader} extra).")
    return (f"Install the package that provides the module {top!r} into the Python that grades ({sys.executable}); "
            f"wmrl's {grader} extra does not cover it.")


def run_competition_code(task: Task, submission: Path, limits: dict | None = None) -> float:
    """The raw score of ``submission`` by ``task``'s own code.

    Raises :class:`GradingError` when the code fails to load (naming a missing module and what to
    install) or when a metric's own ``higher_is_better`` contradicts the task's, and
    :class:`~wmrl.tasks.InvalidSubmissionError` when the code rejects the submission.
    """
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
        raise GradingError(f"{task.name}: the competition's grading code died while loading (exit {proc.returncode}; "
                           f"its limits, loading included: {limits}): {tail}")
    if result["phase"] == "load":
        raise GradingError(f"{task.name}: the competition's grading code {s.code} failed to load: {result['error']}. "
                           + install_hint(s.grader, result.get("missing_module")))
    if not result["ok"]:
        raise InvalidSubmissionError(result["error"])
    higher = result.get("higher_is_better")
    if higher is not None and higher != task.higher_is_better:
        raise GradingError(f"{task.name}: the metric's higher_is_better is {higher} when it runs but "
                           f"{task.higher_is_better} in the pool; import the competition again")
    return float(result["score"])


def check_sample(task: Task, limits: dict | None = None) -> dict:
    """Grade ``task``'s sample submission once with its own code: raises GradingError when the code cannot.

    Returns ``{"status": "ok", "raw_score": float}``, or ``{"status": "invalid_submission", "reason":
    str}`` when the competition's code loads but rejects its own sample (e.g. DSBench's sample rows
    need not be the re-split test rows): the grader works, the sample is merely not a valid answer.
    """
    try:
        raw = run_competition_code(task, task.sample_submission_path, limits)
    except InvalidSubmissionError as exc:
        return {"status": "invalid_submission", "reason": str(exc)}
    digits = task.scoring.round_digits
    return {"status": "ok", "raw_score": round(raw, digits) if digits is not None else raw}
