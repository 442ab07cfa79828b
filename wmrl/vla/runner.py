"""One run folder per (arm, seed): train, evaluate, stamp provenance, write atomically.

A run's identity is its whole :class:`~wmrl.vla.config.VLAConfig` and its stamps
(:data:`wmrl.vla.train.STAMPS`: the noise scheme and the arithmetic): a finished run is reused only
if they all equal the requested ones, a checkpoint is resumed only then, and the SFT stage is
cached by its own section, the seed and the arithmetic. A stored result of another config is
retrained (the fields that differ are printed), never silently reused. Variants of an arm (runs with
overrides beyond the preset) live apart, under ``<arm>~<tag>/``. The layout of the files is in
:mod:`wmrl.vla.results`.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
from pathlib import Path

import torch

from wmrl import record as clock
from wmrl.config import ConfigError
from wmrl.presets import notebook_params
from wmrl.progress import RunCounter
from wmrl.provenance import provenance, write_json_atomic
from wmrl.vla.config import TASKS, VLA_ARMS, VLAConfig, vla_config
from wmrl.vla.envs import shared_pool
from wmrl.vla.evaluate import evaluate, summarise
from wmrl.vla.results import result_path, sft_cache_dir, vla_run_dir
from wmrl.vla.train import STAMPS, build_sft, resumable, sft_path, stamp_changes, train

__all__ = ["one_torch_thread", "preset_arms", "run_all", "run_one", "stored_result"]


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def stored_result(cfg: VLAConfig, preset: str, results=None, tag: str | None = None) -> tuple[dict | None, list[str]]:
    """``(result, [])`` if the run folder holds a result of exactly ``cfg``; else ``(None, fields that differ)``.

    A result of another noise scheme (written before :mod:`wmrl.vla.crn`) differs in ``noise``, one of
    another arithmetic (before :mod:`wmrl.vla.exact`) in ``arithmetic``.
    """
    path = result_path(results, preset, cfg.arm, cfg.seed, tag)
    if not path.exists():
        return None, []
    stored = json.loads(path.read_text())
    old, new = _flat(stored["provenance"]["config"]), _flat(cfg.to_dict())
    changed = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    changed += stamp_changes(stored)
    return (None, changed) if changed else (stored, [])


def run_one(cfg: VLAConfig, preset: str, results: str | Path | None = None, *, tag: str | None = None,
            progress_bar: bool = True) -> dict:
    """Train (or resume) and evaluate the run ``cfg`` into ``<results>/vla/<preset>/<arm>[~<tag>]/seed<S>``,
    on one torch thread; a result already there with the same config is returned as it is."""
    with one_torch_thread():
        return _run_one(cfg, preset, results, tag, progress_bar)


@contextlib.contextmanager
def one_torch_thread():
    """One torch thread inside (a VLA run's numbers then do not depend on the machine's core count), the
    caller's count given back after: a process that trains a VLA run and then an LLM run must not train
    the second on one thread."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _run_one(cfg: VLAConfig, preset: str, results, tag: str | None, progress_bar: bool) -> dict:
    folder = vla_run_dir(results, preset, cfg.arm, cfg.seed, tag)
    done, changed = stored_result(cfg, preset, results, tag)
    if done is not None:
        return done
    if changed:
        print(f"{folder / 'result.json'} was written with another config (changed: {', '.join(changed)}); retraining")
        (folder / "result.json").unlink()
    # Under an execution record the run is its own context, named after its folder
    # (``run:vla/<preset>/<label>/seed<S>``), resumed from where its checkpoint left it.
    saved = resumable(cfg, folder)
    with clock.context(clock.run_context(folder), None if saved is None else saved.get("position", 0)):
        run = train(cfg, folder, sft_cache_dir(results), progress_bar, saved)
        t0 = clock.wall()
        success = evaluate(run.policy, shared_pool(), cfg.eval.states, cfg.eval.samples, cfg.train.horizon, cfg.seed)
        eval_s = clock.wall() - t0
    sft = build_sft(cfg.sft, cfg.seed, sft_cache_dir(results))
    result = {
        "arm": cfg.arm, "preset": preset, "tag": tag, "seed": cfg.seed, "tasks": list(TASKS), **STAMPS,
        "metrics": summarise(success), "success": success.tolist(),
        "history": run.history, "pairs": run.pairs,
        "sft": {"bc_losses": sft["bc_losses"], "demo_success": sft["demo_success"], "build_s": sft["build_s"]},
        "timing": {"train_s": run.wall_s, "eval_s": eval_s},
        "provenance": provenance(cfg.to_dict(), cfg.seed),
    }
    write_json_atomic(folder / "result.json", result)
    return result


def preset_arms(preset: str) -> list[str]:
    """The arms notebook 06 shows for ``preset`` (its ``VLA_ARMS``), else every VLA arm."""
    return list(notebook_params(preset).get("VLA_ARMS", VLA_ARMS))


def _job(args) -> str:
    cfg, preset, results, tag = args
    run_one(cfg, preset, results, tag=tag, progress_bar=False)
    return f"{cfg.arm} seed {cfg.seed}"


def run_all(preset: str, seeds, results: str | Path | None = None, arms=None, workers: int = 2,
            overrides: dict | None = None, tag: str | None = None) -> None:
    """Every (arm, seed) of ``preset`` without a result of its config; the SFT stage of each seed is built first.

    ``arms`` default to :func:`preset_arms`. ``overrides`` (dotted :class:`VLAConfig` fields) need a
    ``tag`` so that their runs do not replace the default runs of their arm. ``workers`` processes
    train at once, one torch thread each.
    """
    if overrides and not tag:
        raise ConfigError(f"runs with overrides {sorted(overrides)} need a tag (e.g. --tag my_variant), so they "
                          "do not replace the default runs of their arm")
    if tag is not None and (not tag or "/" in tag or "~" in tag):
        raise ConfigError(f"tag must be a non-empty name without '/' or '~', got {tag!r}")
    cfgs = [vla_config(a, preset, s, overrides) for s in seeds for a in (arms or preset_arms(preset))]
    todo = [c for c in cfgs if stored_result(c, preset, results, tag)[0] is None]
    if not todo:
        return
    cache = sft_cache_dir(results)
    stages = list({sft_path(c.sft, c.seed, cache): (c.sft, c.seed, cache) for c in todo}.values())
    jobs = [(c, preset, results, tag) for c in todo]
    counter = RunCounter([f"vla {c.arm} seed {c.seed}" for c in todo], [_expected_s(c, preset, tag) for c in todo],
                         groups=[c.arm for c in todo], at_once=max(1, workers))
    counter.begin()
    if workers <= 1:
        for stage in stages:
            build_sft(*stage)
        for i, job in enumerate(jobs):
            counter.start(i)
            _job(job)
            counter.finish(i, recorded=_seconds(stored_result(todo[i], preset, results, tag)[0]))
        return
    with mp.get_context("spawn").Pool(workers) as pool:
        pool.starmap(build_sft, stages)
        labels = {f"{c.arm} seed {c.seed}": i for i, c in enumerate(todo)}
        for done in pool.imap_unordered(_job, jobs):
            i = labels[done]
            counter.finish(i, _seconds(stored_result(todo[i], preset, results, tag)[0]))


def _seconds(result: dict | None) -> float | None:
    """A VLA result's training and evaluation seconds, or None."""
    timing = (result or {}).get("timing") or {}
    return timing["train_s"] + timing.get("eval_s", 0.0) if "train_s" in timing else None


def _expected_s(cfg: VLAConfig, preset: str, tag: str | None) -> float | None:
    """The seconds the committed result of this (arm, seed) took (the run counter's estimate); for a seed not run
    yet, the mean of the arm's committed seeds; None when the arm has none."""
    def took(path: Path) -> float | None:
        try:
            return _seconds(json.loads(path.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    own = result_path(None, preset, cfg.arm, cfg.seed, tag)
    if (seconds := took(own)) is not None:
        return seconds
    others = [t for p in sorted(own.parent.parent.glob("seed*/result.json")) if (t := took(p)) is not None]
    return sum(others) / len(others) if others else None
