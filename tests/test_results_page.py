"""RESULTS.md: one row per claim, the notebooks' own sentences, written identically from unchanged results."""

from __future__ import annotations

from pathlib import Path

from wmrl.experiments import claims, results_page
from wmrl.experiments.collect import load_runs
from wmrl.experiments.costs import add_totals

RESULTS = Path(__file__).resolve().parent.parent / "results"


def test_the_page_has_a_row_per_claim_and_the_notebooks_sentences():
    page = results_page.results_page(RESULTS, "small")
    vla = results_page._vla_results(RESULTS, "small", [0, 1, 2])
    for c in claims.MAIN + claims.ABLATION + claims.ANCHOR_ONLY + (claims.VLA if isinstance(vla, list) and vla else ()):
        assert page.count(f"\n| {c.id} |") == 1, c.id
    runs = add_totals(load_runs("small", RESULTS, seeds=[0, 1, 2]))
    for sentence in claims.what_we_see(claims.evaluate_claims(runs, claims.MAIN)):
        assert sentence in page
    assert "## Where the noise comes from" in page


def test_the_page_is_rewritten_identically_from_unchanged_results(tmp_path):
    out = results_page.write_results_page(RESULTS, tmp_path / "RESULTS.md", "small")
    first = out.read_text()
    results_page.write_results_page(RESULTS, out, "small")
    assert out.read_text() == first and first == (RESULTS.parent / "RESULTS.md").read_text()


def test_a_preset_without_results_says_how_to_make_them(tmp_path):
    page = results_page.results_page(tmp_path, "smoke")
    assert "No results of preset `smoke` yet" in page and "\n| C0 |" not in page
