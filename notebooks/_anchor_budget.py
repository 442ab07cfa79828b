r"""The anchor budget (notebook 10): how many anchors, and which, for the compute they cost.

The paper fixes the anchor share at ~10% (one group of eight, 12.5%, in its appendix) and draws
the anchors uniformly. Notebook 10's helper turns its questions into runs and numbers:

- :func:`budget_plan`: the runs a sweep of anchor shares needs. A step executes
  :math:`\max(a_{min}, \mathrm{round}(aG))` whole groups (:meth:`~wmrl.anchor.AnchorScheduler.n_anchors`),
  so requested shares that round to the same group count are the *same* run (routing and all, bit
  for bit: ``tests/test_step.py``); each realised count is trained once, and the count of the
  preset's default share reuses the default runs shared with notebooks 01-04.
- :func:`budget_table`: held-out Avg and charged compute per (arm, share) with 95% intervals.
- :func:`compute_at_grpo_score` and :func:`minimising_share`: per seed, the compute each share
  needs to reach GRPO's final held-out score (read off the learning curves, as claim C3 is), and
  which share needs least, with the set of shares the seeds cannot tell from it.
- :func:`budget_claims`: the notebook's seed-paired claims, and :func:`budget_findings` its
  sentences.
- :func:`readout`: all of the above from the sweep's runs, once (the notebook declares its claims
  and sentences for RESULTS.md).
- :func:`pareto_panel` and :func:`reach_panel`: the notebook's two panels.
"""

from __future__ import annotations

from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullFormatter

from wmrl.anchor import AnchorScheduler
from wmrl.config import ConfigError
from wmrl.experiments.claims import Claim, evaluate_claims, what_we_see
from wmrl.experiments.collect import load_table
from wmrl.experiments.curves import compute_to_reach, learning_curves
from wmrl.experiments.plots import CI_LABEL, CI_LOG_LABEL, arm_color
from wmrl.experiments.stats import fmt_ci, mean_ci
from wmrl.presets import run_config
from wmrl.runs import run_label

__all__ = ["REFERENCE", "BudgetReadout", "BudgetRun", "anchor_residuals", "budget_claims", "budget_findings",
           "budget_plan", "budget_table", "compute_at_grpo_score", "minimising_share", "pareto_panel", "reach_panel",
           "readout"]

REFERENCE = "grpo"  # every group executed: the 100% end of the sweep


@dataclass(frozen=True)
class BudgetRun:
    """One (arm, selection rule, realised anchor count) of the sweep and the runs that hold it."""

    arm: str
    selection: str  # "random" (the paper's) or "active"
    requested: tuple[float, ...]  # the shares asked for that realise this count
    fraction: float  # method.anchor_fraction its runs were trained with
    groups: int  # anchor groups a step
    groups_per_step: int
    tag: str | None  # None: the arm's default runs (shared with notebooks 01-04)
    overrides: dict

    @property
    def label(self) -> str:
        """The arm label its runs carry in tables (``wmrl``, ``wmrl~budget-0.25``)."""
        return run_label(self.arm, self.tag)

    @property
    def share(self) -> float:
        """The realised share of executed groups, ``groups / groups_per_step``."""
        return self.groups / self.groups_per_step


def budget_plan(preset: str, arms, shares, active_shares=(), active_arm: str = "wmrl") -> list[BudgetRun]:
    """The runs of a sweep of ``shares`` for each of ``arms`` (random anchors), and of ``active_shares``
    for ``active_arm`` with active anchors, at ``preset``; one :class:`BudgetRun` per realised group count.

    A count realised by the preset's own ``method.anchor_fraction`` is the default runs (random) or
    ``<active_arm>~active-<default fraction>``; any other count is trained once under the first
    share that realises it (``<arm>~budget-<share>``, ``<arm>~active-<share>``). Every variant is
    validated against the configuration first (a wrong arm or share is refused, naming it).
    """
    out: list[BudgetRun] = []
    for selection, names, wanted in (("random", list(arms), list(shares)), ("active", [active_arm], list(active_shares))):
        if not wanted:
            continue
        for arm in names:
            try:
                base = run_config(arm, preset)
            except ConfigError as e:
                raise ConfigError(f"anchor budget at preset {preset!r}: {e}") from None
            m, G = base.method, base.train.groups_per_step
            default_k = AnchorScheduler(m.anchor_fraction, m.anchor_min).n_anchors(G)
            by_count: dict[int, list[float]] = {}
            for share in wanted:
                if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 < share <= 1:
                    raise ConfigError(f"an anchor share must be a number in (0, 1], got {share!r}")
                by_count.setdefault(AnchorScheduler(share, m.anchor_min).n_anchors(G), []).append(float(share))
            for k, requested in sorted(by_count.items()):
                fraction = m.anchor_fraction if k == default_k else requested[0]
                overrides = {} if fraction == m.anchor_fraction else {"method.anchor_fraction": fraction}
                if selection == "active":
                    overrides["method.anchor_selection"] = "active"
                tag = None if not overrides else f"{'budget' if selection == 'random' else 'active'}-{fraction:g}"
                try:
                    run_config(arm, preset, overrides=overrides)
                except ConfigError as e:
                    raise ConfigError(f"anchor budget: {run_label(arm, tag)} at preset {preset!r}: {e}") from None
                out.append(BudgetRun(arm, selection, tuple(requested), fraction, k, G, tag, overrides))
    return out


def budget_table(runs: pd.DataFrame, plan: list[BudgetRun]) -> pd.DataFrame:
    """Per (arm, share) and GRPO: realised share, held-out Avg and charged compute (means, 95% intervals)."""
    rows = []
    entries = [(r.label, r.arm, r.selection, r.requested, r.groups, r.share) for r in plan]
    if REFERENCE in set(runs.arm):
        g = plan[0].groups_per_step if plan else np.nan
        entries.append((REFERENCE, REFERENCE, "every group", (1.0,), g, 1.0))
    for label, arm, selection, requested, groups, share in entries:
        d = runs[runs.arm == label]
        if d.empty:
            raise KeyError(f"no runs of {label!r} in the table (have {sorted(set(runs.arm))})")
        rows.append({"runs": label, "arm": arm, "selection": selection,
                     "requested": ", ".join(f"{100 * s:g}%" for s in requested), "groups/step": groups,
                     "realised share": f"{100 * share:.1f}%",
                     "held-out Avg (%)": fmt_ci(*mean_ci(d.avg * 100)),
                     "execution (CPU-min)": fmt_ci(*mean_ci(d.execution_charged_min), digits=2),
                     "total (CPU-min)": fmt_ci(*mean_ci(d.total_charged_min), digits=2), "seeds": len(d)})
    return pd.DataFrame(rows).set_index("runs")


def compute_at_grpo_score(curves: pd.DataFrame, labels) -> pd.DataFrame:
    """Per label and seed: the compute (s) to reach that seed's GRPO final held-out score, NaN if never.

    Columns ``label, seed, target, reach_s, final_s`` (``final_s``: the run's whole compute, a lower
    bound of what it would need where it never got there); GRPO's own row is included.
    """
    rows = []
    for label in labels:
        t = compute_to_reach(curves, label, REFERENCE)
        for seed, r in t.iterrows():
            rows.append({"label": label, "seed": seed, "target": r.target, "reach_s": r[f"reach_{label}_s"],
                         "final_s": r[f"final_{label}_s"]})
            if label == labels[0]:
                rows.append({"label": REFERENCE, "seed": seed, "target": r.target, "reach_s": r[f"reach_{REFERENCE}_s"],
                             "final_s": np.nan})
    return pd.DataFrame(rows)


def minimising_share(reach: pd.DataFrame) -> dict:
    """Which label needs least compute to reach GRPO's score, and whether the seeds can tell.

    Seeds where the untrained policy already scores GRPO's final score (every label reaches it at
    zero compute) say nothing about cost and are set aside (``uninformative``). Of the others, only
    labels that reach the score at every seed are candidates; the best is the one of smallest
    geometric-mean compute, and each other candidate is compared with it by the seed-paired log
    ratio (95% Student t): those whose interval includes 1 cannot be told from it (``tied``).
    Labels that miss the score are listed in ``missed`` with those seeds. ``resolved``: a best with
    nothing tied, over two seeds or more.
    """
    wide = reach.pivot(index="seed", columns="label", values="reach_s")
    at_start = (wide == 0).all(axis=1)
    out = {"best": None, "tied": [], "ratios": {}, "resolved": False,
           "uninformative": [int(s) for s in wide.index[at_start]]}
    wide = wide[~at_start]
    out["missed"] = {c: [int(s) for s in wide.index[wide[c].isna()]] for c in wide.columns if wide[c].isna().any()}
    complete = [c for c in wide.columns if c not in out["missed"]]
    if wide.empty or not complete:
        return out
    logs = np.log(wide[complete])
    best = logs.mean().idxmin()
    for c in complete:
        if c != best:
            m, lo, hi = np.exp(mean_ci(logs[c] - logs[best]))
            out["ratios"][c] = (float(m), float(lo), float(hi))
            if not lo > 1:
                out["tied"].append(c)
    out.update(best=best, best_s=np.exp(mean_ci(logs[best])), resolved=not out["tied"] and len(wide) > 1)
    return out


def anchor_residuals(runs: pd.DataFrame) -> pd.Series:
    """Per run: the anchors' mean absolute residual of the calibrated world model (``fid_mae_cal``), from
    step 1 on (step 0's anchors are random under either rule), aligned with ``runs``' rows."""
    steps = load_table(runs, "steps")
    means = steps[steps.step >= 1].groupby(["arm", "seed"]).fid_mae_cal.mean()
    return pd.Series([means.get((a, s), np.nan) for a, s in zip(runs.arm, runs.seed)], index=runs.index)


def budget_claims(plan: list[BudgetRun]) -> list[Claim]:
    """The notebook's claims: at each realised count, the world model against the anchors alone; active
    against random anchors (held-out Avg, and the anchors' residual: does the rule find the errors?)."""
    claims = []
    random = {(r.arm, r.groups): r for r in plan if r.selection == "random"}
    for (arm, k), r in sorted(random.items(), key=lambda x: x[0][1]):
        other = random.get(("anchor_only", k))
        if arm == "wmrl" and other is not None and (r.label, other.label) != ("wmrl", "anchor_only"):
            # (the default runs' comparison is notebook 03's Q1: counted once)
            claims.append(Claim(f"B{k}", f"at {k} anchor group(s) a step ({100 * r.share:.1f}%) the world model adds "
                                         "to the anchors: wmrl beats anchor_only", "not tested in the paper",
                                r.label, other.label))
    for r in (r for r in plan if r.selection == "active"):
        base = random.get((r.arm, r.groups))
        if base is None:
            continue
        claims.append(Claim(f"AA{r.groups}", f"at {r.groups} anchor group(s) a step, active anchors beat random ones",
                            "not in the paper (random anchors only)", r.label, base.label))
        claims.append(Claim(f"M{r.groups}", f"at {r.groups} anchor group(s) a step, active anchors land where the "
                                            "calibrated world model errs more (anchor residual, from step 1)",
                            "not in the paper", r.label, base.label, col="anchor_residual", scale=1.0, digits=3,
                            unit="(|calibrated - real|)"))
    return claims


def budget_findings(plan: list[BudgetRun], best: dict, runs: pd.DataFrame) -> list[str]:
    """Sentences about the sweep computed from its numbers: realised shares, the Pareto ends, the minimising share."""
    out = []
    G = plan[0].groups_per_step
    parts = [f"{', '.join(f'{100 * s:g}%' for s in r.requested)} -> {r.groups} of {G} ({100 * r.share:.1f}%)"
             for r in plan if r.selection == "random" and r.arm == plan[0].arm]
    out.append(f"Anchor shares are realised as whole groups of {G} a step (at least one): " + "; ".join(parts) + ".")
    means = runs.groupby("arm")[["avg", "total_charged_min"]].mean()
    pareto = [a for a in means.index if not any((means.avg > means.avg[a]) & (means.total_charged_min <
                                                                            means.total_charged_min[a]))]
    out.append("On the means, the runs no other run beats on both score and compute (the Pareto front): "
               + ", ".join(f"{a} ({100 * means.avg[a]:.1f} points at {means.total_charged_min[a]:.1f} CPU-min)"
                           for a in sorted(pareto, key=lambda a: means.total_charged_min[a])) + ".")
    missed = "; ".join(f"{k} at seed(s) {', '.join(map(str, v))}" for k, v in best["missed"].items())
    if best["uninformative"]:
        out.append(f"At seed(s) {', '.join(map(str, best['uninformative']))} the untrained policy already scores GRPO's "
                   "final held-out score, so those seeds say nothing about the compute needed to reach it.")
    if best["best"] is None:
        out.append("The share that minimises compute at GRPO's final score is not resolved: no run reaches GRPO's "
                   f"final held-out score at every informative seed ({missed or 'no informative seed'}).")
    elif best["resolved"]:  # a best, and every other candidate's paired ratio above 1
        r = min(best["ratios"].items(), key=lambda kv: kv[1][0]) if best["ratios"] else None
        near = f"; the next, {r[0]}, needs {fmt_ci(*r[1], digits=2)}x as much" if r else ""
        out.append(f"{best['best']} reaches GRPO's final score with the least compute "
                   f"({fmt_ci(*[v / 60 for v in best['best_s']], digits=2)} CPU-min){near}"
                   + (f"; never reached: {missed}" if missed else "") + ".")
    else:
        out.append(f"The share that minimises compute at GRPO's final score is not resolved: {best['best']} needs the "
                   f"least on the geometric mean, but the seeds cannot tell it from {', '.join(best['tied'])} "
                   "(95% intervals of the paired compute ratio include 1)"
                   + (f"; never reached GRPO's score: {missed}" if missed else "") + ".")
    return out


@dataclass
class BudgetReadout:
    """What notebook 10 and RESULTS.md read off the sweep's runs (:func:`readout`)."""

    runs: pd.DataFrame  # the plan's runs and grpo's, with ``anchor_residual``
    untrained: pd.DataFrame  # the untrained policy's runs (the learning curves' step 0)
    curves: pd.DataFrame  # learning curves against charged compute
    reach: pd.DataFrame  # compute_at_grpo_score
    best: dict  # minimising_share
    claims: pd.DataFrame  # budget_claims, evaluated
    sentences: list[str]  # budget_findings, then what_we_see of the claims


def readout(runs: pd.DataFrame, plan: list[BudgetRun]) -> BudgetReadout:
    """The sweep read once: ``runs`` holds the plan's runs, grpo's and the untrained policy's (one row
    per arm label and seed, with compute totals)."""
    untrained = runs[runs.arm == "untrained"]
    runs = runs[runs.arm != "untrained"].reset_index(drop=True)
    runs["anchor_residual"] = anchor_residuals(runs)
    curves = learning_curves(pd.concat([runs, untrained]))
    reach = compute_at_grpo_score(curves, [r.label for r in plan])
    best = minimising_share(reach)
    table = evaluate_claims(runs, budget_claims(plan))
    return BudgetReadout(runs, untrained, curves, reach, best, table,
                         budget_findings(plan, best, runs) + what_we_see(table))


MARKERS = {"random": "o", "active": "*", "every group": "s"}  # one marker per selection rule
ACTIVE_COLOR = "tab:olive"  # wmrl with active anchors, beside wmrl's green


def _color(run: BudgetRun | None) -> str:
    return arm_color(REFERENCE) if run is None else ACTIVE_COLOR if run.selection == "active" else arm_color(run.arm)


def pareto_panel(ax, runs: pd.DataFrame, plan: list[BudgetRun], untrained_level: float | None = None) -> None:
    """Held-out Avg against total charged compute: per (arm, rule) a line through its shares, each point
    the mean with 95% intervals over seeds on both axes (seeds as dots), labelled by realised share.
    Compute is positive and drawn on a log axis, so its centre and interval are taken on the log (a
    geometric mean, as in :func:`reach_panel`): an arithmetic interval ran below zero off the axis."""
    series = list(dict.fromkeys((r.arm, r.selection) for r in plan)) + [(REFERENCE, "every group")]
    for arm, selection in series:
        members = [r for r in plan if (r.arm, r.selection) == (arm, selection)] or [None]
        xs, ys = [], []
        for r in members:
            d = runs[runs.arm == (r.label if r else REFERENCE)]
            mx, xlo, xhi = np.exp(mean_ci(np.log(d.total_charged_min)))
            my, ylo, yhi = mean_ci(d.avg * 100)
            color = _color(r)
            ax.plot(d.total_charged_min, d.avg * 100, "o", ms=3, color=color, mfc="white", alpha=0.7)
            ax.errorbar([mx], [my], xerr=None if np.isnan(xlo) else [[mx - xlo], [xhi - mx]],
                        yerr=None if np.isnan(ylo) else [[my - ylo], [yhi - my]], fmt=MARKERS[selection], ms=8,
                        color=color, capsize=3)
            ax.annotate(f"{100 * (r.share if r else 1):.0f}%", (mx, my), textcoords="offset points", xytext=(5, 5),
                        fontsize=8, color=color)
            xs.append(mx), ys.append(my)
        ax.plot(xs, ys, "-", color=color, lw=1, label=arm if arm == REFERENCE else f"{arm} ({selection} anchors)")
    if untrained_level is not None:
        ax.axhline(untrained_level, color=arm_color("untrained"), ls="--", lw=1, label="untrained (mean)")
    handles, _ = ax.get_legend_handles_labels()
    handles += [plt.Line2D([], [], color="k", marker="o",
                           label=f"mean, {CI_LABEL} on both axes (compute: on the log)"),
                plt.Line2D([], [], ls="", marker="o", ms=3, color="k", mfc="white", label="one seed")]
    ax.legend(handles=handles, loc="best")
    ax.set_xscale("log")
    ax.xaxis.set_minor_formatter(NullFormatter())  # labelled minor ticks overlap within a decade
    ax.set(xlabel="charged compute per run (CPU-minutes, log scale)", ylabel="held-out Avg (percentile points)",
           title="Score against compute, by anchor share (labels: realised share)")


def reach_panel(ax, reach: pd.DataFrame, runs: pd.DataFrame, plan: list[BudgetRun]) -> None:
    """Per run label, the compute to reach GRPO's final score (``anchor_budget.compute_at_grpo_score``): geometric mean
    with its 95% interval over the seeds that reach it, each seed, and a hollow marker at a run's whole
    compute where a seed never reached it."""
    by_label = {r.label: r for r in plan}
    order = [REFERENCE] + [r.label for r in plan]
    drawn = 0
    for i, label in enumerate(order):
        d, color = reach[reach.label == label], _color(by_label.get(label))
        got = d[d.reach_s > 0]
        if len(got):
            m, lo, hi = np.exp(mean_ci(np.log(got.reach_s / 60)))
            ax.errorbar([i], [m], yerr=None if np.isnan(lo) else [[m - lo], [hi - m]], fmt="s", color=color, capsize=4)
            ax.plot(np.full(len(got), i), got.reach_s / 60, "o", ms=3, color=color, mfc="white")
        miss = runs[(runs.arm == label) & runs.seed.isin(d.seed[d.reach_s.isna()])]
        ax.plot(np.full(len(miss), i), miss.total_charged_min, "v", ms=6, color=color, mfc="none")
        drawn += len(got) + int((miss.total_charged_min > 0).sum())
    at_start = sorted(set(reach.seed[reach.reach_s == 0]))
    if at_start:  # nothing to say about cost there: the untrained policy already scores GRPO's final score
        ax.text(0.01, 0.01, f"left out: seed(s) {', '.join(map(str, at_start))}, where the untrained policy already "
                "scores GRPO's final score", transform=ax.transAxes, fontsize=7, color="tab:red", va="bottom")
    ax.set_xticks(range(len(order)), [f"{lab}\n{100 * (by_label[lab].share if lab in by_label else 1):.0f}%"
                                      for lab in order], rotation=20, fontsize=7)
    if drawn:
        ax.set_yscale("log")
    ax.legend(handles=[plt.Line2D([], [], color="k", marker="s", label=f"geometric mean, {CI_LOG_LABEL}"),
                       plt.Line2D([], [], ls="", marker="o", ms=3, color="k", mfc="white", label="one seed"),
                       plt.Line2D([], [], ls="", marker="v", color="k", mfc="none",
                                  label="seed that never reached it (at its whole compute)")], loc="best")
    ax.set(xlabel="runs (realised anchor share)", ylabel="compute to reach GRPO's final score (CPU-min, log scale)",
           title="Compute at GRPO's final held-out score, per share")
