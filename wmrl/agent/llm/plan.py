"""The ``plan`` contract: the agent writes the grammar's decisions as a few ``key=value`` lines.

A 135M model does not write a runnable ML script from a task description, but it can choose. Under
this contract (a labelled departure from the paper's full scripts, of the same shape as
plan-then-code agents) the reply is a short plan, e.g. for a table::

    categorical=onehot
    preprocess=impute_standardize
    model=forest
    capacity=medium
    validation=holdout

and the grammar agent's own renderer (:func:`wmrl.agent.grammar.render`) turns it into the
complete script, which is then run, graded and scored like any other. The plan's keys are the
grammar's slots (:data:`~wmrl.agent.grammar.SLOTS`), its values their options, so a plan and the
grammar agent's decisions are one and the same thing, and a plan renders to exactly the script the
grammar agent writes for the same decisions.

Which keys a plan names:

- **design keys** (:func:`design_keys`), required: every slot that offers a real choice on the
  task and is a design decision (features and preprocessing for its category, model family,
  capacity, validation); the prompt lists them with their open options (:func:`plan_lines`);
- **incidental keys** (:data:`INCIDENTAL`: the file and column read, the API used, how the data is
  used, the submission written), optional: the grammar's slots where real agents slip. Left out,
  each takes its neutral first option (the right file and column, today's API, clean use, a
  correct submission). The prompt does not offer them, and the warm start's targets leave them
  out (:func:`design_choices`): a planner chooses the design, the renderer writes the rest;
  :func:`plan_text` names them where given choices deviate;
- a slot that does not apply to the task's category has its neutral option alone; naming it with
  any other value is an invalid plan.

Parsing is strict (:func:`parse_plan`): the answer (after any thinking, inside a fence if there is
one: :func:`wmrl.agent.llm.solution.plan_answer`) must be ``key=value`` lines only, every key a known slot named once, every value an option
open for the task, every design key present. Anything else raises :class:`PlanError` with the
first reason found, which the rollout turns into a ``malformed`` reply (reward 0.0, not run) whose
feedback quotes the reason, so a later turn can fix it. Tokens are few: a design key and its value
cost about five SmolLM2 tokens.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from wmrl.agent.grammar import SLOTS, option_mask

__all__ = ["INCIDENTAL", "PlanError", "design_choices", "design_keys", "parse_plan", "plan_lines", "plan_text"]

#: Slots a plan may leave out (their first option is the neutral one): where a real agent slips, not what it designs.
INCIDENTAL = ("train_file", "target", "api", "data_use", "submission")

_LINE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(\S+)\s*$")
_SLOT = {s.name: s for s in SLOTS}


class PlanError(ValueError):
    """A reply that is not a valid plan for its task; the message says the first thing wrong."""


def _open(task) -> dict[str, tuple[str, ...]]:
    """The options each slot leaves open for ``task`` (the grammar's masks)."""
    return {s.name: tuple(o for o, ok in zip(s.options, m) if ok) for s, m in zip(SLOTS, option_mask(task))}


def design_keys(task) -> tuple[str, ...]:
    """The keys a plan for ``task`` must name, in slot order: the design slots with more than one open option."""
    opened = _open(task)
    return tuple(s.name for s in SLOTS if s.name not in INCIDENTAL and len(opened[s.name]) > 1)


def design_choices(choices: Mapping[str, str]) -> dict[str, str]:
    """Grammar ``choices`` with every incidental slot at its neutral option: the decisions a plan makes (its
    :func:`plan_text` names the design keys only)."""
    return {**choices, **{k: _SLOT[k].options[0] for k in INCIDENTAL}}


def plan_lines(task) -> list[str]:
    """The prompt's list of the design keys, ``key=option|option|...``: the keys and options are the grammar's
    names, which say what they decide (a gloss per key would cost every row of the update its tokens)."""
    opened = _open(task)
    return [f"{k}={'|'.join(opened[k])}" for k in design_keys(task)]


def plan_text(task, choices: Mapping[str, str]) -> str:
    """The plan of grammar ``choices`` for ``task`` (a warm start's target): every design key, then each
    incidental key whose choice is not its neutral option, in slot order."""
    keys = [*design_keys(task), *(s.name for s in SLOTS if s.name in INCIDENTAL and choices[s.name] != s.options[0])]
    return "\n".join(f"{k}={choices[k]}" for k in keys)


def parse_plan(task, text: str) -> dict[str, str]:
    """The grammar choices of the plan ``text`` for ``task`` (every slot), or :class:`PlanError` saying why not."""
    opened = _open(task)
    named: dict[str, str] = {}
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    if not lines:
        raise PlanError("the reply holds no plan (expected key=value lines)")
    for ln in lines:
        m = _LINE.match(ln)
        if m is None:
            raise PlanError(f"{_quote(ln)} is not a key=value line")
        key, value = m.groups()
        if key not in _SLOT:
            raise PlanError(f"unknown key {key!r}; the keys are {', '.join(design_keys(task))}")
        if key in named:
            raise PlanError(f"key {key!r} is given twice")
        if value not in opened[key]:
            raise PlanError(f"{key}={_quote(value)} is not an option here; choose one of {'|'.join(opened[key])}")
        named[key] = value
    missing = [k for k in design_keys(task) if k not in named]
    if missing:
        raise PlanError(f"the plan does not choose {', '.join(missing)}")
    return {s.name: named.get(s.name, s.options[0]) for s in SLOTS}


def _quote(text: str, limit: int = 40) -> str:
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...")
