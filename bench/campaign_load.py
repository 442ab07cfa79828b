"""``python -m bench.campaign_load``: does a short campaign give the same numbers idle and busy?

The goal for ``make reproduce``: the same seed gives the same numbers idle or busy. The
sandbox's budget counts the solution's CPU seconds, so contention does not turn valid scripts
into timeouts, but a script whose CPU time lies within its own jitter of the budget can still
finish in one run and time out in the other, and the run diverges from there. This benchmark (in
``make bench``; not a timed test) trains the same runs twice, as the machine is and then beside
``--load`` busy loops, each into a folder of its own with a fresh execution memo, and prints per
run the held-out Avg both ways, and over the scripts both runs executed (each run's memo holds
every (task, script) it ran, once) the share whose outcome (status, limit, percentile) changed;
scripts that only one of the two runs met measure how far the runs diverged.
(``python -m bench.sandbox_load`` measures the same jitter on a fixed set of scripts.)
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import tempfile
from pathlib import Path

import pandas as pd

from bench.sandbox import busy_load
from wmrl.experiments.run import run_arm

__all__ = ["compare_memos", "main", "memo_outcomes", "train_idle_and_busy"]


def memo_outcomes(path: str | Path) -> dict[str, tuple]:
    """Every execution an :class:`~wmrl.trainer.memo.ExecutionMemo` file holds: key -> (status, limit, percentile)."""
    with sqlite3.connect(Path(path)) as db:
        rows = db.execute("SELECT key, result FROM runs").fetchall()
    return {key: (r.get("status"), r.get("limit"), r.get("percentile")) for key, r in
            ((key, json.loads(text)) for key, text in rows)}


def compare_memos(a: str | Path, b: str | Path) -> dict:
    """The executions two runs' memos share, how many of those changed outcome, and how many only one holds."""
    x, y = memo_outcomes(a), memo_outcomes(b)
    common = x.keys() & y.keys()
    changed = sum(x[k] != y[k] for k in common)
    return {"common": len(common), "changed": changed, "changed_share": changed / len(common) if common else float("nan"),
            "only_one": len(x.keys() ^ y.keys())}


def train_idle_and_busy(arms, seeds, preset: str, load: int, out: str | Path) -> pd.DataFrame:
    """Train every (arm, seed) as the machine is, then again beside ``load`` busy loops; one row per run."""
    out = Path(out)
    rows = []
    for arm in arms:
        for seed in seeds:
            runs = {}
            for condition in ("idle", "busy"):
                folder = out / condition / arm / f"seed{seed}"
                with busy_load(load if condition == "busy" else 0):  # a sandbox worker per core, as a campaign's
                    runs[condition] = run_arm(arm, preset, seed, folder, progress=False,
                                              overrides={"sandbox.workers": os.cpu_count() or 1})
            memos = compare_memos(*(out / c / arm / f"seed{seed}" / "memo.sqlite" for c in ("idle", "busy")))
            idle, busy = (runs[c]["heldout"]["avg"] * 100 for c in ("idle", "busy"))
            rows.append({"arm": arm, "seed": seed, "avg_idle": idle, "avg_busy": busy, "diff": busy - idle,
                         "wall_idle_s": runs["idle"]["wall_s"], "wall_busy_s": runs["busy"]["wall_s"], **memos})
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(prog="python -m bench.campaign_load", description=__doc__.splitlines()[0])
    parser.add_argument("--arms", nargs="+", default=["wmrl"], help="arms to train (default: wmrl)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="seeds (default: 0)")
    parser.add_argument("--preset", default="small", help="a grammar preset of wmrl/presets.py (default: small)")
    parser.add_argument("--load", type=int, default=2, help="busy loops beside the busy runs (default 2: one a core)")
    parser.add_argument("--out", default=None, help="where the runs go (default: a temporary folder, removed after)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="wmrl-campaign-load-") as tmp:
        table = train_idle_and_busy(args.arms, args.seeds, args.preset, args.load, args.out or tmp)
    print(f"campaign idle vs beside {args.load} busy loop(s), preset {args.preset}:")
    with pd.option_context("display.width", 200):
        print(table.round(4).to_string(index=False))
    print(f"largest per-run difference in held-out Avg: {table['diff'].abs().max():.2f} points; executions both runs "
          f"made whose outcome changed: {table.changed.sum()} of {table.common.sum()} "
          f"({table.changed.sum() / max(table.common.sum(), 1):.2%}); executions only one run made: {table.only_one.sum()}")
    return table


if __name__ == "__main__":
    main()
