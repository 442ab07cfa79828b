"""The LLM presets' measurements: the warm start's own targets, run for real."""

from __future__ import annotations

import pytest

from wmrl.vocabulary import EXECUTION_STATUSES


def test_the_warm_starts_targets_are_the_ones_its_sft_draws_and_each_is_run_in_the_sandbox(pool):
    from wmrl.experiments.llm_bench import target_rate
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.trainer.llm.sft import sft_dataset

    cfg = run_config("sft", "llm-smoke", 0, agent="llm")
    tasks = per_category(pool.train, cfg.train.train_tasks)
    rows = sft_dataset(tasks, cfg.llm.contract, cfg.llm.sft_per_task, 0, cfg.sandbox.timeout_s, cfg.sandbox.memory_mb)

    out = target_rate("llm-smoke", 0, pool)
    assert out["targets"] == len(rows) and sum(out["statuses"].values()) == len(rows)
    assert set(out["per_task"]) == {t.name for t in tasks}
    assert out["runnable_rate"] == pytest.approx(out["statuses"].get("ok", 0) / len(rows))
    assert set(out["statuses"]) <= set(EXECUTION_STATUSES)
