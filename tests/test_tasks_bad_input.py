"""Bad input to task folders, pools and the import command: each answer names the value, what was
expected and how to fix it; and the layers stay one-way (tasks never import grading)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from test_pool_ownership import FIXTURES
from wmrl.tasks import PoolFolderError, TaskFolderError, get_pool, load_task
from wmrl.tasks.__main__ import main as import_main

PACKAGE = Path(__file__).resolve().parents[1] / "wmrl"


@pytest.fixture
def iris(pool, tmp_path):
    return shutil.copytree(pool["iris_species"].root, tmp_path / "iris")


def _edit_task_json(folder: Path, **changes) -> None:
    meta = json.loads((folder / "task.json").read_text())
    meta.update(changes)
    (folder / "task.json").write_text(json.dumps({k: v for k, v in meta.items() if v is not ...}))


# ---------------------------------------------------------------- task folders
def test_a_task_folder_that_does_not_exist_is_named_with_the_layout_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"'.*nowhere' does not exist; expected a folder holding public/"):
        load_task(tmp_path / "nowhere")


def test_a_file_given_as_a_task_folder_is_named(tmp_path):
    (tmp_path / "task.csv").write_text("a\n")
    with pytest.raises(NotADirectoryError, match=r"task\.csv' is a file; pass the folder holding public/"):
        load_task(tmp_path / "task.csv")


def test_a_task_json_that_is_not_json_is_named_with_the_fix(iris):
    (iris / "task.json").write_text("{'name': 'iris'")
    with pytest.raises(TaskFolderError, match=r"task\.json is not valid JSON .*fix it, or delete it"):
        load_task(iris)
    (iris / "task.json").write_text("[1, 2]")
    with pytest.raises(TaskFolderError, match="must hold a JSON object of task fields, got list"):
        load_task(iris)


@pytest.mark.parametrize("changes, message", [
    ({"colour": "blue"}, r"unknown field\(s\) \['colour'\], missing field\(s\) \[\]; a task record holds"),
    ({"metric": ...}, r"missing field\(s\) \['metric'\]"),
    ({"metric": "auc_pr"}, r"unknown metric 'auc_pr'; use one of \['accuracy'"),
    ({"category": "video"}, r"category must be one of 'tabular', 'text', 'image', 'audio', got 'video'"),
    ({"task_type": "ranking"}, r"task_type must be one of 'classification', 'regression', got 'ranking'"),
    ({"higher_is_better": False}, r"higher_is_better=False contradicts metric 'accuracy'"),
    ({"scoring": {"grader": "kaggle"}}, r"scoring.grader must be one of 'builtin', .* got 'kaggle'"),
])
def test_each_wrong_task_json_value_is_named_with_what_was_expected(iris, changes, message):
    _edit_task_json(iris, **changes)
    with pytest.raises(TaskFolderError, match=message):
        load_task(iris)


def test_an_unknown_metric_asked_for_is_named_with_the_known_ones(iris):
    with pytest.raises(TaskFolderError, match=r"unknown metric 'auroc'; use one of \['accuracy'"):
        load_task(iris, metric="auroc")


def test_a_pool_root_that_is_a_file_is_named(tmp_path):
    (tmp_path / "pool").write_text("")
    with pytest.raises(PoolFolderError, match="pool root .*pool is a file; pass a pool folder"):
        get_pool(tmp_path / "pool")


def test_an_unreadable_pool_manifest_is_named_with_the_fix(tmp_path):
    pool = tmp_path / "pool"
    import_main(["import", "--layout", "dsbench", str(FIXTURES / "DSBench" / "data_modeling"), "--out", str(pool)])
    (pool / "manifest.json").write_text(json.dumps({"recipe": "import", "tasks": [{"name": "x"}]}))
    with pytest.raises(PoolFolderError, match=r"manifest.json is not a readable pool manifest .*re-import the pool"):
        get_pool(pool)


# ---------------------------------------------------------------- the import command
MLEBENCH = ["--layout", "mlebench", "{f}/mle-bench-data", "--code", "{f}/mle-bench"]
CLI_CASES = {
    "unknown layout": (["--layout", "kaggle", "{f}/mle-bench-data"], "invalid choice: 'kaggle' (choose from"),
    "negative count": ([*MLEBENCH, "--train", "-1"],
                       "--train: expected a whole number >= 0 of tasks per category, got '-1'"),
    "category without name": ([*MLEBENCH, "--category", "image"], "expected NAME=CATEGORY (e.g. "),
    "unknown category": ([*MLEBENCH, "--category", "spaceship-titanic=video"],
                         "category of 'spaceship-titanic' must be one of tabular, text, image, audio, got 'video'"),
    "category of no competition": ([*MLEBENCH, "--category", "titanic=tabular"],
                                   "--category names competition(s) ['titanic'] that"),
    "source not a folder": (["--layout", "dsbench", "{f}/nowhere"], "nowhere is not a folder; pass the folder holding"),
    "source in another layout": (["--layout", "dsbench", "{f}/mle-bench-data"],
                                 "is not DSBench's data_modeling folder: "),
    "code not a checkout": (["--layout", "mlebench", "{f}/mle-bench-data", "--code", "{f}/DSBench"],
                            "DSBench is not a MLE-bench checkout: neither it nor a folder above it holds mlebench/"),
    "no checkout found": (["--layout", "mlebench", "{f}/mle-bench-data"],
                          "no checkout was found at or above"),
    "out inside the source": ([*MLEBENCH[:3], "--code", "{f}/mle-bench", "--out", "{f}/mle-bench-data/pool"],
                              "lies inside the source"),
    "nothing importable": (["--layout", "mledojo", "{f}/MLE-Dojo/data/prepared", "--code", "{f}/empty-checkout"],
                           "no competition in"),
}


@pytest.mark.parametrize("case", CLI_CASES)
def test_each_wrong_import_argument_is_named_with_what_was_expected(case, tmp_path, capsys):
    fixtures = shutil.copytree(FIXTURES, tmp_path / "f")
    (fixtures / "empty-checkout" / "mledojo" / "metrics").mkdir(parents=True)
    (fixtures / "empty-checkout" / "mledojo" / "metrics" / "base.py").write_text("")
    argv, message = CLI_CASES[case]
    argv = [a.format(f=fixtures) for a in argv]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "pool")]
    with pytest.raises(SystemExit) as exit_:
        import_main(["import", *argv])
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "pool").exists()


def test_an_out_folder_that_is_a_file_is_named(tmp_path, capsys):
    (tmp_path / "pool").write_text("")
    with pytest.raises(SystemExit):
        import_main(["import", "--layout", "dsbench", str(FIXTURES / "DSBench" / "data_modeling"), "--out",
                     str(tmp_path / "pool")])
    assert "--out " + str(tmp_path / "pool") + " is a file; pass a new or empty folder" in capsys.readouterr().err


# ---------------------------------------------------------------- layers
def _wmrl_imports(path: Path) -> list[tuple[str, bool]]:
    """(imported wmrl module, whether the import sits inside a function) for every import in ``path``."""
    tree = ast.parse(path.read_text())
    nested = {id(n) for f in ast.walk(tree) if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
              for n in ast.walk(f) if n is not f}
    found = []
    for node in ast.walk(tree):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found += [(n, id(node) in nested) for n in names if n.startswith("wmrl")]
    return found


@pytest.mark.parametrize("package, allowed", [("tasks", ("wmrl.tasks", "wmrl.provenance")),
                                              ("grading", ("wmrl.tasks", "wmrl.grading"))])
def test_tasks_and_grading_import_only_downwards_and_never_inside_a_function(package, allowed):
    for path in sorted((PACKAGE / package).rglob("*.py")):
        for module, in_function in _wmrl_imports(path):
            assert module.startswith(allowed), f"{path.relative_to(PACKAGE)} imports {module}"
            assert not in_function, f"{path.relative_to(PACKAGE)} imports {module} inside a function"
