"""Command line of the VLA analog (notebook 06, Table 2).

``python -m wmrl.vla run --arm ARM --preset small --seed S [--set section.field=value ...]``
trains and evaluates one run into ``results/vla/<preset>/<arm>/seed<S>/`` (reused if a result of
the same config is there, resumed if a checkpoint of the same config is); ``run-all`` runs every
(arm, seed) of a preset without such a result, ``--workers`` processes at a time. ``--set``
overrides any field of :class:`wmrl.vla.config.VLAConfig` (sections ``sft``, ``train``,
``method``, ``eval``; values in JSON), e.g. ``--set method.od_min_pairs=16``.
"""

from __future__ import annotations

import argparse
import json
import sys

from wmrl.config import ConfigError, parse_set
from wmrl.presets import preset_names
from wmrl.vla.config import VLA_ARMS, vla_config


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wmrl.vla", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    one = sub.add_parser("run", help="train and evaluate one arm for one seed")
    one.add_argument("--arm", required=True, metavar="ARM", help=f"one of {', '.join(VLA_ARMS)}")
    one.add_argument("--seed", type=int, default=0)
    many = sub.add_parser("run-all", help="every arm x seed whose result of the same config is missing")
    many.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    many.add_argument("--arms", nargs="+", metavar="ARM", default=None,
                      help="default: the preset's VLA_ARMS (its notebook block in wmrl/presets.py)")
    many.add_argument("--workers", type=int, default=2, help="runs in parallel, one torch thread each")
    for p in (one, many):
        p.add_argument("--preset", default="small", metavar="PRESET", help=f"one of {preset_names()}")
        p.add_argument("--results", default=None, help="results root (default: the repository's results/)")
        p.add_argument("--tag", default=None, help="store the runs under <arm>~<tag>/, apart from the default ones")
        p.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                       help="override a config field (value in JSON), e.g. --set train.steps=20 (see wmrl/vla/config.py)")
    args = ap.parse_args(argv)
    from wmrl.vla.runner import run_all, run_one  # needs the simulator

    try:
        overrides = parse_set(args.set)
        if args.cmd == "run":
            res = run_one(vla_config(args.arm, args.preset, args.seed, overrides), args.preset, args.results,
                          tag=args.tag)
            print(json.dumps(res["metrics"]["all"], indent=2))
        else:
            run_all(args.preset, args.seeds, args.results, arms=args.arms, workers=args.workers,
                    overrides=overrides, tag=args.tag)
    except ConfigError as exc:
        ap.error(str(exc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
