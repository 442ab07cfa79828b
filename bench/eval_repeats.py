"""``python -m bench.eval_repeats``: a trained policy's evaluation noise, measured directly.

The noise split of :mod:`wmrl.experiments.noise` takes a trained arm's evaluation noise to be the
untrained policy's (the only arm whose policy is the same at every seed). This measures it instead:
each (arm, seed) run is trained again into a scratch folder (``results/runs/eval-repeats/``, the
trainer's own code and settings), and its final policy is evaluated ``--repeats`` times more, each
time with evaluation draws no run uses (draw seed ``1_000_000 + 1000·seed + r``) and fresh
execution (no memo). Repeat ``-1`` re-evaluates with the run's own draws, beside the committed
run's score, as a check that the retrained policy is the committed one (up to CPU-time jitter).

Writes ``results/noise/<preset>/eval_repeats.parquet`` (one row per evaluation: arm, seed, repeat,
draw seed, held-out Avg and its categories) with its provenance sidecar; notebook 01's noise
section reads it (:func:`wmrl.experiments.noise.repeat_noise`).

    python -m bench.eval_repeats --arms grpo wmrl --seeds 0 --repeats 8
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd
import torch

from wmrl.agent import grammar
from wmrl.ledger import ComputeLedger
from wmrl.presets import run_config
from wmrl.provenance import atomic_path, provenance, write_json_atomic
from wmrl.runs import RESULTS, headline, per_category, run_dir
from wmrl.tasks import get_pool
from wmrl.trainer.components import make_sandbox
from wmrl.trainer.grammar import GRPOLearner, evaluate, make_policy, train
from wmrl.trainer.rollout import Scorer

__all__ = ["DRAW_BASE", "main", "repeat_evaluations"]

#: Evaluation draw seeds of the repeats: ``DRAW_BASE + 1000·seed + r``, far from every seed a run uses.
DRAW_BASE = 1_000_000


def repeat_evaluations(arm: str, preset: str, seed: int, repeats: int, scratch: Path, results: Path = RESULTS,
                       progress: bool = True) -> list[dict]:
    """Retrain ``arm`` at ``preset`` and ``seed`` into ``scratch``, then evaluate its final policy once with its
    own draws (repeat -1) and ``repeats`` times with fresh ones; one row per evaluation."""
    cfg = run_config(arm, preset, seed)
    if cfg.agent.kind != "grammar":
        raise ValueError(f"{preset!r} trains the {cfg.agent.kind} agent; this measures the grammar agent's policies")
    pool = get_pool(cfg.paths.pool)
    out = scratch / preset / arm / f"seed{seed}"
    summary = train(cfg, out, pool, preset, progress=progress)  # resumes from its checkpoint when it is there
    saved = torch.load(out / "checkpoint.pt", weights_only=False)
    train_tasks = per_category(pool.train, cfg.train.train_tasks)
    learner = GRPOLearner(cfg, make_policy(cfg.seed, len(grammar.task_features(train_tasks[0]))))
    learner.load_state_dict(saved["learner"])
    eval_tasks = per_category(pool.heldout, cfg.eval.tasks)
    scorer = Scorer(make_sandbox(cfg.sandbox), None, ComputeLedger(), None, cfg.sandbox.workers)
    committed = run_dir(results, preset, arm, seed) / "summary.json"
    committed_avg = json.loads(committed.read_text())["heldout"]["avg"] if committed.is_file() else float("nan")
    rows = []
    for r in range(-1, repeats):
        draws = seed if r < 0 else DRAW_BASE + 1000 * seed + r
        t0 = time.perf_counter()
        evals = evaluate(learner.policy, eval_tasks, cfg.eval.final_samples or cfg.eval.samples, cfg.train.max_turns,
                         scorer, draws, cfg.train.steps)
        head = headline(pd.DataFrame(evals))
        rows.append({"preset": preset, "arm": arm, "seed": seed, "repeat": r, "draws": draws, "avg": head["avg"],
                     **{f"cat_{c}": v for c, v in head["per_category"].items()},
                     "retrained_avg": summary["heldout"]["avg"], "committed_avg": committed_avg,
                     "eval_s": time.perf_counter() - t0})
        if progress:
            print(f"{arm} seed {seed} repeat {r:>2} (draws {draws}): held-out Avg {100 * head['avg']:.1f}", flush=True)
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_repeats", description=__doc__.split("\n\n")[0])
    parser.add_argument("--arms", nargs="+", default=["grpo"], help="trained arms to measure (default: grpo)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0], help="their seeds (default: 0)")
    parser.add_argument("--repeats", type=int, default=8, help="fresh evaluations of each final policy (default: 8)")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--results", type=Path, default=RESULTS, help="where the committed runs and the output are")
    args = parser.parse_args(argv)
    if args.repeats < 2:
        parser.error("--repeats must be at least 2: one evaluation has no spread")
    scratch = args.results / "runs" / "eval-repeats"
    rows = []
    for arm in args.arms:
        for seed in args.seeds:
            rows += repeat_evaluations(arm, args.preset, seed, args.repeats, scratch, args.results)
    path = args.results / "noise" / args.preset / "eval_repeats.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        pd.DataFrame(rows).to_parquet(tmp, index=False)
    write_json_atomic(path.with_name(path.name + ".provenance.json"),
                      {**provenance(), "command": "python -m bench.eval_repeats " + " ".join(sys.argv[1:] if argv is None
                                                                                            else argv)})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
