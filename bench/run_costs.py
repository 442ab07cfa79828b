"""``python -m bench.run_costs``: the trainer's cost goals, read off finished runs.

The trainer's cost goals, each checked on the runs in ``results/train/<preset>/`` (the measured ledgers,
not a separate micro-benchmark, so the numbers are the ones the notebooks report):

- scoring one trajectory-turn with the program-analysis world model costs at most 1/50 of one
  real execution;
- one ``wmrl`` step is charged at most 1/3 of a ``grpo`` step;
- one ``small`` run of one arm and one seed takes under 5 minutes of wall time (warm memo).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from wmrl.runs import RESULTS

__all__ = ["cost_goals", "main"]


def cost_goals(preset: str = "small", results: Path = RESULTS) -> pd.DataFrame:
    """One row per goal: measured value, goal, pass/fail."""
    root = Path(results) / "train" / preset
    summaries = [json.loads(p.read_text()) for p in sorted(root.glob("*/seed*/summary.json"))]
    if not summaries:
        raise FileNotFoundError(f"no runs under {root}: run `make reproduce` or `python -m wmrl.experiments run` first")
    rows = []
    # an untrained run has no training steps, hence no compute entries
    wm = [s["compute"]["world_model"] for s in summaries if s["compute"].get("world_model", {}).get("count")]
    ex = [s["compute"]["execution"] for s in summaries if s["compute"].get("execution", {}).get("count")]
    if wm and ex:
        per_wm = sum(c["charged_s"] for c in wm) / sum(c["count"] for c in wm)
        per_ex = sum(c["charged_s"] for c in ex) / sum(c["count"] for c in ex)
        rows.append(("world-model scoring / real execution, per script", per_wm / per_ex, 1 / 50))

    def per_step(arm):
        ss = [s for s in summaries if s["arm"] == arm and s["steps"]]
        return sum(sum(c["charged_s"] for c in s["compute"].values()) / s["steps"] for s in ss) / len(ss) if ss else None

    if per_step("wmrl") and per_step("grpo"):
        rows.append(("charged seconds per step, wmrl / grpo", per_step("wmrl") / per_step("grpo"), 1 / 3))
    trained = [s for s in summaries if s["steps"]]
    if trained:
        rows.append(("wall minutes of the slowest run (memo as it was)", max(s["wall_s"] for s in trained) / 60, 5.0))
    df = pd.DataFrame(rows, columns=["goal", "measured", "at_most"])
    df["met"] = df.measured <= df.at_most
    return df


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.run_costs", description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="small")
    args = ap.parse_args(argv)
    try:
        print(cost_goals(args.preset).to_string(index=False))
    except FileNotFoundError as exc:
        print(f"skipped: {exc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
