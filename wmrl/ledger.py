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

Seconds that are *not* a run's cost are recorded apart (:data:`APART`): ``oracle``, the real
executions an analysis instrument needs to know the truth (the oracle-derived world model of
:mod:`wmrl.world_model.oracle`; ``count`` the scripts it executed, ``charged_s`` their CPU seconds,
``actual_s`` the wall seconds of its lookups). They are kept in their own table (:meth:`ComputeLedger.apart_frame`,
:meth:`ComputeLedger.apart_totals`), never in :meth:`~ComputeLedger.to_frame` or
:meth:`~ComputeLedger.totals`, so no sum of a run's cost can include them by accident.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from contextlib import contextmanager

import pandas as pd

from wmrl import record as clock

__all__ = ["APART", "COMPONENTS", "ComputeLedger", "shared_share"]

COMPONENTS = ("generation", "world_model", "execution", "update")
#: Seconds recorded beside a run's cost, never in it (see the module docstring).
APART = ("oracle",)


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
        self._apart: list[dict] = []

    @contextmanager
    def time(self, component: str, count: int = 1):
        """Time a block: actual seconds are its wall time, charged seconds this process's CPU time in it."""
        t0, c0 = clock.wall(), clock.cpu()
        try:
            yield
        finally:
            self.charge(component, clock.wall() - t0, clock.cpu() - c0, count)

    def charge(self, component: str, actual_s: float, charged_s: float | None = None, count: int = 1) -> None:
        """Add seconds to a component of the current step (charged defaults to actual); a component of
        :data:`APART` is recorded beside the run's cost."""
        if component not in COMPONENTS + APART:
            raise ValueError(f"unknown component {component!r}; expected one of {COMPONENTS} (or, recorded apart "
                             f"from the cost, {APART})")
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
        for c in APART:  # only the runs that record one get its rows
            if c in self._open:
                a, ch, n = self._open[c]
                self._apart.append({"step": self.step, "component": c, "actual_s": a, "charged_s": ch, "count": n})
        self._open.clear()
        self.step += 1

    def to_frame(self) -> pd.DataFrame:
        """Long table ``step, component, actual_s, charged_s, count`` of the closed steps."""
        return pd.DataFrame(self._rows, columns=["step", "component", "actual_s", "charged_s", "count"])

    def totals(self) -> pd.DataFrame:
        """Seconds per component summed over steps."""
        return self.to_frame().groupby("component")[["actual_s", "charged_s", "count"]].sum()

    def apart_frame(self) -> pd.DataFrame:
        """The seconds recorded apart (:data:`APART`), in :meth:`to_frame`'s columns; empty if none."""
        return pd.DataFrame(self._apart, columns=["step", "component", "actual_s", "charged_s", "count"])

    def apart_totals(self) -> dict[str, dict]:
        """``{component: {"actual_s", "charged_s", "count"}}`` of the seconds recorded apart, summed over steps."""
        t = self.apart_frame().groupby("component")[["actual_s", "charged_s", "count"]].sum()
        return {c: {"actual_s": float(r.actual_s), "charged_s": float(r.charged_s), "count": int(r["count"])}
                for c, r in t.iterrows()}

    def state_dict(self) -> dict:
        return {"step": self.step, "rows": list(self._rows), "apart": list(self._apart)}

    @classmethod
    def from_state_dict(cls, state: dict) -> ComputeLedger:
        """A ledger holding ``state`` (:meth:`state_dict`'s)."""
        ledger = cls()
        ledger.load_state_dict(state)
        return ledger

    @classmethod
    def summed(cls, ledgers) -> ComputeLedger:
        """One ledger of the closed steps of ``ledgers``, each step's seconds and counts summed per component.

        The bill of a run of several processes: each process keeps the ledger of its own work (its
        share of the generation, the executions, the update), and the run's cost is their sum, as a
        GPU-hour bill sums its cards. A step some ledger did not reach counts the others' rows only.
        """
        ledgers = list(ledgers)
        if not ledgers:
            raise ValueError("summed() needs at least one ledger")
        order = {c: i for i, c in enumerate(COMPONENTS + APART)}
        out = cls()
        for attr in ("_rows", "_apart"):
            acc: dict[tuple, dict] = {}
            for ledger in ledgers:
                for r in getattr(ledger, attr):
                    row = acc.setdefault((r["step"], r["component"]), {
                        "step": r["step"], "component": r["component"], "actual_s": 0.0, "charged_s": 0.0, "count": 0})
                    row["actual_s"] += r["actual_s"]
                    row["charged_s"] += r["charged_s"]
                    row["count"] += r["count"]
            setattr(out, attr, sorted(acc.values(), key=lambda r: (r["step"], order[r["component"]])))
        out.step = max(ledger.step for ledger in ledgers)
        return out

    def load_state_dict(self, state: dict) -> None:
        self.step, self._rows, self._apart = state["step"], list(state["rows"]), list(state.get("apart", []))
        self._open.clear()


def shared_share(spans_by_process, me: int) -> float:
    """Process ``me``'s share of a shared server's busy seconds: each instant at which some process had a call
    open counts once, split equally among the processes with a call open then.

    ``spans_by_process[i]`` lists process ``i``'s calls as ``(start, end)`` wall-clock times. The shares of all
    processes add up to the length of the union of every span, so a server that several processes (or one
    process's concurrent calls) kept busy at once is billed its time once, not once per caller.
    """
    edges = sorted({t for spans in spans_by_process for span in spans for t in span})
    share = 0.0
    for lo, hi in itertools.pairwise(edges):
        mid = (lo + hi) / 2
        busy = [any(a <= mid < b for a, b in spans) for spans in spans_by_process]
        if busy[me]:
            share += (hi - lo) / sum(busy)
    return share
