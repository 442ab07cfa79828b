"""JSON-Schema-constrained decoding for a transformers model in this process, by outlines.

Why: a small model asked for a verdict as JSON mostly writes something else (SmolLM2-135M's
replies failed the schema in nearly every check, even after the repair round), and every such
reply becomes a default PASS that carries no information about the code. A logits processor that
masks, at each step, every token that cannot continue a string matching the schema makes each
reply parse by construction, which is what vLLM's and SGLang's structured outputs do on GPUs.

Outlines turns the schema into a regular expression and that into an index over the tokenizer's
vocabulary (outlines-core, in Rust). An index is built once per schema - the eight checks use
three schemas - and its processor is reset before each batch. The regular expression keeps the
schema's key order (``reason`` first), enums, nullability and string lengths; it cannot express a
number's ``minimum``/``maximum``, which :mod:`wmrl.world_model.parse` clamps.
"""

from __future__ import annotations

import json

__all__ = ["JsonSchemaConstraint"]


class JsonSchemaConstraint:
    """Logits processors that keep ``network.generate`` inside a JSON Schema, one per schema, cached."""

    def __init__(self, network, tokenizer):
        try:
            import outlines
        except ImportError:
            raise ImportError("constrained decoding needs outlines: pip install -e '.[llm]' "
                              "(or pass constrained=False to decode freely)") from None
        self._model = outlines.from_transformers(network, tokenizer)
        self._processors: dict[str, object] = {}

    def processors(self, schema: dict):
        """A ``LogitsProcessorList`` for one batch whose replies all follow ``schema``."""
        from outlines.backends import get_json_schema_logits_processor
        from transformers import LogitsProcessorList

        key = json.dumps(schema)  # not sorted: the schema's key order is the order the reply must follow
        if key not in self._processors:
            self._processors[key] = get_json_schema_logits_processor("outlines_core", self._model, key)
        processor = self._processors[key]
        processor.reset()  # a processor follows one batch from its first token
        return LogitsProcessorList([processor])
