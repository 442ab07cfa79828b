"""A world-model server the run's processes share is billed its busy time once per step, not once per caller."""

from __future__ import annotations

import pytest

from wmrl.ledger import ComputeLedger, shared_share
from wmrl.trainer.rollout import Scorer, charge_shared_server


def test_the_shares_of_the_processes_add_up_to_the_union_of_their_calls():
    spans = [[(0.0, 4.0), (6.0, 7.0)], [(1.0, 3.0)], [(2.0, 5.0)]]
    shares = [shared_share(spans, i) for i in range(3)]
    assert sum(shares) == pytest.approx(6.0)  # busy over [0, 5) and [6, 7)
    # [0,1): p0 alone; [1,2): p0, p1; [2,3): all three; [3,4): p0, p2; [4,5): p2; [6,7): p0
    assert shares == pytest.approx([1 + 1 / 2 + 1 / 3 + 1 / 2 + 1, 1 / 2 + 1 / 3, 1 / 3 + 1 / 2 + 1])
    assert shared_share([[(0.0, 2.0), (1.0, 3.0)]], 0) == pytest.approx(3.0)  # one process's overlapping calls
    assert shared_share([[], [(0.0, 1.0)]], 0) == 0.0


class SharedServerWorldModel:
    """A world model behind a shared server: every prediction call kept the server busy over one span."""

    server_shared = True

    def __init__(self, span):
        self.span, self.server_s, self.spans = span, 0.0, []

    def predict_many(self, items):
        self.server_s += self.span[1] - self.span[0]
        self.spans.append(self.span)
        return [None] * len(items)

    def take_server_spans(self):
        taken, self.spans = self.spans, []
        return taken


def test_four_processes_calling_one_server_at_once_are_billed_its_time_once():
    """Four processes each wait 10 s on the same server for the same 10 s: the summed bill is 10 s, not 40."""
    ledgers = [ComputeLedger() for _ in range(4)]
    models = [SharedServerWorldModel((100.0, 110.0)) for _ in range(4)]
    for ledger, wm in zip(ledgers, models):
        Scorer(None, wm, ledger).predict([object()])  # the call itself bills this process's CPU time only
    every = [wm.take_server_spans() for wm in models]
    for me, (ledger, wm) in enumerate(zip(ledgers, models)):
        charge_shared_server(ledger, wm, every, me)
        ledger.end_step()
    billed = ComputeLedger.summed(ledgers).totals().loc["world_model", "charged_s"]
    assert 10.0 <= billed < 10.5  # the server's 10 s once, and the four callers' own CPU time
