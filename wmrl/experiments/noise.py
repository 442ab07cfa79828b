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
- :func:`noise_from_fixed_policy`: no repeats, but an arm whose *policy* is identical at every
  seed (``untrained``: the grammar policy's heads start at zero, so its distribution does not
  depend on the seed). Its spread over seeds is evaluation noise alone, and for a trained arm
  :math:`\sigma^2_{train} = \sigma^2_{total} - \sigma^2_{eval}` (floored at 0).

:func:`projected_mdd` turns the two components into the detectable paired difference of a
campaign design (seeds, evaluation repeats, correlation of the evaluation noise of two arms at
one seed), which is how the next campaign is sized; :func:`seeds_to_detect` inverts it: the fewest
seeds that detect a given difference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from wmrl.experiments.stats import ALPHA, POWER, min_detectable_difference

__all__ = ["noise_from_fixed_policy", "projected_mdd", "seeds_to_detect", "variance_components"]


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
    variance of one run's score; each trained arm's excess over it is training variance.
    """
    fixed = runs.loc[runs.arm == fixed_arm, col].dropna().to_numpy(float) * scale
    if len(fixed) < 2:
        raise ValueError(f"need the {fixed_arm!r} arm at two seeds or more to measure evaluation noise, got {len(fixed)}")
    var_eval = float(fixed.var(ddof=1))
    rows = []
    for arm in arms:
        v = runs.loc[runs.arm == arm, col].dropna().to_numpy(float) * scale
        total = float(v.var(ddof=1)) if len(v) > 1 else float("nan")
        train = max(0.0, total - var_eval) if arm != fixed_arm else 0.0
        rows.append({"arm": arm, "seeds": len(v), "sd_total": np.sqrt(total), "sd_eval": np.sqrt(var_eval),
                     "sd_train": np.sqrt(train), "eval_share": min(1.0, var_eval / total) if total > 0 else float("nan")})
    return pd.DataFrame(rows).set_index("arm")


def projected_mdd(var_train: float, var_eval: float, seeds: int, eval_reps: int = 1, eval_corr: float = 0.0,
                  alpha: float = ALPHA, power: float = POWER) -> float:
    """Detectable paired difference between two arms for a campaign design.

    At one seed, two arms' scores differ by their training draws (independent:
    :math:`2\\sigma^2_{train}`) and their evaluation draws (averaged over ``eval_reps`` repeats,
    correlated ``eval_corr`` between the arms under common random numbers:
    :math:`2\\sigma^2_{eval}(1-\\rho_{eval})/m`), so
    :math:`SD(d) = \\sqrt{2\\sigma^2_{train} + 2\\sigma^2_{eval}(1-\\rho_{eval})/m}` and the
    detectable difference is :func:`~wmrl.experiments.stats.min_detectable_difference` of it.
    """
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
