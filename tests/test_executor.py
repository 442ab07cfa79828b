"""The executor option: where a campaign's missing runs train, the same words in every entry point."""

from __future__ import annotations

import contextlib

import pytest

from wmrl import reproduce
from wmrl.experiments import collect
from wmrl.experiments import notebook as nb
from wmrl.experiments.__main__ import main as experiments_main
from wmrl.experiments.executor import DEFAULT, Executor, parse_executor


def test_specs_parse_and_a_bad_one_names_what_to_pass():
    assert parse_executor(None) == parse_executor(DEFAULT) == Executor("local", 1)
    assert parse_executor("local:3") == Executor("local", 3) and parse_executor("ray:2") == Executor("ray", 2)
    assert str(parse_executor("ray")) == "ray" and str(parse_executor("local:2")) == "local:2"
    for bad in ("dask", "local:0", "ray:x", "local:", ""):
        with pytest.raises(ValueError, match="local:N, ray, ray:C"):
            parse_executor(bad)


def test_a_jobs_variable_left_in_the_environment_is_refused_naming_the_executor_option(tmp_path, monkeypatch, capsys):
    trained = []
    monkeypatch.setattr(collect, "run_arm", lambda *a, **kw: trained.append(a))
    monkeypatch.setenv("WMRL_JOBS", "2")
    with pytest.raises(ValueError, match="--executor local:2"):
        collect.ensure_runs(["grpo"], [0], "smoke", results=tmp_path, progress=False)
    with pytest.raises(SystemExit):
        experiments_main(["runs", "--arms", "grpo", "--seeds", "0", "--preset", "smoke", "--results", str(tmp_path)])
    assert "EXECUTOR='local:2'" in capsys.readouterr().err
    assert trained == []


def test_a_notebook_reads_its_executor_parameter_when_it_trains(tmp_path):
    ns = {"MODE": "train", "PRESET": "smoke", "SEEDS": [0], "RESULTS_DIR": str(tmp_path), "FIGURES_DIR": str(tmp_path)}
    assert nb.check_params(ns, notebook="t").executor == DEFAULT  # a parameters cell that never names it
    cfg = nb.check_params({**ns, "EXECUTOR": "ray:2"}, notebook="t")
    assert cfg.executor == "ray:2" and "executor" not in str(cfg.as_dict()).lower()  # how, not what: no provenance
    with pytest.raises(nb.ParameterError, match="-p EXECUTOR"):
        nb.check_params({**ns, "EXECUTOR": "slurm"}, notebook="t")


def test_the_runs_command_trains_the_missing_runs_where_its_executor_says(tmp_path, monkeypatch):
    seen = []

    def fake_train(todo, preset, overrides, jobs, progress):
        seen.append((sorted((a, s) for a, s, _ in todo), jobs))

    monkeypatch.setattr(collect, "_train_locally", fake_train)
    monkeypatch.setattr(collect, "load_runs", lambda *a, **kw: __import__("pandas").DataFrame(
        {"arm": [], "seed": [], "avg": [], "dir": []}))
    assert experiments_main(["runs", "--arms", "grpo", "wmrl", "--seeds", "0", "1", "--preset", "smoke",
                             "--results", str(tmp_path), "--executor", "local:3"]) == 0
    assert seen == [([("grpo", 0), ("grpo", 1), ("wmrl", 0), ("wmrl", 1)], 3)]


def test_reproduce_hands_its_executor_to_every_notebook_it_trains_and_stays_a_committed_preset_campaign(monkeypatch):
    seen = []
    monkeypatch.setattr(reproduce, "ensure_kernel", lambda kernel: None)
    monkeypatch.setattr(reproduce, "_sync", lambda name: None)
    monkeypatch.setattr(reproduce, "train_notebook",
                        lambda name, preset, kernel, params=None, records=None: seen.append((name, params)))
    monkeypatch.setattr(reproduce, "redraw_notebook", lambda name, kernel, timeout: seen.append(("redraw", name)))
    for quiet in ("write_results_page", "write_readme_summary", "record_durations"):
        monkeypatch.setattr(reproduce, quiet, lambda *a, **kw: None)
    monkeypatch.setattr(reproduce, "executions", lambda spec, name, export=None: contextlib.nullcontext())
    assert reproduce.main(["--only", "00_theory", "01_main_table", "--executor", "ray"]) == 0
    assert seen == [("00_theory", {"EXECUTOR": "ray"}), ("redraw", "00_theory"),
                    ("01_main_table", {"EXECUTOR": "ray"}), ("redraw", "01_main_table")]
    seen.clear()
    with pytest.raises(SystemExit):
        reproduce.main(["--only", "00_theory", "--executor", "ray:0"])
    monkeypatch.setenv("WMRL_JOBS", "2")
    with pytest.raises(SystemExit):
        reproduce.main(["--only", "00_theory"])
    assert seen == []


def test_a_ray_task_refuses_a_checkout_running_other_code_before_training(tmp_path, monkeypatch):
    from wmrl.experiments import cluster

    monkeypatch.setattr(cluster, "run_arm", lambda *a, **kw: pytest.fail("trained on other code"))
    with pytest.raises(cluster.CodeVersionMismatch, match="the driver's 0000"):
        cluster._train_one("grpo", "smoke", 0, "train/smoke/grpo/seed0", {}, "0000", "", None, None)


def test_a_run_folder_from_a_task_is_written_whole_before_its_summary_and_replaces_a_stale_one(tmp_path, monkeypatch):
    import json

    from wmrl.experiments import cluster

    out = tmp_path / "train/smoke/grpo/seed0"
    (out / "old.parquet").parent.mkdir(parents=True)
    (out / "old.parquet").write_text("a run trained with another config")
    (out.parent / ".seed0.incoming-dead").mkdir()  # left by a driver lost mid-write
    files = {"steps.parquet": b"s", "sub/calibration.json": b"{}",
             "summary.json": json.dumps({"provenance": {"executions": "record:/scratch/shard.jsonl.gz"}}).encode()}
    seen, real = [], cluster.write_json_atomic

    def summary_last(path, obj):
        seen.append(sorted(str(p.relative_to(out)) for p in out.rglob("*")))
        real(path, obj)

    monkeypatch.setattr(cluster, "write_json_atomic", summary_last)
    cluster.write_run_folder(out, files, "record:results/executions/core.jsonl.gz")
    assert seen == [["steps.parquet", "sub", "sub/calibration.json"]]  # the rest in place, the summary not yet
    assert sorted(p.name for p in out.parent.iterdir()) == ["seed0"]
    assert json.loads((out / "summary.json").read_text())["provenance"]["executions"] == (
        "record:results/executions/core.jsonl.gz")  # the campaign's record, as a run trained here names it


def test_the_loader_that_trains_is_ensure_arm_runs_and_its_other_name_says_so():
    from wmrl.experiments.collect import ensure_arm_runs, load_arm_runs

    assert callable(ensure_arm_runs)
    with pytest.raises(NameError, match=r"ensure_arm_runs\(cfg, arms"):
        load_arm_runs(None, ["wmrl"])
