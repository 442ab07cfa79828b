"""Kaggle-like leaderboards of the small pool, from a fixed population of deterministic participants.

The boards are part of a task's data, like its hidden answers: the pool's recipe builds them once
(:mod:`wmrl.tasks.recipe`) and :mod:`wmrl.grading` only reads them. That is why this module lives
in ``wmrl.tasks`` (it needs nothing but the metric registry) and not in ``wmrl.grading``, which
imports the tasks and must never be imported by them.

A percentile is only as meaningful as the board it is measured against. A real Kaggle board has
a few strong entries, a crowd of reasonable ones and a long tail of weak and broken ones. We
rebuild that shape on every task from scikit-learn "participants" trained on the public train
set and scored on the hidden test answers:

- every model family at every listed hyper-parameter on all rows and features (dummies, linear
  models, linear SVMs, naive Bayes, kNN, trees, random and extra forests, gradient boosting);
- a seeded sample of the same families on training subsamples and feature subsets;
- for each of those, copies whose predictions are partly replaced by a dummy's on 2%, 5%, 15%
  and 40% of the rows: the near-duplicates that crowd the top of a real board (forks of public
  notebooks) and its half-finished or misaligned submissions;
- the task's sample submission.

The population (296 entries) is shuffled with a seed and dealt into two disjoint boards, a
public and a private one, each scored on the *whole* test set; each has ``rank,score`` rows,
best first. Everything is seeded and single-threaded, so a rebuild gives the same boards.
"""

from __future__ import annotations

import itertools
import zlib

import numpy as np
import pandas as pd
from PIL import Image
from sklearn import dummy, ensemble, linear_model, naive_bayes, neighbors, svm, tree
from sklearn.compose import ColumnTransformer
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from threadpoolctl import threadpool_limits

from wmrl.tasks.metrics import canonical_labels, get_metric

__all__ = ["GRID", "build_boards", "featurize"]

ROW_FRACTIONS = (0.5, 0.2, 0.08)
FEATURE_FRACTIONS = (0.7, 0.4, 0.15)
CORRUPTIONS = (0.02, 0.05, 0.15, 0.4)
N_SUBSAMPLED = 24
SPARSE_FAMILIES = ("linear", "svm", "nb", "knn")  # take TF-IDF directly (but BayesianRidge, the "nb" regressor, not)
IMAGE_SIDE = 12

# family -> hyper-parameter values; the classifier and regressor of each family are in _model.
GRID = {
    "dummy": ("most_frequent", "stratified", "uniform", "prior"),
    "linear": (0.001, 0.01, 0.1, 1.0, 10.0, 100.0),
    "svm": (0.01, 0.1, 1.0, 10.0),
    "nb": (None,),
    "knn": (1, 3, 7, 15, 31, 63),
    "tree": (1, 2, 3, 5, 8, None),
    "forest": (2, 4, 8, None),
    "extra": (4, None),
    "boost": ((15, 0.2), (40, 0.1)),
}
# The regression counterparts of the four dummy strategies: constant predictions of varying quality.
DUMMY_REGRESSORS = {"most_frequent": {"strategy": "mean"}, "stratified": {"strategy": "median"},
                    "uniform": {"strategy": "quantile", "quantile": 0.25},
                    "prior": {"strategy": "quantile", "quantile": 0.75}}


def _model(family: str, p, classification: bool, sparse_text: bool, seed: int):
    rs = {"random_state": seed}
    if family == "dummy":
        return dummy.DummyClassifier(strategy=p, **rs) if classification else dummy.DummyRegressor(**DUMMY_REGRESSORS[p])
    if family == "linear":
        return linear_model.LogisticRegression(C=p, max_iter=300) if classification else linear_model.Ridge(alpha=1 / p)
    if family == "svm":
        return svm.LinearSVC(C=p, **rs) if classification else svm.LinearSVR(C=p, max_iter=2000, **rs)
    if family == "nb":
        if classification:
            return naive_bayes.MultinomialNB() if sparse_text else naive_bayes.GaussianNB()
        return linear_model.BayesianRidge()
    if family == "knn":
        kw = {"n_neighbors": p, "metric": "cosine" if sparse_text else "minkowski"}
        return neighbors.KNeighborsClassifier(**kw) if classification else neighbors.KNeighborsRegressor(**kw)
    if family == "tree":
        return (tree.DecisionTreeClassifier if classification else tree.DecisionTreeRegressor)(max_depth=p, **rs)
    if family in ("forest", "extra"):
        cls = {("forest", True): ensemble.RandomForestClassifier, ("forest", False): ensemble.RandomForestRegressor,
               ("extra", True): ensemble.ExtraTreesClassifier, ("extra", False): ensemble.ExtraTreesRegressor}
        return cls[family, classification](n_estimators=20, max_depth=p, max_features="sqrt", n_jobs=1, **rs)
    if family == "boost":
        cls = ensemble.HistGradientBoostingClassifier if classification else ensemble.HistGradientBoostingRegressor
        return cls(max_iter=p[0], learning_rate=p[1], max_leaf_nodes=15, early_stopping=False, **rs)
    raise ValueError(f"unknown participant family {family!r}")


def featurize(train: pd.DataFrame, test: pd.DataFrame, text_column=None, train_images=None, test_images=None):
    """(X_train, X_test) dense, plus (T_train, T_test) sparse TF-IDF for text tasks (else None)."""
    if train_images is not None:
        def small(imgs):
            return np.stack([np.asarray(Image.fromarray(x).resize((IMAGE_SIDE, IMAGE_SIDE), Image.BILINEAR),
                                        dtype=np.float32).ravel() / 255 for x in imgs])
        return small(train_images), small(test_images), None, None
    if text_column is not None:
        text_cols = [c for c in train.columns if train[c].dtype == object]
        join = lambda df: df[text_cols].fillna("").astype(str).agg(" ".join, axis=1)
        tfidf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=5000, sublinear_tf=True)
        t_train, t_test = tfidf.fit_transform(join(train)), tfidf.transform(join(test))
        svd = TruncatedSVD(n_components=min(50, t_train.shape[1] - 1), random_state=0)
        return svd.fit_transform(t_train), svd.transform(t_test), t_train, t_test
    cat = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c]) or train[c].dtype == bool]
    num = [c for c in train.columns if c not in cat]
    ct = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), num),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"),
                              OneHotEncoder(handle_unknown="ignore", max_categories=20, sparse_output=False)), cat),
    ])
    as_str = {c: str for c in cat}
    return ct.fit_transform(train.astype(as_str)), ct.transform(test.astype(as_str)), None, None


def _specs(rng: np.random.Generator) -> list[tuple]:
    """(family, param, row_fraction, feature_fraction): the full grid, then a seeded subsampled sample."""
    full = [(f, p, 1.0, 1.0) for f, ps in GRID.items() for p in ps]
    models = [(f, p) for f, ps in GRID.items() if f != "dummy" for p in ps]
    fracs = list(itertools.product((1.0, *ROW_FRACTIONS), (1.0, *FEATURE_FRACTIONS)))[1:]
    picks = [models[i] + fracs[j] for i, j in zip(rng.integers(len(models), size=N_SUBSAMPLED),
                                                   rng.integers(len(fracs), size=N_SUBSAMPLED))]
    return full + picks


def _predict(spec, X, T, y_train, classification, kind, positive, rng, seed):
    family, p, row_frac, feat_frac = spec
    use_sparse = T[0] is not None and family in SPARSE_FAMILIES and (classification or family != "nb")
    A_train, A_test = T if use_sparse else X
    n, d = A_train.shape
    rows = np.sort(rng.choice(n, size=max(10, int(row_frac * n)), replace=False)) if row_frac < 1 else np.arange(n)
    cols = np.sort(rng.choice(d, size=max(1, int(feat_frac * d)), replace=False)) if feat_frac < 1 else np.arange(d)
    y_fit = y_train[rows]
    if classification and len(np.unique(y_fit)) < 2:
        y_fit, rows = y_train, np.arange(n)  # a subsample with one class cannot train most models
    model = _model(family, p, classification, use_sparse, seed)
    if family == "knn":
        model.set_params(n_neighbors=min(p, len(rows)))
    model.fit(A_train[rows][:, cols], y_fit)
    if kind != "probability":
        return model.predict(A_test[:, cols])
    if hasattr(model, "predict_proba"):
        return model.predict_proba(A_test[:, cols])[:, list(canonical_labels(model.classes_)).index(positive)]
    z = model.decision_function(A_test[:, cols])
    return 1 / (1 + np.exp(-np.clip(z, -30, 30)))


def build_boards(train, test, y_train, y_test, *, task_type, metric, sample_prediction, text_column=None,
                 train_images=None, test_images=None, positive_label=None, seed_key="") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score the population on the hidden answers; return the (public, private) boards."""
    m = get_metric(metric)
    classification = task_type == "classification"
    seed = zlib.crc32(seed_key.encode()) % 2**31
    rng = np.random.default_rng(seed)
    y_train = np.asarray(y_train)
    y_true = canonical_labels(y_test) if classification else np.asarray(y_test, dtype=float)
    fix = canonical_labels if (classification and m.kind == "label") else (lambda v: np.asarray(v, dtype=float))
    with threadpool_limits(limits=1):
        Xa, Xb, Ta, Tb = featurize(train, test, text_column, train_images, test_images)
        preds = [fix(_predict(s, (Xa, Xb), (Ta, Tb), y_train, classification, m.kind, positive_label, rng, seed + i))
                 for i, s in enumerate(_specs(rng))]
    fallback = fix(_predict(("dummy", "stratified" if m.kind == "label" else "most_frequent", 1.0, 1.0),
                            (Xa, Xb), (None, None), y_train, classification, m.kind, positive_label, rng, seed))
    population = [fix(sample_prediction)]
    for pred in preds:
        population.append(pred)
        for q in CORRUPTIONS:
            mask = rng.random(len(pred)) < q
            population.append(np.where(mask, fallback, pred))
    scores = np.array([m.score(y_true, p, positive_label) for p in population])
    order = rng.permutation(len(scores))
    half = len(order) // 2
    return tuple(_board(scores[idx], m.higher_is_better) for idx in (order[:half], order[half:]))


def _board(scores: np.ndarray, higher_is_better: bool) -> pd.DataFrame:
    best_first = np.sort(scores)[::-1] if higher_is_better else np.sort(scores)
    return pd.DataFrame({"rank": np.arange(1, len(best_first) + 1), "score": np.round(best_first, 10)})
