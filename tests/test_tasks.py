"""The task pool: layout, manifest, the paper's size split, metrics and submission validation."""

from __future__ import annotations

import json
import shutil
import socket
import stat
import threading

import numpy as np
import pandas as pd
import pytest

from wmrl.tasks import (
    InvalidSubmissionError,
    TaskFolderError,
    get_metric,
    load_task,
    recipe,
    split_by_size,
    validate_submission,
)
from wmrl.tasks.metrics import METRICS
from wmrl.tasks.sources import LOADERS, load_source
from wmrl.tasks.task import REQUIRED_FILES

CATEGORIES = ("tabular", "text", "image")


# ---------------------------------------------------------------- split_by_size
def _mle_dojo_like_manifest(rng, per_category=26):
    """Categories of MLE-Dojo, sizes spread over orders of magnitude, names shuffled against size."""
    recs = []
    for cat in ("tabular", "text", "image", "audio"):
        sizes = rng.choice(10**9, size=per_category, replace=False)
        recs += [{"name": f"{cat}-{i:02d}", "category": cat, "size_bytes": int(s)} for i, s in enumerate(sizes)]
    rng.shuffle(recs)
    return recs


def test_split_by_size_takes_the_15_smallest_for_training_and_the_next_5_held_out_per_category():
    manifest = _mle_dojo_like_manifest(np.random.default_rng(0))
    split = split_by_size(manifest, 15, 5)
    by_name = {r["name"]: r for r in manifest}
    assert len(split.train) == 45 and len(split.heldout) == 15
    for cat in CATEGORIES:
        ranked = sorted((r for r in manifest if r["category"] == cat), key=lambda r: r["size_bytes"])
        train = [n for n in split.train if by_name[n]["category"] == cat]
        held = [n for n in split.heldout if by_name[n]["category"] == cat]
        assert set(train) == {r["name"] for r in ranked[:15]}
        assert set(held) == {r["name"] for r in ranked[15:20]}
        assert min(by_name[n]["size_bytes"] for n in held) > max(by_name[n]["size_bytes"] for n in train)


def test_split_by_size_excludes_audio():
    split = split_by_size(_mle_dojo_like_manifest(np.random.default_rng(1)), 15, 5)
    assert not any(n.startswith("audio") for n in split.train + split.heldout)


def test_split_by_size_drops_exclusions_after_selection_as_the_paper_did():
    manifest = _mle_dojo_like_manifest(np.random.default_rng(2))
    full = split_by_size(manifest, 15, 5)
    dropped = full.heldout[0]
    split = split_by_size(manifest, 15, 5, exclude=[dropped])
    assert split.train == full.train
    assert split.heldout == [n for n in full.heldout if n != dropped]  # 45 train / 14 held out


def test_split_by_size_accepts_counts_per_category_and_breaks_size_ties_by_name():
    manifest = [{"name": n, "category": "text", "size_bytes": 5} for n in ("c", "a", "b")]
    manifest += [{"name": "t1", "category": "tabular", "size_bytes": 1}, {"name": "t2", "category": "tabular", "size_bytes": 2}]
    split = split_by_size(manifest, {"text": 2, "tabular": 1}, {"text": 5, "tabular": 1})
    assert split.train == ["t1", "a", "b"] and split.heldout == ["t2", "c"]


def test_split_by_size_names_a_missing_manifest_field():
    with pytest.raises(KeyError, match="size_bytes"):
        split_by_size([{"name": "x", "category": "text"}], 1, 1)


# ---------------------------------------------------------------- metrics and validation
@pytest.mark.parametrize("name", sorted(METRICS))
def test_metric_direction_agrees_with_a_perfect_versus_a_poor_prediction(name):
    m = get_metric(name)
    y = np.array(["0", "1", "1", "0", "1", "0"])
    if m.kind == "label":
        perfect, poor = y, np.array(["1", "0", "0", "1", "1", "0"])
    elif m.kind == "probability":
        perfect, poor = (y == "1").astype(float) * 0.8 + 0.1, np.array([0.6, 0.4, 0.5, 0.7, 0.3, 0.5])
    else:
        y = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        perfect, poor = y, y[::-1]
    good, bad = m.score(y, perfect, "1"), m.score(y, poor, "1")
    assert (good > bad) if m.higher_is_better else (good < bad)


def test_metric_registry_declares_the_usual_directions():
    assert all(get_metric(n).higher_is_better for n in ("accuracy", "balanced_accuracy", "f1_macro", "roc_auc", "r2"))
    assert not any(get_metric(n).higher_is_better for n in ("rmse", "mae", "log_loss"))
    with pytest.raises(KeyError, match="unknown metric"):
        get_metric("auc_pr")


ANSWERS = pd.DataFrame({"id": [1, 2, 3, 4], "y": [0, 1, 2, 1]})


@pytest.mark.parametrize("submission, metric, message", [
    (pd.DataFrame({"id": [1, 2, 3, 4]}), "accuracy", "missing column"),
    (pd.DataFrame({"id": [1, 2, 3, 4], "y": [0, 1, 2, 1], "p": 0}), "accuracy", "unexpected column"),
    (pd.DataFrame({"id": [1, 2, 3], "y": [0, 1, 2]}), "accuracy", "expected 4 rows, got 3"),
    (pd.DataFrame({"id": [1, 1, 3, 4], "y": [0, 1, 2, 1]}), "accuracy", "duplicate id"),
    (pd.DataFrame({"id": [1, 2, 3, 9], "y": [0, 1, 2, 1]}), "accuracy", "not in the test set"),
    (pd.DataFrame({"id": [1, 2, 3, 4], "y": [0, None, 2, 1]}), "accuracy", "missing \\(NaN\\)"),
    (pd.DataFrame({"id": [1, 2, 3, 4], "y": [0, 1, 7, 1]}), "accuracy", "not classes"),
    (pd.DataFrame({"id": [1, 2, 3, 4], "y": ["a", 1, 2, 1]}), "rmse", "must be numeric"),
    (pd.DataFrame({"id": [1, 2, 3, 4], "y": [0.1, 1.5, 0.2, 0.3]}), "roc_auc", "probabilities in \\[0, 1\\]"),
    (pd.DataFrame({"id": [1, 2, 3, 4], "y": [0.1, np.inf, 0.2, 0.3]}), "rmse", "infinite"),
])
def test_validate_submission_raises_a_clear_error(submission, metric, message):
    with pytest.raises(InvalidSubmissionError, match=message):
        validate_submission(submission, ANSWERS, "id", "y", metric, classes=[0, 1, 2])


def test_validate_submission_aligns_rows_by_id_and_accepts_floats_for_integer_classes():
    sub = pd.DataFrame({"id": [4, 3, 2, 1], "y": [1.0, 2.0, 1.0, 0.0]})
    out = validate_submission(sub, ANSWERS, "id", "y", "accuracy", classes=[0, 1, 2])
    assert list(out) == ["0", "1", "2", "1"]


# ---------------------------------------------------------------- the pool on disk
def test_pool_has_at_least_8_tabular_4_text_and_4_image_tasks(pool):
    counts = {c: sum(t.category == c for t in pool) for c in CATEGORIES}
    assert counts["tabular"] >= 8 and counts["text"] >= 4 and counts["image"] >= 4, counts


def test_every_category_has_training_and_held_out_tasks_split_by_size_and_the_tuning_split_apart(pool):
    for cat in CATEGORIES:
        train = [t for t in pool.train if t.category == cat]
        held = [t for t in pool.heldout if t.category == cat]
        assert train and held, cat
        assert min(t.size_bytes for t in held) > max(t.size_bytes for t in train), cat
    splits = [{t.name for t in part} for part in (pool.train, pool.heldout, pool.tuning)]
    assert set.union(*splits) == set(pool.names) and sum(map(len, splits)) == len(pool.names)  # each task in one
    assert {t.name for t in pool.tuning} == {"employee_attrition", "concrete_strength", "olive_oil_area", "course_subject",
                                             "fastfood_calories", "scan_patches", "colour_patches"}


def test_manifest_records_every_task_with_its_checksum(pool):
    manifest = json.loads((pool.root / "manifest.json").read_text())
    assert manifest["version"] == recipe.RECIPE_VERSION
    for rec in manifest["tasks"]:
        assert set(rec) >= {"name", "category", "size_bytes", "n_rows", "metric", "higher_is_better", "source",
                            "checksum", "split"}
        assert rec["checksum"] == recipe._checksum(pool.root / rec["name"])


def test_task_folders_follow_the_mle_dojo_layout_and_keep_answers_private(pool):
    for task in pool:
        for rel in REQUIRED_FILES:
            assert (task.root / rel).is_file(), f"{task.name}: {rel}"
        train = pd.read_csv(task.public_dir / "train.csv")
        test = pd.read_csv(task.public_dir / "test.csv")
        answers = pd.read_csv(task.private_dir / "test_answer.csv")
        sample = pd.read_csv(task.public_dir / "sample_submission.csv")
        assert task.target_column in train and task.target_column not in test
        assert list(sample.columns) == [task.id_column, task.target_column] == list(answers.columns)
        assert list(test[task.id_column]) == list(answers[task.id_column]) == list(sample[task.id_column])
        assert not set(train[task.id_column]) & set(test[task.id_column])
        assert len(train) == task.n_rows and len(train) <= 3000
        assert not any(p.name.startswith("test_answer") for p in task.public_dir.rglob("*"))


def test_image_tasks_store_a_png_file_for_every_row(pool):
    images = [t for t in pool if t.category == "image"]
    for task in images:
        for csv in ("train.csv", "test.csv"):
            paths = pd.read_csv(task.public_dir / csv)[task.image_column]
            assert all((task.public_dir / p).is_file() and p.endswith(".png") for p in paths), task.name
        assert task.inventory["images/"] and all(p.startswith("images/") for p in task.inventory["images/"])


def test_inventory_lists_each_public_csvs_columns(pool):
    for task in pool:
        for csv in ("train.csv", "test.csv", "sample_submission.csv"):
            assert task.inventory[csv] == list(pd.read_csv(task.public_dir / csv, nrows=0).columns)
        assert task.target_column not in task.feature_columns and task.id_column not in task.feature_columns


def test_description_reads_like_a_kaggle_overview(pool):
    for task in pool:
        text = task.description
        for heading in ("## Overview", "## Files", "## Columns", "## Evaluation", "## Submission format"):
            assert heading in text, (task.name, heading)
        for column in task.inventory["train.csv"]:
            assert f"- {column}:" in text, (task.name, column)
        assert ("Higher is better" in text) == task.higher_is_better


def test_pool_lookup_by_name_and_a_clear_error_for_an_unknown_name(pool):
    name = pool.names[0]
    assert pool[name].name == name
    with pytest.raises(KeyError, match="no task 'nope'"):
        pool["nope"]


def test_load_task_names_the_missing_file(pool, tmp_path):
    folder = shutil.copytree(pool["iris_species"].root, tmp_path / "iris")
    (folder / "private" / "public_leaderboard.csv").unlink()
    with pytest.raises(FileNotFoundError, match="private/public_leaderboard.csv"):
        load_task(folder)


def test_load_task_reads_a_competition_folder_prepared_by_mle_dojo(pool, tmp_path):
    original = pool["penguin_species"]
    folder = shutil.copytree(original.root, tmp_path / "penguins" / "data")
    (folder / "task.json").unlink()  # MLE-Dojo writes no task.json
    with pytest.raises(TaskFolderError, match="no task.json, so nothing says which metric grades it"):
        load_task(tmp_path / "penguins")  # a guessed metric would grade wrongly
    task = load_task(tmp_path / "penguins", metric="accuracy")
    assert (task.name, task.id_column, task.target_column, task.task_type) == ("penguins", "id", "species",
                                                                               "classification")
    assert task.metric == "accuracy" and task.category == "tabular" and task.classes == original.classes
    regression = load_task(shutil.copytree(pool["diabetes_progression"].root, tmp_path / "diabetes"), metric="mae")
    assert regression.task_type == "regression" and not regression.higher_is_better


# ---------------------------------------------------------------- preparation
def test_every_source_loads_without_the_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("network access during pool preparation")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    for loader in LOADERS:
        src = load_source(loader)
        assert src.category in CATEGORIES and len(src.frame) >= 150, loader
        assert (src.images is not None) == (src.category == "image"), loader


def test_preparing_a_task_twice_gives_identical_files_with_answers_readable_by_the_owner_only(tmp_path):
    src = load_source("iris")
    a, b = recipe.write_task(src, tmp_path / "a"), recipe.write_task(src, tmp_path / "b")
    assert a["checksum"] == b["checksum"]
    assert stat.S_IMODE((tmp_path / "a" / "private").stat().st_mode) == 0o700


def test_a_task_built_in_the_pools_worker_processes_is_the_same_bytes_as_one_built_here(pool, tmp_path):
    """The pool builds its tasks side by side in fresh processes, in any order; each task's files are its own
    seed's, so a task built alone in this process has the checksum the pool's manifest recorded."""
    recorded = {r["name"]: r["checksum"] for r in json.loads((pool.root / "manifest.json").read_text())["tasks"]}
    for loader in ("wine", "fair"):
        src = load_source(loader)
        assert recipe.write_task(src, tmp_path / src.name)["checksum"] == recorded[src.name], loader


def test_ensure_pool_builds_once_under_concurrent_first_uses_and_rebuilds_on_a_new_version(tmp_path, monkeypatch):
    calls = []

    def fake_prepare(root, progress=False):
        calls.append(root)
        root.mkdir(parents=True)
        (root / "manifest.json").write_text(json.dumps({"version": recipe.RECIPE_VERSION, "tasks": []}))

    monkeypatch.setattr(recipe, "prepare_pool", fake_prepare)
    threads = [threading.Thread(target=recipe.ensure_pool, args=(tmp_path / "pool",)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and (tmp_path / "pool" / "manifest.json").is_file()
    recipe.ensure_pool(tmp_path / "pool")
    assert len(calls) == 1
    monkeypatch.setattr(recipe, "RECIPE_VERSION", recipe.RECIPE_VERSION + 1)
    recipe.ensure_pool(tmp_path / "pool")
    assert len(calls) == 2 and sorted(p.name for p in tmp_path.iterdir()) == [".pool.lock", "pool"]


def test_a_script_that_builds_the_pool_without_a_main_guard_stops_with_the_rule_instead_of_hanging(tmp_path):
    """The build's spawned workers re-run the caller's script; an unguarded one must not wait on its own lock."""
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(f"from wmrl.tasks.recipe import ensure_pool\nensure_pool({str(tmp_path / 'pool')!r})\n")
    done = subprocess.run([sys.executable, str(script)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert 'if __name__ == "__main__":' in done.stderr
    assert not (tmp_path / "pool").exists()  # nothing half-built left behind
