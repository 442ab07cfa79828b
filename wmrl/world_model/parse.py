"""From a model's free text to a validated verdict, or a precise list of what is wrong with it.

Models wrap JSON in prose or code fences, write ``"12"`` for 12, ``"Pass"`` for ``"pass"`` and a
confidence of 2 for "certain"; those are read leniently (a number outside its range is clamped to
it), because rejecting them would only measure formatting. What cannot be
read - no JSON object, a missing ``reason`` or ``verdict``, a verdict outside the schema - is an
error, reported back to the model once through :func:`repair_messages`. Keys whose schema admits
``null`` may be left out and read as ``null``; keys the schema does not know are dropped.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

__all__ = ["ParsedReply", "extract_json", "parse_reply", "repair_messages", "validate"]

_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class ParsedReply:
    """A validated reply (``value``) or the reasons there is none (``errors``)."""

    value: dict | None
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.value is not None


def extract_json(text: str) -> dict | None:
    """The first JSON object in ``text`` (prose and code fences around it are ignored)."""
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = _DECODER.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    return None


def _allows_null(spec: dict) -> bool:
    types = spec.get("type")
    return types == "null" or (isinstance(types, list) and "null" in types) or None in spec.get("enum", ())


def _coerce(key: str, value, spec: dict):
    """Return (value, error) for one key under its schema ``spec``."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "null", "none")):
        return (None, None) if _allows_null(spec) else (None, f"{key} must not be null")
    if "enum" in spec:
        value = value.strip().lower() if isinstance(value, str) else value
        return (value, None) if value in spec["enum"] else (None, f"{key} must be one of {spec['enum']}, got {value!r}")
    types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
    if "integer" in types:
        is_int = isinstance(value, int) and not isinstance(value, bool)
        if not (is_int or (isinstance(value, str) and value.strip().isdigit())):
            return None, f"{key} must be an integer or null, got {value!r}"
        return int(value), None
    if "number" in types:
        try:
            number = float(value) if not isinstance(value, bool) else math.nan
        except (TypeError, ValueError):
            number = math.nan
        if math.isnan(number):
            return None, f"{key} must be a number in [{spec.get('minimum')}, {spec.get('maximum')}], got {value!r}"
        return min(max(number, spec.get("minimum", -math.inf)), spec.get("maximum", math.inf)), None
    if isinstance(value, str):
        return value.strip(), None
    return None, f"{key} must be a string, got {type(value).__name__}"


def validate(obj: dict, schema: dict) -> ParsedReply:
    """Check ``obj`` against one of :func:`wmrl.world_model.prompts.schema_for`'s schemas."""
    value, errors = {}, []
    for key, spec in schema["properties"].items():
        if key not in obj and not _allows_null(spec):
            errors.append(f"missing key {key!r}")
            continue
        value[key], error = _coerce(key, obj.get(key), spec)
        if error:
            errors.append(error)
    return ParsedReply(None if errors else value, errors)


def parse_reply(text: str, schema: dict) -> ParsedReply:
    """Extract and validate one reply."""
    obj = extract_json(text or "")
    if obj is None:
        return ParsedReply(None, ["the reply contains no JSON object"])
    return validate(obj, schema)


def repair_messages(messages: list[dict], reply: str, errors: list[str], schema: dict,
                    max_reply_chars: int = 600) -> list[dict]:
    """The conversation extended by the bad reply and one request to fix it."""
    keys = ", ".join(f'"{k}"' for k in schema["properties"])
    ask = (f"Your reply could not be used: {'; '.join(errors)}. Reply again with only one JSON object "
           f"with the keys {keys}, in this order, and nothing else.")
    return [*messages, {"role": "assistant", "content": (reply or "")[:max_reply_chars]},
            {"role": "user", "content": ask}]
