"""The pandas model: tables read from the task's public files, their columns, and the submission.

Most of the mistakes an agent makes with data are about names: a file that is not among the
public ones, a column that is not in the table (or no longer is, after a ``drop``), a submission
whose columns differ from ``sample_submission.csv``'s or whose rows come from ``train.csv``. The
task's public inventory lists every file and its columns, so a :class:`~.facts.Frame` can carry
its columns through ``read_csv``, selection, ``drop``, ``copy`` ... and every lookup can be
checked against them. What a table *holds* is a guess: whether string columns or missing values
reach an estimator is a probability (from the category and the description's words), which the
scikit-learn model reads at ``fit`` time. Stacking feature blocks with numpy keeps the worst of
their NaN probabilities.

A mixin of the analyser (:mod:`.interpreter`): it uses the interpreter's ``fail``, ``const``,
``expr``, ``path_of``, ``check_kwargs``, ``env``, ``inv`` and ``facts``.
"""

from __future__ import annotations

import ast
from dataclasses import replace

import pandas as pd

from wmrl.world_model.analysis.facts import Data, Frame, data_of
from wmrl.world_model.analysis.interpreter import NOT_HANDLED

__all__ = ["PandasModel"]

_STACKS = ("hstack", "vstack", "column_stack", "concatenate", "stack")
# Attributes of a frame that are not themselves a frame.
_NOT_FRAMES = ("columns", "shape", "index", "values", "dtypes", "T")


class PandasModel:
    """Frames: reading, selecting, dropping, building, writing the submission."""

    def table_call(self, name, node, args):
        """``read_csv``, ``DataFrame``, ``concat`` and numpy stacking; NOT_HANDLED for anything else."""
        if name == "read_csv" and node.args:
            return self.read_csv(node)
        if name == "DataFrame" and args:
            return self.new_frame(node)
        if name in _STACKS:
            parts = [p for p in (args[0] if isinstance(args[0], list) else []) if isinstance(p, (Data, Frame))] if args else []
            return Data(nan=max([data_of(p).nan for p in parts], default=0.0))
        if name == "concat" and args and isinstance(args[0], list):
            return Frame(None, "concat", Data(strings=self.str_prior, nan=self.nan_prior))
        return NOT_HANDLED

    def read_csv(self, node):
        where = self.path_of(node.args[0])
        if where is None:
            return Frame(None)
        kind, name = where
        if kind == "data" and name in self.inv:
            return Frame(set(self.inv[name]), name, Data(strings=self.str_prior, nan=self.nan_prior))
        p = 0.95 if kind == "data" or name.startswith("/") else 0.7
        self.fail("data_refs", p, "FileNotFoundError", node, f"{name!r} is not among the public files {sorted(self.inv)}")
        return None

    def new_frame(self, node):
        first = node.args[0]
        if not isinstance(first, ast.Dict):
            return Frame(None, "built")
        cols = {self.const(k) for k in first.keys}
        from_train = any(isinstance(v, ast.Subscript) and isinstance(self.expr(v.value), Frame)
                         and self.expr(v.value).origin == "train.csv" for v in first.values)
        return Frame(None if None in cols else cols, "train_rows" if from_train else "built")

    def subscript(self, node):
        """``frame[key]`` / ``frame[[keys]]``: a KeyError when a named column is not (or no longer) there."""
        frame = self.expr(node.value)
        self.expr(node.slice)
        if not isinstance(frame, Frame):
            return None
        key = self.const(node.slice)
        keys = [key] if isinstance(key, str) else key if isinstance(key, list) else None
        if keys is not None and frame.columns is not None:
            for k in keys:
                if k not in frame.columns:
                    where = f"{frame.origin} (after drop)" if k in self.inv.get(frame.origin, []) else frame.origin
                    self.fail("data_refs", 0.95, "KeyError", node, f"column {k!r} is not in {where or 'the frame'}")
        if isinstance(key, str):
            return Frame(None, frame.origin, replace(frame.data))  # a Series
        if keys is None:
            return Frame(None, frame.origin, replace(frame.data))
        # Columns picked by name were usually picked because they are numeric.
        return Frame(set(keys), frame.origin, replace(frame.data, strings=frame.data.strings * 0.3))

    def frame_attribute(self, frame, attr):
        """``frame.attr``: another frame (of unknown columns) unless it is one of the non-frame attributes."""
        return Frame(None, frame.origin, replace(frame.data)) if attr not in _NOT_FRAMES else None

    def set_column(self, target):
        """``frame[key] = ...`` adds the column ``key``."""
        frame = self.expr(target.value)
        key = self.const(target.slice)
        if isinstance(frame, Frame) and frame.columns is not None and isinstance(key, str):
            frame.columns.add(key)

    def frame_method(self, frame, func, node, args):
        attr = func.attr
        if not hasattr(pd.DataFrame, attr):
            self.fail("api_calls", 0.95, "AttributeError", node, f"'DataFrame' object has no attribute {attr!r}")
            return None
        self.check_kwargs(getattr(pd.DataFrame, attr), node)
        kw = {k.arg: k.value for k in node.keywords}
        if attr == "drop":
            dropped = self.const(kw.get("columns", node.args[0] if node.args else ast.Constant(None)))
            dropped = [dropped] if isinstance(dropped, str) else dropped or []
            cols = None if frame.columns is None else frame.columns - set(dropped)
            if self.const(kw.get("inplace", ast.Constant(False))) is True:
                frame.columns = cols
                return None
            return Frame(cols, frame.origin, replace(frame.data))
        if attr == "select_dtypes":
            return Frame(None, frame.origin, replace(frame.data, strings=0.0))
        if attr in ("to_numpy", "astype"):
            numeric = "float" in ast.unparse(node) or "int" in ast.unparse(node)
            return replace(frame.data, strings=0.0) if numeric and attr == "to_numpy" else replace(frame.data)
        if attr == "to_csv":
            self.write_submission(frame, node)
            return None
        if attr in ("copy", "sample", "reset_index", "fillna", "dropna", "head", "rename"):
            return Frame(None if attr == "rename" or frame.columns is None else set(frame.columns), frame.origin,
                         replace(frame.data, nan=0.0) if attr in ("fillna", "dropna") else replace(frame.data))
        return None

    def write_submission(self, frame, node):
        """``to_csv(SUBMISSION_PATH)``: the columns must be sample_submission's, the rows test.csv's, no index."""
        target = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "path_or_buf"), None)
        where = self.env.get(target.id) if isinstance(target, ast.Name) else self.const(target) if target else None
        if where != "SUBMISSION_PATH" and where != "submission.csv":
            return
        self.facts.wrote_submission = True
        sample = self.inv.get("sample_submission.csv")
        if sample and frame.columns is not None and set(frame.columns) != set(sample):
            self.fail("submission", 0.9, "InvalidSubmission", node,
                      f"columns {sorted(frame.columns)} differ from sample_submission.csv's {sample}")
        if frame.origin == "train_rows":
            self.fail("submission", 0.85, "InvalidSubmission", node, "ids come from train.csv, not test.csv")
        index = next((self.const(k.value) for k in node.keywords if k.arg == "index"), True)
        if index is not False:
            self.fail("submission", 0.7, "InvalidSubmission", node, "to_csv without index=False adds a column")
