"""Shared fixtures, the test tiers, and the one temporary data root of a test run.

**Data root.** Before anything imports the pool, ``WMRL_DATA`` points at a fresh temporary folder
for the whole run: the task pool, the execution memo and model caches of every test (and of every
notebook kernel or CLI a test starts, which inherit the environment) live there, never in the
repository's ``data/``. Under pytest-xdist (``make test``) each worker process imports this file,
so each has a data root of its own and no two workers write the same files. The pool takes about a minute to prepare on 2 cores, so it is prepared
once per machine in a cache outside the repository (``$WMRL_TEST_CACHE/pool``, default
``~/.cache/wmrl-test/pool``; rebuilt there when the pool's recipe version changes) and copied into
the temporary root the first time a test asks for it. CI builds the cache on its first run.

**Tiers.** The markers (``slow``, ``docker``, ``gpu``, ``browser``, ``llm_heavy``) are registered in ``pyproject.toml``
(``--strict-markers`` refuses any other). One hook, :func:`pytest_collection_modifyitems`, skips
``gpu`` tests without a CUDA device and ``docker`` tests without a responding engine, saying why;
``make test-fast`` deselects ``slow`` (``-m "not slow"``), ``make test`` everything but ``llm_heavy``
(which ``make test-llm`` runs).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

DATA_ROOT = Path(tempfile.mkdtemp(prefix="wmrl-test-data-"))
os.environ["WMRL_DATA"] = str(DATA_ROOT)
atexit.register(shutil.rmtree, DATA_ROOT, ignore_errors=True)
POOL_CACHE = Path(os.environ.get("WMRL_TEST_CACHE") or Path.home() / ".cache" / "wmrl-test") / "pool"


def _why_no_gpu() -> str | None:
    try:
        import torch
    except ImportError:
        return "gpu: torch is not installed"
    return None if torch.cuda.is_available() else "gpu: no CUDA device is visible to torch"


def _why_no_docker() -> str | None:
    try:
        from wmrl.sandbox.docker_backend import docker_available  # deferred: only docker tests ask
    except ImportError as exc:
        return f"docker: {exc}"
    reason = docker_available()
    return None if reason is None else f"docker: {reason}"


_PROBES = {"gpu": _why_no_gpu, "docker": _why_no_docker}


def pytest_collection_modifyitems(config, items):
    """Skip ``gpu`` / ``docker`` tests, with the reason, where the machine lacks what they need."""
    reasons: dict[str, str | None] = {}
    for item in items:
        for marker, probe in _PROBES.items():
            if item.get_closest_marker(marker) is None:
                continue
            if marker not in reasons:  # probe once per run, and only if such a test was collected
                reasons[marker] = probe()
            if reasons[marker]:
                item.add_marker(pytest.mark.skip(reason=reasons[marker]))


@pytest.fixture(scope="session")
def pool():
    """The small task pool in this run's temporary data root, copied from the per-machine cache."""
    from wmrl.tasks import default_root, get_pool
    from wmrl.tasks.prepare import ensure_pool

    ensure_pool(POOL_CACHE, progress=True)  # a no-op when the cached pool is current
    if not default_root().exists():
        shutil.copytree(POOL_CACHE, default_root(), symlinks=True)
    return get_pool()


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A tiny task in MLE-Dojo's layout with a toy grader (the sandbox suites' subject)."""
    from wmrl.sandbox.toy import make_toy_task

    return make_toy_task(tmp_path_factory.mktemp("pool"))


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory):
    """Where a sandbox suite's runs live, so it can check that none is left behind."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def kernel() -> str:
    """The Jupyter kernel papermill and nbclient start: this interpreter's (installed if missing)."""
    from wmrl.experiments.notebook import ensure_kernel

    return ensure_kernel()
