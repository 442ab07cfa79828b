"""Train one arm, or start an ablation notebook.

``python -m wmrl.experiments run --arm ARM [--agent grammar|llm] --preset P --seed S [--set section.field=value]``
``python -m wmrl.experiments runs --arms ARM [ARM ...] --seeds S [S ...] --preset P [--executor local|local:N|ray|ray:C]``
``python -m wmrl.experiments new-ablation NAME --base-arm ARM [--set section.field=value] [--sweep section.field=v1,v2]``

An LLM run on several processes is the same command under a launcher, e.g. ``torchrun --nproc_per_node 2
-m wmrl.experiments run --agent llm ...`` (gloo on CPU) or ``accelerate launch --config_file ... -m
wmrl.experiments run ...`` (GPUs); ``accelerate launch --cpu --num_processes 2`` starts one process
without an MPI host file, so use torchrun on CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from wmrl.arms import arm_names
from wmrl.config import ConfigError, parse_set
from wmrl.experiments.executor import EXECUTOR_HELP, parse_executor
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
    runs = sub.add_parser("runs", help="train every missing (arm, seed) of a preset: a campaign's runs, no notebook",
                          description="Train what is missing of arms x seeds (a finished run with the same config is "
                                      "kept), where --executor says: this machine or a Ray cluster (docs/cluster.md).")
    runs.add_argument("--arms", nargs="+", required=True, choices=arm_names(), metavar="ARM", help="arms to train")
    runs.add_argument("--seeds", nargs="+", type=int, required=True, metavar="S")
    runs.add_argument("--preset", default="small", metavar="PRESET", help=f"one of {preset_names()}")
    runs.add_argument("--results", default=None, help="results folder (default: the repository's results/)")
    runs.add_argument("--tag", default=None, help="the variant's name, needed with --set (runs kept as <arm>~<tag>)")
    runs.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                      help="override a config field (value in JSON) for every run")
    runs.add_argument("--executor", default=None, metavar="SPEC", help=EXECUTOR_HELP)
    abl = sub.add_parser("new-ablation", help="write notebooks/NN_NAME.ipynb (and .py), an ablation of one arm",
                         description="Write a paired ablation notebook from notebooks/TEMPLATE_ablation.py, "
                                     "parameterised: the base arm's default runs against each variant, paired by seed.")
    abl.add_argument("name", metavar="NAME", help="the ablation's name (lower case, digits, '_'): the notebook is "
                                                  "NN_NAME, its runs are stored as <arm>~NAME[-<value>]")
    abl.add_argument("--base-arm", required=True, choices=arm_names(), help="the arm the change applies to")
    abl.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                     help="a config field for every variant (value in JSON), e.g. --set method.fusion=scale_only")
    abl.add_argument("--sweep", action="append", default=[], metavar="SECTION.FIELD=V1,V2,...",
                     help="one variant per value (values in JSON), e.g. --sweep method.anchor_fraction=0.05,0.125,0.25")
    abl.add_argument("--notebooks", default=None, help="the folder to write into (default: the repository's notebooks/)")
    args = ap.parse_args(argv)
    if args.cmd == "new-ablation":
        return _new_ablation(abl, args, argv)
    if args.cmd == "runs":
        return _runs(runs, args)
    from wmrl.experiments.run import run_arm  # deferred: the trainer loads torch, `--help` need not wait for it

    try:
        overrides = parse_set(args.set)
        if args.no_memo:
            overrides["sandbox.memo"] = "off"
        summary = run_arm(args.arm, args.preset, args.seed, args.out, overrides=overrides, agent=args.agent)
    except ConfigError as exc:
        ap.error(str(exc))
    if os.environ.get("RANK", "0") == "0":  # under torchrun / accelerate launch, the main process alone reports
        print(json.dumps({k: summary[k] for k in ("arm", "preset", "seed", "heldout", "compute")}, indent=2))
    return 0


def _runs(parser, args) -> int:
    from wmrl.experiments.collect import ensure_runs  # deferred, as run_arm above
    from wmrl.runs import RESULTS

    try:
        parse_executor(args.executor)
        found = ensure_runs(args.arms, args.seeds, args.preset, args.results or RESULTS, tag=args.tag,
                            executor=args.executor, overrides=parse_set(args.set))
    except (ConfigError, ValueError) as exc:
        parser.error(str(exc))
    print(found[["arm", "seed", "avg", "dir"]].to_string(index=False))
    return 0


def _parse_sweep(items) -> dict:
    """``["method.anchor_fraction=0.05,0.25"]`` (the CLI's ``--sweep``) -> ``{field: [values]}``; values are JSON, else text."""
    sweep = {}
    for item in items:
        field, sep, values = item.partition("=")
        if not sep or not field.strip() or field.strip() in sweep:
            raise ConfigError(f"--sweep needs SECTION.FIELD=V1,V2,... once per field "
                              f"(e.g. method.anchor_fraction=0.05,0.25), got {item!r}")
        sweep[field.strip()] = [parse_set([f"v={v.strip()}"])["v"] for v in values.split(",")]
    return sweep


def _new_ablation(parser, args, argv) -> int:
    from wmrl.experiments import ablation

    command = " ".join(["python -m wmrl.experiments", *(sys.argv[1:] if argv is None else argv)])
    try:
        overrides, sweep = parse_set(args.set), _parse_sweep(args.sweep)
        ipynb, py = ablation.write_notebook(args.name, args.base_arm, overrides, sweep,
                                            notebooks_dir=args.notebooks or ablation.NOTEBOOKS, command=command)
    except ConfigError as exc:
        parser.error(str(exc))
    labels = [v.label(args.base_arm) for v in ablation.plan(args.name, args.base_arm, overrides, sweep)]
    print(f"wrote {ipynb} and {py}\nvariants: {', '.join(labels)}, each against {args.base_arm}'s default runs\n"
          f"next: write its Background and claims; try it at the smoke preset in a scratch folder,\n"
          f"  papermill {ipynb} /tmp/{ipynb.name} --cwd {ipynb.parent} -p MODE train -p PRESET smoke "
          f"-p RESULTS_DIR /tmp/res -p FIGURES_DIR /tmp/fig\n"
          f"then train it and fill in its outputs: python -m wmrl.reproduce --only {ipynb.stem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
