"""Progress bars are widgets in JupyterLab and plain text under papermill, and notebooks carry no warnings.

The papermill test executes a two-cell notebook in a real kernel, as ``make reproduce`` does; the
widget side (a kernel JupyterLab starts) is tested against a real JupyterLab server in
``tests/test_lab.py``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from wmrl.experiments import notebook as nb

papermill = pytest.importorskip("papermill")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _outputs_of_a_progress_bar(tmp_path: Path) -> list[dict]:
    src = tmp_path / "bar.ipynb"
    nbformat.write(new_notebook(cells=[
        new_code_cell("from wmrl.experiments import collect  # what the notebooks import"),
        new_code_cell("from wmrl.progress import tqdm\nfor _ in tqdm(range(3), desc='steps'):\n    pass"),
    ]), src)
    out = papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"), kernel_name=nb.ensure_kernel(),
                                     progress_bar=False)
    return [o for c in out.cells for o in c.outputs]


def test_under_papermill_a_progress_bar_is_plain_text_and_nothing_warns(tmp_path, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    outputs = _outputs_of_a_progress_bar(tmp_path)
    assert all(o.output_type == "stream" for o in outputs), [o.output_type for o in outputs]
    text = "".join(o.text for o in outputs)
    assert "steps: 100%" in text and "3/3" in text
    assert "Warning" not in text


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
def test_the_committed_outputs_carry_no_warnings(name):
    """A warning in a committed notebook is noise a reader must learn to ignore (it was a TqdmWarning)."""
    found = []
    for i, cell in enumerate(nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.output_type == "stream" else str(out.get("data", {}).get("text/plain", ""))
            found += [f"cell {i}: {line.strip()}" for line in text.splitlines() if "Warning:" in line]
    assert not found, f"{name}.ipynb: " + "; ".join(found)
