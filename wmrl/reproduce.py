"""Rebuild every result, table and figure: ``python -m wmrl.reproduce`` (what ``make reproduce`` runs).

For each notebook ``notebooks/NN_name.ipynb``, in order:

1. sync its jupytext pair (``NN_name.py`` may have been edited; the newer file wins);
2. **train**: papermill-execute it with ``MODE="train"`` and the preset into
   ``results/runs/NN_name.ipynb`` (a record of the run; the committed notebook is never the
   output), which writes ``results/`` and ``figures/``;
3. **redraw**: execute the committed notebook in place with its default parameters
   (``MODE="redraw"``), so that its committed outputs show exactly what ``results/`` holds and
   nbval's checked cells match, then re-sync the ``.py`` pair.

Then ``RESULTS.md`` is rewritten from ``results/`` (:mod:`wmrl.experiments.results_page`): every
claim of the paper with ours beside it, and what each notebook shows, in the redrawn preset.

The committed results come from four campaigns, listed with the notebooks and the run folders
each one owns in :data:`wmrl.campaigns.CAMPAIGNS`: ``core`` (``make reproduce``), ``dial``
(``make reproduce-dial``) and ``beyond`` (``make reproduce-beyond``), which both read the core
campaign's default runs and so run after it, and ``llm`` (``make reproduce-llm``). ``--fresh``
removes the campaign's own runs first (:func:`wmrl.campaigns.selection`), so it retrains them
and nothing else; without it, finished runs are kept and checkpointed ones resume.

Notebooks that do not exist yet are skipped; a failing notebook is named with its failing cell,
the others still run, and the exit status is non-zero.

    python -m wmrl.reproduce                      # every notebook, preset "small"
    python -m wmrl.reproduce --campaign core --fresh  # make reproduce: notebooks 00-06 and 11, retrained
    python -m wmrl.reproduce --campaign core      # make reproduce-resume: go on where it stopped
    python -m wmrl.reproduce --campaign core --executor ray  # each run a Ray task on a cluster (docs/cluster.md)
    python -m wmrl.reproduce --campaign dial --fresh   # make reproduce-dial: notebook 08, the fidelity dial
    python -m wmrl.reproduce --campaign llm --fresh    # make reproduce-llm: notebook 07, the LLM agent
    python -m wmrl.reproduce --only 00_theory --preset smoke   # trains only: the committed notebooks show "small"
    python -m wmrl.reproduce --seeds 0                        # every notebook at seed 0 into results/runs/small-seeds0/
    python -m wmrl.reproduce --redraw-only        # only redraw the committed notebooks and RESULTS.md
    python -m wmrl.reproduce --timings            # results/timings.json and the README's quick-start table
    python -m wmrl.reproduce --campaign core --replay-executions  # retrain from the record, compare to the bit

The quick-start table's times are read from ``results/timings.json`` (:func:`timings`): each
campaign's training runs under ``results/`` and the wall time their ``summary.json`` recorded, with
the machines and commits they ran at, so the README cannot disagree with the runs it describes. A
campaign at the committed preset also records each notebook's measured train and redraw seconds
there (``measured``, :func:`record_durations`).

Every training run also writes its **execution record** (:mod:`wmrl.record`): each script's
outcome and measured cost, the memo's answers and the clock's readings, per notebook and per run,
in ``<results>/executions/<campaign>.jsonl.gz``. ``--replay-executions`` retrains the notebooks
from that record into ``results/runs/replay-executions[-<variant>]/`` (nothing executes, no clock
is read) and compares every result file and figure with the ones the recorded campaign wrote
(:func:`compare_outputs`: to the bit, but for the last bits of the policy's float32 training
diagnostics, which depend on the CPU); it exits non-zero if any differs. A campaign retrained at the committed
preset prints its agreement with the last commit's (:func:`agreement`): runs within 1 point of
held-out Avg, verdicts changed, and the share of scripts whose outcome changed between the records;
it keeps it beside its record (``<campaign>.agreement.json``), where FINDINGS.md and the README's results
block read it. The LLM campaign's runs start from a warm start kept beside them (``results/warm_starts/``),
so they replay like a grammar campaign's.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import hashlib
import io
import json
import os
import shutil
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from wmrl import record
from wmrl.campaigns import CAMPAIGNS, campaign_of, check_campaign, quick_seed, selection
from wmrl.config import experiment_identity
from wmrl.experiments.executor import EXECUTOR_HELP, parse_executor
from wmrl.experiments.notebook import REDRAW_PRESET, available_presets, ensure_kernel, variant_folders
from wmrl.experiments.results_page import write_readme_summary, write_results_page
from wmrl.presets import notebook_params
from wmrl.provenance import REPO, atomic_path, code_digest, committed_files, cpu_model, provenance, write_json_atomic
from wmrl.runs import FLOAT32_DIAGNOSTICS, FLOAT32_RTOL

__all__ = ["CAMPAIGNS", "FIRST_LOOK", "FIRST_LOOK_ARMS", "QUICKSTART", "REPORT_HEADER", "NotebookRun", "agreement", "campaign_of", "compare_outputs", "discover",
           "executions", "main", "quickstart_table", "record_durations", "redraw_notebook", "report_line", "save_agreement", "timings",
           "train_notebook", "write_timings"]

NOTEBOOKS = REPO / "notebooks"
RESULTS = REPO / "results"
RUNS = RESULTS / "runs"
RESULTS_PAGE = REPO / "RESULTS.md"
TIMINGS = RESULTS / "timings.json"
README = REPO / "README.md"
FIGURES = REPO / "figures"
#: ``make reproduce-quick``'s notebooks (the Makefile's QUICK_NOTEBOOKS), trained at seed 0: the theory, Table 1's
#: four runs and the world model's fidelity, a first look timed by ``python -m bench.first_look``. Left out:
#: notebook 02 (its ablation arms mix, ivd and od would add three runs), 03 and 04 (the anchor_only run), 06 (the
#: VLA transfer, its own runs: ``python -m wmrl.reproduce --only 06_vla --seeds 0`` adds it) and 11.
FIRST_LOOK = ("00_theory", "01_main_table", "05_world_model_fidelity")
#: The notebook parameters that list the arms whose default runs the first look trains (05 trains wmrl, in MAIN_ARMS).
FIRST_LOOK_ARMS = ("MAIN_ARMS",)
# The README's quick-start table: command, what you get, and the timings.json entry that times it.
QUICKSTART = (
    ("make reproduce", "the paper's experiments retrained: notebooks 00-06 and 11, their results, figures, RESULTS.md",
     "core"),
    ("make reproduce-quick", "a first look: notebooks 00, 01 and 05 at seed 0, in results/runs/small-seeds0/",
     "quick"),
    ("make reproduce-dial", "notebook 08, the world-model fidelity dial (after make reproduce)", "dial"),
    ("make reproduce-beyond", "notebooks 09, 10, 12 and new ablations (after make reproduce)", "beyond"),
    ("make reproduce-primary", "notebook 13: the primary family, declared in advance, at 12 new seeds in two looks",
     "primary"),
    ("make reproduce-llm", "notebook 07: SmolLM2-135M trained with TRL, five arms, its first look of four seeds",
     "llm-look"),
    ("make reproduce-llm-quick", "a first look at notebook 07: four of its arms (not wm) at its first seed",
     "llm-quick"),
    (".venv/bin/python -m wmrl.experiments run --arm wmrl --preset small --seed 0", "one run of one arm",
     "run:wmrl/seed0"),
)
@dataclass
class NotebookRun:
    """Outcome of one notebook: timings and, on failure, where it failed."""

    name: str
    status: str = "ok"  # ok | skipped | failed
    train_s: float | None = None
    redraw_s: float | None = None
    detail: str = ""


def discover(only=None, campaign: str | None = None) -> tuple[list[str], list[str]]:
    """Notebook names on disk (``NN_name``, an ``.ipynb`` or a paired ``.py``), of ``campaign`` if given,
    and the requested ones missing."""
    on_disk = sorted({p.stem for ext in ("ipynb", "py") for p in NOTEBOOKS.glob(f"[0-9][0-9]_*.{ext}")})
    if not only:
        return [n for n in on_disk if campaign in (None, campaign_of(n))], []
    return [n for n in only if n in on_disk], [n for n in only if n not in on_disk]


def _sync(name: str) -> Path:
    """``jupytext --sync``: create or update the older of ``.ipynb`` / ``.py`` from the newer."""
    from jupytext.cli import jupytext

    ipynb, py = NOTEBOOKS / f"{name}.ipynb", NOTEBOOKS / f"{name}.py"
    if ipynb.exists():
        jupytext(["--sync", "--quiet", str(ipynb)])
    else:  # only the script is there: create the paired notebook from it
        jupytext(["--set-formats", "ipynb,py:percent", "--quiet", str(py)])
    return ipynb


def _failing_cell(nb) -> str:
    """Index, first source line and error of the first cell whose outputs hold an error."""
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                first = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
                return f"cell {i} ({first[:60]!r}): {out.get('ename')}: {out.get('evalue', '')[:300]}"
    return ""


def train_notebook(name: str, preset: str, kernel: str, params: dict | None = None, records: Path = RUNS) -> None:
    """papermill run with MODE="train" (and ``params``, e.g. SEEDS) into ``records/<name>.ipynb`` (cwd = notebooks/).

    The kernel's stderr comes on to this process's as it is written: each run's step bar and the run counter's
    lines (:class:`wmrl.progress.RunCounter`: runs done, the one running, those left, the time left), in place of
    papermill's cell counter, which stands still on the cell that trains."""
    import papermill as pm

    records.mkdir(parents=True, exist_ok=True)
    try:
        pm.execute_notebook(
            str(NOTEBOOKS / f"{name}.ipynb"), str(records / f"{name}.ipynb"),
            parameters={"MODE": "train", "PRESET": preset, **(params or {})},
            cwd=str(NOTEBOOKS), kernel_name=kernel, language="python", progress_bar=False, stderr_file=sys.stderr,
        )
    except pm.PapermillExecutionError as e:
        raise RuntimeError(f"train: cell {e.cell_index} (execution {e.exec_count}): {e.ename}: {e.evalue[:300]}") from e


def redraw_notebook(name: str, kernel: str, timeout: int) -> None:
    """Execute the committed notebook in place with its defaults; written back only on success."""
    from nbclient import NotebookClient

    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, kernel_name=kernel, timeout=timeout, record_timing=False,
                            resources={"metadata": {"path": str(NOTEBOOKS)}})
    try:
        client.execute()
    except Exception as e:  # nbclient raises several types; the failing cell is in the outputs
        raise RuntimeError(f"redraw: {_failing_cell(nb) or f'{type(e).__name__}: {e}'[:400]}") from e
    with atomic_path(path) as tmp:
        nbformat.write(nb, tmp)
    _sync(name)


@contextlib.contextmanager
def executions(spec: str, notebook: str, export: Path | None = None):
    """Run the block (a notebook's training) under the execution record ``spec`` (``record:<file>`` or
    ``replay:<folder>``), with the notebook as the context of what it observes outside its runs; a
    record being made is exported to ``export`` afterwards, also when the notebook failed, without the
    runs whose folders are gone from the results beside it (``<results>/executions/<campaign>.jsonl.gz``)."""
    saved = {k: os.environ.get(k) for k in (record.ENV, record.CONTEXT_ENV)}
    os.environ[record.ENV], os.environ[record.CONTEXT_ENV] = spec, notebook
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if export is not None and export.with_suffix("").with_suffix(".sqlite").exists():
            for gone in record.forget_gone_runs(export, export.parent.parent):
                print(f"execution record: {gone} dropped (its run folder is gone)", flush=True)
            record.export(export)


def _same(a: Path, b: Path) -> str:
    """``"same"``, ``"rounding"`` (parquet frames equal but for the float32 training diagnostics, within
    :data:`~wmrl.runs.FLOAT32_RTOL`) or ``"differ"``."""
    if a.suffix == ".json":
        def strip(x):  # provenance (who, where, when) differs by design; what it was made from must not:
            # a run's config as the experiment it names (a setting the run never reads may differ)
            if isinstance(x, dict) and {"git_commit", "date", "machine"} <= x.keys():
                return {k: experiment_identity(v) if k == "config" and isinstance(v, dict) else strip(v)
                        for k, v in x.items() if k in ("config", "seed")}
            if isinstance(x, dict):
                return {k: strip(v) for k, v in x.items() if k != "provenance"}
            return [strip(v) for v in x] if isinstance(x, list) else x
        return "same" if strip(json.loads(a.read_text())) == strip(json.loads(b.read_text())) else "differ"
    if a.suffix == ".parquet":
        import numpy as np
        import pandas as pd

        fa, fb = pd.read_parquet(a), pd.read_parquet(b)
        if fa.shape != fb.shape or list(fa.columns) != list(fb.columns):
            return "differ"
        if fa.equals(fb):
            return "same"
        loose = [c for c in FLOAT32_DIAGNOSTICS if c in fa and fa[c].dtype.kind == "f"]
        if not loose or not fa.drop(columns=loose).equals(fb.drop(columns=loose)):
            return "differ"
        x, y = fa[loose].to_numpy(float), fb[loose].to_numpy(float)
        close = np.isclose(x, y, rtol=FLOAT32_RTOL, atol=FLOAT32_RTOL, equal_nan=True).all()
        return "rounding" if close else "differ"
    return "same" if a.read_bytes() == b.read_bytes() else "differ"


def _copy_others(campaign: str, recorded: Path, replay: Path, preset: str, seeds) -> set[str]:
    """Copy into the replay's results folder what ``campaign`` reads but does not own (another campaign's runs
    and results, under ``recorded``), leaving out its own, the records, the variants' folder, checkpoints and
    memos; return the copied files' paths relative to the folder."""
    own = set(selection(campaign, recorded, preset, seeds))
    skip = {recorded / "executions", recorded / "runs"}
    copied = set()
    for path in sorted(recorded.rglob("*")):
        if not path.is_file() or path.suffix in (".pt", ".sqlite") or any(p in own or p in skip for p in path.parents):
            continue
        target = replay / path.relative_to(recorded)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        copied.add(str(path.relative_to(recorded)))
    return copied


def compare_outputs(recorded: Path, replayed: Path, skip: set[str] = frozenset()) -> dict[str, list[str]]:
    """Every file a replay wrote under ``replayed`` against the one at the same path under ``recorded``:
    ``{"same": [...], "rounding": [...], "differ": [...], "missing": [...]}`` (paths relative to ``replayed``).
    JSON files are compared without their provenance (its commit, date and machine differ by design; its
    seed is kept, and its config as the experiment it names, :func:`~wmrl.config.experiment_identity`: a
    setting the run never reads, or a scheduling field, may differ), parquet frames exactly but for the policy's float32 training diagnostics
    (:data:`~wmrl.runs.FLOAT32_DIAGNOSTICS`: a frame equal but for their rounding is ``rounding``), anything
    else byte for byte; the record itself, checkpoints (an LLM run's ``trl/`` folder too), memo files and
    ``skip`` (paths relative to ``replayed``: files copied in, not written by the replay) are skipped."""
    out = {"same": [], "rounding": [], "differ": [], "missing": []}
    for path in sorted(p for p in replayed.rglob("*") if p.is_file()):
        rel = path.relative_to(replayed)
        if (rel.parts[0] == "executions" or "trl" in rel.parts[:-1] or path.suffix in (".pt", ".sqlite", ".ipynb")
                or str(rel) in skip):
            continue
        other = recorded / rel
        out["missing" if not other.exists() else _same(other, path)].append(str(rel))
    return out


def _committed(rels: list[Path]) -> dict[Path, bytes | None]:
    """Each of ``rels`` (relative to ``results/``) as the last commit holds it, or None; read by one git call."""
    found = committed_files("HEAD", [f"results/{rel.as_posix()}" for rel in rels])
    return {rel: found[f"results/{rel.as_posix()}"] for rel in rels}


#: A claims table's verdict columns, each named as the agreement reports a change in it.
VERDICTS = {"verdict": "", "verdict_holm": " after Holm"}


def _verdicts(source):
    """A claims table's verdicts by claim and column: the interval verdict, and where the table has it the
    verdict after the family's correction."""
    import pandas as pd

    frame = pd.read_parquet(source).set_index("claim")
    return pd.Series({f"{claim}{label}": frame.at[claim, column] for column, label in VERDICTS.items()
                      if column in frame for claim in frame.index})


def _outcomes(blob: bytes) -> dict[str, tuple]:
    """(status, percentile) of each script's first recorded execution in a record file's bytes."""
    rows = [json.loads(line) for line in gzip.decompress(blob).splitlines()]
    payloads = {r["h"]: json.loads(r["p"]) for r in rows if "p" in r}
    first = {}
    for r in rows:
        if r.get("s") == "sandbox" and r["v"] and r["v"][0] is not None:
            first.setdefault(r["k"], (payloads[r["v"][0]]["status"], payloads[r["v"][0]]["percentile"]))
    return first


def agreement(campaign: str, names: list[str], results: Path = RESULTS) -> dict:
    """How a retrained campaign agrees with the last commit's: its runs' held-out Avg (within 1 point),
    its notebooks' verdicts, and the outcome of every script both execution records ran."""
    summaries = [p for folder in selection(campaign, results, REDRAW_PRESET) for p in sorted(folder.rglob("summary.json"))]
    claims = {name: results / "claims" / REDRAW_PRESET / f"{name}.parquet" for name in names}
    claims = {name: path for name, path in claims.items() if path.exists()}
    kept = results / "executions" / f"{campaign}.jsonl.gz"
    paths = [*summaries, *claims.values(), *([kept] if kept.exists() else [])]
    old = {results / rel: data for rel, data in _committed([p.relative_to(results) for p in paths]).items()
           if data is not None}
    deltas = [100 * abs(json.loads(p.read_text())["heldout"]["avg"] - json.loads(old[p])["heldout"]["avg"])
              for p in summaries if p in old]
    changed, compared = [], 0
    for name, path in claims.items():
        if path not in old:
            continue
        new_v, old_v = _verdicts(path), _verdicts(io.BytesIO(old[path]))
        for claim in new_v.index.intersection(old_v.index):
            compared += 1
            if new_v[claim] != old_v[claim]:
                changed.append(f"{name} {claim}: {old_v[claim]} -> {new_v[claim]}")
    out = {"runs": len(deltas), "within_1pt": sum(d <= 1.0 for d in deltas),
           "median_abs_delta": statistics.median(deltas) if deltas else None,
           "verdicts": compared, "verdicts_changed": changed, "scripts": None, "outcomes_changed": None}
    if kept in old:
        a, b = _outcomes(old[kept]), _outcomes(kept.read_bytes())
        common = a.keys() & b.keys()
        out["scripts"], out["outcomes_changed"] = len(common), sum(a[k] != b[k] for k in common)
    return out


def agreement_path(campaign: str, results: Path = RESULTS) -> Path:
    """Where a campaign retrained at the committed preset keeps its :func:`agreement` (beside its record)."""
    return results / "executions" / f"{campaign}.agreement.json"


def save_agreement(campaign: str, found: dict, results: Path = RESULTS) -> Path:
    """Keep ``found`` (:func:`agreement`) with the commit it was compared against, the digest of the record its
    retrained runs made (``record_sha256``: once runs are added to or replaced in the record, the page says the
    agreement is an earlier record's) and the provenance of the comparison, so the page can state it: once the
    retrained runs are committed, the comparison cannot be made again."""
    path, prov = agreement_path(campaign, results), provenance()  # the comparison was against this HEAD
    kept = results / "executions" / f"{campaign}.jsonl.gz"
    write_json_atomic(path, {"campaign": campaign, "compared_with": prov["git_commit"][:7], **found,
                             "record_sha256": record.digest(kept) if kept.is_file() else None, "provenance": prov})
    return path


def _print_agreement(campaign: str, found: dict) -> None:
    print(f"\nagreement of campaign {campaign!r} with the last commit's:")
    if found["runs"]:
        print(f"  runs: {found['within_1pt']} of {found['runs']} within 1 point of their held-out Avg "
              f"(median |difference| {found['median_abs_delta']:.2f} points)")
    print(f"  verdicts: {len(found['verdicts_changed'])} of {found['verdicts']} changed")
    for line in found["verdicts_changed"]:
        print(f"    {line}")
    if found["scripts"] is None:
        print("  outcomes: the last commit holds no execution record of this campaign to compare with")
    else:
        share = found["outcomes_changed"] / max(found["scripts"], 1)
        print(f"  outcomes: {found['outcomes_changed']} of {found['scripts']} scripts both records executed "
              f"changed status or score ({share:.1%})")


def _summaries(paths) -> list[dict]:
    found = []
    for path in paths:
        for summary in sorted([path / "summary.json"] if (path / "summary.json").exists() else path.rglob("summary.json")):
            data = json.loads(summary.read_text())
            if "wall_s" in data:
                found.append(data)
    return found


def _entry(summaries: list[dict], what: str) -> dict:
    prov = [s.get("provenance", {}) for s in summaries]
    return {"what": what, "runs": len(summaries), "train_s": round(sum(s["wall_s"] for s in summaries), 1),
            "cores": sorted({p.get("machine", {}).get("cpu_count") for p in prov} - {None}),
            "commits": sorted({p.get("git_commit", "")[:7] for p in prov} - {""}),
            "dates": [min(p.get("date", "") for p in prov)[:10], max(p.get("date", "") for p in prov)[:10]]
            if prov else []}


def timings(results: Path = RESULTS, preset: str = REDRAW_PRESET) -> dict:
    """Each campaign's training time at ``preset``: its runs under ``results/`` (its selection in
    :mod:`wmrl.campaigns`) and the sum of the wall time each run's ``summary.json`` recorded, with their
    machines' core counts, commits and dates. ``quick`` is ``make reproduce-quick``'s share (the default
    runs at seed 0 of the arms of :data:`FIRST_LOOK_ARMS`), ``llm-look`` notebook 07's first look and
    ``llm-quick`` its quick variant's runs; ``run:<arm>/seed<S>`` one run. The notebooks' own cells (redraws, scoring, the
    theory notebook's simulations, the VLA analog) and the LLM warm start are not runs, so not counted."""
    results = Path(results)
    out = {"source": "the sum of wall_s in each run's summary.json under results/ (python -m wmrl.reproduce --timings)",
           "preset": preset}
    for campaign in CAMPAIGNS:  # results/runs/ holds variants' scratch runs, not the committed ones
        committed = [p for p in selection(campaign, results, preset) if p != results / "runs"]
        out[campaign] = _entry(_summaries(committed), CAMPAIGNS[campaign].about)
    arms = {arm for key in FIRST_LOOK_ARMS for arm in notebook_params(preset)[key]}
    quick = [p for p in selection("core", results, preset, seeds=[0]) if p.parent.parent == results / "train" / preset
             and p.parent.name in arms]
    out["quick"] = _entry(_summaries(quick), "the default runs at seed 0 of the first look's arms (make reproduce-quick)")
    llm = results / "train" / notebook_params(preset)["LLM_PRESET"]
    first = notebook_params(preset)["LLM_SEEDS"][:notebook_params(preset)["LLM_LOOKS"][0]]
    out["llm-look"] = _entry(_summaries([p for p in sorted(llm.glob("*/seed*")) if int(p.name[4:]) in first]),
                             f"notebook 07's first look, seeds {first[0]}-{first[-1]} (make reproduce-llm)")
    seed, arms = quick_seed("llm", preset), dict(CAMPAIGNS["llm"].quick).get("LLM_ARMS")
    out["llm-quick"] = _entry(_summaries([p for p in sorted(llm.glob(f"*/seed{seed}"))
                                          if arms is None or p.parent.name in arms]),
                              f"notebook 07's quick arms at seed {seed} (make reproduce-llm-quick)")
    for _, _, key in QUICKSTART:
        if key.startswith("run:"):
            out[key] = _entry(_summaries([results / "train" / preset / key[4:]]), f"one run, {key[4:]}")
    return out


def _duration(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60:02d} min" if minutes >= 60 else f"{max(minutes, 1)} min"


def quickstart_table(times: dict) -> str:
    """The README's quick-start table (markdown), its times from ``times`` (:func:`timings`)."""
    rows = ["| command | what you get | its runs' training time on 2 cores |", "|---|---|---|"]
    for command, what, key in QUICKSTART:
        entry = times[key]
        took = (f"{_duration(entry['train_s'])} ({entry['runs']} run{'s' if entry['runs'] != 1 else ''})"
                if entry["runs"] else "no run recorded yet")
        rows.append(f"| `{command}` | {what} | {took} |")
    return "\n".join(rows)


BEGIN, END = "<!-- quickstart:begin", "<!-- quickstart:end -->"


def _committed_timings(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def record_durations(runs: list[NotebookRun], path: Path = TIMINGS, resumed: bool = False) -> None:
    """Keep each trained notebook's measured train and redraw seconds in ``timings.json`` (``measured``), with
    the commit, date and cores they ran at; the other entries are left as they are. ``resumed``: the call
    kept runs an earlier call had finished (no ``--fresh``), so its train seconds cover only what it added;
    the campaign's whole training time is its entry's sum of the runs' wall times."""
    prov = provenance()
    stamp = {"commit": prov["git_commit"][:7], "date": prov["date"][:10], "cores": prov["machine"]["cpu_count"]}
    times = _committed_timings(path)
    measured = times.setdefault("measured", {})
    for r in runs:
        if r.status == "ok" and r.train_s is not None:
            measured[r.name] = {"train_s": round(r.train_s, 1), "redraw_s": round(r.redraw_s or 0.0, 1),
                                "resumed": resumed, **stamp}
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(times, indent=1) + "\n")


def write_timings(results: Path = RESULTS, path: Path = TIMINGS, readme: Path = README) -> dict:
    """Write ``timings.json`` (the runs' times; the notebooks' ``measured`` durations are kept) and the README's
    quick-start table between its markers."""
    times = timings(results)
    if "measured" in _committed_timings(path):
        times["measured"] = _committed_timings(path)["measured"]
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(times, indent=1) + "\n")
    text = readme.read_text()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        block = f"{BEGIN} (python -m wmrl.reproduce --timings, from results/timings.json; do not edit) -->\n"
        with atomic_path(readme) as tmp:
            Path(tmp).write_text(head + block + quickstart_table(times) + "\n" + END + tail)
    return times


def _campaign(name: str) -> str:
    """``--campaign``'s type: a campaign's name, else an error naming the campaign meant."""
    try:
        return check_campaign(name)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m wmrl.reproduce", description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default=REDRAW_PRESET, help=f"one of {available_presets()} (wmrl/presets.py); "
                        f"a preset other than {REDRAW_PRESET!r} is a variant: it trains only, into results/runs/<preset>/")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--only", nargs="+", metavar="NAME", help="notebook names, e.g. 00_theory (default: all)")
    which.add_argument("--campaign", type=_campaign, choices=sorted(CAMPAIGNS),
                       help="; ".join(f"{k}: {v.about}" for k, v in CAMPAIGNS.items()) + " (default: all)")
    parser.add_argument("--fresh", action="store_true", help="with --campaign: first remove the runs and results "
                        "the campaign owns (wmrl/campaigns.py), so it retrains them; the other campaigns' are kept")
    parser.add_argument("--timings", action="store_true", help="only rewrite results/timings.json and the README's "
                        "quick-start table from the runs' recorded wall times")
    parser.add_argument("--redraw-only", action="store_true", help="train nothing: redraw the committed notebooks "
                        "from results/ and rewrite RESULTS.md")
    parser.add_argument("--replay-only", action="store_true", help=argparse.SUPPRESS)  # refused: see _check_args
    parser.add_argument("--replay-executions", action="store_true", help="retrain from the execution record "
                        "(<results>/executions/) into results/runs/replay-executions*/, executing nothing, and "
                        "compare every result and figure with the recorded campaign's")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seeds", nargs="+", type=int, metavar="S",
                       help="train only these seeds (default: the preset's); a variant: trains only")
    seeds.add_argument("--quick", action="store_true", help="with --campaign: a variant at the first of the "
                       "campaign's seeds (a first look, no intervals)")
    parser.add_argument("--executor", default=None, metavar="SPEC", help=EXECUTOR_HELP)
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel (default: python3, this interpreter)")
    parser.add_argument("--timeout", type=int, default=3600, help="seconds per cell in a redraw (default 3600)")
    return parser


def _check_args(parser: argparse.ArgumentParser, args) -> dict:
    """Refuse contradictory options (``parser.error``); fill ``args.seeds`` for ``--quick``; return the notebook
    parameters the options set, checked before any run trains: the executor (none for the default) and a quick
    variant's (:attr:`wmrl.campaigns.Campaign.quick`)."""
    if args.replay_only:
        parser.error("--replay-only is not an option: --redraw-only redraws the committed notebooks from results/ "
                     "(--replay-executions retrains a campaign from its execution record)")
    if args.preset not in available_presets():
        parser.error(f"unknown preset {args.preset!r}; choose one of {available_presets()}")
    try:  # the notebooks' training reads it (their EXECUTOR parameter): a bad one fails here, before any runs
        chosen = parse_executor(args.executor)
    except ValueError as e:
        parser.error(str(e))
    if args.quick:
        if not args.campaign:
            parser.error("--quick trains the first of a campaign's seeds: it needs --campaign")
        args.seeds = [quick_seed(args.campaign, args.preset)]
    if args.fresh and (not args.campaign or args.redraw_only):
        parser.error("--fresh removes a campaign's runs before training them: it needs --campaign and training "
                     "(not --redraw-only)")
    if args.replay_executions and (args.fresh or args.redraw_only):
        parser.error("--replay-executions retrains from the record into its own folder, going on where an earlier "
                     "replay by the same code from the same record stopped: not with --fresh (remove "
                     "results/runs/replay-executions*/ to start over) or --redraw-only")
    where = {} if args.executor is None else {"EXECUTOR": str(chosen)}
    return where | (dict(CAMPAIGNS[args.campaign].quick) if args.quick else {})


class NoRecord(FileNotFoundError):
    """``--replay-executions`` found no execution record to replay."""


@dataclass
class Plan:
    """Where one call of :func:`main` trains, and whether it redraws the committed notebooks.

    The committed notebooks, figures and RESULTS.md show REDRAW_PRESET's runs in results/ at its seeds.
    A variant (another preset, or other seeds: ``make reproduce-quick``) trains from scratch into its own
    folder ``results/runs/<variant>/`` (results, figures, executed notebooks) and rewrites nothing committed;
    so does a replay of the execution record (``recorded``: the recorded campaign's results and figures
    folders; ``copied``: the files copied from them, which the comparison skips)."""

    params: dict  # notebook parameters of every training: SEEDS, RESULTS_DIR, FIGURES_DIR, EXECUTOR
    redraws: bool
    records: Path = RUNS  # where the executed training notebooks go
    results_dir: Path = RESULTS
    figures_dir: Path = FIGURES
    recorded: tuple[Path, Path] | None = None
    copied: set[str] = field(default_factory=set)


def _plan(args, where: dict) -> Plan:
    """The folders of ``args``' call; for ``--replay-executions`` (:class:`NoRecord` without a record), its replay
    folder made empty, and what the campaign reads but does not own copied in (the dial's reference runs,
    notebook 05's results)."""
    params = {"SEEDS": args.seeds} if args.seeds else {}
    plan, variant = Plan(params, args.redraw_only or (args.preset == REDRAW_PRESET and not params)), None
    if not plan.redraws:
        variant = "-".join([args.preset] + ([f"seeds{'_'.join(map(str, args.seeds))}"] if args.seeds else []))
        plan.results_dir, plan.figures_dir = variant_folders(variant)
        plan.records = plan.results_dir.parent
    if args.replay_executions:
        plan.recorded = (plan.results_dir, plan.figures_dir)
        if not any((plan.results_dir / "executions").glob("*.jsonl.gz")):
            raise NoRecord(f"no execution record in {plan.results_dir / 'executions'}: a campaign trained by this "
                           "version of wmrl.reproduce writes one (the committed runs that predate it have none)")
        plan.results_dir, plan.figures_dir = variant_folders("-".join(["replay-executions"] + ([variant] if variant else [])))
        _resume_or_clear_replay(plan.results_dir.parent, _replay_stamp(plan.recorded[0]))
        plan.records, plan.redraws = plan.results_dir.parent, False
        if args.campaign:
            plan.copied = _copy_others(args.campaign, plan.recorded[0], plan.results_dir, args.preset, args.seeds)
    if not plan.redraws:
        plan.params.update(RESULTS_DIR=str(plan.results_dir), FIGURES_DIR=str(plan.figures_dir))
    plan.params.update(where)
    return plan


#: A replay folder's stamp: what it was replayed from and by (:func:`_replay_stamp`).
REPLAY_STAMP = "replayed-from.json"


def _replay_stamp(recorded: Path) -> dict:
    """What a replay's runs depend on: the code (:func:`~wmrl.provenance.code_digest`) and each execution
    record's sha256."""
    return {"code": code_digest(),
            "records": {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
                        for p in sorted((recorded / "executions").glob("*.jsonl.gz"))}}


def _resume_or_clear_replay(folder: Path, stamp: dict) -> None:
    """Keep a replay folder made by the same code from the same records, so that ``--replay-executions`` again
    goes on where it stopped: its finished runs kept, every unfinished one (no ``summary.json``) removed to
    retrain from its start. Any other folder is removed whole; the stamp is written either way."""
    kept = folder / REPLAY_STAMP
    if kept.is_file() and json.loads(kept.read_text()) == stamp:
        train = folder / "results" / "train"
        unfinished = [s for s in sorted(train.glob("*/*/seed*")) if not (s / "summary.json").is_file()]
        for run in unfinished:
            shutil.rmtree(run)
        done = len(list(train.glob("*/*/seed*/summary.json")))
        print(f"[replay] going on in {folder}: {done} runs replayed earlier by this code from these records kept, "
              f"{len(unfinished)} unfinished removed", flush=True)
    elif folder.exists():
        shutil.rmtree(folder)  # another code or record: every run is retrained
    folder.mkdir(parents=True, exist_ok=True)
    write_json_atomic(kept, stamp)


def _remove_fresh(campaign: str, root: Path, preset: str, seeds) -> None:
    """``--fresh``: remove the runs and results ``campaign`` owns under ``root``, and its execution record."""
    for path in selection(campaign, root, preset, seeds):
        print(f"--fresh: removing {path}", flush=True)
        shutil.rmtree(path)
    for path in (root / "executions").glob(f"{campaign}.*"):  # its record is made anew
        print(f"--fresh: removing {path}", flush=True)
        path.unlink()


def _record_spec(name: str, plan: Plan) -> tuple[str, Path | None]:
    """The execution record a notebook trains under (``replay:`` the recorded one, or ``record:`` its campaign's)
    and the file a record being made is exported to (None in a replay)."""
    if plan.recorded is not None:
        return f"replay:{plan.recorded[0] / 'executions'}", None
    export = plan.results_dir / "executions" / f"{campaign_of(name)}.jsonl.gz"
    export.parent.mkdir(parents=True, exist_ok=True)
    return f"record:{export}", export


def _looks_a_call(name: str) -> bool:
    """Whether a training call of the notebook trains one look of its design (its parameters name ``TRAIN_LOOKS``)."""
    import papermill as pm

    return "TRAIN_LOOKS" in pm.inspect_notebook(str(NOTEBOOKS / f"{name}.ipynb"))


def _recorded_runs(name: str, args, plan: Plan) -> set[Path]:
    """The recorded campaign's finished runs of the notebook's campaign, relative to its results folder."""
    root = plan.recorded[0]
    return {s.parent.relative_to(root) for path in selection(campaign_of(name), root, args.preset, args.seeds)
            for s in path.rglob("summary.json")}


def _replay_every_look(name: str, args, plan: Plan) -> None:
    """A replay of a notebook that trains a look a call: call it until every run the recorded campaign finished
    is retrained, or a call retrains none (the rest is not the notebook's to train)."""
    recorded, before = _recorded_runs(name, args, plan), None
    while True:
        train_notebook(name, args.preset, args.kernel, plan.params, plan.records)
        done = {r for r in recorded if (plan.results_dir / r / "summary.json").is_file()}
        if done == recorded or done == before:
            return
        print(f"[replay] {len(done)} of the {len(recorded)} recorded runs retrained: {name}'s next look", flush=True)
        before = done


def _run_notebook(name: str, args, plan: Plan, number: int = 1, total: int = 1) -> NotebookRun:
    """Train one notebook (unless ``--redraw-only``) and redraw it (if the plan redraws); a failure is reported
    in the outcome, not raised, so the next notebook still runs."""
    run = NotebookRun(name)
    print(f"\n=== {name} (notebook {number} of {total}, preset {args.preset}) ===", flush=True)
    try:
        _sync(name)
        if not args.redraw_only:
            spec, export = _record_spec(name, plan)
            t0 = time.perf_counter()
            with executions(spec, name, export):
                if plan.recorded is not None and _looks_a_call(name):
                    _replay_every_look(name, args, plan)
                else:
                    train_notebook(name, args.preset, args.kernel, plan.params, plan.records)
            run.train_s = time.perf_counter() - t0
        if plan.redraws:
            t0 = time.perf_counter()
            redraw_notebook(name, args.kernel, args.timeout)
            run.redraw_s = time.perf_counter() - t0
    except Exception as e:  # noqa: BLE001 -- report it and go on with the next notebook
        run.status, run.detail = "failed", str(e)
    return run


def _after_redraw(args, runs: list[NotebookRun], names: list[str]) -> NotebookRun:
    """After a campaign at the committed preset: its notebooks' durations and its agreement with the last commit
    (a fresh campaign only: a resumed one kept runs, which would agree with themselves); then RESULTS.md and
    the README's results block, rewritten from results/ (the returned outcome)."""
    if not args.redraw_only and any(r.train_s is not None for r in runs):
        record_durations(runs, resumed=not args.fresh)
        if args.campaign and args.fresh:
            try:
                found = agreement(args.campaign, names, RESULTS)
                _print_agreement(args.campaign, found)
                save_agreement(args.campaign, found, RESULTS)
            except Exception as e:  # noqa: BLE001 -- a report; the campaign's outcome stands
                print(f"agreement with the last commit not computed: {type(e).__name__}: {e}", file=sys.stderr)
    page = NotebookRun("RESULTS.md")
    try:
        write_results_page(RESULTS, RESULTS_PAGE, REDRAW_PRESET)
        write_readme_summary(RESULTS_PAGE, REPO / "README.md", RESULTS)
    except Exception as e:  # noqa: BLE001 -- the notebooks' outcome is still reported
        page.status, page.detail = "failed", f"{type(e).__name__}: {e}"[:400]
    return page


def _compare_replay(plan: Plan) -> NotebookRun:
    """``--replay-executions``: every file the replay wrote against the recorded campaign's, printed."""
    page = NotebookRun("replay-executions")
    recorded_results, recorded_figures = plan.recorded
    found = {k: a + b for (k, a), b in zip(compare_outputs(recorded_results, plan.results_dir, plan.copied).items(),
                                           compare_outputs(recorded_figures, plan.figures_dir).values())}
    print(f"\nreplayed from the execution record into {plan.records}/: {len(found['same'])} files identical to the "
          f"recorded campaign's, {len(found['rounding'])} equal but for the float32 rounding of the policy's "
          f"training diagnostics ({', '.join(FLOAT32_DIAGNOSTICS)}: this CPU computes their last bits "
          f"otherwise), {len(found['differ'])} different, {len(found['missing'])} not in it")
    for rel in found["differ"]:
        print(f"  differs: {rel}")
    for rel in found["missing"]:
        print(f"  not in the recorded campaign: {rel}")
    if any(rel.startswith("vla/") for rel in found["differ"]):
        print(f"  the VLA runs (notebook 06) compute the same bits on every x86-64 CPU with AVX2 and FMA "
              f"(wmrl.vla.exact, wmrl.vla.envs): on such a CPU a difference here is a finding to report, with "
              f"this CPU, {cpu_model()} (docs/reproducibility.md)")
    if found["differ"] or found["missing"] or not found["same"]:
        page.status, page.detail = "failed", (f"{len(found['differ'])} files differ, {len(found['missing'])} "
                                              "not in the recorded campaign")
    return page


#: The heading of the notebooks' closing report (:func:`report_line` its rows).
REPORT_HEADER = "notebook                 status    train_s  redraw_s  detail"


def report_line(r: NotebookRun) -> str:
    """One notebook's row of the closing report: name, status, train and redraw seconds ("-": none), detail."""
    return f"{r.name:<24} {r.status:<8} {_fmt(r.train_s)} {_fmt(r.redraw_s)}   {r.detail}"


def _report(runs: list[NotebookRun]) -> int:
    """Print each notebook's outcome; the exit status: 1 if any failed."""
    print("\n" + REPORT_HEADER)
    for r in sorted(runs, key=lambda r: r.name):
        print(report_line(r))
    failed = [r.name for r in runs if r.status == "failed"]
    if failed:
        print(f"\nFAILED: {', '.join(failed)} (the papermill record is in results/runs/<name>.ipynb)", file=sys.stderr)
    return 1 if failed else 0


def main(argv=None) -> int:
    """The command line (the module's docstring): train, redraw or replay the notebooks asked for, then report."""
    parser = _parser()
    args = parser.parse_args(argv)
    where = _check_args(parser, args)
    if args.timings:
        write_timings()
        print(f"wrote {TIMINGS} and {README}'s quick-start table")
        return 0
    ensure_kernel(args.kernel)
    try:
        plan = _plan(args, where)
    except NoRecord as e:
        print(e, file=sys.stderr)
        return 2
    if args.fresh:
        _remove_fresh(args.campaign, RESULTS if plan.redraws else plan.records / "results", args.preset, args.seeds)
    names, missing = discover(args.only, args.campaign)
    runs = [NotebookRun(n, status="skipped", detail="not in notebooks/ yet") for n in missing]
    runs += [_run_notebook(name, args, plan, number, len(names)) for number, name in enumerate(names, 1)]
    if plan.redraws:
        runs.append(_after_redraw(args, runs, names))
    elif plan.recorded is None:
        print(f"\nthe variant's results, figures and executed notebooks are in {plan.records}/ (the committed ones "
              f"show preset {REDRAW_PRESET}'s runs at its seeds and are left as they are)")
    if plan.recorded is not None:
        runs.append(_compare_replay(plan))
    return _report(runs)


def _fmt(seconds: float | None) -> str:
    return f"{seconds:8.1f}" if seconds is not None else "       -"


if __name__ == "__main__":
    sys.exit(main())
