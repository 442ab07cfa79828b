"""``python -m bench.eval_repeats``: a final policy re-evaluated with fresh draws, at the smoke preset."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from bench import eval_repeats
from wmrl.experiments import noise


@pytest.mark.slow
@pytest.mark.extended
def test_a_retrained_policy_is_evaluated_on_its_own_draws_beside_the_committed_score_and_on_fresh_ones(tmp_path):
    from wmrl.experiments.run import run_arm
    from wmrl.runs import run_dir

    committed = run_arm("grpo", "smoke", seed=0, out=run_dir(tmp_path, "smoke", "grpo", 0), progress=False)
    assert eval_repeats.main(["--arms", "grpo", "--seeds", "0", "--repeats", "2", "--preset", "smoke",
                              "--results", str(tmp_path)]) == 0
    path = tmp_path / "noise" / "smoke" / "eval_repeats.parquet"
    rows = pd.read_parquet(path)
    assert list(rows["repeat"]) == [-1, 0, 1] and list(rows.draws) == [0, eval_repeats.DRAW_BASE, eval_repeats.DRAW_BASE + 1]
    own = rows[rows["repeat"] == -1].iloc[0]
    # The committed score is read, not recomputed; the retrained run's own score may differ from it (CPU-time
    # jitter moves timeouts near the budget, and training follows), so it is only recorded beside it.
    assert own.committed_avg == committed["heldout"]["avg"] and 0.0 <= own.retrained_avg <= 1.0
    assert (tmp_path / "runs" / "eval-repeats" / "smoke" / "grpo" / "seed0" / "summary.json").is_file()
    assert json.loads(path.with_name(path.name + ".provenance.json").read_text())["command"].startswith("python -m bench.eval_repeats")
    runs = pd.DataFrame({"arm": ["grpo", "grpo"], "seed": [0, 1], "avg": [committed["heldout"]["avg"], 0.1]})
    assert noise.repeat_noise(rows, runs).loc["grpo", "evaluations"] == 2


def test_one_evaluation_is_refused():
    with pytest.raises(SystemExit):
        eval_repeats.main(["--repeats", "1"])
