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
# # 04 · Compute: where the seconds go, a cost model, and the paper's GPU-hour arithmetic
#
# **Background.** WMRL's case is an accounting one: execution dominates the cost of RL for
# research agents, a world model is cheap, so replacing ~90% of executions should cut compute
# by close to 10×. The paper reports totals only (GRPO, WMRL and pure-WM GPU-hours at 4B and 9B,
# printed in section 3 from `wmrl/experiments/paper.py`), and the reviews point out two gaps:
# there is **no breakdown** (generation / world model / execution / update), and the gap between
# WMRL and pure WM is far smaller than a 10-12.5% anchor share of GRPO's execution.
#
# **What we do.**
# 1. the measured breakdown per arm from `ledger.parquet` (charged and actual seconds), and the
#    charged totals recomputed from it;
# 2. a cost model `seconds/step = fixed + per_item × items` per component, fitted to the ledger,
#    checked against the measured ratio, then evaluated at the paper's shape (its groups,
#    trajectories, execution budget and anchor share) and over the anchor share;
# 3. the paper's own arithmetic, what it implies for its 3-4× claim, and the same check on our runs.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
COMPUTE_ARMS = None  # None: the preset's (grpo, wm, wmrl, anchor_only)

# %%
from wmrl.arms import ARMS
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="04_compute", keys=["COMPUTE_ARMS"], results_subdir=f"train/{PRESET}",
                      choices={"COMPUTE_ARMS": [a for a in ARMS if a != "untrained"]})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} arms={cfg['COMPUTE_ARMS']}")

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from _compute import compute_findings  # beside this notebook
from wmrl.experiments import costs, paper, plots, stats
from wmrl.experiments.collect import ensure_arm_runs, load_table, run_settings
from wmrl.ledger import COMPONENTS

ARMS_HERE = list(cfg["COMPUTE_ARMS"])
if not {"grpo", "wmrl"} <= set(ARMS_HERE):
    raise nb.ParameterError(f"COMPUTE_ARMS must include 'grpo' and 'wmrl' (got {ARMS_HERE}); "
                            "papermill: -y 'COMPUTE_ARMS: [grpo, wm, wmrl, anchor_only]'")
plots.use_style()
runs = ensure_arm_runs(cfg, ARMS_HERE)
ledger, steps = load_table(runs, "ledger"), load_table(runs, "steps")
shape = run_settings(runs, "train.groups_per_step", "train.group_size", "method.anchor_fraction",
                     "sandbox.timeout_s").loc["wmrl"].iloc[0]  # this preset's training shape

# %% [markdown]
# ## 1. The measured breakdown
#
# Seconds per run and component, mean over seeds. *Charged* is CPU seconds: of the solution's
# process tree for an execution (one served from the execution memo is billed the CPU seconds of
# the run it reuses: what the step would cost without the memo), of the trainer's process for the
# other components; *actual* is wall-clock time on this machine, which depends on its load. The
# paper's GPU-hours correspond to *charged*.

# %% tags=["nbval-check-output"]
charged = costs.compute_table(runs, ARMS_HERE, "charged")
share = charged[list(COMPONENTS)].div(charged.total, axis=0).mul(100).round(1).add_suffix(" %")
print("charged seconds per run (mean over seeds)\n", charged.round(1).to_string(), "\n")
print("share of the total\n", share.to_string())

# %%
actual = costs.compute_table(runs, ARMS_HERE, "actual")
print("actual seconds per run (memo hits cost ~0 here)\n", actual.round(1).to_string())

# %% [markdown]
# **The charged compute, recomputed from the ledger.** A run's charged seconds per component are
# the sum over its steps of what the ledger charged that step,
# $C_c = \sum_t \mathrm{charged}_{c,t}$. Outside execution (whose memo hits are billed their original
# run's CPU seconds), a block's CPU seconds cannot exceed its wall time times the cores it could use,
# $\mathrm{charged}_c \le k\,\mathrm{actual}_c$. Recomputed from `ledger.parquet` and asserted
# equal to `summary.json`, which every table and ratio here reads.

# %%
per_run = ledger.groupby(["arm", "seed", "component"])[["charged_s", "actual_s"]].sum()
n_checked = 0
for _, r in runs.iterrows():
    summary = json.loads((Path(r.dir) / "summary.json").read_text())
    logged, cores = summary["compute"], summary["provenance"]["machine"]["cpu_count"]
    for comp, v in logged.items():
        mine = per_run.loc[(r.arm, r.seed, comp)] if (r.arm, r.seed, comp) in per_run.index else pd.Series(
            {"charged_s": 0.0, "actual_s": 0.0})
        assert np.isclose(mine.charged_s, v["charged_s"], atol=1e-9) and np.isclose(mine.actual_s, v["actual_s"], atol=1e-9)
        if comp != "execution":
            assert mine.charged_s <= cores * mine.actual_s + 1e-6, f"{r.arm} {comp}: more CPU than {cores} cores give"
        n_checked += 1
print(f"{n_checked} (run, component) totals recomputed from ledger.parquet: equal to summary.json")

# %% [markdown]
# Ratio of each arm's charged compute to GRPO's (seed-paired geometric mean, 95% interval). This is
# accounting, not a result about learning (the anchor share fixes it); notebook 01's C3 asks what
# each arm needs to reach GRPO's *score*.

# %% tags=["nbval-check-output"]
speed = []
for arm in [a for a in ARMS_HERE if a != "grpo"]:
    row = {"arm": arm}
    for label, col in (("execution", "execution_charged_s"), ("total", "total_charged_s")):
        if not runs.loc[runs.arm == arm, col].gt(0).all():
            row[f"grpo / arm, {label}"] = "- (none spent)"
            continue
        m, lo, hi, _ = stats.paired_diff(runs, "grpo", arm, col, op="ratio")
        row[f"grpo / arm, {label}"] = stats.fmt_ci(m, lo, hi, 2, "x")
    speed.append(row)
print(pd.DataFrame(speed).to_string(index=False))

# %% [markdown]
# Left: the charged compute per run, stacked by component (linear: what dominates); only
# components visible at this scale are in its legend. Right: every component on a log axis, so the
# small ones (generation, update, the world model) can be read too.

# %%
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.2))
bottom = np.zeros(len(charged))
visible = [c for c in COMPONENTS if charged[c].max() >= 0.01 * charged.total.max()]
for c in COMPONENTS:
    ax1.bar(charged.index, charged[c] / 60, bottom=bottom, color=plots.COMPONENT_COLORS[c],
            label=c if c in visible else None)
    bottom += charged[c].to_numpy() / 60
hidden = [c for c in COMPONENTS if c not in visible]
ax1.set(xlabel="arm", ylabel="charged CPU-minutes per run (mean over seeds)",
        title="Compute breakdown per arm" + (f" ({', '.join(hidden)}: < 1% of the largest bar)" if hidden else ""))
ax1.legend(loc="best")
x = np.arange(len(charged))
width = 0.8 / len(COMPONENTS)
for i, c in enumerate(COMPONENTS):
    ax2.bar(x + (i - 1.5) * width, charged[c].replace(0, np.nan), width, color=plots.COMPONENT_COLORS[c], label=c)
ax2.set_xticks(x, charged.index)
ax2.set(yscale="log", xlabel="arm", ylabel="charged CPU-seconds per run (log scale)",
        title="Every component (log scale; absent: not spent)")
ax2.legend(loc="best")
fig.tight_layout()
nb.save_figure(fig, "04_compute", cfg, "Charged compute per run split into generation / world model / execution / "
               "update, per arm (mean over seeds), stacked on a linear axis and side by side on a log axis.",
               sources=[f"{d}/ledger.parquet" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 2. A cost model fitted to the measured components
#
# For each component $c$, seconds per step $= a_c + b_c\, n_c$, with $n_c$ the items it handled
# that step (scripts generated, predicted, executed; trajectories updated), fitted by least squares
# over every step of every run (`costs.fit_cost_model`). The ledger counts one item per update,
# so we replace it with the number of trajectories trained on (`n_groups × group_size`).

# %%
items = steps[["arm", "seed", "step", "n_groups"]].assign(update_items=lambda d: d.n_groups * shape["train.group_size"])
led = ledger.merge(items[["arm", "seed", "step", "update_items"]], on=["arm", "seed", "step"], how="left")
led.loc[led.component == "update", "count"] = led.loc[led.component == "update", "update_items"]
model = costs.fit_cost_model(led)
TURNS = float(steps.mean_turns.mean())
print(model.to_string(float_format=lambda v: f"{v:.4g}"))
print(f"mean turns per trajectory, measured: {TURNS:.2f}")

# %% [markdown]
# **Check**: the model at this preset's own shape should give back the measured ratio (the
# items are the trainer's plan, `costs.stream_items`; the measured ratio is from section 1). Then
# the same model at the paper's shape (its groups and trajectories per step and anchor share, the
# *measured* mean turns, since the paper reports only the maximum of 4), with and without
# execution scaled to the paper's execution budget.

# %% tags=["nbval-check-output"]
def speedups(table):
    return {f"grpo / {a}": table.loc["grpo", "total"] / table.loc[a, "total"] for a in table.index if a != "grpo"}


P = paper.PAPER_SCALE
budget_scale = P["timeout_s"] / shape["sandbox.timeout_s"]
ours = costs.project_costs(model, ARMS_HERE, int(shape["train.groups_per_step"]), int(shape["train.group_size"]), TURNS,
                           shape["method.anchor_fraction"])
measured = {f"grpo / {a}": charged.loc["grpo", "total"] / charged.loc[a, "total"] for a in ARMS_HERE if a != "grpo"}
at_paper = costs.project_costs(model, ARMS_HERE, P["groups_per_step"], P["group_size"], TURNS, P["anchor_fraction"])
at_paper_budget = costs.project_costs(model, ARMS_HERE, P["groups_per_step"], P["group_size"], TURNS,
                                      P["anchor_fraction"], scale={"execution": budget_scale})
proj = pd.DataFrame({"measured (this preset)": measured, "model, this preset": speedups(ours),
                     "model, paper shape": speedups(at_paper),
                     f"model, paper shape, execution x{budget_scale:g}": speedups(at_paper_budget)}).round(2)
print(proj.to_string())
print(f"\npaper: grpo / wmrl = {paper.speedup('4B'):.2f} (4B), {paper.speedup('9B'):.2f} (9B); "
      f"grpo / wm = {paper.speedup('4B', 'wm'):.2f}, {paper.speedup('9B', 'wm'):.2f}")

# %% [markdown]
# **The anchor share, and the paper's reported speedups.** The speedup is bounded by $1/a$ for anchor
# share $a$ when execution dominates; the paper never sweeps $a$. Our fitted model projects the
# speedup over $a$ (steps: $|G_E| = \max(1, \mathrm{round}(a\,G))$ changes in whole groups). The
# paper's own totals allow another curve: if WMRL is pure WM plus a share $a$ of GRPO's execution,
# $\mathrm{GRPO}/(\mathrm{WM} + a(\mathrm{GRPO}-\mathrm{WM}))$ (Amdahl's law, `costs.amdahl_speedup`).
# The paper's two points sit *above* that curve at its stated share: its reported ratios need a far
# smaller anchor share (computed in section 3), or a non-execution cost that differs between WMRL
# and pure WM.

# %%
shares = np.linspace(0.02, 0.5, 97)
fig, ax = plt.subplots(figsize=(8, 4.5))
for label, sc in (("our unit costs", {}), (f"execution x{budget_scale:g} (paper's budget)", {"execution": budget_scale})):
    s = [speedups(costs.project_costs(model, ["grpo", "wmrl"], P["groups_per_step"], P["group_size"], TURNS, a,
                                      scale=sc))["grpo / wmrl"] for a in shares]
    ax.plot(shares, s, label=f"cost model, {label}")
ax.plot(shares, 1 / shares, "k:", lw=1, label="1 / a (execution only)")
for model_size, ls in (("4B", "--"), ("9B", "-.")):
    h = paper.gpu_hours(model_size)
    ax.plot(shares, costs.amdahl_speedup(h["grpo"], h["wm"], shares), ls, color="tab:red", lw=1,
            label=f"paper {model_size} totals: GRPO / (WM + a(GRPO - WM))")
ax.scatter([P["anchor_fraction"]] * 2, [paper.speedup("4B"), paper.speedup("9B")], color="tab:red", zorder=3,
           label="paper 4B / 9B, reported (at its stated share)")
ax.set(xlabel="anchor share a (share of groups executed)", ylabel="speedup GRPO / WMRL (ratio, log scale)", yscale="log",
       title=f"Projected speedup at the paper's shape ({P['groups_per_step']} groups x {P['group_size']}, "
             f"{TURNS:.2f} turns measured; the paper allows up to {P['max_turns']})")
ax.legend(fontsize=7)
fig.tight_layout()
nb.save_figure(fig, "04_compute_projection", cfg, "Speedup of WMRL over GRPO projected by the fitted cost model over "
               "the anchor share (our unit costs, and execution scaled to the paper's budget), the speedup the paper's "
               "own GPU-hour totals allow at each share, and the paper's reported points.",
               sources=[f"{d}/ledger.parquet" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 3. The paper's GPU-hour arithmetic, and the same check on our runs
#
# If WMRL and pure WM generate and update alike, then GRPO − WM ≤ execution E (equal when the
# world model costs nothing) and WMRL − WM = a·E, the anchors' executions. So the implied anchor
# share is at most (WMRL − WM)/(GRPO − WM), to compare with the stated ~10% (Sec. 3.3) or ≥ 12.5%
# (App. D: 8 groups, at least one executed).

# %% tags=["nbval-check-output"]
check = pd.DataFrame({m: costs.paper_gpu_hour_check(m) for m in ("4B", "9B")})
check.loc["implied_anchor_share_at_most"] *= 100
check = check.rename(index={"implied_anchor_share_at_most": "implied anchor share at most (%)"}).round(2)
print(check.to_string())

# %% [markdown]
# Our runs, the same arithmetic on charged seconds (the anchor share is measured in `steps.parquet`):

# %% tags=["nbval-check-output"]
if "wm" in ARMS_HERE:
    g, w, r = (charged.loc[a, "total"] for a in ("grpo", "wm", "wmrl"))
    ours_check = pd.Series({
        "execution of grpo (s)": charged.loc["grpo", "execution"], "grpo - wm (s)": g - w, "wmrl - wm (s)": r - w,
        "implied anchor share at most (%)": 100 * (r - w) / (g - w),
        "measured anchor share of groups (%)": 100 * steps[steps.arm == "wmrl"].pipe(
            lambda d: d.n_executed_groups.sum() / d.n_groups.sum()),
        "execution share of wmrl (vs grpo, %)": 100 * charged.loc["wmrl", "execution"] / charged.loc["grpo", "execution"],
    }).round(2)
    print(ours_check.to_string())
else:
    print("add 'wm' to COMPUTE_ARMS for this check")

# %% [markdown]
# ## What we see
#
# Computed from the tables above (`_compute.compute_findings`).

# %% tags=["nbval-check-output"]
SENTENCES = compute_findings(runs)
nb.save_findings(SENTENCES, cfg, "where the compute goes")  # for FINDINGS.md
print("\n".join(SENTENCES))

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`):

# %%
runs[["arm", "seed", "git_commit", "date", "run"]]
