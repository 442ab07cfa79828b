"""Where the LLM agent's tokens come from during rollouts: one small interface, two engines.

A rollout needs ``generate(contexts, max_new_tokens, seed) -> (completions, logprobs)``: token-id
contexts in (each a whole conversation so far, prompt and earlier turns included), one sampled
continuation per context out, ending with the end-of-turn token unless the budget ran out.

- :class:`TransformersGenerator`: the policy being trained, in this process (CPU tests, small runs).
  Sampling is seeded per call (``seed``) inside a forked RNG, so a resumed run samples what an
  uninterrupted one would have sampled, without touching the trainer's RNG streams.
- :class:`VLLMGenerator`: TRL's vLLM engine (colocate or server mode) on GPUs; TRL keeps its
  weights in sync with the policy before each ``rollout_func`` call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch

__all__ = ["Generator", "TransformersGenerator", "VLLMGenerator"]


class Generator(Protocol):
    def generate(self, contexts: Sequence[list[int]], max_new_tokens: int,
                 seed: int) -> tuple[list[list[int]], list[list[float]] | None]: ...


class TransformersGenerator:
    """Batched sampling from a causal LM (left-padded batches of ``batch_size``)."""

    def __init__(self, model, tokenizer, temperature: float = 1.0, top_p: float = 1.0, batch_size: int = 8):
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.top_p, self.batch_size = float(temperature), float(top_p), int(batch_size)
        eos = tokenizer.eos_token_id
        self.stop_ids = set(eos if isinstance(eos, list) else [eos])
        self.tokens_out = 0  # generated tokens, for the benchmark's tokens per second

    def generate(self, contexts, max_new_tokens, seed):
        # Batches of similar length: a batch is padded to its longest context, and one long prompt
        # (a task with many columns) would otherwise make every row of its batch pay for its length.
        order = sorted(range(len(contexts)), key=lambda i: len(contexts[i]))
        out: list[list[int] | None] = [None] * len(contexts)
        for start in range(0, len(order), self.batch_size):
            rows = order[start:start + self.batch_size]
            for i, ids in zip(rows, self._batch([list(contexts[i]) for i in rows], max_new_tokens, seed + start)):
                out[i] = ids
        self.tokens_out += sum(len(c) for c in out)
        return out, None

    def _batch(self, contexts: list[list[int]], max_new_tokens: int, seed: int) -> list[list[int]]:
        pad = self.tokenizer.pad_token_id
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad] * (width - len(c)) + list(c) for c in contexts])
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.random.fork_rng(devices=[]), torch.inference_mode():
                torch.manual_seed(seed)
                sampled = self.model.generate(
                    input_ids=ids.to(self.model.device), attention_mask=mask.to(self.model.device),
                    max_new_tokens=max_new_tokens, do_sample=self.temperature > 0, temperature=self.temperature or None,
                    top_p=self.top_p, top_k=0, pad_token_id=pad, eos_token_id=sorted(self.stop_ids))
        finally:
            self.model.train(was_training)
        rows = []
        for row in sampled[:, width:].tolist():
            end = next((i + 1 for i, t in enumerate(row) if t in self.stop_ids), len(row))
            rows.append(row[:end])  # up to and including the end-of-turn token; padding dropped
        return rows


class VLLMGenerator:
    """TRL's vLLM generation (``trainer.vllm_generation``), one continuation per context.

    GPU only. ``max_new_tokens`` is TRL's ``max_completion_length`` (vLLM's per-call budget), so a
    run sets that to the per-turn budget. In server mode every process must call in step: the
    rollout calls once per turn on every process, with an empty list when it has nothing left.
    """

    def __init__(self, trainer):
        if getattr(trainer, "vllm_generation", None) is None:
            raise ValueError("VLLMGenerator needs a GRPOTrainer built with use_vllm=True")
        self.engine = trainer.vllm_generation

    def generate(self, contexts, max_new_tokens, seed):
        _, completions, logprobs, _ = self.engine.generate(prompts=[list(c) for c in contexts], images=None,
                                                           num_generations=1)
        first = [[step[0] for step in row] for row in logprobs] if logprobs is not None else None
        return [list(c) for c in completions], first
