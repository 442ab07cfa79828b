"""``RESULTS.md``: every claim of the paper, ours beside it, and what each notebook shows, from ``results/``.

Written by ``python -m wmrl.reproduce`` (also with ``--redraw-only``) after the notebooks are redrawn, from
what each notebook declared (:func:`~wmrl.experiments.notebook.save_claims`: its claims table and
closing sentences; :func:`~wmrl.experiments.notebook.save_findings`: sentences alone), so the page,
the notebooks and the numbers agree and a new notebook reaches the page with no edit here. The noise
section is computed here, from the runs. The page carries no date or
commit (those are in each result's provenance), so redrawing unchanged results rewrites it identically.
"""

from __future__ import annotations

import json
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from wmrl import record
from wmrl.campaigns import CAMPAIGNS, selection
from wmrl.experiments import claims, noise
from wmrl.experiments.collect import load_runs
from wmrl.experiments.costs import add_totals
from wmrl.experiments.notebook import REDRAW_PRESET, declared_claims
from wmrl.presets import notebook_params

__all__ = ["FINDINGS_PAGE", "README_BEGIN", "README_END", "defined", "findings_page", "in_short", "reproducibility", "results_page",
           "verdict", "write_readme_summary", "write_results_page"]

#: The primary family of claims: the notebook whose claims answer "does WMRL work at this scale?", declared
#: before its runs (``notebooks/_primary.py``); until its claims exist, Table 1's (:data:`TABLE1`) stand in.
PRIMARY = "13_primary"
TABLE1 = "01_main_table"
#: The README's block that :func:`write_readme_summary` owns (the front door's summary of the results).
README_BEGIN = "<!-- results:begin (written by python -m wmrl.reproduce from results/; do not edit) -->"
README_END = "<!-- results:end -->"


def in_short(tables: list[pd.DataFrame], seeds) -> str:
    """One paragraph over every claims table: how many claims each verdict got (before and after
    Holm's correction, which is per notebook; the reproduced and failing ones by name) and the
    detectable differences the seeds allowed."""
    if not tables:
        return "No claims could be tested yet: run `python -m wmrl.reproduce`."
    t = pd.concat(tables)
    ids = {v: ", ".join(t.index[t.verdict == v]) for v in ("reproduced", "fails", "inconclusive")}
    n, holm = t.verdict.value_counts(), t.verdict_holm.value_counts()
    points = t[t.unit == "points"].mdd.dropna()  # not ratios, nor claims on another scale (a residual)
    r, f, i = (n.get(v, 0) for v in ids)
    text = (f"Of the {len(t)} claims tested on {len(seeds)} seeds, {r} {_be(r)} reproduced "
            f"({ids['reproduced'] or 'none'}), {f} {'fails' if f == 1 else 'fail'} "
            f"({ids['fails'] or 'none'}) and {i} {_be(i)} inconclusive; after Holm's "
            f"correction within each notebook: {holm.get('reproduced', 0)} reproduced, {holm.get('fails', 0)} fail, "
            f"{holm.get('inconclusive', 0)} inconclusive.")
    if len(points):
        text += (f" The seeds detect (80% power) paired differences of {points.min():.1f} to {points.max():.1f} points; "
                 "the paper's effects are 1-5 points.")
    return text


def _span(seeds) -> str:
    seeds = sorted(seeds)
    return f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2 else str(seeds)


def _be(n: int) -> str:
    return "is" if n == 1 else "are"


def _cell(text) -> str:
    return str(text).replace("|", "\\|")


def _train_runs(results: Path, preset: str, seeds) -> pd.DataFrame | None:
    try:
        return add_totals(load_runs(preset, results, seeds=seeds))
    except FileNotFoundError:
        return None


NOT_IN_PAPER = re.compile(r"^(not tested in the paper|not in the paper|beyond the paper)[;:]? *")


def _paper_cell(text: str) -> str:
    """``-`` for a claim the paper does not test (what follows the phrase is kept: ``- (Assumption 6 is assumed)``)."""
    rest = NOT_IN_PAPER.sub("", str(text), count=1)
    return str(text) if rest == str(text) else ("- " + rest).strip()


def _claims_rows(table: pd.DataFrame, notebook: str, looks: int | None = None) -> list[str]:
    """The page's rows of one notebook's claims. In a sequential design of ``looks`` looks, a claim not resolved
    before the last look is "open after look N", not inconclusive: a later look may still resolve it."""
    shown = claims.claims_display(table)
    # a sequential design's verdict (notebook 07's: Holm at the look's level, equivalence too) is its ``verdict``
    col = "verdict (Holm)" if _declared(table) and "p_tost" not in table.columns else "verdict"
    out = []
    for i, (cid, r) in enumerate(shown.iterrows()):
        said = r[col]
        if looks is not None and said == "inconclusive" and int(table.look.iloc[i]) < looks:
            said = f"open after look {int(table.look.iloc[i])}"
        out.append("| " + " | ".join(_cell(v) for v in (
            cid, r.statement, _paper_cell(r.paper), r["ours (95% CI)"], r["detectable (80%)"], said,
            f"[{notebook}](notebooks/{notebook}.ipynb)")) + " |")
    return out


#: The preset parameter that lists each sequential design's looks, by notebook.
LOOKS = {"07_llm_agent": "LLM_LOOKS", "15_redeclared": "REDECLARED_LOOKS"}


def _looks(table: pd.DataFrame, notebook: str, params: dict) -> int | None:
    """How many looks ``notebook``'s sequential design declares; None for a design of one look."""
    return len(params[LOOKS[notebook]]) if notebook in LOOKS and "look" in table.columns else None


PRIMARY_HEADING = "## The primary family"
#: Notebook 13's declared runs' verdicts under ``results/`` (``notebooks/_primary.py``: ``declared_verdicts``).
DECLARED = "primary/{preset}/declared.parquet"
#: Notebook 13's sizing from the primary family's paired spreads: the one seeds-needed figure the pages quote.
SEEDS_NEEDED = "primary/{preset}/seeds_needed.parquet"
#: Notebook 13's late-Avg claims per held-out task (section 1b): the tasks a claim generalises to.
PER_TASK = "primary/{preset}/per_task.parquet"
REDECLARED = "15_redeclared"
CLAIMS_HEADER = ["| claim | statement | paper | ours (95% CI) | detectable | verdict | notebook |",
                 "|---|---|---|---|---|---|---|"]
#: Notebooks whose claims are about runs of another agent (the LLM's), listed apart and not counted in the summary.
OWN_RUNS = ("07_llm_agent",)
#: Notebook 07's earlier designs, recomputed with the seed as the unit (``notebooks/_llm_agent.py``: ``earlier_designs``).
EARLIER = "llm/{LLM_PRESET}/earlier.parquet"
#: Notebook 07's open claims with the seeds and hours that would resolve them (``_llm_agent.TO_RESOLVE_COLUMNS``).
TO_RESOLVE = "llm/{LLM_PRESET}/to_resolve.parquet"
#: The page's families after the primary one: (heading, what it holds, its notebooks in order).
FAMILIES = (
    ("The paper's other tables", "Table 3's ablation and Table 2's embodied transfer.",
     ("02_ablations", "06_vla")),
    ("Beyond the paper", "What the paper does not measure, and every new ablation.",
     ("03_anchor_only", "08_fidelity_dial", "09_exploit_stress", "10_anchor_budget", "12_confirmatory")),
    ("Exploratory", "Is the method in its regime here? Chosen after seeing the runs: leads, not tests.",
     ("11_method_regime",)),
    ("The language-model agent",
     ("[07_llm_agent](notebooks/07_llm_agent.ipynb): SmolLM2-135M-Instruct, GRPO on TRL, preset `{LLM_PRESET}`, "
     "seeds {llm_seeds} in looks after {llm_looks} seeds, every run from one kept warm start; not counted above (its own "
     "runs). Seed-paired, Holm within the primary family (L1) and the rest, at each look's level."), OWN_RUNS),
)
FINDINGS_PAGE = "FINDINGS.md"


@dataclass
class _Read:
    """Everything the two pages say, computed once from ``results/``."""

    preset: str
    params: dict
    tables: dict = field(default_factory=dict)  # notebook -> its claims table
    paragraphs: dict = field(default_factory=dict)  # notebook -> (title, sentences)
    noise: list = field(default_factory=list)
    reproducibility: str = ""
    declared: pd.DataFrame | None = None  # the primary family's declared runs (notebook 13, section 0)
    per_task: pd.DataFrame | None = None  # its claims per held-out task (notebook 13, section 1b)
    earlier: pd.DataFrame | None = None  # notebook 07's earlier designs
    to_resolve: pd.DataFrame | None = None  # notebook 07's open claims and what would resolve them


def _read(results: str | Path, preset: str) -> _Read:
    results = Path(results)
    params = notebook_params(preset)
    seeds = params["SEEDS"]
    out = _Read(preset, params, reproducibility=reproducibility(results))
    if (kept := results / DECLARED.format(preset=preset)).is_file():
        out.declared = pd.read_parquet(kept)
    if (kept := results / PER_TASK.format(preset=preset)).is_file():
        out.per_task = pd.read_parquet(kept)
    if (kept := results / EARLIER.format(**params)).is_file():
        out.earlier = pd.read_parquet(kept)
    if (kept := results / TO_RESOLVE.format(**params)).is_file():
        out.to_resolve = pd.read_parquet(kept)
    runs = _train_runs(results, preset, seeds)
    paragraphs, tables = out.paragraphs, out.tables
    for notebook, d in declared_claims(results, preset).items():  # every notebook's, new ablations' too
        if not d.table.empty:
            tables[notebook] = d.table
        paragraphs[notebook] = (d.title, d.sentences if d.sentences or d.table.empty else claims.what_we_see(d.table))
    if runs is not None and "untrained" in set(runs.arm) and runs[runs.arm == "untrained"].seed.nunique() > 1:
        sized = results / SEEDS_NEEDED.format(preset=preset)
        out.noise = _noise_section(runs, pd.read_parquet(sized) if sized.is_file() else None)
    return out


def _listed(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


#: torch's float32 kernels on the CPUs that recorded the runs whose provenance predates the stamp
#: (:func:`wmrl.provenance.float32_kernels`): AVX-512 machines.
UNSTAMPED_KERNELS = "AVX512"


def recorded_kernels(campaign: str, results: str | Path) -> list[str]:
    """The float32 kernel classes (``AVX512``, ``AVX2``) of the CPUs that trained ``campaign``'s grammar runs, from
    their provenance: a run replays to the bit on a CPU of the recording CPU's class."""
    found = set()
    for folder in selection(campaign, results, REDRAW_PRESET):
        for path in folder.rglob("summary.json"):
            if Path(results, "runs") not in path.parents:
                machine = json.loads(path.read_text()).get("provenance", {}).get("machine", {})
                found.add(machine.get("float32_kernels", UNSTAMPED_KERNELS))
    return sorted(found) or [UNSTAMPED_KERNELS]


def _kernels_said(recorded: list[str], results) -> str:
    """``AVX-512`` when every record was made on one class, else each class with its campaigns."""
    by = {}
    for c in recorded:
        by.setdefault(" or ".join(k.replace("AVX512", "AVX-512") for k in recorded_kernels(c, results)), []).append(c)
    if len(by) == 1:
        return next(iter(by))
    return "; ".join(f"{k} for {_listed(cs)}" for k, cs in sorted(by.items(), key=lambda kv: -len(kv[1])))


def reproducibility(results: str | Path, brief: bool = False) -> str:
    """One paragraph on how far the committed runs reproduce: which campaigns carry their execution record
    (``results/executions/<campaign>.jsonl.gz``, replayable to the bit but for float32 rounding), and how
    each one's last fresh retraining agreed with the runs it replaced (``<campaign>.agreement.json``, kept by
    ``python -m wmrl.reproduce``; one whose record has changed since, with runs retrained into it, is said to be
    an earlier record's); "" when no campaign carries a record. ``brief``: the README's two sentences."""
    folder = Path(results) / "executions"
    recorded = sorted(p.name.removesuffix(".jsonl.gz") for p in folder.glob("*.jsonl.gz"))
    if not recorded:
        return ""
    many = len(recorded) > 1
    # campaigns with committed runs but no record (one declared before its first look has neither)
    others = [c for c in CAMPAIGNS if c not in recorded and selection(c, results, REDRAW_PRESET)]
    kept = {c: json.loads(p.read_text()) for c in recorded if (p := folder / f"{c}.agreement.json").is_file()}
    earlier = {c for c, a in kept.items()  # runs added to or replaced in the record since its retraining
               if a.get("record_sha256") not in (None, record.digest(folder / f"{c}.jsonl.gz"))}
    if brief:
        fresh = ""
        if kept:
            within = _listed([f"{a['within_1pt']} of {a['runs']}"
                              + (f" ({c}{', an earlier record' if c in earlier else ''})" if len(kept) > 1
                                 else " (an earlier record)" if c in earlier else "")
                              for c, a in kept.items()])
            changed = _listed([f"{len(a['verdicts_changed'])} of {a['verdicts']}" for a in kept.values()])
            fresh = f"; retrained fresh, {within} runs came within 1 point, and {changed} verdicts changed"
        cpu = f"on a CPU of the recording CPU's class ({_kernels_said(recorded, results)})"
        if not others:
            return (f"**Reproducibility.** Every campaign replays from its execution record {cpu}, "
                    f"as recorded, every score, verdict and figure to the bit{fresh} ([FINDINGS.md](FINDINGS.md)).")
        return (f"**Reproducibility.** The {_listed(recorded)} {'campaigns replay' if many else 'campaign replays'} "
                f"from {'their' if many else 'its'} execution record {cpu}, as recorded, every score, "
                f"verdict and figure to the bit{fresh}; the {_listed(others)} "
                f"{'campaigns keep' if len(others) > 1 else 'campaign keeps'} none ([FINDINGS.md](FINDINGS.md)).")
    whose = "campaigns'" if many else "campaign's"
    said = [(f"**Reproducibility.** The {_listed(recorded)} {whose} runs carry their execution record "
             "(`results/executions/`): `python -m wmrl.reproduce --campaign C --replay-executions` retrains them "
             f"from it, executing nothing. On a CPU whose float32 kernels are the recording CPU's "
             f"({_kernels_said(recorded, results)}), every grammar-agent score, verdict, table and figure comes back "
             "bit for bit; on another the policy's "
             "float32 training diagnostics (loss, KL, entropy) come back to rounding, until its last bits flip a "
             "sampled decision and the replay stops, naming the run."
             + (" Notebook 06's VLA runs come back bit for bit too, on every x86-64 CPU with AVX2 and FMA: their "
                "networks compute in float64 with IEEE basic operations only (`wmrl.vla.exact`) and their "
                "observations hold no BLAS result, so the contact simulator, which turns a last-bit difference "
                "into another episode, sees the same states and actions wherever it runs (checked under other "
                "torch, MKL, OpenBLAS and NumPy code paths; glibc's trigonometry, which MuJoCo calls, differs on "
                "CPUs without FMA)." if "core" in recorded else ""))]
    for campaign, a in kept.items():
        changed = a["verdicts_changed"]
        runs = (f"the {a['runs']} runs of an earlier record of the {campaign} campaign (runs were retrained into it "
                "since)" if campaign in earlier else f"the {campaign} campaign's {a['runs']} runs")
        sentence = (f"Retrained fresh, {a['within_1pt']} of {runs} came within 1 "
                    f"point of the held-out Avg of the runs they replaced (median absolute difference "
                    f"{a['median_abs_delta']:.1f} points) and {len(changed)} of its {a['verdicts']} verdicts changed"
                    + (f" ({'; '.join(changed)})" if changed else ""))
        if a.get("scripts") is not None:
            sentence += (f"; {a['outcomes_changed']} of the {a['scripts']} scripts both records executed changed "
                         "outcome")
        said.append(sentence + ".")
    if others:
        whose = "campaigns'" if len(others) > 1 else "campaign's"
        said.append(f"The {_listed(others)} {whose} committed runs predate the record "
                    "and reproduce approximately ([docs/reproducibility.md](docs/reproducibility.md)).")
    else:
        said.append("Every campaign carries its record ([docs/reproducibility.md](docs/reproducibility.md)).")
    return " ".join(said)


def _declared(table: pd.DataFrame) -> bool:
    """Whether a claims table is the primary family's, whose verdicts are the declared ones (Holm at its look)."""
    return "look" in table.columns


def declared_sentence(declared: pd.DataFrame, seeds) -> str:
    """What the primary family's declared runs say of WMRL against GRPO, run by run (Holm's verdicts)."""
    head = declared[declared.comparison.str.startswith("wmrl - grpo") & ~declared.claim.str.contains("C3")]
    says = {"reproduced": "WMRL beats GRPO", "fails": "WMRL falls below GRPO",
            "inconclusive": "WMRL cannot be told apart from GRPO"}
    verdicts = sorted(set(head.verdict_holm))
    values = [f"{r['mean']:.1f} [{r.lo:.1f}, {r.hi:.1f}]" for _, r in head.iterrows()]
    said = (f"{says[verdicts[0]]} in {'both' if len(values) == 2 else 'all'} runs" if len(verdicts) == 1
            else "its runs disagree")
    return (f"As declared (notebook 13, seeds {_span(seeds)}, world model fitted on the training tasks), {said}: "
            f"{head.comparison.iloc[0]} = {' and '.join(values)} ({head.claim.iloc[0]}, "
            f"{' / '.join(head.verdict_holm)} after Holm).")


def tasks_sentence(per_task: pd.DataFrame) -> str:
    """The held-out tasks every seed is scored on, and how far WMRL against GRPO varies across them."""
    tasks = sorted(set(per_task.task))
    head = per_task[per_task.comparison == "wmrl - grpo"]
    spread = (f"; per task, {head.claim.iloc[0]} ({head.comparison.iloc[0]}) runs from {head['mean'].min():.1f} to "
              f"{head['mean'].max():.1f} points (section 1b)" if len(head) else "")
    return f"Every seed is scored on the same {len(tasks)} held-out tasks ({', '.join(tasks)}){spread}."


def redeclared_sentence(tables: dict, params: dict) -> str:
    """Where notebook 15's family, declared again at seeds no run had used, stands."""
    where = f"notebook 15, seeds {_span(params['REDECLARED_SEEDS'])}"
    t = tables.get(REDECLARED)
    if t is None or t.empty:
        return f"Declared again at seeds no run had used ({where}): no look is trained yet."
    n = t.verdict.value_counts()
    done = ", every claim resolved" if (t.verdict != "inconclusive").all() else ""
    said = (f"Declared again at new seeds ({where}), look {int(t.look.max())}{done}: "
            + ", ".join(f"{n.get(v, 0)} {v}" for v in ("reproduced", "fails", "equivalent", "inconclusive"))
            + f" of {len(t)} claims")
    t = t if "claim" in t.columns else t.reset_index()  # a declared table is indexed by claim
    head = t[t.claim.astype(str).str.endswith("C1")] if {"claim", "comparison"} <= set(t.columns) else t.iloc[:0]
    if len(head):  # the headline, WMRL against GRPO, with the level it is tested at
        r = head.iloc[0]
        said += (f"; {r.claim} {r.comparison} = {r['mean']:.1f} [{r.lo:.1f}, {r.hi:.1f}], "
                 + (f"{r.verdict}" if r.verdict != "inconclusive" else f"open at level {r.alpha_look:.4f}"))
    return said + f" ([{REDECLARED}](notebooks/{REDECLARED}.ipynb))."


def verdict(table: pd.DataFrame | None, seeds) -> str:
    """Two sentences that answer "does WMRL work at this scale?" from the primary family's claims table
    (the family's verdicts after Holm at its look; Table 1's interval verdicts until it exists)."""
    if table is None or table.empty:
        return "Whether WMRL works at this scale is not known yet: Table 1's runs are missing (run `make reproduce`)."
    t = table  # claims.evaluate_claims's table, indexed by claim
    declared = _declared(t)
    col = "verdict_holm" if declared else "verdict"
    head = next((cid for cid, c in t.comparison.items() if str(c).startswith("wmrl - grpo")), t.index[0])
    r, shown = t.loc[head], claims.claims_display(t).loc[head]
    says = {"reproduced": "WMRL beats GRPO", "fails": "WMRL falls below GRPO",
            "inconclusive": "WMRL cannot be told apart from GRPO"}[r[col]]
    n = t[col].value_counts()
    points = t[t.unit == "points"].mdd.dropna()
    where = (f"At {int(r.seeds)} seeds (look {int(r.look)}), {says} on late held-out score"
             if declared else f"At {len(seeds)} seeds, {says} on held-out score")
    first = f"{where}: {shown['ours (95% CI)']} points ({head}, {r[col]}{' after Holm' if declared else ''})."
    family = "its" if declared else "Table 1's"
    second = (f"Of {family} {len(t)} claims, {n.get('reproduced', 0)} {_be(n.get('reproduced', 0))} reproduced, "
              f"{n.get('fails', 0)} {'fails' if n.get('fails', 0) == 1 else 'fail'} and {n.get('inconclusive', 0)} "
              f"{_be(n.get('inconclusive', 0))} inconclusive")
    if len(points):
        second += (f"; the seeds detect differences of {points.min():.1f} to {points.max():.1f} points (80% power), "
                   "the paper's are 1-5" if declared else
                   f"; the seeds detect only differences of {points.min():.1f} points or more, the paper's are 1-5")
    return f"{first} {second}."


def _render_results(read: _Read) -> str:
    params, seeds = read.params, read.params["SEEDS"]
    name = PRIMARY if PRIMARY in read.tables else TABLE1
    primary = read.tables.get(name)
    counted = [t for n, t in read.tables.items() if n not in (PRIMARY, REDECLARED, *OWN_RUNS)
               and not (name == PRIMARY and n == TABLE1)]  # Table 1 at seeds 0-2 retests the family's hypotheses
    short = in_short(counted, seeds) + (f" Table 1's {len(read.tables[TABLE1])} claims at seeds {_span(seeds)} "
                                        "retest the primary family's hypotheses: exploratory, not counted."
                                        if name == PRIMARY and TABLE1 in read.tables else "")
    answer = verdict(primary, seeds)
    if name == PRIMARY and read.declared is not None:
        answer = (f"{declared_sentence(read.declared, params['PRIMARY_SEEDS'])} Rerun with the world model fitted "
                  f"on tasks no run uses, chosen after those results (exploratory): {answer[0].lower()}{answer[1:]} "
                  f"{redeclared_sentence(read.tables, params)}")
    lines = ["# Results", "", "**Does WMRL work at this scale?** " + answer, "",
             ("**In short, beyond the primary family.** " if name == PRIMARY else "**In short.** ") + short, "",
             (f"Generated by `python -m wmrl.reproduce` from `results/` (preset `{read.preset}`, seeds {seeds}; notebook "
              f"12's claims at its new seeds {params['CONFIRM_SEEDS']}"
              + (f"; the primary family at its seeds {_span(params['PRIMARY_SEEDS'])}" if name == PRIMARY else "")
              + "). Ours: seed-paired mean and 95% interval; *detectable*: at 80% power; verdict: the interval on the "
              "paper's side, the other, or across (*open after look N*: a later look may resolve it); `-`: not in "
              "the paper. Holm's verdicts and what each notebook "
              f"shows: [{FINDINGS_PAGE}]({FINDINGS_PAGE})."), ""]
    if name == PRIMARY:
        lines += [PRIMARY_HEADING, "",
                  (f"Table 1's headline at seeds {_span(params['PRIMARY_SEEDS'])} in "
                   f"{len(params['PRIMARY_LOOKS'])} looks: late held-out Avg, Holm's verdicts at each look's level. "
                   + ("The exploratory rerun, its world model fitted on tasks no run uses; the declared runs' "
                      "verdicts: above and the notebook's section 0 " if read.declared is not None else "")
                   + f"([notebook](notebooks/{PRIMARY}.ipynb), [figure](figures/{PRIMARY}.png))."
                   + (f" {tasks_sentence(read.per_task)}" if read.per_task is not None else "")), ""]
    else:
        lines += [PRIMARY_HEADING, "",
                  "Table 1: WMRL, GRPO and a pure world model ([figure](figures/01_main_table.png)).", ""]
    lines += (CLAIMS_HEADER + _claims_rows(primary, name)) if primary is not None else [
        f"No results of preset `{read.preset}` yet: run `python -m wmrl.reproduce`."]
    lines.append("")
    known = {name, TABLE1, REDECLARED} | {n for _, _, notebooks in FAMILIES for n in notebooks}
    for heading, about, notebooks in FAMILIES:
        here = [n for n in notebooks if n in read.tables]
        if heading == "The paper's other tables" and name == PRIMARY and TABLE1 in read.tables:
            # Table 1 at the campaign's seeds tests the primary family's comparisons again: named, not counted twice
            about += (f" Table 1 at the campaign's seeds {seeds}, superseded by the primary family: "
                      f"[{TABLE1}](notebooks/{TABLE1}.ipynb) and [{FINDINGS_PAGE}]({FINDINGS_PAGE}).")
        if heading == "Beyond the paper":  # every other notebook that declared claims (a new ablation) joins here
            here += sorted(n for n in read.tables if n not in known)
        earlier = earlier_sentence(read.earlier) if notebooks == OWN_RUNS and read.earlier is not None else ""
        if not here and not earlier:
            continue
        lines += [f"## {heading}", "", about.format(**params, llm_seeds=_span(params["LLM_SEEDS"]),
                                                    llm_looks=_listed([str(n) for n in params["LLM_LOOKS"]])), ""]
        if here:
            lines += CLAIMS_HEADER
            for notebook in here:
                lines += _claims_rows(read.tables[notebook], notebook, _looks(read.tables[notebook], notebook, params))
            if notebooks == OWN_RUNS and read.to_resolve is not None and not read.to_resolve.empty:
                lines += ["", to_resolve_sentence(read.to_resolve)]
        elif notebooks == OWN_RUNS:
            lines.append(NO_LOOK_YET)
        lines += ["", earlier, ""] if earlier else [""]
    return "\n".join(lines).rstrip() + "\n"


WIDTH = 100  # FINDINGS.md's prose is wrapped at this width; its tables are not


def _wrapped(text: str, indent: str = "") -> str:
    return textwrap.fill(text, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def _claim_bullets(table: pd.DataFrame) -> list[str]:
    """One short line per claim (its comparison, interval, detectable difference, verdict before and after
    Holm's correction): :func:`~wmrl.experiments.claims.what_we_see`'s content, without its prose."""
    shown = claims.claims_display(table)
    seeds = set(table.seeds[~table.note.astype(bool)])
    out = [f"Claims at {seeds.pop()} seeds:", ""] if len(seeds) == 1 else []
    for cid, r in shown.iterrows():
        if table.loc[cid, "note"]:
            said = f"not resolved: {table.loc[cid, 'note']}"
        else:
            unit = "" if table.loc[cid, "op"] == "ratio" else f" {table.loc[cid, 'unit']}"
            holm = "" if r["verdict (Holm)"] == r.verdict else f", {r['verdict (Holm)']} after Holm"
            at = "" if out else f" at {r.seeds} seeds"
            said = f"{r.verdict}{holm}; {r['ours (95% CI)']}{unit}{at}, detectable {r['detectable (80%)']}"
        out.append(_wrapped(f"- **{cid}** ({r.statement}): {said}.", "  "))
    return out


def _notebook_section(notebook: str, title: str, sentences: list[str], table: pd.DataFrame | None) -> list[str]:
    """A notebook's heading and its closing sentences, wrapped; the sentences that
    :func:`~wmrl.experiments.claims.what_we_see` wrote from its claims table become one line per claim."""
    lines = [f"## [{notebook}](notebooks/{notebook}.ipynb): {title}", ""]
    per_claim = set(claims.what_we_see(table)[:-1]) if table is not None else set()
    prose, listed = [], False
    for sentence in [*sentences, None]:
        if sentence in per_claim or sentence is None:
            if prose:
                lines += [_wrapped(" ".join(prose)), ""]
                prose = []
            if sentence is not None and not listed:
                lines += [*_claim_bullets(table), ""]
                listed = True
        else:
            prose.append(sentence)
    return lines


def _render_findings(read: _Read) -> str:
    lines = ["# What each notebook shows", "",
             _wrapped("Generated beside [RESULTS.md](RESULTS.md) from the same results: each notebook's closing "
                      "sentences, computed from its claims table and readouts, so they say no more than the numbers. "
                      "A claim's line gives its seed-paired mean difference with a 95% interval, the difference the "
                      "seeds detect at 80% power, and its verdict before and after Holm's correction within the "
                      "notebook."), ""]
    for notebook in sorted(read.paragraphs):
        title, sentences = read.paragraphs[notebook]
        lines += _notebook_section(notebook, title, sentences, read.tables.get(notebook))
    lines += read.noise
    if read.reproducibility:
        lines += ["## Reproducibility", "", _wrapped(read.reproducibility.removeprefix("**Reproducibility.** "))]
    return "\n".join(lines).rstrip() + "\n"


def results_page(results: str | Path, preset: str = "small") -> str:
    """RESULTS.md's Markdown, from the results of ``preset`` under ``results``: the verdict, then the claims
    tables by family (the primary one, the paper's other tables, beyond the paper, exploratory)."""
    return _render_results(_read(results, preset))


def findings_page(results: str | Path, preset: str = "small") -> str:
    """FINDINGS.md's Markdown: what each notebook shows, in its own computed sentences, and the noise section."""
    return _render_findings(_read(results, preset))


def _sizing_sentence(sizing: pd.DataFrame) -> str:
    """The seeds (and hours on 2 cores) the primary family's paired spreads ask for, per detectable difference."""
    said, ray = [], "hours, 64 cores (Ray)"
    for target, d in sizing.groupby("detect (points)", sort=False):
        said.append(f"{target:g} point{'s' * (target != 1)} takes {int(d.seeds.min())} to {int(d.seeds.max())} seeds "
                    f"per claim ({d['hours, 2 cores'].min():.0f} to {d['hours, 2 cores'].max():.0f} hours of its four "
                    "arms on 2 cores" + (f", {d[ray].min():.1f} to {d[ray].max():.1f} on 64 through Ray"
                                         if ray in d and d[ray].notna().all() else "") + ")")
    return (f"Sized from the primary family's own paired values (notebook 13, section 4; 80% power, one look): "
            f"detecting {'; '.join(said)}. The split above explains the spread; these counts, from the paired "
            "values themselves, are the ones to size a campaign by.")


def _noise_section(runs: pd.DataFrame, sizing: pd.DataFrame | None = None) -> list[str]:
    """Evaluation vs training noise and what a larger campaign would detect; the seeds a goal would take come from
    ``sizing`` (notebook 13's, from the primary family's paired spreads), else from this split."""
    arms = [a for a in ("untrained", "grpo", "wm", "mix", "od", "ivd", "wmrl", "anchor_only") if a in set(runs.arm)]
    s = noise.campaign_sizing(runs, arms, noise.GOAL_POINTS)
    c = s.components
    lines = ["## Where the noise comes from", "",
             _wrapped(f"The untrained policy is the same at every seed, so its spread over seeds is evaluation "
                      f"noise alone: SD {s.var_eval ** 0.5:.1f} points of held-out Avg (95% interval "
                      f"{c.sd_eval_lo.iloc[0]:.1f} to {c.sd_eval_hi.iloc[0]:.1f}, from {int(c.seeds.loc['untrained'])} "
                      "seeds). A trained arm's excess over it is training noise, if its evaluation noise is the "
                      "untrained policy's (not measured here; mean over trained arms: SD "
                      f"{s.var_train ** 0.5:.1f}). For a paired difference between two arms, the detectable difference "
                      "(80% power) of a few campaign designs, if these components held, and the hours its "
                      f"{len(arms)} arms would take on this machine at the committed runs' mean wall time per run "
                      "(each further evaluation repeat adds the run's final evaluation):"), "",
             "| seeds | evaluation repeats | CRN correlation of evaluation noise | detectable (points) | hours |",
             "|---|---|---|---|---|"]
    for r in s.designs.itertuples():
        lines.append(f"| {r.seeds} | {r.eval_reps} | {r.eval_corr:g} | {r.detectable:.1f} | {r.hours:.1f} |")
    lines += ["", _wrapped(s.sentence() if sizing is None else _sizing_sentence(sizing))]
    lines += ["", "| arm | seeds | SD total | SD evaluation | SD training | evaluation share |", "|---|---|---|---|---|---|"]
    for arm, r in s.components.iterrows():
        lines.append(f"| {arm} | {r.seeds:.0f} | {r.sd_total:.1f} | {r.sd_eval:.1f} | {r.sd_train:.1f} | {r.eval_share:.2f} |")
    return lines + [""]


def write_results_page(results: str | Path, out: str | Path, preset: str = "small") -> Path:
    """Write :func:`results_page` to ``out`` and :func:`findings_page` beside it (each only when it changed);
    return ``out``."""
    out = Path(out)
    read = _read(results, preset)
    for path, text in ((out, _render_results(read)), (out.with_name(FINDINGS_PAGE), _render_findings(read))):
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)
    return out


NO_LOOK_YET = "No look of this design is analysed yet."


def earlier_sentence(earlier: pd.DataFrame) -> str:
    """Notebook 07's earlier designs in one sentence: per design, its primary family's seed-paired differences with
    their 95% intervals and Holm's verdicts (:data:`EARLIER`)."""
    said = []
    for design, t in earlier[earlier.family == "primary"].groupby("design", sort=False):
        seeds = design.split(":")[0]
        said.append(f"{seeds}: " + ", ".join(f"{r.comparison} {r['mean']:.1f} [{r.lo:.1f}, {r.hi:.1f}] "
                                                f"({r.verdict_holm})" for _, r in t.iterrows()))
    return ("Earlier designs (a warm start per seed), recomputed with the seed as the unit: " + "; ".join(said)
            + " ([notebook 07](notebooks/07_llm_agent.ipynb), section 5).")


def to_resolve_sentence(to_resolve: pd.DataFrame) -> str:
    """Notebook 07's unresolved claims in one sentence: per claim, the seeds at which its observed mean and spread would
    resolve it at the level its look leaves, and the hours of the arms it compares on 2 cores (:data:`TO_RESOLVE`)."""
    look, looks = int(to_resolve.look.iloc[0]), int(to_resolve.looks.iloc[0])
    said = ", ".join(f"{r.claim} " + (f"{int(r.seeds)} ({r.level:.4f}; {r['hours, 2 cores']:.1f} h)"
                                      if pd.notna(r.seeds) else "(no spread yet)") for _, r in to_resolve.iterrows())
    when = "Inconclusive at the last look" if look >= looks else f"Open after look {look} of {looks}"
    return (f"{when}, the seeds at which each claim's observed mean and spread would resolve it (level; hours of its "
            f"arms on 2 cores): {said} ([notebook 07](notebooks/07_llm_agent.ipynb), *What is left*).")


def _llm_sentence(page_lines: list[str]) -> str:
    """The language-model agent's claims as one sentence, read from the page's table under that family's heading:
    each comparison paired by seed with its verdict; without the table, that no look is analysed yet (with the
    earlier designs' sentence where the page has it); "" without the family."""
    heading, inside, by_seed, earlier, found = f"## {FAMILIES[-1][0]}", False, [], "", False
    for line in page_lines:
        if line.startswith("## "):
            inside = line == heading
            found |= inside
        cells = [c.strip() for c in line.strip("|").split(" | ")] if line.startswith("| ") else []
        if inside and len(cells) == len(CLAIMS_HEADER[1].split("|")) - 2 and cells[0] != "claim" \
                and not set(cells[0]) <= set("-"):
            by_seed.append(f"{cells[3]} ({cells[5]})")
        if inside and line.startswith("Earlier designs"):
            earlier = line
    if not found:
        return ""
    said = (f"**{FAMILIES[-1][0][0].upper()}{FAMILIES[-1][0][1:]}** ([notebook 07](notebooks/07_llm_agent.ipynb), "
            "its own runs), ")
    if by_seed:
        return said + f"points of held-out Avg paired by seed: {'; '.join(by_seed)}."
    return said + NO_LOOK_YET[0].lower() + NO_LOOK_YET[1:] + (f" {earlier}" if earlier else "")


def _statements(page_lines: list[str], results: str | Path | None, preset: str) -> dict[str, str]:
    """Each claim's statement up to a colon, by ID: from the page's rows and (given ``results``) every
    notebook's declared claims, those the page leaves out included (Table 1 beside the primary family)."""
    said = {}
    for line in page_lines:
        cells = [c.strip() for c in line.strip("|").split(" | ")] if line.startswith("| ") else []
        if len(cells) > 2 and cells[0] != "claim" and not set(cells[0]) <= set("-"):
            said[cells[0]] = cells[1]
    if results is not None:
        for d in declared_claims(results, preset).values():
            if "statement" in d.table.columns:
                said.update({str(cid): str(text) for cid, text in d.table.statement.items()})
    return {cid: text.split(":")[0] for cid, text in said.items()}


def defined(short: str, statements: dict[str, str]) -> str:
    """The "In short" paragraph with each claim ID it lists followed by what the claim states, so that the
    README defines every claim it names (an ID without a statement is left as it is)."""
    def named(group: re.Match) -> str:
        ids = group[1].split(", ")
        if not all(i in statements for i in ids):
            return group[0]
        return "(" + "; ".join(f"{i}: {statements[i]}" for i in ids) + ")"

    return re.sub(r"\(([^()]+)\)", named, short)


def write_readme_summary(page: str | Path, readme: str | Path, results: str | Path | None = None,
                         preset: str = "small") -> None:
    """Copy the page's answer to "does WMRL work at this scale?", the primary family's claims (the rows under
    :data:`PRIMARY_HEADING`, five columns), the page's
    "In short" paragraph with its claims :func:`defined` (from the page and ``results`` of ``preset``), the
    language-model agent's claims and (given ``results``) the brief :func:`reproducibility` into the README's block between :data:`README_BEGIN`
    and :data:`README_END`, so the front door's summary is the results' and cannot drift from them."""
    readme = Path(readme)
    page_lines = Path(page).read_text().splitlines()
    short = defined(next(line for line in page_lines if line.startswith("**In short")),
                    _statements(page_lines, results, preset))
    primary = ["| claim | statement | paper | ours (95% CI) | verdict |", "|---|---|---|---|---|"]
    inside = False
    for line in page_lines:  # the primary family's claims, five of the page's columns
        if line.startswith("## "):
            inside = line == PRIMARY_HEADING
        cells = [c.strip() for c in line.strip("|").split(" | ")] if line.startswith("| ") else []
        if inside and len(cells) == len(CLAIMS_HEADER[1].split("|")) - 2 and cells[0] != "claim" \
                and not set(cells[0]) <= set("-"):
            primary.append("| " + " | ".join(cells[i] for i in (0, 1, 2, 3, 5)) + " |")
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        raise ValueError(f"{readme} has no results block ({README_BEGIN} ... {README_END})")
    head, rest = text.split(README_BEGIN, 1)
    answer = next((line for line in page_lines if line.startswith("**Does WMRL work")), "")
    block = "\n".join(([answer, ""] if answer else []) + primary + ["", short]) if len(primary) > 2 else short
    llm = _llm_sentence(page_lines)
    block += f"\n\n{llm}" if llm else ""
    replays = reproducibility(results, brief=True) if results is not None else ""
    block += f"\n\n{replays}" if replays else ""
    new = f"{head}{README_BEGIN}\n{block}\n{README_END}{rest.split(README_END, 1)[1]}"
    if new != text:
        readme.write_text(new)
