r"""The paper's claims as seed-paired tests, their verdicts, and sentences computed from them.

A claim is a comparison of two arms that the paper says points one way (``expect``). Per seed it
gives one paired value (a difference in percentile points, or a log ratio); the table reports
the mean with its 95% interval, the difference the seeds could detect (80% power), the raw
verdict and the verdict after Holm's correction over the claims of the table:

- **reproduced**: the interval lies on the paper's side of the null (after Holm: the adjusted
  p-value is below 5% and the estimate is on the paper's side);
- **fails**: it lies on the other side;
- **inconclusive**: it straddles the null (always so with one seed).

:func:`what_we_see` writes a notebook's closing sentences from such a table, so that no notebook
text can say more, or other, than its numbers.

The claim lists of the paper's tables (:data:`MAIN`, :data:`ABLATION`, :data:`ANCHOR_ONLY`, :data:`VLA`) are
defined here, once, with the paper's numbers taken from :mod:`wmrl.experiments.paper`; a notebook with
claims of its own keeps them beside it (``notebooks/_*.py``), and ``RESULTS.md`` reads what each declared.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from wmrl.experiments import paper
from wmrl.experiments.curves import learning_curves
from wmrl.experiments.stats import (
    ALPHA,
    POWER,
    fmt_ci,
    holm,
    mean_ci,
    min_detectable_difference,
    paired_values,
    t_test_p,
    verdict,
)

__all__ = ["ABLATION", "ANCHOR_ONLY", "MAIN", "VLA", "Claim", "MatchedCompute", "claims_display",
           "evaluate_claims", "what_we_see"]


@dataclass(frozen=True)
class Claim:
    """A paper claim as the seed-paired comparison ``a (op) b`` expected ``expect`` its null.

    ``op="diff"``: ``(a - b) * scale`` (held-out Avg is a fraction; ``scale=100`` gives percentile
    points, as the paper reports); ``op="ratio"``: ``a / b``, tested as ``log(a / b)`` against 0.
    """

    id: str
    statement: str
    paper: str  # the paper's numbers behind the claim, for the reader
    a: str
    b: str
    col: str = "avg"
    expect: str = ">"
    op: str = "diff"
    scale: float = 100.0
    digits: int = 1
    unit: str = "points"  # a ratio's is "x", whatever is given
    #: what to say about seeds where the paired value is undefined ({a}, {b}, {seeds} are filled in)
    undefined: str = "the paired value is undefined at seed(s) {seeds}"

    def __post_init__(self):
        if self.op == "ratio":  # a ratio is a factor, never points (the page's detectable ranges read the unit)
            object.__setattr__(self, "unit", "x")

    def per_seed(self, runs: pd.DataFrame) -> pd.Series:
        """The paired value at each seed (NaN where it is undefined)."""
        return paired_values(runs, self.a, self.b, self.col, self.scale, self.op)

    @property
    def label(self) -> str:
        return f"{self.a} {'-' if self.op == 'diff' else '/'} {self.b}"

    def natural(self, v: float) -> float:
        """A value on the test's scale back on the reader's (a log ratio becomes a ratio)."""
        return float(np.exp(v)) if self.op == "ratio" else float(v)


@dataclass(frozen=True)
class MatchedCompute(Claim):
    """Held-out Avg at matched compute: ``a``'s evaluations against ``b``'s learning curve at the same compute.

    Per seed, for each of ``a``'s evaluations at steps >= ``first_step`` (None: its last evaluation
    only): ``a``'s held-out Avg minus ``b``'s, read off ``b``'s curve (held-out Avg against charged
    compute, the untrained evaluation at 0, linear between evaluations, ``b``'s last value beyond its
    last) at the charged compute ``a`` had spent; the paired value is their mean, in points. Positive:
    ``a`` scores higher than ``b`` does at the same compute. Unlike the compute to reach a score, which
    ``a`` may never reach within its run, it is defined at every seed.
    """

    first_step: int | None = None
    col: str = "matched_compute"

    def per_seed(self, runs: pd.DataFrame) -> pd.Series:
        curves = learning_curves(runs[runs.arm.isin([self.a, self.b, "untrained"])])
        out = {}
        for seed in sorted(set(curves.seed[curves.arm == self.a]) & set(curves.seed[curves.arm == self.b])):
            ca = curves[(curves.arm == self.a) & (curves.seed == seed)].sort_values("step")
            ca = ca.tail(1) if self.first_step is None else ca[ca.step >= self.first_step]
            cb = curves[(curves.arm == self.b) & (curves.seed == seed)].sort_values("compute_s")
            against = np.interp(ca.compute_s, cb.compute_s, cb.avg)
            out[seed] = float(np.mean(ca.avg.to_numpy() - against)) * self.scale / 100.0
        if not out:
            raise KeyError(f"arms {self.a!r} and {self.b!r} share no seed in the curves")
        return pd.Series(out)


def _share(x: str) -> str:
    return f"{x:.1f}x"


MAIN = (
    Claim("C0", "GRPO improves on the untrained agent", paper.versus("grpo", "untrained"), "grpo", "untrained"),
    Claim("C1-C2", "WMRL beats GRPO on held-out Avg", paper.versus("wmrl", "grpo"), "wmrl", "grpo"),
    MatchedCompute("C3", "WMRL beats GRPO at matched compute (its final score against GRPO's curve at its compute)",
                   f"GPU-hours GRPO / WMRL = {_share(paper.speedup('4B'))} (4B), {_share(paper.speedup('9B'))} (9B) "
                   "to reach GRPO's score", "wmrl", "grpo"),
    Claim("C4", "a pure world model falls below GRPO", paper.versus("wm", "grpo"), "wm", "grpo", expect="<"),
    Claim("C4'", "corrections are load-bearing: WMRL beats the pure world model", paper.versus("wmrl", "wm"),
          "wmrl", "wm"),
)

ABLATION = (
    Claim("C22-IVD", "IVD alone beats neither correction", paper.ablation_versus("ivd", "mix"), "ivd", "mix"),
    Claim("C22-OD", "OD alone beats neither correction", paper.ablation_versus("od", "mix"), "od", "mix"),
    Claim("C22-both", "both corrections beat neither", paper.ablation_versus("wmrl", "mix"), "wmrl", "mix"),
    Claim("C22-order", "OD alone beats IVD alone", paper.ablation_versus("od", "ivd"), "od", "ivd"),
    Claim("C22-add", "IVD adds to OD: both beat OD alone", paper.ablation_versus("wmrl", "od"), "wmrl", "od"),
    Claim("C22-mix", "the uncorrected mix is below GRPO", paper.ablation_versus("mix", "grpo"), "mix", "grpo",
          expect="<"),
    Claim("C23", "OD alone beats real-execution GRPO", paper.ablation_versus("od", "grpo"), "od", "grpo"),
)

ANCHOR_ONLY = (
    Claim("Q1", "the world model adds information beyond the anchors at the same execution budget",
          "not tested in the paper", "wmrl", "anchor_only"),
    Claim("Q2", "anchor-only GRPO, the anchors alone, is below full GRPO", "not tested in the paper",
          "anchor_only", "grpo", expect="<"),
)


def _table2(a: str, b: str) -> str:
    t = paper.TABLE2.set_index("arm").overall
    return f"{t[a]:.1f} vs {t[b]:.1f} ({t[a] - t[b]:+.1f})"


VLA = tuple(Claim(f"T2-{a}-{b}", f"{a} beats {b} on Overall success", _table2(a, b), a, b, col="overall")
            for a, b in (("grpo", "sft"), ("wm", "sft"), ("wmrl", "sft"), ("wmrl", "grpo"), ("wmrl", "wm")))


def evaluate_claims(runs: pd.DataFrame, claims, alpha: float = ALPHA, power: float = POWER) -> pd.DataFrame:
    """One row per claim: the paired estimate, its interval, detectable difference, p-values and verdicts.

    Columns (numbers on the reader's scale: points, or a ratio): ``statement``, ``paper``,
    ``comparison``, ``mean``, ``lo``, ``hi``, ``seeds``, ``mdd`` (the detectable difference, or
    for a ratio the detectable factor), ``p``, ``verdict``, ``p_holm``, ``verdict_holm``, ``note``;
    and the claim's ``expect``, ``op``, ``digits``, ``unit`` for rendering. Holm's family is the
    claims of this call; a claim without a p-value counts in it as p = 1.
    """
    rows = []
    for c in claims:
        v = c.per_seed(runs)
        missing = v[v.isna() | ~np.isfinite(v)]
        v = v.drop(missing.index)
        m, lo, hi = mean_ci(v) if len(v) else (np.nan, np.nan, np.nan)
        sd = float(v.std(ddof=1)) if len(v) > 1 else float("nan")
        mdd = min_detectable_difference(sd, len(v), alpha, power)
        p = t_test_p(v) if missing.empty else float("nan")
        note = c.undefined.format(a=c.a, b=c.b, seeds=", ".join(map(str, missing.index))) if len(missing) else ""
        rows.append({"claim": c.id, "statement": c.statement, "paper": c.paper, "comparison": c.label,
                     "mean": c.natural(m), "lo": c.natural(lo), "hi": c.natural(hi), "seeds": len(v),
                     "mdd": c.natural(mdd), "p": p,
                     "verdict": verdict(lo, hi, c.expect) if missing.empty else "inconclusive",
                     "note": note, "expect": c.expect, "op": c.op, "digits": c.digits, "unit": c.unit, "_m": m})
    if not rows:  # no claim has both its arms here (e.g. a smoke run of two arms): an empty table, same columns
        return pd.DataFrame(columns=["claim", "statement", "paper", "comparison", "mean", "lo", "hi", "seeds", "mdd",
                                     "p", "verdict", "note", "expect", "op", "digits", "unit", "p_holm",
                                     "verdict_holm"]).set_index("claim")
    t = pd.DataFrame(rows).set_index("claim")
    t["p_holm"] = holm(t.p.fillna(1.0))
    side = np.where(t.expect == ">", t._m > 0, t._m < 0)
    sig = t.p_holm < alpha
    t["verdict_holm"] = np.where(sig & side, "reproduced", np.where(sig & ~side, "fails", "inconclusive"))
    return t.drop(columns="_m")


def _fmt_row(r) -> tuple[str, str]:
    if r.op == "ratio":
        ours = fmt_ci(r["mean"], r.lo, r.hi, r.digits, "x") if np.isfinite(r["mean"]) else "-"
        mdd = f"x{r.mdd:.2f}" if np.isfinite(r.mdd) else "-"
    else:
        ours = fmt_ci(r["mean"], r.lo, r.hi, r.digits) if np.isfinite(r["mean"]) else "-"
        mdd = f"{r.mdd:.{r.digits}f}" if np.isfinite(r.mdd) else "-"
    return f"{r.comparison} = {ours}", mdd


def claims_display(table: pd.DataFrame) -> pd.DataFrame:
    """The printable claims table: paper, ours with its 95% interval, detectable difference, both verdicts."""
    out = pd.DataFrame(index=table.index)
    out["statement"], out["paper"] = table.statement, table.paper
    formatted = [_fmt_row(r) for _, r in table.iterrows()]
    out["ours (95% CI)"] = [f for f, _ in formatted]
    out["seeds"] = table.seeds
    out["detectable (80%)"] = [d for _, d in formatted]
    out["verdict"], out["verdict (Holm)"] = table.verdict, table.verdict_holm
    if table.note.astype(bool).any():
        out["note"] = table.note
    return out


def _direction(r) -> str:
    m = r["mean"] - (1.0 if r.op == "ratio" else 0.0)
    if not np.isfinite(m) or m == 0:
        return "has no direction"
    return "points the claim's way" if (m > 0) == (r.expect == ">") else "points the other way"


def what_we_see(table: pd.DataFrame) -> list[str]:
    """Sentences computed from :func:`evaluate_claims`: what each comparison shows, then a tally."""
    out = []
    k = len(table)
    for cid, r in table.iterrows():
        ours, mdd = _fmt_row(r)
        unit = "" if r.op == "ratio" else f" {r.unit}"
        if r.note:
            out.append(f"{cid} ({r.statement}): not resolved: {r.note}"
                       + (f"; at the other seeds {ours}." if r.seeds else "."))
            continue
        if r.verdict == "inconclusive":
            detect = f"; {r.seeds} seeds detect only a true difference of {mdd}{unit} or more (80% power)" \
                if mdd != "-" else "; one seed cannot resolve anything"
            out.append(f"{cid} ({r.statement}): not resolved. {ours}{unit} over {r.seeds} seeds "
                       f"{_direction(r)}, but the interval includes {'1' if r.op == 'ratio' else '0'}{detect}.")
            continue
        holm_note = ("and it holds after Holm's correction over the table's claims" if r.verdict_holm == r.verdict
                     else f"but not after Holm's correction over the table's {k} claims")
        word = "reproduced" if r.verdict == "reproduced" else "fails: the data point the other way"
        out.append(f"{cid} ({r.statement}): {word}. {ours}{unit} over {r.seeds} seeds, {holm_note}.")
    counts = table.verdict.value_counts()
    holm_counts = table.verdict_holm.value_counts()
    out.append(f"Of {k} claims, {counts.get('reproduced', 0)} reproduced, {counts.get('fails', 0)} fail and "
               f"{counts.get('inconclusive', 0)} are not resolved at this size (after Holm's correction: "
               f"{holm_counts.get('reproduced', 0)} / {holm_counts.get('fails', 0)} / "
               f"{holm_counts.get('inconclusive', 0)}).")
    return out
