"""The rerun check: what moved between a committed results tree and a rerun's, runs and verdicts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.rerun_check import claim_verdicts, compare, headline_numbers, main

REPO = Path(__file__).resolve().parents[1]

PAGE = """# Results

| claim | statement | paper | ours (95% CI) | seeds | detectable | verdict | Holm | notebook | figure |
|---|---|---|---|---|---|---|---|---|---|
| C1 | WMRL beats GRPO | 16.4 vs 15.2 | wmrl - grpo = {c1} | 3 | 9.0 | {v1} | {h1} | [01_main_table](notebooks/01_main_table.ipynb) | [figure](f.png) |
| C5 | OD helps | 1.0 | od - mix = 2.0 [-1, 5] | 3 | 9.0 | inconclusive | inconclusive | [02_ablations](notebooks/02_ablations.ipynb) | [figure](g.png) |

Some text | with a bar that is not a table.

## The language-model agent

| claim | statement | paper | ours (95% CI) | seeds | verdict | over held-out tasks (95% CI) |
|---|---|---|---|---|---|---|
| L0 | sft beats untrained | none | sft - untrained = 0.0 (n=1) | 1 | inconclusive | 0.0 [0.0, 0.0] (inconclusive) |

| arm | Avg |
|---|---|
| grpo | 50.0 |
"""


def _checkout(root: Path, avgs: dict[str, float], vla: float, c1=("-1.0 [-3, 1]", "inconclusive", "inconclusive")):
    for run, avg in avgs.items():
        folder = root / "results" / "train" / "small" / run
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(json.dumps({"heldout": {"avg": avg}}))
    folder = root / "results" / "vla" / "small" / "wm" / "seed0"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"metrics": {"all": {"overall": vla}}}))
    scratch = root / "results" / "runs" / "small-seeds0" / "results" / "train" / "small" / "grpo" / "seed0"
    scratch.mkdir(parents=True)  # the quick campaign's scratch output: never compared
    (scratch / "summary.json").write_text(json.dumps({"heldout": {"avg": 0.99}}))
    (root / "RESULTS.md").write_text(PAGE.format(c1=c1[0], v1=c1[1], h1=c1[2]))
    return root


@pytest.fixture
def trees(tmp_path):
    a = _checkout(tmp_path / "a", {"grpo/seed0": 0.50, "wmrl/seed0": 0.60, "wm/seed0": 0.40}, 0.30)
    b = _checkout(tmp_path / "b", {"grpo/seed0": 0.505, "wmrl/seed0": 0.63, "od/seed0": 0.55}, 0.30,
                  c1=("4.0 [1, 7]", "reproduced", "inconclusive"))
    return a, b


def test_headline_numbers_are_points_per_run_folder_without_the_scratch_tree(trees):
    numbers = headline_numbers(trees[0] / "results")
    assert numbers.to_dict() == pytest.approx({"train/small/grpo/seed0": 50.0, "train/small/wmrl/seed0": 60.0,
                                               "train/small/wm/seed0": 40.0, "vla/small/wm/seed0": 30.0})


def test_claim_verdicts_reads_every_claim_table_and_only_those(tmp_path):
    page = tmp_path / "RESULTS.md"
    page.write_text(PAGE.format(c1="x", v1="fails", h1="inconclusive"))
    got = claim_verdicts(page)
    assert list(got.index) == [("01_main_table", "C1"), ("02_ablations", "C5"), ("The language-model agent", "L0")]
    assert got.loc[("01_main_table", "C1")].tolist() == ["wmrl - grpo = x", "fails", "inconclusive"]
    assert got.loc[("The language-model agent", "L0"), "holm"] == ""


def test_the_committed_results_page_gives_every_claim_of_the_paper_notebooks_and_the_llm_agent():
    from wmrl.experiments import claims

    got = claim_verdicts(REPO / "RESULTS.md")
    from notebooks import _llm_agent as llm
    from notebooks import _primary as primary

    for section, listed in (("13_primary", primary.PRIMARY), ("02_ablations", claims.ABLATION),
                            ("03_anchor_only", claims.ANCHOR_ONLY), ("06_vla", claims.VLA),
                            ("07_llm_agent", llm.LLM)):
        if section == "07_llm_agent" and not (REPO / "results" / "claims" / "small" / "07_llm_agent.parquet").is_file():
            assert section not in got.index.get_level_values(0)  # its design has no look analysed yet
            continue
        assert {c.id for c in listed} >= set(got.loc[section].index) > set(), section
    # a sequential design's claim that no look has resolved yet is open until its last look
    assert {v for v in got.verdict if not re.fullmatch(r"open after look \d+", v)} <= {
        "reproduced", "fails", "equivalent", "inconclusive"}


def test_compare_reports_each_runs_change_and_each_changed_verdict(trees):
    runs, claims = compare(*trees, tolerance=1.0)
    assert runs.loc["train/small/grpo/seed0", "diff"] == pytest.approx(0.5)
    assert runs.loc["train/small/wmrl/seed0", "diff"] == pytest.approx(3.0)
    assert runs.loc["vla/small/wm/seed0", "diff"] == 0
    assert runs.within.to_dict() == {"train/small/grpo/seed0": True, "train/small/od/seed0": False,
                                     "train/small/wm/seed0": False, "train/small/wmrl/seed0": False,
                                     "vla/small/wm/seed0": True}
    assert runs.loc["train/small/wm/seed0"].isna()[["rerun", "diff"]].all()  # only in the committed tree
    assert claims.same.to_dict() == {("01_main_table", "C1"): False, ("02_ablations", "C5"): True,
                                     ("The language-model agent", "L0"): True}


def test_the_command_fails_on_a_moved_run_or_verdict_and_passes_on_identical_trees(trees, capsys):
    a, b = trees
    assert main([str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "largest change: +3.0 (train/small/wmrl/seed0)" in out
    assert "Only in the committed tree: train/small/wm/seed0" in out and "Only in the rerun tree: train/small/od" in out
    assert "changed: 1." in out
    assert main([str(a), str(a)]) == 0
    assert "unchanged: 4" in capsys.readouterr().out
    assert main([str(a), str(a), "--tolerance", "0"]) == 0


def test_a_folder_that_is_not_a_checkout_is_refused_by_name(tmp_path, trees, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(trees[0]), str(tmp_path / "nowhere")])
    assert e.value.code == 2 and "nowhere is not a checkout with results/ and RESULTS.md" in capsys.readouterr().err
