"""Where the world model's tokens come from: one small interface (:mod:`.base`), three engines.

- ``"transformers"``: :class:`TransformersBackend`, any local Hugging Face model in this process,
  with JSON-Schema-constrained decoding; on CPU the default is SmolLM2-135M-Instruct.
- ``"openai"``: :class:`OpenAICompatibleBackend`, a vLLM, SGLang, llama.cpp or llama-cpp-python
  server (or :mod:`wmrl.world_model.serve`), with the structured-output form negotiated per server
  and faults retried, counted and defaulted.
- ``"vllm"``: :class:`VLLMBackend`, vLLM's offline engine on a GPU, with structured outputs.

:func:`make_backend` builds any of them from flat, JSON-friendly settings (what a config file,
the CLI's ``--set`` or a notebook parameter holds).
"""

from __future__ import annotations

from typing import Literal

from wmrl.world_model.backends.base import Backend, BackendSetupError
from wmrl.world_model.backends.local import TransformersBackend
from wmrl.world_model.backends.offline_vllm import VLLMBackend
from wmrl.world_model.backends.openai_server import STRUCTURED_OUTPUT_FORMS, OpenAICompatibleBackend

__all__ = [
    "BACKEND_KINDS",
    "BACKEND_OPTIONS",
    "STRUCTURED_OUTPUT_FORMS",
    "Backend",
    "BackendSetupError",
    "OpenAICompatibleBackend",
    "TransformersBackend",
    "VLLMBackend",
    "make_backend",
]

BACKEND_KINDS = ("transformers", "openai", "vllm")

#: The options each kind takes (``make_backend(kind, model, base_url, **options)``), with their meaning.
BACKEND_OPTIONS: dict[str, dict[str, str]] = {
    "transformers": {
        "gguf_file": "name of the GGUF file inside the `model` folder (or pass the .gguf path as `model`)",
        "device": "torch device, e.g. 'cpu' or 'cuda:0' (default 'cpu')",
        "batch_size": "conversations per generate call (default 8)",
        "seed": "sampling seed when a call brings none (default 0; null: torch's global state)",
        "constrained": "decode replies under their JSON Schema with outlines (default true)",
        "local_files_only": "load weights from disk only, never from a model hub (default true)",
    },
    "openai": {
        "api_key": "sent as 'Authorization: Bearer <api_key>' (default: none)",
        "timeout_s": "seconds one attempt may wait on the socket (default 120)",
        "max_retries": "resends after a transient failure (default 3)",
        "backoff_s": "base of the exponential back-off, full jitter (default 0.5)",
        "max_backoff_s": "cap of one back-off wait (default 30)",
        "max_concurrency": "requests in flight at once (default 8)",
        "structured_output": "'auto' (negotiate), " + ", ".join(repr(f) for f in STRUCTURED_OUTPUT_FORMS),
    },
    "vllm": {
        "max_model_len": "context length of the engine",
        "gpu_memory_utilization": "share of GPU memory vLLM may take",
        "dtype": "weights' dtype, e.g. 'bfloat16'",
        "tensor_parallel_size": "GPUs to shard the model over",
        "seed": "engine seed",
        "engine_options": "any further keyword arguments of vllm.LLM, as a mapping",
    },
}


def make_backend(kind: Literal["transformers", "openai", "vllm"], model: str | None = None,
                 base_url: str | None = None, **options) -> Backend:
    """Build a world-model backend from flat settings.

    Args:
        kind: ``"transformers"`` (in this process), ``"openai"`` (an OpenAI-compatible server at
            ``base_url``) or ``"vllm"`` (vLLM's offline engine, GPU).
        model: transformers: a local model folder or ``.gguf`` file, None for SmolLM2-135M-Instruct;
            openai: the model id the server serves, None for the first one it lists;
            vllm: a local model folder or cached model id (required).
        base_url: the server's URL ending in ``/v1``, e.g. ``http://127.0.0.1:8000/v1``; openai only.
        **options: per kind, the names in :data:`BACKEND_OPTIONS` (``api_key``, ``timeout_s``,
            ``max_retries``, ... for openai; ``device``, ``batch_size``, ``constrained``, ... for
            transformers). How many tokens a reply may have is the world model's
            ``max_new_tokens``, not the backend's.

    Raises:
        ValueError: an unknown kind or option, or a missing / misplaced ``model`` or ``base_url``,
            named in the message with the choices.
    """
    if kind not in BACKEND_KINDS:
        raise ValueError(f"world-model backend kind {kind!r} is not one of {', '.join(BACKEND_KINDS)}: "
                         "'transformers' runs a model in this process, 'openai' talks to a server at base_url, "
                         "'vllm' runs vLLM's offline engine on a GPU")
    unknown = sorted(set(options) - set(BACKEND_OPTIONS[kind]))
    if unknown:
        raise ValueError(f"make_backend(kind={kind!r}) got unknown option(s) {', '.join(map(repr, unknown))}; "
                         f"the options of {kind!r} are: {', '.join(BACKEND_OPTIONS[kind])}")
    if kind != "openai" and base_url is not None:
        raise ValueError(f"base_url={base_url!r} is only for kind='openai' (a server); kind={kind!r} runs the model "
                         "itself. Drop base_url, or set kind='openai'.")
    if kind == "openai":
        if not base_url:
            raise ValueError("kind='openai' needs base_url, the server's URL ending in /v1 "
                             "(e.g. http://127.0.0.1:8000/v1)")
        return OpenAICompatibleBackend(base_url, model, **options)
    if kind == "vllm":
        if not model:
            raise ValueError("kind='vllm' needs model: a local model folder or a cached model id")
        engine = dict(options.pop("engine_options", None) or {})
        return VLLMBackend(model, **engine, **options)
    return TransformersBackend(model, **options)
