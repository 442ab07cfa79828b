"""What every world-model engine offers, and what it answers when it cannot answer.

``generate(conversations, max_new_tokens, temperature, json_schema=None, seeds=None)`` takes chat
conversations and returns one reply per conversation, in order. A reply is a string, or ``None``
when the engine got none (a server that stayed down, stalled or rejected the request): the
engine has counted why in its ``stats()``, and the world model reads a missing reply as the
paper's default, a pass. What no retry can fix - a wrong URL, key or model name - is raised as
:class:`BackendSetupError` at once, because defaulting every verdict to PASS would silently turn
a misconfigured run into a run without a world model.

``json_schema`` is one JSON Schema for all conversations or one per conversation; ``seeds``, one
per conversation, make sampling replayable (a resumed run asks the same).

A verdict is a short JSON reply, so an engine that renders a chat template hands it
:data:`TEMPLATE_KWARGS`: no thinking before the answer (Qwen3's ``enable_thinking`` switch;
templates without it ignore it, and render the same prompt).

An engine whose work is done outside this process's CPU (a server, a GPU) keeps ``server_s``, the
wall seconds its ``generate`` calls took: a run is charged those for the world model, not this
process's CPU time, which would show only the waiting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

__all__ = ["TEMPLATE_KWARGS", "Backend", "BackendSetupError", "Conversation", "per_conversation",
           "per_request_seeds"]

Conversation = list[dict]
#: What every world-model request hands the chat template (see the module docstring).
TEMPLATE_KWARGS = {"enable_thinking": False}


class Backend(Protocol):
    def generate(self, conversations: Sequence[Conversation], max_new_tokens: int = 160, temperature: float = 0.7,
                 json_schema: dict | Sequence[dict | None] | None = None,
                 seeds: Sequence[int] | None = None) -> list[str | None]: ...


class BackendSetupError(RuntimeError):
    """The engine cannot work as configured (wrong URL, key, model): fix the configuration."""


def per_conversation(json_schema, n: int) -> list[dict | None]:
    """``json_schema`` (one schema, one per conversation, or None) as one entry per conversation."""
    if json_schema is None or isinstance(json_schema, dict):
        return [json_schema] * n
    schemas = list(json_schema)
    if len(schemas) != n:
        raise ValueError(f"got {len(schemas)} JSON schemas for {n} conversations")
    return schemas


def per_request_seeds(seeds, n: int) -> list[int | None]:
    """``seeds`` (None or one int per conversation) as one entry per conversation."""
    if seeds is None:
        return [None] * n
    seeds = [int(x) for x in seeds]
    if len(seeds) != n:
        raise ValueError(f"got {len(seeds)} seeds for {n} conversations")
    return seeds
