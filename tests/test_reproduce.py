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
    monkeypatch.setattr(reproduce, "train_notebook", lambda name, preset, kernel: seen.append(("train", name, preset)))
    monkeypatch.setattr(reproduce, "replay_notebook", lambda name, kernel, timeout: seen.append(("replay", name)))
    monkeypatch.setattr(reproduce, "write_results_page", lambda *a: seen.append(("page",)))
    monkeypatch.setattr(reproduce, "write_readme_summary", lambda *a: seen.append(("readme",)))
    return seen


def test_the_replayed_preset_trains_replays_and_rewrites_the_page_and_the_readme(calls):
    assert reproduce.main(["--only", "00_theory", "01_main_table"]) == 0
    assert calls == [("train", "00_theory", "small"), ("replay", "00_theory"), ("train", "01_main_table", "small"),
                     ("replay", "01_main_table"), ("page",), ("readme",)]


def test_another_preset_trains_only_and_leaves_what_is_committed(calls, capsys):
    assert reproduce.main(["--preset", "smoke", "--only", "00_theory"]) == 0
    assert calls == [("train", "00_theory", "smoke")]
    assert "results/runs/smoke" in capsys.readouterr().out


def test_a_failing_notebook_is_named_the_others_still_run_and_the_status_is_nonzero(calls, monkeypatch, capsys):
    def train(name, preset, kernel):
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
