"""Repeatability of execution, read off two execution memos: counts and ratios against hand-built ones."""

from __future__ import annotations

import numpy as np
import pytest

from bench.memo_agreement import compare_memos, main, read_memo, summary
from wmrl.sandbox.result import ExecutionResult
from wmrl.trainer.memo import ExecutionMemo


def _ok(cpu_s: float, percentile: float) -> ExecutionResult:
    return ExecutionResult("ok", cpu_s=cpu_s, percentile=percentile)


@pytest.fixture
def memos(tmp_path):
    """Two memos over four scripts: three in both (one ok -> timeout, one rescored, one the same), one in one only."""
    ref, other = ExecutionMemo(tmp_path / "ref.sqlite", "salt"), ExecutionMemo(tmp_path / "run.sqlite", "salt")
    ref.put("t", "near the budget", _ok(1.8, 0.9))
    other.put("t", "near the budget", ExecutionResult("timeout", cpu_s=2.05))
    ref.put("t", "rescored", _ok(1.0, 0.5))
    other.put("t", "rescored", _ok(1.5, 0.6))
    ref.put("t", "same", _ok(0.1, 0.2))  # too short for its CPU ratio to count
    other.put("t", "same", _ok(0.2, 0.2))
    ref.put("t", "only in the reference", _ok(1.0, 0.1))
    return tmp_path / "ref.sqlite", tmp_path / "run.sqlite"


def test_two_memos_agree_on_what_both_executed_and_differ_where_they_do(memos):
    pairs = compare_memos(read_memo(memos[0]), [read_memo(memos[1])])
    s = summary(pairs)
    assert s["executed_twice"] == 3 and s["status_changed"] == 1 and s["ok_twice"] == 2 and s["score_changed"] == 1
    assert s["timed"] == 2  # both executions above MIN_CPU_S: "near the budget" and "rescored"
    ratios = np.array([2.05 / 1.8, 1.5 / 1.0])
    assert s["cpu_ratio_quantiles"][0.5] == pytest.approx(np.quantile(ratios, 0.5), abs=1e-3)


def test_the_cli_prints_the_counts_and_each_changed_status(memos, capsys):
    assert main([str(memos[0]), str(memos[1])]) == 0
    out = capsys.readouterr().out
    assert "3 scripts executed twice; status changed for 1; 1 of the 2 ok both times scored differently" in out
    assert "timeout" in out and "2.05" in out


def test_a_missing_memo_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no execution memo there"):
        read_memo(tmp_path / "absent.sqlite")
