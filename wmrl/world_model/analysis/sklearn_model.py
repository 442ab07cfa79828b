"""The scikit-learn model: estimators, pipelines, fits, and what each fit demands of its input.

An estimator is built from a class the script imported, with its literal constructor arguments
(the cost model in :mod:`wmrl.world_model.static` reads ``n_estimators``, ``max_iter``, ``C`` ...).
Calling a method the class does not have, or ``predict_proba`` on an ``SVC`` built without
``probability=True``, is an AttributeError; a classifier on a continuous target is a ValueError.
At each ``fit`` the input's state (from the pandas model or an earlier transform) meets the
estimator's demands: dense input for some, non-negative features for the multinomial naive
Bayes family, no strings for any, no NaN unless the estimator or a pipeline's imputer handles it
(scikit-learn >= 1.4 lets trees and histogram boosting take NaN). Fits are counted (cross
validation fits once per fold) for the compute estimate, and the last fitted model is the one
the quality prior judges.

A mixin of the analyser (:mod:`.interpreter`): it uses the interpreter's ``fail``, ``const``,
``check_kwargs``, ``task`` and ``facts``.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import replace

from wmrl.world_model.analysis.facts import Data, Instance, data_of

__all__ = ["SklearnModel"]

# Estimators that accept NaN in X (scikit-learn >= 1.4).
_NAN_OK = ("HistGradientBoosting", "DecisionTree", "RandomForest", "ExtraTrees", "Dummy")
_DENSE_ONLY = ("GaussianNB", "HistGradientBoosting")
_NONNEG_ONLY = ("MultinomialNB", "ComplementNB", "CategoricalNB")
_TRANSFORMERS = ("Imputer", "Scaler", "Encoder", "Vectorizer", "SVD", "Transformer", "PCA", "Features")


class SklearnModel:
    """Estimators: construction, pipelines, splitting, cross validation, fit / transform / predict."""

    def estimator_call(self, obj, name, node, args):
        """A library call the table model did not take: splits, cross validation, pipelines, constructors."""
        if name in ("train_test_split",):
            size = self.const(next((k.value for k in node.keywords if k.arg == "train_size"), ast.Constant(None)))
            if isinstance(size, float) and size <= 0.5:
                self.facts.subsample = size
            return ("split", args)
        if name == "cross_val_score" and len(args) >= 2 and isinstance(args[0], Instance):
            folds = self.const(next((k.value for k in node.keywords if k.arg == "cv"), ast.Constant(5)))
            folds = folds if isinstance(folds, int) else 5
            self.facts.cv_folds += folds
            self.fit(args[0], args[1], node, weight=folds)
            return Data()
        if name in ("make_pipeline", "Pipeline"):
            # deferred: scikit-learn takes about a second to import, and only scripts that build a pipeline need it here
            from sklearn.pipeline import Pipeline

            steps = tuple(a.cls.__name__ for a in args if isinstance(a, Instance))
            last = next((a for a in reversed(args) if isinstance(a, Instance)), None)
            return Instance(Pipeline, dict(last.kwargs) if last else {}, node.lineno, steps)
        if inspect.isclass(obj):
            lits = {k.arg: self.const(k.value) for k in node.keywords if k.arg}
            return Instance(obj, lits, node.lineno)
        return None

    def instance_method(self, inst, attr, node, args):
        cls = inst.cls
        if attr == "predict_proba" and cls.__name__ == "SVC" and inst.kwargs.get("probability") is not True:
            self.fail("api_calls", 0.9, "AttributeError", node, "SVC has predict_proba only with probability=True")
        elif not hasattr(cls, attr):
            self.fail("api_calls", 0.95, "AttributeError", node, f"{cls.__name__!r} object has no attribute {attr!r}")
            return None
        else:
            self.check_kwargs(getattr(cls, attr), node)
        if attr == "fit" and args:
            self.fit(inst, args[0], node)
            return inst
        if attr in ("transform", "fit_transform") and args:
            return self.transform(inst, args[0], node, fitting=attr == "fit_transform")
        if attr in ("predict", "predict_proba"):
            if any(m is inst for m in self.facts.models) and args and data_of(args[0]) is not None:
                self.facts.pred_kind = attr
            return Data()
        return None

    def transform(self, inst, x, node, fitting):
        name, steps = inst.cls.__name__, inst.steps or (inst.cls.__name__,)
        if "Vectorizer" in name:
            size = inst.kwargs.get("max_features", inst.kwargs.get("n_features"))
            self.facts.vector_size = float(size) if isinstance(size, (int, float)) else 50000.0
            return Data(sparse=True)
        if name == "TruncatedSVD":
            self.facts.svd = inst.kwargs.get("n_components", 2)
            return Data(nonneg=False)
        if "Encoder" in name:
            return Data()
        d = replace(data_of(x) or Data())
        if fitting:
            self.fit(inst, x, node)
        if any("Imputer" in s for s in steps):
            d.nan = 0.0
        if any("Scaler" in s for s in steps):
            d.nonneg = False
        return d

    def fit(self, inst, x, node, weight=1):
        """Shape and dtype checks of one fit, and the bookkeeping the compute estimate needs."""
        d = data_of(x)
        name = (inst.steps or (inst.cls.__name__,))[-1]
        is_model = not name.endswith(_TRANSFORMERS) if inst.steps else hasattr(inst.cls, "predict")
        if is_model:
            inst.fits += weight
            if not any(m is inst for m in self.facts.models):
                self.facts.models.append(inst)
            if self.task.task_type == "regression" and _is_classifier(inst):
                self.fail("shape_dtype", 0.9, "ValueError", node, f"{name} on a continuous target: Unknown label type")
        if d is None or "Encoder" in name or "Vectorizer" in name:
            return
        if d.sparse and name.startswith(_DENSE_ONLY):
            self.fail("shape_dtype", 0.95, "TypeError", node, f"{name} needs dense input, gets a sparse matrix")
        if not d.nonneg and name in _NONNEG_ONLY:
            self.fail("shape_dtype", 0.9, "ValueError", node, f"{name} needs non-negative features (scaled input)")
        if d.strings > 0:
            self.fail("shape_dtype", d.strings, "ValueError", node, "string columns may reach a numeric estimator")
        nan_ok = is_model and name.startswith(_NAN_OK) or any("Imputer" in s for s in inst.steps)
        if d.nan > 0 and is_model and not nan_ok:
            self.fail("shape_dtype", d.nan, "ValueError", node, f"{name} does not accept NaN; nothing imputes them")


def _is_classifier(inst: Instance) -> bool:
    # deferred like Pipeline above: only a fit on a regression task asks
    from sklearn.base import ClassifierMixin

    name = (inst.steps or (inst.cls.__name__,))[-1]
    return name.endswith(("Classifier", "NB", "SVC")) or name == "LogisticRegression" or (
        not inst.steps and isinstance(inst.cls, type) and issubclass(inst.cls, ClassifierMixin))
