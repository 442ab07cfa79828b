r"""The primary family: the paper's headline claims, fixed before their runs and tested in looks.

Notebook 13 (this is its helper) answers "does WMRL work at this scale?" with five claims on four arms (``untrained``,
``grpo``, ``wm``, ``wmrl``) at seeds no other notebook trains (the preset's ``PRIMARY_SEEDS``).
The design was committed before any run at those seeds existed.

**The world model.** Declared with the program-analysis world model's ``train_split`` profile, fitted
on scripts of the training tasks; its two runs' verdicts are :func:`declared_verdicts`. The same seeds
were then trained with the ``tuning_split`` profile (:data:`WORLD_MODEL`, fitted on tasks no run trains
or is evaluated on), under their own run tag (:data:`WORLD_MODEL_TAG`): an exploratory rerun, since
the change followed the results it changed. ``untrained`` and ``grpo`` never consult a world model, so
their default runs serve both (``tests/test_primary.py`` replays a grpo run recorded under one profile
under the other, to the bit).

**Estimand.** A run's *late Avg*: the mean of its held-out Avg over the evaluations after half its
steps (at ``small``: steps 9, 12, 15 and 16), instead of the last evaluation alone. Training has
mostly saturated by then, and the last snapshot alone moves by several points from one evaluation
to the next at fixed draws; the untrained policy does not change, so its late Avg is its one
evaluation. The compute claim is defined at every seed (:class:`~wmrl.experiments.claims.MatchedCompute`): WMRL's held-out
Avg at its last evaluation against GRPO's learning curve at the charged compute WMRL spent in all
(on the committed seeds 0-2 its paired SD is smaller than that of the same comparison averaged over
the late evaluations, whose matched points fall on GRPO's steepest, noisiest stretch).

**Test.** Each claim is a seed-paired one-sample t-test of its per-seed values; the family's five
p-values are corrected by Holm's step-down at the look's level.

**Looks** (a group-sequential design). Seeds are trained in batches: the first look at
``PRIMARY_LOOKS[0]`` seeds, the next at ``PRIMARY_LOOKS[1]``, ... Each look's two-sided level comes
from the Lan-DeMets O'Brien-Fleming spending function (:func:`obf_levels`), so that the whole
procedure keeps a 5% type-I error per claim however many looks it takes. At a look the family is
tested at that look's level; a claim resolved there (reproduced or fails after Holm) keeps its
verdict; the design stops when every claim is resolved or at its last look. The boundaries are
normal-theory ones applied to t-test p-values, a small-sample approximation stated as such.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize, stats

from wmrl.arms import get_arm
from wmrl.experiments import paper
from wmrl.experiments.claims import Claim, MatchedCompute
from wmrl.experiments.collect import load_table
from wmrl.experiments.curves import heldout_avg
from wmrl.experiments.stats import ALPHA
from wmrl.provenance import committed_bytes

__all__ = [
    "DECLARED_PRESET",
    "DECLARED_RUNS",
    "PRIMARY",
    "PRIMARY_ARMS",
    "WORLD_MODEL",
    "WORLD_MODEL_ARMS",
    "WORLD_MODEL_TAG",
    "Look",
    "declared_verdicts",
    "family_runs",
    "late_average",
    "late_evals",
    "late_steps",
    "looks",
    "obf_levels",
    "run_looks",
]

PRIMARY_ARMS = ("untrained", "grpo", "wm", "wmrl")
#: The world model of the exploratory rerun's world-model arms: constants fitted on tasks no run uses.
WORLD_MODEL = {"world_model.profile": "tuning_split"}
#: The run tag of those arms' runs (``results/train/<preset>/wm~tuning/``...).
WORLD_MODEL_TAG = "tuning"
#: The family's arms that consult a world model, trained under :data:`WORLD_MODEL_TAG`.
WORLD_MODEL_ARMS = tuple(a for a in PRIMARY_ARMS if get_arm(a).world_model)


def family_runs(load) -> pd.DataFrame:
    """The family's runs, one row per (arm, seed), ``arm`` the plain arm name.

    ``load(arms, tag, overrides)`` returns runs as :func:`~wmrl.experiments.collect.ensure_arm_runs` does:
    it is called once for the arms without a world model (default runs) and once for
    :data:`WORLD_MODEL_ARMS` under :data:`WORLD_MODEL_TAG` with :data:`WORLD_MODEL`, whose ``arm``
    (``"wm~tuning"``) is read back as the arm's name.
    """
    plain = [a for a in PRIMARY_ARMS if a not in WORLD_MODEL_ARMS]
    tagged = load(list(WORLD_MODEL_ARMS), WORLD_MODEL_TAG, dict(WORLD_MODEL))
    suffix = "~" + WORLD_MODEL_TAG
    if not tagged.arm.str.endswith(suffix).all():
        raise ValueError(f"the world-model arms' runs must be tagged {WORLD_MODEL_TAG!r}, got {sorted(set(tagged.arm))}")
    tagged = tagged.assign(arm=tagged.arm.str.removesuffix(suffix))
    return pd.concat([load(plain, None, None), tagged], ignore_index=True)


def late_steps(steps: int) -> int:
    """The first evaluation step counted in the late Avg: evaluations at steps above half the run's."""
    return steps // 2 + 1


def late_evals(runs: pd.DataFrame, steps: int) -> pd.DataFrame:
    """The rows of ``runs``' ``eval.parquet`` the late Avg counts: each run's evaluations at steps >=
    :func:`late_steps`, or all of them for a run with none there (the untrained arm, evaluated once at step 0)."""
    evals = load_table(runs, "eval")
    late = evals[evals.step >= late_steps(steps)]
    once = evals[~evals.set_index(["arm", "seed"]).index.isin(late.set_index(["arm", "seed"]).index)]
    return pd.concat([late, once])


def late_average(runs: pd.DataFrame, steps: int, scale: float = 1.0) -> pd.Series:
    """Per run (``runs``' index), the mean held-out Avg of its :func:`late_evals`. ``scale`` as in
    :func:`~wmrl.experiments.curves.learning_curves` (1: a fraction)."""
    late = heldout_avg(late_evals(runs, steps), scale).groupby(["arm", "seed"]).avg.mean()
    return pd.Series([late.get(k, np.nan) for k in zip(runs.arm, runs.seed)], index=runs.index, name="late_avg")


#: The family: the late Avg claims read the ``late_avg`` column (:func:`late_average`), P-C3 the learning curves.
PRIMARY: tuple[Claim, ...] = (
    Claim("P-C0", "GRPO improves on the untrained agent", paper.versus("grpo", "untrained"), "grpo", "untrained",
          col="late_avg"),
    Claim("P-C1", "WMRL beats GRPO", paper.versus("wmrl", "grpo"), "wmrl", "grpo", col="late_avg"),
    MatchedCompute("P-C3", "WMRL beats GRPO at matched compute (its final score against GRPO's curve)",
                   f"GPU-hours GRPO / WMRL = {paper.speedup('4B'):.1f}x (4B) to reach GRPO's score",
                   "wmrl", "grpo"),
    Claim("P-C4", "a pure world model falls below GRPO", paper.versus("wm", "grpo"), "wm", "grpo", expect="<",
          col="late_avg"),
    Claim("P-C4'", "WMRL beats the pure world model", paper.versus("wmrl", "wm"), "wmrl", "wm", col="late_avg"),
)




def obf_levels(fractions, alpha: float = ALPHA) -> np.ndarray:
    """Two-sided nominal levels of a group-sequential test at information ``fractions`` (increasing, last 1).

    Lan-DeMets' O'Brien-Fleming-type spending, :math:`\\alpha(t) = 2 - 2\\Phi(z_{1-\\alpha/2}/\\sqrt t)`:
    look k's boundary :math:`c_k` solves :math:`P(|Z_j| < c_j,\\ j < k;\\ |Z_k| \\ge c_k) = \\alpha(t_k) -
    \\alpha(t_{k-1})` for the look statistics' Brownian correlation :math:`\\sqrt{t_i / t_j}`; the level is
    :math:`2 - 2\\Phi(c_k)`. The first boundary is :math:`z_{1-\\alpha/2}/\\sqrt{t_1}` in closed form
    (2.772 at half the information, 5%); the test checks the whole sequence's error by simulation.
    """
    t = np.asarray(fractions, dtype=float)
    if t.ndim != 1 or len(t) == 0 or np.any(np.diff(t) <= 0) or t[0] <= 0 or not np.isclose(t[-1], 1.0):
        raise ValueError(f"information fractions must increase to 1, got {list(fractions)}")
    z = stats.norm.ppf(1 - alpha / 2)
    spent = 2 - 2 * stats.norm.cdf(z / np.sqrt(t))
    bounds: list[float] = []
    for k in range(len(t)):
        if k == 0:
            bounds.append(float(stats.norm.ppf(1 - spent[0] / 2)))
            continue
        tt = t[: k + 1]
        cov = np.sqrt(np.minimum.outer(tt, tt) / np.maximum.outer(tt, tt))
        prev = np.array(bounds)

        def inside(c, prev=prev, cov=cov):  # P(no earlier crossing and |Z_k| < c)
            hi = np.append(prev, c)  # from three looks on scipy integrates by quasi-Monte Carlo: a fixed seed
            return stats.multivariate_normal.cdf(hi, mean=np.zeros(len(hi)), cov=cov, lower_limit=-hi,
                                                 abseps=1e-6, releps=1e-6, rng=np.random.default_rng(0))

        stay = 1 - spent[k]  # P(no crossing up to look k)
        bounds.append(float(optimize.brentq(lambda c, stay=stay: inside(c) - stay, 0.5, 10.0, xtol=1e-8)))
    return 2 - 2 * stats.norm.cdf(np.array(bounds))


@dataclass(frozen=True)
class Look:
    """One look of the design: its number (from 1), the seeds it analyses and its two-sided level."""

    number: int
    seeds: tuple[int, ...]
    alpha: float


def looks(seeds, sizes, alpha: float = ALPHA) -> list[Look]:
    """The design's looks: look k analyses the first ``sizes[k]`` of ``seeds`` at :func:`obf_levels`' level."""
    seeds, sizes = list(seeds), list(sizes)
    if not sizes or sorted(set(sizes)) != sizes or sizes[-1] != len(seeds) or sizes[0] < 1:
        raise ValueError(f"look sizes must increase to the number of seeds ({len(seeds)}), got {sizes}")
    levels = obf_levels(np.array(sizes) / sizes[-1], alpha)
    return [Look(k + 1, tuple(seeds[:n]), float(a)) for k, (n, a) in enumerate(zip(sizes, levels))]


def run_looks(runs: pd.DataFrame, claims, design: list[Look]) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """Apply the design's stopping rule to ``runs`` (every look whose seeds are all trained).

    Returns ``(table, history, stopped)``: the claims table of the look the family stops at, or of
    the last look analysed (:func:`~wmrl.experiments.claims.evaluate_claims`' columns plus ``look``
    and ``alpha_look``), each claim's verdict the one it got at the first look that resolved it;
    one row per (look, claim) with its estimate, p, Holm-adjusted p and verdict; and whether the
    rule has stopped (every claim resolved, or the last look analysed), so that no further look is due.
    """
    from wmrl.experiments.claims import evaluate_claims

    history, table, final = [], None, {}
    for look in design:
        have = runs[runs.seed.isin(look.seeds)]
        trained = {a: set(have.seed[have.arm == a]) for a in {c.a for c in claims} | {c.b for c in claims}}
        if any(s != set(look.seeds) for s in trained.values()):
            return table, pd.DataFrame(history), False
        t = evaluate_claims(have, claims, alpha=look.alpha)
        t["look"], t["alpha_look"] = look.number, look.alpha
        for cid, r in t.iterrows():
            history.append({"look": look.number, "seeds": len(look.seeds), "alpha_look": look.alpha, "claim": cid,
                            "mean": r["mean"], "lo": r.lo, "hi": r.hi, "p": r.p, "p_holm": r.p_holm,
                            "verdict_holm": r.verdict_holm})
            if cid not in final and r.verdict_holm != "inconclusive":
                final[cid] = (r.verdict_holm, look.number)
        t["verdict_holm"] = [final.get(cid, (v, 0))[0] for cid, v in t.verdict_holm.items()]
        t["resolved_at"] = [final[cid][1] if cid in final else np.nan for cid in t.index]
        table = t
        if len(final) == len(claims):
            return table, pd.DataFrame(history), True
    return table, pd.DataFrame(history), True


#: The preset of the declared design's runs, and each run with the commit whose claims table holds its verdicts
#: (world model ``train_split``; the runs themselves are in git history at those commits).
DECLARED_PRESET = "small"
DECLARED_RUNS = (("first run", "e78aaf7"), ("retrained fresh", "dcf3ffd"))
_DECLARED_COLUMNS = ["run", "commit", "claim", "comparison", "mean", "lo", "hi", "seeds", "p_holm", "verdict_holm",
                     "look"]


def _claims_at(commit: str) -> pd.DataFrame:
    """Notebook 13's claims table as ``commit`` holds it (FileNotFoundError where this clone lacks the commit)."""
    path = f"results/claims/{DECLARED_PRESET}/13_primary.parquet"
    shown = committed_bytes(commit, path)
    if shown is None:
        raise FileNotFoundError(f"{commit}:{path} is not in this clone's history")
    return pd.read_parquet(io.BytesIO(shown))


def declared_verdicts(cfg) -> pd.DataFrame | None:
    """The declared design's verdicts, one row per (run, claim): read from git at :data:`DECLARED_RUNS` and kept
    in ``RESULTS_DIR/primary/<preset>/declared.parquet`` (rewritten only when it changes); a clone without that
    history reads the kept table. None at another preset than :data:`DECLARED_PRESET`. ``look``: the look that
    resolved the claim, else the last one analysed."""
    from wmrl.experiments import notebook as nb

    if cfg.preset != DECLARED_PRESET:
        return None
    subdir = f"primary/{cfg.preset}"
    try:
        frames = []
        for run, commit in DECLARED_RUNS:
            t = _claims_at(commit)
            frames.append(t.assign(run=run, commit=commit, look=t.resolved_at.fillna(t.look).astype(int)))
        found = pd.concat(frames, ignore_index=True)[_DECLARED_COLUMNS]
    except FileNotFoundError:
        return nb.load_results("declared", cfg, subdir)
    nb.save_results(found, "declared", cfg, subdir, keep_unchanged=True)
    return found


def per_task(runs: pd.DataFrame, steps: int, claims) -> pd.DataFrame:
    """Each late-Avg claim on each held-out task: the mean over seeds of the paired difference of the task's late
    percentile (points), with its 95% interval over seeds. Every seed is scored on the same held-out tasks, so
    these show how the claim varies across tasks; the seed stays the unit of each interval."""
    from wmrl.experiments.stats import mean_ci

    scores = late_evals(runs, steps).groupby(["arm", "seed", "task", "category"]).percentile.mean().mul(100)
    rows = []
    for c in (c for c in claims if c.col == "late_avg"):
        diff = (scores.xs(c.a, level="arm") - scores.xs(c.b, level="arm")).dropna()
        for (task, category), d in diff.groupby(level=["task", "category"]):
            m, lo, hi = mean_ci(d.to_numpy())
            rows.append({"claim": c.id, "comparison": c.label, "task": task, "category": category, "mean": m,
                         "lo": lo, "hi": hi, "seeds": len(d)})
    return pd.DataFrame(rows)
