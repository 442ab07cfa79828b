"""Where the repository is: the one place that knows (every module that needs it imports ``REPO``).

Results, notebook parameters, notebooks and the default data pool live under the repository.
In a checkout (an editable install included) that is the folder holding this package and
``pyproject.toml``. An installed wheel has no checkout around it (the package sits in
site-packages, and the sandbox's runtime travels inside it as package data), so there the
repository is the current working folder: run from the folder that should hold ``results/``.
"""
from __future__ import annotations

from pathlib import Path

__all__ = ["REPO", "find_repo"]


def find_repo() -> Path:
    """The checkout that holds this package, else (an installed wheel) the current working folder."""
    here = Path(__file__).resolve().parent.parent
    if (here / "pyproject.toml").is_file() and (here / "wmrl" / "__init__.py").is_file():
        return here
    return Path.cwd().resolve()


REPO = find_repo()
