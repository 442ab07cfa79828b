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
# # 02 · Ablations: which correction carries WMRL? (Table 3 analog)
#
# **Background.** Every row of the paper's Table 3 spends the same two signals (world-model
# groups plus ~10% executed anchor groups) and differs only in the corrections applied to the
# world-model rewards:
#
# - **OD** (Online Debiasing): every world-model score passes through an isotonic map
#   $\hat f$ fitted on anchor pairs $(\hat r_j, r_j)$ (`wmrl.calibration.OnlineDebiaser`);
# - **IVD** (Inverse-Variance Denoising): the two gradient streams are fused as
#   $g = (\rho\, g_E + g_{WM}) / (\rho |G_E| + |G_{WM}|)$, $\rho = 1 + \hat\eta^2/\hat\eta_{cal}^2$
#   clipped to $[1, \rho_{max}]$ (`wmrl.denoise`).
#
# The paper's reading (C22): IVD alone, OD alone and both each beat neither, OD more than IVD,
# both the most, in all four columns; the uncorrected mix falls below real-execution GRPO; and
# (C23, noticed by the reviews) OD alone already beats GRPO. The paper gives one run per cell;
# we give seeds and intervals, and test each comparison as a seed-paired difference. The paper's
# numbers are printed from `wmrl/experiments/paper.py` in section 1.
#
# | arm | OD | IVD |
# |---|---|---|
# | `mix` (neither) | ✗ | ✗ |
# | `ivd` | ✗ | ✓ |
# | `od` | ✓ | ✗ |
# | `wmrl` (both) | ✓ | ✓ |
#
# `grpo` is trained too, as the reference of C22/C23. Runs are shared with notebook 01 (`wmrl`, `grpo`).

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
ABLATION_ARMS = None  # None: the preset's (grpo, mix, ivd, od, wmrl)

# %%
from wmrl.arms import ARMS
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="02_ablations", keys=["ABLATION_ARMS"], results_subdir=f"train/{PRESET}",
                      choices={"ABLATION_ARMS": ARMS})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} arms={cfg['ABLATION_ARMS']}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import display

from wmrl.arms import get_arm
from wmrl.denoise import fused_group_weights
from wmrl.experiments import claims, paper, plots, stats
from wmrl.experiments.collect import ensure_arm_runs, load_table, run_settings
from wmrl.experiments.curves import learning_curves

ARMS_HERE = list(cfg["ABLATION_ARMS"])
plots.use_style()
runs = ensure_arm_runs(cfg, ARMS_HERE)
steps = load_table(runs, "steps")
curves = learning_curves(pd.concat([runs, ensure_arm_runs(cfg, ["untrained"])]))  # step 0: the untrained policy
CATS = sorted(c.removeprefix("cat_") for c in runs.columns if c.startswith("cat_"))
print(f"{len(runs)} runs; held-out categories: {CATS}")

# %% [markdown]
# ## 1. The table, beside the paper's Table 3
#
# Held-out Avg in percentile points (95% intervals over seeds), per category, and the charged
# execution: every ablation row should execute the same share of groups (only `grpo` executes all).
# The paper's columns are Table 3's (4B/9B, MLE-Dojo/DSBench), with GRPO's from Table 1.

# %% tags=["nbval-check-output"]
cols = {"held-out Avg (%)": ("avg", 100, 1), **{f"{c} (%)": (f"cat_{c}", 100, 1) for c in CATS},
        "execution (CPU-min)": ("execution_charged_min", 1, 2)}
table = stats.arm_table(runs, ARMS_HERE, cols)
beside = paper.beside(table[["held-out Avg (%)", "execution (CPU-min)"]], paper.table3_with_grpo(),
                      list(paper.ABLATION_COLUMNS), models=())
display(table, beside)

# %% [markdown]
# ## 2. IVD's weights, recomputed from the logged $\eta^2$
#
# Each step logs $\hat\eta^2$ (the calibrated world model's mean squared residual on the last
# anchor groups), $\hat\eta^2_{cal}$ (that residual, recorded once when warm-up ends) and the
# $\rho$ the step used. The paper's rule, in three lines:
#
# $$\rho = \mathrm{clip}\big(1 + \hat\eta^2/\hat\eta^2_{cal},\ 1,\ \rho_{max}\big)\ \text{(IVD arms, after warm-up; 1 otherwise)},
#   \qquad w_g = \frac{\rho}{D}\ (g\in G_E),\ \ \frac{1}{D}\ (g\in G_{WM}),\qquad D = \rho|G_E| + |G_{WM}|.$$
#
# Recomputed here from `steps.parquet` and each run's configuration, and asserted equal to what the
# trainer logged and to the trainer's own `fused_group_weights`. (Runs made before the step object
# logged $\hat\eta^2$ in IVD arms only; newer runs log it in every arm that mixes the two streams,
# where $\rho$ stays 1 unless the arm has IVD. The check holds for both.)

# %%
def rho_rule(d: pd.DataFrame, rho_max: float, ivd: bool) -> np.ndarray:
    warm = d.eta2_cal.notna().to_numpy()
    rho = np.clip(1 + d.eta2.to_numpy() / d.eta2_cal.to_numpy(), 1.0, rho_max)
    return np.where(warm & ivd, rho, 1.0)


settings = run_settings(runs, "method.rho_max")
weights = []
for (arm, seed), d in steps.groupby(["arm", "seed"]):
    rho = rho_rule(d, settings.loc[(arm, seed), "method.rho_max"], get_arm(arm).ivd)
    assert np.allclose(rho, d.rho, atol=1e-12), f"{arm} seed {seed}: rho differs from the logged one"
    for r, n_e, n_g in zip(rho, d.n_executed_groups, d.n_groups):
        denom = r * n_e + (n_g - n_e)  # D = rho |G_E| + |G_WM|
        w = np.r_[np.full(n_e, r / denom), np.full(n_g - n_e, 1 / denom)]
        assert np.allclose(w, fused_group_weights(np.arange(n_g) < n_e, r))
        weights.append({"arm": arm, "seed": seed, "anchor_weight": w[:n_e].sum()})
weights = pd.DataFrame(weights).assign(step=np.concatenate([d.step.to_numpy() for _, d in steps.groupby(["arm", "seed"])]))
print(f"rho recomputed for {steps.groupby(['arm', 'seed']).ngroups} runs, {len(steps)} steps: equal to the logged rho; "
      "fused weights equal to fused_group_weights")
print(weights.groupby("arm").anchor_weight.agg(["min", "mean", "max"]).round(3).reindex(ARMS_HERE).dropna().to_string())

# %% [markdown]
# ## 3. Figures: the ablation, and how much the anchors weigh
#
# Left: held-out Avg per arm (bars: mean; error bars: 95% CI; dots: seeds). Right: the anchor
# stream's share of the fused gradient per step, $\rho|G_E|/D$ from section 2: without IVD it is
# the anchors' share of the groups; with IVD it rises with $\rho$ once warm-up ends.

# %%
avg = stats.arm_summary(runs, "avg", ARMS_HERE, 100)
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
plots.bar_ci(axes[0], avg, "held-out Avg (percentile points)", "Ablation: held-out score")
mixing = [a for a in ARMS_HERE if get_arm(a).mixes_streams]
# Arms without IVD share one line (rho = 1: the anchors' share of the groups), so each arm gets its
# own marker and a small sideways offset, and those arms a dashed line, to keep every one visible.
markers, width = iter("sDo^v<>"), 0.1 * max(len(mixing) - 1, 1)
for k, arm in enumerate(mixing):
    ivd = get_arm(arm).ivd
    offset = width * (k / max(len(mixing) - 1, 1) - 0.5) if len(mixing) > 1 else 0.0
    plots.mean_band(axes[1], weights[weights.arm == arm].assign(step=lambda d, o=offset: d.step + o), "step",
                    "anchor_weight", color=plots.arm_color(arm), marker=next(markers), ls="-" if ivd else "--",
                    label=f"{arm} (mean)" + ("" if ivd else ", no IVD: rho = 1"))
axes[1].set(xlabel="training step", ylabel="anchor groups' share of the fused gradient",
            title="IVD: rho|G_E| / (rho|G_E| + |G_WM|)", ylim=(0, None))
handles, _ = axes[1].get_legend_handles_labels()
axes[1].legend(handles=handles + [plt.matplotlib.patches.Patch(color="0.5", alpha=0.15, label=plots.CI_LABEL)])
fig.tight_layout()
nb.save_figure(fig, "02_ablations", cfg, "Held-out Avg of grpo and the four Table 3 rows (mix = neither, ivd, od, "
               "wmrl = both), 95% CI over seeds with each seed, and the anchor stream's weight in the fused gradient.",
               sources=[f"{d}/{f}" for d in runs.dir for f in ("summary.json", "steps.parquet")])
plt.show()

# %% [markdown]
# Learning curves, one panel per Table 3 row with GRPO as the grey reference (five overlapping
# bands in one panel cannot be read). Step 0 is the untrained policy every arm of a seed starts from.

# %%
rows_t3 = [a for a in paper.ABLATION_ARMS if a in ARMS_HERE]
fig, axes = plt.subplots(1, len(rows_t3), figsize=(4.2 * len(rows_t3), 4), sharey=True, squeeze=False)
for ax, arm in zip(axes[0], rows_t3):
    plots.plot_curves(ax, curves, [arm], reference="grpo" if "grpo" in ARMS_HERE else None,
                      title=f"{arm}: {paper.ARM_TO_PAPER[arm]}")
fig.tight_layout()
nb.save_figure(fig, "02_ablations_curves", cfg, "Held-out learning curves of each Table 3 row (mean, 95% CI over seeds, "
               "each seed) against GRPO's mean.", sources=[f"{d}/eval.parquet" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 4. Claims
#
# Each comparison of C22 against "neither", the order OD > IVD, IVD's addition to OD, the mix below
# GRPO, and C23 (OD alone against GRPO). Verdicts as in notebook 01: seed-paired 95% interval,
# the detectable difference at 80% power, and Holm's correction over the claims of this table.

# %% tags=["nbval-check-output"]
table = claims.evaluate_claims(runs, [c for c in claims.ABLATION if {c.a, c.b} <= set(ARMS_HERE)])
display(claims.claims_display(table))

# %% [markdown]
# ## What we see
#
# Computed from the claims table (`claims.what_we_see`).

# %% tags=["nbval-check-output"]
nb.save_claims(table, cfg, "Table 3: which correction carries WMRL")  # what RESULTS.md reads
print("\n".join(claims.what_we_see(table)))

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`):

# %%
runs[["arm", "seed", "git_commit", "date", "run"]]
