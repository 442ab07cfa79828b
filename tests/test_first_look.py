"""``bench.first_look``: it reads the notebooks' report ``wmrl.reproduce`` really prints."""

from __future__ import annotations

import contextlib
import io

import pytest

from bench.first_look import minutes, parse_report
from wmrl import reproduce


def test_the_report_is_read_from_what_wmrl_reproduce_prints():
    runs = [reproduce.NotebookRun("00_theory", train_s=20.94), reproduce.NotebookRun("04_compute", train_s=6.4,
                                                                                    redraw_s=1.25),
            reproduce.NotebookRun("05_world_model_fidelity", "failed", detail="CellExecutionError: boom")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        reproduce._report(runs)
    text = "[runs] all 4 runs done\nnotebook 2 of 5 ...\n" + out.getvalue()
    assert parse_report(text) == [
        {"notebook": "00_theory", "status": "ok", "train_s": 20.9, "redraw_s": None},
        {"notebook": "04_compute", "status": "ok", "train_s": 6.4, "redraw_s": 1.2},
        {"notebook": "05_world_model_fidelity", "status": "failed", "train_s": None, "redraw_s": None}]


def test_an_output_without_the_report_is_refused_by_name():
    with pytest.raises(ValueError, match="no notebook report"):
        parse_report("[runs] training untrained seed 0 (1 of 4)\nKilled\n")


@pytest.mark.parametrize(("seconds", "said"), [(60, 5), (1162, 20), (1330, 20), (1360, 25), (3000, 50)])
def test_a_duration_is_said_in_minutes_to_the_nearest_five(seconds, said):
    assert minutes(seconds) == said
