"""``python -m wmrl.experiments run --arm ARM [--agent grammar|llm] --preset P --seed S [--set section.field=value]``."""

from __future__ import annotations

import argparse
import json
import sys

from wmrl.arms import arm_names
from wmrl.config import ConfigError, parse_set
from wmrl.presets import PRESETS, preset_names


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m wmrl.experiments", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    run = sub.add_parser("run", help="train one arm at one seed and write its results",
                         epilog="presets: " + "; ".join(f"{n} ({p.agent})" for n, p in PRESETS.items()))
    run.add_argument("--arm", required=True, choices=arm_names(), help="which arm of the paper (Table 1/3) to run")
    run.add_argument("--agent", choices=("grammar", "llm"), default=None,
                     help="the agent kind; must match the preset's (default: the preset's)")
    run.add_argument("--preset", default="small", metavar="PRESET", help=f"one of {preset_names()}")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--out", default=None, help="output folder (default results/train/<preset>/<arm>/seed<S>)")
    run.add_argument("--no-memo", action="store_true", help="execute every script, never reuse a memoised run")
    run.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                     help="override a config field (value in JSON), e.g. --set method.anchor_fraction=0.25 "
                          "--set method.fusion=scale_only (see wmrl/config.py)")
    args = ap.parse_args(argv)
    from wmrl.experiments.run import run_arm

    try:
        overrides = parse_set(args.set)
        if args.no_memo:
            overrides["sandbox.memo"] = False
        summary = run_arm(args.arm, args.preset, args.seed, args.out, overrides=overrides, agent=args.agent)
    except ConfigError as exc:
        ap.error(str(exc))
    print(json.dumps({k: summary[k] for k in ("arm", "preset", "seed", "heldout", "compute")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
