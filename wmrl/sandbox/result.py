"""`ExecutionResult` and the one place that turns a finished process into a status.

Every backend (local, docker, ray) ends with the in-sandbox supervisor's JSON status plus the
host's grade of the submission; `classify` maps those to the contract's statuses so that the
reward ladder and the world model's training signal mean the same thing whatever ran the code.
"""
from __future__ import annotations

import signal as _signal
from dataclasses import asdict, dataclass

from wmrl.vocabulary import EXECUTION_STATUSES as STATUSES

__all__ = ["STATUSES", "ExecutionResult", "classify"]

# Signals that mean "ran out of time" (CPU rlimit) rather than "crashed".
_TIME_SIGNALS = {_signal.SIGXCPU}


@dataclass
class ExecutionResult:
    """Outcome of one real execution of a solution script (see docs/CONTRACTS.md)."""

    status: str
    error_type: str | None = None
    error_line: int | None = None
    stdout_tail: str = ""
    stderr_tail: str = ""
    wall_s: float = 0.0
    cpu_s: float = 0.0
    raw_score: float | None = None
    percentile: float | None = None
    isolation: str = ""
    reason: str = ""

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {STATUSES}")

    def to_dict(self) -> dict:
        return asdict(self)


def classify(status: dict, timed_out_on_host: bool) -> tuple[str, str | None, int | None, str]:
    """(status, error_type, error_line, reason) from the supervisor's status, before grading.

    Returns status "ok" when the process exited cleanly; the caller then grades the submission,
    which may turn it into no_submission or invalid_submission.
    """
    error_type, error_line = status.get("error_type"), status.get("error_line")
    sig, code = status.get("signal"), status.get("exit_code")
    message = status.get("message") or ""
    if timed_out_on_host or status.get("timed_out") or sig in _TIME_SIGNALS:
        return "timeout", None, None, "wall-clock or CPU time limit reached"
    if status.get("oom") or error_type == "MemoryError":
        return "oom", error_type, error_line, f"{error_type}: memory limit reached"
    if error_type == "SyntaxError" or error_type == "IndentationError" or error_type == "TabError":
        return "syntax_error", error_type, error_line, f"{error_type}: {message}"
    if (sig is not None or code) and status.get("oom_killed"):  # a process of the run was OOM-killed
        return "oom", error_type or "OOMKilled", error_line, "the kernel's OOM killer ended a process of the run"
    if sig is not None:
        name = _signal.Signals(sig).name
        if sig == _signal.SIGKILL:  # not our timeout kill: most likely the kernel's OOM killer
            return "oom", name, None, "killed by SIGKILL (out of memory)"
        return "runtime_error", name, error_line, f"terminated by {name}"
    if code:
        if error_type is None:
            return "runtime_error", f"ExitCode{code}", None, f"exited with status {code}"
        return "runtime_error", error_type, error_line, f"{error_type}: {message}"
    return "ok", None, None, "exited cleanly"
