"""Where the LLM agent's tokens come from during rollouts: one small interface, two engines.

A rollout needs ``generate(contexts, max_new_tokens, seed) -> (completions, logprobs)``: token-id
contexts in (each a whole conversation so far, prompt and earlier turns included), one sampled
continuation per context out, at most ``max_new_tokens`` long (the per-turn budget, the paper's
4096), ending with an end-of-turn token unless the budget ran out. ``logprobs`` is, per
completion, the sampler's log-probability of each generated token (None where the engine does
not report them).

- :class:`TransformersGenerator`: the policy being trained, in this process (CPU tests, small runs).
  Sampling is seeded per call (``seed``) inside a forked RNG, so a resumed run samples what an
  uninterrupted one would have sampled, without touching the trainer's RNG streams. Contexts that
  are the same conversation (a GRPO group's rows, an evaluation's samples of one task) share one
  prefill of it: the prompt's keys and values are computed once and repeated for each row, which on
  a CPU halves the time of a group of eight short plans (the prompt is most of the tokens) and
  samples the same tokens as prefilling each row. It reports no log-probs: the sampler is the policy
  itself, so TRL's importance-sampling correction (a vLLM feature) has nothing to correct.
- :class:`VLLMGenerator`: TRL's vLLM engine (colocate or server mode) on GPUs; TRL keeps its
  weights in sync with the policy before each ``rollout_func`` call. Its per-token log-probs are
  what TRL's ``vllm_importance_sampling_correction`` divides the policy's probabilities by, to
  correct for the numerical gap between the vLLM sampler and the training model. A colocated engine
  samples from the process's default torch generator (vLLM's per-request seeds would give every
  member of a group one sample), so each call seeds it from ``seed`` inside a forked RNG, as the
  in-process generator does: the draws follow the run's seed, not TRL's engine seed (the process
  index), and leave the training's RNG as it was. A server samples in another process, which no
  call can seed. vLLM's kernels are not bit-deterministic, so a vLLM run is reproducible in
  distribution, not bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from typing import Protocol

import torch

from wmrl.config import TrainConfig

__all__ = ["Generator", "TransformersGenerator", "VLLMGenerator"]


class Generator(Protocol):
    def generate(self, contexts: Sequence[list[int]], max_new_tokens: int,
                 seed: int) -> tuple[list[list[int]], list[list[float]] | None]: ...


class TransformersGenerator:
    """Batched sampling from a causal LM (left-padded batches of ``batch_size``).

    ``synced``: the processes sample in step, for a policy whose forward passes are collectives (FSDP
    gathers each layer's shards from every process): each call makes as many ``generate`` calls on
    every process (one that has fewer batches samples a one-token filler and drops it), each running
    until every process's rows have ended (``synced_gpus``), and no conversation is prefilled apart.
    """

    def __init__(self, model, tokenizer, temperature: float = TrainConfig.temperature, top_p: float = 1.0,
                 batch_size: int = 8, synced: bool = False):
        self.model, self.tokenizer = model, tokenizer
        self.temperature, self.top_p, self.batch_size = float(temperature), float(top_p), int(batch_size)
        self.synced = bool(synced)
        eos = tokenizer.eos_token_id
        self.stop_ids = set(eos if isinstance(eos, list) else [eos])
        self.tokens_out = 0  # generated tokens, for the benchmark's tokens per second

    def generate(self, contexts, max_new_tokens, seed):
        """One sample per context; each batch's sampling is seeded by ``seed`` plus its first row's index."""
        out: list[list[int] | None] = [None] * len(contexts)
        batches = self._plan(contexts)
        if self.synced:
            from accelerate.utils import gather_object

            filler = ([], [[min(self.stop_ids)]], False)
            batches += [filler] * (max(gather_object([len(batches)])) - len(batches))
        for rows, part, shared in batches:
            sampled = self._batch(part, max_new_tokens, seed + min(rows, default=0), shared=shared)
            for i, ids in zip(rows, sampled):
                out[i] = ids
        self.tokens_out += sum(len(c) for c in out)
        return out, None

    def _plan(self, contexts) -> list[tuple[list[int], list[list[int]], bool]]:
        """The batches of a call: ``(rows, their contexts, shared)``; rows that are one conversation share a
        prefill of it (unless synced), the rest go in batches of similar length."""
        same: dict[tuple, list[int]] = {}
        for i, c in enumerate(contexts):
            same.setdefault(tuple(c), []).append(i)
        plan, alone = [], []
        for context, rows in same.items():
            if len(rows) < 2 or len(context) < 2 or self.synced:
                alone += rows
                continue
            for start in range(0, len(rows), self.batch_size):  # one prefill of the shared conversation a batch
                part = rows[start:start + self.batch_size]
                plan.append((part, [list(context)] * len(part), True))
        # A batch is padded to its longest context, and one long prompt (a task with many columns) would otherwise
        # make every row of its batch pay for its length.
        alone.sort(key=lambda i: (len(contexts[i]), i))
        for start in range(0, len(alone), self.batch_size):
            part = alone[start:start + self.batch_size]
            plan.append((part, [list(contexts[i]) for i in part], False))
        return plan

    def _batch(self, contexts: list[list[int]], max_new_tokens: int, seed: int, shared: bool = False) -> list[list[int]]:
        """Sample one continuation per context; ``shared``: the contexts are one conversation, prefilled once."""
        pad = self.tokenizer.pad_token_id
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad] * (width - len(c)) + list(c) for c in contexts]).to(self.model.device)
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts]).to(self.model.device)
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.random.fork_rng(devices=[]), torch.inference_mode():
                cache = None
                if shared:  # every token but the last once, repeated per row; generate feeds the last one
                    from transformers import DynamicCache

                    cache = self.model(input_ids=ids[:1, :-1], past_key_values=DynamicCache(config=self.model.config),
                                       use_cache=True).past_key_values
                    cache.batch_repeat_interleave(len(contexts))
                torch.manual_seed(seed)
                sampled = self.model.generate(
                    input_ids=ids, attention_mask=mask, past_key_values=cache,
                    max_new_tokens=max_new_tokens, do_sample=self.temperature > 0, temperature=self.temperature or None,
                    top_p=self.top_p, top_k=0, pad_token_id=pad, eos_token_id=sorted(self.stop_ids),
                    synced_gpus=self.synced)
        finally:
            self.model.train(was_training)
        rows = []
        for row in sampled[:, width:].tolist():
            end = next((i + 1 for i, t in enumerate(row) if t in self.stop_ids), len(row))
            rows.append(row[:end])  # up to and including the end-of-turn token; padding dropped
        return rows


class VLLMGenerator:
    """TRL's vLLM generation (``trainer.vllm_generation``), one continuation per context.

    GPU only. TRL's engine samples up to its ``max_completion_length`` tokens (the GRPO config's,
    which bounds the whole multi-turn completion); each call here lowers that to the turn's
    ``max_new_tokens`` for its duration, so a turn never runs past the per-turn budget. In server
    mode every process must call in step: the rollout calls once per turn on every process, with
    an empty list when it has nothing left, and each sends as many prompts (:meth:`_rows_in_step`).
    """

    def __init__(self, trainer):
        engine = getattr(trainer, "vllm_generation", None)
        if engine is None:
            raise ValueError("VLLMGenerator needs a GRPOTrainer built with use_vllm=True")
        if "max_tokens" in (getattr(engine, "generation_kwargs", None) or {}):
            raise ValueError("GRPOConfig.generation_kwargs sets max_tokens, which would override the per-turn budget "
                             "(llm.max_new_tokens); remove it from generation_kwargs")
        self.engine = engine
        # TRL's importance-sampling correction subtracts the sampler's log-probs: they must come back
        self.need_logprobs = bool(getattr(getattr(trainer, "args", None), "vllm_importance_sampling_correction", False))
        self.tokens_out = 0

    def generate(self, contexts, max_new_tokens, seed):
        engine = self.engine
        contexts = [list(c) for c in contexts]
        rows, filler, seed = self._rows_in_step(contexts, seed)
        if rows == 0:
            return [], []  # nothing to sample anywhere: the engine is not asked for nothing
        padded = contexts + [filler] * (rows - len(contexts))
        budget = engine.max_completion_length
        engine.max_completion_length = int(max_new_tokens)
        try:
            with _seeded(seed if engine.mode == "colocate" else None):
                _, completions, logprobs, token_ids = engine.generate(prompts=padded, images=None, num_generations=1)
        finally:
            engine.max_completion_length = budget
        n = len(contexts)  # the filler rows' samples are dropped
        completions = [list(c) for c in completions[:n]]
        self.tokens_out += sum(len(c) for c in completions)
        if logprobs is None:
            if self.need_logprobs and completions:
                raise RuntimeError("vLLM returned no log-probs, which TRL's vllm_importance_sampling_correction needs; "
                                   "keep the engine's logprobs=0 (TRL's default)")
            return completions, None
        token_ids = token_ids[:n] if token_ids is not None else [None] * n
        return completions, [_sampled_logprobs(ids, lps, tids)
                             for ids, lps, tids in zip(completions, logprobs[:n], token_ids)]

    def _rows_in_step(self, contexts: list[list[int]], seed: int) -> tuple[int, list[int], int]:
        """How many prompts this process sends, the filler prompt that makes up the difference, and the seed
        of the engine's draws (the first peer's: the ranks of a tensor-parallel engine must draw alike).

        TRL's server mode gathers every process's prompts, samples them in one call and hands process
        ``i`` the rows ``i * len(prompts)`` onwards; colocated tensor parallelism slices each rank's share
        the same way. Both assume every process sends as many prompts, which a multi-turn rollout does not
        (a process whose trajectories ended early has fewer rows): so each process sends the largest
        count, its own prompts then copies of a one-token filler, whose samples it drops.
        """
        engine = self.engine
        mine = (len(contexts), contexts[0][:1] if contexts else None, int(seed))
        if engine.mode == "server":
            from accelerate.utils import gather_object

            peers = gather_object([mine])  # every process calls here, in step
        elif getattr(engine, "tensor_parallel_size", 1) > 1:
            import torch.distributed as dist

            peers = [None] * engine.tensor_parallel_size
            dist.all_gather_object(peers, mine, group=engine.tp_group)
        else:
            peers = [mine]  # colocated, one rank per engine: this process's rows alone
        rows = max(count for count, _, _ in peers)
        filler = next((first for _, first, _ in peers if first), [0])
        return rows, filler, peers[0][2]


@contextmanager
def _seeded(seed: int | None):
    """Seed torch's generators (the CPU's and this process's GPU's) for the block, restoring them after;
    nothing for ``None``."""
    if seed is None:
        yield
        return
    import torch

    devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(seed)
        yield


def _sampled_logprobs(ids: list[int], logprobs: list[list], token_ids: list[list[int]] | None) -> list[float | None]:
    """The log-probability of each sampled token, from vLLM's per-position lists sorted by rank.

    With TRL's default (``logprobs=0``) each position holds the sampled token alone; asked for the
    top N, a position holds them and the sampled token too, which need not rank first, so the entry
    is found by its token id. None stays None (vLLM's NaN; TRL then applies no correction there).
    """
    if len(logprobs) != len(ids):
        raise RuntimeError(f"vLLM returned {len(logprobs)} log-probs for a completion of {len(ids)} tokens")
    if token_ids is None:
        return [row[0] for row in logprobs]
    out = []
    for pos, (t, row, ti) in enumerate(zip(ids, logprobs, token_ids)):
        if t not in ti:
            raise RuntimeError(f"vLLM's log-probs at position {pos} do not include the sampled token {t}")
        out.append(row[ti.index(t)])
    return out
