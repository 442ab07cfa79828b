"""Run one arm at one seed: ``run_arm`` (Python) and ``python -m wmrl.experiments run`` (CLI).

A run is its :class:`~wmrl.config.RunConfig`: a preset from :mod:`wmrl.presets` with dotted
overrides on top. The agent kind in the config picks the trainer (the grammar agent's or the LLM
agent's); both write the run folder of :mod:`wmrl.runs` under
``results/train/<preset>/<arm>/seed<S>/`` by default.
"""

from __future__ import annotations

from pathlib import Path

from wmrl.config import RunConfig
from wmrl.presets import run_config
from wmrl.runs import run_dir
from wmrl.tasks import get_pool

__all__ = ["run_arm", "train_run"]


def train_run(cfg: RunConfig, preset: str, out: str | Path | None = None, *, pool=None, progress: bool = True,
              memo_path: str | Path | None = None) -> dict:
    """Train and evaluate the run ``cfg`` (resuming if its checkpoint exists); returns its summary.

    ``preset`` names the run's folder; ``pool`` defaults to ``cfg.paths.pool`` or the small pool.
    """
    out = Path(out) if out is not None else run_dir(cfg.paths.results_dir, preset, cfg.arm, cfg.seed)
    if pool is None:
        pool = get_pool(cfg.paths.pool)
    if cfg.agent.kind == "grammar":
        from wmrl.trainer.grammar import train  # deferred: it loads torch, which replaying notebooks never need
    else:
        from wmrl.trainer.llm.train import train
    return train(cfg, out, pool, preset, memo_path=memo_path, progress=progress)


def run_arm(arm: str, preset: str = "small", seed: int = 0, out: str | Path | None = None, *,
            overrides: dict | None = None, agent: str | None = None, pool=None, progress: bool = True,
            memo_path: str | Path | None = None) -> dict:
    """Train ``arm`` at ``preset`` and ``seed`` with dotted ``overrides``; returns the summary.

    >>> run_arm("wmrl", "smoke", seed=0, overrides={"method.anchor_fraction": 0.5})  # doctest: +SKIP
    """
    cfg = run_config(arm, preset, seed, overrides, agent=agent)
    return train_run(cfg, preset, out, pool=pool, progress=progress, memo_path=memo_path)
