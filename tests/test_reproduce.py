"""``python -m wmrl.reproduce``: what it trains, replays and rewrites, for the replayed preset and another."""

from __future__ import annotations

import pytest

from wmrl import reproduce


@pytest.fixture
def calls(monkeypatch):
    """Record the orchestration's steps instead of running notebooks."""
    seen = []
    monkeypatch.setattr(reproduce, "ensure_kernel", lambda kernel: None)
    monkeypatch.setattr(reproduce, "_sync", lambda name: None)
    monkeypatch.setattr(reproduce, "train_notebook",
                        lambda name, preset, kernel, params=None, records=None: seen.append(("train", name, preset)))
    monkeypatch.setattr(reproduce, "replay_notebook", lambda name, kernel, timeout: seen.append(("replay", name)))
    monkeypatch.setattr(reproduce, "write_results_page", lambda *a: seen.append(("page",)))
    monkeypatch.setattr(reproduce, "write_readme_summary", lambda *a: seen.append(("readme",)))
    return seen


def test_the_replayed_preset_trains_replays_and_rewrites_the_page_and_the_readme(calls):
    assert reproduce.main(["--only", "00_theory", "01_main_table"]) == 0
    assert calls == [("train", "00_theory", "small"), ("replay", "00_theory"), ("train", "01_main_table", "small"),
                     ("replay", "01_main_table"), ("page",), ("readme",)]


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
    assert calls == []  # no replay, no page, no README


def test_a_failing_notebook_is_named_the_others_still_run_and_the_status_is_nonzero(calls, monkeypatch, capsys):
    def train(name, preset, kernel, params=None, records=None):
        if name == "00_theory":
            raise RuntimeError("train: cell 3: ValueError: boom")
        calls.append(("train", name, preset))

    monkeypatch.setattr(reproduce, "train_notebook", train)
    assert reproduce.main(["--only", "00_theory", "01_main_table"]) == 1
    assert ("train", "01_main_table", "small") in calls and ("replay", "00_theory") not in calls
    assert "cell 3: ValueError: boom" in capsys.readouterr().out


def test_an_unknown_preset_is_refused_with_the_known_ones(calls, capsys):
    with pytest.raises(SystemExit):
        reproduce.main(["--preset", "paper"])
    assert "smoke" in capsys.readouterr().err and calls == []


def test_the_four_campaigns_split_the_notebooks_by_number_and_together_cover_them_all(calls):
    paper, _ = reproduce.discover(campaign="paper")
    dial, _ = reproduce.discover(campaign="dial")
    beyond, _ = reproduce.discover(campaign="beyond")
    llm, _ = reproduce.discover(campaign="llm")
    every, _ = reproduce.discover()
    assert paper == [n for n in every if int(n[:2]) <= 6 or int(n[:2]) == 11]
    assert {"00_theory", "06_vla", "11_method_regime"} <= set(paper)
    assert dial == ["08_fidelity_dial"]
    assert beyond == [n for n in every if int(n[:2]) in (9, 10) or int(n[:2]) >= 12]
    assert {"09_exploit_stress", "10_anchor_budget", "12_confirmatory"} <= set(beyond)
    assert llm == ["07_llm_agent"]
    assert sorted(paper + dial + beyond + llm) == every
    assert reproduce.campaign_of("12_my_ablation") == "beyond"  # a notebook from the template joins it unlisted
    assert reproduce.main(["--campaign", "beyond", "--replay-only"]) == 0
    assert [c[1] for c in calls if c[0] == "replay"] == beyond


def test_a_campaign_and_a_list_of_notebooks_are_refused_together(calls, capsys):
    with pytest.raises(SystemExit):
        reproduce.main(["--campaign", "paper", "--only", "00_theory"])
    assert "not allowed with" in capsys.readouterr().err and calls == []


def test_the_makefiles_tags_give_each_campaign_its_own_runs():
    """`make reproduce` deletes the default runs and the run folders PAPER_TAGS matches, `make reproduce-dial`
    those DIAL_TAGS matches, `make reproduce-beyond` every other tagged folder: PAPER_TAGS must match notebook
    11's tags and none of notebooks 08-10's, DIAL_TAGS notebook 08's and none of the others'."""
    import fnmatch
    import re

    from wmrl.experiments import anchor_budget, regime
    from wmrl.experiments.exploit_stress import stress_tag
    from wmrl.experiments.fidelity_dial import oracle_tag, profile_tag
    from wmrl.presets import notebook_params

    lines = (reproduce.REPO / "Makefile").read_text().splitlines()
    paper_patterns, dial_patterns = (re.findall(r"-name '([^']+)'", next(x for x in lines if x.startswith(f"{v} :=")))
                                     for v in ("PAPER_TAGS", "DIAL_TAGS"))
    p = notebook_params("small")
    v = regime.variants("small", p["REGIME_FIRST_FITS"], p["REGIME_IVD_WARMUP"])
    paper = [f"{arm}~{x.tag}" for x in (v.std, *v.first_fits, v.ivd_warmup) for arm in regime.TABLE3]
    dial = [f"{a}~{oracle_tag(s)}" for s in p["FIDELITY_LEVELS"] for a in (*p["FIDELITY_ARMS"], *p["FIDELITY_END_ARMS"])]
    dial += [f"wmrl~{profile_tag('pessimistic')}"]
    plan = anchor_budget.budget_plan("small", p["BUDGET_ARMS"], p["BUDGET_SHARES"], p["BUDGET_ACTIVE_SHARES"])
    beyond = [r.label for r in plan if r.tag]
    beyond += [f"{a}~{stress_tag(p['STRESS_EXPLOIT'])}" for a in p["STRESS_ARMS"]]
    beyond += [f"{a}~{stress_tag(p['STRESS_EXPLOIT'], fix=True)}" for a in p["STRESS_FIXES"]]

    def matched(labels, patterns):
        return [label for label in labels if any(fnmatch.fnmatch(label, pat) for pat in patterns)]

    assert matched(paper, paper_patterns) == paper and not matched(dial + beyond, paper_patterns), paper_patterns
    assert matched(dial, dial_patterns) == dial and not matched(paper + beyond, dial_patterns), dial_patterns


def test_the_beyond_campaign_retrains_notebook_12s_runs_by_their_seeds_and_no_other_seed():
    """Notebook 12's runs sit in the paper campaign's folders at the preset's CONFIRM_SEEDS: `make reproduce-beyond`
    removes exactly those seeds (so it retrains them) and none of the seeds the other notebooks read."""
    import re

    from wmrl.presets import notebook_params

    out = _dry_run("reproduce-beyond")
    removed = {int(s) for s in re.findall(r"results/train/small/\*/seed(\d+)", out)}
    p = notebook_params("small")
    assert removed == set(p["CONFIRM_SEEDS"]) and not removed & set(p["SEEDS"])


def test_the_paper_campaign_removes_only_its_own_seeds_of_the_folders_it_retrains():
    """`make reproduce` retrains the default runs and notebook 11's at the preset's SEEDS; notebook 12's runs at
    CONFIRM_SEEDS sit in the same folders and are the beyond campaign's, so they are kept (a fresh clone's
    `make reproduce` once removed them and RESULTS.md lost notebook 12's claims)."""
    import re

    from wmrl.presets import notebook_params

    find = _dry_run("reproduce").replace("\\\n", " ")  # one command, whatever lines the Makefile splits it over
    find = next(line for line in find.splitlines() if "find results/train/small" in line)
    removed = {int(s) for s in re.findall(r"\{\}/seed(\d+)", find)}
    p = notebook_params("small")
    assert removed == set(p["SEEDS"]) and not removed & set(p["CONFIRM_SEEDS"])
    assert "-exec rm -rf {} " not in find  # never a whole folder


def _dry_run(target: str) -> str:
    """The commands ``make target`` would run (``make -n``), as make prints them."""
    import subprocess

    return subprocess.run(["make", "-n", target], cwd=reproduce.REPO, capture_output=True, text=True, check=True).stdout
