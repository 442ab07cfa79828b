"""``python -m bench.ray_overhead``: what the Ray executor costs against the local process pool.

The same small campaign (``--arms`` x ``--seeds`` at ``--preset``, from nothing each time) is trained
by ``python -m wmrl.experiments runs`` with ``--executor local:N`` and with ``--executor ray`` (one CPU
per run, so that every path runs N runs at once on N cores) two ways: on a Ray of the command's own,
started and stopped by it, and on a running Ray it joins (a head the benchmark starts with ``ray
start --head`` before that path and stops after it, untimed, as a cluster's user starts Ray once for
many campaigns). The paths alternate, ``--repeats`` rounds in one sitting, so that a drift of the
machine's speed falls on all. Each command's wall time counts everything its user waits for. The
ratios are paired (a Ray path's time over the local time of the same round); their medians are what
``results/bench/ray_overhead.json`` reports, with every time and its provenance.

Ray's cost splits into a fixed part, its start-up and shutdown (timed on its own each round: ``ray.init``
and ``ray.shutdown`` with the same CPUs), which a joined Ray does not pay, and a part per wave of runs
trained side by side (shipping the tasks, fresh worker processes, returning the run folders and their
records): ``(ray - local - start-up) / waves``, the median over rounds. The two extrapolate the ratio
to a campaign of longer runs (:func:`ratio_for`). A first round, untimed, warms the caches every path
reads (the pool's data, imported modules).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wmrl.experiments.costs import ray_wall_s, waves
from wmrl.provenance import REPO, provenance, write_json_atomic

__all__ = ["main", "paired_ratios", "per_wave_overhead", "ratio_for"]

OUT = REPO / "results" / "bench" / "ray_overhead.json"
JOIN_SETTLE_S = 5.0  # a started head's own workers come up before a campaign joins it, as on an idle cluster


def paired_ratios(ray_s: list[float], local_s: list[float]) -> list[float]:
    """Ray's wall time over the local one, round by round."""
    if len(ray_s) != len(local_s) or not ray_s:
        raise ValueError(f"need as many Ray as local times, at least one each; got {len(ray_s)} and {len(local_s)}")
    return [r / loc for r, loc in zip(ray_s, local_s)]


def per_wave_overhead(ray_s: list[float], local_s: list[float], startup_s: list[float], waves: int) -> float:
    """Ray's seconds per wave of runs beyond its start-up: the median over rounds of ``(ray - local - start-up) /
    waves``, a wave being the runs trained side by side."""
    if not (len(ray_s) == len(local_s) == len(startup_s) > 0) or waves < 1:
        raise ValueError("need as many Ray, local and start-up times, at least one each, and at least one wave")
    return statistics.median((r - loc - s) / waves for r, loc, s in zip(ray_s, local_s, startup_s))


def ratio_for(run_s: float, runs: int, at_once: int, startup_s: float, per_wave_s: float) -> float:
    """Ray's wall time over the local pool's for ``runs`` runs of ``run_s`` seconds, ``at_once`` at a time
    (:func:`wmrl.experiments.costs.ray_wall_s` over the local ``ceil(runs / at_once) * run_s``)."""
    ray = ray_wall_s(runs, run_s, at_once, {"median_startup_s": startup_s, "per_wave_overhead_s": per_wave_s})
    return ray / (waves(runs, at_once) * run_s)


def _python_s(code: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.PIPE)
    return time.perf_counter() - t0


def _startup(args) -> float:
    """Ray's fixed cost: importing it, starting it with the campaign's CPUs and shutting it down, over a bare
    interpreter's start (which both commands pay)."""
    ray = _python_s(f"import ray; ray.init(num_cpus={args.jobs}, include_dashboard=False, log_to_driver=False); "
                    "ray.shutdown()")
    return ray - _python_s("pass")


def _timed(executor: str, args, ray_address: str | None = None) -> float:
    scratch = Path(tempfile.mkdtemp(prefix="wmrl-ray-overhead-"))
    cmd = [sys.executable, "-m", "wmrl.experiments", "runs", "--arms", *args.arms, "--seeds", *map(str, args.seeds),
           "--preset", args.preset, "--results", str(scratch), "--executor", executor]
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "WMRL_EXECUTIONS")}
    if ray_address:
        env["RAY_ADDRESS"] = ray_address
    try:
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return time.perf_counter() - t0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _joined(args) -> float:
    """The campaign on a running Ray: a head of ``--jobs`` CPUs started before it and stopped after it, untimed."""
    ray = [str(Path(sys.executable).parent / "ray")]
    subprocess.run([*ray, "start", "--head", f"--num-cpus={args.jobs}", "--include-dashboard=false",
                    "--disable-usage-stats"], cwd=REPO, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(JOIN_SETTLE_S)
        return _timed("ray", args, ray_address="auto")
    finally:
        subprocess.run([*ray, "stop", "--force"], check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", nargs="+", default=["grpo", "wmrl"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--preset", default="smoke")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="runs at once (and cores used)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    _timed(f"local:{args.jobs}", args)  # warm-up, not counted
    local, ray, joined, startup = [], [], [], []
    for k in range(args.repeats):
        local.append(_timed(f"local:{args.jobs}", args))
        ray.append(_timed("ray", args))
        joined.append(_joined(args))
        startup.append(_startup(args))
        print(f"round {k + 1}: local {local[-1]:.1f} s, Ray of its own {ray[-1]:.1f} s, running Ray joined "
              f"{joined[-1]:.1f} s, Ray's start-up {startup[-1]:.1f} s", flush=True)
    ratios, joined_ratios = paired_ratios(ray, local), paired_ratios(joined, local)
    n_waves = waves(len(args.arms) * len(args.seeds), args.jobs)
    per_wave = per_wave_overhead(ray, local, startup, n_waves)
    per_wave_joined = per_wave_overhead(joined, local, [0.0] * len(joined), n_waves)
    write_json_atomic(args.out, {
        "campaign": {"arms": args.arms, "seeds": args.seeds, "preset": args.preset, "runs_at_once": args.jobs},
        "local_s": local, "ray_s": ray, "joined_s": joined, "startup_s": startup, "ratio_ray_over_local": ratios,
        "ratio_joined_over_local": joined_ratios, "median_ratio": statistics.median(ratios),
        "median_ratio_joined": statistics.median(joined_ratios), "median_startup_s": statistics.median(startup),
        "per_wave_overhead_s": per_wave, "per_wave_overhead_joined_s": per_wave_joined,
        "provenance": {**provenance(), "command": "python -m bench.ray_overhead " + " ".join(
            sys.argv[1:] if argv is None else argv)}})
    print(f"median wall time over the local pool's: {statistics.median(ratios):.3f} on a Ray of its own (start-up "
          f"{statistics.median(startup):.1f} s, {per_wave:.1f} s per wave of runs beyond it), "
          f"{statistics.median(joined_ratios):.3f} on a running Ray ({per_wave_joined:.1f} s per wave) ({args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
