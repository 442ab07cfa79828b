"""The interpreter core: one pass over the script's top-level statements, in execution order.

A real run executes statement after statement and stops at the first exception; the analysis
walks the same statements in the same order with a tiny abstract interpreter, so that its first
finding is on the line a real run would fail on. The core knows Python itself: names (defined or
not), imports (which module, which name, which of them exist in the installed libraries),
constants, paths under ``DATA_DIR``, calls and their keyword arguments against the callee's real
signature, and a few crashes visible in the text (``raise``, ``assert False``, a division by the
constant 0, ``exit()``). What a library call *does* is the library models' business:
:class:`~.pandas_model.PandasModel` (tables and arrays) and :class:`~.sklearn_model.SklearnModel`
(estimators) are mixed into the analyser and supply ``table_call``, ``subscript``,
``frame_attribute``, ``set_column``, ``frame_method``, ``estimator_call`` and ``instance_method``.

Only a fixed set of libraries is ever imported into the world model's process (:data:`IMPORTABLE`):
importing an arbitrary module named by a script would run its code, which a static analysis must not.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect

from wmrl.world_model.analysis.facts import Data, Facts, Finding, Frame, Instance

__all__ = ["IMPORTABLE", "NOT_HANDLED", "Interpreter"]

#: Top-level packages whose modules the analysis imports to read their signatures.
IMPORTABLE = {"sklearn", "pandas", "numpy", "scipy", "PIL", "skimage", "os", "pathlib", "math", "re", "sys",
              "collections", "itertools", "random", "time", "warnings"}
#: What a library model returns for a call it does not model (None is a value: "unknown").
NOT_HANDLED = object()


class Interpreter:
    """The abstract interpreter's state and its walk over statements and expressions."""

    def __init__(self, task):
        self.task = task
        self.inv = task.inventory
        desc = ""
        try:
            desc = task.description.lower()
        except OSError:
            pass
        self.nan_prior = 0.75 if "missing" in desc else 0.12
        self.str_prior = 0.55 if task.category == "tabular" else 0.0
        self.env: dict[str, object] = {}
        self.consts: dict[str, object] = {}
        self.defined = set(dir(builtins))
        self.facts = Facts()

    # ---------------------------------------------------------------- helpers
    def fail(self, check, p, etype, node, reason):
        self.facts.findings.append(Finding(check, p, etype, getattr(node, "lineno", 0), reason))

    def const(self, node):
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name) and node.id in self.consts:
            return self.consts[node.id]
        if isinstance(node, (ast.List, ast.Tuple)):
            vals = [self.const(e) for e in node.elts]
            return None if any(v is None for v in vals) else vals
        return None

    def path_of(self, node):
        """("data", name) for DATA_DIR / "name", ("abs", text) for a literal path, else None."""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and self.env.get(_name(node.left)) == "DATA_DIR":
            name = self.const(node.right)
            return ("data", name) if isinstance(name, str) else None
        value = self.const(node)
        return ("abs", value) if isinstance(value, str) else None

    def resolve(self, node):
        """A Python object for ``np``, ``pd.read_csv``, an imported class ...; None when unknown."""
        if isinstance(node, ast.Name):
            val = self.env.get(node.id)
            return val if not isinstance(val, (Frame, Data, Instance, str)) and val is not None else None
        if isinstance(node, ast.Attribute):
            base = self.resolve(node.value)
            if base is not None and inspect.ismodule(base):
                if not hasattr(base, node.attr):
                    self.fail("api_calls", 0.95, "AttributeError", node, f"module {base.__name__} has no {node.attr!r}")
                    return None
                return getattr(base, node.attr)
        return None

    # ---------------------------------------------------------------- statements
    def run(self, tree: ast.Module) -> Facts:
        for stmt in tree.body:
            self.check_names(stmt)
            self.stmt(stmt)
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "resize" and n.args:
                size = self.const(n.args[0])
                if isinstance(size, list) and len(size) == 2 and all(isinstance(v, int) for v in size):
                    self.facts.image_size = tuple(size)
        if not self.facts.wrote_submission:
            last = tree.body[-1] if tree.body else tree
            self.fail("submission", 0.95, "NoSubmission", last, "no DataFrame.to_csv(SUBMISSION_PATH) call")
        return self.facts

    def check_names(self, stmt):
        local = {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for n in ast.walk(stmt):
            if isinstance(n, ast.arg):
                local.add(n.arg)
        inner = local if isinstance(stmt, (ast.FunctionDef, ast.For, ast.With)) else \
            {n.id for c in ast.walk(stmt) if isinstance(c, (ast.comprehension, ast.Lambda))
             for n in ast.walk(c) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
            {a.arg for c in ast.walk(stmt) if isinstance(c, ast.Lambda) for a in ast.walk(c) if isinstance(a, ast.arg)}
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in self.defined | inner:
                self.fail("imports_names", 0.95, "NameError", n, f"name {n.id!r} is not defined")
                self.defined.add(n.id)
        self.defined |= local
        if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
            self.defined.add(stmt.name)

    def stmt(self, s):
        if isinstance(s, ast.Import):
            for a in s.names:
                mod = self.import_module(a.name, s)
                if mod is not None:
                    self.env[a.asname or a.name.split(".")[0]] = mod if a.asname else importlib.import_module(a.name.split(".")[0])
                self.defined.add(a.asname or a.name.split(".")[0])
        elif isinstance(s, ast.ImportFrom):
            mod = self.import_module(s.module or "", s)
            for a in s.names:
                self.defined.add(a.asname or a.name)
                if mod is None:
                    continue
                obj = getattr(mod, a.name, None)
                if obj is None:
                    obj = self.import_module(f"{s.module}.{a.name}", s, quiet=True)
                if obj is None:
                    self.fail("imports_names", 0.95, "ImportError", s, f"cannot import {a.name!r} from {s.module!r}")
                self.env[a.asname or a.name] = obj
        elif isinstance(s, ast.Assign):
            self.assign(s)
        elif isinstance(s, ast.Expr):
            self.expr(s.value)
        elif isinstance(s, ast.FunctionDef):
            self.env[s.name] = "function"
        elif isinstance(s, ast.Raise):
            self.fail("other_runtime", 0.9, _exc_name(s.exc), s, "the script raises at top level")
        elif isinstance(s, ast.Assert) and self.const(s.test) is False:
            self.fail("other_runtime", 0.95, "AssertionError", s, "assert False")
        elif isinstance(s, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            for child in s.body:
                self.stmt(child)

    def import_module(self, name, node, quiet=False):
        """The module if it is one whose signatures we check; ``None`` (unknown) for other installed ones."""
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            if not quiet:
                self.fail("imports_names", 0.95, "ModuleNotFoundError", node, f"no module named {name!r}")
            return None
        if name.split(".")[0] not in IMPORTABLE:
            return None
        try:
            return importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a library that fails to import fails the script too
            self.fail("imports_names", 0.9, "ImportError", node, f"module {name!r} fails to import")
            return None

    def assign(self, s):
        value = self.expr(s.value)
        src = ast.unparse(s.value)
        for target in s.targets:
            if isinstance(target, ast.Name):
                if "environ" in src or "getenv" in src:
                    value = "DATA_DIR" if "DATA_DIR" in src else "SUBMISSION_PATH" if "SUBMISSION" in src else value
                self.env[target.id] = value
                lit = self.const(s.value) if not isinstance(s.value, ast.Name) else None
                if lit is not None:
                    self.consts[target.id] = lit
                else:
                    self.consts.pop(target.id, None)
            elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and value and value[0] == "split":
                for i, elt in enumerate(target.elts):
                    if isinstance(elt, ast.Name):
                        self.env[elt.id] = value[1][i // 2] if i // 2 < len(value[1]) else None
            elif isinstance(target, ast.Subscript):
                self.set_column(target)

    # ---------------------------------------------------------------- expressions
    def expr(self, node):
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node)
        if isinstance(node, ast.Attribute):
            obj = self.resolve(node)
            if obj is not None:
                return obj
            base = self.expr(node.value)
            return self.frame_attribute(base, node.attr) if isinstance(base, Frame) else None
        if isinstance(node, (ast.List, ast.Tuple)):
            return [self.expr(e) for e in node.elts]
        if isinstance(node, ast.BinOp):
            self.expr(node.left), self.expr(node.right)
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)) and self.const(node.right) == 0:
                self.fail("other_runtime", 0.95, "ZeroDivisionError", node, "division by zero")
            return None
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return None

    def call(self, node):
        args = [self.expr(a) for a in node.args]
        for k in node.keywords:  # evaluated for their own findings, in the order Python evaluates them
            self.expr(k.value)
        func = node.func
        obj = self.resolve(func)
        if obj is None and isinstance(func, ast.Name):
            obj = self.env.get(func.id)
        if obj == "function":
            return Data()
        if obj is not None and callable(obj):
            self.check_kwargs(obj, node)
            return self.library_call(obj, node, args)
        if isinstance(func, ast.Attribute):
            base = self.expr(func.value)
            if isinstance(base, Frame):
                return self.frame_method(base, func, node, args)
            if isinstance(base, Instance):
                return self.instance_method(base, func.attr, node, args)
        if isinstance(func, ast.Name) and func.id in ("exit", "quit"):
            self.fail("other_runtime", 0.8, "SystemExit", node, "the script exits early")
        return None

    def check_kwargs(self, obj, node):
        """A keyword the callee's real signature does not accept is a TypeError (a removed argument)."""
        try:
            params = inspect.signature(obj).parameters
        except (TypeError, ValueError):
            return
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return
        for kw in node.keywords:
            if kw.arg is not None and kw.arg not in params:
                name = getattr(obj, "__name__", str(obj))
                self.fail("api_calls", 0.95, "TypeError", node, f"{name}() got an unexpected keyword argument {kw.arg!r}")

    def library_call(self, obj, node, args):
        """A call of a library function or class: the table model first, then the estimator model."""
        name = getattr(obj, "__name__", "")
        value = self.table_call(name, node, args)
        return self.estimator_call(obj, name, node, args) if value is NOT_HANDLED else value


def _name(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else None


def _exc_name(node) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    return target.id if isinstance(target, ast.Name) else "RuntimeError"
