"""``python -m bench.ray_overhead``: what the Ray executor costs against the local process pool.

The same small campaign (``--arms`` x ``--seeds`` at ``--preset``, from nothing each time) is trained
by ``python -m wmrl.experiments runs`` with ``--executor local:N`` and with ``--executor ray`` (a Ray
of the command's own on this machine, one CPU per run, so both run N runs at once on N cores),
alternately, ``--repeats`` times each in one sitting, so that a drift of the machine's speed falls on
both. Each command's wall time counts everything a user waits for: start-up, Ray's own, the runs and
writing their folders. The ratio is paired (Ray's time over the local time of the same round) and
its median is what ``results/bench/ray_overhead.json`` reports, with every time and its provenance.
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

from wmrl.provenance import REPO, provenance, write_json_atomic

__all__ = ["main", "paired_ratios"]

OUT = REPO / "results" / "bench" / "ray_overhead.json"


def paired_ratios(ray_s: list[float], local_s: list[float]) -> list[float]:
    """Ray's wall time over the local one, round by round."""
    if len(ray_s) != len(local_s) or not ray_s:
        raise ValueError(f"need as many Ray as local times, at least one each; got {len(ray_s)} and {len(local_s)}")
    return [r / loc for r, loc in zip(ray_s, local_s)]


def _timed(executor: str, args) -> float:
    scratch = Path(tempfile.mkdtemp(prefix="wmrl-ray-overhead-"))
    cmd = [sys.executable, "-m", "wmrl.experiments", "runs", "--arms", *args.arms, "--seeds", *map(str, args.seeds),
           "--preset", args.preset, "--results", str(scratch), "--executor", executor]
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "WMRL_EXECUTIONS")}
    try:
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return time.perf_counter() - t0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


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
    local, ray = [], []
    for k in range(args.repeats):
        local.append(_timed(f"local:{args.jobs}", args))
        ray.append(_timed("ray", args))
        print(f"round {k + 1}: local {local[-1]:.1f} s, ray {ray[-1]:.1f} s", flush=True)
    ratios = paired_ratios(ray, local)
    write_json_atomic(args.out, {
        "campaign": {"arms": args.arms, "seeds": args.seeds, "preset": args.preset, "runs_at_once": args.jobs},
        "local_s": local, "ray_s": ray, "ratio_ray_over_local": ratios,
        "median_ratio": statistics.median(ratios),
        "provenance": {**provenance(), "command": "python -m bench.ray_overhead " + " ".join(
            sys.argv[1:] if argv is None else argv)}})
    print(f"median Ray / local wall time: {statistics.median(ratios):.3f} ({args.out})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
