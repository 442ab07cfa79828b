"""``python -m bench.rerun_check COMMITTED RERUN``: did a rerun regenerate the committed numbers?

The reproducibility goal, checked: a fresh clone's ``make reproduce`` regenerates the
committed numbers, every run's held-out Avg within 1 point and every verdict identical. Given two
checkouts (the committed one and a clone in which a campaign was rerun), this reads every run's
headline number from both ``results/`` trees and every claim's verdict from both ``RESULTS.md``
pages, and prints what moved:

- runs: a grammar or LLM run's held-out Avg (``summary.json``), a VLA run's overall success
  (``result.json``), both in points; a run present in only one tree is listed as such (a campaign
  retrains only its own runs, so the others are simply the committed files in both);
- claims: each row of the page's claim tables (the first column is the claim, the columns headed
  ``verdict`` and ``Holm`` its verdicts), keyed by claim and the notebook or section it sits in.

The exit status is 1 when a run shared by both trees moved by more than ``--tolerance`` points or a
verdict changed, so the check can gate a script.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

__all__ = ["claim_verdicts", "compare", "headline_numbers", "main"]


def _headline(path: Path) -> float:
    data = json.loads(path.read_text())
    if path.name == "summary.json":
        return 100.0 * float(data["heldout"]["avg"])
    return 100.0 * float(data["metrics"]["all"]["overall"])  # a VLA run's result.json


def headline_numbers(results: str | Path) -> pd.Series:
    """Every run's headline number in points, indexed by its folder relative to ``results``.

    ``results/runs/`` (the quick campaign's and the notebooks' scratch output) is left out: it is
    not part of the committed campaign's numbers.
    """
    results = Path(results)
    found = {}
    for path in sorted([*results.rglob("summary.json"), *results.rglob("result.json")]):
        rel = path.parent.relative_to(results)
        if rel.parts and rel.parts[0] == "runs":
            continue
        found[str(rel)] = _headline(path)
    return pd.Series(found, name="points", dtype=float)


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def claim_verdicts(page: str | Path) -> pd.DataFrame:
    """The claim rows of a ``RESULTS.md``: one row per (section, claim) with its verdicts.

    A claim table is a Markdown table whose header's first cell is ``claim`` and which has a
    ``verdict`` column; ``section`` is the notebook the row links to, else the heading above it.
    """
    rows, header, heading = [], None, ""
    for line in Path(page).read_text().splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        if not line.startswith("|"):
            header = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set("".join(cells)) <= set("-: ") or header[0] != "claim" or "verdict" not in header:
            continue
        row = dict(zip(header, cells))
        notebook = row.get("notebook", "")
        section = notebook[1:notebook.index("]")] if notebook.startswith("[") else heading
        rows.append({"section": section, "claim": cells[0], "ours": row.get("ours (95% CI)", ""),
                     "verdict": row["verdict"], "holm": row.get("Holm", "")})
    out = pd.DataFrame(rows, columns=["section", "claim", "ours", "verdict", "holm"]).set_index(["section", "claim"])
    if out.index.has_duplicates:
        raise ValueError(f"{page}: a claim appears twice in one section: "
                         f"{sorted(set(out.index[out.index.duplicated()]))}")
    return out


def compare(committed: str | Path, rerun: str | Path, tolerance: float = 1.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, claims) of two checkouts: each run's number both ways and its change, each claim's verdicts."""
    a, b = Path(committed), Path(rerun)
    runs = pd.concat({"committed": headline_numbers(a / "results"), "rerun": headline_numbers(b / "results")},
                     axis=1)
    runs["diff"] = runs.rerun - runs.committed
    runs["within"] = runs["diff"].abs() <= tolerance
    claims = pd.merge(claim_verdicts(a / "RESULTS.md"), claim_verdicts(b / "RESULTS.md"), how="outer",
                      left_index=True, right_index=True, suffixes=("_committed", "_rerun"))
    claims["same"] = (claims.verdict_committed == claims.verdict_rerun) & (claims.holm_committed == claims.holm_rerun)
    return runs, claims


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.rerun_check", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("committed", help="the checkout whose results are committed (e.g. .)")
    ap.add_argument("rerun", help="a checkout in which a campaign was rerun (e.g. a fresh clone after make reproduce)")
    ap.add_argument("--tolerance", type=float, default=1.0, help="points a run's number may move (default 1)")
    args = ap.parse_args(argv)
    for name in (args.committed, args.rerun):
        if not (Path(name) / "results").is_dir() or not (Path(name) / "RESULTS.md").is_file():
            ap.error(f"{name} is not a checkout with results/ and RESULTS.md")
    runs, claims = compare(args.committed, args.rerun, args.tolerance)
    both = runs.dropna(subset=["committed", "rerun"])
    moved = both[both["diff"] != 0].sort_values("diff", key=abs, ascending=False)
    with pd.option_context("display.width", 160, "display.max_rows", 500, "display.max_colwidth", 60):
        print(f"Runs in both trees: {len(both)}; unchanged: {int((both['diff'] == 0).sum())}; within "
              f"{args.tolerance:g} point(s): {int(both.within.sum())}; largest change: "
              + (f"{moved['diff'].iloc[0]:+.1f} ({moved.index[0]})" if len(moved) else "none") + ".")
        if len(moved):
            print(moved.round(2).to_string())
        for side, other in (("committed", "rerun"), ("rerun", "committed")):
            only = runs.index[runs[side].notna() & runs[other].isna()]
            if len(only):
                print(f"Only in the {side} tree: {', '.join(only)}")
        changed = claims[~claims.same]
        print(f"Claims: {len(claims)}; verdicts identical: {int(claims.same.sum())}; changed: {len(changed)}.")
        if len(changed):
            print(changed.drop(columns="same").to_string())
    return 0 if both.within.all() and claims.same.all() else 1


if __name__ == "__main__":
    raise SystemExit(main())
