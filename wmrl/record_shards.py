"""Record shards: the execution record of one run, made elsewhere, merged into its campaign's record.

A run trained on another machine (a Ray task, :mod:`wmrl.experiments.cluster`) records into a record
of its own on that machine's disk and hands back the exported file, its *shard* (the format of
:func:`wmrl.record.export`). The driver merges each shard into the campaign's working copy with
:func:`merge`: one transaction per shard, so a crash leaves the record with the whole shard or none
of it. A shard holds run contexts only (``run:<folder>``, :func:`wmrl.record.run_context`); its runs'
rows replace whatever the record held for them (a run retried after a lost node, or retrained),
and nothing else in the record changes. Export sorts every row, so the exported record is the same
bytes whatever order the shards were merged in. The working copy stays on the driver's own disk:
sqlite's write-ahead log does not work on a network file system.
"""

from __future__ import annotations

import gzip
import io
import json
from pathlib import Path

from wmrl.record import _insert_rows, _run_folder, working_copy

__all__ = ["ShardError", "merge", "read_shard"]


class ShardError(ValueError):
    """A shard holds something other than runs' observations, or is not a record file."""


def read_shard(shard: bytes | str | Path) -> list[dict]:
    """The rows of a shard: its bytes, or the path of its ``.jsonl.gz`` file."""
    blob = Path(shard).read_bytes() if isinstance(shard, (str, Path)) else shard
    try:
        with gzip.open(io.BytesIO(blob), "rt") as f:
            return [json.loads(line) for line in f]
    except (OSError, EOFError, json.JSONDecodeError) as e:
        raise ShardError(f"not a record shard (a gzipped JSON-lines file as wmrl.record.export writes): {e}") from None


def _runs_of(rows: list[dict]) -> set[str]:
    """The run folders whose contexts ``rows`` hold; refuses any context that is not a run's."""
    contexts = {row["c"] for row in rows if "c" in row}
    others = sorted(c for c in contexts if _run_folder(c) is None)
    if others:
        raise ShardError(f"a shard holds run contexts only (run:<folder>), this one also holds {others}: "
                         "record a run's shard with the run's own context open (wmrl.record.context)")
    return {_run_folder(c) for c in contexts}


def merge(path: str | Path, shard: bytes | str | Path) -> list[str]:
    """Merge ``shard`` into the working copy of the campaign record ``path`` (``<file>.jsonl.gz``) in one
    transaction; returns the run folders it held, sorted.

    Every context of a run the shard holds (``run:<folder>`` and its processes' ``run:<folder>#<i>``) is
    replaced by the shard's rows; a shard with any other context is refused before anything is written."""
    rows = read_shard(shard)
    runs = _runs_of(rows)
    db = working_copy(path)
    try:
        with db:
            db.execute("BEGIN IMMEDIATE")
            for run in runs:
                for table in ("seen", "clock"):
                    db.execute(f"DELETE FROM {table} WHERE context = ? OR context LIKE ? ESCAPE '\\'",
                               (f"run:{run}", _like_prefix(f"run:{run}#") + "%"))
            _insert_rows(db, rows)
    finally:
        db.close()
    return sorted(runs)


def _like_prefix(text: str) -> str:
    """``text`` with SQL LIKE's wildcards escaped (a folder name may hold ``_``)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
