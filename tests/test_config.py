"""The configuration tree and the preset registry: every field reachable, every wrong value named."""

import json

import pytest

from wmrl.config import ConfigError, RunConfig, apply_overrides, experiment_identity, parse_set
from wmrl.experiments.__main__ import main as cli
from wmrl.presets import PRESETS, get_preset, notebook_params, run_config


def test_a_config_round_trips_through_its_dict_and_json():
    cfg = run_config("wmrl", "small", seed=3, overrides={"method.fusion": "scale_only", "sandbox.workers": 2})
    again = RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again == cfg and again.method.fusion == "scale_only" and again.seed == 3


def test_every_field_is_reachable_by_its_dotted_name():
    base = RunConfig()
    for dotted, value in base.dotted().items():
        if dotted in ("arm", "seed"):
            continue
        changed = base.with_overrides({dotted: value})
        assert changed.dotted()[dotted] == value


def test_a_preset_overrides_the_defaults_and_explicit_overrides_win():
    small = run_config("grpo", "small")
    assert small.train.steps == PRESETS["small"].run["train.steps"] and small.sandbox.timeout_s == 2.0
    assert run_config("grpo", "small", overrides={"train.steps": 5}).train.steps == 5
    assert run_config("untrained", "small").train.steps == 0  # an arm that never trains has no training settings


def test_the_identity_ignores_scheduling_and_paths_but_nothing_else():
    a = run_config("wmrl", "small", overrides={"sandbox.workers": 1, "paths.results_dir": "/a"})
    b = run_config("wmrl", "small", overrides={"sandbox.workers": 2, "paths.results_dir": "/b"})
    assert a.identity() == b.identity()
    c = run_config("wmrl", "small", overrides={"method.rho_max": 3.0})
    assert a.identity() != c.identity()
    assert "workers" not in experiment_identity(a.to_dict())["sandbox"]


def test_a_run_stored_before_a_field_existed_is_the_same_experiment_at_that_fields_default():
    """A config written by an earlier version lacks today's new fields and may hold removed ones."""
    want = run_config("wmrl", "small")
    old = want.to_dict()
    del old["method"]["anchor_selection"], old["world_model"]["oracle_noise"]
    old["llm"]["a_field_since_removed"] = "x"
    assert experiment_identity(old) == want.identity()
    # a new field asked for at another value than its default is another experiment
    assert experiment_identity(old) != run_config("wmrl", "small", overrides={"world_model.oracle_noise": 0.2}).identity()


@pytest.mark.parametrize("arm, overrides, same", [
    ("grpo", {}, True), ("untrained", {}, True), ("anchor_only", {}, True),  # consult no world model
    ("wm", {"world_model.kind": "oracle"}, True),  # a world model without profiles
    ("wm", {}, False), ("wmrl", {}, False)])  # the program analysis reads its profile
def test_a_run_is_the_same_experiment_under_every_world_model_profile_it_never_reads(arm, overrides, same):
    one, other = (run_config(arm, "small", overrides={**overrides, "world_model.profile": p}).identity()
                  for p in ("train_split", "tuning_split"))
    assert (one == other) is same
    assert one["arm"] == arm and ("profile" in one["world_model"]) is not same


@pytest.mark.parametrize("stored, profile", [("paper", "train_split"), ("paper_tuning", "tuning_split")])
def test_a_stored_run_whose_config_names_a_profile_by_another_name_is_the_same_experiment(stored, profile):
    config = run_config("wmrl", "small", overrides={"world_model.profile": profile})
    old = config.to_dict()
    old["world_model"]["profile"] = stored
    assert experiment_identity(old) == config.identity()
    assert RunConfig.from_dict(old) == config  # a stored config loads (a replay, a resume), under the new name


@pytest.mark.parametrize("overrides, message", [
    ({"anchor_fraction": 0.2}, "did you mean method.anchor_fraction"),
    ({"method.anchor_fracton": 0.2}, "did you mean 'anchor_fraction'"),
    ({"metod.fusion": "x"}, "did you mean 'method'"),
    ({"method.fusion": "both"}, r"choose one of \['normalized', 'scale_only'\]"),
    ({"method.anchor_fraction": 1.5}, r"must be in \[0, 1\]"),
    ({"train.steps": "ten"}, "must be an integer"),
    ({"sandbox.memo": "yes"}, r"choose one of \['run', 'shared', 'off'\]"),
    ({"train.std_normalize": "yes"}, "must be true or false"),
    ({"sandbox.wall_timeout_s": "long"}, "must be a number"),
    ({"sandbox.wall_timeout_s": 1.0}, "must be at least the CPU budget"),
    ({"world_model.kind": "llm", "world_model.backend": "openai"}, "needs world_model.base_url"),
    ({"sandbox.backend": "podman"}, "choose one of"),
    ({"world_model.profile": "paper"}, "the one meant is 'train_split'"),
    ({"world_model.profile": "paper_tuning"}, "the one meant is 'tuning_split'"),
])
def test_a_wrong_field_or_value_is_named_with_what_to_pass(overrides, message):
    with pytest.raises(ConfigError, match=message):
        run_config("wmrl", "small", overrides=overrides)


def test_unknown_arms_and_presets_list_the_known_ones_and_paper_points_to_the_llm_preset():
    with pytest.raises(ConfigError, match="choose one of untrained"):
        run_config("bogus", "small")
    with pytest.raises(ConfigError, match="choose one of"):
        get_preset("huge")
    with pytest.raises(ConfigError, match="llm-paper"):
        run_config("wmrl", "paper")
    with pytest.raises(ConfigError, match="is for the grammar agent"):
        run_config("wmrl", "small", agent="llm")


def test_set_items_parse_as_json_else_as_text_and_reject_a_missing_value():
    assert parse_set(["method.rho_max=3", "method.fusion=scale_only", "train.std_normalize=false"]) == {
        "method.rho_max": 3, "method.fusion": "scale_only", "train.std_normalize": False}
    with pytest.raises(ConfigError, match="FIELD=VALUE"):
        parse_set(["method.rho_max"])
    assert apply_overrides({"arm": "a", "method": {"x": 1}}, {"method.x": 2})["method"]["x"] == 2


def test_the_cli_refuses_a_bad_set_with_the_reason(capsys):
    with pytest.raises(SystemExit):
        cli(["run", "--arm", "wmrl", "--preset", "smoke", "--set", "anchor_fraction=0.3"])
    assert "did you mean method.anchor_fraction" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli(["run", "--arm", "bogus"])


def test_notebook_parameters_come_from_the_same_registry():
    assert notebook_params("smoke")["SEEDS"] == [0]
    params = notebook_params("small")
    params["SEEDS"].append(99)  # a copy: callers cannot change the registry
    assert 99 not in notebook_params("small")["SEEDS"]


def test_the_paper_preset_refuses_the_small_pool_by_name_before_the_pool_or_a_model_loads(capsys, monkeypatch,
                                                                                           tmp_path):
    from wmrl.experiments import run

    def loaded(*args, **kwargs):
        raise AssertionError("the pool was prepared or read before the preset's data was checked")

    monkeypatch.setattr(run, "get_pool", loaded)
    with pytest.raises(SystemExit) as exc:  # the README's command without paths.pool: the default is the small pool
        cli(["run", "--agent", "llm", "--arm", "wmrl", "--preset", "llm-paper", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "paths.pool is not set" in err and "python -m wmrl.tasks import" in err
    small = tmp_path / "small"
    small.mkdir()  # an empty folder: get_pool would prepare the small pool in it
    with pytest.raises(SystemExit):
        cli(["run", "--agent", "llm", "--arm", "wmrl", "--preset", "llm-paper", "--set", f"paths.pool={small}"])
    assert f"paths.pool={str(small)!r} is the small pool" in capsys.readouterr().err
    assert not any(small.iterdir()) and not (tmp_path / "run").exists()
    from wmrl.tasks.ownership import write_marker

    write_marker(small, "small", 1)  # a folder the small pool's recipe wrote
    with pytest.raises(ConfigError, match="paths.pool="):
        run.check_pool("llm-paper", small)
    run.check_pool("llm-smoke", None)  # the other presets train on the small pool by default
    write_marker(small, "import", 1)  # a pool python -m wmrl.tasks import wrote
    run.check_pool("llm-paper", small)
    assert [n for n, p in PRESETS.items() if p.imported_pool] == ["llm-paper"]
