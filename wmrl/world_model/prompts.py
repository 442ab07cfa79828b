"""Prompt templates of the LLM world model: eight decomposed checks and one holistic prompt.

The model reads what a real sandbox would know - the task, its public files, the installed
library versions, the sandbox's limits (its CPU-second budget and wall-clock backstop, memory,
cores and GPUs, as :class:`~wmrl.sandbox.SandboxFacts` states them) - plus the code, and answers one JSON object per check with
the ``reason`` first, so that the verdict is conditioned on the reasoning rather than
rationalised after it. The system prompt states the DEFAULT TO PASS rule: a world model that
fails plausible code on a hunch pushes the policy away from working solutions, so a check may
fail only when it can name the line and the exception.

Every message of one solution shares the same prefix (system prompt, then the numbered code);
only the check's question comes last, so servers with prefix caching (vLLM, SGLang) reuse it.
"""

from __future__ import annotations

import platform

from wmrl.sandbox.runner import SandboxFacts
from wmrl.sandbox.runner import library_versions as sandbox_library_versions
from wmrl.vocabulary import QUALITY_BUCKETS
from wmrl.world_model.base import CHECKS

__all__ = [
    "CHECK_QUESTIONS",
    "HOLISTIC_QUESTION",
    "SYSTEM_TEMPLATE",
    "WARM_PRELOADED",
    "check_messages",
    "holistic_messages",
    "numbered",
    "reply_template",
    "sandbox_limits",
    "schema_for",
    "system_prompt",
]

# Free-text fields are bounded (maxLength), so that a reply decoded under the schema always closes
# within the world model's token budget (~60 + 15 + 40 tokens of text at most, plus the keys),
# instead of being cut off mid-string by max_new_tokens.
_BASE_PROPERTIES = {
    "reason": {"type": "string", "maxLength": 240},
    "verdict": {"type": "string", "enum": ["pass", "fail"]},
    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    "error_type": {"type": ["string", "null"], "maxLength": 40},
    "error_line": {"type": ["integer", "null"]},
    "env_feedback": {"type": ["string", "null"], "maxLength": 160},
}
#: Imported before a warm-started script's first line (mirrors the sandbox's warm launcher).
WARM_PRELOADED = ("numpy", "pandas", "scipy", "scikit-learn")

SYSTEM_TEMPLATE = """\
You are the world model of a code sandbox. You never run code: you read a Python solution \
script for a machine-learning competition and predict what happens when the sandbox runs it.

## Task
name: {name} ({category})
metric: {metric} ({direction}); training rows: {n_rows}
description:
{description}

## Files in DATA_DIR (file: columns)
{inventory}

## Sandbox
Python {python}; installed libraries: {libraries}.
{limits}{warm}
The script reads its input from the folder in the environment variable DATA_DIR and must write \
its predictions to the path in SUBMISSION_PATH, in the format of sample_submission.csv.

## Rules
DEFAULT TO PASS. Answer "fail" only when you can point at a specific line and a specific \
exception (or a certain timeout, or a certain submission problem). If you are unsure, answer "pass".
Reply with one JSON object and nothing else. Write "reason" first, then decide the verdict."""

CHECK_QUESTIONS = {
    "imports_names": "Does every imported module exist in the sandbox, and is every name defined before it is "
                     "used? Fail with ImportError, ModuleNotFoundError or NameError.",
    "api_calls": "Does every library call use functions, classes and keyword arguments that exist in the "
                 "installed versions listed above? Fail with TypeError or AttributeError.",
    "data_refs": "Does every file the script opens exist in DATA_DIR, and every column it selects exist in that "
                 "file (also after columns were dropped or renamed)? Fail with FileNotFoundError or KeyError.",
    "shape_dtype": "Do array shapes and dtypes fit every operation (e.g. strings passed to a numeric model, "
                   "mismatched lengths)? Fail with ValueError.",
    "compute_budget": "Will the script finish within the time limit on this CPU, given the data size and the "
                      "model? Fail with error_type TimeoutError only if it certainly will not.",
    "other_runtime": "Is there any other exception the script would certainly raise (ZeroDivisionError, "
                     "IndexError, MemoryError, ...)? Fail with that exception.",
    "submission": "Will the script write SUBMISSION_PATH with the columns and the number of rows of "
                  "sample_submission.csv? Fail with error_type NoSubmission if no file is written, "
                  "InvalidSubmission if it is written in the wrong format.",
    "quality": "Assume the script runs. How good will its score be against the leaderboard? Set quality_bucket "
               "to low, fair, mid or high. The verdict is always pass.",
}
HOLISTIC_QUESTION = ("Go through all checks in order - " + ", ".join(CHECKS[:-1]) + " - and report the first one "
                     "that fails in failed_check (null if none fails), then set quality_bucket to low, fair, mid or "
                     "high for how good the score will be if the script runs.")


def schema_for(check: str) -> dict:
    """JSON Schema of one check's reply (``holistic`` for the single-prompt variant), reason first."""
    props = dict(_BASE_PROPERTIES)
    if check == "quality":
        props["verdict"] = {"type": "string", "enum": ["pass"]}
    elif check == "holistic":
        # an enum alone (null among its values): llama.cpp's grammar ignores an enum beside a type list
        props["failed_check"] = {"enum": [*CHECKS[:-1], None]}
    elif check not in CHECKS:
        raise ValueError(f"unknown check {check!r}; expected one of {CHECKS} or 'holistic'")
    if check in ("quality", "holistic"):
        props["quality_bucket"] = {"type": "string", "enum": list(QUALITY_BUCKETS)}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def _inventory(task, max_files: int = 12, max_columns: int = 30) -> str:
    lines = []
    for name, columns in list(dict(task.inventory).items())[:max_files]:
        cols = list(columns)
        more = f", ... ({len(cols)} in all)" if len(cols) > max_columns else ""
        lines.append(f"- {name}: {', '.join(map(str, cols[:max_columns]))}{more}")
    return "\n".join(lines) or "- (none)"


def sandbox_limits(time_limit_s: float, sandbox: SandboxFacts | None = None) -> str:
    """The sandbox's limits in the prompt's words.

    With ``sandbox`` (the facts of the sandbox the prediction is about) every limit it has: the
    CPU budget, the wall-clock backstop, memory, cores and GPUs (with a GPU, the size of ``/tmp`` and
    ``/dev/shm``, which a DataLoader's workers fill). Without it only the CPU budget
    ``time_limit_s`` is known, and nothing else is claimed.
    """
    if sandbox is None:
        return (f"No internet. Time limit: {time_limit_s:g} seconds of CPU time, all the script's processes and "
                "threads together.")
    cores = f"{sandbox.cpus:g} CPU core{'' if sandbox.cpus == 1 else 's'}"
    gpus = f"{sandbox.gpus} GPU{'' if sandbox.gpus == 1 else 's'} (CUDA)" if sandbox.gpus else "no GPU"
    shm = f"; /tmp and /dev/shm {sandbox.work_mb} MB each" if sandbox.gpus else ""
    return (f"No internet. Hardware: {cores}, {gpus}, memory {sandbox.memory_mb} MB (more is a MemoryError){shm}.\n"
            f"Time limit: {sandbox.cpu_budget_s:g} seconds of CPU time, all the script's processes and threads "
            f"together, and at most {sandbox.wall_timeout_s:g} seconds of wall time.")


def system_prompt(task, library_versions: dict[str, str] | None = None, time_limit_s: float = 1200.0,
                  warm_start: bool = False, max_description_chars: int = 1500,
                  sandbox: SandboxFacts | None = None) -> str:
    """The shared system prompt: task context, sandbox facts and the DEFAULT TO PASS rule.

    ``sandbox``, when given, is the description of the sandbox: its limits, and whether scripts
    start warm (``time_limit_s`` and ``warm_start`` are then not read). ``warm_start``: the sandbox
    starts each script in an interpreter that has already imported :data:`WARM_PRELOADED`, so
    their import time does not count against the limit.
    """
    if sandbox is not None:
        time_limit_s, warm_start = sandbox.cpu_budget_s, sandbox.warm_start
    warm = (f"\nScripts start warm: {', '.join(WARM_PRELOADED)} are already imported, so importing them "
            "takes no time.") if warm_start else ""
    if library_versions is not None:
        versions = library_versions
    else:
        versions = sandbox.library_versions() if sandbox is not None else sandbox_library_versions()
    description = " ".join(str(task.description).split())
    if len(description) > max_description_chars:
        description = description[:max_description_chars] + " ..."
    return SYSTEM_TEMPLATE.format(
        name=task.name, category=task.category, metric=task.metric,
        direction="higher is better" if task.higher_is_better else "lower is better",
        n_rows=task.n_rows, description=description, inventory=_inventory(task),
        python=versions.get("python", platform.python_version()), limits=sandbox_limits(time_limit_s, sandbox), warm=warm,
        libraries=", ".join(f"{k}=={v}" for k, v in sorted(versions.items())) or "unknown",
    )


def numbered(code: str, max_lines: int = 400) -> str:
    """The code with line numbers, so that ``error_line`` refers to something the model can see."""
    lines = code.splitlines()
    shown = "\n".join(f"{i:>4} | {line}" for i, line in enumerate(lines[:max_lines], start=1))
    return shown + (f"\n... ({len(lines) - max_lines} more lines)" if len(lines) > max_lines else "")


_SLOTS = {
    "reason": '"<one or two sentences>"',
    "verdict": '"pass" or "fail"',
    "confidence": "<number from 0 to 1>",
    "error_type": "<exception name, or null>",
    "error_line": "<line number, or null>",
    "env_feedback": "<the message the sandbox would print, or null>",
    "failed_check": "<name of the first failing check, or null>",
    "quality_bucket": '"low", "fair", "mid" or "high"',
}


def reply_template(check: str) -> str:
    """The reply's shape in words (small models follow an example better than a JSON Schema)."""
    schema = schema_for(check)
    slots = dict(_SLOTS, verdict='"pass"') if check == "quality" else _SLOTS
    return "{" + ", ".join(f'"{key}": {slots[key]}' for key in schema["properties"]) + "}"


def _user(code: str, question: str, check: str) -> str:
    return (f"## Solution script\n```python\n{numbered(code)}\n```\n\n## Check: {check}\n{question}\n\n"
            f"Reply with one JSON object, keys in this order:\n{reply_template(check)}")


def check_messages(code: str, check: str, system: str) -> list[dict]:
    """Chat messages for one decomposed check; ``system`` comes from :func:`system_prompt`."""
    if check not in CHECK_QUESTIONS:
        raise ValueError(f"unknown check {check!r}; expected one of {CHECKS}")
    return [{"role": "system", "content": system},
            {"role": "user", "content": _user(code, CHECK_QUESTIONS[check], check)}]


def holistic_messages(code: str, system: str) -> list[dict]:
    """Chat messages for the single-prompt variant that judges all checks at once."""
    return [{"role": "system", "content": system},
            {"role": "user", "content": _user(code, HOLISTIC_QUESTION, "holistic")}]
