"""The compute ledger (wmrl/ledger.py): actual and charged seconds per step and component."""

import pytest

from wmrl.ledger import COMPONENTS, ComputeLedger


def test_ledger_keeps_actual_and_charged_seconds_per_step_and_component():
    ledger = ComputeLedger()
    with ledger.time("generation"):
        sum(range(1000))
    ledger.charge("execution", actual_s=0.01, charged_s=2.0)  # a memo hit charged its real cost
    ledger.charge("execution", actual_s=1.5)
    ledger.end_step()
    ledger.charge("update", 0.2)
    ledger.end_step()
    df = ledger.to_frame()
    assert len(df) == 2 * len(COMPONENTS)
    ex = df[(df.step == 0) & (df.component == "execution")].iloc[0]
    assert ex.actual_s == pytest.approx(1.51) and ex.charged_s == pytest.approx(3.5) and ex["count"] == 2
    gen = df[(df.step == 0) & (df.component == "generation")].iloc[0]
    assert gen.actual_s > 0 and gen.charged_s > 0
    assert ledger.totals().loc["update", "actual_s"] == pytest.approx(0.2)


def test_a_timed_block_is_charged_its_cpu_seconds_not_its_wall_time():
    """Waiting (on a lock, on a busy machine) costs wall time but no compute: charged is the process's CPU time."""
    import time

    ledger = ComputeLedger()
    with ledger.time("update"):
        time.sleep(0.2)
    ledger.end_step()
    row = ledger.to_frame().set_index("component").loc["update"]
    assert row.actual_s >= 0.2 and row.charged_s < 0.05


def test_ledger_refuses_unknown_components_and_negative_time():
    ledger = ComputeLedger()
    with pytest.raises(ValueError, match="unknown component"):
        ledger.charge("coffee", 1.0)
    with pytest.raises(ValueError):
        ledger.charge("update", -1.0)
