"""Every notebook redrawn from the committed results: each figure names what it plots, and a wrong
parameter fails early and clearly.

The figure check redraws each notebook from the committed ``results/`` (read only) into a temporary
``FIGURES_DIR`` and reads the panels that :func:`~wmrl.experiments.notebook.save_figure` described
from matplotlib's objects. (The smoke runs that train are in ``test_notebooks.py``.)
"""

from __future__ import annotations

import nbformat
import pytest

from _notebooks import EXTENDED_NOTEBOOKS, NAMES, NOTEBOOKS, RESULTS, papermill, run_notebook

SETUP_CELLS = 1  # code cells allowed between the parameters and the failing check (e.g. imports)


@pytest.mark.slow
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.extended) if n in EXTENDED_NOTEBOOKS else n
                                  for n in NAMES])
def test_every_figure_redrawn_from_the_committed_results_has_axis_labels_and_a_legend_or_title(name, tmp_path, kernel):
    import json

    from wmrl.experiments.plots import figure_problems

    committed = sorted(p.name for p in (NOTEBOOKS.parent / "figures").glob(f"{name[:3]}*.png.provenance.json"))  # NN_...
    run_notebook(name, tmp_path, kernel, MODE="redraw", RESULTS_DIR=str(RESULTS))
    sidecars = sorted((tmp_path / "figures").glob("*.png.provenance.json"))
    assert [p.name for p in sidecars] == committed, f"{name} redrew other figures than it committed"
    if not committed:  # a declared design before its first look has nothing to draw
        return
    problems = {side.name: figure_problems(json.loads(side.read_text())["panels"]) for side in sidecars}
    assert not any(problems.values()), {k: v for k, v in problems.items() if v}


BAD_PARAMETERS = pytest.mark.parametrize(
    "bad, hint",
    [({"MODE": "trian"}, "pass one of ['redraw', 'train']"),
     ({"MODE": "replay"}, "MODE='redraw' redraws"),
     ({"PRESET": "huge"}, "pass one of"),
     ({"MODE": "redraw"}, "MODE='train'")],  # a redraw with an empty RESULTS_DIR
    ids=["unknown-mode", "replay-is-redraw", "unknown-preset", "redraw-without-results"],
)


def _is_parameters(cell) -> bool:
    return bool({"parameters", "injected-parameters"} & set(cell.metadata.get("tags", [])))


def _run_cell(source: str, label: str, namespace: dict) -> None:
    exec(compile(source, label, "exec"), namespace)  # noqa: S102 - the repository's own notebook cells


@BAD_PARAMETERS
def test_through_papermill_a_wrong_parameter_fails_in_the_first_cells_with_a_message_saying_what_to_pass(
    bad, hint, tmp_path, kernel
):
    name = NAMES[1]  # one notebook end to end through papermill and a kernel; every notebook in-process below
    with pytest.raises(papermill.PapermillExecutionError) as info:
        run_notebook(name, tmp_path, kernel, **bad)
    assert info.value.ename == "ParameterError"
    assert hint in info.value.evalue
    cells = nbformat.read(tmp_path / f"{name}.ipynb", as_version=4).cells
    ran_before = [c for c in cells[: info.value.cell_index] if c.cell_type == "code" and not _is_parameters(c)]
    assert len(ran_before) <= SETUP_CELLS, f"the parameter check must come right after the parameters cell in {name}"


@pytest.mark.parametrize("name", NAMES)
@BAD_PARAMETERS
def test_a_wrong_parameter_fails_in_the_first_cells_with_a_message_saying_what_to_pass(
    name, bad, hint, tmp_path, monkeypatch
):
    """The same check for every notebook, its cells executed in this process as papermill would run them (the
    parameters cell, then the injected values, then the code cells in order) until one raises: a kernel start
    per case would cost seconds each."""
    from wmrl.experiments.notebook import ParameterError

    monkeypatch.chdir(NOTEBOOKS)
    monkeypatch.syspath_prepend(str(NOTEBOOKS))  # as in the kernel: a notebook imports the helpers beside it
    code = [c for c in nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells if c.cell_type == "code"]
    first = next(i for i, c in enumerate(code) if _is_parameters(c))
    params = {"RESULTS_DIR": str(tmp_path / "results"), "FIGURES_DIR": str(tmp_path / "figures"), **bad}
    namespace = {"__name__": "__main__"}
    _run_cell(code[first].source, f"{name}: parameters", namespace)
    namespace.update(params)
    for k, cell in enumerate(code[first + 1:first + 2 + SETUP_CELLS], start=first + 1):
        assert not cell.source.lstrip().startswith(("%", "!")), f"{name}'s code cell {k} is not plain Python"
        try:
            _run_cell(cell.source, f"{name}: code cell {k}", namespace)
        except ParameterError as exc:
            assert hint in str(exc)
            return
    pytest.fail(f"no ParameterError in the {SETUP_CELLS + 1} code cells after {name}'s parameters cell")
