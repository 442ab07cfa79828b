"""Build the small pool ahead of its first use: ``python -m wmrl.tasks.prepare [--root DIR] [--force]``.

The recipe lives in :mod:`wmrl.tasks.recipe`; this module is only its command line, kept apart so
that running it does not import it twice (the package imports the recipe, never this module).
A folder that is not a new or empty one or the recipe's own pool is refused, exit status 2, and
left as it was.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from wmrl.tasks.ownership import PoolFolderError
from wmrl.tasks.recipe import ensure_pool

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m wmrl.tasks.prepare", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="pool folder (default: $WMRL_DATA/pool or <repo>/data/pool)")
    parser.add_argument("--force", action="store_true", help="rebuild even if a current pool exists")
    args = parser.parse_args(argv)
    try:
        root = ensure_pool(args.root, force=args.force, progress=True)
    except PoolFolderError as exc:
        parser.exit(2, f"error: {exc}\n")
    manifest = json.loads((root / "manifest.json").read_text())
    counts = pd.DataFrame(manifest["tasks"]).groupby(["category", "split"]).size()
    print(f"pool at {root} (version {manifest['version']}, built in {manifest['build_seconds']} s)\n{counts.to_string()}")


if __name__ == "__main__":
    main()
