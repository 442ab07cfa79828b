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
# **The arm, and what it controls for.** `anchor_only` samples, each step, exactly the groups WMRL
# executes (`AnchorScheduler.n_anchors`: max(1, round(0.1 G)), one group of eight here) and trains
# on them alone: no world model, no calibration. It therefore matches WMRL's **execution budget**
# and its **real-reward signal**, seed for seed. It does *not* match what WMRL sees besides: WMRL
# draws a task for every one of its G groups each step and trains on all of them (the world-model
# groups included), `anchor_only` draws and trains on its anchor groups only, so it sees G times
# fewer tasks and takes updates from G times fewer trajectories. A gain of `wmrl` over
# `anchor_only` is information *or* sample size from the world-model groups; section 1 prints the
# measured counts. `grpo` is the all-execution reference. Runs are shared with notebooks 01-02.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
ANCHOR_ARMS = None  # None: the preset's (grpo, anchor_only, wmrl)

# %%
from wmrl.arms import ARMS
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="03_anchor_only", keys=["ANCHOR_ARMS"], results_subdir=f"train/{PRESET}",
                      choices={"ANCHOR_ARMS": ARMS})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} arms={cfg['ANCHOR_ARMS']}")

# %%
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import display

from wmrl.anchor import AnchorScheduler
from wmrl.arms import get_arm
from wmrl.experiments import claims, plots, stats
from wmrl.experiments.collect import ensure_arm_runs, load_table, run_settings
from wmrl.experiments.curves import learning_curves

ARMS_HERE = list(cfg["ANCHOR_ARMS"])
if not {"anchor_only", "wmrl"} <= set(ARMS_HERE):
    raise nb.ParameterError(f"ANCHOR_ARMS must include 'anchor_only' and 'wmrl' (got {ARMS_HERE}); "
                            "papermill: -y 'ANCHOR_ARMS: [grpo, anchor_only, wmrl]'")
plots.use_style()
runs = ensure_arm_runs(cfg, ARMS_HERE)
steps = load_table(runs, "steps")
curves = learning_curves(pd.concat([runs, ensure_arm_runs(cfg, ["untrained"])]))  # step 0: the untrained policy
CATS = sorted(c.removeprefix("cat_") for c in runs.columns if c.startswith("cat_"))

# %% [markdown]
# ## 1. What is matched, and what is not
#
# Executed groups per step (the execution budget), groups (= tasks drawn) and trajectories
# trained on per step, from `steps.parquet`; charged execution and total compute from the ledger.

# %% tags=["nbval-check-output"]
settings = run_settings(runs, "train.group_size")
steps = steps.join(settings, on=["arm", "seed"])
budget = steps.assign(traj=steps.n_groups * steps["train.group_size"]).groupby("arm")[
    ["n_executed_groups", "n_groups", "traj"]].mean().reindex(ARMS_HERE).rename(columns={
        "n_executed_groups": "executed groups/step", "n_groups": "tasks drawn/step", "traj": "trajectories trained/step"})
cols = {"held-out Avg (%)": ("avg", 100, 1), **{f"{c} (%)": (f"cat_{c}", 100, 1) for c in CATS},
        "execution (CPU-min)": ("execution_charged_min", 1, 2), "total (CPU-min)": ("total_charged_min", 1, 2)}
table = stats.arm_table(runs, ARMS_HERE, cols).join(budget.round(2))
display(table)
b = budget.loc[["anchor_only", "wmrl"]]
print(f"\nanchor_only executes {b.iloc[0, 0]:g} groups a step against wmrl's {b.iloc[1, 0]:g} (matched), but draws "
      f"{b.iloc[0, 1]:g} tasks a step against {b.iloc[1, 1]:g} and trains on {b.iloc[0, 2]:.0f} trajectories "
      f"against {b.iloc[1, 2]:.0f} (not matched).")

# %% [markdown]
# ## 2. The anchor stream, recomputed from the logged routing
#
# The paper's anchor rule (Sec. 3.3, App. D): each step executes
# $|G_E| = \max(a_{min}, \mathrm{round}(a\,G))$ of its $G$ groups. `anchor_only` samples exactly those
# $|G_E|$ groups and executes them all, `grpo` executes all $G$. Recomputed from each run's
# configuration and asserted equal to what every step logged (`n_executed_groups`, `n_groups`).

# %%
cfgs = run_settings(runs, "method.anchor_fraction", "method.anchor_min", "train.groups_per_step")
for (arm, seed), d in steps.groupby(["arm", "seed"]):
    frac, amin, G = cfgs.loc[(arm, seed)]
    n_e = max(int(amin), round(frac * G))  # |G_E| = max(a_min, round(a G))
    assert n_e == AnchorScheduler(frac, int(amin)).n_anchors(int(G))  # the trainer's scheduler agrees
    a = get_arm(arm)
    if a.anchors_only:  # (executed, sampled) groups per step
        want = (n_e, n_e)
    elif a.executes_every_group:
        want = (G, G)
    else:
        want = (n_e if a.anchors else 0, G)
    assert (d.n_executed_groups == want[0]).all() and (d.n_groups == want[1]).all(), (arm, seed)
print(f"routing recomputed for {steps.groupby(['arm', 'seed']).ngroups} runs: every step executed and sampled the "
      "groups the anchor rule gives")

# %% [markdown]
# ## 3. Figure: score, and score per unit of execution
#
# Left: held-out Avg per arm (bars: mean; error bars: 95% CI; dots: seeds). Right: the learning
# curves against the charged *execution* spent so far, the budget this notebook holds fixed
# between `anchor_only` and `wmrl` (step 0: the untrained policy, at zero).

# %%
led = load_table(runs, "ledger")
exe = led[led.component == "execution"].groupby(["arm", "seed", "step"]).charged_s.sum().groupby(
    ["arm", "seed"]).cumsum().div(60).rename("execution_min").reset_index().assign(step=lambda d: d.step + 1)
curves = curves.merge(exe, on=["arm", "seed", "step"], how="left")
curves.loc[curves.step == 0, "execution_min"] = 0.0
avg = stats.arm_summary(runs, "avg", ARMS_HERE, 100)
fig, axes = plt.subplots(1, 2, figsize=(13, 4.2))
plots.bar_ci(axes[0], avg, "held-out Avg (percentile points)", "Same execution budget: with and without a WM")
plots.plot_curves(axes[1], curves, ARMS_HERE, x="execution_min", xlabel="charged execution so far (CPU-minutes)",
                  title="Score per unit of execution")
fig.tight_layout()
nb.save_figure(fig, "03_anchor_only", cfg, "Held-out Avg of anchor-only GRPO (the anchor groups alone, no world "
               "model) against WMRL at the same execution budget and full GRPO (95% CI over seeds, dots: seeds), and "
               "learning curves against charged execution.",
               sources=[f"{d}/{f}" for d in runs.dir for f in ("summary.json", "eval.parquet", "ledger.parquet")])
plt.show()

# %% [markdown]
# ## 4. Claims and the question
#
# "WM adds information" is reproduced when `wmrl − anchor_only` is above 0 with 95% confidence
# (read with section 1's caveat: also more tasks and trajectories); if the interval straddles 0,
# the small analog cannot tell information from variance reduction. Whether the anchors alone fall
# below full GRPO completes the picture (C1-C2, WMRL against full GRPO, is notebook 01's). The compute ratio `grpo / anchor_only` is
# not a claim: it follows from the anchor share.

# %% tags=["nbval-check-output"]
table = claims.evaluate_claims(runs, [c for c in claims.ANCHOR_ONLY if {c.a, c.b} <= set(ARMS_HERE)])
display(claims.claims_display(table))
if "grpo" in ARMS_HERE:
    print("\ncompute ratio grpo / anchor_only (total, charged):",
          stats.fmt_ci(*stats.paired_diff(runs, "grpo", "anchor_only", "total_charged_s", op="ratio")[:3], 2, "x"))

# %% [markdown]
# ## What we see
#
# Computed from the claims table (`claims.what_we_see`).

# %% tags=["nbval-check-output"]
nb.save_claims(table, cfg, "the arm the paper lacks: the anchors alone")  # what RESULTS.md reads
print("\n".join(claims.what_we_see(table)))

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`):

# %%
runs[["arm", "seed", "git_commit", "date", "run"]]
