"""The execution memo: a repeated (task, code) is served from an earlier real run.

A finite decision grammar renders the same script many times, across steps, arms and seeds.
Executing it again would give the same result (scripts fix their seeds) and only burn time, so
the memo stores each real result once. Honest accounting is kept by the caller: a memo hit is
charged the measured cost of the run it reuses (:class:`wmrl.ledger.ComputeLedger`), and the
memo can be switched off (``--no-memo``).

SQLite (standard library) makes the memo safe for concurrent runs and for a crash mid-write.
The key includes the pool's recipe version and the sandbox budget, so a changed task or time
limit never serves a stale result. Under an active execution record (:mod:`wmrl.record`)
every answer is recorded, or served from the record (a replay reads no memo file): a shared memo's
hits then do not depend on what else this machine ran before.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

from wmrl.record import active

__all__ = ["ExecutionMemo", "code_key"]


def code_key(task_name: str, code: str, salt: str) -> str:
    return hashlib.sha256(f"{salt}\0{task_name}\0{code}".encode()).hexdigest()


class ExecutionMemo:
    """``get(task, code)`` / ``put(task, code, result)`` over an SQLite file."""

    def __init__(self, path: str | Path, salt: str):
        self.path = Path(path)
        self.salt = salt
        self._replaying = (record := active()) is not None and record.mode == "replay"
        if not self._replaying:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(":memory:" if self._replaying else self.path, timeout=60)
        self._db.execute("CREATE TABLE IF NOT EXISTS runs (key TEXT PRIMARY KEY, result TEXT NOT NULL)")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, task_name: str, code: str) -> dict | None:
        key = code_key(task_name, code, self.salt)
        record = active()
        found = self._lookup(key) if record is None else record.observe("memo", key, None, lambda: self._lookup(key))
        if found is None:
            self.misses += 1
            return None
        self.hits += 1
        return found

    def _lookup(self, key: str) -> dict | None:
        row = self._db.execute("SELECT result FROM runs WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, task_name: str, code: str, result) -> None:
        if self._replaying:
            return
        payload = json.dumps(asdict(result) if not isinstance(result, dict) else result, default=str)
        with self._db:
            self._db.execute("INSERT OR REPLACE INTO runs VALUES (?, ?)", (code_key(task_name, code, self.salt), payload))

    def state_dict(self) -> dict:
        """The hit and miss counters, checkpointed with a run so that a resumed run counts from where it stopped."""
        return {"hits": self.hits, "misses": self.misses}

    def load_state_dict(self, state: dict) -> None:
        self.hits, self.misses = state["hits"], state["misses"]

    def close(self) -> None:
        self._db.close()
