"""The parts of a run, built from its configuration: sandbox, world model, execution memo.

Every trainer builds its sandbox and world model here, from the :class:`~wmrl.config.RunConfig`
sections, so a new backend is one branch in one place and no trainer hard-codes one.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from wmrl.config import RunConfig, SandboxConfig, WorldModelConfig
from wmrl.provenance import REPO
from wmrl.trainer.memo import ExecutionMemo

__all__ = ["data_root", "make_memo", "make_sandbox", "make_world_model"]


def data_root() -> Path:
    """``$WMRL_DATA`` when set, else ``<repo>/data`` (git-ignored): the pool, the memo, model caches."""
    return Path(os.environ["WMRL_DATA"]) if os.environ.get("WMRL_DATA") else REPO / "data"


def make_sandbox(cfg: SandboxConfig):
    """The :class:`wmrl.sandbox.Sandbox` that ``cfg`` describes."""
    from wmrl.sandbox import Sandbox

    return Sandbox(cfg.backend, timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb, executor=cfg.executor,
                   image=cfg.image)


def make_world_model(cfg: WorldModelConfig, sandbox, seed: int, agent_model: str | None = None,
                     llm_options: dict | None = None):
    """The frozen world model of ``cfg``, told the facts of the ``sandbox`` whose outcomes it predicts.

    ``agent_model`` is the agent's own model (a Hugging Face folder): the LLM world model defaults
    to it (the paper's world model is the frozen initial policy); without one, the SmolLM2 GGUF.
    ``llm_options`` are further :class:`~wmrl.world_model.llm.LLMWorldModel` arguments (``mode``, ...).
    """
    if cfg.kind == "static":
        from wmrl.world_model.static import ProgramAnalysisWorldModel

        return ProgramAnalysisWorldModel.for_sandbox(sandbox, temperature=cfg.temperature, seed=seed)
    from wmrl.world_model.backends import TransformersBackend
    from wmrl.world_model.llm import LLMWorldModel

    return LLMWorldModel(TransformersBackend(model=cfg.model or agent_model), temperature=cfg.temperature, seed=seed,
                         time_limit_s=sandbox.limits.timeout_s, **(llm_options or {}))


def make_memo(cfg: RunConfig, pool, path: str | Path | None = None) -> ExecutionMemo | None:
    """The execution memo for ``cfg`` (None when ``sandbox.memo`` is off).

    Its key is salted with the pool's manifest and the sandbox's budget, so a changed task or
    time limit never serves a stale result.
    """
    if not cfg.sandbox.memo:
        return None
    manifest = json.dumps(pool.manifest, sort_keys=True, default=str)
    salt = hashlib.sha256(f"{manifest}|{cfg.sandbox.timeout_s}|{cfg.sandbox.memory_mb}".encode()).hexdigest()[:16]
    return ExecutionMemo(path or data_root() / "memo.sqlite", salt)
