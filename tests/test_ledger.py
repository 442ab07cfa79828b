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
    assert gen.actual_s > 0 and gen.actual_s == gen.charged_s
    assert ledger.totals().loc["update", "actual_s"] == pytest.approx(0.2)


def test_ledger_refuses_unknown_components_and_negative_time():
    ledger = ComputeLedger()
    with pytest.raises(ValueError, match="unknown component"):
        ledger.charge("coffee", 1.0)
    with pytest.raises(ValueError):
        ledger.charge("update", -1.0)
