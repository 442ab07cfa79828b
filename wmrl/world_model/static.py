"""Program-analysis world model: the eight checks by static analysis, the small scale's default.

At paper scale the world model is the agent's own LLM reading the code (Sec. 3.2). On a laptop we
need something as cheap and as *honestly wrong*: this model parses the script, follows names,
files, columns and estimators through it (:mod:`.analysis`), checks calls against the
installed libraries' signatures, estimates the run time from the task's size and the model's
hyperparameters, and guesses the score from a fixed prior per (model family, data category).
It never runs the code and never reads a data file or ``private/``: only the script, the task's
public inventory and description. Its errors are therefore real - it cannot see a shuffled
target, it guesses whether a table holds strings or NaN, and its quality prior ignores the task.

Sampling. Every check yields a failure probability ``p`` and the quality check a distribution
over buckets. At temperature ``T`` the model samples each verdict from the tempered distribution
(``p**(1/T)`` renormalised; ``T = 0`` takes the argmax), like an LLM decoding at temperature 0.7.
Each non-gated prediction draws exactly eight uniforms from one seeded generator (one per check,
in ``CHECKS`` order), so predictions are deterministic given the seed and the call order.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from wmrl.tasks.metrics import get_metric
from wmrl.vocabulary import QUALITY_BUCKETS, QUALITY_PERCENTILE
from wmrl.world_model.analysis import Facts, analyse
from wmrl.world_model.base import CHECKS, Prediction, aggregate, gate

__all__ = ["COLD_STARTUP_S", "QUALITY_PRIOR", "WARM_STARTUP_S", "ProgramAnalysisWorldModel", "estimate_seconds"]

#: Expected leaderboard position score per (model family, category), keyed by
#: :data:`wmrl.vocabulary.MODEL_FAMILIES`: reasonable priors written down once (a forest is a
#: strong tabular baseline, linear models lead on TF-IDF text, ...), not fitted on any answers.
QUALITY_PRIOR = {
    "dummy": {"tabular": 0.03, "text": 0.03, "image": 0.03},
    "linear": {"tabular": 0.40, "text": 0.60, "image": 0.45},
    "knn": {"tabular": 0.30, "text": 0.20, "image": 0.45},
    "naive_bayes": {"tabular": 0.22, "text": 0.50, "image": 0.20},
    "tree": {"tabular": 0.28, "text": 0.15, "image": 0.18},
    "forest": {"tabular": 0.55, "text": 0.35, "image": 0.45},
    "boosting": {"tabular": 0.60, "text": 0.30, "image": 0.45},
    "svm": {"tabular": 0.42, "text": 0.60, "image": 0.55},
}
#: The family an estimator's class name reads as (first match wins), in the vocabulary's names. The
#: world model reads names, not intentions: a ``LinearSVC`` (the grammar's text ``svm``) reads
#: as ``linear``, and its cost and quality are estimated as a linear model's.
_FAMILY_OF = (("Dummy", "dummy"), ("LogisticRegression", "linear"), ("Ridge", "linear"), ("Linear", "linear"),
              ("SGD", "linear"), ("KNeighbors", "knn"), ("NB", "naive_bayes"), ("DecisionTree", "tree"),
              ("RandomForest", "forest"), ("ExtraTrees", "forest"), ("GradientBoosting", "boosting"),
              ("SVC", "svm"), ("SVR", "svm"))
#: Seconds before a script's first fit: a fresh interpreter importing pandas and scikit-learn
#: (``python -m wmrl.sandbox.bench``: 2.9 s cold on this 2-core machine), versus the local sandbox's
#: warm server, which forks an interpreter that has them loaded (0.15 s for the same script).
#: Which one a prediction assumes is a fact about the sandbox, like its time limit: with a 2 s
#: budget, assuming a cold start predicted a timeout for 15 of 32 scripts that ran ok.
COLD_STARTUP_S = 1.5
WARM_STARTUP_S = 0.1


def _family(name: str) -> str | None:
    return next((fam for key, fam in _FAMILY_OF if key in name), None)


def _n_features(task, facts: Facts) -> float:
    if facts.svd:
        return float(facts.svd)
    if task.category == "text":
        return min(facts.vector_size or 20000.0, 50000.0)
    if task.category == "image":
        return float(np.prod(facts.image_size)) if facts.image_size else 256.0
    return max(len(task.feature_columns), 1) * 2.0  # one-hot encoding roughly doubles a table


def _fit_seconds(family: str, kw: dict, n: float, d: float, k: int, text: bool) -> float:
    """Seconds of one fit on one reference core, from the family's complexity and its arguments."""
    def num(key, default):
        v = kw.get(key, default)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else float(default)

    nlogn = n * math.log2(n + 2)
    if family == "forest":
        mf = d if kw.get("max_features", "sqrt") is None else math.sqrt(d)
        return num("n_estimators", 100) * nlogn * mf * 3e-7
    if family == "boosting":
        return num("max_iter", 100) * max(k, 1) * (n * min(d, 256) * 4e-8 + 2e-3) * (num("max_leaf_nodes", 31) / 31) ** 0.5
    if family == "tree":
        return nlogn * d * 3e-7
    if family == "svm":
        if text:
            return num("max_iter", 1000) * n * 2e-7
        c_factor = 1.0 + math.log10(max(num("C", 1.0), 1.0)) ** 2 * 4
        return n ** 2 * d * 2e-9 * c_factor * (5 if kw.get("probability") is True else 1) / max(num("tol", 1e-3) * 1e3, 1e-3) ** 0.1
    if family == "linear":
        it = min(num("max_iter", 100), 50 + 30 * math.log10(max(num("C", 1.0), 1e-3) + 1) ** 2 / max(num("tol", 1e-4), 1e-12) ** 0.15)
        return it * n * (d if not text else 30) * max(k, 1) * 3e-8
    if family == "knn":
        return n * n * 0.25 * min(d, 1e4) * 1e-9
    return n * d * 1e-8  # dummy, naive Bayes


def estimate_seconds(task, facts: Facts, startup_s: float = COLD_STARTUP_S) -> float:
    """Wall time of the whole script: startup, data loading, every fit (holdout, CV folds, final)."""
    n = float(max(task.n_rows, 2))
    d = _n_features(task, facts)
    k = len(task.classes) if task.classes and len(task.classes) > 2 else 1
    total = startup_s + (n * 2e-3 if task.category == "image" else n * d * 1e-7)
    for inst in facts.models:
        name = (inst.steps or (inst.cls.__name__,))[-1]
        family = _family(name)
        if family:
            total += inst.fits * _fit_seconds(family, inst.kwargs, n * 0.85, d, k, task.category == "text")
    return total


def _quality(task, facts: Facts) -> np.ndarray:
    """A distribution over quality buckets around the prior's expected position score."""
    model = facts.models[-1] if facts.models else None
    family = _family((model.steps or (model.cls.__name__,))[-1]) if model else None
    expected = QUALITY_PRIOR.get(family, {}).get(task.category, 0.1) if family else 0.1
    if model is not None:
        small = any(model.kwargs.get(key) in v for key, v in
                    (("n_estimators", (10, 50)), ("max_iter", (100,)), ("max_depth", (2, 3, 4)), ("C", (0.1, 0.01))))
        expected += -0.05 if small else 0.0
    expected *= 0.6 if facts.subsample < 0.5 else 1.0
    if get_metric(task.metric).kind == "probability" and facts.pred_kind == "predict":
        expected *= 0.5  # hard labels throw away the ranking a probability metric scores
    centres = np.array([QUALITY_PERCENTILE[b] for b in QUALITY_BUCKETS])
    logits = -((centres - expected) ** 2) / (2 * 0.12 ** 2)
    p = np.exp(logits - logits.max())
    return p / p.sum()


def _temper(p: np.ndarray, temperature: float) -> np.ndarray:
    if temperature <= 0:
        out = np.zeros_like(p)
        out[int(np.argmax(p))] = 1.0
        return out
    logp = np.log(np.clip(p, 1e-12, 1.0)) / temperature
    q = np.exp(logp - logp.max())
    return q / q.sum()


class ProgramAnalysisWorldModel:
    """Static-analysis world model; see the module docstring. Frozen: it has no parameters to train."""

    def __init__(self, temperature: float = 0.7, seed: int = 0, time_limit_s: float = 60.0,
                 startup_s: float = COLD_STARTUP_S):
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        self.temperature, self.time_limit_s, self.startup_s = float(temperature), float(time_limit_s), float(startup_s)
        self.rng = np.random.default_rng(seed)

    @classmethod
    def for_sandbox(cls, sandbox, temperature: float = 0.7, seed: int = 0) -> ProgramAnalysisWorldModel:
        """A model told the facts of the sandbox it predicts (``sandbox.facts``): its CPU budget and how
        its scripts start."""
        facts = sandbox.facts
        return cls(temperature, seed, facts.cpu_budget_s, WARM_STARTUP_S if facts.warm_start else COLD_STARTUP_S)

    def reseed(self, seed) -> None:
        """Restart the sampling stream (the trainer reseeds per step so a resumed run replays it)."""
        self.rng = np.random.default_rng(seed)

    def _budget_p(self, seconds: float) -> float:
        # Log-scale uncertainty: at the limit a coin flip, at 3x the limit ~90% sure of a timeout.
        return 1.0 / (1.0 + math.exp(-(math.log(seconds) - math.log(self.time_limit_s)) / 0.5))

    def predict(self, task, code: str) -> Prediction:
        gated = gate(code)
        if gated is not None:
            return gated
        facts = analyse(task, code)
        seconds = estimate_seconds(task, facts, self.startup_s)
        u = self.rng.random(len(CHECKS))
        verdicts = []
        for i, check in enumerate(CHECKS):
            if check == "quality":
                probs = _temper(_quality(task, facts), self.temperature)
                bucket = QUALITY_BUCKETS[min(int(np.searchsorted(np.cumsum(probs), u[i])), len(probs) - 1)]
                verdicts.append({"check": check, "verdict": "pass", "quality_bucket": bucket,
                                 "confidence": float(probs.max()), "reason": f"estimated run time {seconds:.1f}s",
                                 "error_type": None, "error_line": None, "env_feedback": None})
                continue
            found = [f for f in facts.findings if f.check == check]
            if check == "compute_budget":
                verdicts.append(self._verdict(check, self._budget_p(seconds), "TimeoutError", None,
                                              f"estimated {seconds:.0f}s against a {self.time_limit_s:.0f}s limit", u[i]))
                continue
            worst = max(found, key=lambda f: (f.p_fail, -f.line)) if found else None
            first = min((f for f in found if f.p_fail >= 0.5), key=lambda f: f.line, default=worst)
            verdicts.append(self._verdict(check, first.p_fail if first else 0.02, first.error_type if first else None,
                                          first.line if first else None, first.reason if first else "no problem found",
                                          u[i]))
        return aggregate(verdicts)

    def _verdict(self, check, p_fail, error_type, line, reason, u) -> dict:
        q = _temper(np.array([p_fail, 1.0 - p_fail]), self.temperature)[0]
        fail = u < q
        return {"check": check, "verdict": "fail" if fail else "pass", "confidence": float(max(q, 1 - q)),
                "error_type": error_type if fail else None, "error_line": line if fail else None,
                "reason": reason, "env_feedback": reason if fail else None}

    def predict_many(self, items: Sequence[tuple[object, str]]) -> list[Prediction]:
        return [self.predict(task, code) for task, code in items]
