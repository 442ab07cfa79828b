"""Measurements that size the LLM presets: runnable rate, and where a GRPO step's seconds go.

``python -m bench.llm_bench step --preset llm-smoke --arm wmrl`` runs one training step and
prints generation tokens per second, world-model seconds per scored solution against execution
seconds per run, and the step's breakdown (generation / world model / execution / update).
``python -m bench.llm_bench runnable --model FOLDER --contract fit_predict --samples 2``
samples solutions for every held-out task and runs them for real: the share that runs ok is the
number that says whether a model can learn anything from GRPO at all.
``python -m bench.llm_bench targets --preset llm-small`` runs the supervised warm start's
own targets (the grammar habits' solutions for the training tasks, :func:`wmrl.trainer.llm.sft.sft_dataset`)
in the sandbox: the share of them that runs is the most a warm start fitted to them can be expected
to reach. ``... warm-start --preset llm-small --set llm.sft_targets=runnable`` builds (or finds) a
warm start and prints its folder, for ``runnable --model FOLDER --split train``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["runnable_rate", "step_breakdown", "target_rate"]


def runnable_rate(folder, contract: str, tasks, samples: int, max_new_tokens: int, timeout_s: float = 10.0,
                  seed: int = 0, batch_size: int = 8, temperature: float = 1.0) -> dict:
    """Sample ``samples`` first-turn solutions per task from ``folder`` and run each in the real sandbox.

    ``temperature`` 0 decodes greedily. Measure on the training tasks (``--split train``) to choose a
    setting: the held-out tasks are what the runs are evaluated on, so a choice made on them is tuned
    on the outcome it is judged by.
    """
    from wmrl.agent.llm.model import load_causal_lm
    from wmrl.ledger import ComputeLedger
    from wmrl.sandbox import Sandbox
    from wmrl.trainer.llm.generate import TransformersGenerator
    from wmrl.trainer.llm.rollout import RolloutSettings, rollout
    from wmrl.trainer.rollout import Scorer

    model, tokenizer = load_causal_lm(folder)
    rows = [t for t in tasks for _ in range(samples)]
    gen = TransformersGenerator(model, tokenizer, temperature, batch_size=batch_size)
    ledger = ComputeLedger()
    sandbox = Sandbox("local", timeout_s=timeout_s)
    scorer = Scorer(sandbox, None, ledger, None, 1)
    settings = RolloutSettings(sandbox=sandbox.facts, contract=contract, max_turns=1, max_new_tokens=max_new_tokens,
                               obs_max_tokens=64)
    trajs = rollout(gen, tokenizer, rows, np.ones(len(rows), bool), np.zeros(len(rows), bool), scorer, settings,
                    seed=seed)
    ledger.end_step()
    status = [t.turns[0].status("real") for t in trajs]
    per_task = pd.Series([s == "ok" for s in status]).groupby([t.task.name for t in trajs]).mean()
    totals = ledger.totals()
    return {"model": str(folder), "contract": contract, "samples_per_task": samples, "max_new_tokens": max_new_tokens,
            "temperature": temperature, "tasks": len(tasks),
            "runnable_rate": float(np.mean([s == "ok" for s in status])), "per_task": per_task.to_dict(),
            "statuses": pd.Series(status).value_counts().to_dict(),
            "mean_reward": float(np.mean([t.real_reward for t in trajs])),
            "generated_tokens": gen.tokens_out, "generation_s": float(totals.loc["generation", "actual_s"]),
            "tokens_per_s": gen.tokens_out / max(float(totals.loc["generation", "actual_s"]), 1e-9),
            "examples": [{"task": t.task.name, "status": s, "reason": t.turns[0].real.reason if t.turns[0].real else t.turns[0].reason,
                          "reply": t.turns[0].reply[:800]} for t, s in list(zip(trajs, status))[:3]]}


def target_rate(preset: str = "llm-small", seed: int = 0, pool=None, overrides: dict | None = None) -> dict:
    """Run every target of ``preset``'s warm-start data set (as its SFT would draw them, with ``overrides``'
    dotted config fields applied) in the sandbox."""
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.tasks import get_pool
    from wmrl.trainer.components import make_sandbox
    from wmrl.trainer.llm.sft import execute_targets, sft_dataset

    cfg = run_config("sft", preset, seed, overrides, agent="llm")
    sb, contract = cfg.sandbox, cfg.llm.contract
    tasks = per_category((pool or get_pool()).train, cfg.train.train_tasks)
    rows = sft_dataset(tasks, contract, cfg.llm.sft_per_task, seed, make_sandbox(sb).facts)
    ran = execute_targets(rows, tasks, contract, make_sandbox(sb))
    frame = pd.DataFrame({"task": [t.name for t, _ in ran], "status": [r.status for _, r in ran]})
    return {"preset": preset, "seed": seed, "contract": contract, "targets": len(frame),
            "runnable_rate": float((frame.status == "ok").mean()),
            "per_task": frame.assign(ok=frame.status == "ok").groupby("task").ok.mean().round(3).to_dict(),
            "statuses": frame.status.value_counts().to_dict()}


def step_breakdown(run: Path) -> dict:
    """From a run folder: seconds per step and component, tokens/s, world model vs execution per call."""
    ledger = pd.read_parquet(run / "ledger.parquet")
    steps = pd.read_parquet(run / "steps.parquet")
    per = ledger.groupby("component")[["actual_s", "charged_s", "count"]].sum()
    n_steps = ledger.step.nunique()
    summary = json.loads((run / "summary.json").read_text())
    cfg = summary["provenance"]["config"]
    rows = cfg["train"]["groups_per_step"] * cfg["train"]["group_size"]
    tokens = float((steps["completion_tokens"] * rows).sum()) if "completion_tokens" in steps else float("nan")
    out = {"steps": n_steps, "seconds_per_step": float(per["actual_s"].sum() / n_steps),
           "breakdown_s_per_step": (per["actual_s"] / n_steps).round(2).to_dict(),
           "generation_tokens_per_s": tokens / max(float(per.loc["generation", "actual_s"]), 1e-9)}
    for comp, name in (("world_model", "world_model_s_per_solution"), ("execution", "execution_s_per_run")):
        if per.loc[comp, "count"] > 0:
            out[name] = float(per.loc[comp, "charged_s"] / per.loc[comp, "count"])
    if "world_model" in summary:
        out["world_model_counters"] = summary["world_model"]
    return out


def _add_set(parser, example: str) -> None:
    parser.add_argument("--set", action="append", default=[], metavar="SECTION.FIELD=VALUE",
                        help=f"override a config field, e.g. --set {example}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.llm_bench", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("step", help="time one GRPO step of a preset")
    s.add_argument("--preset", default="llm-smoke")
    s.add_argument("--arm", default="wmrl")
    s.add_argument("--steps", type=int, default=1)
    _add_set(s, "llm.sft_steps=0 to time a step without the warm start")
    r = sub.add_parser("runnable", help="the share of sampled first-turn solutions that run ok, per held-out task")
    r.add_argument("--model", required=True, help="a Hugging Face model folder")
    r.add_argument("--contract", default="script", choices=("script", "fit_predict", "plan"))
    r.add_argument("--samples", type=int, default=2)
    r.add_argument("--max-new-tokens", type=int, default=384)
    r.add_argument("--temperature", type=float, default=1.0, help="sampling temperature (0: greedy)")
    r.add_argument("--split", default="heldout", choices=("train", "heldout"),
                   help="the tasks to sample for (choose settings on train: held-out is what runs are judged on)")
    g = sub.add_parser("targets", help="the share of the warm start's own targets (training tasks) that run ok")
    g.add_argument("--preset", default="llm-small")
    g.add_argument("--seed", type=int, default=0)
    _add_set(g, "llm.sft_per_task=4 for the targets a smaller warm start draws")
    w = sub.add_parser("warm-start", help="build (or find) a preset's supervised warm start; print its folder and record")
    w.add_argument("--preset", default="llm-small")
    w.add_argument("--seed", type=int, default=0)
    _add_set(w, "llm.sft_targets=runnable")
    args = ap.parse_args(argv)
    from wmrl.config import parse_set

    if args.cmd == "step":
        from wmrl.experiments.run import run_arm

        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            run_arm(args.arm, args.preset, 0, Path(tmp), agent="llm", progress=False,
                    overrides={"train.steps": args.steps, "eval.every": 10**6, "eval.samples": 1, "eval.tasks": 1,
                               **parse_set(args.set)},
                    memo_path=Path(tmp) / "memo.sqlite")
            result = {"wall_s_with_setup_and_final_eval": time.perf_counter() - t0, **step_breakdown(Path(tmp))}
    elif args.cmd == "targets":
        result = target_rate(args.preset, args.seed, overrides=parse_set(args.set))
    elif args.cmd == "warm-start":
        from wmrl.presets import run_config
        from wmrl.tasks import get_pool
        from wmrl.trainer.llm.train import initial_model

        cfg = run_config("sft", args.preset, args.seed, parse_set(args.set), agent="llm")
        folder, record = initial_model(cfg, get_pool(), progress=True)
        result = {"folder": str(folder), **(record or {})}
    else:
        from wmrl.tasks import get_pool

        pool = get_pool()
        result = runnable_rate(args.model, args.contract, getattr(pool, args.split), args.samples,
                               args.max_new_tokens, temperature=args.temperature)
    print(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
