"""Ablations in one command: the variants of an arm, validated, and the notebook that compares them.

An ablation changes something about an arm (a *switch*: any field of :mod:`wmrl.config`, by its
dotted name) and compares the changed runs with the arm's default runs at the same seeds, paired
by seed. A *sweep* changes one field over several values in one notebook. Each variant is stored
under its own tag, so its runs never overwrite the default runs, nor one another:

=========================================================================  =====================
``new-ablation fusion --base-arm wmrl --set method.fusion=scale_only``     ``wmrl~fusion``
``new-ablation anchors --base-arm wmrl --sweep method.anchor_fraction=``   ``wmrl~anchors-0.05``,
``0.05,0.25``                                                              ``wmrl~anchors-0.25``
=========================================================================  =====================

:func:`plan` turns a name, overrides and a sweep into :class:`Variant` objects and validates each
against the presets of :mod:`wmrl.presets`, so a wrong field fails before anything is written or
trained. :func:`write_notebook` copies ``notebooks/TEMPLATE_ablation.py`` into the next free
``NN_name`` pair with its parameters filled in; ``python -m wmrl.experiments new-ablation`` calls it.
Reusing a tag with other overrides is refused by :func:`wmrl.experiments.collect.ensure_runs`; a
tag another campaign retrains (notebook 11's ``std``, notebook 08's ``oracle-*``...) is refused by
:func:`plan` given the notebook's campaign (:func:`wmrl.campaigns.check_tag`; :func:`write_notebook`
and the template pass it), so ``make reproduce-beyond`` retrains the
ablation's runs and no other campaign deletes them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from wmrl.campaigns import campaign_of, check_tag
from wmrl.config import SCHEDULING_FIELDS, ConfigError
from wmrl.presets import preset_names, run_config
from wmrl.provenance import REPO

__all__ = ["NOTEBOOKS", "TEMPLATE", "Variant", "next_number", "plan", "realised_as_base", "write_notebook"]

NOTEBOOKS = REPO / "notebooks"
TEMPLATE = NOTEBOOKS / "TEMPLATE_ablation.py"
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Variant:
    """One changed configuration of the base arm: its tag (its runs' folder) and its overrides."""

    tag: str
    overrides: dict
    value: object = None  # the swept field's value (None without a sweep)

    def label(self, base_arm: str) -> str:
        """The arm label its runs carry in tables (``wmrl~anchors-0.25``)."""
        return f"{base_arm}~{self.tag}"


def _value_text(value) -> str:
    """A swept value as it appears in a tag: ``0.25``, ``scale_only``, ``true``."""
    text = value if isinstance(value, str) else json.dumps(value)
    if not text or re.search(r"[/~\s]", text):
        raise ConfigError(f"sweep value {value!r} cannot name a results folder (no '/', '~' or spaces)")
    return text


def _check_fields(overrides: dict, what: str) -> None:
    if not isinstance(overrides, dict):
        raise ConfigError(f"{what} must be a dict of dotted config fields, e.g. {{'method.fusion': 'scale_only'}}, "
                          f"got {overrides!r}")
    scheduling = sorted(set(overrides) & set(SCHEDULING_FIELDS))
    if scheduling:
        raise ConfigError(f"{what} sets {scheduling}, which change where or how fast a run goes, not what it "
                          "computes (wmrl.config.SCHEDULING_FIELDS): an ablation of them would compare a run with itself")


def plan(name: str, base_arm: str, overrides: dict | None = None, sweep: dict | None = None,
         presets=None, campaign: str | None = None) -> list[Variant]:
    """The variants of an ablation called ``name``, each validated against every preset in ``presets``.

    ``overrides`` apply to every variant; ``sweep`` is ``{field: [value, ...]}`` (one field, two
    values or more), one variant per value, tagged ``<name>-<value>``; without a sweep there is
    one variant, tagged ``name``. A variant that equals the base arm's configuration at every
    preset is refused: it would train a copy of the default runs. With ``campaign`` (the notebook's, in
    :mod:`wmrl.campaigns`), a tag another campaign retrains is refused.
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ConfigError(f"ablation name {name!r} must be lower-case letters, digits and '_', starting with a "
                          "letter (it names the notebook and the results folder), e.g. 'anchor_sweep'")
    overrides, sweep = dict(overrides or {}), dict(sweep or {})
    _check_fields(overrides, "the overrides")
    _check_fields(sweep, "the sweep")
    if len(sweep) > 1:
        raise ConfigError(f"a sweep varies one field, got {sorted(sweep)}; make one ablation per field")
    if not overrides and not sweep:
        raise ConfigError("an ablation changes something: pass --set SECTION.FIELD=VALUE or "
                          "--sweep SECTION.FIELD=V1,V2 (see wmrl/config.py for the fields)")
    if sweep:
        (field, values), = sweep.items()
        if field in overrides:
            raise ConfigError(f"{field} is both set ({overrides[field]!r}) and swept; drop one of them")
        if not isinstance(values, (list, tuple)) or len(values) < 2 or len(set(map(repr, values))) < len(values):
            raise ConfigError(f"the sweep of {field} needs two or more distinct values, got {values!r} "
                              "(for a single value use --set)")
        variants = [Variant(f"{name}-{_value_text(v)}", {**overrides, field: v}, v) for v in values]
    else:
        variants = [Variant(name, overrides)]
    for v in variants:
        try:
            if campaign is not None:
                check_tag(v.tag, campaign)
        except ValueError as e:
            raise ConfigError(f"ablation {name!r}: {e}") from None
        changes = False
        for preset in presets or preset_names():
            try:
                base = run_config(base_arm, preset)
                changes |= run_config(base_arm, preset, overrides=v.overrides).identity() != base.identity()
            except ConfigError as e:
                raise ConfigError(f"variant {v.label(base_arm)!r} at preset {preset!r}: {e}") from None
        if not changes:
            raise ConfigError(f"variant {v.label(base_arm)!r} changes nothing: {v.overrides} are already the "
                              f"configuration of {base_arm!r} at presets {list(presets or preset_names())}")
    return variants


# What a run realised: the groups it routed, its updates and rewards at every step, its held-out rows.
_REALISED = {"steps": ["step", "n_groups", "n_executed_groups", "train_reward", "loss"],
             "eval": ["step", "task", "samples", "percentile"]}


def realised_as_base(runs, base: str, label: str) -> bool:
    """Whether the runs of variant ``label`` realised exactly what the ``base`` arm's runs did at every
    seed both have: the same groups routed, losses and rewards at every step, the same held-out rows.
    Such a variant differs from its base in configuration only (at a small preset a changed anchor
    fraction can still round to the same anchor groups), so its difference is 0 by construction."""
    import pandas as pd

    dirs = {arm: dict(zip(runs[runs.arm == arm].seed, runs[runs.arm == arm].dir)) for arm in (base, label)}
    seeds = sorted(dirs[base].keys() & dirs[label].keys())
    if not seeds:
        return False
    for seed in seeds:
        for name, cols in _REALISED.items():
            a, b = (pd.read_parquet(Path(dirs[arm][seed]) / f"{name}.parquet") for arm in (base, label))
            cols = [c for c in cols if c in a and c in b]
            if len(a) != len(b) or not a[cols].reset_index(drop=True).equals(b[cols].reset_index(drop=True)):
                return False
    return True


def next_number(notebooks_dir: str | Path = NOTEBOOKS) -> int:
    """The next free ``NN`` after the highest numbered notebook (``.ipynb`` or ``.py``)."""
    numbers = [int(p.name[:2]) for p in Path(notebooks_dir).glob("[0-9][0-9]_*") if p.suffix in (".ipynb", ".py")]
    n = max(numbers, default=-1) + 1
    if n > 99:
        raise ConfigError(f"no free two-digit notebook number left in {notebooks_dir}")
    return n


def _literal(value) -> str:
    """Python source for a JSON-like value, in the notebooks' style (double quotes)."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k)}: {_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(map(_literal, value)) + "]"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _fill(source: str, values: dict) -> str:
    for key, value in values.items():
        line = f"{key} = {_literal(value)}"
        source, n = re.subn(rf"^{key} = .*$", lambda _, line=line: line, source, flags=re.MULTILINE)
        if n != 1:
            raise RuntimeError(f"the template's parameters cell must set {key} once on a line of its own (found {n})")
    return source


def _describe(base_arm: str, overrides: dict, sweep: dict) -> str:
    parts = [f"{k}={v!r}" for k, v in overrides.items()]
    parts += [f"{k} ∈ {{{', '.join(map(repr, vs))}}}" for k, vs in sweep.items()]
    return f"`{base_arm}` with {', '.join(parts)}, against its default runs"


def write_notebook(name: str, base_arm: str, overrides: dict | None = None, sweep: dict | None = None,
                   notebooks_dir: str | Path = NOTEBOOKS, template: str | Path = TEMPLATE,
                   command: str | None = None) -> tuple[Path, Path]:
    """Write ``NN_name.ipynb`` and its paired ``NN_name.py`` from the template, parameterised.

    Validates first (:func:`plan`) and refuses an existing ``NN_name`` under any number, so an
    error writes nothing. ``command`` is the command line recorded in the notebook's header.
    Returns the two paths.
    """
    import jupytext
    from nbformat.v4 import new_markdown_cell

    overrides, sweep = dict(overrides or {}), dict(sweep or {})
    notebooks_dir = Path(notebooks_dir)
    plan(name, base_arm, overrides, sweep, campaign=campaign_of(f"{next_number(notebooks_dir):02d}_{name}"))
    existing = sorted(p.name for p in notebooks_dir.glob(f"[0-9][0-9]_{name}.*") if p.suffix in (".ipynb", ".py"))
    if existing:
        raise ConfigError(f"an ablation called {name!r} exists already ({', '.join(existing)} in {notebooks_dir}); "
                          "pick another name, or delete that notebook (and its results) first")
    stem = f"{next_number(notebooks_dir):02d}_{name}"
    nb = jupytext.read(template)
    params = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(params) != 1 or nb.cells[0].cell_type != "markdown":
        raise RuntimeError(f"{template} must open with a markdown cell and have one cell tagged 'parameters'")
    params[0].source = _fill(params[0].source, {"ABL_NAME": stem, "ABL_BASE_ARM": base_arm, "ABL_OVERRIDES": overrides,
                                                "ABL_SWEEP": sweep, "ABL_TAG": name})
    nb.cells[0] = new_markdown_cell(
        f"# {stem[:2]} · {name}: {_describe(base_arm, overrides, sweep)}\n\n"
        f"Written{f' by `{command}`' if command else ''} from `notebooks/TEMPLATE_ablation.py`.\n\n"
        "**Background (edit).** The question this ablation asks, the paper's equation or claim it bears on, "
        "and the outcome you expect; then state that expectation in the claims cell at the end.")
    ipynb, py = notebooks_dir / f"{stem}.ipynb", notebooks_dir / f"{stem}.py"
    jupytext.write(nb, ipynb)
    jupytext.write(nb, py, fmt="py:percent")
    return ipynb, py
