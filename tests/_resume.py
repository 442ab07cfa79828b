"""A grammar run killed midway (a simulated kill at its third GRPO step), then resumed from its checkpoint."""

from __future__ import annotations

import pytest

from wmrl.experiments.run import run_arm
from wmrl.trainer.grammar import GRPOLearner


def run_killed_then_resumed(monkeypatch, arm: str, preset: str, seed: int, out, kill_at: int = 3, **kw) -> dict:
    """``run_arm(arm, preset, seed, out, **kw)`` interrupted by KeyboardInterrupt at the ``kill_at``-th
    ``GRPOLearner.step`` call, then run again to its end; returns the resumed run's summary."""
    real_step, calls = GRPOLearner.step, {"n": 0}

    def crash_at(self, *a, **k):
        calls["n"] += 1
        if calls["n"] == kill_at:
            raise KeyboardInterrupt("simulated kill")
        return real_step(self, *a, **k)

    monkeypatch.setattr(GRPOLearner, "step", crash_at)
    with pytest.raises(KeyboardInterrupt):
        run_arm(arm, preset, seed=seed, out=out, **kw)
    monkeypatch.setattr(GRPOLearner, "step", real_step)
    return run_arm(arm, preset, seed=seed, out=out, **kw)
