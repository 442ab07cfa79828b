"""An ablation is one command away: ``python -m wmrl.experiments new-ablation`` writes a notebook that runs.

The command writes a paired notebook from the template into a temporary ``notebooks/`` folder; it
is then papermill-run at the smoke preset with ``RESULTS_DIR`` and ``FIGURES_DIR`` in a temporary
folder too, so the repository's notebooks, results and figures are never touched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest

from wmrl.config import ConfigError
from wmrl.experiments import ablation
from wmrl.experiments import notebook as nb
from wmrl.experiments.__main__ import main
from wmrl.experiments.collect import ensure_runs
from wmrl.experiments.results_page import findings_page, results_page

papermill = pytest.importorskip("papermill")


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> dict[str, Path]:
    """A notebooks folder (with a notebook numbered 06 already there) and one results folder for the module."""
    root = tmp_path_factory.mktemp("ablation")
    (root / "notebooks").mkdir()
    (root / "notebooks" / "06_existing.py").write_text("# %%\n")
    return {"notebooks": root / "notebooks", "results": root / "results", "figures": root / "figures"}


def _new(lab, *args) -> None:
    assert main(["new-ablation", *args, "--notebooks", str(lab["notebooks"])]) == 0


def _params(path: Path) -> dict:
    """The values of the parameters cell, as the notebook's kernel would see them."""
    cell = next(c for c in nbformat.read(path, as_version=4).cells if "parameters" in c.metadata.get("tags", []))
    ns: dict = {}
    exec(cell.source, ns)  # noqa: S102  (our own generated notebook)
    return {k: v for k, v in ns.items() if k.startswith("ABL_")}


def _run_smoke(lab, stem: str) -> nbformat.NotebookNode:
    return papermill.execute_notebook(
        str(lab["notebooks"] / f"{stem}.ipynb"), str(lab["notebooks"].parent / f"out_{stem}.ipynb"),
        parameters={"MODE": "train", "PRESET": "smoke", "RESULTS_DIR": str(lab["results"]),
                    "FIGURES_DIR": str(lab["figures"])},
        cwd=str(lab["notebooks"]), kernel_name=nb.ensure_kernel(), progress_bar=False)


def _stored(lab, label: str) -> dict:
    summary = lab["results"] / "train" / "smoke" / label / "seed0" / "summary.json"
    return json.loads(summary.read_text())["provenance"]["config"]


@pytest.mark.slow
def test_new_ablation_writes_a_paired_notebook_that_trains_and_compares_at_the_smoke_preset(lab):
    import jupytext

    _new(lab, "fusion", "--base-arm", "wmrl", "--set", "method.fusion=scale_only")
    ipynb, py = lab["notebooks"] / "07_fusion.ipynb", lab["notebooks"] / "07_fusion.py"
    assert ipynb.is_file() and py.is_file(), "the next free number after 06 is 07"
    assert _params(ipynb) == {"ABL_NAME": "07_fusion", "ABL_BASE_ARM": "wmrl",
                              "ABL_OVERRIDES": {"method.fusion": "scale_only"}, "ABL_SWEEP": {}, "ABL_TAG": "fusion"}

    def sources(notebook):
        return [(c.cell_type, c.source.strip()) for c in notebook.cells]

    assert sources(jupytext.read(py)) == sources(nbformat.read(ipynb, as_version=4)), "the pair must hold the same code"

    out = _run_smoke(lab, "07_fusion")
    assert _stored(lab, "wmrl~fusion")["method"]["fusion"] == "scale_only"
    assert _stored(lab, "wmrl")["method"]["fusion"] == "normalized", "the base arm's default runs stay default"
    printed = "".join(o.get("text", "") for c in out.cells for o in c.get("outputs", []) if o.get("name") == "stdout")
    assert "wmrl~fusion" in printed and "Δ held-out Avg" in printed
    side = json.loads((lab["figures"] / "07_fusion.png.provenance.json").read_text())
    assert side["notebook"] == "07_fusion", "figures and provenance are named after the notebook"
    assert "train/smoke/wmrl~fusion/seed0/summary.json" in side["sources"]
    # the notebook declared its claims: the results page lists them under "Beyond the paper", no library edit
    page = results_page(lab["results"], "smoke")
    beyond = page.split("## Beyond the paper", 1)[1]
    assert "| A1 | wmrl~fusion beats wmrl |" in beyond and "[07_fusion](notebooks/07_fusion.ipynb)" in beyond
    assert "## [07_fusion](notebooks/07_fusion.ipynb): wmrl with {'method.fusion': 'scale_only'}" in \
        findings_page(lab["results"], "smoke")


@pytest.mark.slow
@pytest.mark.extended  # the single switch above goes the same way through the template
def test_a_sweep_notebook_trains_one_tagged_variant_per_value_and_compares_each_with_the_base(lab):
    _new(lab, "anchors", "--base-arm", "wmrl", "--sweep", "method.anchor_fraction=0.2,0.5")
    stem = next(p.stem for p in lab["notebooks"].glob("[0-9][0-9]_anchors.ipynb"))
    assert _params(lab["notebooks"] / f"{stem}.ipynb")["ABL_SWEEP"] == {"method.anchor_fraction": [0.2, 0.5]}

    out = _run_smoke(lab, stem)
    for value in (0.2, 0.5):
        assert _stored(lab, f"wmrl~anchors-{value}")["method"]["anchor_fraction"] == value
    paired = next(o.text for c in out.cells if "paired = []" in c.source for o in c.outputs if o.get("name") == "stdout")
    assert "wmrl~anchors-0.2" in paired and "wmrl~anchors-0.5" in paired
    assert (lab["figures"] / f"{stem}.png").is_file()


@pytest.mark.parametrize("args, message", [
    (["typo", "--base-arm", "wmrl", "--set", "method.anchor_frac=0.2"], "unknown field 'method.anchor_frac'"),
    (["typo", "--base-arm", "wmrl", "--set", "method.anchor_fraction=2"], "must be in [0, 1]"),
    (["typo", "--base-arm", "wmrl", "--set", "anchor_fraction=0.2"], "did you mean method.anchor_fraction"),
    (["typo", "--base-arm", "wmlr", "--set", "method.fusion=scale_only"], "invalid choice: 'wmlr'"),
    (["Typo-1", "--base-arm", "wmrl", "--set", "method.fusion=scale_only"], "must be lower-case"),
    (["typo", "--base-arm", "wmrl"], "an ablation changes something"),
    (["typo", "--base-arm", "wmrl", "--set", "method.fusion=normalized"], "changes nothing"),
    (["typo", "--base-arm", "wmrl", "--sweep", "method.anchor_fraction=0.2"], "two or more distinct values"),
    (["typo", "--base-arm", "wmrl", "--set", "sandbox.workers=2"], "SCHEDULING_FIELDS"),
    (["existing", "--base-arm", "wmrl", "--set", "method.fusion=scale_only"], "exists already"),
    (["std", "--base-arm", "wmrl", "--set", "method.fusion=scale_only"], "a tag of the core campaign's runs"),
    (["oracle", "--base-arm", "wmrl", "--sweep", "method.anchor_fraction=0.1,0.2"], "a tag of the dial campaign's"),
], ids=["unknown-field", "bad-value", "no-section", "bad-arm", "bad-name", "nothing-set", "same-as-base", "one-value",
        "scheduling-field", "existing-name", "core-campaigns-tag", "dial-campaigns-tag"])
def test_bad_input_is_refused_with_what_to_pass_and_writes_nothing(args, message, tmp_path, capsys):
    (tmp_path / "06_existing.py").write_text("# %%\n")
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(SystemExit) as info:
        main(["new-ablation", *args, "--notebooks", str(tmp_path)])
    assert info.value.code == 2
    assert message in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_tag_that_holds_runs_of_other_overrides_is_refused_never_retrained(tmp_path):
    first = {"method.anchor_fraction": 0.5}
    ensure_runs(["wmrl"], [0], "smoke", tmp_path, progress=False, tag="abl", overrides=first)
    summary = tmp_path / "train" / "smoke" / "wmrl~abl" / "seed0" / "summary.json"
    trained = (summary.read_bytes(), os.stat(summary).st_mtime_ns)

    again = ensure_runs(["wmrl"], [0], "smoke", tmp_path, progress=False, tag="abl", overrides=first)
    assert again.arm.tolist() == ["wmrl~abl"], "the same overrides reuse the tag's runs"
    with pytest.raises(ValueError) as info:
        ensure_runs(["wmrl"], [0], "smoke", tmp_path, progress=False, tag="abl",
                    overrides={"method.anchor_fraction": 0.25})
    message = str(info.value)
    assert "method.anchor_fraction=0.5 (asked: 0.25)" in message
    assert "new tag" in message and f"delete {summary.parent.parent}" in message
    assert (summary.read_bytes(), os.stat(summary).st_mtime_ns) == trained, "nothing was retrained"


def test_a_tagged_run_whose_defaults_changed_under_its_overrides_is_retrained_saying_so(tmp_path, capsys):
    overrides = {"method.anchor_fraction": 0.5}
    ensure_runs(["wmrl"], [0], "smoke", tmp_path, progress=False, tag="abl", overrides=overrides)
    summary = tmp_path / "train" / "smoke" / "wmrl~abl" / "seed0" / "summary.json"
    stored = json.loads(summary.read_text())
    stored["provenance"]["config"]["world_model"]["temperature"] = 0.5  # trained under another default
    summary.write_text(json.dumps(stored))
    ensure_runs(["wmrl"], [0], "smoke", tmp_path, progress=False, tag="abl", overrides=overrides)
    assert "defaults under its overrides changed: world_model.temperature=0.5 (asked: 0.7)" in capsys.readouterr().out
    config = json.loads(summary.read_text())["provenance"]["config"]
    assert config["world_model"]["temperature"] == 0.7 and config["method"]["anchor_fraction"] == 0.5


def test_a_sweep_names_each_variant_after_its_value_on_top_of_the_common_overrides():
    variants = ablation.plan("mix", "wmrl", {"method.fusion": "scale_only"},
                             {"method.anchor_fraction": [0.05, 0.25]})
    assert [v.label("wmrl") for v in variants] == ["wmrl~mix-0.05", "wmrl~mix-0.25"]
    assert variants[1].overrides == {"method.fusion": "scale_only", "method.anchor_fraction": 0.25}
    with pytest.raises(ConfigError, match="one field"):
        ablation.plan("mix", "wmrl", sweep={"method.anchor_fraction": [0.1, 0.2], "method.rho_max": [2.0, 3.0]})
    with pytest.raises(ConfigError, match="both set"):
        ablation.plan("mix", "wmrl", {"method.rho_max": 2.0}, {"method.rho_max": [2.0, 3.0]})


def test_the_next_notebook_number_follows_the_highest_one(tmp_path):
    assert ablation.next_number(tmp_path) == 0
    for name in ("00_a.ipynb", "03_b.py", "TEMPLATE_ablation.py", "notes.md"):
        (tmp_path / name).write_text("")
    assert ablation.next_number(tmp_path) == 4


def test_a_variant_that_realised_its_base_runs_is_told_apart_from_one_that_differs(tmp_path):
    import pandas as pd

    def run(name, seed, loss):
        d = tmp_path / name / f"seed{seed}"
        d.mkdir(parents=True)
        pd.DataFrame({"step": [0, 1], "n_groups": [3, 3], "n_executed_groups": [1, 1], "train_reward": [0.2, 0.3],
                      "loss": [0.5, loss], "rho": [1.0, 1.5]}).to_parquet(d / "steps.parquet")
        pd.DataFrame({"step": [2], "task": ["iris"], "samples": [4], "percentile": [0.4]}).to_parquet(d / "eval.parquet")
        return {"arm": name, "seed": seed, "dir": str(d)}

    runs = pd.DataFrame([run("wmrl", s, 0.4) for s in (0, 1)] + [run("wmrl~same", s, 0.4) for s in (0, 1)]
                        + [run("wmrl~other", 0, 0.4), run("wmrl~other", 1, 0.41)] + [run("wmrl~alone", 5, 0.4)])
    assert ablation.realised_as_base(runs, "wmrl", "wmrl~same")
    assert not ablation.realised_as_base(runs, "wmrl", "wmrl~other")  # one update differs at one seed
    assert not ablation.realised_as_base(runs, "wmrl", "wmrl~alone")  # no seed in common: nothing to compare
