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
# # 06 · The VLA transfer (Table 2): sparse success anchors a dense progress world model
#
# **Background.** The paper transfers WMRL to embodied policy post-training: MiniVLA-1B on
# LIBERO-Long, a world model (Robometer) that predicts task progress from 8 frames of a rollout as
# a dense reward, and the sparse end-of-rollout success as the anchor. Training uses the first 16 of
# the 50 fixed initial states of each task, evaluation all 50. Its Table 2 (success %, one run per
# row, no intervals) is printed below from `wmrl/experiments/paper.py`: WMRL above the pure world
# model, above GRPO on sparse success, above SFT.
#
# **Our analog** (`wmrl.vla`, CPU, minutes):
#
# | paper | here |
# |---|---|
# | LIBERO-Long tasks, 50 fixed initial states each | Meta-World `reach`, `push`, `pick-place` (multi-stage: reach, grasp, lift, carry); 50 seeded initial states each |
# | MiniVLA-1B, SFT on demos, language instruction | Gaussian MLP on the 39-d state + task one-hot, behaviour cloning on DART demos of the scripted experts |
# | Robometer: progress from 8 frames | frozen MLP on 8 states spread over the rollout, trained on the demos only (so biased off them) |
# | sparse success anchor | success at any step (the rollout ends there) |
# | WMRL: OD + IVD | the same `wmrl.step.WMRLStep` as the agent trainers: isotonic progress → success on anchor groups, the η² audit, ρ-weighted fusion |
# | GPU training | one CPU thread, float64 with IEEE basic operations only (`wmrl.vla.exact`), no BLAS in an observation: the same bits, so the same episodes, on every x86-64 CPU with AVX2 and FMA |
#
# What the paper does not report and we do: seeds and 95% intervals; the world model's fidelity on
# the rollouts of the arm trained on it, where reward hacking would show (progress that rises while
# success does not); Table 3's rows (`mix`, `od`, `ivd`) on the VLA.
#
# Sections: 1 the arms · 2 Table 2 beside ours · 3 per task · 4 figure: success · 5 learning curves
# · 6 the world model's fidelity (hacking) · 7 the step object, recomputed from the logs · 8 cost ·
# 9 claims · what we see. `MODE="redraw"` (default) rebuilds everything from `results/vla/`;
# `MODE="train"` runs every missing (arm, seed) first.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": run the missing (arm, seed) runs, then rebuild
PRESET = "small"  # "smoke" (plumbing, seconds of training) or "small" (all arms x 3 seeds, ~15 min on 2 free cores)
SEEDS = None  # None: the preset's seeds (wmrl/presets.py)
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
VLA_WORKERS = 2  # worker processes in train mode, one torch thread each
VLA_ARMS = None  # None: the preset's arms (wmrl/presets.py); Table 2's rows are required, the others shown if trained

# %%
from wmrl.experiments import notebook as nb
from wmrl.vla.config import VLA_ARMS as KNOWN_ARMS

cfg = nb.check_params(globals(), notebook="06_vla", keys=["VLA_WORKERS", "VLA_ARMS"], results_subdir="vla",
                      choices={"VLA_ARMS": KNOWN_ARMS})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} results={cfg.shown('vla')}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from sklearn.isotonic import IsotonicRegression

from _vla import vla_hacking  # beside this notebook
from wmrl.arms import get_arm
from wmrl.experiments import claims, paper, plots, stats
from wmrl.experiments.collect import ensure_vla_runs
from wmrl.vla.config import TASKS, vla_config
from wmrl.vla.results import history_table, pairs_table, result_path, runs_table

plots.use_style()
TABLE2 = paper.TABLE2.set_index("arm")
TABLE3_ARMS = [a for a in paper.ABLATION_ARMS if a != "wmrl"]  # mix, ivd, od: Table 3's rows beside WMRL

# %% [markdown]
# ## 1. The arms
#
# All arms of a seed start from the same SFT policy and world model (`wmrl/vla/train.py`):
#
# - `sft`: behaviour cloning only.
# - `grpo`: GRPO, every group rewarded by sparse success $r\in\{0,1\}$.
# - `wm`: GRPO, every group rewarded by the raw progress estimate $\hat r\in[0,1]$.
# - `wmrl`: per step, the anchor scheduler (10%, at least one group) picks anchor groups rewarded by
#   success; their pairs $(\hat r, r)$ feed the isotonic map $\hat f$, so the other groups get
#   $\hat f(\hat r)\approx P(\text{success}\mid\hat r)$; the streams are fused with weights
#   $\rho/D$ and $1/D$, $D=\rho|G_E|+|G_{WM}|$.
# - `mix` / `od` / `ivd` (Table 3's rows, when trained): the anchors without either correction,
#   with Online Debiasing only, with IVD only.
#
# Every trained arm runs through `wmrl.step.WMRLStep`, the one implementation of Algorithm 1's
# reward side: a step's progress scores are calibrated with the map fitted *before* its anchor
# pairs, and $\eta^2$ is that out-of-sample residual. Each step samples `train.groups_per_step`
# (task, training state) groups of `train.group_size` rollouts; advantages are std-normalised
# group advantages; the update is GRPO's clipped surrogate.
#
# **Common random numbers** (`wmrl/vla/crn.py`): each rollout draws its action noise from its own
# stream, keyed by (seed, task, state, sample) in evaluation and (seed, step, group, member) in
# training, and each training group its (task, state) from (seed, step, group). So the arms of a
# seed are evaluated on the same draws and train on the same groups, and at step 1, where every arm
# still has the SFT policy, on identical rollouts (checked below). The configuration
# (`wmrl.vla.config.VLAConfig`, sized by the preset):

# %%
print(pd.json_normalize(vla_config("wmrl", cfg.preset).to_dict(), sep=".").T.to_string(header=False))
found = ensure_vla_runs(cfg, cfg["VLA_ARMS"], required=[a for a in cfg["VLA_ARMS"] if a in TABLE2.index],
                      workers=cfg["VLA_WORKERS"])
runs, hist, pairs = runs_table(found), history_table(found), pairs_table(found)
ARMS = list(dict.fromkeys(runs.arm))  # Table 2's rows + those trained at every seed
TRAINED = [a for a in ARMS if get_arm(a).train]
K = int(runs.k.iloc[0])
hist["success_pct"] = 100 * hist.train_success
SOURCES = [result_path(cfg.results_dir, cfg.preset, a, s) for a, s in zip(runs.arm, runs.seed)]  # for the figures
print(f"{len(runs)} runs: arms {ARMS} x seeds {cfg.seeds}; {K} rollouts per initial state in evaluation")

# %% [markdown]
# Step 1's rollouts, per seed: every arm that samples all `groups_per_step` groups (all but
# `anchor_only`) rolls out the SFT policy on the same groups with the same draws, so its success,
# progress and environment steps at step 1 must be equal across arms.

# %%
first = hist[(hist.step == 1) & (hist.arm != "anchor_only")]
spread = first.groupby("seed")[["train_success", "progress", "env_steps"]].agg(lambda v: v.max() - v.min())
assert (spread == 0).all().all(), f"step 1 differs across arms:\n{spread}"
print(f"step 1 identical across {first.arm.nunique()} arms at each of {first.seed.nunique()} seed(s)")

# %% [markdown]
# ## 2. Table 2 beside ours
#
# Success % (mean [95% interval] over seeds). In-domain = states 0-15, OOD = 16-49,
# Overall $= 0.32\,\mathrm{ID} + 0.68\,\mathrm{OOD}$ as in the paper; Best@k / All@k: share of
# initial states where at least one / all of the $k$ rollouts succeeded (the paper's k is 8).
# The paper's columns are LIBERO-Long success of MiniVLA-1B: compare orderings and gains, not levels.

# %% tags=["nbval-check-output"]
print(paper.TABLE2.to_string(index=False), "\n")
cols = {"Overall (%)": ("overall", 100, 1), "in-domain (%)": ("sr_id", 100, 1), "OOD (%)": ("sr_ood", 100, 1),
        f"Best@{K} (%)": ("best_at_k", 100, 1), f"All@{K} (%)": ("all_at_k", 100, 1)}
table = stats.arm_table(runs, ARMS, cols)
with pd.option_context("display.width", 250, "display.max_columns", 20):
    print(paper.beside(table, paper.TABLE2, ["overall", "in_domain_best_at_8"]).to_string())

# %% [markdown]
# ## 3. Per task (Overall success %, mean [95% interval] over seeds)

# %% tags=["nbval-check-output"]
with pd.option_context("display.width", 250, "display.max_columns", 20):
    print(stats.arm_table(runs, ARMS, {t: (f"overall_{t}", 100, 1) for t in TASKS}).to_string())

# %% [markdown]
# ## 4. Figure: success, beside the paper's Table 2
#
# Left: Overall success per arm (bars: mean; error bars: 95% CI over seeds; dots: seeds) with the
# paper's Table 2 value of the same row (diamonds). Middle: in-domain vs OOD success per arm.
# Right: each arm's gain over `sft`, paired by seed (95% CI; dots: seeds), beside the paper's gain.

# %%
def paper_handle(label="paper Table 2 (LIBERO-Long, MiniVLA-1B)"):
    return Line2D([], [], ls="", marker="D", ms=6, color="k", mfc="gold", label=label)


fig, axes = plt.subplots(1, 3, figsize=(17, 4.6))
summary = stats.arm_summary(runs, "overall", ARMS, 100)
plots.bar_ci(axes[0], summary, "Overall success (%)", "Overall success on 50 initial states per task")
x = np.arange(len(ARMS))
on_paper = [i for i, a in enumerate(ARMS) if a in TABLE2.index]
axes[0].plot(x[on_paper], TABLE2.overall.loc[[ARMS[i] for i in on_paper]], "D", ms=6, color="k", mfc="gold", zorder=4)
axes[0].legend(handles=axes[0].get_legend().legend_handles + [paper_handle()], loc="best")

for col, marker, dx in (("sr_id", "o", -0.15), ("sr_ood", "s", 0.15)):  # in-domain (states 0-15), OOD (16-49)
    s = stats.arm_summary(runs, col, ARMS, 100)
    for i, (arm, r) in enumerate(s.iterrows()):
        err = None if np.isnan(r.lo) else [[r["mean"] - r.lo], [r.hi - r["mean"]]]
        axes[1].errorbar(i + dx, r["mean"], yerr=err, fmt=marker, ms=6, capsize=3, color=plots.arm_color(arm))
        axes[1].plot(np.full(len(r["values"]), i + dx), r["values"], ".", ms=3, color=plots.arm_color(arm), alpha=0.6)
axes[1].set_xticks(x, ARMS, rotation=20 if len(ARMS) > 4 else 0)
axes[1].set(xlabel="arm", ylabel="success (%)", title="In-domain vs OOD initial states")
axes[1].legend(handles=[Line2D([], [], ls="", marker="o", color="k", label="in-domain (states 0-15), mean"),
                        Line2D([], [], ls="", marker="s", color="k", label="OOD (states 16-49), mean"),
                        Line2D([], [], color="k", lw=1, label=plots.CI_LABEL),
                        Line2D([], [], ls="", marker=".", color="k", label="one seed")], loc="best")

gains = TRAINED
for i, arm in enumerate(gains):
    d = stats.paired_values(runs, arm, "sft", "overall", scale=100)
    m, lo, hi = stats.mean_ci(d)
    err = None if np.isnan(lo) else [[m - lo], [hi - m]]
    axes[2].errorbar(i, m, yerr=err, fmt="o", ms=7, capsize=4, color=plots.arm_color(arm))
    axes[2].plot(np.full(len(d), i) + np.linspace(-0.1, 0.1, len(d)), d, "o", ms=4, color="k", mfc="white", zorder=3)
    if arm in TABLE2.index:
        axes[2].plot(i + 0.25, TABLE2.overall[arm] - TABLE2.overall["sft"], "D", ms=6, color="k", mfc="gold")
axes[2].axhline(0, color="k", lw=0.8)
axes[2].set_xticks(range(len(gains)), gains, rotation=20 if len(gains) > 4 else 0)
axes[2].set(xlabel="arm", ylabel="Overall success − sft (percentage points)", title="Gain over SFT, paired by seed")
axes[2].legend(handles=[Line2D([], [], ls="", marker="o", color="0.4", label="ours: mean"),
                        Line2D([], [], color="0.4", lw=1, label=plots.CI_LABEL),
                        Line2D([], [], ls="", marker="o", ms=4, color="k", mfc="white", label="one seed"),
                        paper_handle("paper Table 2: gain over SFT")], loc="best")
fig.tight_layout()
nb.save_figure(fig, "06_vla_success", cfg, "VLA analog (Table 2): Overall success per arm (95% CI over seeds, dots: "
               "seeds) with the paper's Table 2, in-domain vs OOD success, and each arm's seed-paired gain over SFT "
               "beside the paper's.", sources=SOURCES)
plt.show()

# %% [markdown]
# ## 5. Learning curves
#
# Success of each step's training rollouts (training states 0-15, `train.groups_per_step` ×
# `train.group_size` rollouts a step; the simulator reports it for every rollout, the method sees it
# only on anchor groups), as a rolling mean over 3 steps per seed (one step's few rollouts are
# noisy): mean over seeds with its 95% band, each seed a thin line. One panel per arm, with `grpo`'s
# mean as the grey reference (several bands in one panel cannot be read), and `sft`'s in-domain
# success in the evaluation (the same states, the start every arm shares) as a dotted level.
# Table 2's rows on top, Table 3's on the VLA below when trained.

# %%
SMOOTH = 3  # steps in the rolling mean of the per-step curves


def rolling(h: pd.DataFrame, cols) -> pd.DataFrame:
    """Each (arm, seed)'s per-step ``cols`` as a rolling mean over SMOOTH steps (NaN steps skipped)."""
    h = h.sort_values(["arm", "seed", "step"]).copy()
    h[cols] = h.groupby(["arm", "seed"])[cols].transform(lambda v: v.rolling(SMOOTH, min_periods=1).mean())
    return h


hist["optimism"] = hist.progress - hist.train_success  # the world model's over-scoring of the step's rollouts
smooth = rolling(hist, ["success_pct", "optimism", "progress_if_failure", "progress_auc"])
curves = smooth.assign(avg=smooth.success_pct)[["arm", "seed", "step", "avg"]]
rows = [[a for a in ("grpo", "wm", "wmrl") if a in TRAINED], [a for a in TABLE3_ARMS if a in TRAINED]]
rows = [r for r in rows if r]
ncols = max(map(len, rows))
fig, axes = plt.subplots(len(rows), ncols, figsize=(5.2 * ncols, 4 * len(rows)), squeeze=False)
sft_level = {"sft: in-domain success (evaluation, mean)": 100 * runs[runs.arm == "sft"].sr_id.mean()}
for row, arms in zip(axes, rows):
    for ax, arm in zip(row, arms):
        reference = "grpo" if arm != "grpo" and "grpo" in TRAINED else None
        plots.plot_curves(ax, curves, [arm], reference=reference, levels=sft_level, title=f"{arm}: learning curve",
                          ylabel=f"training-rollout success (%, rolling mean of {SMOOTH} steps)")
        ax.set_ylim(0, 100)
    for ax in row[len(arms):]:
        ax.axis("off")
fig.tight_layout()
nb.save_figure(fig, "06_vla_curves", cfg, "VLA training success per step (rolling mean of 3 steps; mean and 95% CI "
               "over seeds, each seed), one panel per arm with GRPO as the reference and SFT's in-domain evaluation "
               "success as the common start.", sources=SOURCES)
plt.show()

# %% [markdown]
# ## 6. The world model's fidelity, where hacking would show
#
# The progress estimator was trained on successful demos only. The `wm` arm maximises its output;
# if the policy learns to please it without succeeding (reward hacking: the bias depends on what
# the policy does, not on the true outcome, which is Assumption 6 failing), then on `wm`'s own
# rollouts progress rises while success does not, failures get scored like successes, and progress
# stops ranking successes above failures. `grpo`'s rollouts (a policy never trained on progress)
# are the reference. Per step, on that step's rollouts (rolling mean over 3 steps per seed; mean
# and 95% band over seeds): left, mean progress minus the success rate (how much the world model
# over-scores what the policy does); middle, the mean progress of the failures; right, the ROC AUC
# of progress for success (0.5: progress says nothing about the outcome). The table below gives the
# numbers, for every trained arm.

# %%
fid_arms = [a for a in ("grpo", "wm") if a in TRAINED]
fig, axes = plt.subplots(1, 3, figsize=(17, 4.4))
for arm in fid_arms:
    d, c = smooth[smooth.arm == arm], plots.arm_color(arm)
    plots.mean_band(axes[0], d, "step", "optimism", color=c, label=f"{arm} (mean)", marker="o", bounds=(-1, 1))
    plots.mean_band(axes[1], d, "step", "progress_if_failure", color=c, label=f"{arm} (mean)", marker="o",
                    bounds=(0, 1))
    plots.mean_band(axes[2], d, "step", "progress_auc", color=c, label=f"{arm} (mean)", marker="o", bounds=(0, 1))
axes[2].axhline(0.5, color="k", ls=":", lw=1, label="chance (0.5)")
axes[0].axhline(0, color="k", lw=0.8)
axes[0].set(xlabel="training step", ylabel="mean progress − success rate (fraction)",
            title="How much the world model over-scores each arm's rollouts")
axes[1].set(xlabel="training step", ylabel="mean progress estimate of failed rollouts (0-1)",
            title="Progress the world model gives failures", ylim=(0, 1))
axes[2].set(xlabel="training step", ylabel="ROC AUC of progress for success", title="Does progress rank success?",
            ylim=(0, 1))
for ax in axes:
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [Patch(color="0.5", alpha=0.15, label=plots.CI_LABEL)], loc="best")
fig.tight_layout()
nb.save_figure(fig, "06_vla_fidelity", cfg, "The progress world model on the grpo and wm arms' own training rollouts "
               "(rolling mean of 3 steps; mean and 95% CI over seeds): mean progress minus success, progress given to "
               "failures, and the ROC AUC of progress for success.", sources=SOURCES)
plt.show()

# %% tags=["nbval-check-output"]
q = max(1, int(np.ceil(hist.step.max() / 4)))
early, late = hist[hist.step <= q], hist[hist.step > hist.step.max() - q]
fid = pd.DataFrame({
    "progress, first quarter": early.groupby("arm").progress.mean(),
    "progress, last quarter": late.groupby("arm").progress.mean(),
    "success, first quarter": early.groupby("arm").train_success.mean(),
    "success, last quarter": late.groupby("arm").train_success.mean(),
    "AUC, second half": hist[hist.step > hist.step.max() / 2].groupby("arm").progress_auc.mean(),
    "AUC within groups, second half": hist[hist.step > hist.step.max() / 2].groupby("arm").progress_auc_within.mean(),
}).reindex(TRAINED)
print(f"means over seeds and steps (quarter = {q} step(s))")
print(fid.round(3).to_string())

# %% [markdown]
# ## 7. The step object, recomputed from the logs
#
# Each run logs its anchor pairs $(\hat r_j, \tilde r_j, r_j)$ (raw progress, the calibrated score
# training used, success) in the order they reached the debiaser, and per step $\hat\eta^2$,
# $\hat\eta^2_{cal}$, $\rho$ and the debiaser's pair and refit counts. Three checks a reader can rerun:
#
# 1. **Online Debiasing.** In an OD arm, the calibrated score of a step's pairs is scikit-learn's
#    `IsotonicRegression` fitted on every pair pushed up to the last refit *before* the step,
#    $\hat f = \arg\min_{f\uparrow}\sum_j (r_j - f(\hat r_j))^2$, applied to the raw score (identity
#    before the first fit, and in every arm without OD);
# 2. **the $\eta^2$ audit.** $\hat\eta^2$ after step $t$ is the mean of $(\tilde r_j - r_j)^2$ over
#    the pairs of the last `ivd_window` anchor groups; $\hat\eta^2_{cal}$ is that value when the
#    warm-up's last group (`ivd_warmup_groups`) arrived;
# 3. **IVD.** $\rho = \mathrm{clip}(1 + \hat\eta^2/\hat\eta^2_{cal}, 1, \rho_{max})$ in the IVD arms
#    after warm-up, 1 otherwise.

# %%
checks = []
for r in found:
    arm, seed, a = r["arm"], r["seed"], get_arm(r["arm"])
    if not a.mixes_streams:
        continue
    m, n = r["provenance"]["config"]["method"], r["provenance"]["config"]["train"]["group_size"]
    h = pd.DataFrame(r["history"]).set_index("step")
    p = pairs[(pairs.arm == arm) & (pairs.seed == seed)].reset_index(drop=True)
    refit_at = h.index[h.od_refits.diff().fillna(h.od_refits) > 0]  # steps whose push refitted the map
    cal = []
    for step, g in p.groupby("step", sort=True):  # 1. the map in force when the step began
        before = refit_at[refit_at < step]
        if a.od and len(before):
            used = int(h.od_pairs[before[-1]])
            iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(p.pred[:used], p.true[:used])
            cal.append(iso.predict(g.pred))
        else:
            cal.append(g.pred.to_numpy())
    p["cal"] = np.concatenate(cal)
    assert np.allclose(p.cal, p.calibrated, atol=1e-12), f"{arm} seed {seed}: calibrated scores differ"
    p["group"] = p.index // n  # pairs arrive group after group, n each
    sq = [((g.cal - g.true) ** 2).to_numpy() for _, g in p.groupby("group")]
    last_group = p.groupby("step").group.max()
    eta2 = [np.concatenate(sq[max(0, last_group[t] - m["ivd_window"] + 1): last_group[t] + 1]).mean() for t in h.index]
    assert np.allclose(eta2, h.eta2, atol=1e-12), f"{arm} seed {seed}: eta^2 differs"  # 2. the audit
    warm = m["ivd_warmup_groups"]
    if len(sq) >= warm:
        cal_value = np.concatenate(sq[max(0, warm - m["ivd_window"]): warm]).mean()
        assert np.allclose(h.eta2_cal.dropna(), cal_value, atol=1e-12), f"{arm} seed {seed}: eta^2_cal differs"
    rho = np.where(h.eta2_cal.notna() & a.ivd, np.clip(1 + h.eta2 / h.eta2_cal, 1, m["rho_max"]), 1.0)
    assert np.allclose(rho, h.rho, atol=1e-12), f"{arm} seed {seed}: rho differs"  # 3. IVD
    checks.append({"arm": arm, "seed": seed, "pairs": len(p), "refits": int(h.od_refits.iloc[-1]),
                   "eta^2 steps": int(h.eta2.notna().sum()), "rho > 1 at": int((h.rho > 1).sum())})
print(pd.DataFrame(checks).to_string(index=False) if checks else "no arm mixes the two streams here")
print("calibrated scores = scikit-learn isotonic fits on the logged pairs; eta^2, eta^2_cal, rho = recomputed: all equal")

# %% [markdown]
# Per step, the $\eta^2$ audit in every arm that mixes the streams and $\rho$ in those with IVD
# (mean and 95% band over seeds; separate axes: $\eta^2$ is a squared success residual, $\rho$ a weight).

# %%
mixing = [a for a in TRAINED if get_arm(a).mixes_streams]
rho_max = vla_config("wmrl", cfg.preset).method.rho_max
fig, axes = plt.subplots(1, 2, figsize=(13, 4))
for arm in mixing:
    d = hist[hist.arm == arm]
    plots.mean_band(axes[0], d, "step", "eta2", color=plots.arm_color(arm), label=f"{arm} (mean)", marker="o",
                    bounds=(0, 1))  # a squared residual of scores in [0, 1]
    if get_arm(arm).ivd:
        plots.mean_band(axes[1], d, "step", "rho", color=plots.arm_color(arm), label=f"{arm} (mean)", marker="o",
                        bounds=(1, rho_max))

axes[1].axhline(rho_max, color="k", ls=":", lw=1, label=f"rho_max = {rho_max:g}")
axes[0].set(xlabel="training step", ylabel="eta^2 (mean squared residual, success units²)",
            title="The eta^2 audit: calibrated progress vs success on anchors")
axes[1].set(xlabel="training step", ylabel="rho (anchor weight, unitless)", title="IVD: rho = clip(1 + eta^2/eta^2_cal)")
for ax in axes:
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [Patch(color="0.5", alpha=0.15, label=plots.CI_LABEL)], loc="best")
fig.tight_layout()
nb.save_figure(fig, "06_vla_ivd", cfg, "VLA: the eta^2 audit per step in the arms that mix both streams and rho in "
               "the IVD arms (mean and 95% CI over seeds).",
               sources=SOURCES)
plt.show()

# %% [markdown]
# ## 8. Cost
#
# Wall-clock seconds per run (training excludes the SFT stage, built once per seed and shared:
# `sft_s`), environment steps, and rollout seconds per training step. The host's load varies;
# `python -m bench.vla` measures the throughput on its own.

# %%
cost = runs.groupby("arm")[["sft_s", "train_s", "eval_s", "env_steps"]].mean()
cost["rollout_s_per_step"] = hist.groupby("arm").t_rollout.mean()
print(cost.reindex(ARMS).round(1).to_string())

# %% [markdown]
# ## 9. Claims
#
# Table 2's ordering as seed-paired comparisons of Overall success (each seed's arms share the
# SFT start, the training groups and the evaluation draws), with the smallest difference the
# seeds could detect (80% power), the verdict (the 95% interval lies on the paper's side:
# **reproduced**, on the other side: **fails**, across 0: **inconclusive**) and the verdict after
# Holm's correction over the table's claims, exactly as in notebooks 01-03.

# %% tags=["nbval-check-output"]
table = claims.evaluate_claims(runs, [c for c in claims.VLA if {c.a, c.b} <= set(ARMS)])
with pd.option_context("display.width", 250, "display.max_colwidth", 70):
    print(claims.claims_display(table).to_string())

# %% [markdown]
# ## What we see
#
# Computed from the claims table and the fidelity log above (`claims.what_we_see`,
# `_vla.vla_hacking`), so this text cannot say more than the numbers.

# %% tags=["nbval-check-output"]
SENTENCES = claims.what_we_see(table) + vla_hacking(hist)
nb.save_claims(table, cfg, "Table 2: the embodied transfer, VLA analog", SENTENCES)  # what RESULTS.md reads
print("\n".join(SENTENCES))

# %% [markdown]
# Where the runs come from (git commit, date): every number above is read from these result files.

# %%
runs[["arm", "seed", "git_commit", "date"]]
