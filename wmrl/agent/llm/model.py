"""The LLM agent's weights as a model and tokenizer ready to generate, on the configured device.

The folder they come from is SmolLM2-135M-Instruct dequantised once per machine
(:func:`wmrl.models.smollm2_folder`), or a warm start trained from it.
"""

from __future__ import annotations

import os

from wmrl.config import ConfigError, LLMConfig

__all__ = ["llm_device", "load_causal_lm", "training_precision"]


def llm_device(setting: str = LLMConfig.device):
    """The ``torch.device`` of ``llm.device`` for this process.

    ``auto`` is this process's GPU when CUDA sees one, else the CPU; ``cuda`` the same GPU, or an
    error naming the field when there is none; ``cpu`` the CPU. Under several processes (torchrun,
    accelerate launch) a process's GPU is the one of its ``LOCAL_RANK``, as accelerate places it; so
    more processes on a node than it has GPUs are refused here, by name, before accelerate fails on a
    device that does not exist (NCCL also refuses two ranks on one GPU).
    """
    import torch

    if setting not in ("auto", "cuda", "cpu"):
        raise ConfigError(f"llm.device={setting!r} is not valid; choose one of ['auto', 'cuda', 'cpu']")
    if setting == "cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        if setting == "cuda":
            raise ConfigError("llm.device='cuda' but CUDA sees no GPU here; set llm.device to 'auto' or 'cpu'")
        return torch.device("cpu")
    rank, gpus = int(os.environ.get("LOCAL_RANK", "0")), torch.cuda.device_count()
    if rank >= gpus:
        raise ConfigError(f"process {rank} of {os.environ.get('LOCAL_WORLD_SIZE', '?')} on this node has no GPU of its "
                          f"own: CUDA sees {gpus}. Launch at most {gpus} process(es) per node (accelerate launch "
                          "--num_processes), or set llm.device='cpu'")
    return torch.device("cuda", rank)


def training_precision(setting: str = LLMConfig.device) -> dict:
    """The precision keywords of TRL's configs (``bf16``, ``fp16``) for a policy trained on ``llm.device``:
    bf16 mixed precision on a GPU, float32 on the CPU.

    TRL turns bf16 on by default on every device. On a CPU that autocasts the matrix products to bf16,
    which only CPUs with bf16 instructions compute natively (AVX-512 BF16, AMX); elsewhere (an AVX2 CPU)
    torch falls back to a generic kernel about twenty times slower than float32, so the same preset
    would take hours here and minutes there, and compute different numbers on each."""
    gpu = llm_device(setting).type == "cuda"
    return {"bf16": gpu, "fp16": False}


def load_causal_lm(folder: str | os.PathLike, device: str = LLMConfig.device):
    """``(model, tokenizer)`` from a Hugging Face folder on ``device`` (an ``llm.device`` setting, see
    :func:`llm_device`), tokenizer padded on the left for generation."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where = llm_device(device)
    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(folder)).to(where)
    return model, tokenizer
