"""Run one arm at one seed: ``run_arm`` (Python) and ``python -m wmrl.experiments run`` (CLI).

A run is its :class:`~wmrl.config.RunConfig`: a preset from :mod:`wmrl.presets` with dotted
overrides on top. The agent kind in the config picks the trainer (the grammar agent's or the LLM
agent's); both write the run folder of :mod:`wmrl.runs` under
``results/train/<preset>/<arm>/seed<S>/`` by default.
"""

from __future__ import annotations

from pathlib import Path

from wmrl.config import ConfigError, RunConfig
from wmrl.presets import PRESETS, run_config
from wmrl.runs import run_dir
from wmrl.tasks import default_root, get_pool, is_small_pool_root

__all__ = ["check_pool", "run_arm", "train_run"]


def train_run(cfg: RunConfig, preset: str, out: str | Path | None = None, *, pool=None, progress: bool = True,
              memo_path: str | Path | None = None) -> dict:
    """Train and evaluate the run ``cfg`` (resuming if its checkpoint exists); returns its summary.

    ``preset`` names the run's folder; ``pool`` defaults to ``cfg.paths.pool`` or the small pool. A
    preset whose tasks must be imported competitions refuses the small pool here, before the pool
    is prepared or any model loads.
    """
    out = Path(out) if out is not None else run_dir(cfg.paths.results_dir, preset, cfg.arm, cfg.seed)
    check_pool(preset, pool.root if pool is not None else cfg.paths.pool)
    if pool is None:
        pool = get_pool(cfg.paths.pool)
    if cfg.agent.kind == "grammar":
        from wmrl.trainer.grammar import train  # deferred: it loads torch, which redrawing notebooks never need
    else:
        from wmrl.trainer.llm.train import train
    return train(cfg, out, pool, preset, memo_path=memo_path, progress=progress)


def check_pool(preset: str, root) -> None:
    """Refuse the small pool (``root``: the pool's folder, None for the default one) for a preset whose tasks
    must be imported competitions (:attr:`wmrl.presets.Preset.imported_pool`)."""
    spec = PRESETS.get(preset)
    if spec is None or not spec.imported_pool or not is_small_pool_root(root):
        return
    where = (f"paths.pool is not set, so the run would use the small pool at {default_root()}" if root is None
             else f"paths.pool={str(root)!r} is the small pool (or an empty folder it would be prepared in)")
    raise ConfigError(f"preset {preset!r} trains and evaluates on real competitions, but {where}. Import them "
                      "first: python -m wmrl.tasks import --layout mledojo|mlebench|dsbench SRC --out POOL "
                      "(SRC: the benchmark's data folder), then pass --set paths.pool=POOL")


def run_arm(arm: str, preset: str = "small", seed: int = 0, out: str | Path | None = None, *,
            overrides: dict | None = None, agent: str | None = None, pool=None, progress: bool = True,
            memo_path: str | Path | None = None) -> dict:
    """Train ``arm`` at ``preset`` and ``seed`` with dotted ``overrides``; returns the summary.

    >>> run_arm("wmrl", "smoke", seed=0, overrides={"method.anchor_fraction": 0.5})  # doctest: +SKIP
    """
    cfg = run_config(arm, preset, seed, overrides, agent=agent)
    return train_run(cfg, preset, out, pool=pool, progress=progress, memo_path=memo_path)
