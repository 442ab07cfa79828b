"""The micro-benchmark harness: what a benchmark is and how it is timed.

Timing is timeit's: each benchmark is called ``number`` times per repeat (chosen so a repeat
takes ~20 ms), and the median over repeats is reported, both in wall-clock and in this process's
CPU time. Goals are judged on the CPU median: on a machine shared with other jobs the wall clock
mostly measures the queue for a core, while CPU time measures what the code costs.

The benchmark modules (``bench.micro``, ``bench.sandbox``, ``bench.vla``) declare their ``BENCHES``
with it, and ``python -m bench.micro`` collects and runs them.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import statistics
import time
import timeit
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Bench", "Result", "fmt", "profile", "run_bench"]


@dataclass(frozen=True)
class Bench:
    """One benchmark. ``setup()`` builds the state (untimed) and returns the callable to time."""

    name: str
    setup: Callable[[], Callable[[], object]]
    goal_s: float | None = None
    slow: bool = False
    note: str = ""


@dataclass(frozen=True)
class Result:
    """One benchmark's timing; ``ok`` judges the goal on the CPU median."""

    name: str
    median_s: float  # wall clock
    min_s: float  # wall clock
    cpu_median_s: float  # process CPU time
    calls: int
    goal_s: float | None

    @property
    def ok(self) -> bool | None:
        return None if self.goal_s is None else self.cpu_median_s < self.goal_s


def run_bench(bench: Bench, repeat: int = 15, target_s: float = 0.02) -> Result:
    """Median seconds per call over ``repeat`` repeats of ``number`` calls (~``target_s`` each)."""
    fn = bench.setup()
    timer, cpu_timer = timeit.Timer(fn), timeit.Timer(fn, timer=time.process_time)
    if bench.slow:
        number, repeat = 1, 3
    else:
        n, t = timer.autorange()  # n calls take t >= 0.2 s
        number = max(1, int(n * target_s / t))
    times = [t / number for t in timer.repeat(repeat=repeat, number=number)]
    cpu = [t / number for t in cpu_timer.repeat(repeat=repeat, number=number)]
    return Result(bench.name, statistics.median(times), min(times), statistics.median(cpu), number, bench.goal_s)


def profile(bench: Bench, top: int = 8) -> str:
    """The ``top`` functions by cumulative time over many calls: where a missed goal's time goes."""
    fn = bench.setup()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(200 if not bench.slow else 1):
        fn()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def fmt(s: float) -> str:
    """Seconds in the unit that reads best (us, ms or s), right-aligned."""
    return f"{s * 1e6:9.1f} us" if s < 1e-3 else f"{s * 1e3:9.2f} ms" if s < 1 else f"{s:9.2f} s "
