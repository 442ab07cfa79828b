r"""Notebook 07's readout and design: the LLM agent's runs, the paper's Table 1 claims of them, and its world model.

The runs are the LLM agent's arms (:mod:`wmrl.trainer.llm.train`) at one preset: ``untrained``
(the instruct model as it ships), ``sft`` (the supervised warm start the trained arms start from,
when the preset has one) and the trained arms.

**The design, declared before any run at its seeds** (the preset's ``LLM_SEEDS``, 6-17 at
``llm-small``: seeds no earlier ``llm-small`` design ran at). Every run starts from one warm start,
shared by all seeds and kept (``llm.sft_seed``, ``llm.sft_lora_rank``: a LoRA adapter under
``results/warm_starts/``), so a seed varies the RL alone and the ``sft`` arm is that warm start evaluated
with the seed's sampling. The estimand is a run's held-out Avg at its final evaluation; the **seed is the
unit of replication** (the held-out tasks within a seed share its runs and are not replicates). Two
families, each corrected by Holm's method within itself (:data:`FAMILIES`): the primary, does each
trained arm improve on the warm start it starts from (L1, L1-wm, L1-wmrl); the secondary, this scale's
premise (L0, the warm start beats the instruct model) and Table 1's comparisons of the trained arms
(L2-L4). Per claim, on its per-seed paired values, a two-sided t-test against 0 and the two one-sided
tests of equivalence within notebook 15's margin (``_redeclared.MARGIN`` points); looks after 4, 8
and 12 seeds (``LLM_LOOKS``) at the Lan-DeMets O'Brien-Fleming level of their information fraction, 5%
overall; a claim resolved at a look keeps its verdict and the next look trains only the arms an open
claim compares (notebook 15's rule, :func:`run_design`). After the last look, :func:`seeds_to_resolve`
states what an open claim would cost.

**Earlier designs**, on the page beside this one (:data:`EARLIER`, :func:`earlier_designs`): seeds 0-2 and
then 3-5, each seed with its own warm start (a full fine-tune), their primary analysis pooled over
held-out tasks and seeds (it counted the tasks within a seed as replicates). Recomputed with the seed as
the unit, their verdicts are kept as they came out.

What is read from the runs besides the claims:

- **held-out Avg** (the paper's metric) and the **held-out ok rate** (the share of held-out
  samples with a turn that ran ok) per arm, and each arm's percentile per held-out task;
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

try:  # notebook 15's tests, looks and stopping rule; a notebook imports its helpers from beside it
    from _primary import looks
    from _redeclared import MARGIN, arms_due, claims_shown, run_looks, seeds_to_resolve
    from _redeclared import what_we_see as design_sentences
except ModuleNotFoundError:  # imported as a module of the repository (the tests)
    from notebooks._primary import looks  # noqa: F401
    from notebooks._redeclared import MARGIN, arms_due, claims_shown, run_looks, seeds_to_resolve  # noqa: F401
    from notebooks._redeclared import what_we_see as design_sentences
from wmrl.arms import get_arm
from wmrl.experiments import paper
from wmrl.experiments.claims import Claim, evaluate_claims
from wmrl.experiments.collect import load_table
from wmrl.experiments.costs import compute_table
from wmrl.provenance import committed_files
from wmrl.trainer.llm.grpo import SAID
from wmrl.world_model.llm import stat_rates

__all__ = ["EARLIER", "FAMILIES", "LLM", "LLM_LEARNS", "STEP_COLUMNS", "TO_RESOLVE_COLUMNS", "WM_COUNTS", "LLMReadout",
           "anchor_fidelity", "anchor_pairs", "compute_breakdown", "design_arms", "earlier_designs", "final_evals",
           "per_task", "readout", "run_design", "status_confusion", "step_table", "world_model_counts"]

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
#: The primary family of notebook 07: does each trained arm improve on the warm start it starts from?
LLM_LEARNS = ("L1", "L1-wm", "L1-wmrl")
#: The design's two families, each corrected by Holm within itself at every look.
FAMILIES = {"primary": LLM_LEARNS, "secondary": ("L0", "L2", "L3", "L4")}
#: The designs declared before this one: what each was, the commit holding its runs, and its seeds.
EARLIER = (("seeds 0-2: a warm start per seed, on the runnable habit plans; 6 GRPO steps", "2b3f8d1", (0, 1, 2)),
           ("seeds 3-5: a warm start per seed, on every habit plan; 8 GRPO steps", "fbe1fa0", (3, 4, 5)))

#: The per-step columns of an LLM run that :func:`step_table` reads (where a run logged them).
STEP_COLUMNS = ("train_reward", "real_reward", "wm_reward", "real_ok_rate", "status_acc", "completion_tokens",
                "mean_turns", "malformed_rate", "rho", "eta2", "kl", "entropy")
#: Section "What is left": per open claim, the seeds its observed spread would take to resolve it at the level
#: given, and the hours of its arms on 2 cores (kept as ``llm/<preset>/to_resolve.parquet``; RESULTS.md quotes it).
TO_RESOLVE_COLUMNS = ("claim", "comparison", "family", "level", "seeds", "hours, 2 cores")
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


def design_claims(arms) -> dict[str, list[Claim]]:
    """Each family's claims (:data:`FAMILIES`) whose two arms are among ``arms``."""
    return {f: [c for c in LLM if c.id in ids and {c.a, c.b} <= set(arms)] for f, ids in FAMILIES.items()}


def run_design(runs: pd.DataFrame, design, arms) -> tuple[pd.DataFrame | None, pd.DataFrame, bool]:
    """Notebook 15's stopping rule (:func:`_redeclared.run_looks`) over each family of the claims on ``arms``.

    Returns ``(table, history, stopped)``: one row per claim at the look that resolved it or the last look
    analysed (None before the first look), with its ``family``; one row per (look, claim) tested; and whether
    both families have stopped."""
    tables, histories, stopped = [], [], True
    for family, claims in design_claims(arms).items():
        if not claims:
            continue
        table, history, done = run_looks(runs, claims, design)
        stopped &= done
        if table is not None:
            tables.append(table.assign(family=family))
        if len(history):
            histories.append(history.assign(family=family))
    table = pd.concat(tables) if tables else None
    return table, pd.concat(histories, ignore_index=True) if histories else pd.DataFrame(), stopped


def design_arms(table: pd.DataFrame | None, arms) -> list[str]:
    """The arms the next look trains: those an open claim compares (every claim's before the first look), in
    the order of ``arms``; every one of ``arms`` where no claim compares two of them (a smoke run's)."""
    claims = [c for family in design_claims(arms).values() for c in family]
    if not claims:
        return list(arms)
    if table is not None:
        claims = [c for c in claims if c.id in table.index and table.loc[c.id, "verdict"] == "inconclusive"]
    due = set(arms_due(claims))
    return [a for a in arms if a in due]


def _heldout_at(commit: str, preset: str, arms, seeds) -> pd.DataFrame:
    """Held-out Avg of each (arm, seed) run as ``commit`` holds its summary (FileNotFoundError for one it lacks)."""
    paths = {(arm, seed): f"results/train/{preset}/{arm}/seed{seed}/summary.json" for arm in arms for seed in seeds}
    shown = committed_files(commit, list(paths.values()))
    missing = [p for p in paths.values() if shown[p] is None]
    if missing:
        raise FileNotFoundError(f"{commit}:{missing[0]} is not in this clone's history")
    return pd.DataFrame([{"arm": arm, "seed": seed, "avg": json.loads(shown[path])["heldout"]["avg"]}
                         for (arm, seed), path in paths.items()])


def earlier_designs(cfg, preset: str, arms) -> pd.DataFrame | None:
    """The earlier designs' claims (:data:`EARLIER`), recomputed with the seed as the unit: each design's runs read
    from git at its commit, :func:`~wmrl.experiments.claims.evaluate_claims` over its seeds in the two families of
    this design (Holm within each). Kept in ``RESULTS_DIR/llm/<preset>/earlier.parquet`` (rewritten only when it
    changes); a clone without that history reads the kept table. None at another preset than ``llm-small``."""
    from wmrl.experiments import notebook as nb

    if preset != "llm-small":
        return None
    subdir = f"llm/{preset}"
    try:
        frames = []
        for design, commit, seeds in EARLIER:
            runs = _heldout_at(commit, preset, arms, seeds)
            for family, claims in design_claims(arms).items():
                frames.append(evaluate_claims(runs, claims).reset_index()
                              .assign(design=design, commit=commit, family=family))
        found = pd.concat(frames, ignore_index=True)[["design", "commit", "family", "claim", "statement", "comparison",
                                                      "mean", "lo", "hi", "seeds", "p", "p_holm", "verdict_holm"]]
    except FileNotFoundError:
        return nb.load_results("earlier", cfg, subdir)
    nb.save_results(found, "earlier", cfg, subdir, keep_unchanged=True)
    return found


@dataclass(frozen=True)
class LLMReadout:
    """Everything notebook 07 and ``RESULTS.md`` read from the LLM runs (each run's files read once)."""

    final: pd.DataFrame
    pairs: pd.DataFrame
    confusion: pd.DataFrame
    claims: pd.DataFrame | None
    tasks: pd.DataFrame
    steps: pd.DataFrame
    compute: pd.DataFrame
    fidelity: pd.DataFrame
    wm_counts: pd.DataFrame
    sentences: list[str]


def readout(runs: pd.DataFrame, arms, table: pd.DataFrame | None = None) -> LLMReadout:
    """The readout of ``runs`` (one row per run, as :func:`~wmrl.experiments.collect.ensure_arm_runs` gives), with
    the design's claims ``table`` (:func:`run_design`; None: none analysed yet)."""
    arms = [a for a in arms if a in set(runs.arm)]
    final, pairs, steps = final_evals(runs), anchor_pairs(runs), step_table(runs)
    compute = compute_breakdown(runs, arms)
    fidelity, counts, confusion = anchor_fidelity(pairs, steps), world_model_counts(runs), status_confusion(runs)
    said = design_sentences(table) if table is not None else []
    return LLMReadout(final, pairs, confusion, table, per_task(final, arms), steps, compute, fidelity, counts,
                      said + _sentences(final, arms, steps, compute, fidelity, counts, confusion))


def _sentences(final, arms, steps, compute, fidelity, counts, confusion) -> list[str]:
    """The readout in words, every number computed from the tables above."""
    out = []
    ok = final.groupby("arm").ok_rate.mean()
    out.append("Held-out samples with a turn that ran ok: " + ", ".join(f"{a} {ok[a]:.0f}%" for a in arms) + ".")
    if "real_ok_rate" in steps and steps.real_ok_rate.notna().any():
        real = steps.groupby("arm", sort=False).real_ok_rate.mean().dropna()
        out.append("Executed training trajectories with a turn that ran ok (mean over steps): "
                   + ", ".join(f"{a} {100 * v:.0f}%" for a, v in real.items()) + ".")
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
