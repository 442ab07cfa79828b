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
# # TEMPLATE · A new ablation: one switch, against its default, with seeds and a verdict
#
# Copy this notebook to `NN_my_ablation.ipynb` (the next free number), then edit the three marked
# places: the parameters, the **Background** below, and the claim. The README section
# "Add an ablation" walks through it.
#
# **Background (replace).** Example shipped here: the authors' public code applies $\rho$ only as
# a scale on the anchor rows and drops the normalising denominator of the paper's fusion
# $g = (\rho g_E + g_{WM})/(\rho|G_E| + |G_{WM}|)$, so $\rho$ also raises the step size
# (`method.fusion = "scale_only"`). Does that change the held-out score?
#
# **How it works.** A *switch* is any field of the run configuration (`wmrl/config.py`), passed
# by its dotted name in `ABL_OVERRIDES`; its runs are stored under
# `results/train/<PRESET>/<arm>~<ABL_TAG>/` and never collide with the default runs, which are
# reused from notebooks 01-04 (trained if missing). A new *arm* (a new way to score or weight
# groups) needs code: add it to the arm table in `wmrl/arms.py` (and, if it needs new behaviour,
# a switch read by `wmrl/step.py`), then set `ABL_BASE_ARM` to it and leave `ABL_OVERRIDES` empty.

# %% tags=["parameters"]
MODE = "replay"  # "replay": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
# EDIT: the arm the switch applies to, the switch (dotted config fields) and a short name for it.
ABL_BASE_ARM = "wmrl"
ABL_OVERRIDES = {"method.fusion": "scale_only"}
ABL_TAG = "scale_only"

# %%
from wmrl.experiments import notebook as nb
from wmrl.arms import ARMS

cfg = nb.check_params(globals(), notebook=f"ablation_{ABL_TAG}", keys=["ABL_BASE_ARM", "ABL_OVERRIDES", "ABL_TAG"],
                      results_subdir=f"train/{PRESET}", choices={"ABL_BASE_ARM": ARMS})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} {ABL_BASE_ARM} + {ABL_OVERRIDES} as {ABL_TAG!r}")

# %%
import matplotlib.pyplot as plt
import pandas as pd

from wmrl.experiments import report
from wmrl.experiments.collect import ensure_runs, load_runs, load_table
from wmrl.presets import run_config

nb.use_style()
try:  # a wrong switch fails here, naming the known fields
    run_config(ABL_BASE_ARM, cfg.preset, overrides=ABL_OVERRIDES)
except ValueError as e:
    raise nb.ParameterError(f"ABL_OVERRIDES={ABL_OVERRIDES!r} is not a valid config override: {e}") from None
BASE, VARIANT = ABL_BASE_ARM, f"{ABL_BASE_ARM}~{ABL_TAG}"
if cfg.train:
    ensure_runs([BASE], cfg.seeds, cfg.preset, cfg.results_dir)  # the default runs (shared with 01-04)
    ensure_runs([BASE], cfg.seeds, cfg.preset, cfg.results_dir, tag=ABL_TAG, overrides=ABL_OVERRIDES)
runs = pd.concat([load_runs(cfg.preset, cfg.results_dir, arms=[BASE], seeds=cfg.seeds),
                  load_runs(cfg.preset, cfg.results_dir, arms=[BASE], seeds=cfg.seeds, tag=ABL_TAG)],
                 ignore_index=True).pipe(report.add_totals)
report.check_runs_present(runs, [BASE, VARIANT], cfg.seeds)

# %% [markdown]
# ## 1. The table (95% intervals over seeds)

# %% tags=["nbval-check-output"]
table = report.arm_table(runs, [BASE, VARIANT], {"held-out Avg (%)": ("avg", 100, 1),
                                                 "execution (CPU-h)": ("execution_charged_h", 1, 4),
                                                 "total (CPU-h)": ("total_charged_h", 1, 4)})
print(table.to_string())

# %% [markdown]
# ## 2. Figure (EDIT: add what your switch should change, e.g. rho from `steps.parquet`)

# %%
steps = load_table(runs, "steps")
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
COLORS = {BASE: "tab:green", VARIANT: "tab:olive"}  # the variant is not in nb.ARM_COLORS
report.bar_ci(axes[0], report.arm_summary(runs, "avg", [BASE, VARIANT], 100), "held-out Avg (percentile points)",
              f"{BASE} vs {VARIANT}", colors=COLORS)
for arm, color in COLORS.items():
    m = steps[steps.arm == arm].groupby("step").train_reward.mean()
    axes[1].plot(m.index, m, "o-", ms=3, color=color, label=arm)
axes[1].set(xlabel="step", ylabel="training reward", title="Training reward (mean over seeds)")
axes[1].legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, f"ablation_{ABL_TAG}", cfg, f"{BASE} with {ABL_OVERRIDES} against its default (95% CI over seeds).",
               sources=[f"{d}/summary.json" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 3. The claim (EDIT: state what you expect and in which direction)

# %% tags=["nbval-check-output"]
CLAIMS = [report.Claim("A1", f"{ABL_TAG} beats the default", "(your hypothesis)",
                       VARIANT, BASE, expect=">")]
print(report.claims_table(runs, CLAIMS).to_string())
