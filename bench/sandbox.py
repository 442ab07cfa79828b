"""Sandbox benchmark: ``python -m bench.sandbox [--repeats N] [--backend local|docker]``.

Prints (1) the overhead of a sandboxed run against plain ``python script.py`` on the same
one-second script (goal: median wall at most 1.2x), (2) the throughput of ``run_many`` with
2 workers against sequential runs, and, for the local backend, (3) the cold and the warm
launcher side by side: per-run wall and solution CPU (``cpu_s``) on a trivial script and on one
that imports pandas and scikit-learn, and ``run_many`` throughput on the latter. ``BENCHES``
puts the same measurements into ``make bench`` (``bench/micro.py``). A benchmark, not a test: the
numbers depend on the machine's load; ``cpu_s`` much less so than wall.

``load_agreement(jobs, load)`` asks whether outcomes depend on the load: any list of ``(task,
code)`` runs as the machine is, then again beside ``load`` busy loops, and ``print_agreement``
prints the largest CPU-time difference and the share of executions whose outcome changed. ``make
bench`` runs it on a fixed set of the agent's scripts (``python -m bench.sandbox_load``,
outside the package, which this module sits below).
"""
from __future__ import annotations

import argparse
import atexit
import contextlib
import functools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.harness import Bench
from wmrl.sandbox.runner import Sandbox
from wmrl.sandbox.toy import make_toy_task, toy_grade, toy_solution

__all__ = ["BENCHES", "IMPORTS_SCRIPT", "ONE_SECOND_SCRIPT", "TRIVIAL_SCRIPT", "busy_load", "load_agreement",
           "main", "print_agreement"]

ONE_SECOND_SCRIPT = """
import csv, os, time
start = time.perf_counter()
while time.perf_counter() - start < 1.0:  # one second of pure-Python work
    pass
with open(os.path.join(os.environ.get("DATA_DIR", "."), "test.csv")) as fh:
    ids = [row["id"] for row in csv.DictReader(fh)]
with open(os.environ.get("SUBMISSION_PATH", "submission.csv"), "w") as fh:
    fh.write("id,y\\n" + "".join(f"{i},1\\n" for i in ids))
"""
TRIVIAL_SCRIPT = toy_solution()
# What every generated solution starts with: the import cost the warm launcher saves.
IMPORTS_SCRIPT = """
import os
import pandas as pd
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
test = pd.read_csv(os.path.join(os.environ["DATA_DIR"], "test.csv"))
pd.DataFrame({"id": test["id"], "y": 1}).to_csv(os.environ["SUBMISSION_PATH"], index=False)
"""


@functools.lru_cache(maxsize=4)
def _setup(backend: str = "local", warm: bool = True):
    """(plain run, sandboxed run, sandbox, task), built once; the folder goes at exit."""
    tmp = Path(tempfile.mkdtemp(prefix="wmrl-bench-"))
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)
    task = make_toy_task(tmp / "pool")
    script = tmp / "script.py"
    script.write_text(ONE_SECOND_SCRIPT)
    env = {"DATA_DIR": str(task.public_dir), "SUBMISSION_PATH": str(tmp / "submission.csv")}
    sandbox = Sandbox(backend, timeout_s=60, grader=toy_grade, warm=warm)
    sandbox.run(task, ONE_SECOND_SCRIPT)  # warm-up: probes namespaces, fills the page cache, starts a server
    plain = functools.partial(subprocess.run, [sys.executable, str(script)], env=env, check=True)
    return plain, functools.partial(sandbox.run, task, ONE_SECOND_SCRIPT), sandbox, task


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _run(warm: bool, code: str):
    sandbox, task = _setup("local", warm)[2:]
    return functools.partial(sandbox.run, task, code)


BENCHES = [  # the same measurements for `make bench`; the setup runs when they are timed
    Bench("plain `python script.py` (1 s script)", lambda: _setup()[0], slow=True),
    Bench("Sandbox.run, local (same script)", lambda: _setup()[1], slow=True, note="goal: <= 1.2x plain"),
    Bench("Sandbox.run_many, 4 runs, 2 workers", lambda: functools.partial(
        _setup()[2].run_many, [(_setup()[3], ONE_SECOND_SCRIPT)] * 4, max_workers=2), slow=True),
    *(Bench(f"Sandbox.run, local {mode}, pandas+sklearn imports", functools.partial(_run, mode == "warm", IMPORTS_SCRIPT),
            slow=True) for mode in ("cold", "warm")),
]


def _launchers(task, repeats: int) -> dict:
    """Cold against warm: median wall and solution CPU per script, and run_many throughput."""
    report = {}
    for warm in (False, True):
        sandbox = _setup("local", warm)[2]
        mode = "warm" if warm else "cold"
        for name, code in (("trivial", TRIVIAL_SCRIPT), ("imports", IMPORTS_SCRIPT)):
            results = [sandbox.run(task, code) for _ in range(repeats)]
            assert all(r.status == "ok" for r in results), [r.reason for r in results]
            report[f"{mode}_{name}_wall_s"] = statistics.median(r.wall_s for r in results)
            report[f"{mode}_{name}_cpu_s"] = statistics.median(r.cpu_s for r in results)
        jobs = [(task, IMPORTS_SCRIPT)] * (2 * repeats)
        report[f"{mode}_run_many_2_runs_per_s"] = len(jobs) / _timed(functools.partial(sandbox.run_many, jobs, 2))
    return report


@contextlib.contextmanager
def busy_load(processes: int):
    """``processes`` pure-Python busy loops running beside the caller (the "other work"), then stopped."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True:\n    pass"], stdin=subprocess.DEVNULL)
             for _ in range(processes)]
    try:
        time.sleep(0.5 if procs else 0.0)  # let them start before anything is measured
        yield procs
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()


def _outcome(result) -> tuple:
    return result.status, result.limit, result.percentile


def load_agreement(jobs: list[tuple], load: int = 1, sandbox: Sandbox | None = None, repeats: int = 1,
                   max_workers: int = 1) -> dict:
    """Run ``jobs`` as the machine is, then ``repeats`` more times beside ``load`` busy loops; compare.

    ``sandbox`` defaults to the small preset's (2 CPU seconds, local, warm). An execution's
    outcome is (status, limit, percentile); the reference for each job is its first run without
    added load, so ``idle_flip_share`` (the other runs without load) is the repeatability floor
    and ``busy_flip_share`` what the load adds. CPU-time differences are between per-job medians,
    over the jobs that finished within the budget both ways.
    """
    sandbox = sandbox or Sandbox("local", timeout_s=2.0, memory_mb=2048)
    jobs = list(jobs)
    if not jobs:
        raise ValueError("load_agreement needs at least one (task, code) job")
    idle = [sandbox.run_many(jobs, max_workers) for _ in range(repeats)]
    with busy_load(load):
        busy = [sandbox.run_many(jobs, max_workers) for _ in range(repeats)]
    reference = [_outcome(r) for r in idle[0]]
    idle_flips = sum(_outcome(run[i]) != reference[i] for run in idle[1:] for i in range(len(jobs)))
    busy_flips = sum(_outcome(run[i]) != reference[i] for run in busy for i in range(len(jobs)))
    diffs = []
    for i in range(len(jobs)):
        quiet, loaded = [run[i] for run in idle], [run[i] for run in busy]
        if all(r.limit is None for r in quiet + loaded):
            a, b = statistics.median(r.cpu_s for r in quiet), statistics.median(r.cpu_s for r in loaded)
            diffs.append((abs(b - a), (b - a) / max(a, 1e-3), i))
    largest = max(diffs, default=(0.0, 0.0, None))
    return {"jobs": len(jobs), "load": load, "repeats": repeats, "budget_s": sandbox.limits.timeout_s,
            "idle_flip_share": idle_flips / (len(jobs) * (repeats - 1)) if repeats > 1 else None,
            "busy_flip_share": busy_flips / (len(jobs) * repeats),
            "max_cpu_diff_s": largest[0], "max_cpu_rel_diff": largest[1], "max_cpu_diff_job": largest[2],
            "median_cpu_rel_diff": statistics.median([d[1] for d in diffs]) if diffs else 0.0,
            "loadavg": os.getloadavg(), "idle": idle, "busy": busy}


def print_agreement(report: dict) -> None:
    print(f"idle vs busy: {report['jobs']} scripts x {report['repeats']}, budget {report['budget_s']:g} CPU s, "
          f"{report['load']} busy loop(s) beside the busy runs (load average now {report['loadavg'][0]:.1f})")
    print(f"  largest CPU-time difference (medians, finished both ways): {report['max_cpu_diff_s']:.3f} s "
          f"({report['max_cpu_rel_diff']:+.1%}); median relative difference {report['median_cpu_rel_diff']:+.1%}")
    floor = (f"{report['idle_flip_share']:.1%} between runs without added load" if report["repeats"] > 1
             else "no repeatability floor (one run each)")
    print(f"  executions whose outcome changed: {report['busy_flip_share']:.1%} under load, {floor}")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    args = parser.parse_args(argv)
    plain_run, sandbox_run, sandbox, task = _setup(args.backend)
    plain = [_timed(plain_run) for _ in range(args.repeats)]
    boxed = [_timed(sandbox_run) for _ in range(args.repeats)]
    jobs = [(task, ONE_SECOND_SCRIPT)] * (2 * args.repeats)
    sequential = _timed(lambda: [sandbox.run(*job) for job in jobs])
    parallel = _timed(lambda: sandbox.run_many(jobs, max_workers=2))
    report = {"plain_median_s": statistics.median(plain), "sandbox_median_s": statistics.median(boxed),
              "overhead_ratio": statistics.median(boxed) / statistics.median(plain),
              "sequential_runs_per_s": len(jobs) / sequential, "run_many_2_runs_per_s": len(jobs) / parallel,
              "speedup": sequential / parallel, "isolation": sandbox.isolation}
    print(f"backend {args.backend} ({report['isolation']})")
    print(f"overhead: plain python {report['plain_median_s']:.3f} s, sandbox {report['sandbox_median_s']:.3f} s "
          f"(median of {args.repeats}) -> {report['overhead_ratio']:.2f}x (goal <= 1.20x)")
    print(f"throughput: sequential {report['sequential_runs_per_s']:.2f} runs/s, run_many(2 workers) "
          f"{report['run_many_2_runs_per_s']:.2f} runs/s -> {report['speedup']:.2f}x on {len(jobs)} runs")
    if args.backend == "local":
        report.update(_launchers(task, args.repeats))
        print(f"launchers (median of {args.repeats}; cpu = the solution's own CPU time):")
        for name in ("trivial", "imports"):
            cold, warm = (f"{m}_{name}" for m in ("cold", "warm"))
            print(f"  {name:8s} cold wall {report[cold + '_wall_s']:.3f} s cpu {report[cold + '_cpu_s']:.3f} s | "
                  f"warm wall {report[warm + '_wall_s']:.3f} s cpu {report[warm + '_cpu_s']:.3f} s")
        print(f"  run_many(2 workers), imports script: cold {report['cold_run_many_2_runs_per_s']:.2f} runs/s, "
              f"warm {report['warm_run_many_2_runs_per_s']:.2f} runs/s")
    return report


if __name__ == "__main__":
    main()
