"""The paper's world model: a frozen LLM, prompted to predict what running the code would do.

``LLMWorldModel(backend)`` asks the eight decomposed checks of :mod:`.prompts` (or the single
holistic prompt) for every solution that passes the deterministic :func:`~.base.gate`, in one
batch per round so a serving engine can batch across solutions. Each reply is validated; a bad
one gets one repair round; a reply that is still bad is a ``parse_fail``: it is counted in
``n_parse_fail`` and read as a pass (DEFAULT TO PASS, the same rule the prompt gives the model),
never an exception. A ``fail`` below ``min_fail_confidence`` is read as a pass for the same reason.
The verdicts are aggregated by :func:`~.base.aggregate` into a status and a ladder reward.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wmrl.world_model.base import CHECKS, Prediction, aggregate, gate
from wmrl.world_model.parse import ParsedReply, parse_reply, repair_messages
from wmrl.world_model.prompts import (
    check_messages,
    default_library_versions,
    holistic_messages,
    schema_for,
    system_prompt,
)

__all__ = ["LLMWorldModel"]

MODES = ("decomposed", "holistic")


class LLMWorldModel:
    """Predict execution outcomes with a (frozen) chat model behind any :mod:`.backends` backend.

    ``temperature`` 0.7 is the paper's world-model sampling temperature: the world model's noise
    (xi in r_hat = r + b + xi) is part of what Online Debiasing and IVD are there to absorb.
    ``time_limit_s`` and ``library_versions`` describe the sandbox the prediction is about.
    ``seed`` starts the stream of per-request sampling seeds; the trainer calls :meth:`reseed`
    each step, so that a resumed run asks the backend exactly what an uninterrupted one asked.
    """

    def __init__(self, backend, mode: str = "decomposed", temperature: float = 0.7, max_new_tokens: int = 160,
                 time_limit_s: float = 1200.0, library_versions: dict[str, str] | None = None,
                 min_fail_confidence: float = 0.5, guided: bool = True, seed: int = 0):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not 0.0 <= min_fail_confidence <= 1.0:
            raise ValueError(f"min_fail_confidence must be in [0, 1], got {min_fail_confidence}")
        self.backend, self.mode, self.temperature = backend, mode, float(temperature)
        self.max_new_tokens, self.time_limit_s = int(max_new_tokens), float(time_limit_s)
        self.library_versions = default_library_versions() if library_versions is None else dict(library_versions)
        self.min_fail_confidence, self.guided = float(min_fail_confidence), guided
        self.n_predictions = self.n_gated = self.n_calls = self.n_repairs = self.n_parse_fail = 0
        self.reseed(seed)

    def reseed(self, seed) -> None:
        """Restart the stream of sampling seeds (``seed``: anything ``numpy.random.default_rng`` takes)."""
        self.rng = np.random.default_rng(seed)

    @property
    def parse_fail_rate(self) -> float:
        """Share of checks whose reply stayed unusable after the repair round."""
        asked = self.n_calls - self.n_repairs
        return self.n_parse_fail / asked if asked else 0.0

    def predict(self, task, code: str) -> Prediction:
        return self.predict_many([(task, code)])[0]

    def predict_many(self, items: Sequence[tuple[object, str]]) -> list[Prediction]:
        """Predict a batch: gate first, then every check of every remaining solution in one round."""
        predictions: list[Prediction | None] = []
        jobs = []  # (item index, check, messages)
        for index, (task, code) in enumerate(items):
            gated = gate(code)
            predictions.append(gated)
            if gated is not None:
                self.n_gated += 1
                continue
            system = system_prompt(task, self.library_versions, self.time_limit_s)
            if self.mode == "holistic":
                jobs.append((index, "holistic", holistic_messages(code, system)))
            else:
                jobs.extend((index, check, check_messages(code, check, system)) for check in CHECKS)
        replies = self._ask([(check, messages) for _, check, messages in jobs])
        verdicts: dict[int, list[dict]] = {}
        for (index, check, _), (reply, raw) in zip(jobs, replies):
            verdicts.setdefault(index, []).extend(self._verdicts(check, reply, raw))
        for index, found in verdicts.items():
            predictions[index] = aggregate(found)
        self.n_predictions += len(items)
        return predictions  # type: ignore[return-value]

    def _generate(self, conversations: list[list[dict]], schemas: list[dict]) -> list[str]:
        self.n_calls += len(conversations)
        seeds = self.rng.integers(0, 2**31 - 1, size=len(conversations)).tolist()
        return self.backend.generate(conversations, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                     json_schema=schemas if self.guided else None, seeds=seeds)

    def _ask(self, requests: list[tuple[str, list[dict]]]) -> list[tuple[ParsedReply, str]]:
        """Ask, validate, repair once: one (parsed reply, raw text) per request."""
        if not requests:
            return []
        schemas = [schema_for(check) for check, _ in requests]
        texts = self._generate([messages for _, messages in requests], schemas)
        results = [(parse_reply(text, schema), text) for text, schema in zip(texts, schemas)]
        bad = [i for i, (reply, _) in enumerate(results) if not reply.ok]
        if bad:
            self.n_repairs += len(bad)
            retry = [repair_messages(requests[i][1], results[i][1], results[i][0].errors, schemas[i]) for i in bad]
            for i, text in zip(bad, self._generate(retry, [schemas[i] for i in bad])):
                results[i] = (parse_reply(text, schemas[i]), text)
        return results

    def _verdicts(self, check: str, reply: ParsedReply, raw: str) -> list[dict]:
        """One reply as verdict dicts for :func:`aggregate` (the holistic reply names its failing check)."""
        if not reply.ok:
            self.n_parse_fail += 1
            return [{"check": check, "verdict": "pass", "parse_fail": True,
                     "reason": "unusable reply: " + "; ".join(reply.errors), "raw": raw[:300]}]
        value = dict(reply.value, parse_fail=False)
        if value["verdict"] == "fail" and value["confidence"] < self.min_fail_confidence:
            value.update(verdict="pass", demoted=True)  # DEFAULT TO PASS: an unsure fail is a pass
        if check != "holistic":
            return [dict(value, check=check)]
        quality = {"check": "quality", "verdict": "pass", "quality_bucket": value.pop("quality_bucket"),
                   "parse_fail": False}
        failed = value.pop("failed_check") or "other_runtime"
        return [dict(value, check=failed), quality] if value["verdict"] == "fail" else [quality]
