"""Which folders wmrl may replace: only those it wrote itself, as a marker it left there proves.

Users point wmrl at folders of their own (a data root, a folder of competitions, an output
folder). The project deletes or replaces only a folder it created: every pool it writes carries
``.wmrl-pool``, a JSON marker naming the recipe that wrote it (``small``: :mod:`wmrl.tasks.recipe`;
``import``: :mod:`wmrl.tasks.pool`) and its version. Before replacing such a folder the writer
also checks that it holds nothing but what it wrote, so a user's note dropped into a pool stops the
rebuild with a message naming it instead of vanishing with the old pool. A folder without the
marker is someone else's: it is read, never rebuilt (pools from before the marker existed are
recognised by their manifest, see :func:`wmrl.tasks.recipe.is_small_pool`).
"""

from __future__ import annotations

import json
from pathlib import Path

__all__ = ["MARKER", "PoolFolderError", "is_empty", "read_marker", "refuse_unexpected", "write_marker"]

MARKER = ".wmrl-pool"


class PoolFolderError(ValueError):
    """A folder wmrl will not write to (it is someone else's) or cannot read as a pool; nothing was changed."""


def read_marker(folder: Path) -> dict | None:
    """The marker's content, or None when the folder has no (readable) marker."""
    try:
        marker = json.loads((Path(folder) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) and "recipe" in marker else None


def write_marker(folder: Path, recipe: str, version: int) -> None:
    (Path(folder) / MARKER).write_text(json.dumps({"recipe": recipe, "version": version, "written_by": "wmrl"}) + "\n")


def is_empty(folder: Path) -> bool:
    return Path(folder).is_dir() and not any(Path(folder).iterdir())


def refuse_unexpected(folder: Path, expected: set[str], action: str) -> None:
    """Raise PoolFolderError when ``folder`` holds top-level entries wmrl did not write."""
    extra = sorted(p.name for p in Path(folder).iterdir() if p.name not in expected | {MARKER})
    if extra:
        shown = ", ".join(extra[:8]) + (f" (+{len(extra) - 8} more)" if len(extra) > 8 else "")
        raise PoolFolderError(f"{folder} holds {shown}, which wmrl did not write; it will not {action} a folder that "
                              "holds someone else's files. Move them out of it (or pick another folder), then rerun.")
