"""What each notebook shows, as sentences computed from its results (the notebooks' "what we see" cells).

The notebooks with claims use :func:`~wmrl.experiments.claims.what_we_see` (those past notebook 07 add
sentences of their own, in the helper beside them); the theory, compute and fidelity notebooks have
numbers rather than claims, and their sentences are written here, as is notebook 06's reading of its
world model on the rollouts of the arm trained on it (:func:`vla_hacking`). The notebooks print them
and ``FINDINGS.md`` quotes them, so the text in both places is the numbers' and cannot drift.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from wmrl.experiments import costs, paper

__all__ = ["compute_findings", "fidelity_findings", "plateau", "profile_findings", "theory_findings", "vla_hacking"]


def plateau(curves: pd.DataFrame, frac: float = 0.25) -> pd.DataFrame:
    """Mean ``gap`` over the last ``frac`` of each (arm, gamma, seed) run: where a training curve settles."""
    keys = [k for k in ("arm", "gamma", "seed") if k in curves]
    return curves.groupby(keys).apply(lambda d: d.gap[d.step >= (1 - frac) * d.step.max()].mean(),
                                      include_groups=False).rename("final_gap").reset_index()


def _late(df: pd.DataFrame, arm: str, col: str) -> float:
    d = df[df.arm == arm]
    return float(d[d.step >= 0.75 * d.step.max()][col].mean())


def theory_findings(folder: str | Path) -> list[str]:
    """Notebook 00's findings, from ``results/theory/``."""
    folder = Path(folder)
    thm3 = plateau(pd.read_parquet(folder / "thm3_curves.parquet")).groupby(["arm", "gamma"]).final_gap.mean()
    wm, grpo = thm3["wm"], thm3["grpo"]
    bias = pd.read_parquet(folder / "thm4_bias.parquet").groupby("pairs")[["calib_err2", "bias2"]].mean()
    ivd = pd.read_parquet(folder / "ivd_variance.parquet").mean(numeric_only=True)
    l12 = pd.read_parquet(folder / "lemma12.parquet")
    l12 = l12[l12.lemma12_n_anchor == l12.lemma12_n_anchor.max()].groupby("eps").ratio.mean() - 1
    thm4, a6 = pd.read_parquet(folder / "thm4_curves.parquet"), pd.read_parquet(folder / "a6_curves.parquet")
    a6_bias = pd.read_parquet(folder / "a6_arm_bias.parquet")
    per_arm = a6_bias[a6_bias.arm == "od"].groupby("true_r").bias.mean().abs()
    return [
        (f"Theorem 3: with world-model rewards only the final gap is {wm.min():.4f}-{wm.max():.4f} for step sizes "
         f"{', '.join(f'{g:g}' for g in wm.index)}: it does not shrink with the step size, while real rewards "
         f"settle {wm.mean() / grpo.mean():.0f}x lower ({grpo.min():.4f}-{grpo.max():.4f})."),
        (f"Theorem 4 (bias): Online Debiasing cuts the squared reward bias from {bias.bias2.iloc[0]:.2e} (identity map) "
         f"to {bias.bias2.iloc[-1]:.2e} after {bias.index[-1]} anchor pairs; the calibration error falls from "
         f"{bias.calib_err2.iloc[0]:.2e} to {bias.calib_err2.iloc[-1]:.2e}."),
        (f"Theorem 4 (variance): the fused gradient's variance at the optimal rho is {ivd.fused_rho_star:.3e}, "
         f"{ivd.fused_rho_star / ivd.formula:.3f} times the formula V_WM/(1+V_WM/V_E) and "
         f"{ivd.fused_rho_star / min(ivd.V_E, ivd.V_WM):.2f} times the better single stream."),
        (f"Lemma 12: an error in rho costs second-order variance, but not symmetrically: underestimating rho by half "
         f"inflates the variance by {100 * np.interp(-0.5, l12.index, l12):.1f}%, overestimating it by half by "
         f"{100 * np.interp(0.5, l12.index, l12):.1f}%, against the second-order approximation eps^2/4 = "
         f"{100 * 0.5**2 / 4:.2f}% at both."),
        (f"Assumption 6 failing: after Online Debiasing the largest per-arm reward bias left is {per_arm.max():.2f} "
         f"(the arm of true reward {per_arm.idxmax():.2f}, the one the world model falls for); the eta^2 "
         f"audit rises from {_late(thm4, 'od', 'eta2'):.1e} to {_late(a6, 'od', 'eta2'):.1e} and WMRL's rho from "
         f"{_late(thm4, 'wmrl', 'rho'):.2f} to {_late(a6, 'wmrl', 'rho'):.2f} late in training."),
    ]


def compute_findings(runs: pd.DataFrame) -> list[str]:
    """Notebook 04's findings: where the charged seconds go, and what the paper's GPU-hours allow."""
    charged = costs.compute_table(runs, sorted(set(runs.arm)), "charged")
    out = []
    if {"grpo", "wmrl"} <= set(charged.index):
        g, w = charged.loc["grpo"], charged.loc["wmrl"]
        out.append(f"Execution is {100 * g.execution / g.total:.1f}% of GRPO's charged compute; WMRL spends "
                   f"{w.total / g.total:.2f} of GRPO's total ({100 * w.execution / g.execution:.0f}% of its execution "
                   f"and {w.world_model:.0f} s of world model), by construction of the anchor share, not a "
                   "finding about learning.")
    for model in ("4B", "9B"):
        c = costs.paper_gpu_hour_check(model)
        at_text = float(costs.amdahl_speedup(c["grpo"], c["wm"], paper.ANCHOR_SHARE_TEXT))
        out.append(f"The paper's {model} totals: GRPO {c['grpo']:.0f}, pure WM {c['wm']:.0f}, WMRL {c['wmrl']:.0f} "
                   f"GPU-hours. Executing {100 * paper.ANCHOR_SHARE_TEXT:.0f}% of groups on top of pure WM would give "
                   f"at most {at_text:.1f}x; the reported {c['speedup']:.1f}x needs an anchor share of at most "
                   f"{100 * c['implied_anchor_share_at_most']:.1f}%.")
    return out


def fidelity_findings(rows: pd.DataFrame, steps: pd.DataFrame) -> list[str]:
    """Notebook 05's findings: the world model on a fixed set of scripts, and on the anchors during training."""
    from scipy.stats import spearmanr

    pred_ok, real_ok = (rows.pred_status == "ok").mean(), (rows.real_status == "ok").mean()
    rho = spearmanr(rows.pred_reward, rows.real_reward).statistic
    tone = ("pessimistic, unlike the paper's DEFAULT-TO-PASS LLM world model" if pred_ok < real_ok else
            "optimistic, as the paper's DEFAULT-TO-PASS LLM world model is" if pred_ok > real_ok else
            "neither optimistic nor pessimistic about valid runs")
    late = steps[steps.step >= steps.step.max() / 2]
    per_seed = late.groupby("seed").fid_spearman.mean()
    last = steps[steps.step == steps.step.max()]
    return [
        (f"On {len(rows)} fixed scripts the program-analysis world model ranks scripts with Spearman {rho:.2f} and is "
         f"{tone}: it predicts a valid run for {100 * pred_ok:.0f}% of them against {100 * real_ok:.0f}% real."),
        (f"During WMRL training its within-anchor Spearman in the second half of the run is "
         f"{per_seed.mean():.2f} (per seed {', '.join(f'{v:.2f}' for v in per_seed)}), and at the last step "
         f"rho = {last.rho.mean():.2f} over {last.seed.nunique()} seeds."),
    ]


def _quarters(d: pd.DataFrame, col: str) -> tuple[float, float]:
    """Mean of ``col`` over the first and the last quarter of the training steps (all seeds)."""
    q = max(1, int(np.ceil(d.step.max() / 4)))
    return float(d[d.step <= q][col].mean()), float(d[d.step > d.step.max() - q][col].mean())


def vla_hacking(hist: pd.DataFrame, arm: str = "wm", reference: str = "grpo") -> list[str]:
    """Notebook 06's reading of the world model on ``arm``'s own rollouts (``history_table``) against
    ``reference``'s (trained on success, not on progress): does progress rise more, while success rises
    less (the signature of reward hacking), and how well does progress rank success in each?"""
    if arm not in set(hist.arm) or reference not in set(hist.arm):
        return []
    (p0, p1), (s0, s1) = (_quarters(hist[hist.arm == arm], c) for c in ("progress", "train_success"))
    (q0, q1), (t0, t1) = (_quarters(hist[hist.arm == reference], c) for c in ("progress", "train_success"))
    if p1 - p0 > q1 - q0 and s1 - s0 < t1 - t0:
        verdict = (f"{arm}'s progress rises more than {reference}'s while its success rises less, the signature of "
                   "reward hacking")
    else:
        verdict = f"not the signature of reward hacking (progress rising more than {reference}'s while success rises less)"
    out = [(f"On its own training rollouts, the {arm} arm's mean progress goes from {p0:.2f} (first quarter of the "
            f"steps) to {p1:.2f} (last quarter) and its success from {100 * s0:.0f}% to {100 * s1:.0f}%; on "
            f"{reference}'s, progress goes from {q0:.2f} to {q1:.2f} and success from {100 * t0:.0f}% to "
            f"{100 * t1:.0f}% (means over {hist.seed.nunique()} seeds, no interval): {verdict}.")]
    late = hist[hist.step > hist.step.max() / 2].groupby("arm").progress_auc.mean()
    if np.isfinite(late.get(arm, np.nan)) and np.isfinite(late.get(reference, np.nan)):
        out.append(f"In the second half of training, progress ranks a success above a failure with ROC AUC "
                   f"{late[arm]:.2f} on {arm}'s rollouts and {late[reference]:.2f} on {reference}'s (0.5 is chance).")
    return out






def profile_findings(summary: pd.DataFrame) -> list[str]:
    """Notebook 05's reading of the two error profiles (``pessimistic``, then ``paper``) on each
    agent's scripts, from :func:`wmrl.experiments.wm_profile.summary_table`."""
    out = []
    for (agent, tasks), d in summary.groupby(level=["agent", "tasks"], sort=False):
        if "(not tuned on)" in tasks or not {"paper", "pessimistic"} <= set(d.index.get_level_values("profile")):
            continue
        pap, pes = d.xs("paper", level="profile").iloc[0], d.xs("pessimistic", level="profile").iloc[0]
        out.append(
            f"On the {agent} agent's {int(pap.n)} scripts of the {'held-out' if tasks == 'heldout' else 'training'} "
            f"tasks ({pap.real_ok_rate:.0%} run to a valid submission), the paper profile predicts {pap.pred_ok_rate:.0%} "
            f"valid (pessimistic: {pes.pred_ok_rate:.0%}), a mean reward error of {pap.mean_error:+.3f} "
            f"(pessimistic: {pes.mean_error:+.3f}; > 0 is optimistic) and "
            + (f"a within-group Spearman of {pap.within_group_spearman:.2f} (pessimistic: "
               f"{pes.within_group_spearman:.2f})." if pap.n_groups else
               "no within-group Spearman (no group of 3 scripts or more with different real rewards)."))
    return out
