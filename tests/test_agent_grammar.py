"""The solution grammar: fixed slots, sensible masks, deterministic scripts that fail as intended."""

from __future__ import annotations

import inspect

import numpy as np
import pandas as pd
import pytest

from _toy_tasks import make_toy_tasks
from wmrl.agent import feedback_of
from wmrl.agent.grammar import SLOTS, baseline_choices, option_mask, random_choices, render, task_features
from wmrl.agent.templates import REMOVED_KWARGS
from wmrl.world_model.base import Prediction


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return make_toy_tasks(tmp_path_factory.mktemp("toy"))


def test_slots_are_a_fixed_list_of_small_documented_choices():
    assert 8 <= len(SLOTS) <= 14
    assert len({s.name for s in SLOTS}) == len(SLOTS)
    for s in SLOTS:
        assert 2 <= len(s.options) <= 8 and len(set(s.options)) == len(s.options) and s.doc


def test_every_open_option_renders_to_code_that_compiles(toy):
    for task in toy.values():
        base = baseline_choices(task)
        for slot, mask in zip(SLOTS, option_mask(task)):
            for option in np.array(slot.options)[mask]:
                code = render(task, {**base, slot.name: str(option)})
                compile(code, f"{task.name}:{slot.name}={option}", "exec")


def test_masks_close_what_makes_no_sense_and_never_a_mistake(toy):
    names = [s.name for s in SLOTS]
    masks = {k: dict(zip(names, option_mask(t))) for k, t in toy.items()}
    text_opts = SLOTS[names.index("text_features")].options
    assert not masks["image"]["text_features"][text_opts.index("tfidf_word")]
    assert masks["text"]["text_features"][text_opts.index("tfidf_word")]
    assert not masks["text"]["text_features"][0], "text tasks need text features"
    nb = SLOTS[names.index("model")].options.index("naive_bayes")
    assert not masks["regression"]["model"][nb] and masks["tabular"]["model"][nb]
    for m in masks.values():
        assert all(arr.any() for arr in m.values())
        for slot in ("train_file", "target", "api", "capacity", "data_use", "submission"):
            assert m[slot].all(), f"mistakes are legitimate choices: {slot} must stay open"


def test_render_is_deterministic_and_rejects_masked_or_unknown_choices(toy):
    task, rng = toy["text"], np.random.default_rng(0)
    choices = random_choices(task, rng)
    assert render(task, choices) == render(task, dict(choices))
    with pytest.raises(ValueError, match="masked"):
        render(task, {**choices, "image_features": "flatten"})
    with pytest.raises(ValueError, match="missing"):
        render(task, {k: v for k, v in choices.items() if k != "model"})


def test_scripts_read_the_contract_environment_variables(toy):
    code = render(toy["image"], baseline_choices(toy["image"]))
    assert 'os.environ.get("DATA_DIR"' in code and 'os.environ.get("SUBMISSION_PATH"' in code


def test_removed_keywords_are_really_gone_from_the_installed_libraries():
    import sklearn.linear_model as lm
    import sklearn.metrics as skm
    import sklearn.preprocessing as pre

    where = {"LogisticRegression": lm.LogisticRegression, "Ridge": lm.Ridge, "OneHotEncoder": pre.OneHotEncoder,
             "mean_squared_error": skm.mean_squared_error, "read_csv": pd.read_csv}
    for name, (kw, _) in REMOVED_KWARGS.items():
        assert kw not in inspect.signature(where[name]).parameters, f"{name} still accepts {kw}"
    assert not hasattr(pd.DataFrame, "append")


def test_task_features_have_a_fixed_length_and_are_finite(toy):
    feats = [task_features(t) for t in toy.values()]
    assert len({f.shape for f in feats}) == 1 and all(np.isfinite(f).all() for f in feats)


def test_feedback_reads_predictions_and_results_alike():
    pred = Prediction("ok", None, None, "mid", 0.725)
    assert feedback_of(pred) == ("ok", None, "mid")

    class Result:
        status, error_type, percentile = "runtime_error", "KeyError", None

    assert feedback_of(Result()) == ("runtime_error", "KeyError", None)


# ---------------------------------------------------------------- real pool, real sandbox (a few tasks only)
@pytest.fixture(scope="module")
def sandbox():
    from wmrl.sandbox import Sandbox

    return Sandbox(timeout_s=60)


@pytest.mark.slow
def test_baseline_choices_run_and_score_on_each_category(pool, sandbox):
    smallest = {}
    for task in pool.tasks:
        if task.category not in smallest or task.n_rows < smallest[task.category].n_rows:
            smallest[task.category] = task
    jobs = [(t, render(t, baseline_choices(t))) for t in smallest.values()]
    for (task, _), res in zip(jobs, sandbox.run_many(jobs, max_workers=2)):
        assert res.status == "ok" and res.percentile > 0, (task.name, res.status, res.reason)


# option -> (status, error type) it must produce when run (None: not checked)
MISTAKES = {
    ("train_file", "wrong_name"): ("runtime_error", "FileNotFoundError"),
    ("target", "wrong_column"): ("runtime_error", "KeyError"),
    ("target", "read_after_drop"): ("runtime_error", "KeyError"),
    ("api", "removed_kwarg"): ("runtime_error", "TypeError"),
    ("api", "removed_method"): ("runtime_error", "AttributeError"),
    ("submission", "wrong_columns"): ("invalid_submission", None),
    ("submission", "no_write"): ("no_submission", None),
}


@pytest.mark.slow
def test_each_mistake_fails_the_way_it_is_meant_to(pool, sandbox):
    task = min((t for t in pool.tasks if t.category == "tabular"), key=lambda t: t.n_rows)
    base = baseline_choices(task)
    jobs = [(task, render(task, {**base, slot: option})) for slot, option in MISTAKES]
    jobs.append((task, render(task, {**base, "data_use": "shuffled_target"})))
    jobs.append((task, render(task, base)))
    results = sandbox.run_many(jobs, max_workers=2)
    for (mistake, (status, error_type)), res in zip(MISTAKES.items(), results):
        assert res.status == status, (mistake, res.status, res.reason)
        assert error_type is None or res.error_type == error_type, (mistake, res.error_type)
    shuffled, clean = results[-2:]
    assert shuffled.status == "ok" and shuffled.percentile < clean.percentile


@pytest.mark.slow
def test_a_huge_model_on_a_larger_task_times_out(pool):
    from wmrl.sandbox import Sandbox

    task = max((t for t in pool.tasks if t.category == "tabular"), key=lambda t: t.n_rows)
    code = render(task, {**baseline_choices(task), "capacity": "huge", "validation": "none"})
    assert Sandbox(timeout_s=8).run(task, code).status == "timeout"
