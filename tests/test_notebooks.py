"""Every notebook runs end to end at the smoke preset, and the notebooks' parameters and pairs are sound.

The committed outputs are nbval's business (pyproject's ``addopts`` run ``--nbval-lax`` over
``notebooks/``). Here each notebook found on disk is papermill-run with ``MODE="train"``,
``PRESET="smoke"`` into a temporary folder, with ``RESULTS_DIR`` and ``FIGURES_DIR`` pointed there
too, so the committed results and figures are never touched. The redraws of the committed results
(figures, wrong parameters) are in ``test_notebook_redraws.py``: a file of their own, so that
``make test``'s processes (``--dist loadfile``) run them beside these smoke runs.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from _notebooks import EXTENDED_NOTEBOOKS, NAMES, NOTEBOOKS, TEMPLATES, run_notebook
from wmrl.experiments import notebook as nb
from wmrl.presets import notebook_params


@pytest.fixture(scope="session")
def shared_results(tmp_path_factory, pool, smollm2_link) -> Path:
    """One results folder for every smoke run: notebooks 01-05 share training runs, which train once.

    Asking for ``pool`` puts the task pool into the run's temporary data root first, and SmolLM2's
    float32 folder is linked there (notebook 05 scores scripts with it): the kernels inherit
    ``WMRL_DATA`` and find both there (their memo goes there too)."""
    return tmp_path_factory.mktemp("shared")


# Notebook 07 trains SmolLM2 with TRL (minutes per arm on 2 cores): its smoke run is one of `make test-llm`'s
# further LLM runs; `make test` redraws its committed results (nbval, and the redraw tests).
LLM_NOTEBOOKS = {"07_llm_agent"}


def _tier(name: str):
    if name in LLM_NOTEBOOKS:
        return pytest.param(name, marks=pytest.mark.llm_heavy)
    if name in EXTENDED_NOTEBOOKS:
        return pytest.param(name, marks=pytest.mark.extended)
    return name


SMOKE = [_tier(n) for n in NAMES + TEMPLATES]


@pytest.mark.slow
@pytest.mark.parametrize("name", SMOKE)
def test_notebook_runs_end_to_end_at_the_smoke_preset(name, shared_results, kernel):
    run_notebook(name, shared_results, kernel, MODE="train", PRESET="smoke")
    assert any(p.is_file() for p in (shared_results / "results").rglob("*")), "a train run must write results"


def test_every_notebook_has_a_paired_script_and_a_parameters_cell():
    for name in NAMES:
        assert (NOTEBOOKS / f"{name}.py").is_file(), f"{name}.ipynb has no jupytext pair {name}.py"
        cells = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells
        params = [c for c in cells if "parameters" in c.metadata.get("tags", [])]
        assert len(params) == 1, f"{name} needs exactly one cell tagged 'parameters'"
        for key in nb.COMMON_KEYS:
            assert f"{key} =" in params[0].source, f"{name}'s parameters cell lacks {key}"


@pytest.mark.parametrize("name", NAMES + TEMPLATES)
def test_the_committed_notebook_holds_the_code_of_its_paired_script(name):
    """An edit to ``NAME.py`` must reach ``NAME.ipynb`` (``jupytext --sync``): the tests run the latter."""
    import jupytext

    def sources(notebook):
        return [(c.cell_type, c.source.strip()) for c in notebook.cells if c.source.strip()]

    script = jupytext.read(NOTEBOOKS / f"{name}.py")
    committed = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert sources(script) == sources(committed), f"run `jupytext --sync notebooks/{name}.py`"


def test_an_unknown_preset_lists_the_available_ones(tmp_path):
    ns = {"MODE": "train", "PRESET": "no_such_preset", "SEEDS": None, "RESULTS_DIR": str(tmp_path),
          "FIGURES_DIR": str(tmp_path)}
    with pytest.raises(nb.ParameterError, match="smoke"):
        nb.check_params(ns, notebook="t")


def test_none_parameters_are_filled_from_the_preset_and_explicit_ones_win(tmp_path):
    ns = {"MODE": "train", "PRESET": "smoke", "SEEDS": None, "RESULTS_DIR": str(tmp_path), "FIGURES_DIR": str(tmp_path),
          "THEORY_K": None, "THEORY_STEPS": 7}
    cfg = nb.check_params(ns, notebook="t", keys=["THEORY_K", "THEORY_STEPS"])
    smoke = notebook_params("smoke")
    assert cfg.seeds == smoke["SEEDS"] and cfg["THEORY_K"] == smoke["THEORY_K"] and cfg["THEORY_STEPS"] == 7


def test_another_preset_at_the_default_folders_writes_its_own_and_never_the_committed_ones(tmp_path, monkeypatch):
    """`papermill -p PRESET smoke` leaves RESULTS_DIR and FIGURES_DIR at ../results and ../figures (run from
    notebooks/): the smoke run goes to results/runs/smoke/; the redrawn preset and explicit folders are kept."""
    from wmrl.provenance import REPO

    monkeypatch.chdir(REPO / "notebooks")
    ns = {"MODE": "train", "SEEDS": [0], "RESULTS_DIR": "../results", "FIGURES_DIR": "../figures"}
    smoke = nb.check_params({**ns, "PRESET": "smoke"}, notebook="t")
    assert (smoke.results_dir, smoke.figures_dir) == nb.variant_folders("smoke")
    assert smoke.results_dir == REPO / "results" / "runs" / "smoke" / "results"
    small = nb.check_params({**ns, "PRESET": nb.REDRAW_PRESET}, notebook="t")
    assert (small.results_dir, small.figures_dir) == (REPO / "results", REPO / "figures")
    mine = nb.check_params({**ns, "PRESET": "smoke", "RESULTS_DIR": str(tmp_path)}, notebook="t")
    assert mine.results_dir == tmp_path and mine.figures_dir == nb.variant_folders("smoke")[1]


def test_a_key_missing_from_the_preset_says_how_to_pass_it(tmp_path):
    ns = {"MODE": "train", "PRESET": "smoke", "SEEDS": [0], "RESULTS_DIR": str(tmp_path), "FIGURES_DIR": str(tmp_path),
          "NOT_A_KEY": None}
    with pytest.raises(nb.ParameterError, match="-p NOT_A_KEY"):
        nb.check_params(ns, notebook="t", keys=["NOT_A_KEY"])


def test_a_closed_choice_rejects_an_unknown_arm(tmp_path):
    ns = {"MODE": "train", "PRESET": "smoke", "SEEDS": [0], "RESULTS_DIR": str(tmp_path), "FIGURES_DIR": str(tmp_path),
          "ARMS": ["grpo", "wmlr"]}
    with pytest.raises(nb.ParameterError, match="ARMS='wmlr'"):
        nb.check_params(ns, notebook="t", keys=["ARMS"], choices={"ARMS": ["grpo", "wmrl"]})


def test_a_figure_traces_every_source_to_its_provenance(tmp_path):
    import json

    import matplotlib.pyplot as plt
    import pandas as pd

    cfg = nb.check_params({"MODE": "train", "PRESET": "smoke", "SEEDS": [0], "RESULTS_DIR": str(tmp_path / "results"),
                           "FIGURES_DIR": str(tmp_path / "figures")}, notebook="t")
    table = nb.save_results(pd.DataFrame({"a": [1]}), "x", cfg, "sub")  # a sidecar beside it
    runs = []
    for seed in (0, 1):  # trainer runs: provenance inside summary.json, tables beside it
        run = cfg.results_dir / "train" / "smoke" / "grpo" / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"provenance": {"seed": seed, "git_commit": "abc"}}))
        pd.DataFrame({"s": [1]}).to_parquet(run / "ledger.parquet")
        runs.append(run)
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    path = nb.save_figure(fig, "f", cfg, "a caption", sources=[table, runs[0] / "summary.json", runs[1] / "ledger.parquet"])
    plt.close(fig)
    sources = json.loads(path.with_name("f.png.provenance.json").read_text())["sources"]
    assert sources["sub/x.parquet"]["config"]["notebook"] == "t"
    assert sources["train/smoke/grpo/seed0/summary.json"]["seed"] == 0
    assert sources["train/smoke/grpo/seed1/ledger.parquet"]["seed"] == 1


def test_results_round_trip_with_a_provenance_sidecar(tmp_path):
    import pandas as pd

    cfg = nb.check_params({"MODE": "train", "PRESET": "smoke", "SEEDS": [0], "RESULTS_DIR": str(tmp_path),
                           "FIGURES_DIR": str(tmp_path)}, notebook="t")
    path = nb.save_results(pd.DataFrame({"a": [1, 2]}), "x", cfg, "sub", seed=0)
    assert nb.load_results("x", cfg, "sub").a.tolist() == [1, 2]
    assert path.with_name("x.parquet.provenance.json").is_file()
    assert nb.provenance_table(cfg, "sub").file.tolist() == ["x.parquet"]
    with pytest.raises(nb.ParameterError, match="MODE='train'"):
        nb.load_results("missing", cfg, "sub")


def test_an_unchanged_result_kept_on_request_keeps_its_provenance(tmp_path):
    import json

    import pandas as pd

    cfg = nb.check_params({"MODE": "train", "PRESET": "smoke", "SEEDS": [0], "RESULTS_DIR": str(tmp_path),
                           "FIGURES_DIR": str(tmp_path)}, notebook="t")
    for obj, name in ((pd.DataFrame({"a": [0.1, 0.2]}), "x.parquet"), ({"a": [1, 2], "b": "c"}, "x.json")):
        path = nb.save_results(obj, "x", cfg, "sub")
        sidecar = path.with_name(name + ".provenance.json")
        sidecar.write_text(json.dumps({"made": "by the first run"}))
        nb.save_results(obj, "x", cfg, "sub", keep_unchanged=True)
        assert json.loads(sidecar.read_text()) == {"made": "by the first run"}
        nb.save_results(obj, "x", cfg, "sub")  # without the option: always rewritten
        assert "git_commit" in json.loads(sidecar.read_text())
        sidecar.write_text(json.dumps({"made": "by the first run"}))
        changed = obj.assign(a=[0.1, 0.3]) if isinstance(obj, pd.DataFrame) else {**obj, "b": "d"}
        nb.save_results(changed, "x", cfg, "sub", keep_unchanged=True)
        assert "git_commit" in json.loads(sidecar.read_text())


@pytest.mark.parametrize("name", NAMES)
def test_a_committed_notebook_shows_no_path_of_the_machine_it_ran_on(name):
    """A checked output that names this checkout's absolute path fails nbval in any other clone."""
    cells = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells
    checked = [c for c in cells if "nbval-check-output" in c.metadata.get("tags", [])]
    for cell in checked:
        text = nbformat.writes(nbformat.v4.new_notebook(cells=[cell]))
        assert str(NOTEBOOKS.parent) + "/" not in text, f"a checked cell of {name}.ipynb names {NOTEBOOKS.parent}"
