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
# Notebooks whose smoke runs and figure checks are `make test-extended`'s, not `make test`'s: the world model's
# fidelity (half of its minute is SmolLM2 scoring a script, which the LLM world model's tests cover), the VLA
# analog (its trainer has its own end-to-end tests) and the notebooks beyond Table 1 and Table 3, whose runs are
# the grammar trainer's with other settings (tested arm by arm). nbval redraws their committed outputs in `make test`.
# Notebook 13's family trains no further look; notebook 15 runs the same arms, estimand and looks end to end, and
# tests/test_primary.py tests 13's own rule. A notebook written by new-ablation (its parameters name ABL_NAME) runs
# the template's code, whose smoke run is make test's.
EXTENDED_NOTEBOOKS = {"05_world_model_fidelity", "06_vla", "08_fidelity_dial", "09_exploit_stress",
                      "10_anchor_budget", "11_method_regime", "12_confirmatory", "13_primary"} | {
    n for n in NAMES if "\nABL_NAME = " in (NOTEBOOKS / f"{n}.py").read_text()}


def run_notebook(name: str, tmp_path: Path, kernel: str, **params):
    """papermill-run ``name`` with ``params``; its results and figures go under ``tmp_path`` unless overridden."""
    return papermill.execute_notebook(
        str(NOTEBOOKS / f"{name}.ipynb"), str(tmp_path / f"{name}.ipynb"),
        parameters={"RESULTS_DIR": str(tmp_path / "results"), "FIGURES_DIR": str(tmp_path / "figures"), **params},
        cwd=str(NOTEBOOKS), kernel_name=kernel, progress_bar=False,
    )
