"""The LLM agent's weights as a model and tokenizer ready to generate.

The folder they come from is SmolLM2-135M-Instruct dequantised once per machine
(:func:`wmrl.models.smollm2_folder`), or a warm start trained from it.
"""

from __future__ import annotations

import os

__all__ = ["load_causal_lm"]


def load_causal_lm(folder: str | os.PathLike, device: str = "cpu"):
    """``(model, tokenizer)`` from a Hugging Face folder, tokenizer padded on the left for generation."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(folder)).to(device)
    return model, tokenizer
