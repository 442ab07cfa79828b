r"""Learning curves: held-out Avg at each evaluation step, against steps and against charged compute.

A run evaluates its policy every ``eval.every`` steps and at its end (``eval.parquet``), and bills
every step's seconds per component (``ledger.parquet``). A curve point is therefore
``(step s, compute spent on steps < s, held-out Avg after s steps)``. The ``untrained`` run of a
seed is the policy every arm of that seed starts from, evaluated with the same sampler seed, so
it is each arm's point at step 0 and zero compute.

:func:`compute_to_reach` reads off a curve the compute at which it first reaches a target score,
interpolating linearly between evaluation points: the paper's speedup claim (C3) is the ratio of
what GRPO and WMRL spend to reach GRPO's final held-out score, seed by seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wmrl.experiments.collect import load_table
from wmrl.experiments.stats import mean_ci

__all__ = ["compute_to_reach", "heldout_avg", "learning_curves", "reach", "summarise_curves"]

START_ARM = "untrained"


def heldout_avg(evals: pd.DataFrame, scale: float) -> pd.DataFrame:
    """The paper's Avg per (arm, seed, step): per-task avg@k, mean within category, mean over categories."""
    return (evals.groupby(["arm", "seed", "step", "category"]).percentile.mean()
            .groupby(["arm", "seed", "step"]).mean().mul(scale).rename("avg").reset_index())


def _compute_before(ledger: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Per (arm, seed): cumulative charged (or actual) seconds of all components *before* each step."""
    per_step = ledger.groupby(["arm", "seed", "step"])[f"{kind}_s"].sum().reset_index()
    per_step["compute_s"] = per_step.groupby(["arm", "seed"])[f"{kind}_s"].cumsum()
    per_step["step"] += 1  # the compute of steps 0..s-1 is spent when step s begins
    return per_step[["arm", "seed", "step", "compute_s"]]


def learning_curves(runs: pd.DataFrame, scale: float = 100.0, kind: str = "charged") -> pd.DataFrame:
    """One row per (arm, seed, evaluation step): ``avg`` (in ``scale`` units) and ``compute_s`` before it.

    Trained arms get their seed's ``untrained`` evaluation as the step-0 point when ``runs`` holds it.
    """
    trained = runs[runs.arm != START_ARM]
    if trained.empty:
        raise ValueError("learning curves need at least one trained arm")
    curves = heldout_avg(load_table(trained, "eval"), scale)
    curves = curves.merge(_compute_before(load_table(trained, "ledger"), kind), on=["arm", "seed", "step"], how="left")
    curves.loc[curves.step == 0, "compute_s"] = 0.0
    start = runs[runs.arm == START_ARM]
    if not start.empty:
        s0 = heldout_avg(load_table(start, "eval"), scale).drop(columns="arm")
        firsts = curves[["arm", "seed"]].drop_duplicates().merge(s0, on="seed")
        curves = pd.concat([firsts.assign(compute_s=0.0), curves], ignore_index=True)
    return curves.sort_values(["arm", "seed", "step"]).reset_index(drop=True)


def summarise_curves(curves: pd.DataFrame, x: str = "step") -> pd.DataFrame:
    """Mean and 95% interval over seeds of ``avg`` per arm and ``x`` (``step``; or ``compute_s``, its mean)."""
    rows = []
    for (arm, step), d in curves.groupby(["arm", "step"]):
        m, lo, hi = mean_ci(d.avg)
        rows.append({"arm": arm, "step": step, "compute_s": d.compute_s.mean(), "mean": m, "lo": lo, "hi": hi,
                     "seeds": len(d)})
    out = pd.DataFrame(rows)
    return out.sort_values(["arm", x]).reset_index(drop=True)


def reach(xs, ys, target: float) -> float:
    """First ``x`` where the piecewise-linear curve through ``(xs, ys)`` reaches ``target`` (NaN if never)."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    if len(xs) == 0:
        return float("nan")
    if ys[0] >= target:
        return float(xs[0])
    for i in range(1, len(xs)):
        if ys[i] >= target:
            return float(xs[i - 1] + (target - ys[i - 1]) * (xs[i] - xs[i - 1]) / (ys[i] - ys[i - 1]))
    return float("nan")


def compute_to_reach(curves: pd.DataFrame, arm: str, reference: str = "grpo") -> pd.DataFrame:
    """Per seed: the compute ``arm`` and ``reference`` need to reach ``reference``'s final held-out score.

    Columns ``target`` (the reference's final ``avg``), ``reach_<arm>_s``, ``reach_<reference>_s``
    (NaN when the curve never gets there within its run), ``final_<arm>_s`` (the arm's total
    compute, a lower bound of what it would need when it did not get there) and ``speedup`` =
    reference / arm (NaN when either is missing or zero).
    """
    rows = []
    for seed in sorted(set(curves.seed[curves.arm == arm]) & set(curves.seed[curves.arm == reference])):
        c_arm = curves[(curves.arm == arm) & (curves.seed == seed)].sort_values("step")
        c_ref = curves[(curves.arm == reference) & (curves.seed == seed)].sort_values("step")
        target = float(c_ref.avg.iloc[-1])
        r_arm = reach(c_arm.compute_s, c_arm.avg, target)
        r_ref = reach(c_ref.compute_s, c_ref.avg, target)
        speedup = r_ref / r_arm if r_arm > 0 and r_ref > 0 else float("nan")
        rows.append({"seed": seed, "target": target, f"reach_{arm}_s": r_arm, f"reach_{reference}_s": r_ref,
                     f"final_{arm}_s": float(c_arm.compute_s.iloc[-1]), "speedup": speedup})
    if not rows:
        raise KeyError(f"arms {arm!r} and {reference!r} share no seed in the curves")
    return pd.DataFrame(rows).set_index("seed")
