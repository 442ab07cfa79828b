"""The one run-folder layout, shared by every trainer: where a run lives and what it writes.

A training run of any agent (grammar or LLM) writes, under
``<results>/train/<preset>/<arm>[~<tag>]/seed<S>/``:

- ``summary.json``: arm, preset, seed, final held-out Avg and per category, compute totals,
  the seconds recorded apart from them (``compute_apart``: an oracle-derived world model's real
  executions, :data:`wmrl.ledger.APART`; only in the runs that have some), provenance (the whole
  config, seed, git commit, date, machine);
- ``steps.parquet``: one row per training step (rewards, eta^2, rho, anchor share, fidelity, ...);
- ``eval.parquet``: held-out avg@k per task at each evaluation step;
- ``ledger.parquet``: seconds per step and component, actual and charged;
- ``pairs.parquet`` and ``calibration.json``: the anchor pairs (:data:`PAIR_COLUMNS`; ``region`` only in
  the runs that log one) and the isotonic map's snapshots;
- ``checkpoint.pt``: everything needed to resume (git-ignored; it exists to resume, not to report).

Every file is written atomically (a temporary file renamed into place), so a run killed
mid-write never leaves a half-written file that a notebook would read. The notebooks read grammar
and LLM runs alike because both go through :func:`write_run`.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from wmrl.ledger import ComputeLedger
from wmrl.provenance import REPO, atomic_path, provenance, write_json_atomic

__all__ = ["FLOAT32_DIAGNOSTICS", "FLOAT32_RTOL", "PAIR_COLUMNS", "RESULTS", "headline", "per_category", "run_dir",
           "run_label", "write_run"]

RESULTS = REPO / "results"
#: An anchor pair's fields after its step: the raw and calibrated prediction, the real reward, and
#: (notebook 09's runs) whether the scored script is in the logged region (1) or not (0).
PAIR_COLUMNS = ("pred", "calibrated", "true", "region")
#: The columns of ``steps.parquet`` the policy computes in float32 (torch): its loss, KL to the reference
#: and entropy. Their last bits depend on the CPU's vector instructions and the BLAS code path it takes,
#: which no execution record fixes, and the rounding carries through the optimiser's steps, so a replay
#: on another machine gives them back to ``FLOAT32_RTOL`` (relative, with as much absolute slack), not
#: to the bit. Every score, reward, bill, pair and calibration is float64 arithmetic on recorded
#: outcomes, and is compared exactly.
FLOAT32_DIAGNOSTICS = ("loss", "kl", "entropy")
FLOAT32_RTOL = 1e-3


def run_label(arm: str, tag: str | None = None) -> str:
    """The folder name of an arm's runs: ``arm``, or ``arm~tag`` for a variant (an ablation)."""
    return arm if tag is None else f"{arm}~{tag}"


def run_dir(results: str | Path | None, preset: str, arm: str, seed: int, tag: str | None = None,
            experiment: str = "train") -> Path:
    """``<results>/<experiment>/<preset>/<arm>[~<tag>]/seed<S>`` (``experiment``: ``train`` or ``vla``);
    ``results`` None means the repository's."""
    return Path(results or RESULTS) / experiment / preset / run_label(arm, tag) / f"seed{seed}"


def per_category(tasks, k: int) -> list:
    """The ``k`` smallest tasks of each category (all of them when ``k`` is 0)."""
    if not k:
        return list(tasks)
    by_cat: dict[str, list] = {}
    for t in sorted(tasks, key=lambda t: t.size_bytes):
        by_cat.setdefault(t.category, []).append(t)
    return [t for cat in sorted(by_cat) for t in by_cat[cat][:k]]


def headline(evals: pd.DataFrame) -> dict:
    """The paper's metric at the last evaluation: mean per category, Avg = mean of categories."""
    last = evals[evals.step == evals.step.max()]
    per_cat = last.groupby("category")["percentile"].mean()
    return {"avg": float(per_cat.mean()), "per_category": per_cat.to_dict(), "step": int(last.step.iloc[0])}


def write_run(out: Path, cfg, preset: str, *, steps: list[dict], evals: list[dict], pairs: list[dict],
              ledger: ComputeLedger, eval_ledger: ComputeLedger, snapshots, wall_s: float, extra: dict | None = None
              ) -> dict:
    """Write every result file of a finished run (atomically) and return its summary.

    ``cfg`` is the run's :class:`~wmrl.config.RunConfig`; ``snapshots`` the Online Debiaser's
    :class:`~wmrl.calibration.CalibrationSnapshot` list; ``extra`` adds keys to ``summary.json``
    (e.g. the execution memo's hits, a world model's failure counters).
    """
    evals_df = pd.DataFrame(evals)
    tables = {"steps": pd.DataFrame(steps), "eval": evals_df, "ledger": ledger.to_frame(),
              "pairs": pd.DataFrame(pairs, columns=["step", *PAIR_COLUMNS[:3 + any("region" in p for p in pairs)]])}
    for name, df in tables.items():
        with atomic_path(out / f"{name}.parquet") as tmp:
            df.to_parquet(tmp, index=False)
    write_json_atomic(out / "calibration.json", [
        {"n_pairs": s.n_pairs, "n_refits": s.n_refits, "x": s.x.tolist(), "y": s.y.tolist()} for s in snapshots])
    totals = ledger.totals()
    eval_frame = eval_ledger.to_frame()
    summary = {
        "arm": cfg.arm, "preset": preset, "seed": cfg.seed, "agent": cfg.agent.kind, "heldout": headline(evals_df),
        "compute": {c: {"actual_s": float(totals.loc[c, "actual_s"]), "charged_s": float(totals.loc[c, "charged_s"]),
                        "count": int(totals.loc[c, "count"])} for c in totals.index},
        **({"compute_apart": ledger.apart_totals()} if ledger.apart_totals() else {}),
        "wall_s": wall_s, "steps": cfg.train.steps,
        "eval_actual_s": float(eval_frame["actual_s"].sum()) if len(eval_frame) else 0.0,
        **(extra or {}),
        "provenance": provenance(cfg.to_dict(), cfg.seed),
    }
    write_json_atomic(out / "summary.json", summary)
    return summary
