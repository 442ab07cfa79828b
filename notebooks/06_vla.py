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
# The paper transfers WMRL to embodied policy post-training: MiniVLA-1B on LIBERO-Long, a
# world model (Robometer) that predicts task progress from 8 frames of a rollout as a dense
# reward, and the sparse end-of-rollout success as the anchor. Training uses the first 16 of the
# 50 fixed initial states of each task, evaluation all 50. Its Table 2 (success %):
# SFT 37.4, GRPO (sparse success) 38.3, pure world model 39.2, WMRL 41.2.
#
# **Our analog** (`wmrl.vla`, CPU, minutes):
#
# | paper | here |
# |---|---|
# | LIBERO-Long tasks, 50 fixed initial states each | Meta-World `reach`, `push`, `pick-place` (multi-stage: reach, grasp, lift, carry); 50 seeded initial states each |
# | MiniVLA-1B, SFT on demos, language instruction | Gaussian MLP on the 39-d state + task one-hot, behaviour cloning on DART demos of the scripted experts |
# | Robometer: progress from 8 frames | frozen MLP on 8 states spread over the rollout, trained on the demos only (so biased off them) |
# | sparse success anchor | success at any step (the rollout ends there) |
# | WMRL: OD + IVD | `OnlineDebiaser` (isotonic progress → success on anchor groups), `InverseVarianceWeighter` + `fused_group_weights` |
#
# Sections: 1 the arms and how they are run · 2 Table 2 beside ours · 3 per task · 4 learning
# curves and the world model's fidelity · 5 cost · 6 claims. `MODE="replay"` (default) rebuilds
# everything from `results/vla/`; `MODE="train"` runs every missing (arm, seed) first.

# %% tags=["parameters"]
MODE = "replay"  # "replay": rebuild from RESULTS_DIR; "train": run the missing (arm, seed) runs, then rebuild
PRESET = "small"  # "smoke" (plumbing, seconds of training) or "small" (all arms x 3 seeds, ~15 min on 2 free cores)
SEEDS = None  # None: the preset's seeds (wmrl/presets.py)
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
VLA_WORKERS = 2  # worker processes in train mode, one torch thread each

# %%
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="06_vla", keys=["VLA_WORKERS"], results_subdir="vla")
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} results={cfg.results_dir / 'vla'}")

# %%
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

from wmrl.vla.config import ARMS, TASKS, get_preset
from wmrl.vla.results import load_results

nb.use_style()
PRESET_CFG = get_preset(cfg.preset)
OUT = cfg.results_dir / "vla"
PAPER = {"sft": 37.4, "grpo": 38.3, "wm": 39.2, "wmrl": 41.2}  # Table 2, LIBERO-Long success %

# %% [markdown]
# ## 1. The arms
#
# All arms of a seed start from the same SFT policy and world model (`wmrl/vla/train.py`):
#
# - `sft`: behaviour cloning only.
# - `grpo`: GRPO, every group rewarded by sparse success $r\in\{0,1\}$.
# - `wm`: GRPO, every group rewarded by the raw progress estimate $\hat r\in[0,1]$.
# - `wmrl`: per step, `AnchorScheduler` (10%, at least one group) picks anchor groups rewarded by
#   success; their pairs $(\hat r, r)$ feed the isotonic map $\hat f$, so the other groups get
#   $\hat f(\hat r)\approx P(\text{success}\mid\hat r)$; the streams are fused with weights
#   $\rho/D$ and $1/D$, $D=\rho|G_E|+|G_{WM}|$.
#
# Each step samples `groups` (task, training state) pairs and `group_size` rollouts from each;
# advantages are std-normalised group advantages; the update is GRPO's clipped surrogate.

# %%
print(pd.Series(PRESET_CFG.to_dict()).to_string())
if cfg.train:
    from wmrl.vla.runner import run_all  # needs the simulator; replay does not

    run_all(PRESET_CFG, cfg.seeds, OUT, workers=cfg["VLA_WORKERS"])

# %%
results = [r for r in load_results(OUT, cfg.preset) if r["seed"] in cfg.seeds]
have = {(r["arm"], r["seed"]) for r in results}
missing = [(a, s) for a in ARMS for s in cfg.seeds if (a, s) not in have]
if missing:
    raise nb.ParameterError(f"no results for {missing} in {OUT / cfg.preset}; run with MODE='train' first")
K = results[0]["metrics"]["k"]
runs = pd.DataFrame([{"arm": r["arm"], "seed": r["seed"], "task": t, **r["metrics"][t]}
                     for r in results for t in ("all", *TASKS)])
print(f"{len(results)} runs: arms {ARMS} x seeds {cfg.seeds}; {K} rollouts per initial state")


def ci95(x) -> float:
    """Half-width of the 95% t-interval of the mean over seeds (NaN for one seed)."""
    x = np.asarray(x, float)
    return float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))) if len(x) > 1 else float("nan")


def fmt(x) -> str:
    return f"{100 * np.mean(x):.1f} ± {100 * ci95(x):.1f}"


# %% [markdown]
# ## 2. Table 2 beside ours
#
# Success % (mean ± 95% interval over seeds). In-domain = states 0-15, OOD = 16-49,
# Overall $= 0.32\,\mathrm{ID} + 0.68\,\mathrm{OOD}$ as in the paper; Best@k / All@k: share of
# initial states where at least one / all of the $k$ rollouts succeeded.

# %% tags=["nbval-check-output"]
cols = {"sr_id": "in-domain", "sr_ood": "OOD", "overall": "Overall", "best_at_k": f"Best@{K}", "all_at_k": f"All@{K}"}
overall = runs[runs.task == "all"]
table = pd.DataFrame({"paper Overall": pd.Series(PAPER)})
for c, name in cols.items():
    table[name] = overall.groupby("arm")[c].apply(fmt)
table = table.loc[list(ARMS)]
print(table.to_string())

# %% [markdown]
# ## 3. Per task (Overall success %)

# %% tags=["nbval-check-output"]
per_task = runs[runs.task != "all"].pivot_table(index="arm", columns="task", values="overall", aggfunc=fmt)
print(per_task.loc[list(ARMS), list(TASKS)].to_string())

# %% [markdown]
# ## 4. Learning curves and the world model's fidelity
#
# Left: success of the training rollouts (sparse reward, training states), mean over seeds.
# Middle: the world model's mean progress on successful vs failed training rollouts (the gap is
# its signal; a failure scored near 1 is its bias). Right: WMRL's $\rho$ and $\eta^2$.

# %%
hist = pd.DataFrame([{"arm": r["arm"], "seed": r["seed"], **h} for r in results for h in r["history"]])
fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
for arm in ARMS[1:]:
    h = hist[hist.arm == arm].groupby("step")
    m = h.train_success.mean().rolling(3, min_periods=1).mean()
    axes[0].plot(m.index, 100 * m, color=nb.ARM_COLORS[arm], label=arm)
for ax_i, arm in ((1, "grpo"),):
    h = hist[hist.arm == arm].groupby("step")
    axes[ax_i].plot(h.progress_if_success.mean(), color="tab:green", label="progress | success")
    axes[ax_i].plot(h.progress_if_failure.mean(), color="tab:red", label="progress | failure")
w = hist[hist.arm == "wmrl"].groupby("step")
axes[2].plot(w.rho.mean(), color="tab:green", label="rho")
axes[2].plot(w.eta2.mean(), color="tab:purple", label="eta^2")
axes[0].set(xlabel="step", ylabel="train success % (rolling 3)", title="Learning curves")
axes[1].set(xlabel="step", ylabel="world-model progress", title="World model on grpo's rollouts")
axes[2].set(xlabel="step", title="WMRL: anchor weight and WM residual")
for ax in axes:
    ax.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "06_vla_curves", cfg, "Training success per arm; progress estimate by outcome; WMRL's rho and eta^2.",
               sources=sorted((OUT / cfg.preset).glob("*_seed*.json")))
plt.show()

# %%
fig, ax = plt.subplots(figsize=(7, 3.6))
x = np.arange(len(ARMS))
for j, (c, name) in enumerate([("sr_id", "in-domain"), ("sr_ood", "OOD"), ("overall", "Overall")]):
    g = overall.groupby("arm")[c]
    ax.bar(x + (j - 1) * 0.27, 100 * g.mean().loc[list(ARMS)], 0.27, yerr=100 * g.apply(ci95).loc[list(ARMS)],
           label=name, capsize=3)
ax.set(xticks=x, xticklabels=ARMS, ylabel="success %", title=f"Evaluation on 50 initial states per task ({K} rollouts each)")
ax.legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "06_vla_success", cfg, "Success by arm, in-domain / OOD / Overall, 95% intervals over seeds.",
               sources=sorted((OUT / cfg.preset).glob("*_seed*.json")))
plt.show()

# %% [markdown]
# ## 5. Cost
#
# Wall-clock seconds per run (training includes building the seed's SFT policy and world model
# for the first arm that needs it), environment steps, and rollout seconds per training step.
# The host's load varies; `python -m wmrl.vla.bench` measures the throughput on its own.

# %%
cost = pd.DataFrame([{"arm": r["arm"], "seed": r["seed"], "train_s": r["timing"]["train_s"], "eval_s": r["timing"]["eval_s"],
                      "env_steps": sum(h["env_steps"] for h in r["history"]),
                      "rollout_s_per_step": np.mean([h["t_rollout"] for h in r["history"]]) if r["history"] else np.nan}
                     for r in results])
print(cost.groupby("arm")[["train_s", "eval_s", "env_steps", "rollout_s_per_step"]].mean().round(1).loc[list(ARMS)].to_string())

# %% [markdown]
# ## 6. Claims
#
# The paper's ordering, checked on our Overall success with paired differences over seeds
# (each seed's arms share the SFT start): "holds" if the 95% interval of the difference is above
# 0, "contradicted" if below, "not resolved" otherwise.

# %% tags=["nbval-check-output"]
piv = overall.pivot(index="seed", columns="arm", values="overall")


def claim(a, b):
    d = piv[a] - piv[b]
    lo, hi = 100 * (d.mean() - ci95(d)), 100 * (d.mean() + ci95(d))
    verdict = "holds" if lo > 0 else "contradicted" if hi < 0 else "not resolved"
    return {"claim": f"{a} > {b}", "paper (points)": f"{PAPER[a] - PAPER[b]:+.1f}",
            "ours (points)": f"{100 * d.mean():+.1f} [{lo:+.1f}, {hi:+.1f}]", "verdict": verdict}


claims = pd.DataFrame([claim("grpo", "sft"), claim("wm", "sft"), claim("wmrl", "sft"), claim("wmrl", "grpo"),
                       claim("wmrl", "wm")])
print(claims.to_string(index=False))

# %%
pd.DataFrame([{"arm": r["arm"], "seed": r["seed"], "preset": r["preset"], "git_commit": r["provenance"]["git_commit"][:10],
               "date": r["provenance"]["date"]} for r in results])
