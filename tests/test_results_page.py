"""RESULTS.md: the verdict first, one row per claim by family; FINDINGS.md: the notebooks' own sentences; both
written identically from unchanged results."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest

from notebooks import _regime as regime
from wmrl.experiments import claims, results_page
from wmrl.experiments.collect import load_runs
from wmrl.experiments.costs import add_totals
from wmrl.presets import notebook_params, run_config

RESULTS = Path(__file__).resolve().parent.parent / "results"


def flat(text: str) -> str:
    """``text`` with its line wrapping undone (FINDINGS.md is wrapped)."""
    return " ".join(text.split())


def says_claim(page: str, sentence: str) -> bool:
    """Whether FINDINGS.md (flattened) has the claim that one of what_we_see's sentences describes, with its
    statement and verdict; what_we_see's tally sentence is there as it is."""
    if sentence.startswith("Of ") or re.match(r"\S+ \(.*\) (after|at) look \d+: ", sentence):
        return sentence in page  # the tally, and a sequential design's claims, are on the page as they are
    cid, statement, said = re.match(r"(\S+) \((.*)\): (reproduced\.|fails|not resolved[.:])", sentence).groups()
    verdict = {"reproduced.": "reproduced", "not resolved.": "inconclusive"}.get(said, said)
    return f"- **{cid}** ({statement}): {verdict}" in page


def test_the_page_has_a_row_per_claim_and_the_notebooks_sentences():
    page = results_page.results_page(RESULTS, "small")
    found = results_page.findings_page(RESULTS, "small")
    from notebooks import _primary as primary

    # the declared family's rows; Table 1 at the campaign's seeds is named, not counted twice (FINDINGS.md has it)
    for c in primary.PRIMARY + claims.ABLATION + claims.ANCHOR_ONLY + claims.VLA:
        assert page.count(f"\n| {c.id} |") == 1, c.id
    assert "\n| C1-C2 |" not in page and "superseded by the primary family: [01_main_table]" in page
    runs = add_totals(load_runs("small", RESULTS, seeds=[0, 1, 2]))
    for sentence in claims.what_we_see(claims.evaluate_claims(runs, claims.MAIN)):
        assert says_claim(flat(found), sentence), sentence
    assert "## Where the noise comes from" in found
    params = notebook_params("small")
    # the header names every seed a row uses: notebook 12's claims are at new seeds, not the preset's
    assert (f"seeds {params['SEEDS']}; notebook 12's claims at its new seeds {params['CONFIRM_SEEDS']}; the primary "
            "family at its seeds 6-17)") in page
    # notebook 11's claims: one row each, from its tagged runs
    regime_claims = regime.method_regime(regime.variants("small", params["REGIME_FIRST_FITS"], params["REGIME_IVD_WARMUP"]),
                                         run_config("od", "small").method.od_min_pairs,
                                         regime.default_ivd_warmup("small"))
    for c in regime_claims:
        assert page.count(f"\n| {c.id} |") == 1, c.id


def test_the_page_is_rewritten_identically_from_unchanged_results(tmp_path):
    out = results_page.write_results_page(RESULTS, tmp_path / "RESULTS.md", "small")
    first, found = out.read_text(), (tmp_path / results_page.FINDINGS_PAGE).read_text()
    results_page.write_results_page(RESULTS, out, "small")
    assert out.read_text() == first and first == (RESULTS.parent / "RESULTS.md").read_text()
    assert (tmp_path / results_page.FINDINGS_PAGE).read_text() == found == (RESULTS.parent / "FINDINGS.md").read_text()


def test_the_page_answers_first_then_gives_the_families_in_order_within_its_word_budget():
    page = (RESULTS.parent / "RESULTS.md").read_text()
    assert page.startswith("# Results\n\n**Does WMRL work at this scale?** ")
    headings = [line for line in page.splitlines() if line.startswith("## ")]
    assert headings[:4] == [results_page.PRIMARY_HEADING, "## The paper's other tables", "## Beyond the paper",
                            "## Exploratory"]
    # the answer holds three analyses of the primary family; the LLM agent's section a table of seven claims
    assert len(page.split()) <= 2800 and "](FINDINGS.md)" in page
    answer = page.split("\n\n")[1]  # the declared verdict first, then the exploratory rerun, then notebook 15's
    assert answer.index("As declared (notebook 13") < answer.index("(exploratory)") < answer.index("notebook 15")


@pytest.mark.parametrize("verdict, says", [("reproduced", "WMRL beats GRPO"), ("fails", "WMRL falls below GRPO"),
                                           ("inconclusive", "WMRL cannot be told apart from GRPO")])
def test_the_verdict_says_in_two_sentences_what_table_1s_wmrl_grpo_claim_and_its_family_found(verdict, says):
    import pandas as pd

    t = pd.DataFrame({"claim": ["C0", "C1-C2"], "statement": ["s0", "s1"], "paper": ["p", "p"],
                      "comparison": ["grpo - untrained", "wmrl - grpo"], "mean": [20.0, 2.0], "lo": [5.0, 1.0],
                      "hi": [35.0, 3.0], "seeds": [3, 3], "mdd": [12.0, 1.5], "p": [0.01, 0.01],
                      "verdict": ["reproduced", verdict], "verdict_holm": ["reproduced", verdict], "note": ["", ""],
                      "expect": [">", ">"], "op": ["diff", "diff"], "digits": [1, 1], "unit": ["points", "points"],
                      "_m": [20.0, 2.0]}).set_index("claim")  # as claims.evaluate_claims returns it
    text = results_page.verdict(t, [0, 1, 2])
    assert text.startswith(f"At 3 seeds, {says} on held-out score: ") and f"(C1-C2, {verdict})." in text
    assert "Of Table 1's 2 claims" in text and "differences of 1.5 points or more" in text and text.count(". ") == 1
    assert "not known yet" in results_page.verdict(None, [0])


def test_the_declared_familys_verdict_is_its_holm_verdict_at_its_look():
    import pandas as pd

    t = pd.DataFrame({"claim": ["P-C0", "P-C1"], "statement": ["s0", "s1"], "paper": ["p", "p"],
                      "comparison": ["grpo - untrained", "wmrl - grpo"], "mean": [20.0, 2.0], "lo": [5.0, 0.5],
                      "hi": [35.0, 3.5], "seeds": [8, 8], "mdd": [2.0, 2.5], "p": [0.001, 0.03],
                      "verdict": ["reproduced", "reproduced"], "verdict_holm": ["reproduced", "inconclusive"],
                      "note": ["", ""], "expect": [">", ">"], "op": ["diff", "diff"], "digits": [1, 1],
                      "unit": ["points", "points"], "look": [1, 1], "alpha_look": [0.016, 0.016]}).set_index("claim")
    text = results_page.verdict(t, [0, 1, 2])
    assert text.startswith("At 8 seeds (look 1), WMRL cannot be told apart from GRPO on late held-out "
                           "score: ") and "(P-C1, inconclusive after Holm)." in text
    assert "Of its 2 claims, 1 is reproduced" in text and "2.0 to 2.5 points" in text


def test_the_declared_runs_verdict_is_said_run_by_run_and_notebook_15_where_it_stands():
    import pandas as pd

    declared = pd.DataFrame({"run": ["first run", "first run", "retrained fresh", "retrained fresh"],
                             "claim": ["P-C1", "P-C3", "P-C1", "P-C3"],
                             "comparison": ["wmrl - grpo"] * 4, "mean": [-7.8, 13.3, -6.2, 11.7],
                             "lo": [-11.6, 10.5, -11.8, 6.7], "hi": [-4.0, 16.2, -0.6, 16.7],
                             "verdict_holm": ["fails", "reproduced", "fails", "reproduced"]})
    assert results_page.declared_sentence(declared, list(range(6, 18))) == (
        "As declared (notebook 13, seeds 6-17, world model fitted on the training tasks), WMRL falls below GRPO in "
        "both runs: wmrl - grpo = -7.8 [-11.6, -4.0] and -6.2 [-11.8, -0.6] (P-C1, fails / fails after Holm).")
    params = {"REDECLARED_SEEDS": list(range(18, 66))}
    assert results_page.redeclared_sentence({}, params).endswith("(notebook 15, seeds 18-65): no look is trained yet.")
    looked = pd.DataFrame({"verdict": ["reproduced", "equivalent", "inconclusive"], "look": [1, 1, 1]})
    assert "look 1: 1 reproduced, 0 fails, 1 equivalent, 1 inconclusive of 3 claims" in \
        results_page.redeclared_sentence({"15_redeclared": looked}, params)
    looked = looked.assign(claim=["R-C0", "R-C1", "R-C4"], comparison=["grpo - untrained", "wmrl - grpo", "wm - grpo"],
                           mean=[26.0, -5.36, 1.0], lo=[19.4, -8.47, -1.0], hi=[32.6, -2.26, 3.0],
                           alpha_look=[0.000089] * 3)
    assert results_page.redeclared_sentence({"15_redeclared": looked}, params).endswith(
        "1 inconclusive of 3 claims; R-C1 wmrl - grpo = -5.4 [-8.5, -2.3], equivalent "
        "([15_redeclared](notebooks/15_redeclared.ipynb)).")
    looked.loc[1, "verdict"] = "inconclusive"
    for table in (looked, looked.set_index("claim")):  # as notebook 15 declares it: indexed by claim
        assert "R-C1 wmrl - grpo = -5.4 [-8.5, -2.3], open at level 0.0001 (" in \
            results_page.redeclared_sentence({"15_redeclared": table}, params)
    resolved = looked.assign(verdict=["reproduced", "fails", "equivalent"], look=[1, 2, 4])
    assert "(notebook 15, seeds 18-65), look 4, every claim resolved: 1 reproduced, 1 fails, 1 equivalent, " \
        "0 inconclusive of 3 claims; R-C1 wmrl - grpo = -5.4 [-8.5, -2.3], fails (" in \
        results_page.redeclared_sentence({"15_redeclared": resolved}, params)


def test_a_preset_without_results_says_how_to_make_them(tmp_path):
    page = results_page.results_page(tmp_path, "smoke")
    assert "No results of preset `smoke` yet" in page and "\n| C0 |" not in page


def test_the_readmes_summary_is_the_pages_and_is_rewritten_in_place(tmp_path):
    page = (RESULTS.parent / "RESULTS.md").read_text()
    short = results_page.defined(next(line for line in page.splitlines() if line.startswith("**In short")),
                                 results_page._statements(page.splitlines(), RESULTS, "small"))
    assert "D1: a world model that ranks better" in short  # each claim it names, with what it states
    readme = (RESULTS.parent / "README.md").read_text()
    assert f"\n{short}\n\n**The language-model agent** (" in readme
    block = readme.split(results_page.README_BEGIN, 1)[1].split(results_page.README_END, 1)[0]
    section = page.split(results_page.PRIMARY_HEADING + "\n", 1)[1].split("\n## ", 1)[0]
    primary = [line for line in section.splitlines() if line.startswith("| ") and ".ipynb)" in line]
    # the answer, blank, header, rule, rows, blank, In short, blank, the language-model agent's sentence (blank,
    # reproducibility)
    replays = results_page.reproducibility(RESULTS, brief=True)
    assert primary and len(block.splitlines()) == len(primary) + 9 + 2 * bool(replays)
    assert next(line for line in page.splitlines() if line.startswith("**Does WMRL work")) in block
    assert replays in block and flat(results_page.reproducibility(RESULTS)).removeprefix("**Reproducibility.** ") in flat(
        (RESULTS.parent / "FINDINGS.md").read_text())
    for line in primary:  # each primary claim's id, ours and verdict, as the page has them
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert f"| {cells[0]} | {cells[1]} | {cells[2]} | {cells[3]} | {cells[5]} |" in block
    (tmp_path / "page.md").write_text("# Results\n\n**In short.** Of the 2 claims, 1 is new.\n")
    (tmp_path / "README.md").write_text(f"intro\n{results_page.README_BEGIN}\nold\n{results_page.README_END}\nrest\n")
    results_page.write_readme_summary(tmp_path / "page.md", tmp_path / "README.md")
    assert (tmp_path / "README.md").read_text() == (f"intro\n{results_page.README_BEGIN}\n**In short.** Of the 2 claims, "
                                                   f"1 is new.\n{results_page.README_END}\nrest\n")
    row = "| C0 | GRPO improves | 15.2 | grpo - untrained = 1.0 [0.5, 1.5] | 0.4 | reproduced | " \
          "[01_main_table](notebooks/01_main_table.ipynb) |"
    (tmp_path / "page.md").write_text(f"# Results\n\n{results_page.PRIMARY_HEADING}\n\n{row}\n\n## Other\n\n{row}\n\n"
                                      "**In short.** One.\n")
    results_page.write_readme_summary(tmp_path / "page.md", tmp_path / "README.md")
    text = (tmp_path / "README.md").read_text()
    assert "| C0 | GRPO improves | 15.2 | grpo - untrained = 1.0 [0.5, 1.5] | reproduced |\n\n**In short.** One." in text
    assert text.count("| C0 |") == 1  # only the primary section's rows
    llm = ("| L1 | GRPO improves | 15.2 | grpo - sft = 28.7 [-21.5, 78.8] | 30.0 | inconclusive | "
           "[07_llm_agent](notebooks/07_llm_agent.ipynb) |")
    (tmp_path / "page.md").write_text(f"# Results\n\n{results_page.PRIMARY_HEADING}\n\n{row}\n\n"
                                      f"## {results_page.FAMILIES[-1][0]}\n\nAbout.\n\n{results_page.CLAIMS_HEADER[0]}\n"
                                      f"{results_page.CLAIMS_HEADER[1]}\n{llm}\n\n**In short.** One.\n")
    results_page.write_readme_summary(tmp_path / "page.md", tmp_path / "README.md")
    text = (tmp_path / "README.md").read_text()
    assert "**In short.** One.\n\n**The language-model agent** (" in text
    assert "paired by seed: grpo - sft = 28.7 [-21.5, 78.8] (inconclusive).\n" in text
    earlier = "Earlier designs (a warm start per seed), recomputed with the seed as the unit: seeds 3-5: x."
    (tmp_path / "page.md").write_text((tmp_path / "page.md").read_text().replace(
        f"{results_page.CLAIMS_HEADER[0]}\n{results_page.CLAIMS_HEADER[1]}\n{llm}", f"{results_page.NO_LOOK_YET}\n\n{earlier}"))
    results_page.write_readme_summary(tmp_path / "page.md", tmp_path / "README.md")
    assert f"its own runs), no look of this design is analysed yet. {earlier}\n" in (tmp_path / "README.md").read_text()


def test_the_summary_counts_verdicts_and_names_the_claims():
    import pandas as pd

    t = pd.DataFrame({"verdict": ["reproduced", "inconclusive", "fails"], "verdict_holm": ["inconclusive"] * 3,
                      "mdd": [4.0, 12.5, 2.0], "unit": ["points", "points", "x"]}, index=["C0", "C1", "C3"])
    text = results_page.in_short([t], [0, 1, 2])
    assert text.startswith("Of the 3 claims tested on 3 seeds, 1 is reproduced (C0), 1 fails (C3) and 1 is "
                           "inconclusive; after Holm's correction within each notebook: 0 reproduced, 0 fail, 3")
    assert "paired differences of 4.0 to 12.5 points" in text  # the ratio claim's factor is not a difference in points


@pytest.mark.parametrize("notebook", ["07_llm_agent", "08_fidelity_dial", "09_exploit_stress", "10_anchor_budget",
                                      "11_method_regime", "12_confirmatory"])
def test_the_page_says_of_a_beyond_notebook_what_its_committed_what_we_see_cell_says(notebook):
    """The page reads each beyond notebook's claims as declared: every
    claim sentence of the committed notebook's last "what we see" output is on the page."""
    cells = nbformat.read(RESULTS.parent / "notebooks" / f"{notebook}.ipynb", as_version=4).cells
    heading = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and c.source.startswith("## What we see"))
    cell = next(c for c in cells[heading:] if c.cell_type == "code")
    said = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream").splitlines()
    if not (RESULTS / "claims" / "small" / f"{notebook}.parquet").is_file():  # a design with no look analysed yet
        assert said == ["no look analysed yet"], notebook
        assert results_page.NO_LOOK_YET in (RESULTS.parent / "RESULTS.md").read_text()
        return
    claim_lines = [line for line in said if re.match(r"^[A-Z][\w'-]* \(", line) or line.startswith("Of ")]
    assert claim_lines, f"{notebook}'s what-we-see cell printed no claim sentences"
    page = flat((RESULTS.parent / "FINDINGS.md").read_text())
    for line in claim_lines:
        assert says_claim(page, line), line


def test_the_seeds_needed_are_the_primary_familys_sizing_and_without_it_the_splits():
    """The page quotes one seeds-needed figure, notebook 13's from the primary family's paired values; without it
    (a preset without the family), the seeds to reach noise.GOAL_POINTS are seeds_to_detect's, and the hours the
    summaries' measured wall times (read here straight from summary.json), one seed of each arm at a time."""
    import json

    import pandas as pd

    from wmrl.experiments import noise

    sizing = pd.read_parquet(RESULTS / "primary" / "small" / "seeds_needed.parquet")
    three = sizing[sizing["detect (points)"] == 3.0]
    quoted = flat(results_page.findings_page(RESULTS, "small"))
    assert f"detecting 3 points takes {three.seeds.min()} to {three.seeds.max()} seeds per claim" in quoted
    assert "seeds at 1 evaluation repeat" not in quoted  # no second seeds-needed figure
    page = flat("\n".join(results_page._noise_section(load_runs("small", RESULTS, seeds=[0, 1, 2]))))
    runs = load_runs("small", RESULTS, seeds=[0, 1, 2])
    arms = ["untrained", "grpo", "wm", "mix", "od", "ivd", "wmrl", "anchor_only"]
    t = noise.noise_from_fixed_policy(runs, arms, scale=100)
    var_eval, var_train = float(t.sd_eval.iloc[0] ** 2), float((t.drop(index="untrained").sd_train ** 2).mean())
    n = noise.seeds_to_detect(noise.GOAL_POINTS, var_train, var_eval)
    per_run = {}
    for arm in arms:
        walls = [json.loads((RESULTS / "train" / "small" / arm / f"seed{s}" / "summary.json").read_text())["wall_s"]
                 for s in (0, 1, 2)]
        per_run[arm] = sum(walls) / len(walls)
    hours = n * sum(per_run.values()) / 3600
    assert f"would take {n} seeds at 1 evaluation repeat (CRN correlation 0; {hours:.1f} hours)" in page


def test_a_declaration_keeps_its_sentences_and_an_unchanged_one_is_not_rewritten(tmp_path):
    from wmrl.experiments.notebook import NotebookConfig, declared_claims, save_claims

    d = declared_claims(RESULTS, "small")["10_anchor_budget"]
    assert d.sentences and d.title == "the anchor budget: how many anchors, and which"
    cfg = NotebookConfig("99_example", "redraw", "small", [0, 1, 2], tmp_path, tmp_path)
    path = save_claims(d.table, cfg, "an example", d.sentences)
    side = path.with_name(path.name + ".provenance.json")
    first = side.read_text()
    side.write_text(first.replace('"date"', '"date_kept"'))  # a rewrite would put the date back
    save_claims(d.table, cfg, "an example", d.sentences)
    assert '"date_kept"' in side.read_text()
    got = declared_claims(tmp_path, "small")["99_example"]
    assert got.title == "an example" and got.sentences == d.sentences and got.table.equals(d.table)
    save_claims(d.table, cfg, "an example")  # no sentences: the page uses the table's what_we_see
    assert declared_claims(tmp_path, "small")["99_example"].sentences == []
    assert '"date"' in side.read_text()


def test_the_reproducibility_paragraph_names_the_recorded_campaigns_and_how_a_fresh_retraining_agreed(tmp_path):
    assert results_page.reproducibility(tmp_path) == ""  # no campaign carries a record: nothing to say
    for run in ("grpo/seed0", "grpo/seed6", "wmrl~exploit/seed0"):  # runs of the core, primary and beyond campaigns
        (tmp_path / "train" / "small" / run).mkdir(parents=True)
    folder = tmp_path / "executions"
    folder.mkdir()
    (folder / "dial.jsonl.gz").write_bytes(b"")
    text = results_page.reproducibility(tmp_path)
    assert text.startswith("**Reproducibility.** The dial campaign's runs carry their execution record")
    assert "the policy's float32 training diagnostics (loss, KL, entropy) come back to rounding" in text
    assert "Notebook 06" not in text  # the core campaign, which trains it, carries no record here
    assert "The core, beyond and primary campaigns' committed runs predate the record" in text
    assert "Retrained fresh" not in text  # no agreement kept: none stated
    (folder / "dial.agreement.json").write_text(json.dumps(
        {"runs": 30, "within_1pt": 4, "median_abs_delta": 3.26, "verdicts": 9, "verdicts_changed": ["08 D1: a -> b"],
         "scripts": None, "outcomes_changed": None}))
    (folder / "primary.jsonl.gz").write_bytes(b"")
    text = results_page.reproducibility(tmp_path)
    assert text.startswith("**Reproducibility.** The dial and primary campaigns' runs carry their execution record")
    assert ("Retrained fresh, 4 of the dial campaign's 30 runs came within 1 point of the held-out Avg of the runs they "
            "replaced (median absolute difference 3.3 points) and 1 of its 9 verdicts changed (08 D1: a -> b).") in text
    assert "The core and beyond campaigns' committed runs predate" in text
    brief = results_page.reproducibility(tmp_path, brief=True)
    assert brief == ("**Reproducibility.** The dial and primary campaigns replay from their execution record on a "
                     "CPU of the recording CPU's class (AVX-512), as recorded, every score, verdict and figure to the "
                     "bit; retrained fresh, 4 of 30 "
                     "runs came within 1 point, and 1 of 9 verdicts changed; the core and beyond campaigns keep none "
                     "([FINDINGS.md](FINDINGS.md)).")  # the redeclared campaign, with no run yet, is not named
    (folder / "primary.agreement.json").write_text(json.dumps(
        {"runs": 48, "within_1pt": 10, "median_abs_delta": 2.0, "verdicts": 5, "verdicts_changed": [],
         "scripts": None, "outcomes_changed": None}))
    assert ("retrained fresh, 4 of 30 (dial) and 10 of 48 (primary) runs came within 1 point, and 1 of 9 and 0 of 5 "
            "verdicts changed; the core and beyond") in results_page.reproducibility(tmp_path, brief=True)
    for campaign in ("core", "beyond"):
        (folder / f"{campaign}.jsonl.gz").write_bytes(b"")
    text = results_page.reproducibility(tmp_path)  # every campaign the record covers carries one
    assert "Notebook 06's VLA runs come back bit for bit too, on every x86-64 CPU with AVX2 and FMA" in text
    assert "predate" not in text and text.endswith(
        "Every campaign carries its record ([docs/reproducibility.md](docs/reproducibility.md)).")
    assert results_page.reproducibility(tmp_path, brief=True) == (
        "**Reproducibility.** Every campaign replays from its execution record on a CPU of the "
        "recording CPU's class (AVX-512), as recorded, every score, verdict and figure to the bit; retrained fresh, "
        "4 of 30 (dial) "
        "and 10 of 48 (primary) runs came within 1 point, and 1 of 9 and 0 of 5 "
        "verdicts changed ([FINDINGS.md](FINDINGS.md)).")
    for campaign in ("core", "beyond"):
        (folder / f"{campaign}.jsonl.gz").unlink()
    (folder / "primary.agreement.json").unlink()
    (tmp_path / "page.md").write_text("# Results\n\n**In short.** One.\n")
    (tmp_path / "README.md").write_text(f"intro\n{results_page.README_BEGIN}\nold\n{results_page.README_END}\n")
    results_page.write_readme_summary(tmp_path / "page.md", tmp_path / "README.md", tmp_path)
    assert f"**In short.** One.\n\n{brief}\n{results_page.README_END}" in (tmp_path / "README.md").read_text()


def test_an_agreement_measured_on_an_earlier_record_says_so(tmp_path):
    folder = tmp_path / "executions"
    folder.mkdir()
    for campaign, data in (("dial", b"dial runs"), ("primary", b"primary runs")):
        (folder / f"{campaign}.jsonl.gz").write_bytes(data)
        (folder / f"{campaign}.agreement.json").write_text(json.dumps(
            {"runs": 30, "within_1pt": 4, "median_abs_delta": 3.26, "verdicts": 9, "verdicts_changed": [],
             "scripts": None, "outcomes_changed": None, "record_sha256": hashlib.sha256(data).hexdigest()}))
    assert "(dial) and 4 of 30 (primary) runs came within 1 point" in results_page.reproducibility(tmp_path, brief=True)
    (folder / "primary.jsonl.gz").write_bytes(b"primary runs, some retrained since")
    brief = results_page.reproducibility(tmp_path, brief=True)
    assert "4 of 30 (dial) and 4 of 30 (primary, an earlier record) runs came within 1 point" in brief
    text = results_page.reproducibility(tmp_path)
    assert "Retrained fresh, 4 of the dial campaign's 30 runs came within 1 point" in text
    assert ("Retrained fresh, 4 of the 30 runs of an earlier record of the primary campaign (runs were retrained into "
            "it since) came within 1 point") in text


def test_the_primary_section_names_the_held_out_tasks_and_the_spread_of_wmrl_against_grpo_over_them():
    import pandas as pd

    per_task = pd.DataFrame({"claim": ["P-C1", "P-C1", "P-C0"], "comparison": ["wmrl - grpo", "wmrl - grpo", "x - y"],
                             "task": ["b_task", "a_task", "a_task"], "mean": [-7.7, 3.3, 30.0]})
    assert results_page.tasks_sentence(per_task) == (
        "Every seed is scored on the same 2 held-out tasks (a_task, b_task); per task, P-C1 (wmrl - grpo) runs from "
        "-7.7 to 3.3 points (section 1b).")
    assert "Every seed is scored on the same 7 held-out tasks" in (RESULTS.parent / "RESULTS.md").read_text()


def test_each_record_is_said_to_replay_on_its_recording_cpus_class(tmp_path):
    """Runs stamped with their CPU's float32 kernels (the unstamped ones were recorded on AVX-512 machines)."""
    for run, kernels in (("grpo/seed0", None), ("wmrl/seed1", None), ("grpo~evalgrid/seed18", "AVX2")):
        folder = tmp_path / "train" / "small" / run
        folder.mkdir(parents=True)
        machine = {"cpu_count": 2, **({"float32_kernels": kernels} if kernels else {})}
        (folder / "summary.json").write_text(json.dumps({"provenance": {"machine": machine}}))
    (tmp_path / "executions").mkdir()
    for campaign in ("core", "redeclared"):
        (tmp_path / "executions" / f"{campaign}.jsonl.gz").write_bytes(b"")
    assert results_page.recorded_kernels("core", tmp_path) == ["AVX512"]
    assert results_page.recorded_kernels("redeclared", tmp_path) == ["AVX2"]
    assert ("execution record on a CPU of the recording CPU's class (AVX-512 for core; AVX2 for "
            "redeclared), as recorded") in results_page.reproducibility(tmp_path, brief=True)
    assert ("On a CPU whose float32 kernels are the recording CPU's (AVX-512 for core; AVX2 for redeclared), every "
            "grammar-agent score") in results_page.reproducibility(tmp_path)


def test_the_sizing_sentence_adds_the_ray_clusters_hours_where_notebook_13_measured_them():
    import pandas as pd

    sizing = pd.DataFrame({"claim": ["P-C0", "P-C1"] * 2, "detect (points)": [3.0, 3.0, 1.0, 1.0],
                           "seeds": [35, 60, 293, 524], "hours, 2 cores": [5.0, 8.0, 41.0, 73.0]})
    assert "(5 to 8 hours of its four arms on 2 cores)" in results_page._sizing_sentence(sizing)
    sizing["hours, 64 cores (Ray)"] = [0.4, 0.6, 2.8, 4.9]
    said = results_page._sizing_sentence(sizing)
    assert "(5 to 8 hours of its four arms on 2 cores, 0.4 to 0.6 on 64 through Ray)" in said
    assert "(41 to 73 hours of its four arms on 2 cores, 2.8 to 4.9 on 64 through Ray)" in said


def test_ray_waves_pay_its_measured_cost_each_and_its_start_up_once():
    from wmrl.experiments.costs import ray_wall_s

    overhead = {"median_startup_s": 20.0, "per_wave_overhead_s": 5.0}
    assert ray_wall_s(64, 100.0, 32, overhead) == 2 * (100 + 5) + 20  # 64 runs, 32 at a time: two waves
    assert ray_wall_s(65, 100.0, 32, overhead) == 3 * (100 + 5) + 20


def test_a_sequential_designs_unresolved_claim_is_open_until_its_last_look():
    """Before a design's last look an unresolved claim is open (a later look may resolve it), and only at its last
    look inconclusive; a resolved claim keeps its verdict at every look."""
    import pandas as pd

    table = pd.read_parquet(RESULTS / "claims" / "small" / "07_llm_agent.parquet").set_index("claim")
    table["verdict"] = ["reproduced"] + ["inconclusive"] * (len(table) - 1)
    for look, said in ((1, "open after look 1"), (2, "open after look 2"), (3, "inconclusive")):
        table["look"] = look
        verdicts = [row.split(" | ")[5] for row in results_page._claims_rows(table, "07_llm_agent", looks=3)]
        assert verdicts == ["reproduced"] + [said] * (len(table) - 1), look
    assert [row.split(" | ")[5] for row in results_page._claims_rows(table, "07_llm_agent")][1] == "inconclusive"
    params = {"LLM_LOOKS": [4, 8, 12]}
    assert results_page._looks(table, "07_llm_agent", params) == 3
    assert results_page._looks(table, "08_fidelity_dial", params) is None


def test_the_llm_campaigns_open_claims_carry_the_seeds_and_hours_that_would_resolve_them(tmp_path):
    """What notebook 07 keeps of an open claim's cost reaches the page under the LLM agent's claims, named for the
    look it came from; a design with no open claim adds nothing."""
    import pandas as pd

    cost = pd.DataFrame({"claim": ["L2", "L4"], "comparison": ["wmrl - grpo", "wmrl - wm"],
                         "family": ["secondary"] * 2, "level": [0.0123, 0.0123], "seeds": [57, float("nan")],
                         "hours, 2 cores": [8.25, float("nan")], "look": 3, "looks": 3})
    said = results_page.to_resolve_sentence(cost)
    assert said.startswith("Inconclusive at the last look")
    assert "L2 57 (0.0123; 8.2 h), L4 (no spread yet) (" in said
    assert results_page.to_resolve_sentence(cost.assign(look=2)).startswith("Open after look 2 of 3")

    results = tmp_path / "results"
    shutil.copytree(RESULTS / "claims", results / "claims")
    shutil.copytree(RESULTS / "llm", results / "llm")
    kept = results / results_page.TO_RESOLVE.format(**notebook_params("small"))
    cost.iloc[:1].to_parquet(kept)
    page = results_page.results_page(results, "small")
    assert results_page.to_resolve_sentence(cost.iloc[:1]) in page.splitlines()
    cost.iloc[:0].to_parquet(kept)
    assert "observed mean and spread would resolve" not in results_page.results_page(results, "small")
