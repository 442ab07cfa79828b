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
# # 08 · The fidelity dial: how good must the world model be for WMRL to pay?
#
# **Background.** The paper never measures its world model's fidelity, and the reviews ask the
# question its method turns on: how good must the world model be? Theorem 4 says what a world
# model brings: its world-model groups cut the variance of the gradient, $\gamma V_{WM}/(1 +
# V_{WM}/V_E)$, while Online Debiasing removes a monotone bias and IVD weighs the anchors up as the
# calibrated residual $\hat\eta^2$ grows. A poor world model should therefore leave WMRL near the
# anchors alone (`anchor_only`), a perfect one bring it to GRPO at a fraction of GRPO's execution,
# and somewhere between lies the **break-even**: the fidelity at which WMRL matches GRPO.
#
# **The instrument (oracle-derived, an analysis tool, not a world model one could deploy).** The
# world models we have come with one fidelity each, so this notebook builds one with a dial
# (`world_model.kind = "oracle"`, `wmrl/world_model/oracle.py`). It looks up the *real* outcome of
# each script (the shared execution memo, else the sandbox) and reports a noisy, distorted reading
# of its ladder reward $r$, Assumption 6's world model made literal:
#
# $$\ell = \mathrm{clip}(r + \sigma\xi, 0, 1),\ \xi \sim \mathcal N(0,1), \qquad \hat r = \phi(\ell),
#   \qquad \phi(\ell) = 0.35 + 0.6\sqrt{\ell}\ \text{(``optimistic'', notebook 00's shape)}.$$
#
# $\phi$ is strictly increasing, so it changes no ranking: the noise $\sigma$ alone sets how well
# $\hat r$ ranks the scripts of a group, and $\phi$ is a pure bias for Online Debiasing to remove.
# The agent's feedback on world-model groups comes from the same noisy reading (the rung of the
# ladder nearest to $\ell$). The x axis is not $\sigma$ but the fidelity each level *achieved*: the
# within-group Spearman of predicted and real reward on the anchor pairs logged during training.
# The instrument is charged what a world-model call costs (the program-analysis model's measured
# CPU seconds per script); the real executions it needs to know the truth are recorded apart
# (`summary.json`'s `compute_apart`, section 6) and never counted as an arm's cost.
#
# **Where the real world models sit.** The program-analysis world model at its error profiles
# (`world_model.profile`, `FIDELITY_PROFILES`: `tuning_split` marks the default runs shared with
# notebooks 01-05; another profile, where asked, trains its own), measured on the same footing (their own runs'
# anchor pairs); the SmolLM2 LLM world model, which cannot train the grammar agent on two cores,
# from notebook 05's fixed set of scripts (another footing, labelled as such).
#
# **What the `small` preset trains, and why so little.** An oracle run must execute every script to
# know its truth, so it costs about what a `grpo` run does (section 6 gives the count). The `small`
# preset trains `wmrl` and the pure world model `wm` at three noise levels (0, 0.2, 1.0) on 3 seeds
# (`FIDELITY_ARMS`, 18 runs), Table 3's uncorrected `mix` and `od` at the two ends of the dial only
# (`FIDELITY_END_ARMS`, 12 runs: the levels claims D7 and D8 compare), and marks only the default
# `tuning_split` profile (notebook 05, section 5, compares the profiles on a trained agent). These 30 runs are
# a campaign of their own (`make reproduce-dial`), sized to its 2 hours; `mix` and `od` at the
# middle level would take it past them. A wider dial is one parameter away:
# `-y 'FIDELITY_ARMS: [wm, mix, od, wmrl]'`, `-y 'FIDELITY_LEVELS: [0.0, 0.08, 0.2, 0.4, 1.0]'` (60 runs;
# at the 4.3 minutes a run these took, about 4 hours on 2 cores).
#
# This notebook started as `python -m wmrl.experiments new-ablation fidelity_dial --base-arm wmrl
# --set world_model.kind=oracle --sweep world_model.oracle_noise=0.0,0.08,0.2,0.4,1.0` (the
# template ran as generated at the smoke preset) and was then extended to several arms, reference
# bands, the break-even and the real world models' marks.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
FIDELITY_LEVELS = None  # the oracle's noise SDs (world_model.oracle_noise), one tagged set of runs each
FIDELITY_ARMS = None  # arms trained at every level (wm, mix, od, wmrl)
FIDELITY_END_ARMS = None  # arms trained at the lowest and the highest noise only (mix, od)
FIDELITY_BANDS = None  # reference arms without a world model, drawn as bands (grpo, anchor_only; default runs)
FIDELITY_DISTORTION = None  # the oracle's monotone distortion phi: "optimistic" or "identity"
FIDELITY_PROFILES = None  # program-analysis profiles marked on the axis (tuning_split: the default runs)
FIDELITY_PROFILE_ARMS = None  # arms trained with each profile to mark it (their anchor-pair Spearman and score)

# %%
from wmrl.arms import ARMS, get_arm
from wmrl.experiments import notebook as nb
from wmrl.world_model.oracle import DISTORTIONS
from wmrl.world_model.static import PROFILES

cfg = nb.check_params(globals(), notebook="08_fidelity_dial", results_subdir=f"train/{PRESET}",
                      keys=["FIDELITY_LEVELS", "FIDELITY_ARMS", "FIDELITY_END_ARMS", "FIDELITY_BANDS",
                            "FIDELITY_DISTORTION", "FIDELITY_PROFILES", "FIDELITY_PROFILE_ARMS"],
                      choices={"FIDELITY_ARMS": [a for a in ARMS if get_arm(a).world_model],
                               "FIDELITY_END_ARMS": [a for a in ARMS if get_arm(a).world_model],
                               "FIDELITY_BANDS": [a for a in ARMS if get_arm(a).train and not get_arm(a).world_model],
                               "FIDELITY_DISTORTION": DISTORTIONS, "FIDELITY_PROFILES": PROFILES,
                               "FIDELITY_PROFILE_ARMS": [a for a in ARMS if get_arm(a).mixes_streams]})
LEVELS = cfg["FIDELITY_LEVELS"]
if (not isinstance(LEVELS, (list, tuple)) or len(LEVELS) < 2
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in LEVELS)
        or len(set(LEVELS)) < len(LEVELS)):
    raise nb.ParameterError(f"FIDELITY_LEVELS must list two or more distinct noise SDs >= 0, got {LEVELS!r} "
                            "(papermill: -y 'FIDELITY_LEVELS: [0.0, 0.2, 1.0]')")
if not any(get_arm(a).mixes_streams for a in cfg["FIDELITY_ARMS"]):
    raise nb.ParameterError(f"FIDELITY_ARMS={cfg['FIDELITY_ARMS']} needs an arm with anchors (mix, od, ivd or wmrl): "
                            "a level's fidelity is measured on its anchor pairs")
LEVELS = sorted(float(v) for v in LEVELS)
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} noise levels={LEVELS} arms={cfg['FIDELITY_ARMS']} "
      f"at the ends only={cfg['FIDELITY_END_ARMS']} bands={cfg['FIDELITY_BANDS']} distortion={cfg['FIDELITY_DISTORTION']} profiles={cfg['FIDELITY_PROFILES']}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from scipy.stats import spearmanr

from _fidelity_dial import (
    break_even,
    crossing,
    dial_claims,
    dial_frame,
    fidelity_dial_findings,
    level_arms,
    oracle_overrides,
    oracle_tag,
    profile_overrides,
    profile_tag,
    run_fidelity,
)
from wmrl.experiments import claims, plots, stats
from wmrl.experiments.collect import ensure_arm_runs, load_table
from wmrl.world_model.fidelity import within_group_spearman
from wmrl.world_model.oracle import distort

ARMS_HERE, BANDS, DIST = list(cfg["FIDELITY_ARMS"]), list(cfg["FIDELITY_BANDS"]), cfg["FIDELITY_DISTORTION"]
END_ARMS = cfg["FIDELITY_END_ARMS"]
LEVEL_ARMS = level_arms(LEVELS, ARMS_HERE, END_ARMS)  # the arms trained at each level
DIAL_ARMS = LEVEL_ARMS[LEVELS[0]]  # every arm: the ends have them all
PROFILE_ARMS = list(cfg["FIDELITY_PROFILE_ARMS"])
TAGS = {s: oracle_tag(s, DIST) for s in LEVELS}
TOP, BOTTOM = TAGS[LEVELS[0]], TAGS[LEVELS[-1]]  # the least and the most noise
plots.use_style()
parts = [ensure_arm_runs(cfg, BANDS)]  # the default runs, shared with notebooks 01-04
parts += [ensure_arm_runs(cfg, LEVEL_ARMS[s], tag=TAGS[s], overrides=oracle_overrides(s, DIST)) for s in LEVELS]
parts += [ensure_arm_runs(cfg, PROFILE_ARMS, tag=profile_tag(p), overrides=profile_overrides(p))
          for p in cfg["FIDELITY_PROFILES"]]
runs = pd.concat(parts, ignore_index=True).drop_duplicates(["arm", "seed"]).reset_index(drop=True)
steps, pairs = load_table(runs, "steps"), load_table(runs, "pairs")
dial = dial_frame(runs, steps, LEVELS, ARMS_HERE, DIST, end_arms=END_ARMS)
LABELS = {f"{a}~{TAGS[s]}": s for s, here in LEVEL_ARMS.items() for a in here}  # run label -> its level


def ci(values):
    """Mean and 95% Student-t interval of the values that are not NaN (all NaN without any)."""
    v = pd.Series(values, dtype=float).dropna()
    return stats.mean_ci(v) if len(v) else (np.nan, np.nan, np.nan)

# %% [markdown]
# ## 1. What each level achieved: its fidelity, measured on the anchor pairs
#
# Per level: the noise $\sigma$, the measured within-group Spearman (the x axis of every figure
# below: per seed the mean over steps of the anchor pairs' Spearman, averaged over the arms with
# anchors trained at every level; mean with its 95% interval over seeds), each arm's own, and the
# anchor pairs' mean absolute error before (`raw`) and after Online Debiasing (`cal`, arms with OD).
# `wm` has no anchors and sits at its level's fidelity; so do the arms trained at the ends only.

# %% tags=["nbval-check-output"]
x_seed = dial.groupby(["noise", "seed"]).x.first()
level_x = pd.DataFrame([ci(v) for _, v in x_seed.groupby("noise")], columns=["x", "lo", "hi"],
                       index=sorted(x_seed.index.get_level_values("noise").unique()))
table = pd.DataFrame({"tag": [TAGS[s] for s in level_x.index],
                      "within-group Spearman (95% CI)": [stats.fmt_ci(r.x, r.lo, r.hi, 2) for r in level_x.itertuples()]},
                     index=pd.Index(level_x.index, name="noise sigma"))
for arm in DIAL_ARMS:
    if get_arm(arm).mixes_streams:
        table[f"{arm} Spearman"] = dial[dial.arm == arm].groupby("noise").spearman.mean().round(2)
err = steps.assign(noise=steps.arm.map(LABELS))
err = err.dropna(subset=["noise"])
table["MAE raw"] = err.groupby("noise").fid_mae_raw.mean().round(3)
od_arms = [label for label in LABELS if get_arm(label.split("~")[0]).od]
table["MAE cal (OD arms)"] = err[err.arm.isin(od_arms)].groupby("noise").fid_mae_cal.mean().round(3)
with pd.option_context("display.width", 250, "display.max_columns", 20):
    print(table.to_string())

# %% [markdown]
# **Checks a reader can rerun.** (1) The x axis, recomputed: every step's logged `fid_spearman`
# is scipy's Spearman of that step's anchor pairs in `pairs.parquet` (predicted vs real trajectory
# reward). (2) The instrument is what it says: at $\sigma = 0$ an anchor pair's prediction is
# $\phi$ of its real reward, to rounding, since a trajectory's reward is its best turn's and
# $\max_t \phi(r_t) = \phi(\max_t r_t)$ for an increasing $\phi$. Up to one caveat: the oracle
# reads the outcome of its own execution of a script (the shared memo's), the anchor pair's real
# reward is the run's execution of it, and two executions of one script are not always the same
# on a loaded machine: a script whose CPU time is near the budget can run ok once and time out the
# next (CPU time's own jitter; `python -m bench.memo_agreement` measures it on the memos a
# campaign leaves behind). The check allows at most 5% of pairs to differ: an instrument whose
# noise leaked into $\sigma = 0$ would make nearly all of them differ.

# %%
n_steps = 0
for (arm, seed), p in pairs[pairs.arm.isin(dial.label)].groupby(["arm", "seed"]):
    logged = steps[(steps.arm == arm) & (steps.seed == seed)].set_index("step").fid_spearman
    for step, g in p.groupby("step"):
        both = np.ptp(g.pred) > 0 and np.ptp(g.true) > 0
        mine = spearmanr(g.pred, g.true).statistic if both else np.nan
        assert np.isclose(mine, logged[step], equal_nan=True), (arm, seed, step, mine, logged[step])
        n_steps += 1
print(f"fid_spearman recomputed from the logged pairs at {n_steps} steps: equal")
exact = pairs[pairs.arm.isin([f"{a}~{TAGS[0.0]}" for a in LEVEL_ARMS[0.0]])] if 0.0 in TAGS else pairs.iloc[:0]
if len(exact):
    off = exact[~np.isclose(exact.pred, distort(exact.true, DIST), atol=1e-12)]
    assert len(off) <= 0.05 * len(exact), f"{len(off)} of {len(exact)} pairs at sigma 0 are not phi(real reward)"
    print(f"sigma = 0: {len(exact) - len(off)} of {len(exact)} anchor pairs have prediction = phi(real reward) "
          f"({DIST}); {len(off)} differ, where the oracle's execution of a script and the run's own disagree:")
    if len(off):
        print(off.assign(**{"phi(real)": distort(off.true, DIST)})[["arm", "seed", "step", "pred", "phi(real)",
                                                                     "true"]].round(3).to_string(index=False))
else:
    print("no level at sigma = 0: the exactness check is skipped")

# %% [markdown]
# ## 2. Where the real world models sit on that axis
#
# The program-analysis world model at each profile, on the same footing as the dial: the
# Spearman of its own runs' anchor pairs (`FIDELITY_PROFILE_ARMS`; the default profile's are the
# default runs). The SmolLM2 LLM world model is too slow to train the grammar agent on two cores,
# so it is read off notebook 05's fixed set of scripts (drawn as the untrained agent writes them,
# one script per task in turn): the within-group Spearman where a task has three scripts or more,
# else the Spearman over all scripts, beside the program-analysis model's on the same scripts, so
# that the two footings can be compared.

# %% tags=["nbval-check-output"]
fid = run_fidelity(steps)
marks = []
for profile in cfg["FIDELITY_PROFILES"]:
    labels = [a if profile_tag(profile) is None else f"{a}~{profile_tag(profile)}" for a in PROFILE_ARMS]
    per_seed = fid[fid.index.get_level_values("arm").isin(labels)].groupby(level="seed").mean()
    m, lo, hi = ci(per_seed)
    marks.append({"world model": f"program analysis ({profile})", "footing": f"anchor pairs of {', '.join(labels)}",
                  "n": len(per_seed), "spearman": m, "lo": lo, "hi": hi, "labels": labels})
SUB05 = f"fidelity/{cfg.preset}"
try:
    fixed = {"program analysis (train_split), fixed set": nb.load_results("static_rows", cfg, SUB05)}
    try:
        llm = nb.load_results("llm_rows", cfg, SUB05)
        fixed["SmolLM2 LLM, fixed set"] = llm
        fixed["program analysis (train_split), the LLM's scripts"] = fixed["program analysis (train_split), fixed set"].iloc[:len(llm)]
    except nb.ParameterError:
        print(f"no SmolLM2 scores in {cfg.results_dir / SUB05} (notebook 05 skips them without the `llm` extra)")
except nb.ParameterError:
    fixed = {}
    print(f"no fixed-set scores in {cfg.results_dir / SUB05}: run notebook 05 first to mark them")
for name, rows in fixed.items():
    within, groups = within_group_spearman(rows if "group" in rows else rows.assign(group=rows.task))
    overall = spearmanr(rows.pred_reward, rows.real_reward).statistic if rows.pred_reward.nunique() > 1 else 0.0
    marks.append({"world model": name, "n": len(rows),
                  "footing": f"notebook 05, within-group ({groups} tasks)" if groups else "notebook 05, over all scripts "
                  "(no task has 3)", "spearman": within if groups else overall, "lo": np.nan, "hi": np.nan,
                  "labels": []})
marks = pd.DataFrame(marks).set_index("world model")
print(marks.assign(**{"Spearman (95% CI)": [stats.fmt_ci(r.spearman, r.lo, r.hi, 2) for r in marks.itertuples()]})[
    ["footing", "n", "Spearman (95% CI)"]].to_string())

# %% [markdown]
# ## 3. Held-out score at each fidelity, and the break-even
#
# Held-out Avg (percentile points) per arm and level, mean with its 95% interval over seeds, and
# the reference arms (default runs). Then the **break-even** of each arm against each reference:
# per level the seed-paired difference (arm − reference) has a mean and a 95% interval; with the
# levels ordered by measured fidelity and joined by straight lines, the break-even is the lowest
# fidelity from which the mean difference stays at or above 0, and its interval runs from where
# the interval's upper bound reaches 0 to where its lower bound does (inverted pointwise intervals,
# `break_even` of `_fidelity_dial.py`, beside this notebook). `<= x`: the arm is not below the reference even at
# the lowest fidelity measured; `> x`: it stays below up to the highest. Per seed, the same
# crossing of that seed's differences.

# %% tags=["nbval-check-output"]
scores = dial.groupby(["noise", "arm"]).avg.apply(lambda v: stats.fmt_ci(*stats.mean_ci(v), 1)).unstack()[DIAL_ARMS]
scores.insert(0, "Spearman", level_x.x.round(2))
for band in BANDS:
    scores[band] = stats.fmt_ci(*stats.mean_ci(runs[runs.arm == band].avg * 100), 1)
with pd.option_context("display.width", 250, "display.max_columns", 20):
    print(scores.to_string())

be, per_seed_rows = {}, []
ref_avg = {b: runs[runs.arm == b].set_index("seed").avg * 100 for b in BANDS}
for arm in DIAL_ARMS:
    d = dial[dial.arm == arm]
    for ref in BANDS:
        diffs = d.pivot_table(index="noise", columns="seed", values="avg").sub(ref_avg[ref], axis=1)
        x_lv = level_x.x.reindex(diffs.index)
        be[(arm, ref)] = break_even(x_lv.to_numpy(), diffs.to_numpy())
        xs = x_seed.unstack().reindex(diffs.index)
        for seed in diffs.columns:
            o = np.argsort(xs[seed].to_numpy())
            per_seed_rows.append({"arm": arm, "reference": ref, "seed": seed,
                                  "x": crossing(xs[seed].to_numpy()[o], diffs[seed].to_numpy()[o])})
per_seed = pd.DataFrame(per_seed_rows)
cross = pd.DataFrame({"break-even Spearman (95% CI)": {k: v.text() for k, v in be.items()},
                      "seeds": {k: v.seeds for k, v in be.items()},
                      "per seed": {k: ", ".join(be[k].fmt(x) for x in g.x)
                                   for k, g in per_seed.groupby(["arm", "reference"])}})
cross.index.names = ["arm", "reference"]
print()
print(cross.to_string())

# %% [markdown]
# ## 4. Figure: held-out score against world-model fidelity
#
# Left: held-out Avg of each arm against the measured within-group Spearman of its level (mean
# with its 95% interval over seeds, the arms' bars drawn a little apart at each level; the
# Spearman's own interval is the right panel's band; faint dots: seeds), the reference arms as dashed
# lines (their means; their 95% intervals over seeds as bars at the left edge), WMRL's break-even
# against GRPO (vertical line; its interval as the bar along the bottom), and the real world
# models: the program-analysis model at each profile at its runs' anchor-pair Spearman (vertical
# dotted lines, its runs' held-out Avg as stars), the fixed-set values of notebook 05 (numbered
# grey ticks at the top, named in the legend: another footing). Middle: WMRL − GRPO paired by
# seed at each level, the construction of the break-even. Right: the dial itself, measured Spearman
# against the noise $\sigma$ per arm.

# %%
fig, axes = plt.subplots(1, 3, figsize=(20, 6.6), gridspec_kw={"width_ratios": [1.5, 1, 1]})
ax = axes[0]
handles = []
x_ref = min(-0.25, np.nanmin(dial.x) - 0.15)  # the reference arms' intervals: at the left edge, left of the data
for k, band in enumerate(BANDS):
    m, lo, hi = stats.mean_ci(runs[runs.arm == band].avg * 100)
    c = plots.arm_color(band)
    ax.axhline(m, color=c, ls="--", lw=1.2)
    if not np.isnan(lo):
        ax.errorbar([x_ref + 0.03 * k], [m], yerr=[[m - lo], [hi - m]], fmt="s", color=c, capsize=4, ms=5, lw=2)
    handles.append(Line2D([], [], color=c, ls="--", marker="s", ms=5,
                          label=f"{band}, default runs (bar at the left: 95% CI)"))
DODGE = 0.012  # the arms' bars side by side at each level (a shift of the drawing, not of the measured Spearman)
for k, arm in enumerate(DIAL_ARMS):
    d, c = dial[dial.arm == arm], plots.arm_color(arm)
    shift = (k - (len(DIAL_ARMS) - 1) / 2) * DODGE
    pts = []
    for noise, g in d.groupby("noise"):
        my, ylo, yhi = ci(g.avg)
        mx = g.x.mean()
        pts.append((mx + shift, my))
        ax.errorbar([mx + shift], [my], yerr=None if np.isnan(ylo) else [[my - ylo], [yhi - my]], fmt="o", color=c,
                    capsize=3, ms=6, alpha=0.85)
        ax.plot(g.x, g.avg, ".", color=c, alpha=0.35)
    pts.sort()
    ax.plot(*zip(*pts), "-", color=c, lw=1.5)
    handles.append(Line2D([], [], color=c, marker="o", label=f"{arm}, oracle-derived world model"))
if ("wmrl", "grpo") in be:
    b = be[("wmrl", "grpo")]
    lo_x, hi_x = (max(v, b.x_min) if v == -np.inf else min(v, b.x_max) if v == np.inf else v for v in (b.lo, b.hi))
    if np.isfinite(b.x):
        ax.axvline(b.x, color=plots.arm_color("wmrl"), lw=1.5, alpha=0.8)
    if not np.isnan(lo_x):  # its interval as a bar along the bottom edge, not a shaded span over the data
        ax.hlines(0.03, lo_x, hi_x, color=plots.arm_color("wmrl"), lw=3, transform=ax.get_xaxis_transform())
        ax.plot([lo_x, hi_x], [0.03, 0.03], "|", ms=12, mew=2, color=plots.arm_color("wmrl"),
                transform=ax.get_xaxis_transform())
    handles.append(Line2D([], [], color=plots.arm_color("wmrl"), marker="|", ms=10, lw=1.5,
                          label=f"wmrl = grpo at Spearman {b.text()} (bar: 95% CI)"))
styles = iter([":", "-."])
ticks = 0
for name, r in marks.iterrows():
    if r.labels:
        ls = next(styles, ":")
        ax.axvline(r.spearman, color="k", ls=ls, lw=1.2)
        sel = runs[runs.arm.isin(r.labels)]
        ax.plot(fid.reindex(list(zip(sel.arm, sel.seed))).to_numpy(), sel.avg * 100, "*", ms=11, color="k",
                mfc=plots.arm_color(r.labels[0]))
        handles.append(Line2D([], [], color="k", ls=ls, marker="*", ms=9,
                              label=f"{name}: {r.spearman:.2f} ({', '.join(r.labels)}: stars)"))
    elif np.isfinite(r.spearman):  # a numbered tick at the top; its name goes to the legend
        ticks += 1
        ax.plot([r.spearman], [1.0], "v", color="0.4", ms=8, transform=ax.get_xaxis_transform(), clip_on=False)
        ax.annotate(str(ticks), (r.spearman, 1.0), xycoords=("data", "axes fraction"), fontsize=8,
                    xytext=(0, 7), textcoords="offset points", ha="center", va="bottom", color="0.3")
        handles.append(Line2D([], [], ls="", marker="v", color="0.4",
                              label=f"{ticks}: {name} (notebook 05)"))
ax.set_xlim(x_ref - 0.06, None)
ax.set(xlabel="world-model fidelity: within-group Spearman on the anchor pairs (measured)",
       ylabel="held-out Avg (percentile points)")
ax.set_title("Held-out score against world-model fidelity", pad=20)
left_handles = handles  # its legend goes below the panels, after the layout (end of the cell)

ax = axes[1]
if "wmrl" in ARMS_HERE and "grpo" in BANDS:
    d = dial[dial.arm == "wmrl"].assign(diff=lambda f: f.avg - f.seed.map(ref_avg["grpo"]))
    pts = []
    for noise, g in d.groupby("noise"):
        m, lo, hi = ci(g["diff"])
        pts.append((g.x.mean(), m, lo, hi))
        ax.plot(g.x, g["diff"], ".", color=plots.arm_color("wmrl"), alpha=0.35)
    xs, m, lo, hi = map(np.array, zip(*sorted(pts)))
    ax.plot(xs, m, "o-", color=plots.arm_color("wmrl"), label="wmrl − grpo (mean)")
    if not np.isnan(lo).all():
        ax.fill_between(xs, lo, hi, color=plots.arm_color("wmrl"), alpha=0.15, lw=0, label=plots.CI_LABEL)
    ax.axhline(0, color="k", lw=0.8)
    if np.isfinite(be[("wmrl", "grpo")].x):
        ax.axvline(be[("wmrl", "grpo")].x, color=plots.arm_color("wmrl"), lw=1.2, ls="--", label="break-even")
    ax.plot([], [], ".", color=plots.arm_color("wmrl"), alpha=0.35, label="one seed")
    ax.legend(fontsize=8)
ax.set(xlabel="within-group Spearman on the anchor pairs (measured)",
       ylabel="wmrl − grpo, paired by seed (points)", title="The break-even, read off the paired difference")

ax = axes[2]
for arm in DIAL_ARMS:
    if get_arm(arm).mixes_streams:
        plots.mean_band(ax, dial[dial.arm == arm], "noise", "spearman", color=plots.arm_color(arm), label=arm,
                        marker="o", bounds=(-1, 1))
ax.set(xlabel="oracle noise sigma (world_model.oracle_noise)", ylabel="within-group Spearman on the anchor pairs",
       title="The dial: measured fidelity against the noise")
handles, _ = ax.get_legend_handles_labels()
ax.legend(handles=handles + [Patch(color="0.5", alpha=0.15, label=plots.CI_LABEL)], fontsize=8)
fig.tight_layout(rect=(0, 0.15, 1, 1))  # room below for the left panel's legend, added after the layout
axes[0].legend(handles=left_handles, fontsize=8.5, loc="upper left", bbox_to_anchor=(-0.05, -0.14), ncol=4,
               frameon=False)
nb.save_figure(fig, "08_fidelity_dial", cfg, f"Held-out Avg of {' / '.join(DIAL_ARMS)} trained with an oracle-derived "
               "world model of controlled fidelity, against the fidelity each level achieved (within-group Spearman on the "
               "anchor pairs), with grpo and anchor_only as bands (95% CI over seeds), WMRL's break-even against GRPO, "
               f"and where the program-analysis ({', '.join(cfg['FIDELITY_PROFILES'])}) and SmolLM2 world models sit; the paired difference "
               "wmrl - grpo; and the measured Spearman against the oracle's noise.",
               sources=[f"{d}/{f}" for d in runs.dir for f in ("summary.json", "steps.parquet", "pairs.parquet")])
plt.show()

# %% [markdown]
# ## 5. Claims
#
# What the dial should show if Theorem 4's reading holds, each as a seed-paired comparison with
# its detectable difference and Holm's correction over this table: fidelity matters for the pure
# world model (D1) and for WMRL (D2); with a poor world model the corrections protect (D3) and
# WMRL falls below GRPO (D5); with a faithful one the world model adds information beyond the
# anchors (D4), and D6 is C1-C2 in its best case (a world model that ranks perfectly). D7 and D8 are
# Table 3's corrections where a poor world model should make them matter most: OD alone (D7) and both
# corrections (D8) against the uncorrected `mix` at the lowest fidelity (set down before the `mix`
# and `od` runs were trained). "Highest fidelity" is the level with the least noise, "lowest" the one
# with the most.

# %% tags=["nbval-check-output"]
CLAIMS = [c for c in dial_claims(TOP, BOTTOM, DIAL_ARMS) if {c.a, c.b} <= set(runs.arm)]
claims_table = claims.evaluate_claims(runs, CLAIMS) if CLAIMS else None
with pd.option_context("display.width", 250, "display.max_colwidth", 90):
    print(claims.claims_display(claims_table).to_string() if CLAIMS else
          f"no claim compares the arms {DIAL_ARMS} with {BANDS} (the claims need wm or wmrl)")

# %% [markdown]
# ## What we see
#
# Computed from the claims table (`claims.what_we_see`) and from the tables above
# (`fidelity_dial_findings`).

# %% tags=["nbval-check-output"]
if CLAIMS:  # RESULTS.md reads the declared claims
    nb.save_claims(claims_table, cfg, "the fidelity dial: how good must the world model be")
print("\n".join((claims.what_we_see(claims_table) if CLAIMS else [])
                + fidelity_dial_findings(level_x, be, marks, runs[runs.arm.isin(dial.label)])))

# %% [markdown]
# ## 6. What the instrument cost, and what was recorded apart
#
# Per level, mean per run: the world model as charged (a world-model call per prediction, the
# program-analysis model's measured cost), the real executions of the anchors (the arm's cost), and
# what knowing the truth really took, recorded apart (`compute_apart`) and never in a total: the
# scripts the oracle had to execute (every prediction is a lookup; the rest were served by the
# shared memo, so these numbers depend on the order the campaign ran in), their CPU seconds and the
# wall seconds of the lookups.

# %%
apart = runs[runs.arm.isin(dial.label)].assign(noise=lambda f: f.arm.map(LABELS))
cost = apart.groupby("noise")[["world_model_charged_s", "execution_charged_s", "total_charged_s", "oracle_count",
                               "oracle_charged_s", "oracle_actual_s"]].mean().round(1)
cost.columns = ["world model, charged (CPU-s)", "execution, charged (CPU-s)", "total, charged (CPU-s)",
                "oracle: scripts executed (apart)", "oracle: their CPU-s (apart)", "oracle: wall-s (apart)"]
print(cost.to_string())

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`):

# %%
runs[["arm", "seed", "git_commit", "date", "run"]]
