"""Gather runs for the notebooks: train what is missing, load what exists.

The notebooks share runs: the ``wmrl`` arm of the main table is the ``both`` row of the ablation
table and the reference of the anchor-only notebook. :func:`ensure_runs` therefore trains an
(arm, seed) only when its ``summary.json`` is missing or was written with another config, and
:func:`load_runs` reads every finished run of a preset from ``results/`` (redraw mode).

A run with config overrides (a new switch, an ablation) needs a ``tag``: it is stored under
``<arm>~<tag>/`` and loaded as arm ``"<arm>~<tag>"``, so it never overwrites, and is never
mistaken for, the default run of its arm.

:func:`ensure_arm_runs` is the notebooks' one call: train the missing runs in train mode, load them,
check that every (arm, seed) asked for is there, and add the compute totals. :func:`ensure_vla_runs`
is the same call for the VLA analog's runs (notebook 06).
"""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import pandas as pd

from wmrl.config import SCHEDULING_FIELDS, experiment_identity
from wmrl.experiments.costs import add_totals
from wmrl.experiments.executor import parse_executor
from wmrl.experiments.notebook import NotebookConfig, ParameterError
from wmrl.experiments.run import check_pool, run_arm
from wmrl.presets import run_config
from wmrl.progress import RunCounter
from wmrl.runs import RESULTS, run_dir, run_label
from wmrl.tasks import default_root, is_small_pool_root
from wmrl.tasks.recipe import ensure_pool, pool_is_current

__all__ = ["check_runs_present", "ensure_arm_runs", "ensure_runs", "ensure_vla_runs", "expected_seconds", "load_runs",
           "load_table", "run_settings"]


def __getattr__(name: str):
    """``load_arm_runs`` is a callable that fails naming the function meant: the call that trains what is
    missing and then loads is :func:`ensure_arm_runs` (the ``load_*`` functions only read)."""
    if name == "load_arm_runs":
        def load_arm_runs(*args, **kwargs):
            raise NameError("there is no load_arm_runs: ensure_arm_runs(cfg, arms, ...) trains the missing runs "
                            "(train mode) and loads them; load_runs only reads")
        return load_arm_runs
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def ensure_runs(arms, seeds, preset: str = "small", results: str | Path = RESULTS, progress: bool = True,
                tag: str | None = None, executor: str | None = None, overrides: dict | None = None) -> pd.DataFrame:
    """Train every missing (arm, seed) of ``preset``; return :func:`load_runs` of them.

    ``overrides`` are dotted :class:`~wmrl.config.RunConfig` fields (``{"method.anchor_fraction":
    0.25}``); they need a ``tag`` (the name of the variant) so that their runs live apart from the
    default ones. A default run trained with another config is retrained (a preset changed). A
    tagged one is retrained only when none of the fields that differ is one of ``overrides`` (a
    default changed under the variant; the fields are printed): asking a tag for other values of
    its overrides than its runs were trained with is an error that names the fields that differ,
    before anything trains.

    ``executor`` says where the missing runs train (:mod:`wmrl.experiments.executor`: ``local``, the
    default, one at a time with a sandbox worker per core; ``local:N``, N processes here; ``ray[:C]``,
    one Ray task per run). The sandbox's budget counts CPU seconds, so load moves only the wall-clock
    backstop and the charged wall seconds (``python -m bench.campaign_load`` compares a campaign idle
    and busy). Runs are independent (their own seeds and RNGs) and share only the execution memo,
    which is safe for concurrent writers.
    ``sandbox.workers`` is a scheduling field (:data:`~wmrl.config.SCHEDULING_FIELDS`): a run is
    reused whatever worker count it was trained with.
    """
    overrides, where = dict(overrides or {}), parse_executor(executor)
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
                if stored is not None and tag is not None:
                    diff = _config_diff(experiment_identity(stored), want)
                    if set(_differing(experiment_identity(stored), want)) & set(overrides):  # never retrained over
                        raise ValueError(
                            f"tag {tag!r} already holds another experiment: {out} was trained with "
                            f"{'; '.join(diff)}. Name these overrides with a new tag, or delete {out.parent} "
                            "to retrain under this one")
                    print(f"{out}: retrained, the defaults under its overrides changed: {'; '.join(diff)}",
                          flush=True)
                todo.append((arm, seed, out))
    if where.kind == "ray" and todo:
        from wmrl.experiments.cluster import train_on_ray  # deferred: imports ray, which a local campaign never needs

        overrides.setdefault("sandbox.workers", where.n)
        train_on_ray(todo, preset, overrides, cpus=where.n, progress=progress)
    elif todo:
        _train_locally(todo, preset, overrides, min(where.n, len(todo)), progress)
    return load_runs(preset, results, arms=arms, seeds=seeds, tag=tag)


def expected_seconds(preset: str, label: str, seed: int, results: str | Path = RESULTS) -> float | None:
    """The wall time the run ``label`` (``arm`` or ``arm~tag``) at ``seed`` under ``results`` recorded (the
    committed one by default); for a seed not run yet, the mean of ``label``'s recorded runs at other seeds (an
    earlier look's); None when ``label`` has none."""
    def wall(summary: Path) -> float | None:
        try:
            return float(json.loads(summary.read_text())["wall_s"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    folder = Path(results) / "train" / preset / label
    if (own := wall(folder / f"seed{seed}" / "summary.json")) is not None:
        return own
    others = [w for s in sorted(folder.glob("seed*/summary.json")) if (w := wall(s)) is not None]
    return sum(others) / len(others) if others else None


def _counter(todo, preset: str, jobs: int, progress: bool) -> RunCounter:
    """The batch's :class:`~wmrl.progress.RunCounter` (silent without ``progress``), timed by the committed runs;
    a run's label is its folder's (``arm`` or ``arm~tag``)."""
    folders = [(Path(out).parent.name, seed) for _, seed, out in todo]
    return RunCounter([f"{label} seed {seed}" for label, seed in folders],
                      [expected_seconds(preset, label, seed) for label, seed in folders],
                      groups=[label for label, _ in folders], at_once=jobs, quiet=not progress)


def _prepare_pool(todo, preset: str, overrides: dict, progress: bool) -> None:
    """Build the runs' small pool here, once, before any run is timed (a run refused the small pool is refused
    here, first). On a fresh clone the pool is built at its first use, minutes that the run counter would
    otherwise read as a fixed cost of every run."""
    arm, seed, _ = todo[0]
    root = run_config(arm, preset, seed, overrides).paths.pool
    check_pool(preset, root)
    if is_small_pool_root(root) and not pool_is_current(root):
        if progress:
            print(f"[runs] preparing the small task pool in {root or default_root()} (once)", file=sys.stderr,
                  flush=True)
        ensure_pool(root)


def _train_locally(todo, preset: str, overrides: dict, jobs: int, progress: bool) -> None:
    """Train ``todo``'s (arm, seed, folder) on this machine, ``jobs`` at once, each with ``cores // jobs`` sandbox
    workers, with a line on stderr as each run starts and ends (:class:`~wmrl.progress.RunCounter`)."""
    overrides.setdefault("sandbox.workers", max(1, (os.cpu_count() or 1) // jobs))
    _prepare_pool(todo, preset, overrides, progress)
    counter = _counter(todo, preset, jobs, progress)
    if jobs == 1:
        for i, (arm, seed, out) in enumerate(todo):
            counter.start(i)
            summary = run_arm(arm, preset, seed, out, overrides=overrides, progress=progress)
            counter.finish(i, recorded=summary.get("wall_s") if isinstance(summary, dict) else None)
        return
    counter.begin()
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no forked torch or sandbox state
    with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
        futures = {pool.submit(run_arm, arm, preset, seed, out, overrides=overrides, progress=False): i
                   for i, (arm, seed, out) in enumerate(todo)}
        for fut in as_completed(futures):
            summary = fut.result()  # re-raise a failed run's error; the runs that finished are on disk
            counter.finish(futures[fut], summary.get("wall_s") if isinstance(summary, dict) else None)


def _dotted(config: dict, prefix: str = "") -> dict:
    """A nested config dict as ``{"section.field": value}``."""
    out = {}
    for key, value in config.items():
        out.update(_dotted(value, f"{prefix}{key}.") if isinstance(value, dict) else {prefix + key: value})
    return out


def _differing(stored: dict, wanted: dict) -> list[str]:
    """The dotted fields in which two nested configs differ, sorted."""
    a, b = _dotted(stored), _dotted(wanted)
    return sorted(k for k in a.keys() | b.keys() if a.get(k, "<absent>") != b.get(k, "<absent>"))


def _config_diff(stored: dict, wanted: dict) -> list[str]:
    """``"section.field=<stored> (asked: <wanted>)"`` for every field in which two nested configs differ."""
    a, b = _dotted(stored), _dotted(wanted)
    return [f"{k}={a.get(k, '<absent>')!r} (asked: {b.get(k, '<absent>')!r})" for k in _differing(stored, wanted)]


def load_runs(preset: str = "small", results: str | Path = RESULTS, arms=None, seeds=None,
              tag: str | None = None) -> pd.DataFrame:
    """One row per finished run: arm, seed, held-out Avg and per category, compute, wall time, provenance.

    ``wall_s`` is the run's wall time, its final evaluation included (``eval_wall_s`` of it); NaN where a
    summary did not record them.

    Compute columns are ``<component>_charged_s`` / ``_actual_s``; a run that recorded seconds apart
    from its cost (:data:`wmrl.ledger.APART`, e.g. ``oracle``) also has ``oracle_charged_s``,
    ``oracle_actual_s`` and ``oracle_count``, which no total counts.

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
               "git_commit": s["provenance"]["git_commit"], "date": s["provenance"]["date"],
               "wall_s": s.get("wall_s", float("nan")), "eval_wall_s": s.get("eval_actual_s", float("nan"))}
        row.update({f"cat_{k}": v for k, v in s["heldout"]["per_category"].items()})
        for comp, c in s["compute"].items():
            row[f"{comp}_charged_s"], row[f"{comp}_actual_s"] = c["charged_s"], c["actual_s"]
        for comp, c in s.get("compute_apart", {}).items():  # beside the cost: add_totals never sums these
            row[f"{comp}_charged_s"], row[f"{comp}_actual_s"], row[f"{comp}_count"] = (
                c["charged_s"], c["actual_s"], c["count"])
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


def run_settings(runs: pd.DataFrame, *fields: str) -> pd.DataFrame:
    """Configuration values of each run (``"method.rho_max"``...), read from its ``summary.json``.

    A run records its whole configuration; runs written before the typed configuration tree kept
    it flat (``rho_max`` at the top level), so a dotted name falls back to its last part.
    """
    rows = []
    for d in runs.dir:
        config = json.loads((Path(d) / "summary.json").read_text())["provenance"]["config"]
        row = {}
        for f in fields:
            section, _, name = f.rpartition(".")
            value = config.get(section, {}).get(name) if isinstance(config.get(section), dict) else None
            row[f] = config.get(name) if value is None else value
        rows.append(row)
    return pd.DataFrame(rows, index=pd.MultiIndex.from_arrays([runs.arm, runs.seed]))


def check_runs_present(runs: pd.DataFrame, arms, seeds) -> None:
    """Fail with the missing (arm, seed) pairs and how to train them, instead of a KeyError later."""
    have = set(zip(runs.arm, runs.seed))
    missing = [(a, s) for a in arms for s in seeds if (a, s) not in have]
    if missing:
        raise ParameterError(
            f"missing runs {missing}; train them with MODE='train' (papermill: -p MODE train) or "
            f"`python -m wmrl.experiments run --arm ARM --seed SEED`, or pass SEEDS/ARMS that exist")


def ensure_arm_runs(cfg: NotebookConfig, arms, *, tag: str | None = None, overrides: dict | None = None,
                    seeds=None) -> pd.DataFrame:
    """A notebook's runs of ``arms``: trained first when ``cfg.mode`` is train, checked, with compute totals.

    One row per (arm, seed) as :func:`load_runs` gives it, plus :func:`~wmrl.experiments.costs.add_totals`'
    columns and ``run``, the run's folder relative to ``cfg.results_dir`` (what a reader can open).
    """
    arms, seeds = list(arms), list(cfg.seeds if seeds is None else seeds)
    if cfg.train:
        ensure_runs(arms, seeds, cfg.preset, cfg.results_dir, tag=tag, overrides=overrides, executor=cfg.executor)
    try:
        runs = load_runs(cfg.preset, cfg.results_dir, arms=arms, seeds=seeds, tag=tag)
    except FileNotFoundError as e:
        raise ParameterError(str(e)) from None
    check_runs_present(runs, [run_label(a, tag) for a in arms], seeds)
    runs = add_totals(runs)
    runs["run"] = [str(Path(d).resolve().relative_to(cfg.results_dir)) for d in runs.dir]
    order = {run_label(a, tag): i for i, a in enumerate(arms)}
    return runs.assign(_o=runs.arm.map(order)).sort_values(["_o", "seed"]).drop(columns="_o").reset_index(drop=True)


def ensure_vla_runs(cfg: NotebookConfig, arms, *, required=(), workers: int = 2) -> list[dict]:
    """Notebook 06's VLA runs of ``arms`` at ``cfg.seeds``: trained first when ``cfg.mode`` is train.

    Every arm of ``required`` must have a run at every seed (the notebook's error says how to train
    it); the other arms are kept only where every seed has one (a partly trained arm is left out,
    not averaged over fewer seeds). Returns the results as :func:`wmrl.vla.results.load_results`
    reads them, in ``arms`` order, then by seed.
    """
    from wmrl.vla.results import load_results

    arms, seeds = list(arms), list(cfg.seeds)
    if cfg.train:
        from wmrl.vla.runner import run_all  # needs the simulator; a redraw does not

        run_all(cfg.preset, seeds, cfg.results_dir, arms=arms, workers=workers)
    try:
        found = [r for r in load_results(cfg.results_dir, cfg.preset) if r["seed"] in seeds and r["arm"] in arms]
    except FileNotFoundError as e:
        raise ParameterError(str(e)) from None
    have = {(r["arm"], r["seed"]) for r in found}
    missing = [(a, s) for a in required for s in seeds if (a, s) not in have]
    if missing:
        raise ParameterError(
            f"no VLA results for {missing} in {cfg.results_dir / 'vla' / cfg.preset}; train them with MODE='train' "
            f"(papermill: -p MODE train) or `python -m wmrl.vla run-all --preset {cfg.preset}`, or pass SEEDS that exist")
    complete = [a for a in arms if all((a, s) in have for s in seeds)]
    return sorted((r for r in found if r["arm"] in complete), key=lambda r: (complete.index(r["arm"]), r["seed"]))
