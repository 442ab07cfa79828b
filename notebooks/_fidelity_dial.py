r"""The fidelity dial's analysis, notebook 08's helper: each level's measured fidelity, and the break-even.

The oracle-derived world model (:mod:`wmrl.world_model.oracle`) is trained at several noise levels
:math:`\sigma`, each its own tag (:func:`oracle_tag`). A level's *fidelity* is what it achieved,
not what it was set to: the within-group Spearman of predicted and real reward on the anchor
pairs that training logged (``fid_spearman`` in ``steps.parquet``, one anchor group per step at
the ``small`` preset), averaged over the run's steps (:func:`run_fidelity`) and, for a level, over
the arms with anchors at each seed (:func:`dial_frame`). The pure world-model arm (``wm``) has no
anchors; it sits at its level's fidelity. Arms that cost too much to train at every level are trained
at the two ends of the dial only (*end arms*, :func:`level_arms`); they sit at their level's fidelity
too, which the every-level arms alone measure, so that each level's fidelity is read off the same
arms.

**Break-even** (:func:`break_even`). Per level, the seed-paired difference of an arm's held-out
Avg and a reference's (``wmrl - grpo``) has a mean and a 95% Student-t interval over seeds. With
the levels ordered by measured fidelity :math:`x` and joined piecewise-linearly, the break-even
fidelity is the lowest :math:`x` from which the mean difference stays at or above 0 (a curve that
crosses twice is read at its last crossing from below). Its interval inverts the pointwise
intervals, as in inverse regression: below the point where the *upper* bound reaches 0 the arm is
significantly worse than the reference, above the point where the *lower* bound reaches 0 it is
significantly at least as good, so the break-even lies between them. The interval is pointwise,
not simultaneous, and it is read within the measured range: a break-even below the lowest level
is reported as "at or below" it, one above the highest as "above" it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from wmrl.arms import get_arm
from wmrl.experiments.fidelity_dial import DEFAULT_DISTORTION, DEFAULT_PROFILE, level_arms, oracle_tag
from wmrl.experiments.stats import mean_ci

__all__ = ["BreakEven", "break_even", "crossing", "dial_frame", "oracle_overrides", "profile_overrides",
           "run_fidelity"]


def oracle_overrides(noise: float, distortion: str = DEFAULT_DISTORTION) -> dict:
    """The dotted config overrides of one level."""
    return {"world_model.kind": "oracle", "world_model.oracle_noise": float(noise),
            "world_model.oracle_distortion": distortion}


def profile_overrides(profile: str) -> dict:
    return {} if profile == DEFAULT_PROFILE else {"world_model.profile": profile}


def run_fidelity(steps: pd.DataFrame) -> pd.Series:
    """Per (arm, seed): the mean over steps of the anchor pairs' Spearman (``fid_spearman``, NaN-skipping)."""
    if "fid_spearman" not in steps:
        return pd.Series(dtype=float, name="spearman")
    return steps.groupby(["arm", "seed"]).fid_spearman.mean().rename("spearman")


def dial_frame(runs: pd.DataFrame, steps: pd.DataFrame, levels, arms, distortion: str = DEFAULT_DISTORTION,
               scale: float = 100.0, end_arms=()) -> pd.DataFrame:
    """One row per (level, arm, seed): ``noise``, ``arm`` (the base arm), ``label`` (its run label),
    ``seed``, ``avg`` (held-out Avg times ``scale``), ``spearman`` (the run's own anchor fidelity, NaN
    without anchors) and ``x`` (the level's measured fidelity at that seed: the mean of ``spearman``
    over the level's every-level ``arms`` with anchors; ``end_arms``, at the two ends only, sit at it)."""
    fid = run_fidelity(steps)
    rows = []
    for noise, here in level_arms(levels, arms, end_arms).items():
        tag = oracle_tag(noise, distortion)
        for arm in here:
            label = f"{arm}~{tag}"
            for _, r in runs[runs.arm == label].iterrows():
                rows.append({"noise": noise, "arm": arm, "label": label, "seed": r.seed, "avg": r.avg * scale,
                             "spearman": fid.get((label, r.seed), np.nan)})
    out = pd.DataFrame(rows, columns=["noise", "arm", "label", "seed", "avg", "spearman"])
    anchored = out[out.arm.isin(list(arms)) & out.arm.map(lambda a: get_arm(a).mixes_streams)]
    x = anchored.groupby(["noise", "seed"]).spearman.mean().rename("x")
    if x.isna().all():
        raise ValueError(f"no arm with anchors among {list(arms)}: a level's fidelity is measured on anchor pairs, "
                         "so the arms must include one of mix, od, ivd, wmrl")
    return out.join(x, on=["noise", "seed"])


def crossing(xs, ys) -> float:
    """The lowest ``x`` from which the piecewise-linear curve through ``(xs, ys)`` stays >= 0.

    ``xs`` ascending. ``-inf``: the curve is >= 0 from the first point on; ``+inf``: it ends below 0;
    NaN when a value is missing.
    """
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    if len(xs) == 0 or np.isnan(ys).any() or np.isnan(xs).any():
        return float("nan")
    if ys[-1] < 0:
        return math.inf
    below = np.flatnonzero(ys < 0)
    if not below.size:
        return -math.inf
    k = below[-1]
    return float(xs[k] + (0.0 - ys[k]) * (xs[k + 1] - xs[k]) / (ys[k + 1] - ys[k]))


@dataclass(frozen=True)
class BreakEven:
    """A break-even fidelity, its 95% interval, and the measured range it was read in."""

    x: float
    lo: float
    hi: float
    x_min: float
    x_max: float
    seeds: int

    def fmt(self, v: float, digits: int = 2) -> str:
        if math.isnan(v):
            return "-"
        if v == -math.inf:
            return f"<= {self.x_min:.{digits}f}"
        if v == math.inf:
            return f"> {self.x_max:.{digits}f}"
        return f"{v:.{digits}f}"

    def text(self, digits: int = 2) -> str:
        """``"0.63 [0.41, 0.87]"``, with ``<=`` / ``>`` where a value lies outside the measured range."""
        ci = "" if math.isnan(self.lo) else f" [{self.fmt(self.lo, digits)}, {self.fmt(self.hi, digits)}]"
        return self.fmt(self.x, digits) + ci


def break_even(x, diffs) -> BreakEven:
    """The break-even fidelity of seed-paired differences (module docstring).

    Args:
        x: ``(L,)`` measured fidelity of each level.
        diffs: ``(L, S)`` paired differences (arm minus reference) per level and seed; NaN where a
            seed is missing.
    """
    x, d = np.asarray(x, float), np.asarray(diffs, float)
    if d.ndim != 2 or d.shape[0] != len(x) or len(x) < 1:
        raise ValueError(f"x {x.shape} and diffs {d.shape} must be (L,) and (L, S) with L >= 1")
    order = np.argsort(x)
    x, d = x[order], d[order]
    stats = np.array([mean_ci(row[~np.isnan(row)]) if (~np.isnan(row)).any() else (np.nan,) * 3 for row in d])
    m, lo, hi = stats.T
    return BreakEven(crossing(x, m), crossing(x, hi), crossing(x, lo), float(x[0]), float(x[-1]),
                     int((~np.isnan(d)).all(axis=0).sum()))
