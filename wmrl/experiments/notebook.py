"""The notebook convention: parameters, presets, results with provenance, figures.

Every experiment notebook follows the same rhythm, so that ``make reproduce`` (papermill, MODE
"train") and ``make test`` (nbval on the committed notebook, MODE "redraw") can drive all of them:

1. A cell tagged ``parameters`` with ``MODE = "redraw"``, ``PRESET = "small"``, ``SEEDS = None``,
   ``RESULTS_DIR = "../results"``, ``FIGURES_DIR = "../figures"`` and the notebook's own keys,
   prefixed by the notebook (``THEORY_STEPS``...), set to ``None``. ``None`` means "take it from
   the preset" (the ``notebook`` block of :mod:`wmrl.presets`), so ``-p PRESET smoke`` and ``-p
   THEORY_STEPS 50`` both do what they say. Paths are relative to ``notebooks/`` (papermill and
   nbval run with that working directory). The committed outputs show :data:`REDRAW_PRESET`; another
   preset left at the default folders writes to its own, ``results/runs/<preset>/results`` and
   ``.../figures`` (:func:`variant_folders`, where ``python -m wmrl.reproduce --preset`` writes it
   too), so ``papermill -p PRESET smoke`` never touches a committed file. An ``EXECUTOR`` (where
   missing runs train, :mod:`wmrl.experiments.executor`) may be passed to any notebook without its
   parameters cell naming it: ``-p EXECUTOR ray``.
2. Right after it, ``cfg = check_params(globals(), notebook=..., keys=[...], results_subdir=...)``.
   A wrong parameter fails *here*, with a message that says what to pass, instead of an
   obscure error twenty cells later.
3. MODE "train" computes and writes with :func:`save_results` (a provenance sidecar beside each
   file); MODE "redraw" reads with :func:`load_results`. Figures go through :func:`save_figure`.
   The final tables are in cells tagged ``nbval-check-output`` (nothing random or timed).
"""

from __future__ import annotations

import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from wmrl.config import ConfigError
from wmrl.experiments.executor import DEFAULT as EXECUTOR_DEFAULT
from wmrl.experiments.executor import parse_executor
from wmrl.experiments.plots import ARM_COLORS, describe_axes, use_style
from wmrl.presets import notebook_params, preset_names
from wmrl.provenance import REPO, atomic_path, provenance, write_json_atomic

__all__ = [
    "ARM_COLORS",
    "COMMON_KEYS",
    "MODES",
    "REDRAW_PRESET",
    "Declared",
    "NotebookConfig",
    "ParameterError",
    "available_presets",
    "check_choice",
    "check_params",
    "declared_claims",
    "ensure_kernel",
    "load_results",
    "provenance_table",
    "save_claims",
    "save_figure",
    "save_findings",
    "save_results",
    "use_style",
    "variant_folders",
    "withdraw_claims",
]

MODES = ("redraw", "train")
COMMON_KEYS = ("MODE", "PRESET", "SEEDS", "RESULTS_DIR", "FIGURES_DIR")
REDRAW_PRESET = "small"  # the preset the committed notebooks, figures and results show
COMMITTED_RESULTS, COMMITTED_FIGURES = REPO / "results", REPO / "figures"
# ``ARM_COLORS`` and ``use_style`` live in :mod:`wmrl.experiments.plots`; they are re-exported here
# because every notebook already holds this module as ``nb``.


class ParameterError(ValueError):
    """A notebook parameter is wrong; the message says what to pass instead."""


def available_presets() -> list[str]:
    """Names of the presets of :mod:`wmrl.presets` (``smoke``, ``small``, ...)."""
    return preset_names()


def variant_folders(name: str) -> tuple[Path, Path]:
    """The results and figures folders of a variant run called ``name`` (a preset, or a preset at other
    seeds): ``results/runs/<name>/results`` and ``results/runs/<name>/figures``, apart from the committed ones."""
    root = COMMITTED_RESULTS / "runs" / name
    return root / "results", root / "figures"


def check_choice(name: str, value, choices) -> None:
    """Fail with the list of valid values when ``value`` is not one of ``choices``."""
    choices = list(choices)
    if value not in choices:
        raise ParameterError(f"{name}={value!r} is not valid; pass one of {choices} (papermill: -p {name} {choices[0]})")


def _check_seeds(seeds) -> list[int]:
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        seeds = [seeds]
    if not isinstance(seeds, (list, tuple)) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise ParameterError(
            f"SEEDS must be a non-empty list of integers; got {seeds!r}. Papermill's -p passes lists as text: "
            f"use -y 'SEEDS: [0, 1, 2]' (or -p SEEDS 0 for one seed)"
        )
    return list(seeds)


@dataclass(frozen=True)
class NotebookConfig:
    """The resolved parameters of one notebook run (what :func:`check_params` returns)."""

    notebook: str
    mode: str
    preset: str
    seeds: list[int]
    results_dir: Path
    figures_dir: Path
    values: dict = field(default_factory=dict)
    #: where missing runs train (:mod:`wmrl.experiments.executor`): how, not what, so not in :meth:`as_dict`
    executor: str = EXECUTOR_DEFAULT

    @property
    def train(self) -> bool:
        return self.mode == "train"

    def __getitem__(self, key: str):
        return self.values[key]

    def shown(self, subdir: str) -> Path:
        """The folder ``subdir`` of the results as a notebook prints it: relative to the checkout when it lies
        inside it, so that a committed output names no machine's path."""
        folder = self.results_dir / subdir
        return folder.relative_to(REPO) if folder.is_relative_to(REPO) else folder

    def as_dict(self) -> dict:
        """Everything that determines the results, as stamped into their provenance."""
        return {"notebook": self.notebook, "mode": self.mode, "preset": self.preset, "seeds": self.seeds, **self.values}


def check_params(
    ns: dict, notebook: str, keys=(), results_subdir: str | None = None, choices: dict | None = None,
    seeds_key: str = "SEEDS",
) -> NotebookConfig:
    """Validate and resolve a notebook's parameters; call it in the cell after ``parameters``.

    Args:
        ns: the notebook's ``globals()`` after the parameters (and papermill's injected) cells.
        notebook: the notebook's name, e.g. ``"00_theory"`` (recorded in provenance).
        keys: the notebook's own parameter names; ``None`` values are filled from the preset.
        results_subdir: the folder under ``RESULTS_DIR`` this notebook writes; in redraw mode it
            must already hold results.
        choices: ``{key: allowed values}`` for keys with a closed set of values (arms...).
        seeds_key: the preset's key that ``SEEDS=None`` takes its seeds from (a confirmatory notebook's
            seeds are not the campaign's).
    """
    missing = [k for k in COMMON_KEYS if k not in ns]
    if missing:
        raise ParameterError(f"the parameters cell must define {list(COMMON_KEYS)}; missing {missing}")
    if ns["MODE"] == "replay":
        raise ParameterError("MODE='replay' is not a mode: MODE='redraw' redraws from RESULTS_DIR (papermill: -p MODE "
                             "redraw); retraining from an execution record is python -m wmrl.reproduce --replay-executions")
    check_choice("MODE", ns["MODE"], MODES)
    check_choice("PRESET", ns["PRESET"], available_presets())
    try:
        preset = notebook_params(ns["PRESET"])
    except ConfigError as e:
        raise ParameterError(str(e)) from None
    resolved = {}
    for key in ("SEEDS", *keys):
        value = ns.get(key)
        if value is None:
            source = seeds_key if key == "SEEDS" else key
            if source not in preset:
                raise ParameterError(
                    f"{key} is None and preset {ns['PRESET']!r} has no {source}: add it to the preset's notebook "
                    f"block in wmrl/presets.py or pass {key} (papermill: -p {key} <value>)"
                )
            value = preset[source]
        resolved[key] = value
    for key, allowed in (choices or {}).items():
        if key not in resolved:
            raise ValueError(f"check_params(choices=...) names {key!r}, which is not one of keys={list(keys)}")
        values = resolved[key] if isinstance(resolved[key], (list, tuple)) else [resolved[key]]
        for v in values:
            check_choice(key, v, allowed)
    seeds = _check_seeds(resolved.pop("SEEDS"))
    results_dir, figures_dir = Path(ns["RESULTS_DIR"]).resolve(), Path(ns["FIGURES_DIR"]).resolve()
    if ns["PRESET"] != REDRAW_PRESET:  # another preset never writes into the committed folders
        own_results, own_figures = variant_folders(ns["PRESET"])
        results_dir = own_results if results_dir == COMMITTED_RESULTS.resolve() else results_dir
        figures_dir = own_figures if figures_dir == COMMITTED_FIGURES.resolve() else figures_dir
    if ns["MODE"] == "redraw" and results_subdir is not None:
        folder = results_dir / results_subdir
        if not folder.is_dir() or not any(folder.iterdir()):
            raise ParameterError(
                f"MODE='redraw' needs results in {folder}, which has none. Run with MODE='train' first "
                f"(papermill: -p MODE train -p PRESET smoke) or pass RESULTS_DIR pointing at a folder "
                f"that holds {results_subdir}/."
            )
    try:  # only training reads it: a redraw trains nothing
        executor = str(parse_executor(ns.get("EXECUTOR"))) if ns["MODE"] == "train" else EXECUTOR_DEFAULT
    except ValueError as e:
        raise ParameterError(f"{e} (papermill: -p EXECUTOR local:2)") from None
    return NotebookConfig(notebook, ns["MODE"], ns["PRESET"], seeds, results_dir, figures_dir, resolved, executor)


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".provenance.json")


def _provenance_of(result: Path) -> dict | None:
    """A result file's provenance: its sidecar, else the ``provenance`` that a training run keeps
    in its own JSON (a VLA run's file, a trainer run's ``summary.json`` beside its tables)."""
    if _sidecar(result).is_file():
        return json.loads(_sidecar(result).read_text())
    for holder in (result, result.with_name("summary.json")):
        if holder.suffix == ".json" and holder.is_file():
            data = json.loads(holder.read_text())
            found = data.get("provenance") if isinstance(data, dict) else None  # calibration.json is a list
            if found:
                return found
    return None


def save_results(obj, name: str, cfg: NotebookConfig, subdir: str, seed: int | None = None, *,
                 keep_unchanged: bool = False) -> Path:
    """Write a result (DataFrame -> parquet, dict -> JSON) and its provenance sidecar, atomically.

    Why a sidecar: parquet and JSON results stay plain data that any tool reads, and the
    provenance (config, seeds, git commit, date, machine) of every number sits right beside it.
    ``keep_unchanged``: a result equal to the one already saved (with its sidecar) is left as it
    is, so redrawing unchanged numbers leaves the files and their provenance untouched.
    """
    folder = cfg.results_dir / subdir
    if isinstance(obj, pd.DataFrame):
        path, read = folder / f"{name}.parquet", pd.read_parquet
    elif isinstance(obj, dict):
        path, read = folder / f"{name}.json", lambda p: json.loads(p.read_text())
    else:
        raise TypeError(f"save_results takes a DataFrame or a dict, got {type(obj).__name__}")
    if keep_unchanged and path.is_file() and _sidecar(path).is_file() and _equal(read(path), obj):
        return path
    if isinstance(obj, pd.DataFrame):
        with atomic_path(path) as tmp:
            obj.to_parquet(tmp, index=False)
    else:
        write_json_atomic(path, obj)
    write_json_atomic(_sidecar(path), provenance(cfg.as_dict(), seed))
    return path


def _equal(saved, obj) -> bool:
    """Whether a saved result holds ``obj``: a frame as parquet reads it back (index dropped), a dict as JSON."""
    if isinstance(obj, pd.DataFrame):
        return saved.equals(obj.reset_index(drop=True))
    return saved == json.loads(json.dumps(obj))


def load_results(name: str, cfg: NotebookConfig, subdir: str):
    """Read what :func:`save_results` wrote (parquet -> DataFrame, JSON -> dict)."""
    folder = cfg.results_dir / subdir
    for suffix, reader in ((".parquet", pd.read_parquet), (".json", lambda p: json.loads(p.read_text()))):
        path = folder / f"{name}{suffix}"
        if path.is_file():
            return reader(path)
    raise ParameterError(
        f"no result {name!r} in {folder}; run the notebook with MODE='train' (and the same RESULTS_DIR) first"
    )


CLAIMS_SUBDIR = "claims/{preset}"  # under RESULTS_DIR: one declared claims table per notebook


def save_claims(table: pd.DataFrame, cfg: NotebookConfig, title: str, sentences=()) -> Path:
    """Declare a notebook's claims: its claims table (:func:`wmrl.experiments.claims.evaluate_claims`'s)
    with the notebook's ``title`` and its closing ``sentences`` for FINDINGS.md (none: the table's own
    :func:`~wmrl.experiments.claims.what_we_see`), in ``claims/<preset>/<notebook>.parquet`` under
    ``RESULTS_DIR`` with provenance. RESULTS.md reads every declared table, so a notebook reaches the
    page with no edit to library code. An unchanged declaration is not rewritten, so a redraw of
    unchanged results leaves the file and its provenance as they were."""
    if "claim" in table.columns or table.index.name != "claim":
        raise ValueError("save_claims takes claims.evaluate_claims's table, indexed by claim")
    if not isinstance(title, str) or not title.strip():
        raise ParameterError("save_claims needs the notebook's title (a few words: what it compares)")
    if any("\n" in s for s in sentences):
        raise ValueError("a declared sentence is one line")
    frame = table.reset_index().assign(title=title, findings="\n".join(sentences))
    return save_results(frame, cfg.notebook, cfg, CLAIMS_SUBDIR.format(preset=cfg.preset), keep_unchanged=True)


def withdraw_claims(cfg: NotebookConfig) -> None:
    """Remove the notebook's declared claims (:func:`save_claims`) and their provenance, where there are any: a
    notebook whose design has no analysed data yet declares nothing, rather than leave an earlier design's table
    on the page as if it were its own."""
    path = cfg.results_dir / CLAIMS_SUBDIR.format(preset=cfg.preset) / f"{cfg.notebook}.parquet"
    for stale in (path, _sidecar(path)):
        stale.unlink(missing_ok=True)


def save_findings(sentences, cfg: NotebookConfig, title: str) -> Path:
    """Declare the closing ``sentences`` of a notebook that has numbers rather than claims (FINDINGS.md
    prints them under its ``title``), in ``claims/<preset>/<notebook>.json`` beside the declared claims;
    an unchanged declaration is not rewritten."""
    sentences = [str(s) for s in sentences]
    if not isinstance(title, str) or not title.strip():
        raise ParameterError("save_findings needs the notebook's title (a few words: what it shows)")
    found = {"title": title, "sentences": sentences}
    return save_results(found, cfg.notebook, cfg, CLAIMS_SUBDIR.format(preset=cfg.preset), keep_unchanged=True)


@dataclass(frozen=True)
class Declared:
    """One notebook's declared claims (:func:`save_claims`): its title, its claims table, its sentences
    (empty when it declared none)."""

    title: str
    table: pd.DataFrame
    sentences: list[str]


def declared_claims(results_dir: str | Path, preset: str) -> dict[str, Declared]:
    """Every declaration :func:`save_claims` and :func:`save_findings` wrote at ``preset``, by notebook."""
    folder = Path(results_dir) / CLAIMS_SUBDIR.format(preset=preset)
    out = {}
    for path in sorted(folder.glob("*.parquet")):
        frame = pd.read_parquet(path)
        title = str(frame.pop("title").iloc[0]) if len(frame) else path.stem
        found = frame.pop("findings").iloc[0] if "findings" in frame and len(frame) else ""
        out[path.stem] = Declared(title, frame.set_index("claim"), found.split("\n") if found else [])
    for path in sorted(p for p in folder.glob("*.json") if not p.name.endswith(".provenance.json")):
        found = json.loads(path.read_text())
        out[path.stem] = Declared(found["title"], pd.DataFrame(), found["sentences"])
    return out


def provenance_table(cfg: NotebookConfig, subdir: str) -> pd.DataFrame:
    """One row per result file of ``subdir``: which commit, preset, seeds and date produced it."""
    rows = []
    for side in sorted((cfg.results_dir / subdir).glob("*.provenance.json")):
        p = json.loads(side.read_text())
        conf = p.get("config", {})
        rows.append({
            "file": side.name.removesuffix(".provenance.json"),
            "preset": conf.get("preset"),
            "seeds": conf.get("seeds"),
            "git_commit": (p.get("git_commit") or "")[:10] + ("+dirty" if p.get("git_dirty") else ""),
            "date": p.get("date"),
            "python": p.get("machine", {}).get("python"),
        })
    return pd.DataFrame(rows, columns=["file", "preset", "seeds", "git_commit", "date", "python"])


def save_figure(fig, name: str, cfg: NotebookConfig, caption: str, sources=()) -> Path:
    """Write ``figures/<name>.png`` and ``<name>.png.provenance.json`` (caption, panels, sources).

    The sidecar names the result files the figure was drawn from (relative to ``RESULTS_DIR``)
    and copies their provenance, so a figure can be traced to the runs that produced its numbers;
    it also describes each panel (title, axis labels, legend entries, read from matplotlib's
    objects by :func:`~wmrl.experiments.plots.describe_axes`), which the figure test checks. The PNG itself carries no
    date or commit, so redrawing unchanged results gives identical bytes, and an unchanged file is
    not rewritten (nbval's redraw of the committed notebooks leaves ``figures/`` untouched).
    """
    path = cfg.figures_dir / f"{name}.png"
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight", metadata={"Title": name, "Description": caption})
    if not path.is_file() or path.read_bytes() != buf.getvalue():
        with atomic_path(path) as tmp:
            tmp.write_bytes(buf.getvalue())
    side = {"figure": path.name, "caption": caption, "notebook": cfg.notebook, "panels": describe_axes(fig),
            "sources": {}}
    for src in map(Path, sources):
        src = src.resolve()
        key = str(src.relative_to(cfg.results_dir)) if src.is_relative_to(cfg.results_dir) else src.name
        side["sources"][key] = _provenance_of(src)
    text = json.dumps(side, indent=2, sort_keys=True, default=str) + "\n"
    if not _sidecar(path).is_file() or _sidecar(path).read_text() != text:
        write_json_atomic(_sidecar(path), side)
    return path


def ensure_kernel(name: str = "python3") -> str:
    """Make sure the Jupyter kernel ``name`` runs *this* interpreter; install it if not.

    papermill and nbval start kernels by name. On a fresh machine the ``python3`` spec may be
    missing, or a user-level spec may point at another Python (without wmrl installed). The spec
    that ipykernel ships says ``python``, which jupyter_client maps to the calling interpreter;
    anything else is replaced by ``ipykernel install --sys-prefix`` (a spec inside this venv).
    """
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    try:
        argv0 = KernelSpecManager().get_kernel_spec(name).argv[0]
    except NoSuchKernel:
        argv0 = None
    if argv0 in ("python", "python3", sys.executable):
        return name
    from ipykernel.kernelspec import install

    install(kernel_name=name, prefix=sys.prefix)
    return name
