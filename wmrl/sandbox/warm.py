"""Host side of the warm launcher: preloaded servers (``runtime/warm_server.py``), leased per run.

Why a pool shared by the whole process: a server holds no per-sandbox state (limits, paths and
environment travel in each run's spec), and starting one costs the very imports it saves, so
every ``Sandbox`` of this process reuses the same ones. A run leases an idle server or starts
one; ``run_many(max_workers=n)`` thus ends up with n servers, each running one job at a time.
A server that misbehaves (dies, misses its backstop) is killed and never reused. What a server
preloads (``PRELOAD``) is decided here and passed on its command line, so that the sandbox's
description (``Sandbox.facts``) and the servers cannot disagree.
"""
from __future__ import annotations

import marshal
import os
import socket
import subprocess
import sys
import tempfile
import threading
from multiprocessing.connection import Connection
from pathlib import Path

__all__ = ["PRELOAD", "SERVER", "WarmServer", "run_job", "servers", "shutdown"]

SERVER = Path(__file__).resolve().parent / "runtime" / "warm_server.py"  # package data
# What generated solutions import (see wmrl.agent.script and templates); a server skips missing ones.
PRELOAD = ("numpy", "pandas", "scipy.sparse", "sklearn.compose", "sklearn.decomposition", "sklearn.dummy",
           "sklearn.ensemble", "sklearn.feature_extraction.text", "sklearn.impute", "sklearn.linear_model",
           "sklearn.metrics", "sklearn.model_selection", "sklearn.naive_bayes", "sklearn.neighbors",
           "sklearn.pipeline", "sklearn.preprocessing", "sklearn.svm", "sklearn.tree", "PIL.Image")
_STARTUP_S = 180.0  # imports on a loaded 2-core machine
_REPLY_MARGIN_S = 10.0  # the server enforces the backstop itself; this is for a stuck server
# Keeps the server single-threaded: pyarrow (imported by pandas) starts a jemalloc thread otherwise.
_SERVER_EXTRA_ENV = {"JE_ARROW_MALLOC_CONF": "background_thread:false"}


class WarmServer:
    """One server process and the host's end of its socket."""

    def __init__(self, env: dict[str, str]):
        ours, theirs = socket.socketpair()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the server's stderr, kept as long as it lives
        self.proc = subprocess.Popen(
            [sys.executable, "-I", str(SERVER), str(theirs.fileno()), ",".join(PRELOAD)],
            env={**env, **_SERVER_EXTRA_ENV},
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log, pass_fds=[theirs.fileno()],
            start_new_session=True, close_fds=True, cwd="/")
        theirs.close()
        self.conn = Connection(ours.detach())
        hello = self._receive(_STARTUP_S)
        if hello is None or hello["error"]:
            reason = hello["error"] if hello else self.log()
            self.close()
            raise RuntimeError(f"warm sandbox server failed to start: {reason}")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _receive(self, timeout_s: float) -> dict | None:
        """The server's next message, or None when it died or said nothing in time."""
        try:
            return marshal.loads(self.conn.recv_bytes()) if self.conn.poll(timeout_s) else None
        except (EOFError, OSError):
            return None

    def run(self, spec: Path, backstop_s: float) -> dict | None:
        """``{"exit", "killed"}`` of the job for ``spec``, or None when the server failed."""
        try:
            self.conn.send_bytes(marshal.dumps({"spec": str(spec), "backstop_s": backstop_s}))
        except OSError:
            return None
        return self._receive(backstop_s + _REPLY_MARGIN_S)

    def log(self) -> str:
        self._log.seek(0)
        return self._log.read()[-800:].decode(errors="replace")

    def close(self) -> None:
        """Let the server go: end of file stops it and its job; SIGKILL if it lingers."""
        self.conn.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


class _Pool:
    def __init__(self):
        self.lock = threading.Lock()
        self.idle: list[WarmServer] = []
        self.busy: set[WarmServer] = set()

    def lease(self, env: dict[str, str]) -> WarmServer:
        with self.lock:
            if self.idle:
                server = self.idle.pop()
                self.busy.add(server)
                return server
        server = WarmServer(env)  # outside the lock: parallel runs start their servers in parallel
        with self.lock:
            self.busy.add(server)
        return server

    def give_back(self, server: WarmServer, healthy: bool) -> None:
        with self.lock:
            self.busy.discard(server)
            if healthy:
                self.idle.append(server)
        if not healthy:
            server.close()

    def forget(self) -> None:
        """In a forked copy of the host: drop the parent's servers without stopping them."""
        for server in (*self.idle, *self.busy):
            server.conn.close()
        self.__init__()


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def run_job(spec: Path, backstop_s: float, server_env: dict[str, str]) -> tuple[bool, str]:
    """Run the job described by ``spec`` on a leased server: (killed at the backstop, failure text).

    The failure text is for the host's error when no status was written: the job's stderr
    (``supervisor.err`` beside the spec). A server that dies mid-run raises RuntimeError.
    """
    server = _POOL.lease(server_env)
    reply = None
    try:
        reply = server.run(spec, backstop_s)
        if reply is None:  # the sandbox's failure, not the solution's: never a timeout, never a status
            # (the dying server's job may still have written one, e.g. "killed by SIGKILL")
            raise RuntimeError(f"warm sandbox server {server.pid} failed mid-run: {server.log()}")
    finally:
        _POOL.give_back(server, healthy=reply is not None)
    try:
        err = (spec.parent / "supervisor.err").read_text(errors="replace")[-800:]
    except OSError:
        err = ""
    return reply["killed"], f"sandbox supervisor failed (exit {reply['exit']}): {err}"


def servers() -> list[int]:
    """PIDs of this process's warm servers (idle or running a job)."""
    with _POOL.lock:
        return [s.pid for s in (*_POOL.idle, *_POOL.busy)]


def shutdown() -> None:
    """Stop every idle server; one busy with a run is left to it (a later run may start new ones)."""
    with _POOL.lock:
        idle, _POOL.idle = _POOL.idle, []
    for server in idle:
        server.close()
