"""vLLM's offline engine on a GPU, with structured outputs: every reply parses by construction.

vLLM 0.33 constrains decoding through ``SamplingParams(structured_outputs=StructuredOutputsParams(
json=schema))`` (the older ``guided_decoding=GuidedDecodingParams(...)`` is gone); each request
carries its own schema, so one ``chat`` call serves all eight checks.
"""

from __future__ import annotations

import time

from wmrl.world_model.backends.base import per_conversation, per_request_seeds

__all__ = ["VLLMBackend"]


class VLLMBackend:
    """``model``: a local folder or a model id in the local cache; ``engine_options`` go to ``vllm.LLM``
    (e.g. ``gpu_memory_utilization``, ``max_model_len``: ``world_model.*`` of the same names).

    The engine runs in this process, on its current GPU: in a training run, each process's own
    beside its policy, so its memory share must leave the policy room. At paper scale the world model
    is a server on a GPU of its own instead (``world_model.backend="openai"``).
    """

    def __init__(self, model: str, **engine_options):
        try:
            from vllm import LLM
        except ImportError:
            raise ImportError("VLLMBackend needs vLLM on a CUDA machine: pip install -e '.[gpu]'") from None
        self.model = model
        self.llm = LLM(model=model, **engine_options)
        self.server_s = 0.0  # wall seconds of the engine's generate calls

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None,
                 seeds=None) -> list[str | None]:
        from vllm import SamplingParams
        from vllm.sampling_params import StructuredOutputsParams

        params = [SamplingParams(max_tokens=max_new_tokens, temperature=temperature, seed=seed,
                                 structured_outputs=StructuredOutputsParams(json=s) if s is not None else None)
                  for s, seed in zip(per_conversation(json_schema, len(conversations)),
                                     per_request_seeds(seeds, len(conversations)))]
        t0 = time.perf_counter()
        outputs = self.llm.chat([list(c) for c in conversations], sampling_params=params, use_tqdm=False)
        self.server_s += time.perf_counter() - t0  # the GPU's time, which this process's CPU time does not show
        return [output.outputs[0].text for output in outputs]
