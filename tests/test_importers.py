"""Real competitions load as they are: MLE-Dojo, MLE-bench and DSBench layouts imported in place.

The fixtures in tests/fixtures/competitions mirror each real layout file for file (see its
README.md); their rows are synthetic and few. Each test works on a copy of them in a temporary
folder and checks that importing, grading and training leave that copy unchanged.
"""

from __future__ import annotations

import ast
import importlib.metadata
import math
import re
import shutil
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from test_pool_ownership import FIXTURES, snapshot
from wmrl.experiments.run import run_arm
from wmrl.grading import GradingError, grade, relative_performance_gap
from wmrl.sandbox import Sandbox
from wmrl.tasks import InvalidSubmissionError, get_pool, import_pool
from wmrl.tasks.__main__ import main as import_main
from wmrl.tasks.competition_code import EXTRA_MODULES, install_hint, run_competition_code
from wmrl.tasks.ownership import MARKER

BREEDS = ("affenpinscher", "beagle", "boxer", "pug")
AUTHORS = ("EAP", "HPL", "MWS")
# (source folder, code checkout or None, competitions) of each layout, relative to the fixtures' copy.
LAYOUTS = {
    "mledojo": ("MLE-Dojo/data/prepared", None, ("aerial-cactus-identification", "dog-breed-identification",
                                                 "spaceship-titanic", "spooky-author-identification")),
    "mlebench": ("mle-bench-data", "mle-bench", ("aerial-cactus-identification", "dog-breed-identification",
                                                 "spaceship-titanic", "spooky-author-identification")),
    "dsbench": ("DSBench/data_modeling", None, ("see-click-predict-fix", "spaceship-titanic",
                                                "tabular-playground-series-sep-2021")),
}
# What each competition's files say: category, task type, id, targets, train/test file, kind, direction.
FACTS = {
    "spaceship-titanic": ("tabular", "classification", "PassengerId", ("Transported",), "train.csv", "test.csv",
                          "label", True),
    "spooky-author-identification": ("text", "classification", "id", AUTHORS, "train.csv", "test.csv",
                                     "probability", False),
    "aerial-cactus-identification": ("image", "classification", "id", ("has_cactus",), "train.csv", None,
                                     "probability", True),
    "dog-breed-identification": ("image", "classification", "id", BREEDS, "labels.csv", None, "probability", False),
    "tabular-playground-series-sep-2021": ("tabular", "classification", "id", ("claim",), "train.csv", "test.csv",
                                           "probability", True),
    "see-click-predict-fix": ("text", "regression", "id", ("num_views", "num_votes", "num_comments"), "train.csv",
                              "test.csv", "value", False),
}


@pytest.fixture
def fixtures(tmp_path):
    """A copy of the fixtures: even a bug must not touch the repository's files."""
    return shutil.copytree(FIXTURES, tmp_path / "fixtures")


def import_layout(fixtures: Path, layout: str, out: Path, **kwargs):
    src, code, _ = LAYOUTS[layout]
    return import_pool(layout, fixtures / src, out, code=fixtures / code if code else None,
                       **{"n_train": 1, "n_heldout": 1, **kwargs})


def train_one_smoke_step(pool, out: Path) -> dict:
    """The trainer's API, in one place for when its configuration changes shape."""
    return run_arm("grpo", "smoke", seed=0, out=out, pool=pool, progress=False,
                   overrides={"train.steps": 1, "sandbox.memo": "off"})


def perfect_submission(task, path: Path) -> Path:
    pd.read_csv(task.answers_path)[[task.id_column, *task.targets]].to_csv(path, index=False)
    return path


# ---------------------------------------------------------------- import and load
@pytest.mark.parametrize("layout", LAYOUTS)
def test_import_cli_writes_a_manifest_that_points_at_the_source_and_copies_nothing(layout, fixtures, tmp_path, capsys):
    src, code, names = LAYOUTS[layout]
    before = snapshot(fixtures)
    out = tmp_path / "pool"
    argv = ["import", "--layout", layout, str(fixtures / src), "--out", str(out), "--train", "1", "--heldout", "1"]
    import_main(argv + (["--code", str(fixtures / code)] if code else []))
    assert f"imported {len(names)} of {len(names)} competitions" in capsys.readouterr().out
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "manifest.json"]
    pool = get_pool(out)
    assert sorted(pool.names) == list(names) and pool.manifest["refused"] == []
    for task in pool:
        assert task.public_dir.resolve().is_relative_to((fixtures / src).resolve()), task.public_dir
    assert snapshot(fixtures) == before


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_imported_task_loads_with_what_its_files_say(layout, fixtures, tmp_path):
    pool = get_pool(import_layout(fixtures, layout, tmp_path / "pool").root)
    for task in pool:
        category, task_type, id_column, targets, train, test, kind, higher = FACTS[task.name]
        assert (task.category, task.task_type, task.id_column, task.targets, task.train_file, task.test_file,
                task.metric_kind, task.higher_is_better) == (category, task_type, id_column, targets, train, test,
                                                            kind, higher), task.name
        assert task.scoring.score_kind == ("rpg" if layout == "dsbench" else "percentile")
        assert task.description.startswith("# ") and task.inventory[task.sample_submission_path.name][0] == id_column
        assert not set(task.feature_columns) & {id_column, *targets}
    images = [t for t in pool if t.category == "image"]
    assert all(t.test_file is None for t in images)  # a folder (or zip) of test images instead of test.csv
    assert {t.name: t.image_column for t in images}.get("aerial-cactus-identification", "id") == "id"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_split_follows_the_papers_size_rule_within_each_category(layout, fixtures, tmp_path):
    pool = import_layout(fixtures, layout, tmp_path / "pool")
    by_cat: dict[str, list] = {}
    for task in sorted(pool, key=lambda t: (t.size_bytes, t.name)):
        by_cat.setdefault(task.category, []).append(task.name)
    for ranked in by_cat.values():
        assert [t.name for t in pool.train if t.name in ranked] == ranked[:1]
        assert [t.name for t in pool.heldout if t.name in ranked] == ranked[1:2]
    assert pool.train and pool.heldout


# ---------------------------------------------------------------- grading by the competitions' own code
def _sample_score(name: str, task) -> float:
    """The sample submission's metric, computed here from the fixture's files, independently of its code."""
    answers, sample = pd.read_csv(task.answers_path), pd.read_csv(task.sample_submission_path)
    if name == "spaceship-titanic":
        return float((answers["Transported"] == False).mean())
    if name in ("aerial-cactus-identification", "tabular-playground-series-sep-2021"):
        return float(roc_auc_score(answers[task.targets[0]], sample[task.targets[0]]))
    if name in ("spooky-author-identification", "dog-breed-identification"):
        return math.log(len(task.targets))  # uniform probabilities over the classes
    return float(np.mean([np.sqrt(np.mean((np.log1p(1) - np.log1p(answers[t])) ** 2)) for t in task.targets]))


def _expected(task, raw: float) -> float:
    if task.scoring.score_kind == "rpg":
        return min(1.0, max(0.0, (raw - task.scoring.baseline) / (task.scoring.gt - task.scoring.baseline)))
    fractions = []
    for board in task.board_paths:
        scores = pd.read_csv(board)["score"].to_numpy(float)
        better = (scores > raw) if task.higher_is_better else (scores < raw)
        fractions.append(1 - better.sum() / len(scores))
    return float(np.mean(fractions))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_sample_and_a_perfect_submission_get_the_expected_percentile(layout, fixtures, tmp_path):
    before = snapshot(fixtures)
    pool = get_pool(import_layout(fixtures, layout, tmp_path / "pool").root)
    checked = {rec["name"]: rec["sample_submission"] for rec in pool.manifest["tasks"]}
    for task in pool:
        sample = grade(task, task.sample_submission_path)
        raw = _sample_score(task.name, task)
        assert checked[task.name]["status"] == "ok", checked  # graded once at import, by the same code
        assert checked[task.name]["raw_score"] == pytest.approx(raw, abs=1e-5), (task.name, checked)
        assert sample.status == "ok" and sample.raw_score == pytest.approx(raw, abs=1e-5), (task.name, sample)
        assert sample.percentile == pytest.approx(_expected(task, sample.raw_score)), (task.name, sample)
        assert sample.percentile < 1.0 and sample.score_kind == task.scoring.score_kind
        perfect = grade(task, perfect_submission(task, tmp_path / f"{task.name}.csv"))
        assert perfect.status == "ok" and perfect.percentile == 1.0, (task.name, perfect)
    assert snapshot(fixtures) == before


def test_grading_runs_the_competitions_own_metric_code(fixtures, tmp_path):
    pool = import_layout(fixtures, "mledojo", tmp_path / "pool")
    task = pool["spaceship-titanic"]
    metric = Path(task.scoring.code)
    metric.write_text(metric.read_text().replace("return accuracy_score(", "return 0.6125 or accuracy_score("))
    assert grade(task, task.sample_submission_path).raw_score == 0.6125


def test_dsbench_scores_are_the_relative_performance_gap_never_a_percentile(fixtures, tmp_path):
    task = import_layout(fixtures, "dsbench", tmp_path / "pool")["see-click-predict-fix"]
    g = grade(task, task.sample_submission_path)
    assert g.score_kind == "rpg" and not task.board_paths
    assert g.percentile == pytest.approx(relative_performance_gap(g.raw_score, 0.0, 0.91234)) == 0.0  # worse than baseline
    assert relative_performance_gap(0.5, gt=0.0, baseline=1.0) == 0.5  # lower is better: the sign cancels


def test_a_submission_the_competitions_code_rejects_is_invalid_with_its_message(fixtures, tmp_path):
    pool = import_layout(fixtures, "mlebench", tmp_path / "pool")
    task = pool["dog-breed-identification"]
    pd.read_csv(task.sample_submission_path).drop(columns="pug").to_csv(tmp_path / "bad.csv", index=False)
    g = grade(task, tmp_path / "bad.csv")
    assert (g.status, g.percentile) == ("invalid_submission", 0.0) and "columns for all dogs" in g.reason
    (tmp_path / "garbage.csv").write_bytes(b"\x00\xff\xfe")
    assert grade(task, tmp_path / "garbage.csv").status == "invalid_submission"
    assert grade(task, tmp_path / "nowhere.csv").status == "no_submission"


def test_dsbench_refuses_rows_out_of_order_instead_of_misgrading_them(fixtures, tmp_path):
    task = import_layout(fixtures, "dsbench", tmp_path / "pool")["spaceship-titanic"]
    shuffled = pd.read_csv(perfect_submission(task, tmp_path / "p.csv")).iloc[::-1]
    shuffled.to_csv(tmp_path / "shuffled.csv", index=False)
    g = grade(task, tmp_path / "shuffled.csv")
    assert g.status == "invalid_submission" and "scores rows by position" in g.reason


def test_a_grader_whose_code_cannot_load_raises_instead_of_grading(fixtures, tmp_path):
    task = import_layout(fixtures, "mledojo", tmp_path / "pool")["spooky-author-identification"]
    Path(task.scoring.code).write_text("import a_module_this_python_lacks\n")
    with pytest.raises(GradingError, match="failed to load: ModuleNotFoundError") as failure:
        grade(task, task.sample_submission_path)
    assert "Install the package that provides the module 'a_module_this_python_lacks'" in str(failure.value)
    Path(task.scoring.code).write_text("from math import a_name_math_lacks\n")  # a package at the wrong version
    with pytest.raises(GradingError, match="cannot import name 'a_name_math_lacks'") as failure:
        grade(task, task.sample_submission_path)
    assert "at the versions it needs" in str(failure.value) and "Install the package" not in str(failure.value)


def test_a_grader_running_past_its_limits_is_stopped_and_blames_the_submission(fixtures, tmp_path):
    task = import_layout(fixtures, "mledojo", tmp_path / "pool")["spaceship-titanic"]
    metric = Path(task.scoring.code)
    metric.write_text(metric.read_text().replace("        key = y_true.columns[0]\n", "        while True:\n"
                                                  "            pass\n", 1))
    with pytest.raises(InvalidSubmissionError, match="exceeded the grader's limits"):
        # The CPU limit covers the whole child, importing pandas and scikit-learn included (about 2 s of CPU):
        # the limit leaves loading room to finish, so that only the metric's loop can exceed it.
        run_competition_code(task, task.sample_submission_path, limits={"cpu_s": 8, "wall_s": 60})


def test_a_grader_hanging_while_it_loads_is_stopped_and_blamed_with_its_limits(fixtures, tmp_path):
    task = import_layout(fixtures, "mledojo", tmp_path / "pool")["spaceship-titanic"]
    Path(task.scoring.code).write_text("while True:\n    pass\n")
    with pytest.raises(GradingError, match="died while loading .*'wall_s': 5"):
        run_competition_code(task, task.sample_submission_path, limits={"cpu_s": 60, "wall_s": 5})


# ---------------------------------------------------------------- refused by name
def _drop(path: Path) -> None:
    path.unlink()


def _jsonl_answers(f: Path) -> None:
    """As tensorflow2-question-answering: answers in JSON lines (MLE-bench's load_answers reads them)."""
    config = f / "mle-bench/mlebench/competitions/spooky-author-identification/config.yaml"
    config.write_text(config.read_text().replace("private/test.csv", "private/test.jsonl"))
    (f / "mle-bench-data/spooky-author-identification/prepared/private/test.jsonl").write_text("{}\n")


REFUSALS = {
    "mledojo: no metric code": ("mledojo", "spaceship-titanic", "no metric code",
                                lambda f: _drop(f / "MLE-Dojo/mledojo/competitions/spaceship-titanic/utils/metric.py")),
    "mledojo: no leaderboard": ("mledojo", "dog-breed-identification", "no leaderboard",
                                lambda f: shutil.rmtree(f / "MLE-Dojo/mledojo/competitions/dog-breed-identification/info")),
    "mledojo: direction not literal": (
        "mledojo", "spooky-author-identification", "no literal True/False default",
        lambda f: (p := f / "MLE-Dojo/mledojo/competitions/spooky-author-identification/utils/metric.py").write_text(
            p.read_text().replace("higher_is_better: bool = False", "higher_is_better: bool = 1 < 0"))),
    "mledojo: no answers": ("mledojo", "aerial-cactus-identification", "REQUIRED_PATHS",
                            lambda f: _drop(f / "MLE-Dojo/data/prepared/aerial-cactus-identification/data/private/"
                                                "test_answer.csv")),
    "mlebench: LFS pointer": ("mlebench", "spaceship-titanic", "git-LFS pointer",
                              lambda f: (f / "mle-bench/mlebench/competitions/spaceship-titanic/leaderboard.csv")
                              .write_text("version https://git-lfs.github.com/spec/v1\noid sha256:00\nsize 1\n")),
    "mlebench: JSON-lines answers": ("mlebench", "spooky-author-identification", "not CSV", _jsonl_answers),
    "mlebench: flat leaderboard": (
        "mlebench", "aerial-cactus-identification", "direction cannot be told",
        lambda f: (p := f / "mle-bench/mlebench/competitions/aerial-cactus-identification/leaderboard.csv").write_text(
            pd.read_csv(p).assign(score=0.7).to_csv(index=False))),
    "mlebench: no config": ("mlebench", "dog-breed-identification", "not an MLE-bench competition",
                            lambda f: _drop(f / "mle-bench/mlebench/competitions/dog-breed-identification/config.yaml")),
    "dsbench: GT equals baseline": (
        "dsbench", "spaceship-titanic", "relative performance gap is undefined",
        lambda f: (f / "DSBench/data_modeling/save_performance/baseline/spaceship-titanic/result.txt").write_text("1.0")),
    "dsbench: no baseline": ("dsbench", "see-click-predict-fix", "save_performance.zip",
                             lambda f: _drop(f / "DSBench/data_modeling/save_performance/baseline/see-click-predict-fix/"
                                                 "result.txt")),
    "dsbench: two sample files": (
        "dsbench", "tabular-playground-series-sep-2021", "one sample submission CSV",
        lambda f: (f / "DSBench/data_modeling/data/data_resplit/tabular-playground-series-sep-2021/extra.csv")
        .write_text("a\n1\n")),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_what_wmrl_cannot_grade_is_refused_by_name_and_the_rest_imported(case, fixtures, tmp_path):
    layout, name, reason, damage = REFUSALS[case]
    damage(fixtures)
    pool = import_layout(fixtures, layout, tmp_path / "pool")
    refused = {r["name"]: r["reason"] for r in pool.manifest["refused"]}
    assert list(refused) == [name] and reason in refused[name], refused
    assert sorted(pool.names) == sorted(set(LAYOUTS[layout][2]) - {name})


# ---------------------------------------------------------------- graders that cannot load, refused at import
ABSENT = "wmrl_fixture_module_nobody_installs"
# layout -> (competition, its grading code relative to the fixtures' copy, a line of it that runs only when it grades)
GRADER_FILES = {
    "mledojo": ("spooky-author-identification",
                "MLE-Dojo/mledojo/competitions/spooky-author-identification/utils/metric.py",
                "    def evaluate(self, y_true: pd.DataFrame, y_pred: pd.DataFrame) -> float:"),
    "mlebench": ("dog-breed-identification", "mle-bench/mlebench/competitions/dog-breed-identification/grade.py",
                 "def grade(submission: DataFrame, answers: DataFrame) -> float:"),
    "dsbench": ("see-click-predict-fix", "DSBench/data_modeling/evaluation/see-click-predict-fix_eval.py",
                "answers = pd.read_csv(args.answer_file)"),
}


def _import_cli(fixtures: Path, layout: str, out: Path) -> None:
    src, code, _ = LAYOUTS[layout]
    import_main(["import", "--layout", layout, str(fixtures / src), "--out", str(out), "--train", "1", "--heldout",
                 "1", *(["--code", str(fixtures / code)] if code else [])])


def test_each_module_the_graders_need_is_pinned_in_the_extra_the_refusal_names():
    """EXTRA_MODULES names modules; pyproject.toml's extra of the same name pins the packages providing them."""
    repo = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    provided = importlib.metadata.packages_distributions()

    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    for extra, (_, modules) in EXTRA_MODULES.items():
        pins = {canonical(req.split("==")[0]): req for req in extras[extra]}
        assert all(re.fullmatch(r"[A-Za-z0-9_.-]+==[0-9][0-9A-Za-z.]*", req) for req in pins.values()), pins
        for module in modules:
            assert {canonical(d) for d in provided.get(module, [])} & set(pins), (extra, module, pins)
            for name in (module, f"{module}.submodule"):
                assert f"pip install -e '.[{extra}]'" in install_hint(extra, name)
        assert "pip install -e" not in install_hint(extra, "a_module_no_extra_has")
    assert "pip install -e" not in install_hint("dsbench", "Levenshtein")  # DSBench needs no extra
    makefile = (repo / "Makefile").read_text()
    make_extras = re.search(r"^EXTRAS \?= (\S+)$", makefile, re.MULTILINE).group(1).split(",")
    assert set(EXTRA_MODULES) <= set(make_extras), make_extras  # the tests' venv has what the fixtures import


def test_the_mlebench_fixture_keeps_the_real_import_chain_down_to_py7zr():
    """Each grade.py reaches mlebench/utils.py (which imports py7zr) as the real ones do, so the tests see it."""
    root = FIXTURES / "mle-bench" / "mlebench"

    def imported(path: Path) -> set[str]:
        tree = ast.parse(path.read_text())
        return {n.module if isinstance(n, ast.ImportFrom) else a.name
                for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom) for a in n.names}

    assert "py7zr" in imported(root / "utils.py")
    assert "mlebench.utils" in imported(root / "grade_helpers.py") & imported(root / "competitions" / "utils.py")
    for grade_py in sorted(root.glob("competitions/*/grade.py")):
        assert imported(grade_py) & {"mlebench.competitions.utils", "mlebench.grade_helpers"}, grade_py


def test_the_cli_grades_each_mlebench_sample_with_the_real_import_chain(fixtures, tmp_path, capsys):
    _import_cli(fixtures, "mlebench", tmp_path / "pool")
    out = capsys.readouterr().out
    assert "imported 4 of 4" in out and "sample_score" in out
    pool = get_pool(tmp_path / "pool")
    for rec in pool.manifest["tasks"]:
        expected = _sample_score(rec["name"], pool[rec["name"]])
        assert rec["sample_submission"] == {"status": "ok", "raw_score": pytest.approx(expected, abs=1e-5)}, rec
        assert f"{rec['sample_submission']['raw_score']:.6g}" in out


def test_mlebench_without_py7zr_is_refused_at_import_naming_the_extra_to_install(fixtures, tmp_path, capsys):
    """A Python without py7zr, as the checkout sees it: a py7zr beside mlebench/ that fails as a missing one does."""
    shadow = fixtures / "mle-bench" / "py7zr"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'py7zr'\", name='py7zr')\n")
    with pytest.raises(SystemExit) as stop:
        _import_cli(fixtures, "mlebench", tmp_path / "pool")
    err = capsys.readouterr().err
    assert stop.value.code == 2 and not (tmp_path / "pool" / "manifest.json").exists()
    for name in LAYOUTS["mlebench"][2]:
        assert f"{name}: its grader cannot grade its sample submission" in err, err
    assert err.count("No module named 'py7zr'") == 4 and "pip install -e '.[mlebench]'" in err, err


def _import_absent(path: Path, runs_line: str, at_top: bool) -> None:
    """Make the grading code import a module no Python has: at its top, or only when it grades (as
    mlebench/competitions/utils.py imports tensorflow inside a function)."""
    text = path.read_text()
    if at_top:
        path.write_text(f"import {ABSENT}\n" + text)
        return
    assert runs_line in text, (path, runs_line)
    indent = " " * (len(runs_line) - len(runs_line.lstrip()) + (4 if runs_line.endswith(":") else 0))
    path.write_text(text.replace(runs_line + "\n", f"{runs_line}\n{indent}import {ABSENT}\n", 1))


@pytest.mark.parametrize("at_top", [True, False], ids=["module-level import", "import when it runs"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_grader_that_cannot_import_a_module_is_refused_at_import_by_name(layout, at_top, fixtures, tmp_path):
    name, code, runs_line = GRADER_FILES[layout]
    _import_absent(fixtures / code, runs_line, at_top)
    pool = import_layout(fixtures, layout, tmp_path / "pool")
    refused = {r["name"]: r["reason"] for r in pool.manifest["refused"]}
    assert list(refused) == [name], refused
    assert f"No module named '{ABSENT}'" in refused[name] and str(fixtures / code) in refused[name], refused
    assert f"Install the package that provides the module '{ABSENT}'" in refused[name], refused
    assert sorted(pool.names) == sorted(set(LAYOUTS[layout][2]) - {name})
    assert all(rec["sample_submission"]["status"] == "ok" for rec in pool.manifest["tasks"])


def test_a_metric_whose_direction_when_it_runs_contradicts_its_source_is_refused_at_import(fixtures, tmp_path):
    metric = fixtures / GRADER_FILES["mledojo"][1]
    metric.write_text(metric.read_text().replace("super().__init__(higher_is_better)",
                                                 "super().__init__(not higher_is_better)", 1))
    pool = import_layout(fixtures, "mledojo", tmp_path / "pool")
    refused = {r["name"]: r["reason"] for r in pool.manifest["refused"]}
    assert list(refused) == ["spooky-author-identification"], refused
    assert "higher_is_better is True when it runs but False" in refused["spooky-author-identification"]


def test_a_sample_its_own_code_rejects_is_recorded_and_the_competition_still_imported(fixtures, tmp_path, capsys):
    """DSBench's sample rows need not be the re-split test rows: the grader loads, the sample is merely invalid."""
    sample = fixtures / "DSBench/data_modeling/data/data_resplit/spaceship-titanic/sample_submission.csv"
    sample.write_text("".join(sample.read_text().splitlines(keepends=True)[:3]))
    _import_cli(fixtures, "dsbench", tmp_path / "pool")
    pool = get_pool(tmp_path / "pool")
    rec = next(r for r in pool.manifest["tasks"] if r["name"] == "spaceship-titanic")
    assert not pool.manifest["refused"] and rec["sample_submission"]["status"] == "invalid_submission", rec
    captured = capsys.readouterr()
    assert "invalid (its code rejects it)" in captured.out
    assert "note spaceship-titanic: its own grading code loads but rejects its sample submission" in captured.err


# ---------------------------------------------------------------- running solutions on an imported pool
READ_ANSWERS = """
try:
    print(open({path!r}).read()[:40])
except OSError as exc:
    print("blocked", type(exc).__name__)
"""


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_answers_of_an_imported_task_stay_hidden_from_its_solutions(layout, fixtures, tmp_path, runs_dir):
    task = import_layout(fixtures, layout, tmp_path / "pool").heldout[0]
    result = Sandbox("local", timeout_s=20, base_dir=runs_dir).run(task, READ_ANSWERS.format(path=str(task.answers_path)))
    assert result.status == "no_submission" and "blocked" in result.stdout_tail, result


# ---------------------------------------------------------------- training on an imported pool
@pytest.mark.slow
@pytest.mark.parametrize("layout", [layout if layout == "mledojo" else pytest.param(layout, marks=pytest.mark.extended)
                                    for layout in LAYOUTS])  # one layout in make test: the trainer reads any pool alike
def test_a_pool_imported_from_each_layout_trains_one_smoke_step(layout, fixtures, tmp_path):
    pool = get_pool(import_layout(fixtures, layout, tmp_path / "pool").root)
    before = snapshot(fixtures)
    summary = train_one_smoke_step(pool, tmp_path / "run")
    steps = pd.read_parquet(tmp_path / "run" / "steps.parquet")
    assert len(steps) == 1 and np.isfinite(steps["real_reward"]).all()
    assert 0.0 <= summary["heldout"]["avg"] <= 1.0 and summary["compute"]["execution"]["count"] > 0
    assert snapshot(fixtures) == before  # solutions ran on the source's public files and changed nothing
