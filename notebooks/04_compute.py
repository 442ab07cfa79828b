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
# by close to 10×. The paper reports totals only (883 → 286 GPU-h at 4B, 1174 → 349 at 9B, pure WM
# 269 / 330), and the reviews point out two gaps: there is **no breakdown** (generation / world
# model / execution / update), and the **17 GPU-h** between WMRL and pure WM does not add up for a
# 10-12.5% anchor share.
#
# **What we do.**
# 1. the measured breakdown per arm from `ledger.parquet` (charged and actual seconds);
# 2. a cost model `seconds/step = fixed + per_item × items` per component, fitted to the ledger,
#    checked against the measured speedup, then evaluated at the paper's shape (8 × 8
#    trajectories, 4 turns, a 1200 s execution budget, 10% anchors) and over the anchor share;
# 3. the paper's own arithmetic, and the same check on our runs.

# %% tags=["parameters"]
MODE = "replay"  # "replay": rebuild from RESULTS_DIR; "train": train missing runs, then rebuild
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
COMPUTE_ARMS = None  # None: the preset's (grpo, wm, wmrl, anchor_only)

# %%
from wmrl.experiments import notebook as nb
from wmrl.arms import ARMS

cfg = nb.check_params(globals(), notebook="04_compute", keys=["COMPUTE_ARMS"], results_subdir=f"train/{PRESET}",
                      choices={"COMPUTE_ARMS": [a for a in ARMS if a != "untrained"]})
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} arms={cfg['COMPUTE_ARMS']}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from wmrl.experiments import paper, report
from wmrl.experiments.collect import ensure_runs, load_runs, load_table
from wmrl.presets import run_config
from wmrl.ledger import COMPONENTS

ARMS_HERE = list(cfg["COMPUTE_ARMS"])
if not {"grpo", "wmrl"} <= set(ARMS_HERE):
    raise nb.ParameterError(f"COMPUTE_ARMS must include 'grpo' and 'wmrl' (got {ARMS_HERE}); "
                            "papermill: -y 'COMPUTE_ARMS: [grpo, wm, wmrl, anchor_only]'")
COMP_COLORS = {"generation": "tab:blue", "world_model": "tab:orange", "execution": "tab:red", "update": "tab:green"}
nb.use_style()

if cfg.train:
    ensure_runs(ARMS_HERE, cfg.seeds, cfg.preset, cfg.results_dir)
runs = report.add_totals(load_runs(cfg.preset, cfg.results_dir, arms=ARMS_HERE, seeds=cfg.seeds))
report.check_runs_present(runs, ARMS_HERE, cfg.seeds)
ledger, steps = load_table(runs, "ledger"), load_table(runs, "steps")
run_cfg = run_config("wmrl", cfg.preset)  # the training shape of this preset

# %% [markdown]
# ## 1. The measured breakdown
#
# Seconds per run and component, mean over seeds. *Charged* bills an execution served from the
# execution memo at the measured cost of the run it reuses (what the step would cost without the
# memo); *actual* is what this machine spent. The paper's GPU-hours correspond to *charged*.

# %% tags=["nbval-check-output"]
charged = report.compute_table(runs, ARMS_HERE, "charged")
share = charged[list(COMPONENTS)].div(charged.total, axis=0).mul(100).round(1).add_suffix(" %")
print("charged seconds per run (mean over seeds)\n", charged.round(1).to_string(), "\n")
print("share of the total\n", share.to_string())

# %%
actual = report.compute_table(runs, ARMS_HERE, "actual")
print("actual seconds per run (memo hits cost ~0 here)\n", actual.round(1).to_string())

# %% [markdown]
# Speedup of each arm over GRPO (seed-paired ratio of charged compute, 95% interval):

# %% tags=["nbval-check-output"]
speed = []
for arm in [a for a in ARMS_HERE if a != "grpo"]:
    row = {"arm": arm}
    for label, col in (("execution", "execution_charged_s"), ("total", "total_charged_s")):
        if not runs.loc[runs.arm == arm, col].gt(0).all():
            row[f"grpo / arm, {label}"] = "- (none spent)"
            continue
        m, lo, hi, _ = report.paired_diff(runs, "grpo", arm, col, op="ratio")
        row[f"grpo / arm, {label}"] = report.fmt_ci(m, lo, hi, 2)
    speed.append(row)
print(pd.DataFrame(speed).to_string(index=False))

# %%
fig, ax = plt.subplots(figsize=(7, 4))
bottom = np.zeros(len(charged))
for c in COMPONENTS:
    ax.bar(charged.index, charged[c] / 3600, bottom=bottom, color=COMP_COLORS[c], label=c)
    bottom += charged[c].to_numpy() / 3600
ax.set(ylabel="charged CPU-hours per run", title="Compute breakdown per arm (mean over seeds)")
ax.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "04_compute", cfg, "Charged compute per run split into generation / world model / execution / "
               "update, per arm (mean over seeds).", sources=[f"{d}/ledger.parquet" for d in runs.dir])
plt.show()

# %% [markdown]
# ## 2. A cost model fitted to the measured components
#
# For each component $c$, seconds per step $= a_c + b_c\, n_c$, with $n_c$ the items it handled
# that step (scripts generated, predicted, executed; trajectories updated), fitted by least squares
# over every step of every run (`report.fit_cost_model`). The ledger counts one item per update,
# so we replace it with the number of trajectories trained on (`n_groups × group_size`).

# %%
items = steps[["arm", "seed", "step", "n_groups"]].assign(update_items=lambda d: d.n_groups * run_cfg.train.group_size)
led = ledger.merge(items[["arm", "seed", "step", "update_items"]], on=["arm", "seed", "step"], how="left")
led.loc[led.component == "update", "count"] = led.loc[led.component == "update", "update_items"]
model = report.fit_cost_model(led)
TURNS = float(steps.mean_turns.mean())
print(model.to_string(float_format=lambda v: f"{v:.4g}"))
print(f"mean turns per trajectory: {TURNS:.2f}")

# %% [markdown]
# **Check**: the model at this preset's own shape should give back the measured speedup (the
# items are the trainer's plan, `report.stream_items`; the measured ratio is from section 1).

# %% tags=["nbval-check-output"]
def speedups(table):
    return {f"grpo / {a}": table.loc["grpo", "total"] / table.loc[a, "total"] for a in table.index if a != "grpo"}


ours = report.project_costs(model, ARMS_HERE, run_cfg.train.groups_per_step, run_cfg.train.group_size, TURNS, run_cfg.method.anchor_fraction)
measured = {f"grpo / {a}": charged.loc["grpo", "total"] / charged.loc[a, "total"] for a in ARMS_HERE if a != "grpo"}
budget_scale = paper.PAPER_SCALE["timeout_s"] / run_cfg.sandbox.timeout_s
at_paper = report.project_costs(model, ARMS_HERE, paper.PAPER_SCALE["groups_per_step"], paper.PAPER_SCALE["group_size"],
                                TURNS, paper.PAPER_SCALE["anchor_fraction"])
at_paper_budget = report.project_costs(model, ARMS_HERE, paper.PAPER_SCALE["groups_per_step"],
                                       paper.PAPER_SCALE["group_size"], TURNS, paper.PAPER_SCALE["anchor_fraction"],
                                       scale={"execution": budget_scale})
proj = pd.DataFrame({"measured (this preset)": measured, "model, this preset": speedups(ours),
                     "model, paper shape": speedups(at_paper),
                     f"model, paper shape, execution x{budget_scale:g}": speedups(at_paper_budget)}).round(2)
print(proj.to_string())
print(f"\npaper: grpo / wmrl = {883 / 286:.2f} (4B), {1174 / 349:.2f} (9B); grpo / wm = {883 / 269:.2f}, {1174 / 330:.2f}")

# %% [markdown]
# **The anchor share.** The speedup is bounded by $1/a$ for anchor share $a$ as execution
# dominates; the paper never sweeps $a$. The projected speedup over $a$, at our unit costs and
# with execution scaled to the paper's 1200 s budget, with the paper's two measured points:

# %%
shares = np.linspace(0.05, 0.5, 46)
fig, ax = plt.subplots(figsize=(7, 4))
for label, sc in (("our unit costs", {}), (f"execution x{budget_scale:g} (paper's budget)", {"execution": budget_scale})):
    s = [speedups(report.project_costs(model, ["grpo", "wmrl"], 8, 8, TURNS, a, scale=sc))["grpo / wmrl"] for a in shares]
    ax.plot(shares, s, label=label)
ax.plot(shares, 1 / shares, "k:", lw=1, label="1 / a (execution only)")
ax.scatter([paper.ANCHOR_SHARE_TEXT] * 2, [883 / 286, 1174 / 349], color="tab:red", zorder=3, label="paper 4B / 9B")
ax.set(xlabel="anchor share a (groups executed)", ylabel="speedup grpo / wmrl", yscale="log",
       title="Projected speedup at the paper's shape (8 x 8, 4 turns)")
ax.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "04_compute_projection", cfg, "Speedup of WMRL over GRPO projected by the fitted cost model over "
               "the anchor share, with our unit costs and with execution scaled to a 1200 s budget; red: the paper.",
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
check = pd.DataFrame({m: report.paper_gpu_hour_check(m) for m in ("4B", "9B")})
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
# Where the runs come from (git commit, date):

# %%
runs[["arm", "seed", "git_commit", "date", "dir"]]
