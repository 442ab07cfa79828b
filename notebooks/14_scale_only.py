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
# # 14 · scale_only: `wmrl` with method.fusion='scale_only', against its default runs
#
# Written by `python -m wmrl.experiments new-ablation scale_only --base-arm wmrl --set method.fusion="scale_only"` from `notebooks/TEMPLATE_ablation.py`.
#
# **Background.** The paper fuses the two gradients as
# $g = (\rho\, g_E + g_{WM})/(\rho|G_E| + |G_{WM}|)$ (Sec. 3.5): the anchor rows weigh $\rho$
# times a world-model row and the denominator keeps the step's scale whatever $\rho$ is. The
# authors' released code applies $\rho$ only as a scale on the anchor rows and drops the
# denominator (`method.fusion = "scale_only"`, `wmrl/denoise.py`), so a large $\rho$ also
# lengthens the step. This notebook runs that variant of `wmrl` against the default runs at the
# same seeds. **Expected, declared before its runs:** the paper's normalised fusion trains at
# least as well; claim A1 states that the released code's variant falls below it (3 seeds: a
# difference of a few points will be inconclusive).

# %% [markdown]
# **How it works.** A *switch* is any field of the run configuration (`wmrl/config.py`), by its
# dotted name, in `ABL_OVERRIDES`; a *sweep* (`ABL_SWEEP`, one field and its values) makes one
# variant per value, on top of `ABL_OVERRIDES`. Each variant's runs are stored under its own tag,
# `results/train/<PRESET>/<arm>~<ABL_TAG>/` (a sweep: `<arm>~<ABL_TAG>-<value>/`), apart from the
# default runs of the arm, which are shared with notebooks 01-04 (trained here if missing). Every
# variant is compared with the default runs at the same seeds: the table gives each arm's mean with
# its 95% interval, the seed-paired difference removes what the two runs of one seed share. A tag
# that already holds runs of other overrides is refused, never retrained over.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
# The ablation (new-ablation fills these in): the notebook's name (its figure and provenance are
# named after it), the base arm, the switch (dotted config fields, on every variant), an optional
# sweep ({field: [values]}, one variant per value) and the tag its runs are stored under.
ABL_NAME = "14_scale_only"
ABL_BASE_ARM = "wmrl"
ABL_OVERRIDES = {"method.fusion": "scale_only"}
ABL_SWEEP = {}
ABL_TAG = "scale_only"

# %%
from wmrl.arms import ARMS
from wmrl.config import ConfigError
from wmrl.experiments import ablation
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook=ABL_NAME, keys=["ABL_BASE_ARM", "ABL_OVERRIDES", "ABL_SWEEP", "ABL_TAG"],
                      results_subdir=f"train/{PRESET}", choices={"ABL_BASE_ARM": ARMS})
try:  # a wrong field or value fails here, naming what to pass
    VARIANTS = ablation.plan(ABL_TAG, ABL_BASE_ARM, ABL_OVERRIDES, ABL_SWEEP, presets=[cfg.preset], campaign="beyond")
except ConfigError as e:
    raise nb.ParameterError(f"ABL_OVERRIDES/ABL_SWEEP: {e}") from None
BASE = ABL_BASE_ARM
LABELS = [v.label(BASE) for v in VARIANTS]
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} base={BASE} variants={LABELS}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from wmrl.experiments import claims, plots, stats
from wmrl.experiments.collect import ensure_arm_runs

plots.use_style()
ARMS_HERE = [BASE, *LABELS]
runs = pd.concat([ensure_arm_runs(cfg, [BASE])]  # the default runs (shared with 01-04; trained here if missing)
                 + [ensure_arm_runs(cfg, [BASE], tag=v.tag, overrides=v.overrides) for v in VARIANTS], ignore_index=True)
print(f"{len(runs)} runs: {ARMS_HERE} x seeds {cfg.seeds}")
for label in LABELS:  # a variant can differ in configuration and still run what its base runs
    if ablation.realised_as_base(runs, BASE, label):
        print(f"WARNING: {label} realised exactly what {BASE} did at every seed (the same groups, updates and "
              f"held-out rows) at preset {cfg.preset}: its difference is 0 by construction, not a finding")

# %% [markdown]
# ## 1. The table (means with 95% intervals over seeds)

# %% tags=["nbval-check-output"]
table = stats.arm_table(runs, ARMS_HERE, {"held-out Avg (%)": ("avg", 100, 1),
                                          "execution (CPU-h)": ("execution_charged_h", 1, 4),
                                          "total (CPU-h)": ("total_charged_h", 1, 4)})
with pd.option_context("display.width", 200, "display.max_columns", 20):
    print(table.to_string())

# %% [markdown]
# ## 2. Each variant against the default runs, paired by seed
#
# Per seed, the variant's held-out Avg minus the base arm's (and the ratio of their charged
# execution); the mean over seeds with its 95% Student-t interval. An interval that excludes 0
# (a ratio: 1) is a difference this many seeds can see.

# %% tags=["nbval-check-output"]
paired = []
for v, label in zip(VARIANTS, LABELS):
    d = stats.paired_diff(runs, label, BASE, "avg", 100)
    r = stats.paired_diff(runs, label, BASE, "execution_charged_s", op="ratio")
    paired.append({"variant": label, "Δ held-out Avg (points)": stats.fmt_ci(*d[:3]),
                   "execution ratio": stats.fmt_ci(*r[:3], digits=2), "seeds": d[3]})
paired = pd.DataFrame(paired).set_index("variant")
with pd.option_context("display.width", 200, "display.max_columns", 20):
    print(paired.to_string())

# %% [markdown]
# ## 3. Figure
#
# Left: held-out Avg per arm (bars: means; error bars: 95% intervals over seeds; dots: seeds).
# Right: each variant minus the base arm, paired by seed (95% interval; dots: seeds), against the
# swept value for a sweep.

# %%
colors = {BASE: plots.arm_color(BASE),
          **{label: plt.cm.viridis(x) for label, x in zip(LABELS, np.linspace(0.15, 0.85, len(LABELS)))}}
fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
plots.bar_ci(axes[0], stats.arm_summary(runs, "avg", ARMS_HERE, 100), "held-out Avg (percentile points)",
             "Held-out score (95% CI over seeds)", colors=colors)
swept = next(iter(ABL_SWEEP), None)
for i, label in enumerate(LABELS):
    d = stats.paired_values(runs, label, BASE, "avg", scale=100)
    m, lo, hi = stats.mean_ci(d)
    err = None if np.isnan(lo) else [[m - lo], [hi - m]]
    axes[1].errorbar([i], [m], yerr=err, fmt="o", ms=7, capsize=4, color=colors[label], label=f"{label} (n={len(d)})")
    axes[1].plot(np.full(len(d), i) + np.linspace(-0.08, 0.08, len(d)), d, "o", ms=4, color="k", mfc="white", zorder=3)
axes[1].axhline(0, color="k", lw=0.8)
axes[1].set_xticks(range(len(VARIANTS)), [str(v.value) if swept else v.tag for v in VARIANTS])
axes[1].set(xlabel=swept or "variant", ylabel=f"Δ held-out Avg vs {BASE} (percentile points)",
            title="Variant − base, paired by seed")
handles, _ = axes[1].get_legend_handles_labels()
axes[1].legend(handles=handles + [Line2D([], [], color="k", lw=1, label=plots.CI_LABEL),
                                  Line2D([], [], ls="", marker="o", ms=4, color="k", mfc="white", label="one seed")])
fig.tight_layout()
nb.save_figure(fig, ABL_NAME, cfg, f"{ABL_NAME}: {BASE} with {ABL_OVERRIDES}"
               + (f" over {swept}={ABL_SWEEP[swept]}" if swept else "")
               + " against its default runs (95% CI over seeds; seed-paired differences).",
               sources=[f"{d}/summary.json" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 4. Claims
#
# As in notebooks 01-03: each claim is a seed-paired comparison with the smallest difference the
# seeds could detect (80% power), the verdict (**reproduced** when the 95% interval of
# variant − base lies on the expected side of 0, **fails** on the other side, **inconclusive**
# otherwise) and the verdict after Holm's correction over the table's claims.

# %% tags=["nbval-check-output"]
CLAIMS = [claims.Claim("A1", "the released code's fusion (scale_only) falls below the paper's normalised one",
                       "the paper does not report it", LABELS[0], BASE, expect="<")]
verdicts = claims.evaluate_claims(runs, CLAIMS)
if cfg.train:  # declare them: RESULTS.md lists this notebook's claims under "Beyond the paper"
    nb.save_claims(verdicts, cfg, f"{BASE} with {ABL_OVERRIDES}" + (f", over {ABL_SWEEP}" if ABL_SWEEP else ""))
with pd.option_context("display.width", 200, "display.max_colwidth", 80):
    print(claims.claims_display(verdicts).to_string())

# %% [markdown]
# ## What we see
#
# Computed from the claims table above (`claims.what_we_see`), so this text cannot say more than
# the numbers.

# %% tags=["nbval-check-output"]
print("\n".join(claims.what_we_see(verdicts)))

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`): every number
# above is read from these folders.

# %%
runs[["arm", "seed", "git_commit", "date", "run"]]
