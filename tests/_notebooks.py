"""The notebooks on disk and how the notebook tests run one (papermill, into a temporary folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

papermill = pytest.importorskip("papermill")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
RESULTS = NOTEBOOKS.parent / "results"
NAMES = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
# The ablation template has no committed results (nbval skips it, see pyproject), so its smoke
# run is what shows that a new ablation can be built from it without touching wmrl/.
TEMPLATES = sorted(p.stem for p in NOTEBOOKS.glob("TEMPLATE_*.ipynb"))


def run_notebook(name: str, tmp_path: Path, kernel: str, **params):
    """papermill-run ``name`` with ``params``; its results and figures go under ``tmp_path`` unless overridden."""
    return papermill.execute_notebook(
        str(NOTEBOOKS / f"{name}.ipynb"), str(tmp_path / f"{name}.ipynb"),
        parameters={"RESULTS_DIR": str(tmp_path / "results"), "FIGURES_DIR": str(tmp_path / "figures"), **params},
        cwd=str(NOTEBOOKS), kernel_name=kernel, progress_bar=False,
    )
