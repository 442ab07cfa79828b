r"""The primary family declared again at seeds no run has used: each claim resolved as superior, inferior or equivalent.

Notebook 15 (this is its helper) tests Table 1's headline claims on four arms (``untrained``,
``grpo``, ``wm``, ``wmrl``) at the preset's ``REDECLARED_SEEDS`` (18 onward at ``small``), seeds that
no run of any campaign had used when this design was committed. Notebook 13's family stays on the
page with its own verdicts; this one differs from it in what a look can conclude (equivalence
as well as superiority), in how many seeds it may take, and in measuring P-C3 instead of
interpolating it.

**World model.** The project's default: the program-analysis world model fitted on the pool's
tuning split (tasks no run trains or is evaluated on). The ``wm`` and ``wmrl`` runs are the default runs
at these seeds.

**Estimand.** A run's late Avg (:func:`_primary.late_average`: the mean held-out Avg of its
evaluations after half its steps; the untrained policy's one evaluation). R-C3 is measured
(:class:`MeasuredMatchedCompute`): WMRL's Avg at its last evaluation minus GRPO's Avg at GRPO's last
evaluation whose charged compute does not exceed WMRL's total (a step function over evaluations;
GRPO's step-0 point is the untrained evaluation). So that this is a measurement where WMRL's compute
lands, the grpo runs evaluate after each of their first :data:`GRID` steps as well as on the
preset's schedule (run tag :data:`GRID_TAG`); extra evaluations change nothing the run trains
(``tests/test_trainer.py``). The paper's ratio form (GRPO's compute to reach WMRL's final Avg over
WMRL's compute, :func:`reach_ratio`) is reported where GRPO's measured curve reaches it.

**Tests.** Per claim, on its per-seed paired values (the seed is the unit of replication; the
held-out tasks within a seed are not replicates): a two-sided one-sample t-test against 0
(superiority) and the two one-sided tests of equivalence within :data:`MARGIN` points (TOST). Holm's
correction runs over the five claims, separately for each kind of test. At a look of two-sided level
:math:`\alpha_k` a claim is *reproduced* or *fails* when its Holm-adjusted t-test p is below
:math:`\alpha_k` (on the paper's side or the other), else *equivalent* when its Holm-adjusted TOST p
is below :math:`\alpha_k/2` (for one claim: the :math:`1-\alpha_k` interval inside :math:`\pm 3`),
else *inconclusive*.

**Looks and stopping.** Looks after 12, 24, 36 and 48 seeds (``REDECLARED_LOOKS``), each at the
Lan-DeMets O'Brien-Fleming level for its information fraction (:func:`_primary.obf_levels`, 5% overall),
for both tests. A claim resolved at a look keeps that verdict and is not tested again; the next look
trains only the arms an unresolved claim compares (:func:`arms_due`); the design stops when every
claim is resolved or after its last look. Then, for what is left, :func:`seeds_to_resolve` states the
seeds (and hours) at which the observed spread would resolve it.

**Secondary, declared with the family** (no verdict rests on it): per arm, the interquartile mean of
the late per-task score over (seed, task) with a stratified bootstrap interval, the probability of
improvement for each claim's pair, and performance profiles (:mod:`wmrl.experiments.aggregates`,
bootstrap seed :data:`BOOTSTRAP_SEED`, so every redraw draws the same intervals).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

try:  # the same estimand and alpha spending as notebook 13's family; a notebook imports its helpers from beside it
    from _primary import late_average, late_evals, late_steps, looks, obf_levels
except ModuleNotFoundError:  # imported as a module of the repository (the tests)
    from notebooks._primary import late_average, late_evals, late_steps, looks, obf_levels  # noqa: F401
from wmrl.experiments import paper
from wmrl.experiments.claims import Claim, claims_display, evaluate_claims
from wmrl.experiments.curves import learning_curves
from wmrl.experiments.stats import holm, tost_p

__all__ = ["ARMS", "BOOTSTRAP_SEED", "CLAIMS", "GRID", "GRID_TAG", "MARGIN", "MeasuredMatchedCompute", "arms_due",
           "claims_shown", "family_runs", "late_task_scores", "reach_ratio", "run_looks", "seeds_to_resolve",
           "test_look", "what_we_see"]

ARMS = ("untrained", "grpo", "wm", "wmrl")
MARGIN = 3.0  #: the equivalence margin, in points of late held-out Avg
GRID = 2  #: the grpo runs also evaluate after each of their first GRID steps (``eval.every_step_until``)
GRID_TAG = "evalgrid"  #: the run tag of those grpo runs
BOOTSTRAP_SEED = 0


def family_runs(load, arms=ARMS) -> pd.DataFrame:
    """The runs of ``arms`` (of :data:`ARMS`), one row per (arm, seed), ``arm`` the plain arm name.

    ``load(arms, tag, overrides)`` returns runs as :func:`~wmrl.experiments.collect.ensure_arm_runs` does;
    it is called for the default arms and for ``grpo`` under :data:`GRID_TAG` with the evaluation grid.
    """
    frames = []
    plain = [a for a in ARMS if a in arms and a != "grpo"]
    if plain:
        frames.append(load(plain, None, None))
    if "grpo" in arms:
        grid = load(["grpo"], GRID_TAG, {"eval.every_step_until": GRID})
        if not grid.arm.eq(f"grpo~{GRID_TAG}").all():
            raise ValueError(f"the grpo runs must be tagged {GRID_TAG!r}, got {sorted(set(grid.arm))}")
        frames.append(grid.assign(arm="grpo"))
    return pd.concat(frames, ignore_index=True)


class MeasuredMatchedCompute(Claim):
    """``a``'s Avg at its last evaluation minus ``b``'s at ``b``'s last evaluation within ``a``'s total charged compute.

    A step function over ``b``'s measured evaluations (its step 0 is the seed's untrained evaluation):
    nothing is interpolated. In points.
    """

    def per_seed(self, runs: pd.DataFrame) -> pd.Series:
        curves = learning_curves(runs[runs.arm.isin([self.a, self.b, "untrained"])])
        out = {}
        for seed in sorted(set(curves.seed[curves.arm == self.a]) & set(curves.seed[curves.arm == self.b])):
            last = curves[(curves.arm == self.a) & (curves.seed == seed)].sort_values("step").iloc[-1]
            cb = curves[(curves.arm == self.b) & (curves.seed == seed)]
            within = cb[cb.compute_s <= last.compute_s].sort_values("compute_s")
            out[seed] = float(last.avg - within.avg.iloc[-1]) * self.scale / 100.0
        if not out:
            raise KeyError(f"arms {self.a!r} and {self.b!r} share no seed in the curves")
        return pd.Series(out)


def reach_ratio(runs: pd.DataFrame, a: str = "wmrl", b: str = "grpo") -> pd.Series:
    """Per seed, the paper's form of the compute claim: ``b``'s charged compute at its first evaluation scoring
    at least ``a``'s final Avg, over ``a``'s total charged compute; NaN where ``b``'s curve never reaches it."""
    curves = learning_curves(runs[runs.arm.isin([a, b, "untrained"])])
    out = {}
    for seed in sorted(set(curves.seed[curves.arm == a]) & set(curves.seed[curves.arm == b])):
        last = curves[(curves.arm == a) & (curves.seed == seed)].sort_values("step").iloc[-1]
        cb = curves[(curves.arm == b) & (curves.seed == seed)].sort_values("step")
        reached = cb[cb.avg >= last.avg]
        out[seed] = float(reached.compute_s.iloc[0] / last.compute_s) if len(reached) and last.compute_s > 0 \
            else float("nan")
    return pd.Series(out, name="reach_ratio", dtype=float)


CLAIMS: tuple[Claim, ...] = (
    Claim("R-C0", "GRPO improves on the untrained agent", paper.versus("grpo", "untrained"), "grpo", "untrained",
          col="late_avg"),
    Claim("R-C1", "WMRL beats GRPO", paper.versus("wmrl", "grpo"), "wmrl", "grpo", col="late_avg"),
    MeasuredMatchedCompute("R-C3", "WMRL beats GRPO at matched compute (its final score against GRPO's measured "
                           "score at the same charged compute)",
                           f"GPU-hours GRPO / WMRL = {paper.speedup('4B'):.1f}x (4B) to reach GRPO's score",
                           "wmrl", "grpo", col="matched_compute"),
    Claim("R-C4", "a pure world model falls below GRPO", paper.versus("wm", "grpo"), "wm", "grpo", expect="<",
          col="late_avg"),
    Claim("R-C4'", "WMRL beats the pure world model", paper.versus("wmrl", "wm"), "wmrl", "wm", col="late_avg"),
)


def test_look(runs: pd.DataFrame, claims, alpha: float, margin: float = MARGIN) -> pd.DataFrame:
    """The claims at one look of level ``alpha``: :func:`~wmrl.experiments.claims.evaluate_claims`' columns (its
    ``verdict_holm`` the superiority verdict) plus ``p_tost``, ``p_tost_holm`` and ``verdict``: reproduced, fails,
    equivalent or inconclusive (the module's rule)."""
    t = evaluate_claims(runs, claims, alpha=alpha)
    p_tost = [tost_p(c.per_seed(runs).dropna(), margin) for c in claims]
    t["p_tost"] = p_tost
    t["p_tost_holm"] = holm(t.p_tost.fillna(1.0))
    equivalent = t.p_tost_holm < alpha / 2
    t["verdict"] = np.where(t.verdict_holm != "inconclusive", t.verdict_holm,
                            np.where(equivalent, "equivalent", "inconclusive"))
    return t


def run_looks(runs: pd.DataFrame, claims, design) -> tuple[pd.DataFrame | None, pd.DataFrame, bool]:
    """The stopping rule over every look whose seeds are trained for every claim still open.

    Returns ``(table, history, stopped)``: the last analysed look's table (a claim resolved earlier shows the
    look that resolved it, ``resolved_at``, and keeps its verdict and numbers from there), one row per (look,
    claim) tested, and whether the design has stopped (every claim resolved, or the last look analysed).
    """
    history, final, table = [], {}, None
    for look in design:
        open_claims = [c for c in claims if c.id not in final]
        have = runs[runs.seed.isin(look.seeds)]
        if any(set(have.seed[have.arm == arm]) != set(look.seeds) for arm in arms_due(open_claims)):
            return table, pd.DataFrame(history), False
        t = test_look(have, open_claims, look.alpha)
        t["look"], t["alpha_look"] = look.number, look.alpha
        for cid, r in t.iterrows():
            history.append({"look": look.number, "seeds": len(look.seeds), "alpha_look": look.alpha, "claim": cid,
                            "mean": r["mean"], "lo": r.lo, "hi": r.hi, "p": r.p, "p_holm": r.p_holm,
                            "p_tost": r.p_tost, "p_tost_holm": r.p_tost_holm, "verdict": r.verdict})
            if r.verdict != "inconclusive":
                final[cid] = r
        rows = []
        for c in claims:
            row = (final[c.id] if c.id in final else t.loc[c.id]).copy()
            row["resolved_at"] = row["look"] if c.id in final else np.nan
            rows.append(row.rename(c.id))
        table = pd.DataFrame(rows).rename_axis("claim")
        if len(final) == len(claims):
            return table, pd.DataFrame(history), True
    return table, pd.DataFrame(history), True


def claims_shown(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`run_looks`' table as the notebooks print it: the claims display with its family where the design
    has several, both tests' Holm-adjusted p-values, the verdict and the look that resolved it."""
    shown = claims_display(table).drop(columns=["verdict", "verdict (Holm)"])
    if "family" in table:
        shown["family"] = table.family
    shown["p (Holm)"], shown["p TOST (Holm)"] = table.p_holm.round(4), table.p_tost_holm.round(4)
    shown["verdict"], shown["look"] = table.verdict, table.resolved_at
    return shown


def arms_due(claims) -> list[str]:
    """The arms the given claims compare, those of :data:`ARMS` in its order first (R-C3 reads the untrained
    step-0 point too)."""
    need = {c.a for c in claims} | {c.b for c in claims}
    if any(isinstance(c, MeasuredMatchedCompute) for c in claims):
        need.add("untrained")
    return [a for a in ARMS if a in need] + sorted(need - set(ARMS))


def seeds_to_resolve(values, margin: float = MARGIN, alpha: float = 0.05, most: int = 100_000) -> float:
    """The fewest seeds at which the observed mean and SD of ``values`` would resolve the claim at one look of
    level ``alpha``: its interval excluding 0, or its interval inside ``±margin`` (whichever comes first).
    NaN below two values (no spread to project from)."""
    v = np.asarray(values, dtype=float)
    if len(v) < 2:
        return float("nan")
    m, sd = float(np.mean(v)), float(np.std(v, ddof=1))
    for n in range(2, most + 1):
        half = sps.t.ppf(1 - alpha / 2, n - 1) * sd / np.sqrt(n)
        if half < abs(m) or abs(m) + half < margin:
            return n
    return most


def late_task_scores(runs: pd.DataFrame, steps: int, scale: float = 100.0) -> dict[str, np.ndarray]:
    """Per arm, the ``(seeds, tasks)`` matrix of each held-out task's late percentile (the late Avg's
    evaluations; the untrained policy's one), seeds and tasks sorted, for :mod:`wmrl.experiments.aggregates`."""
    table = late_evals(runs, steps).groupby(["arm", "seed", "task"]).percentile.mean().mul(scale)
    return {arm: table.xs(arm, level="arm").unstack("task").sort_index().to_numpy()
            for arm in ARMS if arm in table.index.get_level_values("arm")}


_SAID = {"reproduced": "reproduced: the difference lies on the paper's side of 0",
         "fails": "fails: the difference lies on the other side of 0",
         "equivalent": f"equivalent: the difference lies within ±{MARGIN:g} points",
         "inconclusive": "not resolved yet"}


def what_we_see(table: pd.DataFrame) -> list[str]:
    """The closing sentences of :func:`run_looks`' table: each claim's verdict, the look that gave it, its
    estimate and interval, and both tests' Holm-adjusted p-values; then a tally."""
    out = []
    for cid, r in table.iterrows():
        where = f"at look {int(r.resolved_at)}" if np.isfinite(r.resolved_at) else f"after look {int(r.look)}"
        out.append(f"{cid} ({r.statement}) {where}: {_SAID[r.verdict]}. {r.comparison} = {r['mean']:.1f} "
                   f"[{r.lo:.1f}, {r.hi:.1f}] points over {int(r.seeds)} seeds; t-test p = {r.p_holm:.4f}, "
                   f"TOST p = {r.p_tost_holm:.4f} after Holm (level {r.alpha_look:.4f}).")
    counts = table.verdict.value_counts()
    out.append(f"Of {len(table)} claims, {counts.get('reproduced', 0)} reproduced, {counts.get('fails', 0)} fail, "
               f"{counts.get('equivalent', 0)} equivalent within ±{MARGIN:g} points and "
               f"{counts.get('inconclusive', 0)} not resolved.")
    return out
