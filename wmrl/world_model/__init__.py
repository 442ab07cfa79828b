"""World models: predict a solution's execution outcome without running it (Sec. 3.2).

Every world model offers ``predict(task, code) -> Prediction`` and ``predict_many(items)``
(docs/CONTRACTS.md). :mod:`.base` holds what they share (the prediction, the deterministic gate,
the aggregation into the reward ladder; the quality buckets and the agent's feedback bucket are
:mod:`wmrl.vocabulary`'s, re-exported here); :mod:`.llm` is the paper's LLM world model, with its
prompts in :mod:`.prompts` and its engines in :mod:`.backends`.
"""

from wmrl.vocabulary import QUALITY_PERCENTILE, feedback_bucket
from wmrl.world_model.backends import (
    BackendSetupError,
    OpenAICompatibleBackend,
    TransformersBackend,
    VLLMBackend,
    make_backend,
)
from wmrl.world_model.base import CHECKS, Prediction, WorldModel, aggregate, feedback_text, gate
from wmrl.world_model.llm import LLMWorldModel
from wmrl.world_model.static import ProgramAnalysisWorldModel

__all__ = [
    "CHECKS",
    "QUALITY_PERCENTILE",
    "BackendSetupError",
    "LLMWorldModel",
    "OpenAICompatibleBackend",
    "Prediction",
    "ProgramAnalysisWorldModel",
    "TransformersBackend",
    "VLLMBackend",
    "WorldModel",
    "aggregate",
    "feedback_bucket",
    "feedback_text",
    "gate",
    "make_backend",
]
