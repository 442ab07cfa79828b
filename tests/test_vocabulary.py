"""The shared vocabulary (wmrl/vocabulary.py): one spelling of statuses, rungs, buckets and families."""

from __future__ import annotations

import pytest

from wmrl.agent import grammar, templates
from wmrl.reward import DEFAULT_LADDER, ladder_reward
from wmrl.sandbox import STATUSES as SANDBOX_STATUSES
from wmrl.sandbox import ExecutionResult
from wmrl.vocabulary import (
    EXECUTION_STATUSES,
    MODEL_FAMILIES,
    QUALITY_BUCKETS,
    QUALITY_PERCENTILE,
    RUNG,
    STATUSES,
    feedback_bucket,
)
from wmrl.world_model import quality


def test_the_sandbox_reports_every_status_but_malformed_and_refuses_others():
    assert SANDBOX_STATUSES == EXECUTION_STATUSES and set(STATUSES) - set(EXECUTION_STATUSES) == {"malformed"}
    with pytest.raises(ValueError, match="malformed"):
        ExecutionResult("malformed")


def test_every_status_has_a_rung_and_the_ladder_pays_the_same_on_one_rung():
    assert set(RUNG) == set(STATUSES)
    for a in STATUSES:
        for b in STATUSES:
            if a != "ok" and b != "ok":
                assert (RUNG[a] == RUNG[b]) == (DEFAULT_LADDER.rung(a) == DEFAULT_LADDER.rung(b)), (a, b)
    # higher rungs pay more: 0 < 0.1 < 0.2 < 0.5 + 0.5 p
    by_rung = sorted({RUNG[s]: ladder_reward(s, 0.0) for s in STATUSES}.items())
    assert [r for _, r in by_rung] == sorted(r for _, r in by_rung) and len(by_rung) == 4


def test_a_bucket_is_the_nearest_bucket_score_to_a_percentile():
    assert tuple(QUALITY_PERCENTILE) == QUALITY_BUCKETS
    for p in [i / 97 for i in range(98)]:  # a grid that misses the midpoints, where either is nearest
        nearest = min(QUALITY_BUCKETS, key=lambda b: abs(QUALITY_PERCENTILE[b] - p))
        assert feedback_bucket(p) == nearest, p


def test_the_agent_and_the_world_model_name_model_families_alike():
    assert grammar.SLOTS[grammar.SLOT_NAMES.index("model")].options == MODEL_FAMILIES
    assert set(templates.MODEL_SPECS) == set(MODEL_FAMILIES)
    assert set(quality.QUALITY_PRIOR) == set(MODEL_FAMILIES)
    assert {family for _, family in quality._FAMILY_OF} <= set(MODEL_FAMILIES)
    assert {key.split(":")[1] for key in quality.QUALITY_WEIGHTS if key.startswith("family:")} <= set(MODEL_FAMILIES)
