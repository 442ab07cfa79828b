"""Where the VLA analog's runs live, and reading them back (no simulator needed).

A run lives like the agent runs (:mod:`wmrl.runs`), under
``<results>/vla/<preset>/<arm>[~<tag>]/seed<S>/``:

- ``result.json``: arm, preset, seed, the noise scheme (:data:`wmrl.vla.crn.SCHEME`), the
  evaluation metrics, the per-state successes, the learning curve (one row per step: success, the
  world model's fidelity on the step's rollouts, the step object's log, timings), the anchor pairs,
  the SFT stage's losses, timings, and the provenance (the whole :class:`~wmrl.vla.config.VLAConfig`,
  seed, git commit, date, machine);
- ``checkpoint.pt``: everything needed to resume (git-ignored).

``<results>/vla/.work/sft/`` caches the SFT policy and the frozen world model of a seed, keyed by
the ``sft`` section and the seed, shared by every arm and preset with that section: scratch,
safe to delete, never needed to replay. Every file is written atomically. Kept apart from
:mod:`wmrl.vla.runner` so a notebook in replay mode imports neither MuJoCo nor Meta-World.
"""

from __future__ import annotations

import json
from pathlib import Path

from wmrl.runs import RESULTS, run_dir, run_label

__all__ = ["load_results", "result_path", "sft_cache_dir", "vla_run_dir"]


def vla_run_dir(results: str | Path | None, preset: str, arm: str, seed: int, tag: str | None = None) -> Path:
    """``<results>/vla/<preset>/<arm>[~<tag>]/seed<S>``; ``results`` None means the repository's."""
    return run_dir(results, preset, arm, seed, tag, experiment="vla")


def result_path(results: str | Path | None, preset: str, arm: str, seed: int, tag: str | None = None) -> Path:
    return vla_run_dir(results, preset, arm, seed, tag) / "result.json"


def sft_cache_dir(results: str | Path | None) -> Path:
    return Path(results or RESULTS) / "vla" / ".work" / "sft"


def load_results(results: str | Path | None, preset: str, tag: str | None = None) -> list[dict]:
    """Every finished run of ``preset`` (the notebook's replay source): default runs, or those of ``tag``.

    Results in the layout of earlier versions (``<preset>/<arm>_seed<S>.json``) are not read: they
    were trained before the VLA ran through :class:`wmrl.step.WMRLStep` (another order of
    calibration and audit) and must be regenerated; the error says how.
    """
    root = Path(results or RESULTS) / "vla" / preset
    found = []
    for path in sorted(root.glob("*/seed*/result.json")):
        r = json.loads(path.read_text())
        if path.parent.parent.name == run_label(r["arm"], tag):
            found.append(r)
    old = sorted(root.glob("*_seed*.json"))
    if not found and old:
        raise FileNotFoundError(
            f"{root} holds {len(old)} results in an earlier layout (e.g. {old[0].name}), written before the VLA "
            f"trainer ran through wmrl.step.WMRLStep; regenerate them: python -m wmrl.vla run-all --preset {preset} "
            f"(or run notebook 06 with MODE='train')")
    return found
