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
# # 03 · Anchor-only GRPO: does the world model add information? (the arm the paper lacks)
#
# **Background.** All rows of the paper's Table 3 consume both signals. The reviews ask for the
# missing control: train on the executed **anchor groups alone**, with no world model at all, at
# the same execution budget as WMRL. Two readings of WMRL's gain are possible:
#
# 1. the world-model groups carry **information** about which scripts are good, beyond what the
#    ~10% executed groups carry: then `wmrl` > `anchor_only`;
# 2. the world model is only a **calibrated variance reduction** around the anchors' signal (the
#    isotonic map is fitted on real executions): then `wmrl` ≈ `anchor_only`.
#
# The reviews note that C23 (OD alone beats GRPO) makes reading 2 plausible.
#
# **The arm.** `anchor_only` samples, each step, exactly as many groups as WMRL executes
# (`AnchorScheduler.n_anchors`: max(1, round(0.1 G))) and executes all of them; no world model,
# no calibration. Same seeds, same tasks drawn, same execution share. `grpo` is the all-execution
# reference. Runs are shared with notebooks 01-02.

# %% tags=["parameters"]
MODE = "replay"  # "replay": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
ANCHOR_ARMS = None  # None: the preset's (grpo, anchor_only, wmrl)

# %%
from wmrl.experiments import notebook as nb
from wmrl.arms import ARMS

cfg = nb.check_params(globals(), notebook="03_anchor_only", keys=["ANCHOR_ARMS"], results_subdir=f"train/{PRESET}",
                      choices={"ANCHOR_ARMS": ARMS})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} arms={cfg['ANCHOR_ARMS']}")

# %%
import matplotlib.pyplot as plt
import pandas as pd

from wmrl.experiments import report
from wmrl.experiments.collect import ensure_runs, load_runs, load_table

ARMS_HERE = list(cfg["ANCHOR_ARMS"])
if not {"anchor_only", "wmrl"} <= set(ARMS_HERE):
    raise nb.ParameterError(f"ANCHOR_ARMS must include 'anchor_only' and 'wmrl' (got {ARMS_HERE}); "
                            "papermill: -y 'ANCHOR_ARMS: [grpo, anchor_only, wmrl]'")
nb.use_style()

if cfg.train:
    ensure_runs(ARMS_HERE, cfg.seeds, cfg.preset, cfg.results_dir)
runs = report.add_totals(load_runs(cfg.preset, cfg.results_dir, arms=ARMS_HERE, seeds=cfg.seeds))
report.check_runs_present(runs, ARMS_HERE, cfg.seeds)
steps = load_table(runs, "steps")
CATS = sorted(c.removeprefix("cat_") for c in runs.columns if c.startswith("cat_"))

# %% [markdown]
# ## 1. Is the execution budget really the same?
#
# The comparison is only fair if `anchor_only` executes what `wmrl` executes. Executed groups per
# step come from `steps.parquet`; charged execution and total compute from the ledger.

# %% tags=["nbval-check-output"]
budget = (steps.groupby("arm")[["n_executed_groups", "n_groups"]].mean().reindex(ARMS_HERE)
          .rename(columns={"n_executed_groups": "executed groups/step", "n_groups": "groups trained on/step"}))
cols = {"held-out Avg (%)": ("avg", 100, 1), **{f"{c} (%)": (f"cat_{c}", 100, 1) for c in CATS},
        "execution (CPU-h)": ("execution_charged_h", 1, 4), "total (CPU-h)": ("total_charged_h", 1, 4)}
table = report.arm_table(runs, ARMS_HERE, cols).join(budget.round(2))
with pd.option_context("display.width", 250, "display.max_columns", 20):
    print(table.to_string())

# %% [markdown]
# ## 2. Figure: score, and score per unit of execution

# %%
avg = report.arm_summary(runs, "avg", ARMS_HERE, 100)
curves = report.eval_curves(load_table(runs, "eval"))
fig, axes = plt.subplots(1, 2, figsize=(12, 4))
report.bar_ci(axes[0], avg, "held-out Avg (percentile points)", "Same execution budget: with and without a WM")
report.plot_curves(axes[1], curves, ARMS_HERE, alpha=0.12)
fig.tight_layout()
nb.save_figure(fig, "03_anchor_only", cfg, "Held-out Avg of anchor-only GRPO (the anchor groups alone, no world "
               "model) against WMRL at the same execution budget and full GRPO (95% CI over seeds).",
               sources=[f"{d}/summary.json" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 3. Claims and the question
#
# "WM adds information" is reproduced when `wmrl − anchor_only` is above 0 with 95% confidence;
# if the interval straddles 0, the small analog cannot tell information from variance reduction.
# C23's reading is tested here too: is the gain over GRPO there without any world model?

# %% tags=["nbval-check-output"]
CLAIMS = [
    report.Claim("Q1", "the world model adds information beyond the anchors (same execution)", "not tested in the paper",
                 "wmrl", "anchor_only"),
    report.Claim("Q2", "anchor-only GRPO (~10% of executions) is below full GRPO", "not tested in the paper",
                 "anchor_only", "grpo", expect="<"),
    report.Claim("Q3", "WMRL beats full GRPO (C1-C2, as in notebook 01)", "16.4 vs 15.2 (4B MLE)", "wmrl", "grpo"),
    report.Claim("Q4", "anchor-only costs a fraction of GRPO's compute", "not tested in the paper", "grpo",
                 "anchor_only", col="total_charged_s", op="ratio", digits=2),
]
claims = report.claims_table(runs, [c for c in CLAIMS if {c.a, c.b} <= set(ARMS_HERE)])
with pd.option_context("display.width", 250, "display.max_colwidth", 80):
    print(claims.to_string())

# %% [markdown]
# Where the runs come from (git commit, date):

# %%
runs[["arm", "seed", "git_commit", "date", "dir"]]
