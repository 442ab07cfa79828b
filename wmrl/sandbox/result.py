"""`ExecutionResult` and the one place that turns a finished process into a status.

Every backend (local, docker, ray) ends with the in-sandbox supervisor's JSON status plus the
host's grade of the submission; `classify` maps those to the contract's statuses so that the
reward ladder and the world model's training signal mean the same thing whatever ran the code.
"""
from __future__ import annotations

import signal as _signal
from dataclasses import asdict, dataclass

from wmrl.vocabulary import EXECUTION_STATUSES as STATUSES

__all__ = ["LIMITS", "STATUSES", "ExecutionResult", "classify", "timeout_limit"]

# Signals that mean "ran out of CPU time" (the per-process CPU rlimit) rather than "crashed".
_TIME_SIGNALS = {_signal.SIGXCPU}
LIMITS = ("cpu", "wall")  # which budget ended a timeout: the tree's CPU seconds, or the wall-clock backstop


@dataclass
class ExecutionResult:
    """Outcome of one real execution of a solution script (see docs/CONTRACTS.md).

    ``cpu_s`` is the CPU time of the solution's whole process tree (the budget's measure),
    ``wall_s`` the host's wall time for the run; ``limit`` is "cpu" or "wall" for a timeout.
    """

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
    limit: str | None = None

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {STATUSES}")
        if self.limit not in (None, *LIMITS):
            raise ValueError(f"unknown limit {self.limit!r}; expected None or one of {LIMITS}")

    def to_dict(self) -> dict:
        return asdict(self)


def classify(status: dict, timed_out_on_host: bool, limits=None) -> tuple[str, str | None, int | None, str]:
    """(status, error_type, error_line, reason) from the supervisor's status, before grading.

    Returns status "ok" when the process exited cleanly; the caller then grades the submission,
    which may turn it into no_submission or invalid_submission. A timeout's reason starts with
    the limit that fired (see ``timeout_limit``); ``limits`` (a ``Limits``) only adds its numbers.
    """
    error_type, error_line = status.get("error_type"), status.get("error_line")
    sig, code = status.get("signal"), status.get("exit_code")
    message = status.get("message") or ""
    limit = timeout_limit(status, timed_out_on_host)
    if limit is not None:
        cpu, wall = status.get("cpu_s") or 0.0, status.get("wall_s") or 0.0
        if limit == "cpu":
            budget = f" of {limits.timeout_s:g}" if limits else ""
            return "timeout", None, None, (f"CPU time budget{budget} s reached: the solution's processes used "
                                           f"{cpu:.2f} CPU s ({status.get('cpu_source', '?')} account)")
        backstop = f" of {limits.wall_timeout_s:g} s" if limits else ""
        where = " (the host killed the stuck supervisor)" if timed_out_on_host else ""
        return "timeout", None, None, (f"wall-clock backstop{backstop} reached after {wall:.1f} s with only {cpu:.2f} "
                                       f"CPU s used: the program slept or blocked{where}")
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


def timeout_limit(status: dict, timed_out_on_host: bool) -> str | None:
    """Which limit ended the run ("cpu" or "wall"), or None when none did."""
    if timed_out_on_host:
        return "wall"
    if status.get("timed_out") in LIMITS:
        return status["timed_out"]
    if status.get("signal") in _TIME_SIGNALS:
        return "cpu"
    return None
