r"""The method in its regime: what OD's early first fit costs, OD's effect on the step size, IVD's warm-up.

Questions the paper's Table 3 leaves open (notebook 11), and the confirmatory test of what it saw
(notebook 12): this module is both notebooks' helper, their runs' variants, readouts, claims
(:func:`method_regime`, :func:`std_confirmation`) and sentences (:func:`regime_findings`,
:func:`confirmation_findings`).

**The first fit.** The paper keeps the identity map until 200 anchor pairs, then refits every 64.
A small run collects far fewer pairs (16 steps x one anchor group of 4 = 64), so the small preset
fits after 16. :func:`prequential_calibration` refits :class:`~wmrl.calibration.OnlineDebiaser`
on each run's logged anchor pairs under other schedules, prequentially, as the trainer applies it:
each step's raw predictions :math:`\hat r` pass through the map fitted on the *earlier* steps'
pairs, and the squared error of :math:`\hat f(\hat r)` against the real reward :math:`r` is scored
before the step's own pairs are added. The identity (the map before any fit, or a first fit that
never comes, as in ``mix``) scores :math:`(\hat r - r)^2`. This costs no training; the trained
sweep of ``method.od_min_pairs`` is the notebook's second look.

**The step size.** With unnormalised advantages a group's advantage is linear in its rewards,
:math:`A_i = R_i - \bar R`. An isotonic map that flattens the world model's scores shrinks the
spread of :math:`\tilde r = \hat f(\hat r)` within a world-model group, and so the size of that
group's gradient: OD then also lowers the world-model stream's effective learning rate against
``mix``. :func:`advantage_spread` measures that on the anchor groups, which are drawn at random
among the step's groups and were scored by both the world model and the sandbox: per group, the
population SD of the raw, the calibrated and the real rewards (the SD of the group's
advantages). Comparing ``od`` with ``mix`` under std-normalised advantages (every group's
advantages scaled to unit SD) removes the confound: a monotone map can then act only through the
spacing and ties it gives within a group.

**IVD's warm-up.** :math:`\hat\eta^2_{cal}` is recorded once warm-up ends, and IVD's :math:`\rho`
weights nothing before; by default that is one window after OD's first fit, half of a small run.
The variant ``ivd~warmup_K`` records it after ``K`` anchor groups (``method.ivd_warmup_groups``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from wmrl.anchor import AnchorScheduler
from wmrl.arms import get_arm
from wmrl.calibration import OnlineDebiaser
from wmrl.config import ConfigError
from wmrl.experiments.ablation import Variant, plan
from wmrl.experiments.claims import Claim
from wmrl.experiments.collect import load_table, run_settings
from wmrl.experiments.stats import fmt_ci, mean_ci, paired_values
from wmrl.presets import run_config
from wmrl.step import ivd_warmup_groups

__all__ = ["CONFIRM_ARMS", "NEVER", "TABLE3", "Readout", "Variants", "advantage_spread", "calibration_table",
           "confirmation_findings", "default_ivd_warmup", "first_fit_step", "ivd_active_share", "method_regime",
           "prequential_calibration", "readout", "regime_findings", "relative_to_identity", "spread_summary",
           "std_confirmation", "std_variant", "variants"]

#: The first fit that never comes within a run (``mix``, or a schedule past the run's pairs).
NEVER = "never"
#: Table 3's rows: the arms with both streams, whose anchor pairs the refit reads.
TABLE3 = ("mix", "ivd", "od", "wmrl")


class Variants(NamedTuple):
    """Notebook 11's variants of the default runs."""

    std: Variant  # std-normalised advantages, on every Table 3 row (tag ``std``)
    first_fits: list[Variant]  # od with its first fit after each K pairs (tags ``first_fit-K``)
    ivd_warmup: Variant  # ivd with eta^2_cal recorded after K anchor groups (tag ``warmup_K``)


def std_variant(preset: str) -> Variant:
    """Std-normalised advantages (tag ``std``): notebook 11 applies it to Table 3's rows, notebook 12 retests
    at new seeds what it did there."""
    return plan("std", "od", {"train.std_normalize": True}, presets=[preset])[0]


def variants(preset: str, first_fits, ivd_warmup: int) -> Variants:
    """Notebook 11's variants, each validated against ``preset`` (a value that is not a field's, or
    equals the preset's own, fails here with what to pass)."""
    if not isinstance(ivd_warmup, int) or isinstance(ivd_warmup, bool) or ivd_warmup < 1:
        raise ConfigError(f"the IVD warm-up must be a whole number of anchor groups >= 1, got {ivd_warmup!r}")
    return Variants(std_variant(preset),
                    plan("first_fit", "od", {}, {"method.od_min_pairs": list(first_fits)}, presets=[preset]),
                    plan(f"warmup_{ivd_warmup}", "ivd", {"method.ivd_warmup_groups": ivd_warmup}, presets=[preset])[0])


def default_ivd_warmup(preset: str) -> int:
    r"""Anchor groups before :math:`\hat\eta^2_{cal}` is recorded in ``preset``'s ``ivd`` runs (the step's rule)."""
    cfg = run_config("ivd", preset)
    anchors = AnchorScheduler(cfg.method.anchor_fraction, cfg.method.anchor_min).n_anchors(cfg.train.groups_per_step)
    return ivd_warmup_groups(cfg.method, anchors, cfg.train.group_size)


def ivd_active_share(steps: pd.DataFrame) -> pd.DataFrame:
    r"""Per run (``arm``, ``seed``) of ``steps.parquet`` rows: the anchor groups seen before IVD's
    :math:`\hat\eta^2_{cal}` was recorded (the logged warm-up), and the share of steps it weighted."""
    rows = []
    for (arm, seed), d in steps.sort_values("step").groupby(["arm", "seed"], sort=False):
        warm = d.eta2_cal.notna().to_numpy()
        groups = int(d.n_executed_groups.to_numpy()[:warm.argmax() + 1].sum()) if warm.any() else np.nan
        rows.append({"arm": arm, "seed": seed, "warmup_groups": groups, "ivd_share": float(warm.mean()),
                     "mean_rho": float(d.rho.mean())})
    return pd.DataFrame(rows)


def first_fit_step(steps: pd.DataFrame) -> int:
    """The first step whose world-model scores OD's map transforms, in every run of ``steps`` (an OD
    arm's ``steps.parquet`` rows): the step after the first refit is logged (the map a step uses is
    the one fitted before its own pairs arrive)."""
    fitted = steps[steps.od_refits > 0].groupby("seed").step.min()
    if fitted.empty or fitted.size < steps.seed.nunique():
        raise ValueError("OD never fitted its map in some of these runs: no step is calibrated")
    return int(fitted.max()) + 1


def _streams(pairs: pd.DataFrame):
    """Each run's anchor pairs, by step in the order they were logged."""
    for (arm, seed), d in pairs.groupby(["arm", "seed"], sort=False):
        yield arm, seed, [(int(s), g) for s, g in d.groupby("step", sort=True)]


def prequential_calibration(pairs: pd.DataFrame, first_fits, refit_every: int) -> pd.DataFrame:
    """Squared error of the calibrated anchor scores under each first-fit schedule, refit per run.

    Args:
        pairs: the runs' ``pairs.parquet`` rows (``arm``, ``seed``, ``step``, ``pred``, ``true``, ...).
        first_fits: the ``min_pairs`` values to refit (each >= 2).
        refit_every: new pairs between refits after the first fit (the run's ``method.od_refit_every``).

    Returns:
        One row per (arm, seed, first_fit) plus one per run with ``first_fit`` = :data:`NEVER`
        (the identity): ``mse`` over every anchor pair of the run, ``mse_late`` over the pairs of
        its second half (steps >= half the last step, when every schedule up to half the run's
        pairs has fitted), ``pairs`` and ``calibrated``: the refit scores, for checks.
    """
    rows = []
    for arm, seed, steps in _streams(pairs):
        late_from = steps[-1][0] / 2
        schedules = [(k, OnlineDebiaser(int(k), refit_every)) for k in first_fits] + [(NEVER, None)]
        for k, od in schedules:
            err, late, out = [], [], []
            for step, g in steps:
                raw, real = g.pred.to_numpy(float), g.true.to_numpy(float)
                cal = od.transform(raw) if od is not None else raw  # the map before this step's pairs
                e = (cal - real) ** 2
                err.append(e)
                if step >= late_from:
                    late.append(e)
                out.append(cal)
                if od is not None:
                    od.push_many(raw, real)
            rows.append({"arm": arm, "seed": seed, "first_fit": k, "mse": float(np.concatenate(err).mean()),
                         "mse_late": float(np.concatenate(late).mean()), "pairs": sum(len(g) for _, g in steps),
                         "calibrated": np.concatenate(out)})
    return pd.DataFrame(rows)


def relative_to_identity(preq: pd.DataFrame) -> pd.DataFrame:
    """:func:`prequential_calibration`'s errors over the identity's of the same run (< 1: the map helps):
    one row per (arm, seed, first_fit), ``mse`` and ``mse_late`` as ratios (the identity's rows are 1)."""
    never = preq[preq.first_fit == NEVER].set_index(["arm", "seed"])[["mse", "mse_late"]]
    d = preq.set_index(["arm", "seed"])
    return (d[["mse", "mse_late"]] / never.loc[d.index].to_numpy()).assign(first_fit=d.first_fit).reset_index()


def calibration_table(preq: pd.DataFrame) -> pd.DataFrame:
    """:func:`prequential_calibration` by first fit: the mean squared error over runs, and its ratio to the
    identity's paired by run (:func:`relative_to_identity`), each with a 95% interval over runs."""
    ratio = relative_to_identity(preq)
    rows = []
    for k, d in preq.groupby("first_fit", sort=False):
        row = {"first fit (pairs)": k, "runs": len(d)}
        for col, what in (("mse", "whole run"), ("mse_late", "second half")):
            row[f"MSE, {what}"] = fmt_ci(*mean_ci(d[col]), digits=4)
            row[f"/ raw, {what}"] = fmt_ci(*mean_ci(ratio[ratio.first_fit == k][col]), digits=2)
        rows.append(row)
    return pd.DataFrame(rows).set_index("first fit (pairs)")


def advantage_spread(pairs: pd.DataFrame, group_size: int) -> pd.DataFrame:
    """Per anchor group: the population SD of its raw, calibrated and real rewards.

    A step's pairs are its complete anchor groups one after another (:class:`wmrl.step.WMRLStep`
    logs only groups the world model scored in full), so consecutive chunks of ``group_size``
    rows of a step are its groups. The SD of a group's rewards is the SD of its advantages
    (:math:`A_i = R_i - \\bar R`), so ``sd_cal / sd_raw`` is OD's factor on that group's gradient.
    """
    rows = []
    for arm, seed, steps in _streams(pairs):
        for step, g in steps:
            if len(g) % group_size:
                raise ValueError(f"{arm} seed {seed} step {step}: {len(g)} anchor pairs is not a whole number of "
                                 f"groups of {group_size}")
            for i in range(len(g) // group_size):
                chunk = g.iloc[i * group_size:(i + 1) * group_size]
                rows.append({"arm": arm, "seed": seed, "step": step, "group": i,
                             "sd_raw": float(chunk.pred.std(ddof=0)), "sd_cal": float(chunk.calibrated.std(ddof=0)),
                             "sd_real": float(chunk.true.std(ddof=0))})
    return pd.DataFrame(rows)


def spread_summary(spread: pd.DataFrame, from_step: int, by=("arm", "seed")) -> pd.DataFrame:
    """Per run (or per ``by``, e.g. adding ``"step"``), from ``from_step`` on: the RMS advantage SD of
    each score and two ratios.

    ``cal_over_raw`` = RMS(sd_cal) / RMS(sd_raw): OD's factor on a world-model group's gradient
    (1 without OD); ``trained_over_real`` = RMS(sd of the rewards the world-model groups train on:
    calibrated with OD, raw without) / RMS(sd_real): the world-model stream's step size relative
    to the executed stream's on the same groups.
    """
    def rms(x):
        return float(np.sqrt(np.mean(np.square(x))))

    rows = []
    for key, d in spread[spread.step >= from_step].groupby(list(by), sort=False):
        raw, cal, real = rms(d.sd_raw), rms(d.sd_cal), rms(d.sd_real)
        rows.append({**dict(zip(by, key)), "groups": len(d), "rms_sd_raw": raw, "rms_sd_cal": cal,
                     "rms_sd_real": real, "cal_over_raw": cal / raw if raw > 0 else np.nan,
                     "trained_over_real": cal / real if real > 0 else np.nan})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Readout:
    """What notebook 11 (and RESULTS.md) reads off the default runs of Table 3's rows."""

    first_fit: int  # the runs' method.od_min_pairs
    refit_every: int  # their method.od_refit_every
    group_size: int  # their train.group_size
    pairs: pd.DataFrame  # every run's anchor pairs (pairs.parquet), with arm and seed
    preq: pd.DataFrame  # prequential_calibration at the asked first fits and the runs' own
    from_step: int  # first_fit_step of the od runs
    spread: pd.DataFrame  # advantage_spread per anchor group
    spread_runs: pd.DataFrame  # spread_summary per run, from from_step on


def readout(base: pd.DataFrame, first_fits) -> Readout:
    """Refit and measure the default runs ``base`` (``load_runs`` rows of :data:`TABLE3`'s arms).

    Raises if the runs do not share OD's schedule and the group size, or if the refit at their own
    schedule is not the trainer's OD (its scores must equal the ``calibrated`` column every OD run
    logged): the refit schedules are only as good as that check.
    """
    settings = run_settings(base, "method.od_min_pairs", "method.od_refit_every", "train.group_size")
    if (settings.nunique() > 1).any():
        raise ValueError(f"the runs must share OD's schedule and the group size; they differ in "
                         f"{list(settings.columns[settings.nunique() > 1])}")
    fit, refit, group = (int(settings[c].iloc[0]) for c in settings)
    pairs = load_table(base, "pairs")
    preq = prequential_calibration(pairs, sorted({*first_fits, fit}), refit)
    own = preq[preq.first_fit == fit].set_index(["arm", "seed"]).calibrated
    for (arm, seed), d in pairs.groupby(["arm", "seed"]):
        if get_arm(arm).od and not np.allclose(own[(arm, seed)], d.calibrated.to_numpy(), atol=1e-12):
            raise AssertionError(f"{arm} seed {seed}: refitting OD at the run's schedule does not give its logged scores")
    from_step = first_fit_step(load_table(base[base.arm == "od"], "steps"))
    spread = advantage_spread(pairs, group)
    return Readout(fit, refit, group, pairs, preq, from_step, spread, spread_summary(spread, from_step))


def method_regime(variants, default_fit: int, default_warmup: int) -> tuple[Claim, ...]:
    """Notebook 11's claims, from its :class:`Variants`: Table 3's corrections
    against the mix as trained and at matched step size (std-normalised advantages), each first fit
    of OD against the preset's ``default_fit``, and IVD's warm-up against ``default_warmup`` groups.

    Directions are the paper's: a late first fit (it waits for 200 pairs), so an earlier one than
    the default is expected to cost held-out score and a later one to gain; and IVD helps, so a
    shorter warm-up (IVD weighting for more of the run) is expected to gain.
    """
    std = variants.std
    rows = [Claim(f"S-{name}", f"{what} neither correction at matched step size (std-normalised advantages)",
                  "not tested in the paper (as trained: C22)", std.label(arm),
                  std.label("mix")) for name, arm, what in (("OD", "od", "OD alone beats"), ("IVD", "ivd", "IVD alone beats"),
                                                            ("both", "wmrl", "both corrections beat"))]
    for v in variants.first_fits:
        later = v.value > default_fit
        a, b = (v.label("od"), "od") if later else ("od", v.label("od"))
        rows.append(Claim(f"F-{v.value}", f"OD's first fit after {v.value} pairs scores {'above' if later else 'below'} "
                          f"one after {default_fit}", "the paper fits first after 200 pairs", a, b))
    warm = variants.ivd_warmup
    k = warm.overrides["method.ivd_warmup_groups"]
    shorter = k < default_warmup
    a, b = (warm.label("ivd"), "ivd") if shorter else ("ivd", warm.label("ivd"))
    rows.append(Claim(f"W-{k}", f"IVD warmed up after {k} anchor groups scores {'above' if shorter else 'below'} IVD "
                      f"after {default_warmup}", "not tested in the paper", a, b))
    return tuple(rows)  # OD alone against the mix as trained is C22-OD, notebook 02's: not counted twice


#: The arms whose std-normalised lift notebook 12 retests: the full method and the uncorrected mix.
CONFIRM_ARMS = ("wmrl", "mix")


def std_confirmation(std, seeds) -> tuple[Claim, ...]:
    """Notebook 12's claims, fixed before its runs were trained: std-normalised advantages (``std``, the
    :class:`~wmrl.experiments.ablation.Variant`) raise the held-out Avg of each arm of :data:`CONFIRM_ARMS`.

    Notebook 11 saw every Table 3 row rise under std-normalisation without testing it (a finding made
    by looking); these claims test it at ``seeds``, which no run had used when they were written.
    """
    seeds = ", ".join(str(s) for s in seeds)
    return tuple(Claim(f"CF-{arm}", f"std-normalised advantages raise {arm}'s held-out Avg (seeds {seeds})",
                       "not in the paper; seen, not tested, in notebook 11", std.label(arm), arm)
                 for arm in CONFIRM_ARMS)


def _ratio_words(lo: float, hi: float, less: str, more: str, same: str = "not measurably different") -> str:
    """Which side of 1 a ratio's 95% interval ``[lo, hi]`` lies on, in words."""
    return less if hi < 1 else more if lo > 1 else same


def regime_findings(preq: pd.DataFrame, spread: pd.DataFrame, from_step: int) -> list[str]:
    """Notebook 11's findings: the refit cost of each first fit, and OD's factor on the step size.

    ``preq``: :func:`prequential_calibration`'s rows; ``spread``:
    :func:`spread_summary`'s, from step ``from_step`` on.
    """
    ratio = relative_to_identity(preq)
    whole, late = [], []
    for k, d in ratio[ratio.first_fit != NEVER].groupby("first_fit"):
        m, lo, hi = mean_ci(d.mse)
        whole.append(f"{fmt_ci(m, lo, hi, 2)} after {k} pairs ({_ratio_words(lo, hi, 'lower', 'higher')})")
        late.append((k, fmt_ci(*mean_ci(d.mse_late), 2)))
    halves = (f"{late[0][1]} whatever the first fit" if len({v for _, v in late}) == 1
              else ", ".join(f"{v} after {k} pairs" for k, v in late))
    out = [f"Refit on the anchor pairs of {int((preq.first_fit == NEVER).sum())} runs with both streams, the calibrated "
           "scores' squared error against the real rewards, as a multiple of the raw scores', is over the whole run "
           + ", ".join(whole) + f" with Online Debiasing's first fit after that many pairs; in the run's second half, {halves}."]
    by = spread.groupby("arm")
    if "od" in by.groups:
        od = by.get_group("od")
        m, lo, hi = mean_ci(od.cal_over_raw)
        text = (f"From step {from_step} on, OD's map scales a world-model group's advantage SD by {fmt_ci(m, lo, hi, 2)} "
                f"in od (a world-model step size {_ratio_words(lo, hi, 'below', 'above', 'not measurably different from')} "
                "mix's over the seeds)")
        if "mix" in by.groups:
            text += (f"; relative to the real rewards' SD on the same anchor groups, the world-model stream trains at "
                     f"{fmt_ci(*mean_ci(od.trained_over_real), 2)} in od and "
                     f"{fmt_ci(*mean_ci(by.get_group('mix').trained_over_real), 2)} in mix")
        out.append(text + ".")
    return out


def confirmation_findings(explored: pd.DataFrame, confirmed: pd.DataFrame, std, arms) -> list[str]:
    """Notebook 12's sentences beside its claims: for each of ``arms``, the std-normalised lift (``std``'s
    run label minus the arm, paired by seed, in points) at the seeds where it was seen and at the new ones,
    and, when the two sets of seeds share any, that the test is not confirmatory."""
    def seeds_of(runs):
        return sorted(int(s) for s in set(runs.seed))

    shared = sorted(set(seeds_of(explored)) & set(seeds_of(confirmed)))
    out = []
    if shared:
        out.append(f"The new seeds share seed(s) {', '.join(map(str, shared))} with the seeds where the lift was seen: "
                   "this is not a confirmatory test.")
    for arm in arms:
        lift = [f"{fmt_ci(*mean_ci(paired_values(runs, std.label(arm), arm, 'avg', 100)))} points at seeds "
                f"{', '.join(map(str, seeds_of(runs[runs.arm == arm])))}"
                for runs in (explored, confirmed) if {arm, std.label(arm)} <= set(runs.arm)]
        if len(lift) == 2:
            out.append(f"{std.label(arm)} - {arm}: {lift[0]} (seen in notebook 11), {lift[1]} (tested here).")
    return out
