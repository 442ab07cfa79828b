"""The campaign registry: which notebooks each campaign runs and which run folders it retrains.

The committed results come from five campaigns, each one command (``make reproduce``,
``make reproduce-dial``, ``make reproduce-beyond``, ``make reproduce-primary``, ``make reproduce-llm``,
which call ``python -m wmrl.reproduce --campaign NAME --fresh``). This table is the only place that says
what belongs to which: the notebooks by number, and the runs under ``results/train/<preset>/``
by label (``arm`` for a default run, ``arm~tag`` for a tagged one) and by seed. ``--fresh``
removes exactly a campaign's :func:`selection` before it trains, so one campaign never deletes
another's runs.

The runs are shared on purpose: the dial and beyond campaigns read the core campaign's default
runs as their references, and notebook 12 (beyond) trains the default and ``std`` runs at seeds
no other notebook uses (the preset's ``CONFIRM_SEEDS``), in the core campaign's folders. A new
ablation's tag must therefore not match another campaign's patterns: :func:`check_tag` refuses
it, naming the campaign that would delete or ignore its runs.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from wmrl.presets import notebook_params

__all__ = ["ALIASES", "CAMPAIGNS", "Campaign", "Runs", "campaign_of", "check_campaign", "check_tag", "claimed_by",
           "quick_seed", "selection"]

DEFAULT = ""  # the tag of a default (untagged) run: its folder is the arm's name
OTHER = None  # a Runs.tags entry: every tag no campaign names by pattern


@dataclass(frozen=True)
class Runs:
    """Run folders of ``results/train/<preset>/`` a campaign retrains.

    ``tags``: the folders' tags, as glob patterns (:data:`DEFAULT` for the untagged runs, :data:`OTHER`
    for every tag no campaign names, ``"*"`` for every folder); ``seeds``: the name of a list in the
    preset's notebook parameters (``"SEEDS"``), so only those ``seed<N>`` folders are the campaign's,
    or None for the whole folders.
    """

    tags: tuple[str | None, ...]
    seeds: str | None = None


@dataclass(frozen=True)
class Campaign:
    """One campaign: what it is, its notebooks (by number; None: every one no other campaign lists),
    its runs and the other result folders under ``results/`` it rebuilds whole (``{KEY}`` filled in
    from the preset's notebook parameters, ``{preset}`` with the preset's name), and the notebook
    parameter listing its seeds (a quick variant trains the first of them, with the notebook parameters
    ``quick`` sets: ``(name, value)`` pairs)."""

    about: str
    notebooks: tuple[int, ...] | None
    runs: tuple[Runs, ...] = ()
    folders: tuple[str, ...] = field(default=())
    seeds: str = "SEEDS"
    quick: tuple[tuple[str, object], ...] = ()


# Notebook 11's variants (notebooks/_regime.py), notebook 08's (notebooks/_fidelity_dial.py) and notebook
# 13's world-model arms (notebooks/_primary.py: WORLD_MODEL_TAG).
CORE_TAGS = ("std", "first_fit-*", "warmup_*")
DIAL_TAGS = ("oracle-*", "wm-*")
PRIMARY_TAGS = ("tuning",)
REDECLARED_TAGS = ("evalgrid",)  # notebook 15's grpo runs (notebooks/_redeclared.py: GRID_TAG)

CAMPAIGNS: dict[str, Campaign] = {
    "core": Campaign("the paper's experiments and the method in its regime, notebooks 00-06 and 11",
                     (0, 1, 2, 3, 4, 5, 6, 11),
                     runs=(Runs((DEFAULT, *CORE_TAGS), seeds="SEEDS"),),
                     folders=("fidelity/{preset}", "vla/{preset}", "vla/.work", "runs")),
    "dial": Campaign("the world-model fidelity dial, notebook 08 (it reads the core campaign's default runs)",
                     (8,), runs=(Runs(DIAL_TAGS),)),
    "beyond": Campaign("the rest of what the paper does not measure: notebooks 09, 10, 12 and every new ablation "
                       "(they read the core campaign's default runs)",
                       None, runs=(Runs((OTHER,)), Runs(("*",), seeds="CONFIRM_SEEDS"))),
    "primary": Campaign("the primary family, declared before its runs: notebook 13 (untrained, grpo, wm and wmrl "
                        "at the preset's PRIMARY_SEEDS, in looks; wm and wmrl with the world model fitted on "
                        "the tuning split)",
                        (13,), runs=(Runs((DEFAULT, *PRIMARY_TAGS), seeds="PRIMARY_SEEDS"),), seeds="PRIMARY_SEEDS"),
    "redeclared": Campaign("the primary family declared again at seeds no run had used: notebook 15 (untrained, "
                           "grpo, wm and wmrl at the preset's REDECLARED_SEEDS, in looks; grpo evaluated after each "
                           "of its first steps too)",
                           (15,), runs=(Runs((DEFAULT, *REDECLARED_TAGS), seeds="REDECLARED_SEEDS"),),
                           seeds="REDECLARED_SEEDS"),
    "llm": Campaign("the language-model agent on TRL, notebook 07 (five arms at the preset's LLM_SEEDS, in looks, "
                    "every run from one kept warm start)",
                    (7,), folders=("train/{LLM_PRESET}",), seeds="LLM_SEEDS",
                    # a first look within half an hour on 2 cores: GRPO, WMRL and the starts they are measured
                    # from; the pure world model (about 10 minutes a run) only in the looks
                    quick=(("LLM_ARMS", ["untrained", "sft", "grpo", "wmrl"]),)),
}


#: Words a user may type for a campaign that are not its name, with the campaign each means: the paper's
#: experiments are the ``core`` campaign ("paper" names the publication and its scale only).
ALIASES = {"paper": "core"}


def check_campaign(name: str) -> str:
    """``name`` if it is a campaign, else a ValueError that names the campaign meant (or lists them)."""
    if name in ALIASES:
        raise ValueError(f"there is no campaign {name!r}: notebooks 00-06 and 11 are the {ALIASES[name]!r} campaign "
                         f"(--campaign {ALIASES[name]}, CAMPAIGN={ALIASES[name]})")
    if name not in CAMPAIGNS:
        raise ValueError(f"unknown campaign {name!r}; choose one of {sorted(CAMPAIGNS)}")
    return name


def quick_seed(campaign: str, preset: str) -> int:
    """The seed a quick variant of ``campaign`` trains at ``preset``: the first of the campaign's seeds."""
    return notebook_params(preset)[CAMPAIGNS[campaign].seeds][0]


def campaign_of(name: str) -> str:
    """The campaign of notebook ``NN_name``: the one listing its number, else the one listing none."""
    number = int(name[:2])
    listed = [c for c, campaign in CAMPAIGNS.items() if campaign.notebooks and number in campaign.notebooks]
    return listed[0] if listed else next(c for c, campaign in CAMPAIGNS.items() if campaign.notebooks is None)


def _patterns() -> dict[str, str]:
    """Every tag pattern a campaign names (``"*"`` and :data:`OTHER` excepted), with its campaign."""
    return {p: c for c, campaign in CAMPAIGNS.items() for runs in campaign.runs for p in runs.tags
            if p not in (OTHER, "*", DEFAULT)}


def claimed_by(tag: str) -> str | None:
    """The campaign whose patterns name ``tag`` (None: the catch-all campaign's, a free tag)."""
    return next((c for p, c in _patterns().items() if fnmatch.fnmatchcase(tag, p)), None)


def check_tag(tag: str, campaign: str = "beyond") -> None:
    """Refuse a run tag that another campaign than ``campaign`` retrains (ValueError naming it)."""
    owner = claimed_by(tag)
    if owner not in (None, campaign):
        pattern = next(p for p, c in _patterns().items() if c == owner and fnmatch.fnmatchcase(tag, p))
        raise ValueError(f"tag {tag!r} matches {pattern!r}, a tag of the {owner} campaign's runs ({CAMPAIGNS[owner].about}): "
                         f"`make reproduce{'' if owner == 'core' else '-' + owner}` would delete them and the {campaign} "
                         "campaign would not retrain them; pick another name")


def _tag(label: str) -> str:
    return label.split("~", 1)[1] if "~" in label else DEFAULT


def _matches(tag: str, patterns) -> bool:
    for p in patterns:
        if p is OTHER:
            if tag != DEFAULT and claimed_by(tag) is None:
                return True
        elif p == DEFAULT:
            if tag == DEFAULT:
                return True
        elif fnmatch.fnmatchcase(tag, p):
            return True
    return False


def selection(campaign: str, results: str | Path, preset: str, seeds: list[int] | None = None) -> list[Path]:
    """The existing paths under ``results`` that ``campaign`` rebuilds at ``preset``, sorted.

    ``seeds`` replaces the preset's ``SEEDS`` (a variant trained at other seeds); the other seed
    lists (``CONFIRM_SEEDS``) are the preset's.
    """
    check_campaign(campaign)
    results, spec = Path(results), CAMPAIGNS[campaign]
    params = notebook_params(preset)
    if seeds is not None:
        params["SEEDS"] = list(seeds)
    found = [results / f.format(preset=preset, **params) for f in spec.folders]
    train = results / "train" / preset
    folders = sorted(p for p in train.iterdir() if p.is_dir()) if train.is_dir() else []
    for runs in spec.runs:
        for folder in folders:
            if not _matches(_tag(folder.name), runs.tags):
                continue
            if runs.seeds is None:
                found.append(folder)
            else:
                found += [folder / f"seed{s}" for s in params[runs.seeds]]
    return sorted({p for p in found if p.exists()})
