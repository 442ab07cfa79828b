r"""Where the noise of a held-out score comes from: evaluation vs training, and what a campaign can detect.

A run's held-out Avg varies for two reasons: the *evaluation* draws (which scripts the policy
samples on each held-out task, and how they execute) and the *training* draws (which tasks,
trajectories, anchors and world-model samples a run saw, hence which policy it ended with). They
call for different remedies: evaluation noise falls with more evaluation samples or tasks
(and cancels between arms under common random numbers), training noise only with more seeds.

Two ways to separate them:

- :func:`variance_components`: several evaluations of each trained policy (``reps`` rows per
  seed). One-way random effects (balanced or not):
  :math:`\sigma^2_{eval} = MS_{within}`,
  :math:`\sigma^2_{train} = (MS_{between} - MS_{within}) / n_0`, with :math:`n_0` the effective
  number of repeats per seed, floored at 0.
- :func:`repeat_noise`: the same, measured on trained policies re-evaluated with fresh draws
  (``python -m bench.eval_repeats``), set beside each arm's variance over seeds.
- :func:`noise_from_fixed_policy`: no repeats, but an arm whose *policy* is identical at every
  seed (``untrained``: the grammar policy's heads start at zero, so its distribution does not
  depend on the seed). Its spread over seeds is evaluation noise alone, and for a trained arm
  :math:`\sigma^2_{train} = \sigma^2_{total} - \sigma^2_{eval}` (floored at 0).

:func:`projected_mdd` turns the two components into the detectable paired difference of a
campaign design (seeds, evaluation repeats, correlation of the evaluation noise of two arms at
one seed), which is how the next campaign is sized; :func:`seeds_to_detect` inverts it: the fewest
seeds that detect a given difference. :func:`campaign_sizing` puts them together for a set of runs: the
components, what a few designs would detect and the hours they would take at the runs' measured wall
time, and the seeds a target difference needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from wmrl.experiments.stats import ALPHA, POWER, min_detectable_difference

__all__ = ["DESIGNS", "GOAL_DESIGNS", "GOAL_POINTS", "Sizing", "campaign_sizing", "noise_from_fixed_policy", "projected_mdd",
           "repeat_noise", "seeds_to_detect", "variance_components"]

#: Campaign designs a sizing projects: (seeds, None for the seeds measured; evaluation repeats; CRN correlation).
DESIGNS = ((None, 1, 0.0), (10, 1, 0.0), (10, 4, 0.0), (10, 4, 0.5), (20, 4, 0.5))
#: The detectable difference the small campaign aims at on its headline comparisons (points of held-out Avg).
GOAL_POINTS = 3.0
#: The designs (evaluation repeats, CRN correlation) for which a sizing finds the seeds a target needs.
GOAL_DESIGNS = ((1, 0.0), (4, 0.5))


def variance_components(df: pd.DataFrame, value: str = "avg", unit: str = "seed") -> dict[str, float]:
    """Evaluation and training variance from repeated evaluations (rows) of each ``unit`` (a trained policy).

    Returns ``var_eval``, ``var_train``, ``eval_share`` (of one evaluation's total variance),
    ``units`` and ``n0`` (the effective repeats per unit).
    """
    groups = [g[value].to_numpy(float) for _, g in df.groupby(unit)]
    groups = [g[~np.isnan(g)] for g in groups]
    sizes = np.array([len(g) for g in groups])
    if len(groups) < 2 or (sizes < 1).any() or sizes.sum() - len(groups) < 1:
        raise ValueError(f"need at least two {unit}s and a repeated evaluation of one of them; got sizes {sizes.tolist()}")
    n, k = sizes.sum(), len(groups)
    grand = np.concatenate(groups).mean()
    ss_within = sum(((g - g.mean()) ** 2).sum() for g in groups)
    ss_between = sum(len(g) * (g.mean() - grand) ** 2 for g in groups)
    ms_within, ms_between = ss_within / (n - k), ss_between / (k - 1)
    n0 = (n - (sizes**2).sum() / n) / (k - 1)  # = repeats per unit when balanced
    var_train = max(0.0, (ms_between - ms_within) / n0)
    total = var_train + ms_within
    return {"var_eval": float(ms_within), "var_train": float(var_train),
            "eval_share": float(ms_within / total) if total > 0 else float("nan"), "units": int(k), "n0": float(n0)}


def noise_from_fixed_policy(runs: pd.DataFrame, arms, col: str = "avg", fixed_arm: str = "untrained",
                            scale: float = 1.0) -> pd.DataFrame:
    """Per arm: SD over seeds, and its split into evaluation and training noise (in ``col * scale`` units).

    ``fixed_arm``'s policy is the same at every seed, so its variance over seeds is the evaluation
    variance of one run's score; each trained arm's excess over it is training variance, *if* a
    trained policy's evaluation noise is the untrained one's (an assumption: a policy that writes
    more runnable scripts can spread more over its draws). ``sd_eval_lo`` / ``sd_eval_hi`` are the
    95% chi-square interval of the evaluation SD, on ``fixed_arm``'s seeds - 1 degrees of freedom.
    """
    fixed = runs.loc[runs.arm == fixed_arm, col].dropna().to_numpy(float) * scale
    if len(fixed) < 2:
        raise ValueError(f"need the {fixed_arm!r} arm at two seeds or more to measure evaluation noise, got {len(fixed)}")
    var_eval = float(fixed.var(ddof=1))
    df = len(fixed) - 1
    lo, hi = (np.sqrt(df * var_eval / stats.chi2.ppf(q, df)) for q in (1 - ALPHA / 2, ALPHA / 2))
    rows = []
    for arm in arms:
        v = runs.loc[runs.arm == arm, col].dropna().to_numpy(float) * scale
        total = float(v.var(ddof=1)) if len(v) > 1 else float("nan")
        train = max(0.0, total - var_eval) if arm != fixed_arm else 0.0
        rows.append({"arm": arm, "seeds": len(v), "sd_total": np.sqrt(total), "sd_eval": np.sqrt(var_eval),
                     "sd_eval_lo": float(lo), "sd_eval_hi": float(hi),
                     "sd_train": np.sqrt(train), "eval_share": min(1.0, var_eval / total) if total > 0 else float("nan")})
    return pd.DataFrame(rows).set_index("arm")


def repeat_noise(repeats: pd.DataFrame, runs: pd.DataFrame, col: str = "avg", scale: float = 100.0,
                 fixed_arm: str = "untrained") -> pd.DataFrame:
    """Per arm of ``repeats`` (rows: ``arm``, ``seed``, ``repeat`` >= 0, ``col``; several evaluations of one trained
    policy with fresh draws): the evaluation SD pooled within each (arm, seed) with its 95% chi-square
    interval, the arm's SD over the seeds of ``runs`` (one score per run) and the evaluation share of that
    variance with its interval; and ``fixed_arm``'s SD over seeds, the estimate the fixed-policy split uses."""
    fixed = runs.loc[runs.arm == fixed_arm, col].dropna().to_numpy(float) * scale
    rows = []
    for arm, own in repeats[repeats["repeat"] >= 0].groupby("arm", sort=False):
        groups = [g[col].dropna().to_numpy(float) * scale for _, g in own.groupby("seed")]
        df = int(sum(len(g) - 1 for g in groups))
        if df < 1:
            raise ValueError(f"{arm}: need two evaluations of one policy or more, got {[len(g) for g in groups]}")
        var_eval = float(sum(((g - g.mean()) ** 2).sum() for g in groups) / df)
        lo, hi = (df * var_eval / stats.chi2.ppf(q, df) for q in (1 - ALPHA / 2, ALPHA / 2))
        seeds = runs.loc[runs.arm == arm, col].dropna().to_numpy(float) * scale
        total = float(seeds.var(ddof=1)) if len(seeds) > 1 else float("nan")
        rows.append({"arm": arm, "policies": len(groups), "evaluations": int(sum(len(g) for g in groups)),
                     "sd_eval": np.sqrt(var_eval), "sd_eval_lo": np.sqrt(lo), "sd_eval_hi": np.sqrt(hi),
                     "seeds": len(seeds), "sd_total": np.sqrt(total),
                     "eval_share": min(1.0, var_eval / total) if total > 0 else float("nan"),
                     "eval_share_lo": min(1.0, lo / total) if total > 0 else float("nan"),
                     "eval_share_hi": min(1.0, hi / total) if total > 0 else float("nan"),
                     f"sd_{fixed_arm}": float(fixed.std(ddof=1)) if len(fixed) > 1 else float("nan")})
    return pd.DataFrame(rows).set_index("arm")


def projected_mdd(var_train: float, var_eval: float, seeds: int, eval_reps: int = 1, eval_corr: float = 0.0,
                  alpha: float = ALPHA, power: float = POWER) -> float:
    """Detectable paired difference between two arms for a campaign design: the
    :func:`~wmrl.experiments.stats.min_detectable_difference` of
    :math:`SD(d) = \\sqrt{2\\sigma^2_{train} + 2\\sigma^2_{eval}(1-\\rho_{eval})/m}`, with ``m = eval_reps``
    evaluation repeats correlated ``eval_corr`` between the arms (common random numbers)."""
    if eval_reps < 1 or not -1.0 <= eval_corr <= 1.0:
        raise ValueError(f"need eval_reps >= 1 and eval_corr in [-1, 1], got {eval_reps}, {eval_corr}")
    sd = np.sqrt(2 * var_train + 2 * var_eval * (1 - eval_corr) / eval_reps)
    return min_detectable_difference(float(sd), seeds, alpha, power)


def seeds_to_detect(target: float, var_train: float, var_eval: float, eval_reps: int = 1, eval_corr: float = 0.0,
                    max_seeds: int = 10_000) -> int | None:
    """The fewest seeds whose :func:`projected_mdd` is at most ``target``; None if even ``max_seeds`` are not enough.

    The detectable difference falls as seeds are added (more degrees of freedom and a smaller
    :math:`s/\\sqrt n`), so a bisection over the number of seeds finds the smallest that suffices.
    """
    if not target > 0:
        raise ValueError(f"target must be a positive difference, got {target!r}")

    def enough(n: int) -> bool:
        return projected_mdd(var_train, var_eval, n, eval_reps, eval_corr) <= target

    if not enough(max_seeds):
        return None
    lo, hi = 1, max_seeds  # enough(hi) holds; enough(lo) does not (one seed tests nothing)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class Sizing:
    """What :func:`campaign_sizing` measured and projected (points of the runs' score, hours of this machine)."""

    components: pd.DataFrame  #: :func:`noise_from_fixed_policy` of the arms
    var_eval: float  #: evaluation variance of one run's score
    var_train: float  #: training variance, the mean over the trained arms
    designs: pd.DataFrame  #: seeds, eval_reps, eval_corr, detectable, hours: one row per design of DESIGNS
    goal: float  #: the target difference
    to_goal: pd.DataFrame  #: eval_reps, eval_corr, seeds (<NA> past 10000), hours: one row per GOAL_DESIGNS

    @property
    def train_share(self) -> float:
        """Training noise's share of one trained run's variance."""
        return self.var_train / (self.var_train + self.var_eval)

    def sentence(self, what: str = "the headline comparisons") -> str:
        """What reaching :attr:`goal` would take, computed from the sizing."""
        ways = [f"{'more than 10000' if pd.isna(r.seeds) else int(r.seeds)} seeds at {r.eval_reps} evaluation "
                f"repeat{'s' * (r.eval_reps > 1)} (CRN correlation {r.eval_corr:g}; "
                f"{'-' if pd.isna(r.hours) else f'{r.hours:.1f}'} hours)" for r in self.to_goal.itertuples()]
        return (f"To detect {self.goal:g} points on {what} would take {' or '.join(ways)}, if the components held. "
                f"Training noise is {self.train_share:.0%} of one trained run's variance by this split, which takes a "
                "trained policy's evaluation noise to be the untrained one's; if it is larger, more evaluation "
                "samples would reduce the variance too, and these seed counts overstate what is needed.")


def campaign_sizing(runs: pd.DataFrame, arms, goal: float, fixed_arm: str = "untrained",
                    scale: float = 100.0) -> Sizing:
    """Evaluation and training noise of ``arms`` (``fixed_arm`` among them, at two seeds or more), the detectable
    paired difference of each of :data:`DESIGNS` and the seeds each of :data:`GOAL_DESIGNS` needs to detect
    ``goal``, with the hours the arms would take on the machine that trained ``runs``.

    ``runs`` are :func:`~wmrl.experiments.collect.load_runs` rows (``avg``, ``wall_s``, ``eval_wall_s``). A
    design's hours are its seeds times one run of every arm: each arm's mean wall time, plus its final
    evaluation's wall time for every evaluation repeat past the first.
    """
    if fixed_arm not in arms or len(set(arms)) < 2:
        raise ValueError(f"campaign_sizing needs {fixed_arm!r} and a trained arm among the arms, got {list(arms)}")
    t = noise_from_fixed_policy(runs, arms, scale=scale, fixed_arm=fixed_arm)
    var_eval = float(t.sd_eval.iloc[0] ** 2)
    var_train = float((t.drop(index=fixed_arm).sd_train ** 2).mean())
    per_arm = runs[runs.arm.isin(arms)].groupby("arm")[["wall_s", "eval_wall_s"]].mean()

    def hours(n, m: int) -> float:
        return float("nan") if n is None else float(n * (per_arm.wall_s + (m - 1) * per_arm.eval_wall_s).sum() / 3600)

    measured = int(runs[runs.arm == fixed_arm].seed.nunique())
    designs = pd.DataFrame([{"seeds": n or measured, "eval_reps": m, "eval_corr": c,
                             "detectable": projected_mdd(var_train, var_eval, n or measured, m, c),
                             "hours": hours(n or measured, m)} for n, m, c in DESIGNS])
    to_goal = []
    for m, c in GOAL_DESIGNS:
        n = seeds_to_detect(goal, var_train, var_eval, m, c)
        to_goal.append({"eval_reps": m, "eval_corr": c, "seeds": pd.NA if n is None else n, "hours": hours(n, m)})
    return Sizing(t, var_eval, var_train, designs, goal, pd.DataFrame(to_goal).astype({"seeds": "Int64"}))
