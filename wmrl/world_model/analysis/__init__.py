"""The program analysis behind :class:`~wmrl.world_model.static.ProgramAnalysisWorldModel`.

One pass over the script's top-level statements, in execution order, with a tiny abstract
interpreter: it knows which names hold modules, library objects, DataFrames (and their columns,
from the task's public inventory), estimators (and their constructor arguments), sparse or raw
feature matrices. Each suspicious line becomes a :class:`~.facts.Finding` with a failure
probability; the model turns findings into sampled verdicts. It reads the code text and
``task.inventory`` / ``task.description`` only - never a data file, never ``private/``.

Three seams, one module each: :mod:`.interpreter` (Python itself: statements, names, imports,
calls and signatures), :mod:`.pandas_model` (tables: files, columns, the submission) and
:mod:`.sklearn_model` (estimators: construction, fits and what they demand of their input);
:mod:`.facts` holds the abstract values they share.
"""

from __future__ import annotations

import ast

from wmrl.world_model.analysis.facts import Facts, Finding
from wmrl.world_model.analysis.interpreter import Interpreter
from wmrl.world_model.analysis.pandas_model import PandasModel
from wmrl.world_model.analysis.sklearn_model import SklearnModel

__all__ = ["Facts", "Finding", "analyse"]


class _Analyser(PandasModel, SklearnModel, Interpreter):
    """The interpreter with both library models mixed in."""


def analyse(task, code: str) -> Facts:
    """Run the analysis on code that compiles (the gate has already rejected the rest)."""
    return _Analyser(task).run(ast.parse(code))
