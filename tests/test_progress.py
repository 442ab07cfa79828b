"""Progress bars are widgets in JupyterLab and plain text under papermill, notebooks carry no warnings, and the
run counter's lines reach the terminal while ``python -m wmrl.reproduce`` trains a notebook.

The papermill test executes a two-cell notebook in a real kernel, as ``make reproduce`` does; the
widget side (a kernel JupyterLab starts) is tested against a real JupyterLab server in
``tests/test_lab.py``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from wmrl.experiments import notebook as nb

papermill = pytest.importorskip("papermill")

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def _outputs_of_a_progress_bar(tmp_path: Path) -> list[dict]:
    src = tmp_path / "bar.ipynb"
    nbformat.write(new_notebook(cells=[
        new_code_cell("from wmrl.experiments import collect  # what the notebooks import"),
        new_code_cell("from wmrl.progress import tqdm\nfor _ in tqdm(range(3), desc='steps'):\n    pass"),
    ]), src)
    out = papermill.execute_notebook(str(src), str(tmp_path / "out.ipynb"), kernel_name=nb.ensure_kernel(),
                                     progress_bar=False)
    return [o for c in out.cells for o in c.outputs]


def test_under_papermill_a_progress_bar_is_plain_text_and_nothing_warns(tmp_path, monkeypatch):
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    outputs = _outputs_of_a_progress_bar(tmp_path)
    assert all(o.output_type == "stream" for o in outputs), [o.output_type for o in outputs]
    text = "".join(o.text for o in outputs)
    assert "steps: 100%" in text and "3/3" in text
    assert "Warning" not in text


@pytest.mark.parametrize("name", sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")))
def test_the_committed_outputs_carry_no_warnings(name):
    """A warning in a committed notebook is noise a reader must learn to ignore (it was a TqdmWarning)."""
    found = []
    for i, cell in enumerate(nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4).cells):
        for out in cell.get("outputs", []):
            text = out.get("text", "") if out.output_type == "stream" else str(out.get("data", {}).get("text/plain", ""))
            found += [f"cell {i}: {line.strip()}" for line in text.splitlines() if "Warning:" in line]
    assert not found, f"{name}.ipynb: " + "; ".join(found)


class _Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_the_run_counter_says_what_is_done_running_and_left_and_scales_the_time_left_by_the_finished_runs():
    import io

    from wmrl.progress import RunCounter

    out, clock = io.StringIO(), _Clock()
    counter = RunCounter(["a seed 0", "b seed 0", "c seed 0"], [100.0, 200.0, None], stream=out, clock=clock)
    counter.start(0)
    clock.now = 50.0  # the first run took half its expected time: the others are expected at half theirs
    counter.finish(0)
    counter.start(1)
    clock.now = 80.0
    assert counter.left_s() == 100.0 - 30.0 + 75.0  # b's 100 s less its 30 s used, c the mean of the known (50, 100)
    lines = out.getvalue().splitlines()
    assert lines[0] == ("[runs] training a seed 0 (1 of 3); left after it: b seed 0, c seed 0; 0 of 3 runs done, "
                        "about 7 min 30 s left")
    assert lines[1] == "[runs] a seed 0 done in 50 s; 1 of 3 runs done, about 2 min 55 s left"
    assert lines[2].startswith("[runs] training b seed 0 (2 of 3); left after it: c seed 0; 1 of 3 runs done")
    assert RunCounter(["x"], [None], stream=out).left_s() is None  # nothing known until a run finishes


def test_what_a_run_takes_beyond_its_record_is_added_to_each_run_left_not_scaled_with_it():
    """A run's record (its summary's wall time) leaves out starting its process and loading its model. Comparing
    elapsed seconds with recorded ones would read that fixed cost of a one-minute run as a machine three times
    slower and scale a twelve-minute run by it; the speed compares records with records and the fixed cost is added."""
    from wmrl.progress import RunCounter

    clock = _Clock()
    counter = RunCounter(["sft seed 0", "grpo seed 0", "wm seed 0"], [60.0, 720.0, None], groups=["sft", "grpo", "wm"],
                         quiet=True, clock=clock)
    counter.start(0)
    clock.now = 200.0  # 66 s of its own, as recorded, and 134 s around it
    counter.finish(0, recorded=66.0)
    grpo = 720.0 * 1.1 + 134.0
    assert counter.left_s() == pytest.approx(grpo + (60.0 * 1.1 + 134.0 + grpo) / 2)  # wm: the mean of the known
    assert counter.left_s() < 720.0 * 200.0 / 60.0  # what scaling by the elapsed time would have said for grpo alone
    counter.recorded.clear()  # no record given: the elapsed seconds are the record, as before
    assert counter.left_s() == pytest.approx(720.0 * 200.0 / 60.0 + (200.0 + 2400.0) / 2)


def test_a_cost_paid_once_in_the_first_run_is_not_added_to_every_run_left():
    """The first run of a batch pays for imports that later runs find done; the fixed cost added to each run left
    is the least any finished run paid, so one run's one-time minutes are not multiplied by the runs left."""
    from wmrl.progress import RunCounter

    clock = _Clock()
    counter = RunCounter([f"a seed {k}" for k in range(4)], [100.0] * 4, quiet=True, clock=clock)
    for i, (elapsed, recorded) in enumerate([(200.0, 100.0), (103.0, 100.0)]):
        counter.start(i)
        clock.now += elapsed
        counter.finish(i, recorded=recorded)
    assert counter.left_s() == pytest.approx(2 * (100.0 + 3.0))  # not 2 * (100 + the mean 51.5)


def test_a_run_no_earlier_run_times_is_expected_to_take_what_its_arms_finished_runs_took():
    from wmrl.progress import RunCounter

    clock = _Clock()
    counter = RunCounter(["a seed 0", "a seed 1", "b seed 0", "b seed 1"], [None] * 4, groups=list("aabb"),
                         quiet=True, clock=clock)
    for i, took in enumerate([10.0, 10.0, 100.0]):
        counter.start(i)
        clock.now += took
        counter.finish(i)
    assert counter.left_s() == 100.0  # b's other seed, not the mean of every finished run (40 s)
    counter.groups = list(range(4))  # no arms given: the mean of every finished run
    assert counter.left_s() == 40.0


def test_a_new_seeds_run_is_expected_to_take_its_arms_recorded_runs_mean(tmp_path):
    """The expected time of a run is its own recorded wall time; a seed not run yet (a new look's) expects the mean
    of its arm's recorded seeds, and an arm with none is unknown."""
    import json

    from wmrl.experiments.collect import expected_seconds

    for seed, wall in ((6, 100.0), (7, 200.0)):
        (tmp_path / "train" / "p" / "grpo" / f"seed{seed}").mkdir(parents=True)
        (tmp_path / "train" / "p" / "grpo" / f"seed{seed}" / "summary.json").write_text(json.dumps({"wall_s": wall}))
    (tmp_path / "train" / "p" / "grpo" / "seed8").mkdir()  # begun, no summary: not counted
    assert expected_seconds("p", "grpo", 7, tmp_path) == 200.0
    assert expected_seconds("p", "grpo", 10, tmp_path) == 150.0
    assert expected_seconds("p", "wm", 10, tmp_path) is None


def test_the_local_path_gives_the_counter_each_runs_recorded_wall_time(tmp_path, monkeypatch, pool):
    from wmrl.experiments import collect
    from wmrl.progress import RunCounter

    given = []
    monkeypatch.setattr(collect, "run_arm", lambda *a, **k: {"wall_s": 7.0})
    monkeypatch.setattr(RunCounter, "finish", lambda self, i, seconds=None, recorded=None: given.append(recorded))
    collect._train_locally([("grpo", 0, tmp_path / "grpo" / "seed0")], "small", {}, 1, False)
    assert given == [7.0]


def test_the_small_pool_is_built_once_before_the_first_run_is_timed(tmp_path, monkeypatch, capsys):
    """On a fresh clone the pool is built at its first use: done inside the first run, its minutes would read as a
    fixed cost of every run and the first time left would be far too long."""
    from wmrl.experiments import collect
    from wmrl.progress import RunCounter

    events = []
    monkeypatch.setattr(collect, "pool_is_current", lambda root: False)
    monkeypatch.setattr(collect, "ensure_pool", lambda root: events.append("pool built"))
    monkeypatch.setattr(collect, "run_arm", lambda *a, **k: events.append("run") or {"wall_s": 1.0})
    monkeypatch.setattr(RunCounter, "start", lambda self, i: events.append("timed"))
    collect._train_locally([(arm, 0, tmp_path / arm / "seed0") for arm in ("grpo", "wmrl")], "small", {}, 1, True)
    assert events == ["pool built", "timed", "run", "timed", "run"]
    assert "[runs] preparing the small task pool in " in capsys.readouterr().err


def _fake_runs_cell(folder: Path) -> str:
    """A cell that trains two runs through collect's local path, each run replaced by a stub."""
    return (f"from pathlib import Path\nfrom wmrl.experiments import collect\n"
            f"collect.run_arm = lambda *a, **k: {{'wall_s': 1.0}}\n"
            f"collect._train_locally([(arm, 0, Path({str(folder)!r}) / arm / 'seed0') for arm in ('untrained', 'wmrl')], "
            f"'small', {{}}, 1, True)")


def test_a_notebook_trained_by_reproduce_shows_its_run_counter_on_the_terminal(tmp_path, monkeypatch, capsys, pool):
    """papermill's cell counter stands still while a notebook trains: wmrl.reproduce passes the kernel's stderr on,
    so the run counter's lines reach the terminal while the cell runs, timed by the committed runs."""
    from wmrl import reproduce

    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    nbformat.write(new_notebook(cells=[new_code_cell("MODE = 'redraw'\nPRESET = 'small'", metadata={"tags": ["parameters"]}),
                                       new_code_cell(_fake_runs_cell(tmp_path / "run"))]), tmp_path / "99_tiny.ipynb")
    monkeypatch.setattr(reproduce, "NOTEBOOKS", tmp_path)
    reproduce.train_notebook("99_tiny", "small", nb.ensure_kernel(), records=tmp_path / "records")
    err = capsys.readouterr().err
    assert "[runs] training untrained seed 0 (1 of 2); left after it: wmrl seed 0; 0 of 2 runs done, about " in err
    assert "[runs] untrained seed 0 done in " in err and "[runs] wmrl seed 0 done in 0 s; all 2 runs done" in err
    assert "Executing" not in err  # papermill's own cell counter is off


def test_the_vla_runs_say_what_is_done_running_and_left_timed_by_the_committed_ones(tmp_path, monkeypatch, capsys):
    from wmrl.vla import runner

    monkeypatch.setattr(runner, "build_sft", lambda *a: None)
    monkeypatch.setattr(runner, "_job", lambda job: f"{job[0].arm} seed {job[0].seed}")
    runner.run_all("small", [0], tmp_path, arms=["grpo", "wmrl"], workers=1)
    err = capsys.readouterr().err
    assert "[runs] 2 to train, 1 at once: vla grpo seed 0, vla wmrl seed 0; 0 of 2 runs done, about " in err
    assert "[runs] training vla wmrl seed 0 (2 of 2); left after it: none; 1 of 2 runs done" in err
    assert "[runs] vla wmrl seed 0 done in 0 s; all 2 runs done" in err



def test_a_long_batch_names_the_next_runs_and_counts_the_rest():
    import io

    from wmrl.progress import NEXT_SHOWN, RunCounter

    out = io.StringIO()
    RunCounter([f"r seed {k}" for k in range(8)], stream=out).start(0)
    assert f"left after it: r seed 1, r seed 2, r seed 3 and {7 - NEXT_SHOWN} more;" in out.getvalue()


def test_a_new_seeds_vla_run_is_expected_to_take_its_arms_committed_runs_mean():
    import json

    from wmrl.vla.config import vla_config
    from wmrl.vla.results import result_path
    from wmrl.vla.runner import _expected_s

    took = []
    for seed in (0, 1, 2):
        timing = json.loads(result_path(None, "small", "wmrl", seed).read_text())["timing"]
        took.append(timing["train_s"] + timing.get("eval_s", 0.0))
        assert _expected_s(vla_config("wmrl", "small", seed, {}), "small", None) == took[-1]
    assert _expected_s(vla_config("wmrl", "small", 7, {}), "small", None) == sum(took) / 3
    assert _expected_s(vla_config("wmrl", "small", 7, {}), "small", "no-such-tag") is None
