r"""The fidelity dial (notebook 08): its runs' names, its claims, each level's measured fidelity, the break-even.

The oracle-derived world model (:mod:`wmrl.world_model.oracle`) is trained at several noise levels
:math:`\sigma`, each its own tag (:func:`oracle_tag`); the program-analysis world model at another
profile has its own (:func:`profile_tag`). The claims are :func:`dial_claims`, the closing sentences
:func:`fidelity_dial_findings`. A level's *fidelity* is what it achieved,
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
from wmrl.config import WorldModelConfig
from wmrl.experiments.claims import Claim
from wmrl.experiments.stats import mean_ci

__all__ = ["DEFAULT_DISTORTION", "DEFAULT_PROFILE", "BreakEven", "break_even", "crossing", "dial_claims", "dial_frame",
           "fidelity_dial_findings", "level_arms", "oracle_overrides", "oracle_tag", "profile_overrides", "profile_tag",
           "run_fidelity"]

DEFAULT_PROFILE = WorldModelConfig().profile
DEFAULT_DISTORTION = WorldModelConfig().oracle_distortion


def oracle_tag(noise: float, distortion: str = DEFAULT_DISTORTION) -> str:
    """The tag of one level's runs: ``oracle-0.2`` (``oracle-identity-0.2`` for another distortion)."""
    kind = "" if distortion == DEFAULT_DISTORTION else f"{distortion}-"
    return f"oracle-{kind}{float(noise):g}"


def profile_tag(profile: str) -> str | None:
    """The tag of the program-analysis world model's runs at ``profile``: None for the default profile
    (the default runs, shared with notebooks 01-05), ``wm-<profile>`` for another."""
    return None if profile == DEFAULT_PROFILE else f"wm-{profile}"


def level_arms(levels, arms, end_arms=()) -> dict[float, list[str]]:
    """The arms trained at each noise level: ``arms`` at every level, ``end_arms`` at the lowest and the
    highest noise only (both ends of the dial: the two levels the claims compare)."""
    levels = sorted(float(v) for v in levels)
    ends = {levels[0], levels[-1]} if levels else set()
    return {v: [*arms, *(a for a in end_arms if a not in arms and v in ends)] for v in levels}


def dial_claims(top: str, bottom: str, arms) -> list[Claim]:
    """The notebook's claims, for the most (``top``) and least (``bottom``) faithful level's tag."""
    arms = set(arms)
    out = []
    if "wm" in arms:
        out.append(Claim("D1", "a world model that ranks better trains a better policy: wm at the highest fidelity "
                         "beats wm at the lowest", "not tested in the paper", f"wm~{top}", f"wm~{bottom}"))
    if "wmrl" in arms:
        out.append(Claim("D2", "WMRL trains a better policy with a better world model (highest fidelity beats lowest)",
                         "not tested in the paper", f"wmrl~{top}", f"wmrl~{bottom}"))
    if {"wm", "wmrl"} <= arms:
        out.append(Claim("D3", "with a poor world model the corrections protect: WMRL beats the pure world model at "
                         "the lowest fidelity", "Table 3 / Thm 4 (bias shrinks, rho falls back)", f"wmrl~{bottom}",
                         f"wm~{bottom}"))
    if "wmrl" in arms:
        out += [
            Claim("D4", "with a faithful world model, WMRL beats the anchors alone (the world model adds information)",
                  "not tested in the paper", f"wmrl~{top}", "anchor_only"),
            Claim("D5", "with a poor world model, WMRL falls below GRPO", "not tested in the paper", f"wmrl~{bottom}",
                  "grpo", expect="<"),
            Claim("D6", "C1-C2's best case: with a faithful world model, WMRL beats GRPO",
                  "16.4 vs 15.2 (4B), 21.6 vs 18.8 (9B) with the paper's world model", f"wmrl~{top}", "grpo"),
        ]
    # Table 3's corrections where they should matter most: a poor world model, against the uncorrected mix
    if {"mix", "od"} <= arms:
        out.append(Claim("D7", "with a poor world model Online Debiasing protects: OD alone beats the uncorrected mix "
                         "at the lowest fidelity", "C22-OD at the paper's world model: 15.7 vs 13.5 (4B MLE)",
                         f"od~{bottom}", f"mix~{bottom}"))
    if {"mix", "wmrl"} <= arms:
        out.append(Claim("D8", "with a poor world model both corrections protect: WMRL beats the uncorrected mix at "
                         "the lowest fidelity", "C22-both at the paper's world model: 16.4 vs 13.5 (4B MLE)",
                         f"wmrl~{bottom}", f"mix~{bottom}"))
    return out


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


def _versus_break_even(b) -> str:
    if np.isnan(b.x):
        return "is undefined (a level lacks the reference's seeds)"
    if b.x == -np.inf:
        return f"lies at or below the lowest fidelity measured ({b.x_min:.2f}; 95% interval {b.text()})"
    if b.x == np.inf:
        return f"lies above the highest fidelity measured ({b.x_max:.2f}; 95% interval {b.text()})"
    return f"is a within-group Spearman of {b.text()} (95% interval)"


def fidelity_dial_findings(level_x: pd.DataFrame, break_evens: dict, marks: pd.DataFrame,
                           oracle_runs: pd.DataFrame) -> list[str]:
    """Notebook 08's findings: what the dial reached, the break-evens, where the real world models sit,
    and what knowing the truth cost.

    ``level_x``: per noise level (index), the measured fidelity ``x``; ``break_evens``: ``{(arm,
    reference): BreakEven}`` (:func:`break_even`); ``marks``: per real
    world model (index), ``spearman``, ``footing`` and ``labels`` (its runs; empty for a fixed-set
    mark); ``oracle_runs``: the rows of the oracle-derived runs (``load_runs``' columns).
    """
    out = [(f"The oracle-derived world model's noise levels sigma = {', '.join(f'{s:g}' for s in level_x.index)} "
            f"reached a within-group Spearman on the anchor pairs of {', '.join(f'{x:.2f}' for x in level_x.x)} (mean "
            "over the seeds and the arms with anchors trained at every level).")]
    for (arm, ref), b in break_evens.items():
        if ref == "grpo" or (arm == "wmrl" and ref == "anchor_only"):
            out.append(f"The break-even of {arm} against {ref} (the fidelity from which {arm}'s mean held-out Avg stays "
                       f"at or above {ref}'s) {_versus_break_even(b)}, over {b.seeds} seeds.")
    b = break_evens.get(("wmrl", "grpo"))
    for name, r in marks.iterrows():
        if not np.isfinite(r.spearman):
            out.append(f"The {name} world model's Spearman is undefined ({r.footing}).")
            continue
        text = f"The {name} world model ranks with a Spearman of {r.spearman:.2f} ({r.footing})"
        if len(r.labels) and b is not None and not np.isnan(b.x):
            if b.x == np.inf:
                text += ", short of any fidelity at which WMRL matched GRPO on the dial"
            elif r.spearman >= b.x:
                text += f", at or above WMRL's break-even against GRPO ({b.fmt(b.x)})"
            else:
                text += f", below WMRL's break-even against GRPO ({b.fmt(b.x)})"
        out.append(text + ".")
    if len(oracle_runs) and "oracle_charged_s" in oracle_runs:
        out.append(f"Knowing the truth took the {len(oracle_runs)} oracle-derived runs "
                   f"{int(oracle_runs.oracle_count.sum())} executions ({oracle_runs.oracle_charged_s.sum() / 60:.1f} "
                   f"CPU-minutes, {oracle_runs.oracle_actual_s.sum() / 60:.1f} wall-minutes; their other lookups were "
                   "served by the shared memo), recorded apart and in no arm's cost; their world models were charged "
                   f"{oracle_runs.world_model_charged_s.sum() / 60:.2f} CPU-minutes, a world-model call per prediction.")
    return out
