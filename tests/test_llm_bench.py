"""The LLM presets' measurements: the warm start's own targets, run for real."""

from __future__ import annotations

import pytest

from wmrl.vocabulary import EXECUTION_STATUSES


def test_the_warm_starts_targets_are_the_ones_its_sft_draws_and_each_is_run_in_the_sandbox(pool):
    from bench.llm_bench import target_rate
    from wmrl.presets import run_config
    from wmrl.runs import per_category
    from wmrl.trainer.components import make_sandbox
    from wmrl.trainer.llm.sft import sft_dataset

    cfg = run_config("sft", "llm-smoke", 0, agent="llm")
    tasks = per_category(pool.train, cfg.train.train_tasks)
    rows = sft_dataset(tasks, cfg.llm.contract, cfg.llm.sft_per_task, 0, make_sandbox(cfg.sandbox).facts)

    out = target_rate("llm-smoke", 0, pool)
    assert out["targets"] == len(rows) and sum(out["statuses"].values()) == len(rows)
    assert set(out["per_task"]) == {t.name for t in tasks}
    assert out["runnable_rate"] == pytest.approx(out["statuses"].get("ok", 0) / len(rows))
    assert set(out["statuses"]) <= set(EXECUTION_STATUSES)


def test_the_targets_command_applies_its_overrides_to_the_warm_start_it_measures(pool, monkeypatch, capsys):
    """`llm_bench targets --set llm.sft_per_task=1` measures the targets that warm start would draw (one per
    task), not the preset's; a bad field is refused with the configuration's own message."""
    import json

    from bench import llm_bench
    from wmrl.config import ConfigError

    monkeypatch.setattr("wmrl.tasks.get_pool", lambda *a, **k: pool)
    assert llm_bench.main(["targets", "--preset", "llm-smoke", "--set", "llm.sft_per_task=1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["targets"] == len(out["per_task"]) >= 1  # one target a task (the preset draws two)
    with pytest.raises(ConfigError, match="sft_per_tsk"):
        llm_bench.main(["targets", "--preset", "llm-smoke", "--set", "llm.sft_per_tsk=1"])
