"""Gather runs for the notebooks: train what is missing, load what exists, with 95% intervals.

The notebooks share runs: the ``wmrl`` arm of the main table is the ``both`` row of the ablation
table and the reference of the anchor-only notebook. :func:`ensure_runs` therefore trains an
(arm, seed) only when its ``summary.json`` is missing or was written with another config, and
:func:`load_runs` reads every finished run of a preset from ``results/`` (replay mode).

A run with config overrides (a new switch, an ablation) needs a ``tag``: it is stored under
``<arm>~<tag>/`` and loaded as arm ``"<arm>~<tag>"``, so it never overwrites, and is never
mistaken for, the default run of its arm.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from tqdm.auto import tqdm

from wmrl.config import SCHEDULING_FIELDS, experiment_identity
from wmrl.experiments.run import run_arm
from wmrl.presets import run_config
from wmrl.trainer.runs import RESULTS, run_dir, run_label

__all__ = ["ensure_runs", "load_runs", "load_table", "mean_ci"]


def ensure_runs(arms, seeds, preset: str = "small", results: str | Path = RESULTS, progress: bool = True,
                tag: str | None = None, jobs: int | None = None, overrides: dict | None = None) -> pd.DataFrame:
    """Train every missing (arm, seed) of ``preset``; return :func:`load_runs` of them.

    ``overrides`` are dotted :class:`~wmrl.config.RunConfig` fields (``{"method.anchor_fraction":
    0.25}``); they need a ``tag`` (the name of the variant) so that their runs live apart from the
    default ones.

    ``jobs`` runs train in parallel processes (default ``$WMRL_JOBS``, else 1), each with
    ``cores // jobs`` sandbox workers, so that no more solutions run at once than there are cores:
    the sandbox's time budget is wall-clock, and an oversubscribed core turns slow-but-valid
    solutions into timeouts (measured: a grpo run whose two workers shared two cores with another
    run's two scored held-out Avg 0.34 and was charged 910 s; alone, 0.63 and 463 s). One run at a
    time is the default so that each run's wall time is that of a run alone, as reported; two
    jobs finish a campaign a little sooner, since a run's own work (generation, world model,
    update) then overlaps the other's executions. Runs are independent (their own seeds and RNGs)
    and share only the execution memo, which is safe for concurrent writers.
    ``sandbox.workers`` is a scheduling field (:data:`~wmrl.config.SCHEDULING_FIELDS`): a run is
    reused whatever worker count it was trained with.
    """
    overrides = dict(overrides or {})
    if set(overrides) - set(SCHEDULING_FIELDS) and not tag:
        raise ValueError(f"runs with overrides {sorted(overrides)} need a tag, e.g. tag='my_ablation', "
                         "so they do not replace the default runs of their arm")
    if tag is not None and (not tag or "/" in tag or "~" in tag):
        raise ValueError(f"tag must be a non-empty name without '/' or '~', got {tag!r}")
    todo = []
    for arm in arms:
        for seed in seeds:
            out = run_dir(results, preset, arm, seed, tag)
            summary = out / "summary.json"
            want = run_config(arm, preset, seed, overrides).identity()
            stored = json.loads(summary.read_text())["provenance"]["config"] if summary.exists() else None
            if stored is None or experiment_identity(stored) != want:
                todo.append((arm, seed, out))
    jobs = max(1, min(int(jobs or os.environ.get("WMRL_JOBS", "1")), len(todo)))
    overrides.setdefault("sandbox.workers", max(1, (os.cpu_count() or 1) // jobs))
    if jobs == 1:
        for arm, seed, out in todo:
            run_arm(arm, preset, seed, out, overrides=overrides, progress=progress)
    else:
        ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no forked torch or sandbox state
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = {pool.submit(run_arm, arm, preset, seed, out, overrides=overrides, progress=False): (arm, seed)
                       for arm, seed, out in todo}
            for fut in tqdm(as_completed(futures), total=len(futures), desc=f"training {preset} runs",
                            disable=not progress):
                fut.result()  # re-raise a failed run's error; the runs that finished are on disk
    return load_runs(preset, results, arms=arms, seeds=seeds, tag=tag)


def load_runs(preset: str = "small", results: str | Path = RESULTS, arms=None, seeds=None,
              tag: str | None = None) -> pd.DataFrame:
    """One row per finished run: arm, seed, held-out Avg and per category, compute, provenance.

    Without ``tag`` only default runs are read; with it only the runs of that variant, whose
    ``arm`` column reads ``"<arm>~<tag>"``.
    """
    root = Path(results) / "train" / preset
    rows = []
    for summary in sorted(root.glob("*/seed*/summary.json")):
        s = json.loads(summary.read_text())
        if summary.parent.parent.name != run_label(s["arm"], tag):
            continue
        if (arms is not None and s["arm"] not in arms) or (seeds is not None and s["seed"] not in seeds):
            continue
        row = {"arm": run_label(s["arm"], tag), "seed": s["seed"], "avg": s["heldout"]["avg"], "dir": str(summary.parent),
               "git_commit": s["provenance"]["git_commit"], "date": s["provenance"]["date"]}
        row.update({f"cat_{k}": v for k, v in s["heldout"]["per_category"].items()})
        for comp, c in s["compute"].items():
            row[f"{comp}_charged_s"], row[f"{comp}_actual_s"] = c["charged_s"], c["actual_s"]
        rows.append(row)
    if not rows:
        raise FileNotFoundError(
            f"no finished runs{f' tagged {tag!r}' if tag else ''} under {root}; train them first (MODE='train' or "
            f"`python -m wmrl.experiments run --arm ARM --preset {preset}`), or pass another RESULTS_DIR/PRESET")
    return pd.DataFrame(rows)


def load_table(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """Concatenate one parquet table (``steps``, ``eval``, ``ledger``, ``pairs``) over runs."""
    frames = []
    for _, r in runs.iterrows():
        df = pd.read_parquet(Path(r["dir"]) / f"{name}.parquet")
        frames.append(df.assign(arm=r["arm"], seed=r["seed"]))
    return pd.concat(frames, ignore_index=True)


def mean_ci(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean and Student-t confidence interval (NaN half-width with fewer than two values)."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, float("nan"), float("nan")
    half = float(stats.t.ppf(0.5 + confidence / 2, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    return m, m - half, m + half
