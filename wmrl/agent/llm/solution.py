"""From the model's reply to the script the sandbox runs, and from grammar scripts to training targets.

Extraction. The agent is asked for one fenced Python block. :func:`extract_code` first drops
the reply's thinking (:func:`strip_thinking`: a reasoning model's ``<think>...</think>`` block,
where a drafted fence is not the answer), then takes the first ```` ```python ```` block (or the
first unlabelled fence); a reply without a fence, or with only an empty one, has no code: it is ``malformed`` and earns the ladder's bottom rung (0.0) without
being run. A fence the reply opened but never closed (the completion budget ran out) still counts:
the code up to the cut is what the model wrote, and it will usually fail to compile, which is the
honest outcome.

Contracts. Under ``script`` the code is the script. Under ``fit_predict`` (a labelled departure
from the paper, for models too small to write a whole script) :func:`assemble` wraps the agent's
``fit_predict(train, test)`` in a fixed scaffold that reads the data and writes the submission.
Under ``plan`` (another labelled departure) the reply is a few ``key=value`` lines of the grammar's
decisions (:mod:`wmrl.agent.llm.plan`), which the grammar agent's renderer turns into the script;
a reply that is not a valid plan has no script, and says why. :func:`solution_for` does all three:
from a reply to what is run, or the reason nothing is.

Targets for the supervised warm start (:func:`script_target`, :func:`fit_predict_target`) are
scripts rendered by the grammar agent (:func:`wmrl.agent.grammar.render`), made compact: the
module docstring, the ``print`` calls and the comments go (``ast.unparse``), which keeps the
behaviour and saves a third of the tokens. A plan's target is the plan of the same decisions
(:func:`wmrl.agent.llm.plan.plan_text`), written as the reply itself, without a fence.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["FENCE", "NO_CODE", "SCAFFOLD_HEADER", "THINK_CLOSE", "THINK_OPEN", "Solution", "assemble", "compact",
           "extract_code", "fit_predict_target", "plan_answer", "reply_for", "script_target", "solution_for",
           "strip_thinking"]

FENCE = "```"
#: the reasoning block's tags of the Qwen3 family (and DeepSeek-R1's distillations)
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_BLOCK = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)

SCAFFOLD_HEADER = """import os
from pathlib import Path

import numpy as np
import pandas as pd

DATA_DIR = Path(os.environ.get("DATA_DIR", "."))
SUBMISSION_PATH = os.environ.get("SUBMISSION_PATH", "submission.csv")
SEED = 0
"""


def strip_thinking(reply: str) -> str:
    """The answer part of ``reply``: what follows its last ``</think>`` (a template may open the block
    in the prompt); a block never closed (cut mid-thought) leaves only what precedes it."""
    reply = reply or ""
    if THINK_CLOSE in reply:
        return reply.rsplit(THINK_CLOSE, 1)[1]
    if THINK_OPEN in reply:
        return reply.split(THINK_OPEN, 1)[0]
    return reply


def extract_code(reply: str) -> str | None:
    """The code of the first Python (or unlabelled) fenced block after the thinking; None when there is none."""
    blocks = [(lang.lower(), body) for lang, body in _BLOCK.findall(strip_thinking(reply))]
    for wanted in (("python", "py", "python3"), ("",)):
        for lang, body in blocks:
            if lang in wanted and body.strip():
                return body.rstrip() + "\n"
    return None


def plan_answer(reply: str) -> str:
    """The part of a reply that is a plan: after any thinking, the first fenced block's body if there is one."""
    answer = strip_thinking(reply)
    fenced = _BLOCK.search(answer)  # any language tag, or none
    return (fenced.group(2) if fenced else answer).strip()


def assemble(task, code: str | None, contract: str) -> str | None:
    """The script the sandbox runs for an extracted ``code`` (None stays None: nothing to run)."""
    if code is None or contract == "script":
        return code
    if contract == "plan":
        raise ValueError("a plan is rendered by the grammar, not assembled: use solution_for(task, reply, 'plan')")
    if contract != "fit_predict":
        raise ValueError(f"unknown contract {contract!r}")
    footer = (f'\n\ntrain = pd.read_csv(DATA_DIR / "train.csv")\ntest = pd.read_csv(DATA_DIR / "test.csv")\n'
              f"preds = fit_predict(train, test)\n"
              f'pd.DataFrame({{"{task.id_column}": test["{task.id_column}"], "{task.target_column}": preds}})'
              f".to_csv(SUBMISSION_PATH, index=False)\n")
    return SCAFFOLD_HEADER + "\n\n" + code.rstrip() + footer


def reply_for(code: str, contract: str = "script") -> str:
    """The reply a model should give for ``code`` (the SFT target's text): a fenced block, or a plan as it is."""
    if contract == "plan":
        return code.strip()
    return f"{FENCE}python\n{code.rstrip()}\n{FENCE}"


#: why a code contract's reply has no script
NO_CODE = "the reply had no ```python code block"


@dataclass(frozen=True)
class Solution:
    """What a reply amounts to: the part the agent wrote that counts, the script to run, and why there is none."""

    code: str | None  # the extracted code block, or the plan's text (None: no code block)
    script: str | None  # what the sandbox runs (None: nothing to run, the reply is malformed)
    reason: str = ""  # why ``script`` is None, in the words the next turn's feedback quotes


def solution_for(task, reply: str, contract: str) -> Solution:
    """From a model's ``reply`` for ``task`` under ``contract`` to the script that is run; never raises on a reply."""
    if contract == "plan":
        from wmrl.agent.grammar import render
        from wmrl.agent.llm.plan import PlanError, parse_plan

        text = plan_answer(reply)
        try:
            return Solution(text, render(task, parse_plan(task, text)))
        except PlanError as exc:
            return Solution(text or None, None, f"the reply is not a valid plan: {exc}")
    code = extract_code(reply)
    return Solution(code, assemble(task, code, contract), "" if code is not None else NO_CODE)


class _DropPrints(ast.NodeTransformer):
    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "print":
            return None
        if isinstance(call, ast.Constant) and isinstance(call.value, str):  # docstrings
            return None
        return node


def compact(script: str) -> str:
    """``script`` without its docstring, comments and ``print`` calls (same behaviour otherwise)."""
    tree = _DropPrints().visit(ast.parse(script))
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def script_target(task, choices) -> str:
    """A compact grammar script for ``task`` under grammar ``choices`` (the ``script`` contract's target)."""
    from wmrl.agent.grammar import render

    return compact(render(task, choices))


def _is_read(stmt: ast.stmt, name: str) -> bool:
    return (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and stmt.targets[0].id == name and "read_csv" in ast.unparse(stmt.value))


def fit_predict_target(task, choices) -> str:
    """The modelling part of a grammar script as ``fit_predict(train, test)`` (the departure's target).

    From the rendered script: its imports stay on top; the statements between reading test.csv
    and computing ``preds`` become the function's body (with the ``ID``/``TARGET`` constants),
    ending in ``return preds``. File reading and submission writing belong to the scaffold, so the
    grammar's mistakes there (a wrong file name, a malformed submission) do not appear here.
    """
    from wmrl.agent.grammar import render

    body = ast.parse(compact(render(task, choices))).body
    imports = [s for s in body if isinstance(s, (ast.Import, ast.ImportFrom))
               and not any(a.name in ("os", "numpy", "pandas") for a in s.names)
               and getattr(s, "module", None) != "pathlib"]
    consts = [s for s in body if isinstance(s, ast.Assign) and isinstance(s.targets[0], ast.Name)
              and s.targets[0].id in ("ID", "TARGET")]
    start = next(i for i, s in enumerate(body) if _is_read(s, "test")) + 1
    end = next(i for i, s in enumerate(body) if isinstance(s, ast.Assign) and ast.unparse(s.targets[0]) == "preds")
    fn = ast.FunctionDef(name="fit_predict", args=ast.arguments(
        posonlyargs=[], args=[ast.arg("train"), ast.arg("test")], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=[*consts, *body[start:end + 1], ast.Return(ast.Name("preds", ast.Load()))], decorator_list=[],
        returns=None, type_params=[])
    module = ast.Module(body=[*imports, fn], type_ignores=[])
    return ast.unparse(ast.fix_missing_locations(module)) + "\n"
