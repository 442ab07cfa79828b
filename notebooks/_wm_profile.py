"""Tune and measure the program-analysis world model's error profile: notebook 05's helper.

``python notebooks/_wm_profile.py tune --split tuning|train [--seed 1000] [--n 448]`` regenerates,
from scratch, the constants of a profile that come from real outcomes: the additive quality model
and the budget check's margin. ``--split tuning`` fits the ``tuning_split`` profile's
(:data:`wmrl.world_model.quality.QUALITY_WEIGHTS_TUNING`, :data:`wmrl.world_model.static.BUDGET_MARGIN_TUNING`)
on the pool's tuning split, tasks no run trains or evaluates on; ``--split train`` the ``train_split``
profile's (:data:`~wmrl.world_model.quality.QUALITY_WEIGHTS`, :data:`~wmrl.world_model.static.BUDGET_MARGIN`)
on the training tasks, which that profile then scores in training. It prints them (JSON) to paste
into those modules, with diagnostics: the quality model's out-of-task Spearman (each task
predicted by a fit on the others), and the share of real timeouts the margin catches.

**The tuning set** (never an evaluation item): :data:`TUNING_N` scripts drawn with
:func:`wmrl.agent.habits.sample_items` at seed :data:`TUNING_SEED` on the split's tasks, round
robin, by :func:`runnable_choices`: the untrained agent's habits, except that the slots whose
mistakes are certain defects (file, target, API, submission) take their correct option, so that
most scripts run and reach the leaderboard, which is what the quality model needs; on the
training tasks a script that is also in notebook 05's fixed set is dropped (none is, at these
seeds). Each is executed once in the real sandbox of the ``small`` preset (2 s budget, warm local
sandbox). No held-out task, no script of notebook 05's fixed set (seed ``FIDELITY_SEED`` = 0, the
plain habits), no anchor pair of any run is used. Both sets' outcomes are committed as test
fixtures (``tests/fixtures/wm_tuning_outcomes.parquet``, ``wm_tuning_split_outcomes.parquet``).

``python notebooks/_wm_profile.py measure --run DIR`` is the before/after measurement: the
final policy of a trained run and the untrained agent write scripts for the training and the
held-out tasks, the real sandbox executes them once, and every profile predicts them; it prints
:func:`wmrl.world_model.fidelity.fidelity_summary`'s numbers per (agent, tasks, profile).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from scipy.stats import spearmanr
from sklearn.linear_model import Ridge

from wmrl.agent import grammar
from wmrl.agent.habits import habit_choices, sample_items
from wmrl.experiments.wm_profile import SUMMARY_COLUMNS
from wmrl.ledger import ComputeLedger
from wmrl.presets import notebook_params, run_config
from wmrl.trainer.components import make_sandbox
from wmrl.trainer.grammar import make_policy
from wmrl.trainer.rollout import Scorer, rollout
from wmrl.world_model.analysis import analyse
from wmrl.world_model.base import gate
from wmrl.world_model.fidelity import fidelity_rows, fidelity_summary
from wmrl.world_model.quality import script_traits, trait_vector
from wmrl.world_model.static import PROFILES, WARM_STARTUP_S, ProgramAnalysisWorldModel, estimate_seconds

__all__ = ["MEASURE_SEED", "SPLIT_PROFILES", "TUNING_N", "TUNING_SEED", "fit_quality", "item_rows", "measure", "policy_items",
           "runnable_choices", "trained_policy", "tune", "tuning_outcomes"]

#: Seed of the tuning set's draws (notebook 05's fixed set is seed 0; evaluation draws use others).
TUNING_SEED = 1000
#: Scripts in the tuning set: 32 per training task of the small pool (14 tasks).
TUNING_N = 448
#: Seed of the measurement's draws and of the world models' sampling there.
MEASURE_SEED = 2000
#: Slots whose mistake options are certain defects, and the correct option the tuning set takes instead.
_CORRECTED = {"train_file": "correct", "target": "correct", "api": "current", "submission": "correct"}
#: Ridge penalty of the quality fit (on indicator features; small: the set has hundreds of rows).
_RIDGE = 1.0
#: Share of the scripts that really finish within the budget whose estimate may exceed the margin.
_BUDGET_FALSE_ALARMS = 0.05
#: Weights of traits the tuning set never shows, set by hand: the grammar always predicts
#: probabilities where the metric scores them, but an LLM-written script may not, and hard labels
#: throw away the ranking such a metric scores (the pessimistic prior halves the score for it).
HAND_SET_WEIGHTS = {"hard_labels": -0.2}


def runnable_choices(task, rng: np.random.Generator) -> dict[str, str]:
    """The untrained agent's habits with the certain-defect slots corrected (see the module docstring)."""
    return {**habit_choices(task, rng), **_CORRECTED}


def _fixed_set(pool) -> set[tuple[str, str]]:
    """Notebook 05's fixed set of scripts (the small preset's), which the tuning set must not share."""
    params = notebook_params("small")
    return {(t.name, c) for t, c in sample_items(pool.train, params["FIDELITY_N"], seed=params["FIDELITY_SEED"])}


#: The splits a profile's constants can be fitted on, and the profile each one's fit belongs to.
SPLIT_PROFILES = {"train": "train_split", "tuning": "tuning_split"}


def tuning_outcomes(pool, n: int = TUNING_N, seed: int = TUNING_SEED, workers: int = 1,
                    split: str = "tuning") -> pd.DataFrame:
    """Draw the tuning set on ``split``'s tasks, execute it for real, and tabulate what the tuning needs,
    one row a script."""
    if split not in SPLIT_PROFILES:
        raise ValueError(f"split must be one of {sorted(SPLIT_PROFILES)}, got {split!r}")
    tasks = getattr(pool, split)
    if not tasks:
        raise ValueError(f"the pool at {pool.root} has no {split!r} tasks (the small pool has a tuning split; an "
                         "imported pool has none)")
    cfg = run_config("grpo", "small")
    sandbox = make_sandbox(cfg.sandbox)
    fixed = _fixed_set(pool) if split == "train" else set()
    items = [it for it in sample_items(tasks, n, seed=seed, choose=runnable_choices)
             if (it[0].name, it[1]) not in fixed]
    results = sandbox.run_many(items, max_workers=workers)
    rows = []
    for (task, code), res in zip(items, results):
        facts = analyse(task, code) if gate(code) is None else None
        rows.append({"task": task.name, "category": task.category, "status": res.status, "wall_s": res.wall_s,
                     "percentile": res.percentile,
                     "estimate_s": estimate_seconds(task, facts, WARM_STARTUP_S) if facts else float("nan"),
                     "x": json.dumps(trait_vector(task, script_traits(task, code, facts))) if facts else "{}"})
    return pd.DataFrame(rows).assign(limit_s=cfg.sandbox.timeout_s)


def _design(frame: pd.DataFrame) -> tuple[np.ndarray, list[str]]:
    dicts = [json.loads(x) for x in frame.x]
    names = sorted({k for d in dicts for k in d})
    return np.array([[d.get(k, 0.0) for k in names] for d in dicts]), names


def _ridge(X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """argmin_w |y - Xw|^2 + _RIDGE |w|^2 (no separate intercept: the category bases are features)."""
    return Ridge(alpha=_RIDGE, fit_intercept=False).fit(X, y).coef_


def fit_quality(frame: pd.DataFrame) -> dict:
    """Fit the additive quality model on the ok scripts; report its leave-one-task-out quality.

    Returns ``weights`` (feature -> weight, rounded; :data:`HAND_SET_WEIGHTS` for traits the set
    never shows), the residual standard deviation of the out-of-task predictions, and their
    Spearman over all scripts and within each task (mean over tasks): what the model knows about a
    task it was not fitted on.
    """
    ok = frame[(frame.status == "ok") & frame.percentile.notna()].reset_index(drop=True)
    X, names = _design(ok)
    y = ok.percentile.to_numpy(float)
    out_of_task = np.zeros(len(ok))
    for task in ok.task.unique():
        held = (ok.task == task).to_numpy()
        out_of_task[held] = np.clip(X[held] @ _ridge(X[~held], y[~held]), 0, 1)
    within = [spearmanr(out_of_task[ok.task == t], y[ok.task == t]).statistic for t in ok.task.unique()
              if np.ptp(y[ok.task == t]) > 0 and np.ptp(out_of_task[ok.task == t]) > 0]
    fitted = {k: round(float(v), 3) for k, v in zip(names, _ridge(X, y)) if abs(v) >= 5e-4}
    seen = {k for k, col in zip(names, X.T) if np.any(col)}
    return {"weights": {**fitted, **{k: v for k, v in HAND_SET_WEIGHTS.items() if k not in seen}},
            "residual_sd": float(np.std(y - out_of_task)), "n_ok": len(ok), "n_tasks": int(ok.task.nunique()),
            "loto_spearman": float(spearmanr(out_of_task, y).statistic), "loto_within_spearman": float(np.mean(within))}


def fit_budget(frame: pd.DataFrame) -> dict:
    """The budget margin: the (1 - _BUDGET_FALSE_ALARMS) quantile of estimate / limit over scripts that
    finished in time, at least 1; and how many real timeouts an estimate over that margin catches."""
    ran = frame[frame.status.isin(["ok", "no_submission", "invalid_submission"]) & frame.estimate_s.notna()]
    timeouts = frame[frame.status == "timeout"]
    ratio = ran.estimate_s / ran.limit_s
    margin = max(1.0, float(np.quantile(ratio, 1 - _BUDGET_FALSE_ALARMS)))
    return {"margin": round(margin, 2), "n_finished": len(ran), "n_timeouts": len(timeouts),
            "timeouts_caught": float(np.mean(timeouts.estimate_s > margin * timeouts.limit_s)) if len(timeouts) else
            float("nan"),
            "log_error_sd": float(np.std(np.log(ran.estimate_s / ran.wall_s.clip(lower=1e-3))))}


def tune(pool, n: int = TUNING_N, seed: int = TUNING_SEED, workers: int = 1, out: str | None = None,
         outcomes: str | None = None, split: str = "tuning") -> dict:
    """The whole procedure: draw, execute, fit; returns the constants and the diagnostics.

    ``out``: also write the tuning set's outcomes there; ``outcomes``: refit from such a file
    instead of drawing and executing again (the fit alone, e.g. after changing it).
    """
    frame = pd.read_parquet(outcomes) if outcomes else tuning_outcomes(pool, n, seed, workers, split)
    if out:
        frame.to_parquet(out, index=False)
    return {"split": split, "profile": SPLIT_PROFILES[split], "seed": seed, "n": len(frame),
            "tasks": sorted(frame.task.unique()), "status_counts": frame.status.value_counts().to_dict(),
            "quality": fit_quality(frame), "budget": fit_budget(frame)}


def policy_items(policy, tasks, per_task: int, max_turns: int, sandbox, seed: int, workers: int = 1,
                 temperature: float = 1.0):
    """Scripts a policy writes for ``tasks`` (one group of ``per_task`` trajectories each, every turn,
    real feedback between turns) with their real results: ``(items, results, groups)``."""
    n = len(tasks)
    scorer = Scorer(sandbox, None, ComputeLedger(), memo=None, workers=workers)
    groups = rollout(policy, list(tasks), np.ones(n, bool), np.zeros(n, bool), per_task, max_turns, scorer, (seed,),
                     temperature)
    turns = [(tr.task, turn) for grp in groups for tr in grp for turn in tr.turns]
    return [(t, x.code) for t, x in turns], [x.real for _, x in turns], [t.name for t, _ in turns]


def trained_policy(run_dir: str | Path, task_dim: int):
    """The final policy of a grammar run (its ``checkpoint.pt``)."""
    saved = torch.load(Path(run_dir) / "checkpoint.pt", weights_only=False)
    policy = make_policy(int(saved["config"]["seed"]), task_dim)
    policy.load_state_dict(saved["learner"]["policy"])
    return policy


def measure(pool, run_dir: str | Path, per_task: int = 8, untrained_n: int = 96, seed: int = MEASURE_SEED,
            workers: int = 1, preset: str = "small", max_tasks: int | None = None) -> pd.DataFrame:
    """Every profile on the trained and the untrained agent's scripts, training and held-out tasks.

    One row per (agent, tasks, profile) with :func:`fidelity_summary`'s numbers and the per-item
    ``rows``; a script that is also in the tuning set is flagged (``in_tuning_set``), and where
    there are any, the same numbers without them follow in a ``(not tuned on)`` row. The sandbox,
    the turns and the world model's temperature are ``preset``'s (the run's); ``max_tasks`` keeps the
    first (smallest) tasks of each split only (None: all of them; a smoke test's size).
    """
    cfg = run_config("grpo", preset)
    sandbox = make_sandbox(cfg.sandbox)
    trained = trained_policy(run_dir, len(grammar.task_features(pool.train[0])))
    sets = {}
    for split, tasks in (("train", pool.train[:max_tasks]), ("heldout", pool.heldout[:max_tasks])):
        sets[("trained", split)] = policy_items(trained, tasks, per_task, cfg.train.max_turns, sandbox, seed, workers)
        items = sample_items(tasks, untrained_n if split == "train" else per_task * len(tasks), seed=0)
        sets[("untrained", split)] = items, sandbox.run_many(items, max_workers=workers), [t.name for t, _ in items]
    tuning = {(t.name, c) for t, c in sample_items(pool.train, TUNING_N, seed=TUNING_SEED, choose=runnable_choices)}
    out = []
    for (agent, split), (items, results, groups) in sets.items():
        seen = np.array([(t.name, c) in tuning for t, c in items])
        for profile in PROFILES:
            wm = ProgramAnalysisWorldModel(cfg.world_model.temperature, seed, cfg.sandbox.timeout_s, WARM_STARTUP_S,
                                           profile=profile)
            rows = fidelity_rows(items, results, wm.predict_many(items), groups).assign(in_tuning_set=seen)
            out.append({"agent": agent, "tasks": split, "profile": profile, **fidelity_summary(rows), "rows": rows})
            if seen.any():  # the same numbers without the scripts that the train_split profile was tuned on
                out.append({"agent": agent, "tasks": f"{split} (not tuned on)", "profile": profile,
                            **fidelity_summary(rows[~seen]), "rows": rows[~seen]})
    return pd.DataFrame(out)


def item_rows(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`measure`'s per-item ``rows``, one frame, each row with its ``agent``, ``tasks`` and ``profile``."""
    return pd.concat([r.assign(agent=a, tasks=s, profile=p) for a, s, p, r in
                      table[["agent", "tasks", "profile", "rows"]].itertuples(index=False)], ignore_index=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python notebooks/_wm_profile.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("tune", help="regenerate a profile's tuned constants from its tuning set")
    t.add_argument("--split", choices=sorted(SPLIT_PROFILES), default="tuning",
                   help="tasks to fit on: the tuning split (tuning_split profile) or the training tasks (train_split)")
    t.add_argument("--seed", type=int, default=TUNING_SEED)
    t.add_argument("--n", type=int, default=TUNING_N)
    t.add_argument("--workers", type=int, default=1)
    t.add_argument("--out", default=None, help="write the tuning set's outcomes here (parquet)")
    t.add_argument("--outcomes", default=None, help="refit from outcomes written by --out (no execution)")
    m = sub.add_parser("measure", help="every profile on a trained run's and the untrained agent's scripts")
    m.add_argument("--run", required=True, help="a grammar run folder with checkpoint.pt")
    m.add_argument("--per-task", type=int, default=8)
    m.add_argument("--workers", type=int, default=1)
    m.add_argument("--out", default=None, help="write the per-item rows here (parquet)")
    args = ap.parse_args(argv)
    from wmrl.tasks import get_pool

    pool = get_pool()
    if args.cmd == "tune":
        print(json.dumps(tune(pool, args.n, args.seed, args.workers, args.out, args.outcomes, args.split), indent=2,
                         default=str))
        return 0
    table = measure(pool, args.run, args.per_task, workers=args.workers)
    if args.out:
        item_rows(table).to_parquet(args.out)
    cols = ["agent", "tasks", "profile", *SUMMARY_COLUMNS]
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table[cols].round(3).to_string(index=False))
        for row in table.itertuples():
            print(f"\n== {row.agent} / {row.tasks} / {row.profile}\n{row.confusion.to_string()}\n"
                  f"{row.calibration.round(3).to_string()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
