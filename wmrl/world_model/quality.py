"""The quality check: what a script's text says about its score, and the world model's guess of it.

The paper's eighth check always passes and names a bucket (low / fair / mid / high). What makes
that guess useful to GRPO is that it *ranks* the scripts of one group: they share a task and
differ in their decisions. So the guess must read what differs between them and is visible in the
code - the model family and its capacity (its constructor's arguments), scaling and imputation,
how categoricals are encoded, the text vectoriser and its n-grams, the image features, a final fit
on a subsample, hard labels where the metric scores probabilities. :func:`script_traits` reads
exactly these from the analysis' facts and the script's own syntax tree; it reads no data file,
no answer, and not the plan a script may state in its docstring.

Two estimates of the expected position score, one per profile of
:class:`~wmrl.world_model.static.ProgramAnalysisWorldModel`:

- ``pessimistic`` (:func:`prior_expected`, the original model): a fixed prior per (family,
  category), a small penalty for a small configuration, a subsample or hard labels;
- ``train_split`` (:func:`traits_expected`): an additive model over the traits,
  ``expected = clip(b[category] + f[family, category] + sum_k w_k x_k, 0, 1)``, whose weights
  (:data:`QUALITY_WEIGHTS`) are fitted by ``python notebooks/_wm_profile.py tune --split train`` on
  a tuning set of the training tasks' scripts at a seed of its own (no held-out task, no evaluation
  item; see that module); the ``tuning_split`` profile uses the same model with weights fitted on
  the pool's tuning split (:data:`QUALITY_WEIGHTS_TUNING`, ``--split tuning``).

Either expectation becomes a distribution over buckets (:func:`bucket_distribution`): a Gaussian
kernel around it over the buckets' position scores, which the model then samples at its
temperature.
"""

from __future__ import annotations

import ast
import math

import numpy as np

from wmrl.tasks.metrics import get_metric
from wmrl.vocabulary import QUALITY_BUCKETS, QUALITY_PERCENTILE
from wmrl.world_model.analysis import Facts

__all__ = ["QUALITY_PRIOR", "QUALITY_WEIGHTS", "QUALITY_WEIGHTS_TUNING", "bucket_distribution", "family_of", "prior_expected",
           "script_traits", "trait_vector", "traits_expected"]

#: Expected leaderboard position score per (model family, category), keyed by
#: :data:`wmrl.vocabulary.MODEL_FAMILIES`: reasonable priors written down once (a forest is a
#: strong tabular baseline, linear models lead on TF-IDF text, ...), not fitted on any answers.
#: The ``pessimistic`` profile's quality guess.
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
#: Capacity as a number in [0, 3]: the argument that sets a family's capacity, and the values that
#: read as small / medium / large / beyond (log-interpolated between them). Not fitted: these are
#: the orders of magnitude a practitioner reads (50 trees is few, 5000 is many).
_CAPACITY_SCALE = {
    "forest": ("n_estimators", (50, 150, 400, 5000)),
    "boosting": ("max_iter", (100, 300, 800, 50000)),
    "linear": ("C", (0.1, 1.0, 10.0, 10000.0)),
    "svm": ("C", (0.3, 1.0, 10.0, 100000.0)),
    "knn": ("n_neighbors", (3, 7, 15, 50)),
    "tree": ("max_depth", (4, 8, 16, 32)),
}
#: Families whose quality depends on the features' scale (distances, margins, penalties).
_SCALE_SENSITIVE = ("linear", "knn", "svm")


def family_of(name: str) -> str | None:
    """The model family an estimator's class name reads as (None: not a model the world model knows)."""
    return next((fam for key, fam in _FAMILY_OF if key in name), None)


def _last_model(facts: Facts):
    return facts.models[-1] if facts.models else None


def _model_family(facts: Facts) -> str | None:
    model = _last_model(facts)
    return family_of((model.steps or (model.cls.__name__,))[-1]) if model else None


def prior_expected(task, facts: Facts) -> float:
    """The ``pessimistic`` profile's expected position score: a fixed prior, three penalties."""
    model, family = _last_model(facts), _model_family(facts)
    expected = QUALITY_PRIOR.get(family, {}).get(task.category, 0.1) if family else 0.1
    if model is not None:
        small = any(model.kwargs.get(key) in v for key, v in
                    (("n_estimators", (10, 50)), ("max_iter", (100,)), ("max_depth", (2, 3, 4)), ("C", (0.1, 0.01))))
        expected += -0.05 if small else 0.0
    expected *= 0.6 if facts.subsample < 0.5 else 1.0
    if get_metric(task.metric).kind == "probability" and facts.pred_kind == "predict":
        expected *= 0.5  # hard labels throw away the ranking a probability metric scores
    return expected


def _capacity(family: str | None, kwargs: dict) -> float:
    """A family's capacity on the [0, 3] scale of :data:`_CAPACITY_SCALE` (1.0: unknown, the medium)."""
    if family not in _CAPACITY_SCALE:
        return 1.0
    key, marks = _CAPACITY_SCALE[family]
    if family == "linear" and "alpha" in kwargs and "C" not in kwargs:  # Ridge: alpha = 1 / C
        alpha = kwargs["alpha"]
        value = 1.0 / alpha if isinstance(alpha, (int, float)) and alpha > 0 else None
    else:
        value = kwargs.get(key, "default")
        if family == "tree" and key not in kwargs or value is None:  # an unbounded tree is a deep one
            value = marks[2]
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        return 1.0
    return float(np.interp(math.log(value), np.log(marks), np.arange(4.0)))


def _calls(tree: ast.Module) -> set[str]:
    """The names of everything the script calls (``make_pipeline(StandardScaler())`` -> both names)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            names.add(f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else "")
    return names


def _ngram_max(tree: ast.Module) -> int:
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "ngram_range" and isinstance(node.value, ast.Tuple):
            hi = node.value.elts[-1]
            if isinstance(hi, ast.Constant) and isinstance(hi.value, int):
                return hi.value
    return 1


def script_traits(task, code: str, facts: Facts) -> dict:
    """What the script's text says about its quality: categorical and numeric traits (see the module doc)."""
    tree = ast.parse(code)
    calls = _calls(tree)
    family = _model_family(facts) or "none"
    model = _last_model(facts)
    text = ast.unparse(tree)
    traits = {
        "family": family,
        "capacity": _capacity(family, model.kwargs if model else {}),
        "scaled": any("Scaler" in c for c in calls),
        "imputed": any("Imputer" in c for c in calls),
        "subsample": facts.subsample < 0.5,
        "hard_labels": get_metric(task.metric).kind == "probability" and facts.pred_kind == "predict",
        "encoding": "none", "vectorizer": "none", "ngram_max": 0, "image_features": "none",
    }
    if task.category == "tabular":
        traits["encoding"] = ("onehot" if "OneHotEncoder" in calls else "ordinal" if "OrdinalEncoder" in calls
                              else "numeric" if "select_dtypes" in calls else "raw")
    elif task.category == "text":
        traits["vectorizer"] = ("hashing" if "HashingVectorizer" in calls else "count" if "CountVectorizer" in calls
                                else "tfidf_char" if "char" in text else "tfidf_word")
        traits["ngram_max"] = _ngram_max(tree)
    elif task.category == "image":
        traits["image_features"] = ("stats" if "histogram" in calls else
                                    f"pixels{facts.image_size[0]}" if facts.image_size else "pixels")
    return traits


#: The categorical traits the additive model keys on, and their levels (a level not listed is ignored).
_LEVELS = {
    "family": ("dummy", "linear", "knn", "naive_bayes", "tree", "forest", "boosting", "svm"),
    "encoding": ("onehot", "ordinal", "numeric", "raw"),
    "vectorizer": ("tfidf_word", "tfidf_char", "hashing", "count"),
    "image_features": ("pixels32", "pixels12", "stats"),
}


def trait_vector(task, traits: dict) -> dict[str, float]:
    """The additive model's inputs: named indicator and numeric features (absent ones are 0)."""
    cat, fam = task.category, traits["family"]
    x = {f"base:{cat}": 1.0}
    if fam in _LEVELS["family"]:
        x[f"family:{fam}:{cat}"] = 1.0
        x[f"capacity:{fam}"] = traits["capacity"] - 1.0  # medium capacity is the family's baseline
        if fam in _SCALE_SENSITIVE and cat != "text":
            x[f"scaled:{fam}"] = float(traits["scaled"])
    for name in ("encoding", "vectorizer", "image_features"):
        if traits[name] in _LEVELS[name]:
            x[f"{name}:{traits[name]}"] = 1.0
    if cat == "text":
        x["ngram_max"] = float(traits["ngram_max"])
    for flag in ("imputed", "subsample", "hard_labels"):
        x[flag] = float(traits[flag])
    return x


#: The ``train_split`` profile's additive quality model: position score = the sum of the weights of a
#: script's :func:`trait_vector` (clipped to [0, 1]). Fitted by ridge regression on the real
#: position scores of the tuning set's scripts that ran ok (``python notebooks/_wm_profile.py
#: tune --split train``: the small pool's training tasks, executed in the small preset's sandbox), never on an
#: item the world model is evaluated on; ``hard_labels`` is set by hand (the tuning set never shows
#: it). The tool also prints the out-of-task Spearman (each task ranked by a fit on the others);
#: tests/test_wm_profile.py checks these weights are the fit of the committed tuning outcomes.
QUALITY_WEIGHTS: dict[str, float] = {
    "base:image": 0.403, "base:tabular": 0.446, "base:text": 0.329,
    "family:boosting:image": -0.087, "family:boosting:tabular": 0.181, "family:boosting:text": 0.243,
    "family:dummy:image": -0.419, "family:dummy:tabular": -0.39, "family:dummy:text": -0.404,
    "family:forest:image": 0.286, "family:forest:tabular": 0.212, "family:knn:image": 0.18,
    "family:knn:tabular": 0.065, "family:knn:text": 0.084, "family:linear:image": 0.071,
    "family:linear:tabular": 0.078, "family:linear:text": 0.09, "family:naive_bayes:image": 0.064,
    "family:naive_bayes:tabular": 0.219, "family:naive_bayes:text": 0.259, "family:svm:image": 0.274,
    "family:svm:tabular": 0.039, "family:tree:image": 0.034, "family:tree:tabular": 0.043, "family:tree:text": 0.056,
    "capacity:boosting": 0.028, "capacity:forest": -0.067, "capacity:knn": -0.072, "capacity:linear": -0.023,
    "capacity:svm": 0.029, "capacity:tree": -0.139,
    "scaled:knn": 0.071, "scaled:linear": 0.023, "scaled:svm": 0.089,
    "encoding:numeric": 0.1, "encoding:onehot": 0.092, "encoding:ordinal": 0.14, "encoding:raw": 0.114,
    "vectorizer:count": 0.079, "vectorizer:hashing": 0.102, "vectorizer:tfidf_char": 0.018,
    "vectorizer:tfidf_word": 0.13,
    "ngram_max": 0.049,
    "image_features:pixels12": 0.161, "image_features:pixels32": 0.053, "image_features:stats": 0.189,
    "imputed": 0.02,
    "subsample": -0.091,
    "hard_labels": -0.2,
}


#: The ``tuning_split`` profile's additive quality model: the same procedure fitted on the tuning
#: split's scripts (``python notebooks/_wm_profile.py tune --split tuning``: tasks no run trains or
#: evaluates on); tests/test_wm_profile.py checks them against the committed outcomes too.
QUALITY_WEIGHTS_TUNING: dict[str, float] = {
    "base:image": 0.41, "base:tabular": 0.479, "base:text": 0.425, "capacity:boosting": -0.043,
    "capacity:forest": -0.091, "capacity:knn": -0.029, "capacity:linear": -0.014, "capacity:svm": 0.137,
    "capacity:tree": 0.006, "encoding:numeric": 0.069, "encoding:onehot": 0.149, "encoding:ordinal": 0.131,
    "encoding:raw": 0.131, "family:boosting:image": -0.062, "family:boosting:tabular": 0.284,
    "family:boosting:text": 0.16, "family:dummy:image": -0.421, "family:dummy:tabular": -0.423,
    "family:dummy:text": -0.403, "family:forest:image": 0.234, "family:forest:tabular": 0.124,
    "family:forest:text": 0.205, "family:knn:image": 0.101, "family:knn:tabular": 0.07, "family:knn:text": 0.094,
    "family:linear:image": 0.093, "family:linear:tabular": 0.18, "family:linear:text": 0.073,
    "family:naive_bayes:image": 0.092, "family:naive_bayes:tabular": 0.344, "family:naive_bayes:text": 0.369,
    "family:svm:image": 0.1, "family:svm:tabular": -0.194, "family:tree:image": 0.273, "family:tree:tabular": 0.094,
    "family:tree:text": -0.072, "image_features:pixels12": 0.056, "image_features:pixels32": 0.06,
    "image_features:stats": 0.294, "imputed": -0.06, "ngram_max": 0.024, "scaled:knn": -0.01,
    "scaled:linear": 0.037, "scaled:svm": 0.275, "subsample": -0.098, "vectorizer:count": 0.099,
    "vectorizer:hashing": 0.163, "vectorizer:tfidf_char": -0.006, "vectorizer:tfidf_word": 0.17,
    "hard_labels": -0.2,
}


def traits_expected(task, traits: dict, weights: dict[str, float] | None = None) -> float:
    """The default-to-pass profiles' expected position score (:data:`QUALITY_WEIGHTS` unless ``weights``): the additive model over :func:`trait_vector`."""
    w = QUALITY_WEIGHTS if weights is None else weights
    x = trait_vector(task, traits)
    return float(np.clip(sum(w.get(k, 0.0) * v for k, v in x.items()), 0.0, 1.0))


def bucket_distribution(expected: float, width: float = 0.12) -> np.ndarray:
    """Probabilities of the quality buckets: a Gaussian kernel of ``width`` around ``expected``."""
    centres = np.array([QUALITY_PERCENTILE[b] for b in QUALITY_BUCKETS])
    logits = -((centres - expected) ** 2) / (2 * width ** 2)
    p = np.exp(logits - logits.max())
    return p / p.sum()
