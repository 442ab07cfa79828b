r"""Notebook 07's readout: the LLM agent's runs, the paper's Table 1 claims of them, and its world model.

The runs are the LLM agent's arms (:mod:`wmrl.trainer.llm.train`) at one preset: ``untrained``
(the instruct model as it ships), ``sft`` (the supervised warm start the trained arms start from,
when the preset has one) and the trained arms. What is read from them was decided before the
``llm-small`` runs were trained:

- **held-out Avg** (the paper's metric) and the **held-out ok rate** (the share of held-out
  samples with a turn that ran ok) per arm, and each arm's percentile per held-out task;
- **the claims** (:data:`LLM`) seed-paired as everywhere, and beside them the analysis declared
  primary: the same differences paired over the held-out tasks and seeds at the final evaluation
  (:func:`task_paired`), with Holm's correction within the L1 family (:data:`LLM_LEARNS`: does each
  trained arm improve on its start?). Its pairs of one seed share that seed's runs, so it counts
  dependent pairs as replicates; the seed-paired verdicts are the ones that hold.
  :func:`declaration` is the table the notebook declares for ``RESULTS.md`` (both, one row per claim);
- **the training signal** per step (:func:`step_table`): the reward the update saw, the real ok
  rate of the executed groups, the reply length in tokens, turns, malformed replies, KL, entropy;
- **the compute** (:func:`compute_breakdown`): measured seconds per component (generation, world
  model, execution, update), the generation share, and the world model's seconds per scored
  solution against execution's seconds per run;
- **the world model**: on the anchor pairs (the groups both predicted and executed), the raw
  and calibrated score against the real reward (:func:`anchor_fidelity`) and the predicted status
  against the real one (:func:`status_confusion`); how often its reply could not be parsed and its
  verdict defaulted to PASS (:func:`world_model_counts`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from wmrl.arms import get_arm
from wmrl.experiments import paper
from wmrl.experiments.claims import Claim, evaluate_claims, what_we_see
from wmrl.experiments.collect import load_table
from wmrl.experiments.costs import compute_table
from wmrl.experiments.stats import ALPHA, fmt_ci, holm, mean_ci, t_test_p, verdict
from wmrl.trainer.llm.grpo import SAID
from wmrl.world_model.llm import stat_rates

__all__ = ["LLM", "LLM_LEARNS", "STEP_COLUMNS", "WM_COUNTS", "LLMReadout", "anchor_fidelity", "anchor_pairs",
           "compute_breakdown", "declaration", "final_evals", "per_task", "readout", "status_confusion", "step_table",
           "task_paired", "world_model_counts"]

#: Notebook 07's claims on the LLM agent: Table 1's rows, with the warm start as the policy the trained arms
#: start from. The L1 family (each trained arm against that start) is the notebook's primary question, "does the
#: agent learn?"; L2-L4 compare the trained arms as Table 1 does.
LLM = (
    Claim("L0", "the supervised warm start beats the instruct model it starts from (this scale's premise)",
          "no warm start in the paper", "sft", "untrained"),
    Claim("L1", "GRPO improves on the policy it starts from", paper.versus("grpo", "untrained"), "grpo", "sft"),
    Claim("L1-wm", "GRPO on the world model's rewards improves on the policy it starts from",
          paper.versus("wm", "untrained"), "wm", "sft"),
    Claim("L1-wmrl", "WMRL improves on the policy it starts from", paper.versus("wmrl", "untrained"), "wmrl", "sft"),
    Claim("L2", "WMRL beats GRPO on held-out Avg", paper.versus("wmrl", "grpo"), "wmrl", "grpo"),
    Claim("L3", "a pure world model falls below GRPO", paper.versus("wm", "grpo"), "wm", "grpo", expect="<"),
    Claim("L4", "WMRL beats the pure world model", paper.versus("wmrl", "wm"), "wmrl", "wm"),
)
#: The primary family of notebook 07, corrected together (Holm) over held-out tasks and seeds.
LLM_LEARNS = ("L1", "L1-wm", "L1-wmrl")
#: The columns of :func:`task_paired` that :func:`declaration` adds to the claims table.
OVER_TASKS = ("over tasks (95% CI)", "verdict over tasks")

#: The per-step columns of an LLM run that :func:`step_table` reads (where a run logged them).
STEP_COLUMNS = ("train_reward", "real_reward", "wm_reward", "real_ok_rate", "status_acc", "completion_tokens",
                "mean_turns", "malformed_rate", "rho", "eta2", "kl", "entropy")
#: The LLM world model's counts of a run that :func:`world_model_counts` reports.
WM_COUNTS = ("predictions", "gated", "requests", "repairs", "parse_failures", "defaulted")


def final_evals(runs: pd.DataFrame) -> pd.DataFrame:
    """Each run's held-out rows (``eval.parquet``) at its last evaluation step, percentiles in points."""
    evals = load_table(runs, "eval")
    last = evals[evals.step == evals.groupby(["arm", "seed"]).step.transform("max")]
    return last.assign(percentile=100 * last.percentile, ok_rate=100 * last.ok_rate).reset_index(drop=True)


def per_task(final: pd.DataFrame, arms) -> pd.DataFrame:
    """Held-out percentile (avg@k, points) per task (rows) and arm (columns), mean over seeds.

    ``final``: the runs' last evaluation, as :func:`final_evals` reads it.
    """
    t = final.pivot_table(index=["category", "task"], columns="arm", values="percentile", aggfunc="mean")
    return t[[a for a in arms if a in t.columns]]


def task_paired(final: pd.DataFrame, claims=LLM, families=(LLM_LEARNS,)) -> pd.DataFrame:
    """Each claim's difference (points) paired over held-out tasks and seeds at the final evaluation.

    Per (seed, task) of ``final`` (:func:`final_evals`): the two arms' avg@k percentiles, differenced.
    Reported: the mean with its 95% Student-t interval over those pairs, the two-sided p-value, on
    how many pairs the first arm of the comparison is ahead, tied or behind, and the verdict on the
    paper's side (:func:`~wmrl.experiments.stats.verdict`) after Holm's correction within the claim's
    family: each of ``families`` (claim ids) is one family, every other claim is a family with the
    rest. The pairs share training runs (a run is scored on every task), so the interval is over the
    tasks and seeds the agent is scored on, given those runs.
    """
    last = final.set_index(["arm", "seed", "task"]).percentile
    rows = []
    for c in claims:
        if c.op != "diff" or not {c.a, c.b} <= set(final.arm):
            continue
        d = (last.loc[c.a] - last.loc[c.b]).dropna().to_numpy()
        m, lo, hi = mean_ci(d)
        rows.append({"claim": c.id, "comparison": c.label, "over tasks (95% CI)": fmt_ci(m, lo, hi, 1),
                     "mean": m, "lo": lo, "hi": hi, "pairs": len(d), "first ahead": int((d > 0).sum()),
                     "tied": int((d == 0).sum()), "second ahead": int((d < 0).sum()), "p": t_test_p(d),
                     "expect": c.expect})
    if not rows:
        return pd.DataFrame()
    out = pd.DataFrame(rows).set_index("claim")
    declared = [[c for c in ids if c in out.index] for ids in families]
    rest = [c for c in out.index if not any(c in ids for ids in declared)]
    out["p_holm"] = np.nan
    for ids in (*declared, rest):
        if ids:
            out.loc[ids, "p_holm"] = holm(out.loc[ids, "p"].fillna(1.0).to_numpy())
    out["verdict over tasks"] = [_holm_verdict(r) for _, r in out.iterrows()]
    return out.drop(columns="expect")


def _holm_verdict(r) -> str:
    """The interval's verdict, kept only where the Holm-adjusted p-value is below the level too."""
    v = verdict(r.lo, r.hi, r.expect)
    return v if r.p_holm < ALPHA or v == "inconclusive" else "inconclusive"


def step_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The trained runs' per-step rows (``steps.parquet``): :data:`STEP_COLUMNS` where logged."""
    trained = runs[[get_arm(a).train for a in runs.arm]]
    if trained.empty:
        return pd.DataFrame(columns=["arm", "seed", "step"])
    steps = load_table(trained, "steps")
    return steps[["arm", "seed", "step", *[c for c in STEP_COLUMNS if c in steps]]]


def compute_breakdown(runs: pd.DataFrame, arms) -> pd.DataFrame:
    """Measured minutes per component and arm (mean over seeds), the generation share, and per item.

    ``wm_s_per_solution`` and ``execution_s_per_run`` are a component's seconds over the items it
    handled (solutions scored, scripts run) in training, from the compute ledger.
    """
    trained = [a for a in arms if get_arm(a).train and a in set(runs.arm)]
    if not trained:
        return pd.DataFrame()
    t = compute_table(runs, trained, "actual") / 60
    t.columns = [f"{c} (min)" for c in t.columns]
    t["generation share"] = t["generation (min)"] / t["total (min)"]
    ledger = load_table(runs[runs.arm.isin(trained)], "ledger")
    per = ledger.groupby(["arm", "component"])[["actual_s", "count"]].sum()
    for comp, name in (("world_model", "wm_s_per_solution"), ("execution", "execution_s_per_run")):
        t[name] = [per.loc[(a, comp), "actual_s"] / per.loc[(a, comp), "count"]
                   if (a, comp) in per.index and per.loc[(a, comp), "count"] > 0 else np.nan for a in trained]
    return t


def anchor_pairs(runs: pd.DataFrame) -> pd.DataFrame:
    """The anchor pairs (``pairs.parquet``: predicted, calibrated, real) of the arms that both predict and
    execute; empty when no run does."""
    with_pairs = runs[[get_arm(a).train and get_arm(a).world_model and get_arm(a).anchors for a in runs.arm]]
    if with_pairs.empty:
        return pd.DataFrame(columns=["arm", "seed", "pred", "calibrated", "true"])
    return load_table(with_pairs, "pairs")


def anchor_fidelity(pairs: pd.DataFrame, steps: pd.DataFrame) -> pd.DataFrame:
    """On each arm's anchor pairs: the world model's raw and calibrated score against the real reward.

    Per arm of ``pairs`` (:func:`anchor_pairs`; seeds pooled): pairs, mean raw / calibrated / real
    reward (the bias is the difference), mean absolute error of each, Spearman's rank correlation of
    raw against real (NaN when either is constant), the same within each step's anchor pairs (what
    GRPO's group-centred advantage reads: the mean over the steps where neither is constant, and
    how many such steps there were; a step with one anchor group makes it the within-group rank
    correlation), and the status accuracy on anchor turns (``status_acc`` of ``steps``,
    :func:`step_table`; mean over steps).
    """
    rows = []
    for arm, p in pairs.groupby("arm", sort=False):
        const = p.pred.nunique() < 2 or p.true.nunique() < 2
        within = [float(spearmanr(g.pred, g.true).statistic) for _, g in p.groupby(["seed", "step"])
                  if g.pred.nunique() > 1 and g.true.nunique() > 1]
        rows.append({"arm": arm, "pairs": len(p), "raw": p.pred.mean(), "calibrated": p.calibrated.mean(),
                     "real": p.true.mean(), "MAE raw": (p.pred - p.true).abs().mean(),
                     "MAE calibrated": (p.calibrated - p.true).abs().mean(),
                     "spearman raw": np.nan if const else float(spearmanr(p.pred, p.true).statistic),
                     "spearman within step": float(np.mean(within)) if within else np.nan,
                     "steps ranked": len(within),
                     "status accuracy": steps.loc[steps.arm == arm, "status_acc"].mean()
                     if "status_acc" in steps else np.nan})
    return pd.DataFrame(rows).set_index("arm") if rows else pd.DataFrame()


def status_confusion(runs: pd.DataFrame) -> pd.DataFrame:
    """The world model's predicted status against the real one on the anchor turns (both predicted and run), summed
    over each arm's steps and seeds (the trainer's ``said_<predicted>_ran_<real>`` counts): one row per (arm,
    predicted status), one column per real status; empty when no run has anchors."""
    with_pairs = runs[[get_arm(a).train and get_arm(a).world_model and get_arm(a).anchors for a in runs.arm]]
    if with_pairs.empty:
        return pd.DataFrame()
    steps = load_table(with_pairs, "steps")
    cols = [c for c in steps.columns if c.startswith(SAID)]
    if not cols:
        return pd.DataFrame()
    long = steps.groupby("arm", sort=False)[cols].sum().stack().rename_axis(["arm", "pair"]).reset_index(name="turns")
    long[["predicted", "real"]] = long.pair.str.removeprefix(SAID).str.split("_ran_", expand=True)
    table = long.pivot_table(index=["arm", "predicted"], columns="real", values="turns", aggfunc="sum", fill_value=0)
    return table.astype(int)


def world_model_counts(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run with an LLM world model: its predictions, those the deterministic gate settled without asking
    the model (``gated``), its requests (repair rounds included), replies still unparsed after the repair
    round, verdicts defaulted to PASS, and the rates per check asked
    (:func:`~wmrl.world_model.llm.stat_rates`)."""
    rows = []
    for _, r in runs.iterrows():
        wm = json.loads((Path(r["dir"]) / "summary.json").read_text()).get("world_model")
        if wm:
            rows.append({"arm": r["arm"], "seed": r["seed"], **{k: int(wm[k]) for k in WM_COUNTS},
                         **stat_rates(wm)})
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class LLMReadout:
    """Everything notebook 07 and ``RESULTS.md`` read from the LLM runs (each run's files read once)."""

    final: pd.DataFrame
    pairs: pd.DataFrame
    confusion: pd.DataFrame
    claims: pd.DataFrame
    by_task: pd.DataFrame
    tasks: pd.DataFrame
    steps: pd.DataFrame
    compute: pd.DataFrame
    fidelity: pd.DataFrame
    wm_counts: pd.DataFrame
    sentences: list[str]


def readout(runs: pd.DataFrame, arms) -> LLMReadout:
    """The readout of ``runs`` (one row per run, as :func:`~wmrl.experiments.collect.ensure_arm_runs` gives)."""
    arms = [a for a in arms if a in set(runs.arm)]
    table = evaluate_claims(runs, [c for c in LLM if {c.a, c.b} <= set(arms)])
    final, pairs, steps = final_evals(runs), anchor_pairs(runs), step_table(runs)
    by_task = task_paired(final)
    compute = compute_breakdown(runs, arms)
    fidelity, counts, confusion = anchor_fidelity(pairs, steps), world_model_counts(runs), status_confusion(runs)
    return LLMReadout(final, pairs, confusion, table, by_task, per_task(final, arms), steps, compute, fidelity, counts,
                      what_we_see(table) + _sentences(final, arms, by_task, steps, compute, fidelity, counts, confusion))


def declaration(r: LLMReadout) -> pd.DataFrame:
    """The claims table notebook 07 declares (:func:`wmrl.experiments.notebook.save_claims`): the seed-paired
    claims with the primary analysis over held-out tasks and seeds beside each (:data:`OVER_TASKS`; empty where a
    claim has none), so ``RESULTS.md`` prints both from the declaration."""
    out = r.claims.copy()
    for col in OVER_TASKS:
        out[col] = [r.by_task.loc[cid, col] if cid in r.by_task.index else "" for cid in out.index]
    return out


def _sentences(final, arms, by_task, steps, compute, fidelity, counts, confusion) -> list[str]:
    """The readout in words, every number computed from the tables above."""
    out = []
    ok = final.groupby("arm").ok_rate.mean()
    out.append("Held-out samples with a turn that ran ok: " + ", ".join(f"{a} {ok[a]:.0f}%" for a in arms) + ".")
    if "real_ok_rate" in steps and steps.real_ok_rate.notna().any():
        real = steps.groupby("arm", sort=False).real_ok_rate.mean().dropna()
        out.append("Executed training trajectories with a turn that ran ok (mean over steps): "
                   + ", ".join(f"{a} {100 * v:.0f}%" for a, v in real.items()) + ".")
    if len(by_task):
        pooled = [f"{r.comparison} {r['over tasks (95% CI)']} points ({r['first ahead']} ahead, {r.tied} tied, "
                  f"{r['second ahead']} behind; {r['verdict over tasks']}, {cid})" for cid, r in by_task.iterrows()]
        pairs = "/".join(str(n) for n in by_task.pairs.unique())
        out.append(f"Over {pairs} held-out task pairs, the tasks of every seed pooled (they share the seed's runs, "
                   "so these intervals are narrower than the seed-paired ones that hold): " + "; ".join(pooled) + ".")
    if len(compute):
        shares = ", ".join(f"{a} {s:.0%}" for a, s in compute["generation share"].items())
        out.append(f"Generation's share of the measured training compute: {shares}.")
        both = compute.dropna(subset=["wm_s_per_solution", "execution_s_per_run"])
        for a, r in both.iterrows():
            out.append(f"In {a}, the world model took {r.wm_s_per_solution:.1f} s per scored solution against "
                       f"{r.execution_s_per_run:.1f} s per executed one.")
    for a, r in fidelity.iterrows():
        out.append(f"On {a}'s {int(r.pairs)} anchor pairs the world model scored {r.raw:.2f} raw and {r.calibrated:.2f} "
                   f"calibrated against {r.real:.2f} real (mean absolute error {r['MAE raw']:.2f} raw, "
                   f"{r['MAE calibrated']:.2f} calibrated)"
                   + (f"; within a step it ranked them with Spearman {r['spearman within step']:.2f} (mean over "
                      f"{int(r['steps ranked'])} steps)." if r["steps ranked"] else "."))
    for arm in (confusion.index.unique("arm") if len(confusion) else []):
        table = confusion.loc[arm]  # predicted status (rows) x real status (columns)
        right = sum(int(table.loc[s, s]) for s in table.index if s in table.columns)
        line = f"On {arm}'s {int(table.to_numpy().sum())} anchor turns the world model named the real status {right} times"
        if "ok" in table.index:
            said_ok = table.loc["ok"]
            wrong = ", ".join(f"{s} {int(n)}" for s, n in said_ok.items() if s != "ok" and n)
            line += (f"; of the {int(said_ok.sum())} it predicted ok, {int(said_ok.get('ok', 0))} ran ok"
                     + (f" (the others: {wrong})" if wrong else ""))
        out.append(line + ".")
    if len(counts):
        total = {k: int(counts[k].sum()) for k in WM_COUNTS}
        rates = stat_rates(total)
        out.append(f"The LLM world model (constrained decoding) made {total['predictions']} predictions, "
                   f"{total['gated']} of them settled by the deterministic gate without a request, and was asked "
                   f"{total['requests'] - total['repairs']} checks; {total['parse_failures']} replies could not be parsed after the repair round "
                   f"({rates['parse_failure_rate']:.1%}) and {total['defaulted']} verdicts defaulted to PASS "
                   f"({rates['defaulted_rate']:.1%}).")
    return out
