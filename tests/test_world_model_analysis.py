"""The program analysis (wmrl/world_model/analysis/): its predictions are pinned to a fingerprint.

The analysis was one 510-line visitor before it was split into an interpreter core, a pandas
model and a scikit-learn model. The fingerprints below were computed *before* the split, on the
world-model fidelity set (60 scripts drawn by the untrained agent's habits, seed 0, over the
pool's training tasks) and checked after it: a refactoring of the analysis must leave every
prediction, verdict, confidence and finding bit-identical. A change that means to alter the
world model's behaviour updates them, and says so in its commit.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from wmrl.agent.habits import sample_items
from wmrl.world_model.analysis import analyse
from wmrl.world_model.base import gate
from wmrl.world_model.static import ProgramAnalysisWorldModel

#: sha256 of the 60 (task, script) pairs themselves: if this one moves, the agent's grammar or
#: habits (or the pool) changed, not the world model, and the other two cannot be compared.
SCRIPTS_SHA = "5731fa0aa38e63dd3ef0449a7a294b2ea7c70e9df3d76537a8998c0aebb5e5a8"
#: sha256 of every prediction (status, error, line, bucket, score, feedback, all eight verdicts) at
#: temperatures 0.7 and 0, world-model seed 0, a 2 s budget, cold start, of the ``pessimistic``
#: profile, which the default-to-pass profiles (``train_split``, ``tuning_split``) leave as it is.
PREDICTIONS_SHA = "de56b67c3dd936789c24dc39a73cb2b877865ee02f68044750178ebec215840f"
#: sha256 of the analysis' facts (findings with their probabilities, models, fits, sizes).
FACTS_SHA = "79edfe87a1a347db03802fe6594640567c3db18a9783068de0cccd6cc687360e"


@pytest.fixture(scope="module")
def items(pool):
    items = sample_items(pool.train, 60, seed=0)
    digest = hashlib.sha256(json.dumps([(t.name, c) for t, c in items]).encode()).hexdigest()
    if digest != SCRIPTS_SHA:
        pytest.fail("the fixed script set changed (grammar, habits or pool), so the world model's fingerprints "
                    f"cannot be compared: {digest}; recompute all three on the unchanged world model")
    return items


def test_predictions_on_the_fidelity_set_are_bit_identical_to_the_unsplit_analysis(items):
    h = hashlib.sha256()
    for temperature in (0.7, 0.0):
        wm = ProgramAnalysisWorldModel(temperature=temperature, seed=0, time_limit_s=2.0, profile="pessimistic")
        for p in wm.predict_many(items):
            record = [p.status, p.error_type, p.error_line, p.quality_bucket, repr(p.score), p.feedback_text,
                      json.dumps(p.verdicts, sort_keys=True, default=repr)]
            h.update(json.dumps(record).encode())
    assert h.hexdigest() == PREDICTIONS_SHA


def test_the_analysis_facts_on_the_fidelity_set_are_bit_identical_to_the_unsplit_analysis(items):
    h = hashlib.sha256()
    for task, code in items:
        if gate(code) is not None:
            continue
        f = analyse(task, code)
        record = [[(x.check, repr(x.p_fail), x.error_type, x.line, x.reason) for x in f.findings],
                  [(m.cls.__name__, repr(sorted(m.kwargs.items(), key=str)), m.line, m.steps, m.fits) for m in f.models],
                  f.cv_folds, repr(f.subsample), f.image_size, repr(f.vector_size), f.svd, f.wrote_submission,
                  f.pred_kind]
        h.update(json.dumps(record, default=repr).encode())
    assert h.hexdigest() == FACTS_SHA
