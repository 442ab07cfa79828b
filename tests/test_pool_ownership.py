"""Users' data is never moved, replaced or deleted: wmrl rebuilds only the pools it wrote itself.

Every entry point (``get_pool``, ``ensure_pool``, ``python -m wmrl.tasks.prepare``,
``python -m wmrl.tasks import``) is pointed at a folder holding a user's file; the file must be
there afterwards, byte for byte, and so must everything else in the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wmrl.tasks import PoolFolderError, get_pool, recipe
from wmrl.tasks.ownership import MARKER

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "competitions"
NOTE = b"my own notes \x00\xff - do not lose me\n"


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: files by content hash, folders by name (byte-for-byte comparison)."""
    out = {}
    for path in sorted(Path(folder).rglob("*")):
        rel = str(path.relative_to(folder))
        out[rel] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "dir"
    return out


def run_module(*args: str, **env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO), **env})


def fake_prepare(root, progress=False):
    """The recipe's shape without its minute of work: one task folder and a manifest listing it."""
    (root / "toy").mkdir(parents=True)
    (root / "toy" / "data.csv").write_text("a,b\n1,2\n")
    record = {"name": "toy", "checksum": recipe._checksum(root / "toy")}
    (root / "manifest.json").write_text(json.dumps({"version": recipe.RECIPE_VERSION, "tasks": [record]}))


@pytest.fixture
def users_folder(tmp_path):
    folder = tmp_path / "mine"
    (folder / "experiments").mkdir(parents=True)
    (folder / "notes.bin").write_bytes(NOTE)
    (folder / "experiments" / "run1.csv").write_text("x,y\n1,2\n")
    return folder


def test_get_pool_on_a_folder_that_is_neither_a_pool_nor_competitions_says_so_and_changes_nothing(users_folder):
    before = snapshot(users_folder)
    with pytest.raises(PoolFolderError, match="neither a wmrl pool .* Nothing in it was changed"):
        get_pool(users_folder)
    assert snapshot(users_folder) == before and (users_folder / "notes.bin").read_bytes() == NOTE


def test_prepare_cli_refuses_a_users_folder_and_leaves_it_byte_for_byte(users_folder):
    before = snapshot(users_folder)
    proc = run_module("wmrl.tasks.prepare", "--root", str(users_folder))
    assert proc.returncode == 2, proc.stderr
    assert "is not a wmrl pool" in proc.stderr and "pass another folder (--root)" in proc.stderr.lower()
    assert snapshot(users_folder) == before and (users_folder / "notes.bin").read_bytes() == NOTE
    assert sorted(p.name for p in users_folder.parent.iterdir()) == ["mine"]  # no lock, no build folder


def test_get_pool_reads_a_folder_of_someone_elses_competitions_in_place(tmp_path):
    checkout = shutil.copytree(FIXTURES / "MLE-Dojo", tmp_path / "MLE-Dojo")
    data = checkout / "data" / "prepared"
    (data / "notes.bin").write_bytes(NOTE)
    before = snapshot(checkout)
    pool = get_pool(data)  # MLE-Dojo's layout, its code found in the checkout above it
    assert sorted(pool.names) == ["aerial-cactus-identification", "dog-breed-identification", "spaceship-titanic",
                                  "spooky-author-identification"]
    assert pool.train and pool.heldout == [] and pool.manifest["layout"] == "mledojo"  # 4 tasks: all train at 15/5
    assert snapshot(checkout) == before and (data / "notes.bin").read_bytes() == NOTE


def test_a_stale_pool_holding_a_users_file_is_not_rebuilt_and_the_file_survives(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "prepare_pool", fake_prepare)
    root = recipe.ensure_pool(tmp_path / "pool")
    assert json.loads((root / MARKER).read_text())["recipe"] == "small"
    (root / "notes.bin").write_bytes(NOTE)
    before = snapshot(root)
    monkeypatch.setattr(recipe, "RECIPE_VERSION", recipe.RECIPE_VERSION + 1)
    with pytest.raises(PoolFolderError, match="holds notes.bin, which wmrl did not write"):
        recipe.ensure_pool(root)
    with pytest.raises(PoolFolderError, match="notes.bin"):
        get_pool(root)
    assert snapshot(root) == before


def test_a_stale_pool_whose_task_files_were_edited_is_not_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "prepare_pool", fake_prepare)
    root = recipe.ensure_pool(tmp_path / "pool")
    (root / "toy" / "data.csv").write_text("a,b\n1,3\n")  # a user's edit inside a task folder
    before = snapshot(root)
    monkeypatch.setattr(recipe, "RECIPE_VERSION", recipe.RECIPE_VERSION + 1)
    with pytest.raises(PoolFolderError, match="toy changed since wmrl wrote it"):
        recipe.ensure_pool(root)
    assert snapshot(root) == before


def test_a_stale_pool_holding_only_what_wmrl_wrote_is_rebuilt(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(recipe, "prepare_pool", lambda root, progress=False: (calls.append(root), fake_prepare(root)))
    root = recipe.ensure_pool(tmp_path / "pool")
    monkeypatch.setattr(recipe, "RECIPE_VERSION", recipe.RECIPE_VERSION + 1)
    recipe.ensure_pool(root)
    assert len(calls) == 2 and json.loads((root / "manifest.json").read_text())["version"] == recipe.RECIPE_VERSION


def test_the_pool_is_built_into_an_empty_folder_the_user_made(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "prepare_pool", fake_prepare)
    (tmp_path / "pool").mkdir()
    assert (recipe.ensure_pool(tmp_path / "pool") / "toy" / "data.csv").is_file()


def test_pools_built_before_the_marker_are_recognised_by_their_manifest(pool, tmp_path):
    assert not (pool.root / MARKER).exists() or recipe.is_small_pool(pool.root)
    assert recipe.is_small_pool(pool.root)  # the shared pool: a manifest with the recipe's fields and seed
    legacy = tmp_path / "legacy"
    shutil.copytree(pool["iris_species"].root, legacy / "iris_species")
    manifest = json.loads((pool.root / "manifest.json").read_text())
    manifest["tasks"] = [r for r in manifest["tasks"] if r["name"] == "iris_species"]
    (legacy / "manifest.json").write_text(json.dumps(manifest))
    assert recipe.is_small_pool(legacy) and recipe.pool_is_current(legacy)
    assert get_pool(legacy).names == ["iris_species"]  # used as it is: nothing written
    assert sorted(p.name for p in legacy.iterdir()) == ["iris_species", "manifest.json"]
    (legacy / "manifest.json").write_text(json.dumps({**manifest, "seed": 1}))  # not this recipe's seed
    assert not recipe.is_small_pool(legacy)


def test_a_killed_builds_leftovers_are_removed_only_when_they_carry_the_build_mark(tmp_path, monkeypatch):
    monkeypatch.setattr(recipe, "prepare_pool", fake_prepare)
    ours, theirs = tmp_path / ".pool.building-ours", tmp_path / ".pool.building-theirs"
    ours.mkdir()
    (ours / recipe.BUILDING).touch()
    theirs.mkdir()
    (theirs / "notes.bin").write_bytes(NOTE)
    recipe.ensure_pool(tmp_path / "pool")
    assert not ours.exists() and (theirs / "notes.bin").read_bytes() == NOTE


def test_import_cli_never_writes_into_a_users_folder(users_folder):
    before = snapshot(users_folder)
    proc = run_module("wmrl.tasks", "import", "--layout", "dsbench", str(FIXTURES / "DSBench" / "data_modeling"),
                      "--out", str(users_folder))
    assert proc.returncode == 2 and "is not empty and is not a pool wmrl imported" in proc.stderr, proc.stderr
    assert snapshot(users_folder) == before and (users_folder / "notes.bin").read_bytes() == NOTE


def test_reimporting_replaces_only_the_manifest_and_refuses_when_a_user_file_joined_it(tmp_path):
    src = FIXTURES / "DSBench" / "data_modeling"
    out = tmp_path / "pool"
    args = ("wmrl.tasks", "import", "--layout", "dsbench", str(src), "--out", str(out), "--train", "1", "--heldout", "1")
    assert run_module(*args).returncode == 0
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "manifest.json"]
    assert run_module(*args).returncode == 0  # an import pool may be re-imported
    (out / "notes.bin").write_bytes(NOTE)
    before = snapshot(out)
    proc = run_module(*args)
    assert proc.returncode == 2 and "holds notes.bin, which wmrl did not write" in proc.stderr
    assert snapshot(out) == before
