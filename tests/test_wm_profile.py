"""Tuning the profiles of the program-analysis world model: the procedure and its provenance.

``tests/fixtures/wm_tuning_outcomes.parquet`` holds the ``train_split`` profile's tuning set's outcomes (448
scripts of the training tasks drawn at seed 1000 and executed once in the small preset's sandbox),
``wm_tuning_split_outcomes.parquet`` the ``tuning_split`` profile's (448 scripts of the tuning
split's tasks, the same way): the committed constants must be exactly what the committed procedure
fits on them, and the traits stored there must be what the world model reads from those scripts
today.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from _toy_tasks import make_toy_tasks
from notebooks._wm_profile import (
    HAND_SET_WEIGHTS,
    TUNING_N,
    TUNING_SEED,
    fit_budget,
    fit_quality,
    runnable_choices,
)
from wmrl.agent import grammar
from wmrl.world_model.quality import QUALITY_WEIGHTS, QUALITY_WEIGHTS_TUNING
from wmrl.world_model.static import BUDGET_MARGIN, BUDGET_MARGIN_TUNING

OUTCOMES = Path(__file__).parent / "fixtures" / "wm_tuning_outcomes.parquet"
SPLIT_OUTCOMES = Path(__file__).parent / "fixtures" / "wm_tuning_split_outcomes.parquet"


def test_the_tuning_sets_scripts_follow_the_habits_but_never_make_a_certain_mistake(tmp_path):
    tasks = list(make_toy_tasks(tmp_path).values())
    rng = np.random.default_rng(0)
    draws = [runnable_choices(t, rng) for t in tasks for _ in range(60)]
    assert {(d["train_file"], d["target"], d["api"], d["submission"]) for d in draws} == \
        {("correct", "correct", "current", "correct")}
    assert len({d["model"] for d in draws}) == len(grammar.SLOTS[grammar.SLOT_NAMES.index("model")].options)
    assert {d["data_use"] for d in draws} == {"clean", "fit_on_all_rows", "shuffled_target", "subsample"}


def test_the_quality_fit_recovers_a_known_additive_model_and_scores_it_out_of_task():
    rng = np.random.default_rng(0)
    truth = {"base:tabular": 0.4, "family:forest:tabular": 0.25, "family:dummy:tabular": -0.35, "subsample": -0.1,
             "scaled:knn": 0.12}
    rows = []
    for i in range(400):
        fam = rng.choice(["forest", "dummy", "knn"])
        x = {"base:tabular": 1.0, f"family:{fam}:tabular": 1.0, "subsample": float(rng.random() < 0.3)}
        if fam == "knn":
            x["scaled:knn"] = float(rng.random() < 0.5)
        y = sum(truth.get(k, 0.0) * v for k, v in x.items()) + rng.normal(0, 0.01)
        rows.append({"task": f"t{i % 5}", "status": "ok", "percentile": y, "x": json.dumps(x)})
    rows.append({"task": "t0", "status": "timeout", "percentile": None, "x": "{}"})  # not ok: left out of the fit
    fit = fit_quality(pd.DataFrame(rows))
    assert fit["n_ok"] == 400 and fit["n_tasks"] == 5
    for x in (json.loads(r["x"]) for r in rows[:50]):  # the base and the family indicators are collinear:
        fitted = sum(fit["weights"].get(k, 0.0) * v for k, v in x.items())  # compare what the model predicts
        assert fitted == pytest.approx(sum(truth.get(k, 0.0) * v for k, v in x.items()), abs=0.02), x
    assert fit["weights"]["subsample"] == pytest.approx(truth["subsample"], abs=0.02)
    assert fit["weights"]["hard_labels"] == HAND_SET_WEIGHTS["hard_labels"]  # never seen: the hand-set weight
    assert fit["loto_within_spearman"] > 0.9 and fit["residual_sd"] < 0.05


def test_the_budget_margin_is_the_estimates_95th_percentile_over_scripts_that_finished():
    ratios = np.linspace(0.1, 20.0, 200)
    frame = pd.DataFrame({"status": ["ok"] * 200 + ["timeout"] * 4, "limit_s": 2.0, "wall_s": 0.5,
                          "estimate_s": list(2.0 * ratios) + [2.0 * r for r in (5.0, 30.0, 40.0, 50.0)]})
    fit = fit_budget(frame)
    assert fit["margin"] == pytest.approx(np.quantile(ratios, 0.95), abs=0.01)
    assert fit["timeouts_caught"] == 0.75 and (fit["n_finished"], fit["n_timeouts"]) == (200, 4)


#: Each split's committed outcomes, and the constants of the profile fitted on them.
FITS = {"train": (OUTCOMES, QUALITY_WEIGHTS, BUDGET_MARGIN),
        "tuning": (SPLIT_OUTCOMES, QUALITY_WEIGHTS_TUNING, BUDGET_MARGIN_TUNING)}


@pytest.mark.parametrize("split", sorted(FITS))
def test_the_committed_constants_are_the_fit_of_the_committed_tuning_outcomes(split):
    path, weights, margin = FITS[split]
    outcomes = pd.read_parquet(path)
    assert len(outcomes) == TUNING_N and outcomes.percentile.notna().sum() == (outcomes.status == "ok").sum()
    fit = fit_quality(outcomes)
    assert fit["weights"] == weights
    assert fit_budget(outcomes)["margin"] == margin


@pytest.mark.parametrize("split", sorted(FITS))
def test_the_tuning_outcomes_hold_the_traits_the_world_model_reads_from_their_scripts_today(pool, split):
    from wmrl.agent.habits import sample_items
    from wmrl.world_model.analysis import analyse
    from wmrl.world_model.quality import script_traits, trait_vector

    outcomes = pd.read_parquet(FITS[split][0])
    tasks = getattr(pool, split)
    items = sample_items(tasks, TUNING_N, seed=TUNING_SEED, choose=runnable_choices)
    assert [t.name for t, _ in items] == outcomes.task.tolist()
    assert not {t.name for t, _ in items} & {t.name for t in pool.heldout}  # never a held-out task
    if split == "tuning":  # nor a task any run trains on: the tuning_split profile never scores its own tasks
        assert not {t.name for t, _ in items} & {t.name for t in pool.train}
    for (task, code), stored in zip(items, outcomes.x):
        assert trait_vector(task, script_traits(task, code, analyse(task, code))) == json.loads(stored)


def test_the_tuning_split_is_fitted_on_tasks_of_every_category_that_no_run_trains_or_evaluates_on(pool):
    names = {t.name for t in pool.tuning}
    assert names and not names & ({t.name for t in pool.train} | {t.name for t in pool.heldout})
    assert {t.category for t in pool.tuning} == {t.category for t in pool.train}


def test_a_split_the_pool_lacks_is_refused_before_anything_runs(tmp_path):
    from notebooks._wm_profile import tuning_outcomes

    class NoTuning:
        root, tuning = tmp_path, []

    with pytest.raises(ValueError, match="no 'tuning' tasks"):
        tuning_outcomes(NoTuning())
    with pytest.raises(ValueError, match="split must be one of"):
        tuning_outcomes(NoTuning(), split="heldout")
