"""The campaign benchmark's comparison of two runs' execution memos, on memos written by hand."""

import pytest

from bench.campaign_load import compare_memos, memo_outcomes
from wmrl.trainer.memo import ExecutionMemo


def _memo(path, results: dict):
    memo = ExecutionMemo(path, salt="s")
    for code, (status, limit, percentile) in results.items():
        memo.put("iris", code, {"status": status, "limit": limit, "percentile": percentile, "wall_s": 1.0})
    memo.close()
    return path


def test_only_the_outcome_counts_and_scripts_met_by_one_run_are_counted_apart(tmp_path):
    a = _memo(tmp_path / "a.sqlite", {"x": ("ok", None, 0.5), "y": ("ok", None, 0.7), "z": ("timeout", "cpu", None)})
    b = _memo(tmp_path / "b.sqlite", {"x": ("ok", None, 0.5), "y": ("timeout", "cpu", None), "w": ("ok", None, 0.1)})
    assert len(memo_outcomes(a)) == 3
    report = compare_memos(a, b)
    assert report == {"common": 2, "changed": 1, "changed_share": pytest.approx(0.5), "only_one": 2}
