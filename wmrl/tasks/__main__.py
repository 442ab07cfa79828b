"""``python -m wmrl.tasks import --layout mledojo|mlebench|dsbench SRC --out POOL``: point a pool at real competitions.

The pool's manifest records, for every competition of SRC that wmrl supports, where its files
and its own grading code are; nothing is copied and nothing in SRC is written. Each competition's
sample submission is graded once by its own code (the table's ``sample_score``); competitions it
cannot support, a grader that cannot load included (with what to install), are listed with the reason. Train on the pool with
``run_arm(..., pool=wmrl.tasks.get_pool(POOL))``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from wmrl.tasks.layouts import LAYOUTS, SourceError
from wmrl.tasks.ownership import PoolFolderError
from wmrl.tasks.pool import PAPER_SPLIT, import_pool
from wmrl.tasks.task import CATEGORIES

__all__ = ["main"]


def _count(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0 of tasks per category, got {text!r}")
    return n


def _category(text: str) -> tuple[str, str]:
    name, sep, category = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=CATEGORY (e.g. spaceship-titanic=tabular), got {text!r}")
    if category not in CATEGORIES:
        raise argparse.ArgumentTypeError(f"category of {name!r} must be one of {', '.join(CATEGORIES)}, got "
                                         f"{category!r}")
    return name, category


def _sample(outcome: dict | None) -> str:
    """The sample submission's raw score by the competition's own code, as the table shows it."""
    if outcome is None:
        return "-"  # a built-in metric: nothing of the competition's to check
    return f"{outcome['raw_score']:.6g}" if outcome["status"] == "ok" else "invalid (its code rejects it)"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m wmrl.tasks", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="import")
    imp = commands.add_parser("import", help="write a pool that points at real competitions, read in place",
                              description=__doc__.splitlines()[0])
    imp.add_argument("--layout", required=True, choices=[n for n in LAYOUTS if n != "wmrl"],
                     help="mledojo: MLE-Dojo's data dir (<name>/data/{public,private}); mlebench: MLE-bench's data "
                          "dir (<id>/prepared/{public,private}); dsbench: DSBench's data_modeling folder")
    imp.add_argument("src", type=Path, metavar="SRC", help="the folder holding the competitions (only read)")
    imp.add_argument("--out", type=Path, required=True, metavar="POOL",
                     help="the pool folder to write: new, empty, or an earlier import's")
    imp.add_argument("--code", type=Path, default=None, metavar="CHECKOUT",
                     help="the benchmark's repository checkout holding each competition's grading code (default: "
                          "found at or above SRC; DSBench: SRC itself)")
    imp.add_argument("--train", type=_count, default=PAPER_SPLIT[0], metavar="N",
                     help="training tasks per category, the smallest ones (default: the paper's 15)")
    imp.add_argument("--heldout", type=_count, default=PAPER_SPLIT[1], metavar="M",
                     help="held-out tasks per category, the next smallest (default: the paper's 5)")
    imp.add_argument("--category", type=_category, action="append", default=[], metavar="NAME=CATEGORY",
                     help=f"override a competition's inferred category ({', '.join(CATEGORIES)}); repeatable")
    return parser


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        pool = import_pool(args.layout, args.src, args.out, code=args.code, n_train=args.train,
                           n_heldout=args.heldout, categories=dict(args.category))
    except (SourceError, PoolFolderError) as exc:
        parser.exit(2, f"error: {exc}\n")
    m = pool.manifest
    table = pd.DataFrame([{**{k: r[k] for k in ("name", "category", "split", "score_kind", "size_bytes", "metric")},
                           "sample_score": _sample(r.get("sample_submission"))} for r in m["tasks"]])
    print(f"imported {len(m['tasks'])} of {len(m['tasks']) + len(m['refused'])} competitions of {m['source']} "
          f"({m['layout']}) into {pool.root}\n{table.to_string(index=False)}")
    for r in m["refused"]:
        print(f"refused {r['name']}: {r['reason']}", file=sys.stderr)
    for r in m["tasks"]:
        if (r.get("sample_submission") or {}).get("status") == "invalid_submission":
            print(f"note {r['name']}: its own grading code loads but rejects its sample submission (its answers may "
                  f"not match the code): {r['sample_submission']['reason'][:300]}", file=sys.stderr)
    print(f"train on it: run_arm(arm, preset, pool=wmrl.tasks.get_pool({str(pool.root)!r}))")


if __name__ == "__main__":
    main()
