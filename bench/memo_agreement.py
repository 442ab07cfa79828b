"""``python -m bench.memo_agreement REFERENCE OTHER...``: is executing a script repeatable?

Answered from executions already made: a script that two execution memos both
hold (the same task, code, pool and budget: the memo's key) was run twice, at different times and
under whatever load the machine had then. This compares every such pair of executions: how often
the status changed (ok once, timeout the next: the budget is CPU seconds, and a script's CPU time
moves with the load on the machine), how often an ok script scored differently, and by what factor
the CPU seconds of the two executions differ. A run folder's ``memo.sqlite`` (``sandbox.memo =
"run"``, the default) holds that run's own executions; the data root's ``memo.sqlite`` holds the
shared memo (``sandbox.memo = "shared"``, and the oracle-derived world model's truth).
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["compare_memos", "main", "read_memo"]

#: CPU seconds both executions must exceed for their ratio to count: below it, start-up noise dominates.
MIN_CPU_S = 0.3


def read_memo(path: str | Path) -> dict[str, dict]:
    """Every execution in the memo at ``path``: its key and its recorded result."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no execution memo there")
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {key: json.loads(result) for key, result in db.execute("SELECT key, result FROM runs")}


def compare_memos(reference: dict[str, dict], others: list[dict[str, dict]]) -> pd.DataFrame:
    """One row per script executed in both ``reference`` and one of ``others``: both statuses,
    percentiles and CPU seconds (columns ``status``/``percentile``/``cpu_s`` and ``ref_...``)."""
    rows = []
    for other in others:
        for key in other.keys() & reference.keys():
            a, b = other[key], reference[key]
            rows.append({"key": key, "status": a["status"], "ref_status": b["status"],
                         "percentile": a.get("percentile"), "ref_percentile": b.get("percentile"),
                         "cpu_s": a["cpu_s"], "ref_cpu_s": b["cpu_s"]})
    return pd.DataFrame(rows, columns=["key", "status", "ref_status", "percentile", "ref_percentile", "cpu_s",
                                       "ref_cpu_s"])


def summary(pairs: pd.DataFrame) -> dict:
    """Status changes, score changes among scripts ok both times, and the CPU-time ratio's quantiles."""
    changed = pairs.status != pairs.ref_status
    both_ok = (pairs.status == "ok") & (pairs.ref_status == "ok")
    rescored = both_ok & ~np.isclose(pairs.percentile.astype(float), pairs.ref_percentile.astype(float))
    timed = pairs[(pairs.cpu_s > MIN_CPU_S) & (pairs.ref_cpu_s > MIN_CPU_S)]
    ratio = timed.cpu_s / timed.ref_cpu_s
    q = (0.05, 0.25, 0.5, 0.75, 0.95)
    return {"executed_twice": len(pairs), "status_changed": int(changed.sum()), "ok_twice": int(both_ok.sum()),
            "score_changed": int(rescored.sum()), "timed": len(timed),
            "cpu_ratio_quantiles": dict(zip(q, np.quantile(ratio, q).round(3))) if len(timed) else {}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memo_agreement", description=__doc__.split("\n\n")[0])
    parser.add_argument("reference", help="an execution memo (e.g. the data root's memo.sqlite)")
    parser.add_argument("others", nargs="+", help="memos to compare with it (e.g. results/train/*/*/*/memo.sqlite)")
    args = parser.parse_args(argv)
    pairs = compare_memos(read_memo(args.reference), [read_memo(p) for p in args.others])
    s = summary(pairs)
    print(f"{s['executed_twice']} scripts executed twice; status changed for {s['status_changed']}; "
          f"{s['score_changed']} of the {s['ok_twice']} ok both times scored differently")
    if s["cpu_ratio_quantiles"]:
        qs = ", ".join(f"{int(100 * k)}%: {v}" for k, v in s["cpu_ratio_quantiles"].items())
        print(f"CPU seconds, other / reference, over the {s['timed']} using more than {MIN_CPU_S} s both times: {qs}")
    flips = pairs[pairs.status != pairs.ref_status]
    if len(flips):
        print(flips.drop(columns="key").round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
