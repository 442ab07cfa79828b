"""The compute ledger: where a training step's seconds go.

The paper's whole argument is an accounting one (execution dominates; a world model is cheap), and
the reviews' main complaint is that the accounting is not shown. The ledger keeps two numbers per
component of every step:

- ``actual_s``: wall-clock seconds this process really spent;
- ``charged_s``: the compute the step is billed, in CPU seconds, so that the bill of a run does
  not depend on what else the machine was doing (the analog of the paper's GPU-hours). A timed
  block is charged this process's CPU time; an execution is charged the CPU seconds of the
  solution's process tree, and one served from the execution memo is charged the measured cost
  of the real run it reuses, so that memoised and un-memoised runs are billed alike.
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager

import pandas as pd

__all__ = ["COMPONENTS", "ComputeLedger"]

COMPONENTS = ("generation", "world_model", "execution", "update")


class ComputeLedger:
    """Per-step, per-component actual and charged seconds.

    >>> ledger = ComputeLedger()
    >>> with ledger.time("generation"):
    ...     pass
    >>> ledger.charge("execution", actual_s=0.001, charged_s=2.5)  # a memo hit
    >>> ledger.end_step()
    >>> ledger.to_frame().columns.tolist()
    ['step', 'component', 'actual_s', 'charged_s', 'count']
    """

    def __init__(self):
        self.step = 0
        self._open: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
        self._rows: list[dict] = []

    @contextmanager
    def time(self, component: str, count: int = 1):
        """Time a block: actual seconds are its wall time, charged seconds this process's CPU time in it."""
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.charge(component, time.perf_counter() - t0, time.process_time() - c0, count)

    def charge(self, component: str, actual_s: float, charged_s: float | None = None, count: int = 1) -> None:
        """Add seconds to a component of the current step (charged defaults to actual)."""
        if component not in COMPONENTS:
            raise ValueError(f"unknown component {component!r}; expected one of {COMPONENTS}")
        charged_s = actual_s if charged_s is None else charged_s
        if actual_s < 0 or charged_s < 0:
            raise ValueError(f"seconds must be >= 0, got actual={actual_s}, charged={charged_s}")
        acc = self._open[component]
        acc[0] += actual_s
        acc[1] += charged_s
        acc[2] += count

    def end_step(self) -> None:
        """Close the current step: every component gets a row, zero if unused."""
        for c in COMPONENTS:
            a, ch, n = self._open.get(c, (0.0, 0.0, 0))
            self._rows.append({"step": self.step, "component": c, "actual_s": a, "charged_s": ch, "count": n})
        self._open.clear()
        self.step += 1

    def to_frame(self) -> pd.DataFrame:
        """Long table ``step, component, actual_s, charged_s, count`` of the closed steps."""
        return pd.DataFrame(self._rows, columns=["step", "component", "actual_s", "charged_s", "count"])

    def totals(self) -> pd.DataFrame:
        """Seconds per component summed over steps."""
        return self.to_frame().groupby("component")[["actual_s", "charged_s", "count"]].sum()

    def state_dict(self) -> dict:
        return {"step": self.step, "rows": list(self._rows)}

    def load_state_dict(self, state: dict) -> None:
        self.step, self._rows = state["step"], list(state["rows"])
        self._open.clear()
