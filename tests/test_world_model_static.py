"""The program-analysis world model: each check fires on its defect, passes clean code, stays cheap."""

from __future__ import annotations

import builtins
import time
from pathlib import Path

import pytest
from _toy_tasks import make_toy_tasks

from wmrl.world_model import ProgramAnalysisWorldModel
from wmrl.world_model.base import CHECKS

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
    "shape_dtype": ("RandomForestClassifier(n_estimators=100, random_state=0)", "GaussianNB()", "runtime_error",
                    "ValueError"),  # GaussianNB on a table whose description says values are missing
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


def _mutate(old, new):
    assert old in CLEAN
    code = CLEAN.replace(old, new)
    if "GaussianNB" in new:
        code = code.replace("from sklearn.ensemble", "from sklearn.naive_bayes import GaussianNB\nfrom sklearn.ensemble")
        code = code.replace(".fillna(0)", "")
    return code


def test_clean_script_is_predicted_to_run_with_a_quality_bucket(tasks):
    pred = ProgramAnalysisWorldModel(temperature=0).predict(tasks["tabular"], CLEAN)
    assert pred.status == "ok" and pred.quality_bucket in ("fair", "mid", "high")
    assert [v["check"] for v in pred.verdicts] == list(CHECKS)


@pytest.mark.parametrize("name", sorted(DEFECTS))
def test_each_check_fires_on_a_hand_written_script_with_its_defect(tasks, name):
    old, new, status, error_type = DEFECTS[name]
    pred = ProgramAnalysisWorldModel(temperature=0).predict(tasks["tabular"], _mutate(old, new))
    assert (pred.status, pred.error_type) == (status, error_type), pred.feedback_text


def test_quality_prior_ranks_a_dummy_below_a_forest(tasks):
    wm = ProgramAnalysisWorldModel(temperature=0)
    dummy = CLEAN.replace("RandomForestClassifier(n_estimators=100, random_state=0)", "DummyClassifier()").replace(
        "from sklearn.ensemble import RandomForestClassifier", "from sklearn.dummy import DummyClassifier")
    assert wm.predict(tasks["tabular"], dummy).score < wm.predict(tasks["tabular"], CLEAN).score


def test_gate_scores_code_that_does_not_compile_zero(tasks):
    pred = ProgramAnalysisWorldModel().predict(tasks["tabular"], "def broken(:\n")
    assert pred.status == "syntax_error" and pred.score == 0.0


def test_temperature_zero_is_deterministic_and_sampling_follows_the_seed(tasks):
    task, code = tasks["tabular"], _mutate(*DEFECTS["shape_dtype"][:2])
    greedy = {ProgramAnalysisWorldModel(temperature=0, seed=s).predict(task, code).status for s in range(5)}
    assert len(greedy) == 1

    def run(seed):
        wm = ProgramAnalysisWorldModel(temperature=1.0, seed=seed)
        return [p.status + str(p.quality_bucket) for p in wm.predict_many([(task, code)] * 20)]

    assert run(3) == run(3)
    assert len(set(run(3))) > 1  # a 75% failure guess is sometimes sampled as a pass


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
    assert report["cost_ratio"] > 0 and len(report["rows"]) == 6
