# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 11 · The method in its regime: OD's first fit, the step size, IVD's warm-up
#
# **Background.** Notebook 02 compares the corrections with the uncorrected mix (C22) at the small
# preset's schedule, which is not the paper's, and on advantages that are not std-normalised. Three
# things can make such a comparison say little about *calibration* and *denoising*:
#
# 1. **The first fit.** The paper keeps the identity map until 200 anchor pairs and refits after
#    every 64 (Sec. 3.4). A small run has 64 anchor pairs in all (16 steps × one anchor group of 4),
#    so the preset fits after 16 pairs and refits every 8: an isotonic map on 16 points. What does
#    fitting that early cost? Read twice: (a) refit on the logged anchor pairs of every run with
#    both streams, the squared error of the calibrated score $\hat f(\hat r)$ against the real reward
#    under other first fits, prequentially (each step calibrated by the map fitted on the earlier
#    steps only, as the trainer does; `_regime.prequential_calibration`); the
#    paper's 200 pairs never come in 64, which is the identity, `mix`'s rewards; (b) `od` trained with
#    its first fit after other numbers of pairs (`method.od_min_pairs`), paired by seed with the
#    default `od`.
# 2. **The step size.** With unnormalised advantages (the default here and in the paper's
#    Sec. 3.1), a group's advantage is linear in its rewards,
#    $A_i = R_i - \frac1n\sum_j R_j$, so its gradient scales with the rewards' spread. An isotonic map
#    that flattens the world model's scores shrinks the spread of $\tilde r = \hat f(\hat r)$ within a
#    world-model group, so OD also lowers the world-model stream's learning rate against `mix`. We
#    measure the factor on the anchor groups (random groups, scored by both the world model and the
#    sandbox): per group the SD of its raw, calibrated and real rewards, which is the SD of its
#    advantages. Then both arms are retrained with std-normalised advantages
#    ($A_i / \mathrm{sd}_j R_j$, `train.std_normalize=True`): every group's advantages have unit SD, so
#    OD can act only through the spacing and ties its map gives within a group (and IVD's $\rho$
#    still weighs the anchor groups against the rest). Table 3's four rows are retrained this way.
# 3. **IVD's warm-up.** $\hat\eta^2_{cal}$ is recorded once, when warm-up ends, and $\rho$ weights
#    nothing before. By default that is one window after OD's first fit: 8 anchor groups, so IVD
#    weights only the second half of a small run. `ivd~warmup_K` records it after $K$ groups
#    (`method.ivd_warmup_groups`), so that IVD acts for most of the run.
#
# | runs | what | tag |
# |---|---|---|
# | `od`, `mix` (and `ivd`, `wmrl` for the refit) | the default runs of notebooks 01-02 | |
# | `od~first_fit-K` | `od` with `method.od_min_pairs = K` | `first_fit-K` |
# | `mix~std`, `ivd~std`, `od~std`, `wmrl~std` | Table 3's rows with std-normalised advantages | `std` |
# | `ivd~warmup_K` | `ivd` with `method.ivd_warmup_groups = K` | `warmup_K` |
#
# The analysis was fixed before the runs were trained: the claims below (direction from the paper:
# OD beats the mix; a later first fit beats an earlier one; IVD weighting for longer helps), the
# refit schedules, and the spread measured from the step after OD's first fit.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
REGIME_FIRST_FITS = None  # OD's first fits to train and refit (method.od_min_pairs); None: the preset's
REGIME_IVD_WARMUP = None  # anchor groups before IVD's eta^2_cal (method.ivd_warmup_groups); None: the preset's

# %%
import _regime as regime  # notebooks 11 and 12's analysis, beside them
from wmrl.config import ConfigError
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="11_method_regime", keys=["REGIME_FIRST_FITS", "REGIME_IVD_WARMUP"],
                      results_subdir=f"train/{PRESET}")
try:  # a first fit below 2, a warm-up below 1 or a value that is not a whole number fails here, naming it
    VARIANTS = regime.variants(cfg.preset, cfg["REGIME_FIRST_FITS"], cfg["REGIME_IVD_WARMUP"])
except (ConfigError, TypeError) as e:
    raise nb.ParameterError(f"REGIME_FIRST_FITS must be a list of integers >= 2 (pairs before OD's first fit) and "
                            f"REGIME_IVD_WARMUP an integer >= 1 (anchor groups before IVD's eta^2_cal): {e}") from None
STD, SWEEP, WARM = VARIANTS
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} first fits={cfg['REGIME_FIRST_FITS']} "
      f"IVD warm-up={cfg['REGIME_IVD_WARMUP']}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from wmrl.arms import get_arm
from wmrl.experiments import claims, plots, stats
from wmrl.experiments.collect import ensure_arm_runs, load_table

plots.use_style()
MIXED = list(regime.TABLE3)  # Table 3's rows: both streams; their anchor pairs are refit
base = ensure_arm_runs(cfg, MIXED)
sweep = pd.concat([ensure_arm_runs(cfg, ["od"], tag=v.tag, overrides=v.overrides) for v in SWEEP], ignore_index=True)
std = ensure_arm_runs(cfg, MIXED, tag=STD.tag, overrides=STD.overrides)  # the same switch on every row
warm = ensure_arm_runs(cfg, ["ivd"], tag=WARM.tag, overrides=WARM.overrides)
runs = pd.concat([base, sweep, std, warm], ignore_index=True)
R = regime.readout(base, cfg["REGIME_FIRST_FITS"])  # sections 1 and 3, from the default runs (RESULTS.md reads the same)
DEFAULT_FIT, REFIT, pairs = R.first_fit, R.refit_every, R.pairs
print(f"{len(runs)} runs; OD's default schedule: first fit after {DEFAULT_FIT} pairs, refit every {REFIT}; "
      f"{len(pairs)} anchor pairs in the {len(base)} default runs with both streams")

# %% [markdown]
# ## 1. What an early first fit costs, refit on the logged anchor pairs
#
# For each run and schedule $K$: step by step, the anchor group's raw scores pass through the map
# fitted on the pairs of the earlier steps (identity until $K$ pairs, a refit every
# `od_refit_every` after), the squared error against the real rewards is recorded, then the step's
# pairs join the fit. `regime.readout` first checks that this refit is the trainer's OD: at each OD
# run's own schedule the refit scores must equal the calibrated scores the run logged (it raises
# otherwise). By the second half of a small run every schedule has refitted on the same pairs, so
# the second-half columns agree; the whole-run columns show what the early steps cost.

# %%
FITS = sorted({*cfg["REGIME_FIRST_FITS"], DEFAULT_FIT})
preq = R.preq
print(f"refit OD equals the logged calibrated scores in all {sum(get_arm(a).od for a in base.arm)} OD runs")

# %% tags=["nbval-check-output"]
preq_table = regime.calibration_table(preq)
with pd.option_context("display.width", 200):
    print(preq_table.to_string())

# %% [markdown]
# ## 2. The first fit, trained
#
# `od` with its first fit after each $K$, paired by seed with the default `od` (first fit after the
# preset's pairs); `mix` is the first fit that never comes (the paper's 200 pairs, in a run of 64).

# %% tags=["nbval-check-output"]
FIT_ARMS = ["od", *[v.label("od") for v in SWEEP], "mix"]
fit_of = {"od": DEFAULT_FIT, **{v.label("od"): int(v.value) for v in SWEEP}, "mix": regime.NEVER}
table = stats.arm_table(runs, FIT_ARMS, {"held-out Avg (%)": ("avg", 100, 1),
                                        "execution (CPU-min)": ("execution_charged_min", 1, 2)})
table.insert(0, "first fit (pairs)", [fit_of[a] for a in table.index])
print(table.to_string())

# %% [markdown]
# ## 3. The step size: OD's factor on the world-model groups' advantages
#
# From the step after OD's first fit on, per anchor group: the SD of the raw world-model scores,
# of the calibrated ones (what an OD arm trains its world-model groups on) and of the real rewards.
# `cal_over_raw` is OD's factor on a world-model group's gradient (1 in `mix`, which trains on raw
# scores); `trained_over_real` compares the world-model stream's advantage scale with the executed
# stream's on the same groups.

# %% tags=["nbval-check-output"]
FROM_STEP, spread, spread_runs = R.from_step, R.spread, R.spread_runs  # from the first step the map transforms
spread_table = (spread_runs.groupby("arm", sort=False)[["cal_over_raw", "trained_over_real"]]
                .agg(lambda v: stats.fmt_ci(*stats.mean_ci(v), digits=2)).reindex(MIXED))
print(f"anchor groups from step {FROM_STEP} on ({spread_runs.groups.iloc[0]} a run)")
print(spread_table.to_string())

# %% [markdown]
# Table 3's rows as trained and with std-normalised advantages (`train.std_normalize=True`), where
# the step-size confound is gone; each row's difference from `mix` is paired by seed.

# %% tags=["nbval-check-output"]
WAYS = {"as trained": lambda arm: arm, "std-normalised": STD.label}  # each way's run label of an arm
both_ways = pd.DataFrame({what: [stats.fmt_ci(*stats.mean_ci(runs[runs.arm == label(a)].avg * 100)) for a in MIXED]
                          for what, label in WAYS.items()}, index=MIXED)
for what, label in WAYS.items():
    both_ways[f"− mix, {what}"] = ["" if a == "mix" else stats.fmt_ci(*stats.paired_diff(runs, label(a), label("mix"),
                                                                                           "avg", 100)[:3])
                                   for a in MIXED]
print(both_ways.to_string())

# %% [markdown]
# ## 4. IVD's warm-up
#
# From each `ivd` run's log: the anchor groups seen before $\hat\eta^2_{cal}$ was recorded (asserted
# equal to the step's rule, `wmrl.step.ivd_warmup_groups`, for the default runs and to
# `method.ivd_warmup_groups` for the variant), the share of steps whose gradient $\rho$ weighted,
# the mean $\rho$, and the held-out Avg.

# %% tags=["nbval-check-output"]
DEFAULT_WARMUP = regime.default_ivd_warmup(cfg.preset)
WARM_K = WARM.overrides["method.ivd_warmup_groups"]
ivd_runs = runs[runs.arm.isin(["ivd", WARM.label("ivd")])]
active = regime.ivd_active_share(load_table(ivd_runs, "steps"))
for arm, want in (("ivd", DEFAULT_WARMUP), (WARM.label("ivd"), WARM_K)):
    assert (active[active.arm == arm].warmup_groups == want).all(), f"{arm}: warm-up is not {want} anchor groups"
warm_table = active.groupby("arm", sort=False)[["warmup_groups", "ivd_share", "mean_rho"]].mean()
warm_table["held-out Avg (%)"] = [stats.fmt_ci(*stats.mean_ci(runs[runs.arm == a].avg * 100)) for a in warm_table.index]
print(warm_table.round(3).to_string())

# %% [markdown]
# ## 5. Figures
#
# Top left: the refit calibration error by first fit (mean over runs with a 95% interval; the
# dashed line is the raw world model, the identity that a first fit after the run's last pair
# leaves). Top right: held-out Avg of `od` by first fit (the sweep's runs and the default; 95%
# interval over seeds, each seed a dot), with `mix` at "never". Bottom left: OD's factor on the
# world-model groups' advantage SD per step, in the OD arms (1: no shrinkage). Bottom right:
# each correction − `mix`, paired by seed, as trained and std-normalised.

# %%
fig, axes = plt.subplots(2, 2, figsize=(13, 8.4))
ax = axes[0, 0]
fitted = preq[preq.first_fit != regime.NEVER].astype({"first_fit": int})
for col, ls, what in (("mse", "-", "whole run"), ("mse_late", "--", "second half")):
    plots.mean_band(ax, fitted, "first_fit", col, color="tab:purple" if col == "mse" else "tab:olive",
                    label=f"calibrated, {what}", marker="o")
    ax.axhline(preq[preq.first_fit == regime.NEVER][col].mean(), color="0.3", ls=ls, lw=1,
               label=f"raw (identity), {what}")
ax.set(xscale="log", xlabel="pairs before OD's first fit (log scale)", ylabel="squared error vs real reward",
       title="Refit on the logged anchor pairs")
ax.set_xticks(FITS, [str(k) for k in FITS])
ax.minorticks_off()
ax.legend(fontsize=8)

ax = axes[0, 1]
sizes = [(fit_of[a], a) for a in FIT_ARMS if a != "mix"]
xs = {a: i for i, (_, a) in enumerate(sorted(sizes))} | {"mix": len(sizes)}
for arm, i in xs.items():
    v = runs[runs.arm == arm].avg.to_numpy() * 100
    m, lo, hi = stats.mean_ci(v)
    ax.errorbar([i], [m], yerr=None if np.isnan(lo) else [[m - lo], [hi - m]], fmt="s", ms=7, capsize=4,
                color=plots.arm_color(arm))
    ax.plot(np.full(len(v), i) + np.linspace(-0.08, 0.08, len(v)), v, "o", ms=4, color="k", mfc="white", zorder=3)
ax.set_xticks(list(xs.values()), [str(fit_of[a]) for a in xs])
ax.set(xlabel="pairs before OD's first fit (mix: never)", ylabel="held-out Avg (percentile points)",
       title="od trained with each first fit")
ax.legend(handles=[Line2D([], [], ls="", marker="s", color=plots.arm_color("od"), label="od: mean, 95% CI"),
                   Line2D([], [], ls="", marker="s", color=plots.arm_color("mix"), label="mix: mean, 95% CI"),
                   Line2D([], [], ls="", marker="o", ms=4, color="k", mfc="white", label="one seed")], fontsize=8)

ax = axes[1, 0]
per_step = regime.spread_summary(spread[spread.arm.isin(["od", "wmrl"])], 0, by=("arm", "seed", "step")).rename(
    columns={"cal_over_raw": "factor"})
for arm, ls in (("od", "-"), ("wmrl", "--")):  # one anchor group a step: the bands are wide, drawn within [0, 2]
    plots.mean_band(ax, per_step[per_step.arm == arm], "step", "factor", color=plots.arm_color(arm),
                    label=f"{arm} (mean)", marker="o", ls=ls, bounds=(0, 2))
ax.axhline(1, color="0.3", lw=1, ls="--", label="no shrinkage (mix, ivd)")
ax.axvline(FROM_STEP - 0.5, color="0.6", lw=1, ls=":", label="OD's first fit")
ax.set(xlabel="training step", ylabel="SD of calibrated / SD of raw, per anchor group",
       title="OD's factor on a world-model group's advantages", ylim=(0, 2))
ax.legend(fontsize=8, handles=ax.get_legend_handles_labels()[0]
          + [plt.matplotlib.patches.Patch(color="0.5", alpha=0.15, label=plots.CI_LABEL)])

ax = axes[1, 1]
for j, (label, marker) in enumerate(zip(WAYS.values(), "oD")):
    for i, arm in enumerate(MIXED[1:]):
        v = stats.paired_values(runs, label(arm), label("mix"), "avg", scale=100)
        m, lo, hi = stats.mean_ci(v)
        x = i + (j - 0.5) * 0.3
        ax.errorbar([x], [m], yerr=None if np.isnan(lo) else [[m - lo], [hi - m]], fmt=marker, ms=7, capsize=4,
                    color=plots.arm_color(arm), mfc="white" if j else None)
        ax.plot(np.full(len(v), x) + np.linspace(-0.04, 0.04, len(v)), v, ".", ms=4, color="k", zorder=3)
ax.axhline(0, color="k", lw=0.8)
ax.set_xticks(range(len(MIXED) - 1), MIXED[1:])
ax.set(xlabel="Table 3 row", ylabel="row − mix, held-out Avg (points)", title="Each correction against the mix, "
       "paired by seed")
ax.legend(handles=[Line2D([], [], ls="", marker="o", color="0.3", label="as trained: mean, 95% CI"),
                   Line2D([], [], ls="", marker="D", color="0.3", mfc="white", label="std-normalised: mean, 95% CI"),
                   Line2D([], [], ls="", marker=".", color="k", label="one seed")], fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "11_method_regime", cfg, "Online Debiasing's first fit (refit calibration error and trained od by "
               "first fit, mix = never) and its step-size confound (OD's factor on world-model advantages per step; "
               "each correction - mix as trained and with std-normalised advantages); 95% intervals over runs or seeds.",
               sources=[f"{d}/{f}" for d in runs.dir for f in ("summary.json", "pairs.parquet", "steps.parquet")])
plt.show()

# %% [markdown]
# ## 6. Claims
#
# Seed-paired, with the detectable difference at 80% power and Holm's correction over this table:
# each correction against the mix at matched step size, each first fit of OD against the preset's,
# and IVD's warm-up against the default (OD against the mix as trained is notebook 02's C22-OD).

# %% tags=["nbval-check-output"]
verdicts = claims.evaluate_claims(runs, regime.method_regime(VARIANTS, DEFAULT_FIT, DEFAULT_WARMUP))
with pd.option_context("display.width", 250, "display.max_colwidth", 70):
    print(claims.claims_display(verdicts).to_string())

# %% [markdown]
# ## What we see
#
# Computed from the claims table and the two measurements above (`claims.what_we_see`,
# `regime.regime_findings`).

# %% tags=["nbval-check-output"]
SENTENCES = claims.what_we_see(verdicts) + regime.regime_findings(preq, spread_runs, FROM_STEP)
nb.save_claims(verdicts, cfg, "the method in its regime: OD's first fit, the step size, IVD's warm-up",
               SENTENCES)  # what RESULTS.md reads
print("\n".join(SENTENCES))

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`):

# %%
runs[["arm", "seed", "git_commit", "date", "run"]]
