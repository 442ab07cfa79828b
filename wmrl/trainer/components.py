"""The parts of a run, built from its configuration: sandbox, world model, execution memos.

Every trainer builds its sandbox and world model here, from the :class:`~wmrl.config.RunConfig`
sections, so a new backend is one branch in one place and no trainer hard-codes one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from wmrl.config import RunConfig, SandboxConfig, WorldModelConfig
from wmrl.sandbox import Sandbox
from wmrl.tasks import data_root
from wmrl.trainer.memo import ExecutionMemo
from wmrl.world_model.backends import make_backend
from wmrl.world_model.exploit import ExploitableWorldModel
from wmrl.world_model.llm import LLMWorldModel
from wmrl.world_model.oracle import OracleWorldModel
from wmrl.world_model.static import ProgramAnalysisWorldModel

__all__ = ["make_memo", "make_oracle_memo", "make_sandbox", "make_world_model"]


def make_sandbox(cfg: SandboxConfig):
    """The :class:`wmrl.sandbox.Sandbox` that ``cfg`` describes."""
    return Sandbox(cfg.backend, timeout_s=cfg.timeout_s, memory_mb=cfg.memory_mb, cpus=cfg.cpus,
                   wall_timeout_s=cfg.wall_timeout_s, gpus=cfg.gpus, gpu_devices=cfg.gpu_devices, work_mb=cfg.work_mb,
                   executor=cfg.executor, image=cfg.image)


def make_world_model(cfg: WorldModelConfig, sandbox, seed: int, agent_model: str | None = None, memo=None,
                     workers: int = 1):
    """The frozen world model of ``cfg``, told the facts of the ``sandbox`` whose outcomes it predicts.

    ``agent_model`` is the agent's own model (a Hugging Face folder): the LLM world model defaults
    to it (the paper's world model is the frozen initial policy); without one, the SmolLM2 GGUF.
    ``memo`` and ``workers`` serve the oracle-derived instrument only (``kind="oracle"``): where it
    looks real outcomes up (:func:`make_oracle_memo`) and how many scripts it runs at once.
    ``cfg.exploit`` wraps the model in the exploitable bias of :mod:`wmrl.world_model.exploit`.
    """
    model = _base_world_model(cfg, sandbox, seed, agent_model, memo, workers)
    return model if cfg.exploit == "none" else ExploitableWorldModel(model, cfg.exploit)


def _base_world_model(cfg: WorldModelConfig, sandbox, seed: int, agent_model: str | None, memo, workers: int):
    if cfg.kind == "oracle":
        return OracleWorldModel(sandbox, cfg.oracle_noise, cfg.oracle_distortion, seed=seed, memo=memo,
                                workers=workers)
    if cfg.kind == "static":
        return ProgramAnalysisWorldModel.for_sandbox(sandbox, temperature=cfg.temperature, seed=seed,
                                                     profile=cfg.profile)
    backend = make_backend(cfg.backend, cfg.model or (agent_model if cfg.backend != "openai" else None),
                           cfg.base_url, **_engine_options(cfg))
    facts = sandbox.facts
    return LLMWorldModel(backend, mode=cfg.mode, temperature=cfg.temperature, max_new_tokens=cfg.max_new_tokens,
                         max_defaulted_share=cfg.max_defaulted_share,
                         seed=seed, sandbox=facts)


def _engine_options(cfg: WorldModelConfig) -> dict:
    """The backend's own settings from ``cfg``: the server client's limits, or the offline engine's options."""
    if cfg.backend == "openai":
        return {"timeout_s": cfg.timeout_s, "max_retries": cfg.max_retries, "max_concurrency": cfg.max_concurrency}
    if cfg.backend == "vllm":
        return {name: getattr(cfg, name) for name in ("gpu_memory_utilization", "max_model_len")
                if getattr(cfg, name) is not None}
    return {}


def make_memo(cfg: RunConfig, pool, run_folder: Path, path: str | Path | None = None) -> ExecutionMemo | None:
    """The execution memo of ``cfg.sandbox.memo`` (None when ``off``).

    ``run`` keeps it in the run's own folder (git-ignored, beside the checkpoint), so that a run's
    outcomes depend on its own executions only; ``shared`` keeps one at the data root (or ``path``)
    for every run. Its key is salted with the pool's manifest and the sandbox's budget, so a changed
    task or limit never serves a stale result.
    """
    if cfg.sandbox.memo == "off":
        return None
    where = run_folder / "memo.sqlite" if cfg.sandbox.memo == "run" else Path(path or data_root() / "memo.sqlite")
    return ExecutionMemo(where, _memo_salt(cfg, pool))


def make_oracle_memo(cfg: RunConfig, pool, path: str | Path | None = None) -> ExecutionMemo | None:
    """Where an oracle-derived world model (``world_model.kind="oracle"``) looks real outcomes up.

    One memo shared by every run (``path``, default the data root's, the memo of ``sandbox.memo =
    "shared"``), whatever ``sandbox.memo`` says about the run's own executions: the instrument's
    truth is not the run's cost (it is recorded apart), and the same scripts recur across the
    fidelity levels, arms and seeds of a campaign, so each runs once. None for another world model,
    or when ``sandbox.memo`` is ``off`` (then every lookup executes).
    """
    if cfg.world_model.kind != "oracle" or cfg.sandbox.memo == "off":
        return None
    return ExecutionMemo(Path(path or data_root() / "memo.sqlite"), _memo_salt(cfg, pool))


def _memo_salt(cfg: RunConfig, pool) -> str:
    """The pool's manifest and the sandbox's budget, hashed: a changed task or limit never serves a stale result.
    The manifest's ``build_seconds`` is left out: it says how long this machine took to build the pool, not what
    the pool holds, so the same pool built elsewhere keys the same memo (and replays the same record)."""
    content = {k: v for k, v in pool.manifest.items() if k != "build_seconds"}
    manifest = json.dumps(content, sort_keys=True, default=str)
    budget = f"cpu-budget {cfg.sandbox.timeout_s}|wall {cfg.sandbox.wall_timeout_s}|{cfg.sandbox.memory_mb}"
    return hashlib.sha256(f"{manifest}|{budget}".encode()).hexdigest()[:16]
