"""Where the VLA analog's runs live, and reading them back (no simulator needed).

A run lives like the agent runs (:mod:`wmrl.runs`), under
``<results>/vla/<preset>/<arm>[~<tag>]/seed<S>/``:

- ``result.json``: arm, preset, seed, the stamps (:data:`wmrl.vla.train.STAMPS`: noise scheme and
  arithmetic), the evaluation metrics, the per-state successes, the learning curve (one row per step: success, the
  world model's fidelity on the step's rollouts, the step object's log, timings), the anchor pairs,
  the SFT stage's losses, timings, and the provenance (the whole :class:`~wmrl.vla.config.VLAConfig`,
  seed, git commit, date, machine);
- ``checkpoint.pt``: everything needed to resume (git-ignored).

``<results>/vla/.work/sft/`` caches the SFT policy and the frozen world model of a seed, keyed by
the ``sft`` section and the seed, shared by every arm and preset with that section: scratch,
safe to delete, needed neither to redraw nor to replay. Every file is written atomically. Kept apart from
:mod:`wmrl.vla.runner` so a notebook in redraw mode imports neither MuJoCo nor Meta-World.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from wmrl.runs import RESULTS, run_dir, run_label

__all__ = ["history_table", "load_results", "pairs_table", "result_path", "runs_table", "sft_cache_dir", "vla_run_dir"]

METRICS = ("overall", "sr_id", "sr_ood", "best_at_k", "all_at_k")


def vla_run_dir(results: str | Path | None, preset: str, arm: str, seed: int, tag: str | None = None) -> Path:
    """``<results>/vla/<preset>/<arm>[~<tag>]/seed<S>``; ``results`` None means the repository's."""
    return run_dir(results, preset, arm, seed, tag, experiment="vla")


def result_path(results: str | Path | None, preset: str, arm: str, seed: int, tag: str | None = None) -> Path:
    return vla_run_dir(results, preset, arm, seed, tag) / "result.json"


def sft_cache_dir(results: str | Path | None) -> Path:
    return Path(results or RESULTS) / "vla" / ".work" / "sft"


def load_results(results: str | Path | None, preset: str, tag: str | None = None) -> list[dict]:
    """Every finished run of ``preset`` (what the notebook redraws from): default runs, or those of ``tag``.

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


def runs_table(found: list[dict]) -> pd.DataFrame:
    """One row per run (``arm``, ``seed``): the evaluation's metrics as fractions, overall and per task
    (``overall_<task>``...), ``k``, timings, environment steps and provenance."""
    rows = []
    for r in found:
        m = r["metrics"]
        row = {"arm": r["arm"], "seed": r["seed"], **{c: m["all"][c] for c in METRICS}, "k": m["k"]}
        for task in r["tasks"]:
            row.update({f"{c}_{task}": m[task][c] for c in METRICS})
        row.update({"sft_s": r["sft"]["build_s"], "train_s": r["timing"]["train_s"], "eval_s": r["timing"]["eval_s"],
                    "env_steps": sum(h["env_steps"] for h in r["history"]),
                    "git_commit": r["provenance"]["git_commit"], "date": r["provenance"]["date"]})
        rows.append(row)
    return pd.DataFrame(rows)


def history_table(found: list[dict]) -> pd.DataFrame:
    """One row per (arm, seed, training step): the trainer's log (success, the world model's fidelity,
    the step object's eta^2, rho, ..., timings)."""
    return pd.DataFrame([{"arm": r["arm"], "seed": r["seed"], **h} for r in found for h in r["history"]])


def pairs_table(found: list[dict]) -> pd.DataFrame:
    """One row per anchor pair (arm, seed, step, raw prediction ``pred``, ``calibrated``, ``true``), in push order."""
    return pd.DataFrame([{"arm": r["arm"], "seed": r["seed"], **p} for r in found for p in r["pairs"]],
                        columns=["arm", "seed", "step", "pred", "calibrated", "true"])
