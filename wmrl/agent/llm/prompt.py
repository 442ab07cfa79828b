"""What the LLM research agent reads: the task, its data, the sandbox, and later the feedback.

The paper's agent sees the competition's description, the files and columns of its public data,
the submission format and the limits of the sandbox that will run its code, and answers with one
solution script. The limits are the sandbox's own (:class:`~wmrl.sandbox.SandboxFacts`, built
from ``SandboxConfig``): its CPU-second budget and wall-clock backstop, memory, cores and GPUs,
so that a prompt at paper scale (a GPU per execution) says so, and one on a laptop says there is none. :func:`task_messages` builds exactly that conversation for a
:class:`~wmrl.tasks.Task`; :func:`feedback_message` is the user turn that follows a solution
(the sandbox's or the world model's report, the same text either way, cut to a budget as the paper
cuts observations to 1024 tokens).

Three solution contracts (:data:`CONTRACTS`):

- ``script`` (the paper's): a complete Python script that reads ``$DATA_DIR`` and writes
  ``$SUBMISSION_PATH``;
- ``fit_predict`` (a departure, for models too small to write a whole runnable script): only a
  function ``fit_predict(train, test)`` returning the test predictions; a fixed scaffold
  (:func:`wmrl.agent.llm.solution.assemble`) reads the files and writes the submission;
- ``plan`` (a departure, for models that can choose but not code): a few ``key=value`` lines of
  the grammar's design decisions (:mod:`wmrl.agent.llm.plan`), which the grammar's renderer turns
  into the script. The prompt is the task in brief (:func:`plan_description`: the goal, the rows,
  the target, the feature columns counted by kind, the metric), the CPU budget and the keys with
  their options; what only code needs (the files' inventory, the libraries, the submission format,
  each column's name and range) is left out, since the renderer reads the files, writes the imports
  and the submission, and the prompt's length is what a step's update pays for, on every trajectory.
"""

from __future__ import annotations

import re
from collections import Counter

from wmrl.agent.llm.plan import design_keys, plan_lines
from wmrl.sandbox import SandboxFacts

__all__ = ["CONTRACTS", "GPU_PROMPT_LIBRARIES", "PROMPT_LIBRARIES", "feedback_message", "inventory_lines", "plan_description",
           "prediction_spec", "sandbox_lines", "task_messages"]

CONTRACTS = ("script", "fit_predict", "plan")

_SYSTEM = ("You are a research agent in a machine-learning competition. You write Python code that trains a model "
           "on the competition's data and predicts the test set. Reply with code only.")
_SYSTEM_PLAN = ("You are a research agent in a machine-learning competition. You choose how a program trains a "
                "model on the data; it writes the code. Reply with the plan only.")


_SECTION = re.compile(r"\n(?=## )")
_KIND = re.compile(r"(numeric|categorical|free text)\b")
_ROWS = re.compile(r"^- (train|test)\.csv: .*?(\d+) rows")
_SOURCE = re.compile(r" The data come from [^\n]*")
_ASIDE = re.compile(r" \([^()]*\)")


def _column_kind(text: str) -> str | None:
    """A feature column's kind from its description line (``numeric``, ``categorical``, ``free text``, with
    ``with missing values`` where some are); ``None`` for a line that is not a feature's (the id, a path)."""
    m = _KIND.match(text)
    if m is None:
        return None
    return m.group(1) + (" with missing values" if "missing" in text else "")


def plan_description(task) -> str:
    """The task in brief, as a plan prompt shows it: the title and the goal (without where the data come from),
    the rows of train.csv and test.csv, the target line, the feature columns counted by kind (``numeric``,
    ``categorical``, ``free text``, each ``with missing values`` where some are; a column of another kind, an
    image's, in full) and the metric without its gloss. Sections this does not recognise (an imported
    competition's own) keep their words; the submission format is left out, and so are blank lines inside a
    section."""
    kept = []
    for section in _SECTION.split(task.description.strip()):
        head, *lines = section.split("\n")
        if head.startswith("## Submission format"):
            continue
        if head.startswith("## Overview"):
            lines = [_SOURCE.sub("", ln) for ln in lines]
        elif head.startswith("## Files"):
            rows = dict(m.groups() for m in map(_ROWS.match, lines) if m)
            if set(rows) == {"train", "test"}:
                lines = [f"- {rows['train']} training rows, {rows['test']} test rows."]
        elif head.startswith("## Columns"):
            shown, kinds = [], Counter()
            for ln in lines:
                name, _, text = ln[2:].partition(":") if ln.startswith("- ") else ("", "", "")
                kind = _column_kind(text.strip()) if name != task.target_column else None
                if kind is not None:
                    kinds[kind] += 1
                elif name != task.id_column:
                    shown.append(ln)
            if kinds:
                shown.insert(0, "- features: " + ", ".join(f"{n} {kind}" for kind, n in kinds.most_common()))
            lines = shown
        elif head.startswith("## Evaluation"):
            lines = [_ASIDE.sub("", ln) for ln in lines if not ln.startswith("Submit,")]
        kept.append("\n".join([head, *(ln for ln in lines if ln.strip())]).rstrip())
    return "\n\n".join(kept)


def inventory_lines(task, max_examples: int = 3) -> list[str]:
    """``- file: col, col, ...`` for every public file (an image folder shows a few file names)."""
    out = []
    for name, cols in sorted(task.inventory.items()):
        if name == "description.txt":
            continue
        if name.endswith("/"):
            out.append(f"- {name} {', '.join(cols[:max_examples])}, ... (one file per row)")
        else:
            out.append(f"- {name}: {', '.join(cols)}")
    return out


#: The libraries a prompt names (a solution may import others the sandbox has; listing them all costs tokens),
#: and those it names besides in a sandbox with GPUs, where a solution would reach for them.
PROMPT_LIBRARIES = ("numpy", "pandas", "scikit-learn", "scipy", "pillow")
GPU_PROMPT_LIBRARIES = ("torch", "lightgbm", "xgboost")


def sandbox_lines(sandbox: SandboxFacts, library_versions: dict[str, str]) -> list[str]:
    """What the sandbox offers and allows, in the prompt's words: libraries, hardware, budget, memory."""
    named = PROMPT_LIBRARIES + (GPU_PROMPT_LIBRARIES if sandbox.gpus else ())
    libs = ", ".join(f"{k} {v}" for k, v in library_versions.items() if k in named)
    py = library_versions.get("python", "3.11")
    cores = f"{sandbox.cpus:g} CPU core{'' if sandbox.cpus == 1 else 's'}"
    gpus = f"{sandbox.gpus} GPU{'' if sandbox.gpus == 1 else 's'} (CUDA)" if sandbox.gpus else "no GPU"
    shm = f", /tmp and /dev/shm {sandbox.work_mb} MB each" if sandbox.gpus else ""
    return [f"Python {py} with {libs}. No internet.",
            f"Hardware: {cores}, {gpus}, memory {sandbox.memory_mb} MB{shm}.",
            (f"Time limit: {sandbox.cpu_budget_s:g} s of CPU time (all the script's processes and threads "
             f"together), and at most {sandbox.wall_timeout_s:g} s of wall time.")]


def prediction_spec(task) -> str:
    """What one prediction is, from the metric (a class, a probability or a number)."""
    from wmrl.tasks.metrics import get_metric

    kind = get_metric(task.metric).kind
    if kind == "probability":
        positive = task.classes[-1] if task.classes else "the positive class"
        return f"the predicted probability that `{task.target_column}` is {positive}"
    if kind == "label":
        return f"the predicted class of `{task.target_column}`"
    return f"the predicted value of `{task.target_column}`"


def task_messages(task, contract: str, sandbox: SandboxFacts,
                  library_versions: dict[str, str] | None = None) -> list[dict]:
    """The first turn's chat messages (system, user) for ``task`` under a solution ``contract``.

    ``sandbox`` describes the sandbox that will run the code (``Sandbox.facts``); its limits are
    stated as they are. ``library_versions`` defaults to the sandbox interpreter's.
    """
    if contract not in CONTRACTS:
        raise ValueError(f"contract must be one of {CONTRACTS}, got {contract!r}")
    if not isinstance(sandbox, SandboxFacts):
        raise TypeError(f"sandbox must be the SandboxFacts of the sandbox that runs the code (Sandbox.facts), "
                        f"got {type(sandbox).__name__}")
    if library_versions is None:
        library_versions = sandbox.library_versions()
    if contract == "plan":  # the task in brief, the budget and the keys: the renderer reads the files and imports
        keys = design_keys(task)
        parts = [plan_description(task), "",
                 f"Time limit: {sandbox.cpu_budget_s:g} s of CPU time.", "",
                 f"## Your answer\nOne key=value line for each of these {len(keys)} keys, each value one of its options:",
                 *plan_lines(task), f"Reply with the {len(keys)} lines only."]
        return [{"role": "system", "content": _SYSTEM_PLAN}, {"role": "user", "content": "\n".join(parts)}]
    files = ["## Files in DATA_DIR (file: columns)", *inventory_lines(task), ""]
    limits = sandbox_lines(sandbox, library_versions)
    parts = [task.description.strip(), "", *files, "## Sandbox", *limits, "", "## Your answer"]
    if contract == "script":
        parts += [("Write one complete Python script. It reads the files from the folder in the environment variable "
                  "DATA_DIR and writes the submission CSV to the path in the environment variable SUBMISSION_PATH."),
                  "Reply with the script in one ```python code block."]
    else:
        parts += [("Write only the function `fit_predict(train, test)` and the imports it needs. `train` and `test` "
                  "are pandas DataFrames of train.csv and test.csv; the global `DATA_DIR` (a pathlib.Path) is the "
                  "data folder. Return one prediction per row of `test`, in order: "
                  f"{prediction_spec(task)}. Reading the files and writing the submission are done for you."),
                  "Reply with the code in one ```python code block."]
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n".join(parts)}]


def feedback_message(text: str, turn: int, max_turns: int, contract: str = "script") -> dict:
    """The user turn after a solution that did not run ok: the report, then the request to fix it."""
    left = max_turns - turn
    if contract == "plan":
        ask = "Change the plan and reply with all the lines of the corrected plan." if left else ""
        head = "Result of running the script of your plan"
    else:
        ask = "Fix the code and reply with the whole corrected code in one ```python code block." if left else ""
        head = "Result of running your code"
    return {"role": "user", "content": f"{head}:\n{text.strip()}\n\n{ask}".strip()}
