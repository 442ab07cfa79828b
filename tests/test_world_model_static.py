"""The program-analysis world model: each check fires on its defect, passes clean code, stays cheap.

The error profiles are tested: ``train_split`` and ``tuning_split`` (fail a check only on a certain finding,
optimistic, a quality guess that ranks the scripts of one task) and ``pessimistic`` (the original
model, whose exact predictions tests/test_world_model_analysis.py pins to a fingerprint).
"""

from __future__ import annotations

import builtins
import time
from pathlib import Path

import pytest

from _toy_tasks import make_toy_tasks
from wmrl.world_model import ProgramAnalysisWorldModel
from wmrl.world_model.base import CHECKS
from wmrl.world_model.static import PROFILES

CLEAN = '''\
import os
from pathlib import Path

import pandas as pd
from sklearn.ensemble import RandomForestClassifier

DATA_DIR = Path(os.environ.get("DATA_DIR", "."))
SUBMISSION_PATH = os.environ.get("SUBMISSION_PATH", "submission.csv")

train = pd.read_csv(DATA_DIR / "train.csv")
test = pd.read_csv(DATA_DIR / "test.csv")
features = ["a", "b"]
X = train[features].fillna(0)
y = train["species"]
model = RandomForestClassifier(n_estimators=100, random_state=0)
model.fit(X, y)
preds = model.predict(test[features].fillna(0))
pd.DataFrame({"id": test["id"], "species": preds}).to_csv(SUBMISSION_PATH, index=False)
'''

# check -> (old, new, expected status, expected error type): one defect each, written by hand.
DEFECTS = {
    "imports_names": ("import pandas as pd", "import pandass as pd", "runtime_error", "ModuleNotFoundError"),
    "imports_names_undefined": ("model.fit(X, y)", "model.fit(X, labels)", "runtime_error", "NameError"),
    "api_calls": ("random_state=0)", "random_state=0, min_impurity_split=0.1)", "runtime_error", "TypeError"),
    "api_calls_method": ("test = pd.read_csv", "train = train.append(train)\ntest = pd.read_csv", "runtime_error",
                         "AttributeError"),
    "data_refs_file": ('"train.csv"', '"training.csv"', "runtime_error", "FileNotFoundError"),
    "data_refs_column": ('train["species"]', 'train["Species"]', "runtime_error", "KeyError"),
    "data_refs_after_drop": ('y = train["species"]', 'train = train.drop(columns=["species"])\ny = train["species"]',
                             "runtime_error", "KeyError"),
    "shape_dtype": ("model.fit(X, y)", "model = MultinomialNB()\nmodel.fit(StandardScaler().fit_transform(X), y)",
                    "runtime_error", "ValueError"),  # multinomial naive Bayes on standardised (negative) features
    "compute_budget": ("n_estimators=100", "n_estimators=10_000_000", "timeout", "TimeoutError"),
    "other_runtime": ("model.fit(X, y)", "model.fit(X, y)\nraise RuntimeError('stop')", "runtime_error",
                      "RuntimeError"),
    "submission_missing": (".to_csv(SUBMISSION_PATH, index=False)", ".head()", "no_submission", "NoSubmission"),
    "submission_columns": ('"species": preds', '"prediction": preds', "invalid_submission", "InvalidSubmission"),
}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    found = make_toy_tasks(tmp_path_factory.mktemp("toy"))
    desc = found["tabular"].public_dir / "description.txt"
    desc.write_text(desc.read_text() + " Some values are missing.")
    return found


#: GaussianNB on a table whose description says values are missing, nothing imputing them: a
#: suspicion (the analysis cannot know whether the used columns hold NaN), not a certain defect.
SUSPICION = ("RandomForestClassifier(n_estimators=100, random_state=0)", "GaussianNB()")
#: CLEAN without even a suspicion: the features are turned into floats before the fit.
NO_FINDINGS = CLEAN.replace("X = train[features].fillna(0)", "X = train[features].fillna(0).to_numpy(dtype=float)")


def _mutate(old, new):
    assert old in CLEAN
    code = CLEAN.replace(old, new)
    if "GaussianNB" in new:
        code = code.replace("from sklearn.ensemble", "from sklearn.naive_bayes import GaussianNB\nfrom sklearn.ensemble")
        code = code.replace(".fillna(0)", "")
    if "MultinomialNB" in new:
        code = code.replace("from sklearn.ensemble", "from sklearn.naive_bayes import MultinomialNB\n"
                                                      "from sklearn.preprocessing import StandardScaler\nfrom sklearn.ensemble")
    return code


def _line_of(code, text):
    return next(i for i, line in enumerate(code.splitlines(), 1) if text in line)


@pytest.mark.parametrize("profile", PROFILES)
def test_clean_script_is_predicted_to_run_with_a_quality_bucket(tasks, profile):
    pred = ProgramAnalysisWorldModel(temperature=0, profile=profile).predict(tasks["tabular"], CLEAN)
    assert pred.status == "ok" and pred.quality_bucket in ("fair", "mid", "high")
    assert [v["check"] for v in pred.verdicts] == list(CHECKS)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_check_fires_on_a_hand_written_script_with_its_defect(tasks, name, profile):
    old, new, status, error_type = DEFECTS[name]
    pred = ProgramAnalysisWorldModel(temperature=0, profile=profile).predict(tasks["tabular"], _mutate(old, new))
    assert (pred.status, pred.error_type) == (status, error_type), pred.feedback_text


@pytest.mark.parametrize("name", ["imports_names_undefined", "api_calls", "data_refs_column", "data_refs_after_drop",
                                  "shape_dtype", "other_runtime", "submission_columns"])
def test_the_train_split_profile_fails_a_certain_defect_at_its_line_with_its_exception(tasks, name):
    old, new, status, error_type = DEFECTS[name]
    code = _mutate(old, new)
    wm = ProgramAnalysisWorldModel(temperature=0.7, seed=1, profile="train_split")
    preds = wm.predict_many([(tasks["tabular"], code)] * 50)
    right = [p for p in preds if (p.status, p.error_type) == (status, error_type)]
    assert len(right) >= 45, [p.feedback_text for p in preds if p not in right][:3]
    assert {p.error_line for p in right} == {_line_of(code, new.splitlines()[-1].strip())}


def test_the_train_split_profile_predicts_a_script_without_findings_to_run_almost_always(tasks):
    from wmrl.world_model.analysis import analyse

    assert analyse(tasks["tabular"], NO_FINDINGS).findings == []
    preds = ProgramAnalysisWorldModel(temperature=0.7, seed=5, profile="train_split").predict_many(
        [(tasks["tabular"], NO_FINDINGS)] * 400)
    assert sum(p.status == "ok" for p in preds) / len(preds) >= 0.97


def test_a_suspicion_passes_in_the_train_split_profile_and_fails_in_the_pessimistic_one(tasks):
    code = _mutate(*SUSPICION)
    train = ProgramAnalysisWorldModel(temperature=0, profile="train_split").predict(tasks["tabular"], code)
    pessimistic = ProgramAnalysisWorldModel(temperature=0, profile="pessimistic").predict(tasks["tabular"], code)
    assert train.status == "ok"
    assert (pessimistic.status, pessimistic.error_type) == ("runtime_error", "ValueError")
    shape = next(v for v in train.verdicts if v["check"] == "shape_dtype")
    assert "not certain enough to fail" in shape["reason"]  # the doubt is said, not acted on
    rate = {profile: sum(p.status == "ok" for p in ProgramAnalysisWorldModel(0.7, 2, profile=profile).predict_many(
        [(tasks["tabular"], code)] * 200)) / 200 for profile in PROFILES}
    assert rate["train_split"] >= 0.95 and rate["pessimistic"] < 0.5


def test_the_train_split_profile_predicts_a_timeout_only_when_the_estimate_is_clearly_over_the_budget(tasks):
    from wmrl.world_model.analysis import analyse
    from wmrl.world_model.static import BUDGET_MARGIN, estimate_seconds

    task = tasks["tabular"]
    seconds = estimate_seconds(task, analyse(task, CLEAN))

    def timeouts(limit_ratio, profile):  # a budget at which the clean script's estimate is `limit_ratio` x the limit
        wm = ProgramAnalysisWorldModel(0.7, 3, time_limit_s=seconds / limit_ratio, profile=profile)
        return sum(p.status == "timeout" for p in wm.predict_many([(task, CLEAN)] * 200)) / 200

    assert timeouts(1.2, "pessimistic") > 0.4 and timeouts(1.2, "train_split") < 0.05  # a little over: a guess, not a fact
    assert timeouts(BUDGET_MARGIN * 4, "train_split") > 0.95  # far over: a timeout


def test_the_tuning_split_profile_is_the_train_split_profile_with_the_constants_fitted_on_the_tuning_split(tasks):
    from wmrl.world_model.analysis import analyse
    from wmrl.world_model.quality import (
        QUALITY_WEIGHTS,
        QUALITY_WEIGHTS_TUNING,
        bucket_distribution,
        script_traits,
        traits_expected,
    )
    from wmrl.world_model.static import BUDGET_MARGIN, BUDGET_MARGIN_TUNING, estimate_seconds

    task = tasks["tabular"]
    facts = analyse(task, CLEAN)
    for profile, weights in (("train_split", QUALITY_WEIGHTS), ("tuning_split", QUALITY_WEIGHTS_TUNING)):
        got = ProgramAnalysisWorldModel(temperature=1.0, profile=profile).quality_distribution(task, CLEAN)
        assert got == pytest.approx(bucket_distribution(traits_expected(task, script_traits(task, CLEAN, facts), weights)))
    suspicion = ProgramAnalysisWorldModel(temperature=0, profile="tuning_split").predict(task, _mutate(*SUSPICION))
    assert suspicion.status == "ok"  # default to pass, as the train_split profile
    seconds = estimate_seconds(task, facts)
    ratio = (BUDGET_MARGIN * BUDGET_MARGIN_TUNING) ** 0.5  # between the two margins: each profile its own
    rate = {p: sum(x.status == "timeout" for x in ProgramAnalysisWorldModel(0.7, 3, time_limit_s=seconds / ratio,
                                                                            profile=p).predict_many([(task, CLEAN)] * 400)) / 400
            for p in ("train_split", "tuning_split")}
    tight, loose = sorted(rate, key={"train_split": BUDGET_MARGIN, "tuning_split": BUDGET_MARGIN_TUNING}.get)
    assert BUDGET_MARGIN != BUDGET_MARGIN_TUNING and rate[tight] > 0.5 > rate[loose], rate  # over one, under the other


@pytest.mark.parametrize("profile", PROFILES)
def test_quality_prior_ranks_a_dummy_below_a_forest(tasks, profile):
    wm = ProgramAnalysisWorldModel(temperature=0, profile=profile)
    dummy = CLEAN.replace("RandomForestClassifier(n_estimators=100, random_state=0)", "DummyClassifier()").replace(
        "from sklearn.ensemble import RandomForestClassifier", "from sklearn.dummy import DummyClassifier")
    assert wm.predict(tasks["tabular"], dummy).score < wm.predict(tasks["tabular"], CLEAN).score


@pytest.mark.parametrize("profile", PROFILES)
def test_gate_scores_empty_code_and_code_that_does_not_compile_zero(tasks, profile):
    wm = ProgramAnalysisWorldModel(profile=profile)
    broken, empty = wm.predict(tasks["tabular"], "def broken(:\n"), wm.predict(tasks["tabular"], "  \n")
    assert (broken.status, broken.score) == ("syntax_error", 0.0)
    assert (empty.status, empty.score) == ("malformed", 0.0)


@pytest.mark.parametrize("profile", PROFILES)
def test_temperature_zero_is_deterministic_and_sampling_follows_the_seed(tasks, profile):
    task, code = tasks["tabular"], _mutate(*SUSPICION)
    greedy = {ProgramAnalysisWorldModel(temperature=0, seed=s, profile=profile).predict(task, code).status
              for s in range(5)}
    assert len(greedy) == 1

    def run(seed):
        wm = ProgramAnalysisWorldModel(temperature=2.0, seed=seed, profile=profile)
        return [p.status + str(p.quality_bucket) for p in wm.predict_many([(task, code)] * 20)]

    assert run(3) == run(3)
    assert len(set(run(3))) > 1  # a sampled bucket (and, pessimistic, the suspicion's failure) varies
    assert run(3) != run(4)


def test_an_unknown_profile_is_refused_with_the_known_ones(tasks):
    with pytest.raises(ValueError, match="optimistic|'train_split'"):
        ProgramAnalysisWorldModel(profile="optimistic")


def test_it_never_opens_private_files(tasks, monkeypatch):
    real_open, real_read = builtins.open, Path.read_text

    def guarded_open(file, *a, **k):
        assert "private" not in str(file), f"world model opened {file}"
        return real_open(file, *a, **k)

    def guarded_read(self, *a, **k):
        assert "private" not in str(self), f"world model read {self}"
        return real_read(self, *a, **k)

    monkeypatch.setattr(builtins, "open", guarded_open)
    monkeypatch.setattr(Path, "read_text", guarded_read)
    wm = ProgramAnalysisWorldModel()
    for task in tasks.values():
        wm.predict(task, CLEAN)


def test_the_model_is_told_how_the_sandbox_starts_scripts_and_its_time_limit(tasks):
    from types import SimpleNamespace

    from wmrl.sandbox import SandboxFacts
    from wmrl.world_model.analysis import analyse
    from wmrl.world_model.static import COLD_STARTUP_S, WARM_STARTUP_S, estimate_seconds

    def sandbox(warm_start):
        return SimpleNamespace(facts=SandboxFacts("local", 2.0, 12.0, 2048, 1.0, 0, warm_start, ("pandas",) * warm_start))

    warm = ProgramAnalysisWorldModel.for_sandbox(sandbox(True), temperature=1)
    cold = ProgramAnalysisWorldModel.for_sandbox(sandbox(False), temperature=1)
    assert (warm.startup_s, cold.startup_s, warm.time_limit_s) == (WARM_STARTUP_S, COLD_STARTUP_S, 2.0)
    facts = analyse(tasks["tabular"], CLEAN)
    gap = estimate_seconds(tasks["tabular"], facts, COLD_STARTUP_S) - estimate_seconds(tasks["tabular"], facts, WARM_STARTUP_S)
    assert gap == pytest.approx(COLD_STARTUP_S - WARM_STARTUP_S)
    budget = {wm: next(v for v in wm.predict(tasks["tabular"], CLEAN).verdicts if v["check"] == "compute_budget")
              for wm in (warm, cold)}
    assert budget[warm]["confidence"] > budget[cold]["confidence"]  # further from the limit, surer of passing


def test_a_prediction_costs_well_under_a_tenth_of_a_second(tasks):
    wm = ProgramAnalysisWorldModel()
    wm.predict(tasks["tabular"], CLEAN)  # warm the library imports
    t0 = time.perf_counter()
    wm.predict_many([(tasks["tabular"], CLEAN)] * 10)
    assert (time.perf_counter() - t0) / 10 < 0.1


def test_fidelity_report_compares_predicted_and_real_ladder_rewards(tasks):
    from types import SimpleNamespace

    from wmrl.world_model.fidelity import fidelity_report

    class StubSandbox:  # stands in for real execution: the clean script scores, the broken one crashes
        def run_many(self, jobs, max_workers=1):
            return [SimpleNamespace(status="ok", error_type=None, percentile=0.4, wall_s=1.0) if code == CLEAN else
                    SimpleNamespace(status="runtime_error", error_type="KeyError", percentile=None, wall_s=1.0)
                    for _, code in jobs]

    broken = _mutate(*DEFECTS["data_refs_column"][:2])
    items = [(tasks["tabular"], CLEAN), (tasks["tabular"], broken)] * 3
    report = fidelity_report(ProgramAnalysisWorldModel(temperature=0), StubSandbox(), items)
    assert report["n"] == 6 and report["status_accuracy"] == 1.0 and report["spearman"] > 0.99
    assert report["within_group_spearman"] > 0.99 and report["n_groups"] == 1  # one task, one group
    assert report["cost_ratio"] > 0 and len(report["rows"]) == 6


def _rows(groups, real, pred, real_status=None, pred_status=None):
    import pandas as pd

    n = len(real)
    return pd.DataFrame({"task": groups, "category": "tabular", "group": groups, "real_reward": real,
                         "pred_reward": pred, "real_status": real_status or ["ok"] * n,
                         "pred_status": pred_status or ["ok"] * n})


def test_within_group_spearman_averages_scipys_correlation_over_the_groups_that_have_something_to_rank():
    import numpy as np
    from scipy.stats import spearmanr

    from wmrl.world_model.fidelity import within_group_spearman

    rng = np.random.default_rng(0)
    groups, real, pred = [], [], []
    for g, size in enumerate([5, 7, 4, 6, 8]):
        r = rng.choice([0.1, 0.2, 0.6, 0.8, 0.9], size)
        groups += [f"g{g}"] * size
        real += list(r)
        pred += list(r + rng.normal(0, 0.3, size))
    groups += ["const_pred"] * 4 + ["const_real"] * 4 + ["pair"] * 2
    real += [0.1, 0.5, 0.7, 0.9] + [0.5] * 4 + [0.1, 0.9]
    pred += [0.6] * 4 + [0.1, 0.2, 0.3, 0.4] + [0.1, 0.9]
    rows = _rows(groups, real, pred)
    expected = [spearmanr(rows.pred_reward[rows.group == g], rows.real_reward[rows.group == g]).statistic
                for g in ("g0", "g1", "g2", "g3", "g4")] + [0.0]  # a constant prediction ranks nothing: 0
    value, n_groups = within_group_spearman(rows)
    assert n_groups == 6 and value == pytest.approx(np.mean(expected))


def test_within_group_spearman_sees_a_ranking_that_the_pooled_correlation_hides():
    from scipy.stats import spearmanr

    from wmrl.world_model.fidelity import within_group_spearman

    # Simpson's paradox: each task is ranked perfectly, but the easy task's scripts are predicted low.
    rows = _rows(["easy"] * 3 + ["hard"] * 3, [0.7, 0.8, 0.9, 0.1, 0.2, 0.3], [0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    assert within_group_spearman(rows) == (pytest.approx(1.0), 2)
    assert spearmanr(rows.pred_reward, rows.real_reward).statistic < 0


def test_fidelity_summary_counts_the_confusion_and_bins_the_calibration():
    from wmrl.world_model.fidelity import fidelity_summary

    rows = _rows(["t"] * 5, [0.1, 0.1, 0.75, 0.6, 0.2], [0.6, 0.1, 0.85, 0.6, 0.8],
                 real_status=["runtime_error", "runtime_error", "ok", "ok", "no_submission"],
                 pred_status=["ok", "runtime_error", "ok", "ok", "ok"])
    s = fidelity_summary(rows)
    assert s["confusion"].loc["runtime_error", "ok"] == 1 and s["confusion"].loc["runtime_error", "runtime_error"] == 1
    assert s["confusion"].loc["ok", "ok"] == 2 and s["confusion"].loc["no_submission", "ok"] == 1
    assert (s["pred_ok_rate"], s["real_ok_rate"]) == (0.8, 0.4)
    cal = s["calibration"]
    assert cal.n.sum() == 5 and cal.loc["[0.35, 0.625)"].tolist() == pytest.approx([2, 0.6, 0.35])
    assert s["mean_error"] == pytest.approx((0.5 + 0 + 0.1 + 0 + 0.6) / 5)


def _expected_score(wm, task, code):
    import numpy as np

    from wmrl.vocabulary import QUALITY_BUCKETS, QUALITY_PERCENTILE

    return float(wm.quality_distribution(task, code) @ np.array([QUALITY_PERCENTILE[b] for b in QUALITY_BUCKETS]))


def test_the_bucket_distribution_moves_up_with_the_expected_score_at_any_temperature():
    import numpy as np

    from wmrl.world_model.quality import bucket_distribution
    from wmrl.world_model.static import _temper

    grid = np.linspace(0, 1, 101)
    for temperature in (0.0, 0.7, 1.0):
        cdfs = np.array([np.cumsum(_temper(bucket_distribution(e), temperature)) for e in grid])
        assert np.all(np.diff(cdfs, axis=0) <= 1e-12)  # first-order stochastic dominance, step by step


@pytest.mark.parametrize("kind", ["tabular", "regression", "binary", "text", "image"])
def test_the_train_split_profiles_quality_rises_with_a_stronger_model_and_falls_with_a_subsample(tasks, kind):
    from wmrl.agent import grammar

    task = tasks[kind]
    wm = ProgramAnalysisWorldModel(temperature=0.7, profile="train_split")
    base = grammar.baseline_choices(task)
    score = {family: _expected_score(wm, task, grammar.render(task, {**base, "model": family}))
             for family, open_ in zip(grammar.SLOTS[grammar.SLOT_NAMES.index("model")].options,
                                      grammar.option_mask(task)[grammar.SLOT_NAMES.index("model")]) if open_}
    assert all(score["dummy"] < s for family, s in score.items() if family != "dummy"), score
    assert len({round(s, 6) for s in score.values()}) >= 4  # the family moves the guess, not only the dummy
    full = grammar.render(task, base)
    subsample = grammar.render(task, {**base, "data_use": "subsample"})
    assert _expected_score(wm, task, subsample) < _expected_score(wm, task, full)


def test_the_train_split_profile_reads_scaling_capacity_and_features_from_the_code(tasks):
    from wmrl.agent import grammar

    task, wm = tasks["tabular"], ProgramAnalysisWorldModel(temperature=0.7, profile="train_split")
    knn = {**grammar.baseline_choices(task), "model": "knn"}
    scaled = _expected_score(wm, task, grammar.render(task, {**knn, "preprocess": "impute_standardize"}))
    assert scaled > _expected_score(wm, task, grammar.render(task, {**knn, "preprocess": "impute"}))
    by_capacity = [_expected_score(wm, task, grammar.render(task, {**knn, "capacity": c})) for c in ("small", "large")]
    assert by_capacity[0] != by_capacity[1]
    image, text = tasks["image"], tasks["text"]
    feats = {f: _expected_score(wm, image, grammar.render(image, {**grammar.baseline_choices(image), "image_features": f}))
             for f in ("flatten", "downsample", "stats")}
    assert len(set(feats.values())) == 3
    vecs = {f: _expected_score(wm, text, grammar.render(text, {**grammar.baseline_choices(text), "text_features": f}))
            for f in ("tfidf_word", "tfidf_char", "hashing", "count")}
    assert len(set(vecs.values())) == 4


def test_the_train_split_profile_does_not_read_the_plan_a_script_states(tasks):
    from wmrl.agent import grammar

    task, wm = tasks["tabular"], ProgramAnalysisWorldModel(temperature=0.7, profile="train_split")
    code = grammar.render(task, grammar.baseline_choices(task))
    lied = code.replace("-> forest model (medium capacity)", "-> boosting model (huge capacity)")
    assert lied != code and _expected_score(wm, task, lied) == _expected_score(wm, task, code)


def test_predictions_are_deterministic_given_the_seed_and_the_call_order(tasks):
    items = [(tasks["tabular"], CLEAN), (tasks["tabular"], _mutate(*DEFECTS["api_calls"][:2])),
             (tasks["text"], "x = 1\n")] * 10

    def run(wm):
        return [(p.status, p.error_type, p.error_line, p.quality_bucket, p.score) for p in wm.predict_many(items)]

    # a high temperature, so that the sampled buckets and verdicts vary from call to call
    wm = ProgramAnalysisWorldModel(temperature=2.0, seed=7)
    first = run(wm)
    assert run(ProgramAnalysisWorldModel(temperature=2.0, seed=7)) == first
    wm.reseed(7)
    assert run(wm) == first  # reseeding restarts the stream, as the trainer does each step
    assert run(ProgramAnalysisWorldModel(temperature=2.0, seed=8)) != first
