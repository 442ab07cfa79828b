"""The oracle-derived world model (wmrl/world_model/oracle.py): real outcomes through a monotone
distortion and a noise dial, charged as a world model, its truth recorded apart.

The real outcomes are those of the toy task (``wmrl.sandbox.toy``) run once in the local sandbox
(a module fixture, into an execution memo); the tests after it read them from the memo, with a
sandbox that refuses to run, so they also show that the memo serves the oracle.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from wmrl.config import ConfigError, WorldModelConfig
from wmrl.experiments.costs import add_totals
from wmrl.ledger import COMPONENTS, ComputeLedger
from wmrl.sandbox import Sandbox
from wmrl.sandbox.toy import toy_grade, toy_solution
from wmrl.trainer.components import make_world_model
from wmrl.trainer.memo import ExecutionMemo
from wmrl.trainer.rollout import Scorer
from wmrl.vocabulary import feedback_bucket
from wmrl.world_model.fidelity import real_reward, within_group_spearman
from wmrl.world_model.oracle import CHARGE_S, OracleWorldModel, distort

#: Scripts of the toy task (answers y = 0, 1, 0, 1) and the ladder reward each really earns.
SCRIPTS = {
    "all right": (toy_solution(rows="[(i, (i - 8) % 2) for i in ids]"), 1.0),  # accuracy 1
    "three right": (toy_solution(rows="[(i, (i - 8) % 2 if i < 11 else 0) for i in ids]"), 0.875),
    "half right": (toy_solution(rows="[(i, 1) for i in ids]"), 0.75),
    "one right": (toy_solution(rows="[(i, (i - 8) % 2 if i == 8 else 1 - (i - 8) % 2) for i in ids]"), 0.625),
    "all wrong": (toy_solution(rows="[(i, 1 - (i - 8) % 2) for i in ids]"), 0.5),
    "wrong columns": (toy_solution(header="id,z"), 0.2),
    "crash": ("raise ValueError('boom')\n", 0.1),
    "does not parse": ("def broken(:\n", 0.0),
}


class NoSandbox:
    """A sandbox that must not be asked: every outcome is in the memo already."""

    def run_many(self, items, max_workers=1):
        raise AssertionError(f"the oracle executed {len(items)} script(s) that the memo holds")


@pytest.fixture(scope="module")
def memo(toy, runs_dir, tmp_path_factory):
    """The toy scripts, run once for real; the memo that holds their outcomes."""
    memo = ExecutionMemo(tmp_path_factory.mktemp("memo") / "memo.sqlite", salt="toy")
    oracle = OracleWorldModel(Sandbox("local", timeout_s=10, grader=toy_grade, base_dir=runs_dir), noise=0.0,
                              memo=memo)
    oracle.truth([(toy, code) for code, _ in SCRIPTS.values()])
    return memo


def items_of(toy, names=SCRIPTS):
    return [(toy, SCRIPTS[n][0]) for n in names]


def test_at_zero_noise_the_oracle_reports_the_distorted_real_reward_and_the_real_feedback(toy, memo):
    items = items_of(toy)
    real = OracleWorldModel(NoSandbox(), 0.0, memo=memo).truth(items)
    r = np.array([real_reward(x) for x in real])
    assert r == pytest.approx([want for _, want in SCRIPTS.values()])
    for kind, phi in (("optimistic", 0.35 + 0.6 * np.sqrt(r)), ("identity", r)):
        preds = OracleWorldModel(NoSandbox(), 0.0, kind, memo=memo).predict_many(items)
        assert [p.score for p in preds] == pytest.approx(phi)
        assert [p.status for p in preds] == [x.status for x in real]
        assert [p.error_type for p in preds] == [x.error_type for x in real]
        assert [p.quality_bucket for p in preds] == [feedback_bucket(x.percentile) if x.status == "ok" else None
                                                     for x in real]


def test_the_distortion_is_the_configured_monotone_shape_and_keeps_every_ranking():
    grid = np.linspace(0, 1, 101)
    optimistic = distort(grid, "optimistic")
    assert optimistic == pytest.approx(0.35 + 0.6 * np.sqrt(grid))
    assert np.all(np.diff(optimistic) > 0)  # strictly increasing
    assert np.all(optimistic[grid <= 0.9] > grid[grid <= 0.9])  # overrates all but the best scripts
    assert np.ptp(optimistic) == pytest.approx(0.6)  # and compresses the range
    assert distort(grid, "identity") == pytest.approx(grid)
    noisy = np.random.default_rng(0).random(50)
    assert spearmanr(distort(noisy, "optimistic"), noisy).statistic == pytest.approx(1.0)
    with pytest.raises(ValueError, match="choose one of"):
        distort(grid, "sigmoid")


def test_the_measured_within_group_spearman_rises_as_the_noise_falls(toy, memo):
    rng = np.random.default_rng(0)
    names = list(SCRIPTS)
    groups = [list(rng.choice(names, size=4)) for _ in range(300)]  # groups of four, as the small preset's
    items = [item for g in groups for item in items_of(toy, g)]
    real = [SCRIPTS[n][1] for g in groups for n in g]
    measured = []
    for noise in (1.0, 0.3, 0.1, 0.03, 0.0):
        oracle = OracleWorldModel(NoSandbox(), noise, memo=memo, seed=1)
        preds = oracle.predict_many(items)
        rows = pd.DataFrame({"group": np.repeat(range(len(groups)), 4), "real_reward": real,
                             "pred_reward": [p.score for p in preds]})
        measured.append(within_group_spearman(rows)[0])
    assert np.all(np.diff(measured) > 0), measured
    assert measured[-1] == pytest.approx(1.0) and measured[0] < 0.5


def test_the_noisy_reading_sets_the_feedback_the_next_turn_sees(toy, memo):
    oracle = OracleWorldModel(NoSandbox(), 0.5, memo=memo, seed=3)
    preds = oracle.predict_many(items_of(toy, ["all wrong"] * 400))  # really ok, percentile 0
    statuses = pd.Series([p.status for p in preds]).value_counts()
    assert statuses["ok"] < 400 and {"runtime_error", "invalid_submission"} & set(statuses.index)
    for p in preds:  # feedback and score come from one reading: an ok needs a reading on the ok rung
        assert (p.status == "ok") == (p.score >= distort(0.35, "optimistic") - 1e-12)


def test_predictions_depend_on_the_seed_and_the_key_only(toy, memo):
    a, b = (OracleWorldModel(NoSandbox(), 0.2, memo=memo, seed=9) for _ in range(2))
    a.reseed([4, 2])
    b.predict_many(items_of(toy))  # draws that the reseed below discards
    b.reseed([4, 2])
    assert [p.score for p in a.predict_many(items_of(toy))] == [p.score for p in b.predict_many(items_of(toy))]
    b.reseed([4, 3])
    assert [p.score for p in a.predict_many(items_of(toy))] != [p.score for p in b.predict_many(items_of(toy))]


def test_the_oracle_is_charged_as_a_world_model_and_its_executions_are_recorded_apart(toy, runs_dir, memo):
    ledger = ComputeLedger()
    fresh = ExecutionMemo(runs_dir / "fresh.sqlite", salt="toy")
    oracle = OracleWorldModel(Sandbox("local", timeout_s=10, grader=toy_grade, base_dir=runs_dir), 0.1, memo=fresh)
    scorer = Scorer(None, oracle, ledger)
    items = items_of(toy, ["all right", "crash", "half right"])
    scorer.predict(items + items_of(toy, ["does not parse"]))  # three executions; the gate runs nothing
    ledger.end_step()
    scorer.predict(items)  # served from the memo: nothing runs, and the world model is charged as before
    ledger.end_step()
    cost, apart = ledger.to_frame(), ledger.apart_frame()
    wm = cost[cost.component == "world_model"]
    assert wm.charged_s.tolist() == pytest.approx([4 * CHARGE_S, 3 * CHARGE_S]) and wm["count"].tolist() == [4, 3]
    assert set(cost.component) == set(COMPONENTS) and "oracle" not in ledger.totals().index
    assert apart.component.tolist() == ["oracle", "oracle"] and apart["count"].tolist() == [3, 0]
    real_cpu = sum(ExecutionMemo(runs_dir / "fresh.sqlite", "toy").get(toy.name, c)["cpu_s"] for _, c in items)
    assert apart.charged_s.tolist() == pytest.approx([real_cpu, 0.0]) and real_cpu > 0
    assert apart.actual_s.iloc[0] > apart.actual_s.iloc[1]  # the second lookup ran nothing
    assert wm.actual_s.iloc[0] < apart.actual_s.iloc[0]  # the executions' wall time is not the world model's
    totals = ledger.apart_totals()["oracle"]
    run = pd.DataFrame([{**{f"{c}_{k}_s": ledger.totals().loc[c, f"{k}_s"] for c in COMPONENTS
                            for k in ("charged", "actual")},
                         "oracle_charged_s": totals["charged_s"], "oracle_actual_s": totals["actual_s"]}])
    assert add_totals(run).total_charged_s.iloc[0] == pytest.approx(7 * CHARGE_S)  # the truth costs the arm nothing


def test_a_checkpointed_ledger_keeps_what_it_recorded_apart():
    ledger = ComputeLedger()
    ledger.charge("oracle", 1.0, 2.0, count=4)
    ledger.end_step()
    again = ComputeLedger()
    again.load_state_dict(ledger.state_dict())
    assert again.apart_totals() == {"oracle": {"actual_s": 1.0, "charged_s": 2.0, "count": 4}}
    assert ComputeLedger().apart_frame().empty


def test_the_config_builds_the_oracle_and_refuses_a_negative_noise_or_an_unknown_distortion(toy, memo):
    wm = make_world_model(WorldModelConfig(kind="oracle", oracle_noise=0.2, oracle_distortion="identity"), NoSandbox(),
                          seed=0, memo=memo)
    assert isinstance(wm, OracleWorldModel) and wm.noise == 0.2 and wm.distortion == "identity" and wm.memo is memo
    with pytest.raises(ConfigError, match="oracle_noise must be >= 0"):
        WorldModelConfig(kind="oracle", oracle_noise=-0.1)
    with pytest.raises(ConfigError, match="oracle_distortion"):
        WorldModelConfig(kind="oracle", oracle_distortion="sigmoid")
    with pytest.raises(ValueError, match="must be >= 0"):
        OracleWorldModel(NoSandbox(), -1.0)
