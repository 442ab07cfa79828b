"""``python -m wmrl.reproduce``: what it trains, redraws and rewrites, for the redrawn preset and another."""

from __future__ import annotations

import contextlib

import pytest

from wmrl import campaigns, reproduce


@pytest.fixture
def calls(monkeypatch):
    """Record the orchestration's steps instead of running notebooks."""
    seen = []
    monkeypatch.setattr(reproduce, "ensure_kernel", lambda kernel: None)
    monkeypatch.setattr(reproduce, "_sync", lambda name: None)
    monkeypatch.setattr(reproduce, "train_notebook",
                        lambda name, preset, kernel, params=None, records=None: seen.append(("train", name, preset)))
    monkeypatch.setattr(reproduce, "redraw_notebook", lambda name, kernel, timeout: seen.append(("redraw", name)))
    monkeypatch.setattr(reproduce, "write_results_page", lambda *a: seen.append(("page",)))
    monkeypatch.setattr(reproduce, "write_readme_summary", lambda *a: seen.append(("readme",)))
    monkeypatch.setattr(reproduce, "record_durations", lambda runs, **kw: seen.append(("durations",)))
    # no execution record is opened or exported: the repository's own record (and a working copy of it
    # left by a campaign on this machine) stays as it is
    monkeypatch.setattr(reproduce, "executions", lambda spec, name, export=None: contextlib.nullcontext())
    return seen


def test_the_redrawn_preset_trains_redraws_and_rewrites_the_page_and_the_readme(calls):
    assert reproduce.main(["--only", "00_theory", "01_main_table"]) == 0
    assert calls == [("train", "00_theory", "small"), ("redraw", "00_theory"), ("train", "01_main_table", "small"),
                     ("redraw", "01_main_table"), ("durations",), ("page",), ("readme",)]


@pytest.mark.parametrize("argv, folder, seeds", [(["--seeds", "0"], "small-seeds0", {"SEEDS": [0]}),
                                                 (["--preset", "smoke"], "smoke", {})])
def test_a_variant_trains_from_scratch_in_its_own_folder_and_rewrites_nothing_committed(calls, monkeypatch, argv,
                                                                                        folder, seeds):
    seen = {}
    monkeypatch.setattr(reproduce, "train_notebook",
                        lambda name, preset, kernel, params=None, records=None: seen.update(params=params, records=records))
    assert reproduce.main([*argv, "--only", "01_main_table"]) == 0
    where = reproduce.RUNS / folder
    assert seen == {"records": where, "params": {**seeds, "RESULTS_DIR": str(where / "results"),
                                                 "FIGURES_DIR": str(where / "figures")}}
    assert calls == []  # no redraw, no page, no README


def test_a_quick_variant_trains_the_first_of_its_campaigns_seeds_in_its_own_folder(calls, monkeypatch, capsys):
    seen = {}
    monkeypatch.setattr(reproduce, "train_notebook",
                        lambda name, preset, kernel, params=None, records=None: seen.update(name=name, params=params))
    assert reproduce.main(["--campaign", "llm", "--quick"]) == 0
    first = campaigns.notebook_params("small")["LLM_SEEDS"][0]
    where = reproduce.RUNS / f"small-seeds{first}"
    assert seen == {"name": "07_llm_agent", "params": {"SEEDS": [first], "RESULTS_DIR": str(where / "results"),
                                                       "FIGURES_DIR": str(where / "figures"),
                                                       "LLM_ARMS": ["untrained", "sft", "grpo", "wmrl"]}}
    assert calls == []
    assert reproduce.main(["--campaign", "llm", "--seeds", str(first)]) == 0  # other seeds, every arm
    assert "LLM_ARMS" not in seen["params"]
    with pytest.raises(SystemExit):
        reproduce.main(["--quick"])
    assert "--quick" in capsys.readouterr().err


@pytest.mark.parametrize("campaign", ["core", "primary", "redeclared", "llm"])
def test_a_quick_variant_trains_a_seed_its_campaign_owns(campaign):
    """The primary and redeclared campaigns own their own seeds: a quick variant at seed 0 would train neither."""
    params = campaigns.notebook_params("small")
    owned = [r.seeds for r in campaigns.CAMPAIGNS[campaign].runs if r.seeds] or [campaigns.CAMPAIGNS[campaign].seeds]
    assert campaigns.quick_seed(campaign, "small") == params[owned[0]][0]


def test_a_failing_notebook_is_named_the_others_still_run_and_the_status_is_nonzero(calls, monkeypatch, capsys):
    def train(name, preset, kernel, params=None, records=None):
        if name == "00_theory":
            raise RuntimeError("train: cell 3: ValueError: boom")
        calls.append(("train", name, preset))

    monkeypatch.setattr(reproduce, "train_notebook", train)
    assert reproduce.main(["--only", "00_theory", "01_main_table"]) == 1
    assert ("train", "01_main_table", "small") in calls and ("redraw", "00_theory") not in calls
    assert "cell 3: ValueError: boom" in capsys.readouterr().out


def test_an_unknown_preset_is_refused_with_the_known_ones(calls, capsys):
    with pytest.raises(SystemExit):
        reproduce.main(["--preset", "paper"])
    assert "smoke" in capsys.readouterr().err and calls == []


def test_the_campaigns_split_the_notebooks_by_number_and_together_cover_them_all(calls):
    core, _ = reproduce.discover(campaign="core")
    dial, _ = reproduce.discover(campaign="dial")
    beyond, _ = reproduce.discover(campaign="beyond")
    llm, _ = reproduce.discover(campaign="llm")
    primary, _ = reproduce.discover(campaign="primary")
    redeclared, _ = reproduce.discover(campaign="redeclared")
    every, _ = reproduce.discover()
    assert core == [n for n in every if int(n[:2]) <= 6 or int(n[:2]) == 11]
    assert {"00_theory", "06_vla", "11_method_regime"} <= set(core)
    assert dial == ["08_fidelity_dial"]
    assert beyond == [n for n in every if int(n[:2]) in (9, 10, 12, 14) or int(n[:2]) >= 16]
    assert primary == ["13_primary"] and redeclared == ["15_redeclared"]
    assert {"09_exploit_stress", "10_anchor_budget", "12_confirmatory"} <= set(beyond)
    assert llm == ["07_llm_agent"]
    assert sorted(core + dial + beyond + llm + primary + redeclared) == every
    assert reproduce.campaign_of("12_my_ablation") == "beyond"  # a notebook from the template joins it unlisted
    assert reproduce.main(["--campaign", "beyond", "--redraw-only"]) == 0
    assert [c[1] for c in calls if c[0] == "redraw"] == beyond


@pytest.mark.parametrize("argv, named", [(["--campaign", "paper"], "--campaign core"),
                                         (["--replay-only"], "--redraw-only")])
def test_an_old_name_is_refused_naming_the_new_one(calls, capsys, argv, named):
    with pytest.raises(SystemExit):
        reproduce.main(argv)
    assert named in capsys.readouterr().err and calls == []


def test_a_campaign_and_a_list_of_notebooks_are_refused_together(calls, capsys):
    with pytest.raises(SystemExit):
        reproduce.main(["--campaign", "core", "--only", "00_theory"])
    assert "not allowed with" in capsys.readouterr().err and calls == []


def _labels(preset: str = "small") -> dict[str, list[str]]:
    """Every run folder the notebooks train at ``preset``, by the campaign that owns it: the default runs and
    notebook 11's tags (core), notebook 08's (dial), notebooks 09-10's and an ablation's (beyond)."""
    from notebooks import _anchor_budget as anchor_budget
    from notebooks import _regime as regime
    from notebooks._exploit_stress import stress_tag
    from notebooks._fidelity_dial import oracle_tag, profile_tag
    from wmrl.arms import ARMS
    from wmrl.presets import notebook_params

    p = notebook_params(preset)
    v = regime.variants(preset, p["REGIME_FIRST_FITS"], p["REGIME_IVD_WARMUP"])
    core = list(ARMS) + [f"{arm}~{x.tag}" for x in (v.std, *v.first_fits, v.ivd_warmup) for arm in regime.TABLE3]
    dial = [f"{a}~{oracle_tag(s)}" for s in p["FIDELITY_LEVELS"] for a in (*p["FIDELITY_ARMS"], *p["FIDELITY_END_ARMS"])]
    dial += [f"wmrl~{profile_tag('pessimistic')}"]
    plan = anchor_budget.budget_plan(preset, p["BUDGET_ARMS"], p["BUDGET_SHARES"], p["BUDGET_ACTIVE_SHARES"])
    beyond = [r.label for r in plan if r.tag]
    beyond += [f"{a}~{stress_tag(p['STRESS_EXPLOIT'])}" for a in p["STRESS_ARMS"]]
    beyond += [f"{a}~{stress_tag(p['STRESS_EXPLOIT'], fix=True)}" for a in p["STRESS_FIXES"]]
    beyond += ["wmrl~scale_only", "wmrl~anchors-0.25"]  # ablations made by new-ablation
    return {"core": sorted(set(core)), "dial": sorted(set(dial)), "beyond": sorted(set(beyond))}


@pytest.fixture
def results(tmp_path):
    """A results/ tree holding every campaign's run folders at every seed the small preset names, and the
    other folders the core and llm campaigns rebuild."""
    from wmrl.presets import notebook_params

    p = notebook_params("small")
    for label in (label for labels in _labels().values() for label in labels):
        for s in (*p["SEEDS"], *p["CONFIRM_SEEDS"], 9):  # seed 9: no campaign's (left over, kept)
            (tmp_path / "train" / "small" / label / f"seed{s}").mkdir(parents=True)
    for folder in ("fidelity/small", "vla/small", "vla/.work", "runs/small-seeds0", "train/llm-small/grpo"):
        (tmp_path / folder).mkdir(parents=True)
    return tmp_path


def _picked(paths, root) -> set[tuple[str, int | None]]:
    """The selection as (label, seed) pairs, seed None for a whole folder."""
    train = root / "train" / "small"
    return {(p.parent.name, int(p.name[4:])) if p.name.startswith("seed") else (p.name, None)
            for p in paths if p.is_relative_to(train)}


def test_the_registry_gives_each_campaign_its_own_runs_and_no_other_campaigns(results):
    """The core campaign retrains the default runs and notebook 11's at the preset's SEEDS only, the dial
    notebook 08's folders whole, the beyond campaign every other tagged folder whole: no run folder is two
    campaigns', and every one is some campaign's."""
    from wmrl.presets import notebook_params

    p, labels = notebook_params("small"), _labels()
    picked = {c: _picked(campaigns.selection(c, results, "small"), results) for c in ("core", "dial", "beyond")}
    assert picked["core"] == {(label, s) for label in labels["core"] for s in p["SEEDS"]}  # never a whole folder
    assert {label for label, s in picked["dial"] if s is None} == set(labels["dial"])
    whole_beyond = {label for label, s in picked["beyond"] if s is None}
    assert whole_beyond == set(labels["beyond"])
    assert not (picked["core"] & picked["dial"]) and not (picked["core"] & picked["beyond"])
    assert all(s != 9 for c in picked.values() for _, s in c)  # seeds no notebook trains are kept


def test_the_beyond_campaign_retrains_notebook_12s_runs_by_their_seeds_and_no_other_seed(results):
    """Notebook 12's runs sit in the core campaign's folders at the preset's CONFIRM_SEEDS: the beyond campaign
    removes exactly those seeds of them (so it retrains them) and none of the seeds the other notebooks read."""
    from wmrl.presets import notebook_params

    p = notebook_params("small")
    picked = _picked(campaigns.selection("beyond", results, "small"), results)
    by_seed = {s for label, s in picked if label in _labels()["core"]}
    assert by_seed == set(p["CONFIRM_SEEDS"]) and not by_seed & set(p["SEEDS"])


def test_the_core_and_llm_campaigns_rebuild_their_other_folders_and_a_variant_its_own_seeds(results):
    core = campaigns.selection("core", results, "small")
    assert {results / f for f in ("fidelity/small", "vla/small", "vla/.work", "runs")} <= set(core)
    assert campaigns.selection("llm", results, "small") == [results / "train" / "llm-small"]
    quick = _picked(campaigns.selection("core", results, "small", seeds=[0]), results)
    assert {s for _, s in quick} == {0}
    with pytest.raises(ValueError, match="unknown campaign 'cores'"):
        campaigns.selection("cores", results, "small")
    with pytest.raises(ValueError, match="are the 'core' campaign"):
        campaigns.selection("paper", results, "small")


def test_fresh_removes_the_campaigns_selection_before_training_and_keeps_the_rest(calls, results, monkeypatch):
    monkeypatch.setattr(reproduce, "RESULTS", results)
    dial, kept = results / "train/small/wmrl~oracle-0.2", results / "train/small/wmrl~budget-0.25"
    assert dial.exists() and kept.exists()
    assert reproduce.main(["--campaign", "dial", "--fresh"]) == 0
    assert not dial.exists() and kept.exists() and (results / "train/small/wmrl/seed0").exists()
    assert calls[0] == ("train", "08_fidelity_dial", "small")
    assert (results / "executions" / "dial.agreement.json").is_file()  # kept where the campaign's results are


def test_a_resumed_campaign_keeps_the_agreement_of_the_last_fresh_one(calls, results, monkeypatch):
    """Without --fresh a campaign keeps its finished runs, which would agree with themselves: the agreement
    measured by the last fresh retraining stays as it was."""
    monkeypatch.setattr(reproduce, "RESULTS", results)
    path = reproduce.agreement_path("dial", results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"campaign": "dial", "runs": 30}')
    assert reproduce.main(["--campaign", "dial"]) == 0
    assert calls[0] == ("train", "08_fidelity_dial", "small")
    assert path.read_text() == '{"campaign": "dial", "runs": 30}'


def test_a_campaign_records_each_notebooks_measured_durations_and_the_timings_keep_them(results, tmp_path):
    import json

    runs = [reproduce.NotebookRun("08_fidelity_dial", train_s=61.23, redraw_s=2.0),
            reproduce.NotebookRun("09_exploit_stress", status="failed", train_s=5.0)]
    path = tmp_path / "timings.json"
    path.write_text(json.dumps({"core": {"runs": 1}}))
    reproduce.record_durations(runs, path)
    kept = json.loads(path.read_text())
    assert kept["core"] == {"runs": 1} and list(kept["measured"]) == ["08_fidelity_dial"]  # a failed one is not timed
    assert kept["measured"]["08_fidelity_dial"]["train_s"] == 61.2
    assert {"commit", "date", "cores"} <= set(kept["measured"]["08_fidelity_dial"])
    assert kept["measured"]["08_fidelity_dial"]["resumed"] is False
    reproduce.record_durations(runs[:1], path, resumed=True)  # kept earlier runs: its seconds are only its own
    assert json.loads(path.read_text())["measured"]["08_fidelity_dial"]["resumed"] is True
    reproduce.record_durations(runs[:1], path)
    readme = tmp_path / "README.md"
    readme.write_text("no table here\n")
    reproduce.write_timings(results, path, readme)
    assert json.loads(path.read_text())["measured"] == kept["measured"]


@pytest.mark.parametrize("argv, recorded", [(["--only", "00_theory"], True), (["--only", "00_theory", "--redraw-only"], False),
                                            (["--only", "00_theory", "--seeds", "0"], False)])
def test_only_a_training_run_at_the_committed_preset_records_durations(calls, argv, recorded):
    assert reproduce.main(argv) == 0
    assert (("durations",) in calls) == recorded


def test_fresh_needs_a_campaign_that_trains(calls, capsys):
    for argv in (["--fresh"], ["--only", "00_theory", "--fresh"], ["--campaign", "core", "--fresh", "--redraw-only"]):
        with pytest.raises(SystemExit):
            reproduce.main(argv)
        assert "--fresh" in capsys.readouterr().err
    assert calls == []


@pytest.mark.parametrize("tag, owner", [("std", "core"), ("first_fit-4", "core"), ("warmup_8", "core"),
                                        ("oracle-0.5", "dial"), ("wm-pessimistic", "dial"),
                                        ("tuning", "primary")])
def test_a_tag_another_campaign_retrains_is_refused_naming_it(tag, owner):
    assert campaigns.claimed_by(tag) == owner
    with pytest.raises(ValueError, match=f"{owner} campaign"):
        campaigns.check_tag(tag)
    campaigns.check_tag(tag, campaign=owner)  # its own campaign's tag is fine


def test_the_makefile_calls_the_registry_and_globs_no_run_folders():
    """The Makefile names no run folder: each campaign's target is `python -m wmrl.reproduce --campaign C --fresh`."""
    text = (reproduce.REPO / "Makefile").read_text()
    assert "find " not in text and "~*" not in text and len(text.splitlines()) <= 80
    for target, campaign in (("reproduce", "core"), ("reproduce-dial", "dial"), ("reproduce-beyond", "beyond"),
                             ("reproduce-llm", "llm")):
        assert f"-m wmrl.reproduce --campaign {campaign} --fresh" in _dry_run(target).splitlines()[-1]


def _dry_run(target: str) -> str:
    """The commands ``make target`` would run (``make -n``), as make prints them."""
    import os
    import subprocess

    # Under `make test` the parent make's MAKEFLAGS/MAKELEVEL would make this one print its
    # "Entering/Leaving directory" lines around the commands.
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    return subprocess.run(["make", "--no-print-directory", "-n", target], cwd=reproduce.REPO, env=env,
                          capture_output=True, text=True, check=True).stdout


def test_timings_sum_each_campaigns_recorded_run_times_and_the_readme_table_is_read_from_them(results, tmp_path):
    import json
    from datetime import UTC, datetime

    def summary(folder, wall):
        folder.mkdir(parents=True, exist_ok=True)
        when = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC).isoformat()
        prov = {"machine": {"cpu_count": 2}, "git_commit": "abcdef0123", "date": when}
        (folder / "summary.json").write_text(json.dumps({"wall_s": wall, "provenance": prov}))

    train = results / "train" / "small"
    summary(train / "wmrl" / "seed0", 60.0)
    summary(train / "wmrl" / "seed3", 1000.0)  # notebook 12's seed: the beyond campaign's
    summary(train / "wmrl~oracle-0.2" / "seed0", 120.0)
    summary(train / "wmrl~std" / "seed1", 30.0)
    summary(results / "train" / "llm-small" / "grpo" / "seed0", 7200.0)
    summary(results / "train" / "llm-small" / "wm" / "seed6", 600.0)  # the llm campaign's quick seed, not a quick arm
    summary(results / "train" / "llm-small" / "wmrl" / "seed6", 500.0)  # a quick arm
    summary(results / "runs" / "small-seeds6" / "results" / "train" / "llm-small" / "wm" / "seed6", 5.0)  # scratch
    times = reproduce.timings(results)
    assert (times["core"]["train_s"], times["core"]["runs"]) == (90.0, 2)  # a variant's scratch run is not one
    assert (times["llm-quick"]["train_s"], times["llm-quick"]["runs"]) == (500.0, 1)
    assert (times["llm-look"]["train_s"], times["llm-look"]["runs"]) == (1100.0, 2)  # seeds 6-9, not seed 0
    assert (times["dial"]["train_s"], times["beyond"]["train_s"], times["llm"]["train_s"]) == (120.0, 1000.0, 8300.0)
    assert (times["quick"]["train_s"], times["run:wmrl/seed0"]["runs"]) == (60.0, 1)
    assert times["core"]["commits"] == ["abcdef0"] and times["core"]["cores"] == [2]
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n{reproduce.BEGIN} -->\nold\n{reproduce.END}\nafter\n")
    reproduce.write_timings(results, tmp_path / "timings.json", readme)
    text = readme.read_text()
    assert "| `make reproduce-llm` |" in text and "| 18 min (2 runs) |" in text and "old" not in text
    assert text.endswith("after\n") and json.loads((tmp_path / "timings.json").read_text()) == times


def test_the_committed_timings_are_the_committed_runs_and_the_readme_shows_them():
    """results/timings.json is what the committed runs recorded, and README.md's quick-start table is drawn from it:
    rerun `python -m wmrl.reproduce --timings` after a campaign."""
    import json

    committed = json.loads(reproduce.TIMINGS.read_text())
    committed.pop("measured", None)  # the notebooks' durations, kept from the last campaign
    assert committed == reproduce.timings()
    assert reproduce.quickstart_table(committed) in reproduce.README.read_text()


def test_a_claims_tables_verdicts_are_each_of_its_verdict_columns_by_claim(tmp_path):
    import pandas as pd

    frame = pd.DataFrame({"claim": ["L1", "L2"], "verdict": ["reproduced", "inconclusive"],
                          "verdict_holm": ["inconclusive", "inconclusive"]})
    frame.to_parquet(tmp_path / "seeds.parquet")
    assert reproduce._verdicts(tmp_path / "seeds.parquet").to_dict() == {
        "L1": "reproduced", "L2": "inconclusive", "L1 after Holm": "inconclusive", "L2 after Holm": "inconclusive"}


@pytest.mark.parametrize("arm, same", [("grpo", True), ("wmrl", False)])
def test_a_replayed_provenance_matches_when_its_runs_differ_only_in_a_setting_they_never_read(tmp_path, arm, same):
    """A figure's provenance lists its runs' configs; a grpo run kept across a change of the default world-model
    profile is the same experiment under the new default (it never reads it), a wmrl run is not."""
    import json

    from wmrl.presets import run_config

    def sidecar(folder, profile, commit):
        config = run_config(arm, "smoke", overrides={"world_model.profile": profile}).to_dict()
        run = {"config": config, "seed": 0, "git_commit": commit, "date": commit, "machine": {"cpu_count": 2}}
        (folder / "fig.png.provenance.json").write_text(json.dumps({"figure": "fig.png", "sources": [run]}))

    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    sidecar(tmp_path / "a", "train_split", "a5c07b8")
    sidecar(tmp_path / "b", "tuning_split", "24d36f8")
    found = reproduce.compare_outputs(tmp_path / "a", tmp_path / "b")
    assert found["same" if same else "differ"] == ["fig.png.provenance.json"]


def test_a_replay_of_a_notebook_that_trains_a_look_a_call_calls_it_until_every_recorded_run_is_retrained(
        tmp_path, monkeypatch, capsys):
    """The recorded campaign finished three looks of two runs each; the replay's first call retrained look 1, so
    two more calls retrain the rest, and a call that retrains nothing ends the loop."""
    from types import SimpleNamespace

    recorded, replay = tmp_path / "recorded", tmp_path / "replay"
    looks = [[f"train/small/{arm}/seed{s}" for arm in ("wm", "wmrl")] for s in (18, 19, 20)]
    every = [run for look in looks for run in look]
    for run in every:
        (recorded / run).mkdir(parents=True)
        (recorded / run / "summary.json").write_text("{}")
    (recorded / "train/small/wm/seed21").mkdir()  # a run never finished: not one to wait for
    monkeypatch.setattr(reproduce, "selection", lambda campaign, root, preset, seeds=None:
                        sorted((root / "train/small").glob("*/seed*")) if campaign == "redeclared" else [])
    calls = []

    def next_look(name, preset, kernel, params=None, records=None):
        """As notebook 15 trains: the first look not trained yet."""
        calls.append(name)
        todo = next((look for look in looks if not (replay / look[0] / "summary.json").is_file()), [])
        for run in todo:
            (replay / run).mkdir(parents=True, exist_ok=True)
            (replay / run / "summary.json").write_text("{}")

    plan = reproduce.Plan({}, False, results_dir=replay, recorded=(recorded, tmp_path / "figures"))
    args = SimpleNamespace(preset="small", seeds=None, kernel="k")
    monkeypatch.setattr(reproduce, "train_notebook", next_look)
    reproduce._replay_every_look("15_redeclared", args, plan)
    assert calls == ["15_redeclared"] * 3
    assert all((replay / run / "summary.json").is_file() for run in every)
    assert "[replay] 2 of the 6 recorded runs retrained" in capsys.readouterr().out

    calls.clear()  # a call that retrains nothing ends it: what is left is not this notebook's to train
    (replay / looks[2][1] / "summary.json").unlink()
    reproduce._replay_every_look("15_redeclared", args, plan)
    assert calls == ["15_redeclared"] * 2
    assert reproduce._looks_a_call("15_redeclared") and reproduce._looks_a_call("07_llm_agent")
    assert not reproduce._looks_a_call("01_main_table")


def test_a_replay_goes_on_where_one_by_the_same_code_from_the_same_record_stopped(tmp_path, capsys):
    """A replay folder stamped with this code and these records keeps its finished runs and loses its unfinished
    ones; another record (or code) clears it whole."""
    import json

    recorded, folder = tmp_path / "recorded", tmp_path / "replay-executions"
    (recorded / "executions").mkdir(parents=True)
    (recorded / "executions" / "llm.jsonl.gz").write_bytes(b"look 1")
    stamp = reproduce._replay_stamp(recorded)
    reproduce._resume_or_clear_replay(folder, stamp)
    train = folder / "results" / "train" / "llm-small"
    for run, finished in (("grpo/seed6", True), ("grpo/seed7", False), ("wmrl/seed6", True)):
        (train / run).mkdir(parents=True)
        (train / run / "checkpoint.pt").write_bytes(b"")
        if finished:
            (train / run / "summary.json").write_text("{}")
    reproduce._resume_or_clear_replay(folder, reproduce._replay_stamp(recorded))
    assert sorted(str(p.relative_to(train)) for p in train.glob("*/seed*")) == ["grpo/seed6", "wmrl/seed6"]
    assert "2 runs replayed earlier by this code from these records kept, 1 unfinished removed" in capsys.readouterr().out
    (recorded / "executions" / "llm.jsonl.gz").write_bytes(b"looks 1 and 2")  # a new look recorded: start over
    changed = reproduce._replay_stamp(recorded)
    assert changed["records"] != stamp["records"] and changed["code"] == stamp["code"]
    reproduce._resume_or_clear_replay(folder, changed)
    assert not train.exists() and json.loads((folder / reproduce.REPLAY_STAMP).read_text()) == changed
