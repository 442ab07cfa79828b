"""The execution record: what a run measured, kept so that the run can be replayed to the bit.

A fresh execution cannot reproduce a run exactly: a script whose CPU time is near its budget lands
on either side of it, and every second a run charges is a fresh measurement. What a run measured
is therefore one of its inputs, like its seed. While a record is active the sandbox, the execution
memo and the run's clock write what they observed into it; while one is replayed they serve it
back in the same order and nothing executes:

- ``WMRL_EXECUTIONS=record:<file>.jsonl.gz``: append to the record (working copy ``<file>.sqlite``,
  safe for concurrent runs and a crash; :func:`export` writes the compact committed file);
- ``WMRL_EXECUTIONS=replay:<folder or file>``: serve every ``*.jsonl.gz`` record found there.

Each observation belongs to a *context*, the run it was made for (:func:`context`; the trainers
open one named after the run's folder), so runs trained in parallel processes never interleave,
and a replay of one run reads only its own. Outside a run the context is the notebook's
(``WMRL_EXECUTIONS_CONTEXT``, which :mod:`wmrl.reproduce` sets).

Three streams are kept per context: the sandbox's results and the memo's answers, each keyed by a
content address (sha256 of the task's name, the script and the limits or the memo's salt) and kept
in the order they were used (the same script can time out once and not the next time), and the
clock's readings (wall and CPU seconds, :func:`wall` and :func:`cpu`). Results are stored once,
by the hash of their content. A replay asked for something the record does not hold has diverged
from the recorded run: :class:`ReplayDiverged` names the context and what was asked.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections import defaultdict, deque
from contextlib import contextmanager
from pathlib import Path

__all__ = ["ENV", "Record", "ReplayDiverged", "StaleWorkingCopy", "active", "content_key", "context", "cpu", "digest", "export", "forget_gone_runs",
           "position", "run_context", "wall", "working_copy"]

ENV = "WMRL_EXECUTIONS"
CONTEXT_ENV = "WMRL_EXECUTIONS_CONTEXT"
_CONTEXT: list[str] = []
_LOCK = threading.RLock()


class ReplayDiverged(RuntimeError):
    """A replay asked for an observation its record does not hold: the run took another path."""


class StaleWorkingCopy(RuntimeError):
    """A record's working copy was made from another version of its committed file."""


_SOURCE_TABLE = "CREATE TABLE IF NOT EXISTS source (digest TEXT);"  # the committed file a working copy is made from
_TABLES = ("CREATE TABLE IF NOT EXISTS seen (context TEXT, stream TEXT, key TEXT, seq INTEGER, payload TEXT,"
           " n INTEGER, PRIMARY KEY (context, stream, key, seq));"
           "CREATE TABLE IF NOT EXISTS payloads (hash TEXT PRIMARY KEY, payload TEXT NOT NULL);"
           "CREATE TABLE IF NOT EXISTS clock (context TEXT, seq INTEGER, value REAL, n INTEGER,"
           " PRIMARY KEY (context, seq));")


def content_key(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _payload_key(payload: str) -> str:
    return hashlib.sha256(payload.encode()).hexdigest()[:20]


_RUN = "run:"


def run_context(folder: str | Path, process: int | None = None) -> str:
    """``run:<experiment>/<preset>/<label>/seed<S>`` for the run in ``folder``, with ``#<process>`` for one
    process of a run trained by several."""
    return _RUN + "/".join(Path(folder).parts[-4:]) + ("" if process is None else f"#{process}")


def _run_folder(context_name: str) -> str | None:
    """The folder, relative to the results folder, of a :func:`run_context` (None: not a run's context)."""
    return context_name[len(_RUN):].split("#", 1)[0] if context_name.startswith(_RUN) else None


def current_context() -> str:
    return _CONTEXT[-1] if _CONTEXT else f"notebook:{os.environ.get(CONTEXT_ENV, 'default')}"


@contextmanager
def context(name: str, resume_at: int | None = None):
    """Observations inside the block belong to ``name`` (a run: ``run:train/<preset>/<label>/seed<S>``).

    ``resume_at`` None: the run starts from its first step, and what the record held for it is
    replaced. A run resumed from a checkpoint passes the :func:`position` the checkpoint saved: what
    was recorded after it (the steps the crash lost) is dropped, and the run's record goes on from
    there, so it reads as the record of an uninterrupted run."""
    _CONTEXT.append(name)
    try:
        record = active()
        if record is not None:
            record.begin(name, resume_at, restart=True)
        yield
    finally:
        _CONTEXT.pop()


def position() -> int | None:
    """How many observations the current context has recorded (None without a record being made):
    a trainer saves it with each checkpoint and passes it back to :func:`context` on resume."""
    record = active()
    return None if record is None or record.mode != "record" else record._n.get(current_context(), 0)


class Record:
    """One record, in ``mode`` ``"record"`` (``path`` is the ``.jsonl.gz`` to export to) or ``"replay"``
    (``path`` a record file or a folder of them)."""

    def __init__(self, mode: str, path: str | Path):
        if mode not in ("record", "replay"):
            raise ValueError(f"{ENV} mode must be 'record' or 'replay', got {mode!r}")
        self.mode, self.path = mode, Path(path)
        self._served: dict[tuple, deque] = {}
        self._clock: dict[str, deque] = {}
        if mode == "replay":
            self._load()
        else:
            self._db = working_copy(self.path)
            self._counts: dict[tuple, int] = defaultdict(int)
            self._clock_n: dict[str, int] = {}
            self._n: dict[str, int] = {}  # observations per context, both tables: a checkpoint's position

    # -- the committed file --------------------------------------------------------------------
    @staticmethod
    def _read(path: Path):
        with gzip.open(path, "rt") as f:
            for line in f:
                yield json.loads(line)

    def _load(self) -> None:
        files = sorted(self.path.glob("*.jsonl.gz")) if self.path.is_dir() else [self.path]
        if not files or not all(f.is_file() for f in files):
            raise FileNotFoundError(f"no execution record at {self.path} (a *.jsonl.gz file or a folder of them)")
        payloads = {}
        for f in files:
            for row in self._read(f):
                if "p" in row:
                    payloads[row["h"]] = row["p"]
                elif "t" in row:
                    self._clock[row["c"]] = deque(row["t"])
                else:
                    self._served[(row["c"], row["s"], row["k"])] = deque(row["v"])
        for queue in self._served.values():
            for i, h in enumerate(queue):
                queue[i] = None if h is None else payloads[h]

    # -- recording -------------------------------------------------------------------------------
    def begin(self, name: str, resume_at: int | None = None, restart: bool = False) -> None:
        """Context ``name`` starts: from scratch (``resume_at`` None; what the record held for it is
        replaced) or from a checkpoint at ``resume_at`` observations. Without ``restart``, a context this
        process has already begun goes on."""
        if self.mode != "record" or (name in self._n and not restart):
            return
        with _LOCK, self._db:
            for k in [k for k in self._counts if k[0] == name]:
                del self._counts[k]
            for table in ("seen", "clock"):
                if resume_at is None:
                    self._db.execute(f"DELETE FROM {table} WHERE context = ?", (name,))
                else:
                    self._db.execute(f"DELETE FROM {table} WHERE context = ? AND n >= ?", (name, resume_at))
            for stream, key, n in self._db.execute(
                    "SELECT stream, key, COUNT(*) FROM seen WHERE context = ? GROUP BY stream, key", (name,)):
                self._counts[(name, stream, key)] = n
            self._clock_n[name] = self._db.execute("SELECT COUNT(*) FROM clock WHERE context = ?",
                                                   (name,)).fetchone()[0]
            self._n[name] = resume_at or 0

    def _put(self, stream: str, key: str, payload: str | None) -> None:
        ctx = current_context()
        self.begin(ctx)  # a notebook's own context: recorded anew by each process that trains it
        with _LOCK:
            seq, n = self._counts[(ctx, stream, key)], self._n[ctx]
            self._counts[(ctx, stream, key)], self._n[ctx] = seq + 1, n + 1
            h = None if payload is None else _payload_key(payload)
            with self._db:
                if h is not None:
                    self._db.execute("INSERT OR IGNORE INTO payloads VALUES (?, ?)", (h, payload))
                self._db.execute("INSERT OR REPLACE INTO seen VALUES (?, ?, ?, ?, ?, ?)", (ctx, stream, key, seq, h, n))

    def _take(self, stream: str, key: str) -> str | None:
        ctx = current_context()
        queue = self._served.get((ctx, stream, key))
        if not queue:
            raise ReplayDiverged(f"the record holds no further {stream} answer for {key} in {ctx}: the replay has "
                                 "left the recorded run's path (or the record predates this run)")
        return queue.popleft()

    def observe(self, stream: str, key: str, value: dict | None, measure=None) -> dict | None:
        """Replay: the next recorded value of (context, ``stream``, ``key``). Record: ``value`` (or
        ``measure()``'s), appended. A value is a JSON-able dict, or None (a memo's miss)."""
        if self.mode == "replay":
            payload = self._take(stream, key)
            return None if payload is None else json.loads(payload)
        value = measure() if measure is not None else value
        self._put(stream, key, None if value is None else json.dumps(value, sort_keys=True))
        return value

    def reading(self, value_now) -> float:
        ctx = current_context()
        if self.mode == "replay":
            queue = self._clock.get(ctx)
            if not queue:
                raise ReplayDiverged(f"the record holds no further clock reading for {ctx}")
            return queue.popleft()
        value = value_now()
        self.begin(ctx)
        with _LOCK:
            seq, n = self._clock_n[ctx], self._n[ctx]
            self._clock_n[ctx], self._n[ctx] = seq + 1, n + 1
            with self._db:
                self._db.execute("INSERT OR REPLACE INTO clock VALUES (?, ?, ?, ?)", (ctx, seq, value, n))
        return value


def working_copy(path: str | Path) -> sqlite3.Connection:
    """The working copy (``<file>.sqlite``) of the record ``path`` (``<file>.jsonl.gz``), opened for writing:
    created if missing, and filled from the committed file ``path`` when that exists and the copy is empty
    (a campaign resumed whose working copy is gone; :func:`_import` refuses a stale one)."""
    path = Path(path)
    db = sqlite3.connect(path.with_suffix("").with_suffix(".sqlite"), timeout=120, check_same_thread=False)
    # write-ahead log without an fsync per commit: each observation is committed on its own (a
    # crash loses at most the last), at a small cost per observation
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    with db:
        db.executescript(_TABLES + _SOURCE_TABLE)
    if path.is_file():
        _import(db, path)
    return db


def _import(db: sqlite3.Connection, path: Path) -> None:
    """Fill the empty working copy ``db`` from the committed file ``path``. The processes of a campaign open the
    record at once: the first takes the database's write lock, finds it still empty and imports; the
    others wait for the lock and then find it filled.

    A working copy already filled must have been made from ``path`` as it is now (imported from it or
    exported to it: :func:`export` stamps the file's digest). One made from another version of the
    record (the committed file changed since, by a pull or a checkout) is refused: recording on top of
    it would export its old rows of the runs it kept over the new file's."""
    found = digest(path)
    db.execute("BEGIN IMMEDIATE")
    try:
        if (db.execute("SELECT 1 FROM seen LIMIT 1").fetchone()
                or db.execute("SELECT 1 FROM clock LIMIT 1").fetchone()):
            stamp = db.execute("SELECT digest FROM source").fetchone()
            if stamp is None or stamp[0] != found:
                working = path.with_suffix("").with_suffix(".sqlite")
                raise StaleWorkingCopy(
                    f"the working copy {working} was not made from the committed record {path} as it is now "
                    "(the record changed since, or the working copy predates this check): delete it to record "
                    f"on from the committed file, or first keep what only it holds with "
                    f"python -c \"from wmrl import record; record.export('{path}')\"")
        else:
            db.execute("DELETE FROM source")
            db.execute("INSERT INTO source VALUES (?)", (found,))
            _insert_rows(db, Record._read(path))
        db.commit()
    except BaseException:
        db.rollback()
        raise


def _insert_rows(db: sqlite3.Connection, rows) -> None:
    """Insert the rows of an exported record (its payloads, each context's streams and clock) into ``db``."""
    for row in rows:
        if "p" in row:
            db.execute("INSERT OR IGNORE INTO payloads VALUES (?, ?)", (row["h"], row["p"]))
        elif "t" in row:
            db.executemany("INSERT INTO clock VALUES (?, ?, ?, NULL)", [(row["c"], i, v) for i, v in enumerate(row["t"])])
        else:
            db.executemany("INSERT INTO seen VALUES (?, ?, ?, ?, ?, NULL)",
                           [(row["c"], row["s"], row["k"], i, h) for i, h in enumerate(row["v"])])


def export(path: str | Path) -> Path:
    """Write the working copy of the record ``path`` (``.jsonl.gz``) as its compact, deterministic file:
    one line per stored result, per (context, stream, key) and per context's clock, sorted."""
    path = Path(path)
    db = sqlite3.connect(path.with_suffix("").with_suffix(".sqlite"))
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        def line(obj):
            gz.write((json.dumps(obj, separators=(",", ":")) + "\n").encode())
        for h, payload in db.execute("SELECT hash, payload FROM payloads WHERE hash IN (SELECT payload FROM seen) "
                                     "ORDER BY hash"):
            line({"h": h, "p": payload})
        rows = defaultdict(list)
        for ctx, stream, key, h in db.execute("SELECT context, stream, key, payload FROM seen "
                                              "ORDER BY context, stream, key, seq"):
            rows[(ctx, stream, key)].append(h)
        for (ctx, stream, key), hashes in rows.items():
            line({"c": ctx, "s": stream, "k": key, "v": hashes})
        clocks = defaultdict(list)
        for ctx, value in db.execute("SELECT context, value FROM clock ORDER BY context, seq"):
            clocks[ctx].append(value)
        for ctx, values in clocks.items():
            line({"c": ctx, "t": values})
    os.replace(tmp, path)
    with db:  # the working copy is now the committed file's: stamp it (_import checks the stamp)
        db.executescript(_SOURCE_TABLE)
        db.execute("DELETE FROM source")
        db.execute("INSERT INTO source VALUES (?)", (digest(path),))
    db.close()
    return path


def digest(path: str | Path) -> str:
    """The sha256 of a record file's bytes (an exported record is deterministic, so equal runs give equal digests)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def forget_gone_runs(path: str | Path, results: str | Path) -> list[str]:
    """Drop from the working copy of the record ``path`` every run's context (``run:<folder>``) whose folder
    under ``results`` is gone, so that the next :func:`export` holds the runs that exist and nothing else
    (a run deleted because it no longer belongs to its campaign). Returns the dropped contexts, sorted."""
    db = sqlite3.connect(Path(path).with_suffix("").with_suffix(".sqlite"), timeout=120)
    try:
        contexts = {c for (c,) in db.execute("SELECT DISTINCT context FROM seen UNION SELECT DISTINCT context FROM clock")}
        gone = sorted(c for c in contexts if (f := _run_folder(c)) is not None and not (Path(results) / f).is_dir())
        with db:
            for c in gone:
                db.execute("DELETE FROM seen WHERE context = ?", (c,))
                db.execute("DELETE FROM clock WHERE context = ?", (c,))
    finally:
        db.close()
    return gone


_ACTIVE: tuple[str, Record | None] | None = None


def active() -> Record | None:
    """The record ``WMRL_EXECUTIONS`` names (opened once per process and value), or None."""
    global _ACTIVE
    spec = os.environ.get(ENV, "")
    if _ACTIVE is not None and _ACTIVE[0] == spec:
        return _ACTIVE[1]
    record = None
    if spec:
        mode, sep, where = spec.partition(":")
        if not sep or not where:
            raise ValueError(f"{ENV}={spec!r}: expected record:<file>.jsonl.gz or replay:<folder or file>")
        record = Record(mode, where)
    _ACTIVE = (spec, record)
    return record


def wall() -> float:
    """``time.perf_counter()``, recorded or replayed under an active record."""
    record = active()
    return time.perf_counter() if record is None else record.reading(time.perf_counter)


def cpu() -> float:
    """``time.process_time()``, recorded or replayed under an active record."""
    record = active()
    return time.process_time() if record is None else record.reading(time.process_time)
