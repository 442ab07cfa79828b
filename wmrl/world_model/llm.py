"""The paper's world model: a frozen LLM, prompted to predict what running the code would do.

``LLMWorldModel(backend)`` asks the eight decomposed checks of :mod:`.prompts` (or the single
holistic prompt) for every solution that passes the deterministic :func:`~.base.gate`, in one
batch per round so a serving engine can batch across solutions. Each reply is validated; a bad
one gets one repair round; a reply that is still bad is a parse failure, and a request the backend
could not get answered (a server down, stalled or refusing it) has no reply at all. Both are read
as a pass - DEFAULT TO PASS, the same rule the prompt gives the model - and counted, not raised: a
training run logs :meth:`LLMWorldModel.step_stats` each step, and stops
(:class:`DefaultedVerdictsError`) when more than ``max_defaulted_share`` of a step's checks were
defaulted, since its rewards would then be the default's, not the model's. A ``fail`` below
``min_fail_confidence`` is read as a pass for the same reason. The verdicts are aggregated by
:func:`~.base.aggregate` into a status and a ladder reward.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from wmrl.config import WorldModelConfig
from wmrl.sandbox.runner import library_versions as sandbox_library_versions
from wmrl.world_model.base import CHECKS, Prediction, aggregate, gate
from wmrl.world_model.parse import ParsedReply, parse_reply, repair_messages
from wmrl.world_model.prompts import (
    check_messages,
    holistic_messages,
    schema_for,
    system_prompt,
)

__all__ = ["COUNTS", "DefaultedVerdictsError", "LLMWorldModel", "stat_rates"]

MODES = ("decomposed", "holistic")
#: What :meth:`LLMWorldModel.stats` counts: ``requests`` (conversations, repairs included), ``parse_failures``
#: (replies unusable after the repair round), ``no_reply``, ``defaulted`` (verdicts read as a pass for either
#: reason), ``demoted`` (unsure fails read as a pass), ...
COUNTS = ("predictions", "gated", "requests", "repairs", "parse_failures", "no_reply", "defaulted", "demoted")


class DefaultedVerdictsError(RuntimeError):
    """Too many of a step's verdicts defaulted to pass: the world model did not really answer."""


def stat_rates(counts: dict) -> dict[str, float]:
    """The rates of :meth:`LLMWorldModel.stats`' counts, per check asked (a repair is not a second check);
    from counts alone, so a run's summed per-step counts give its rates."""
    checks = counts["requests"] - counts["repairs"]
    return {"parse_failure_rate": counts["parse_failures"] / checks if checks else 0.0,
            "defaulted_rate": counts["defaulted"] / checks if checks else 0.0}


class LLMWorldModel:
    """Predict execution outcomes with a (frozen) chat model behind any :mod:`.backends` backend.

    ``temperature`` 0.7 is the paper's world-model sampling temperature: the world model's noise
    (xi in r_hat = r + b + xi) is part of what Online Debiasing and IVD are there to absorb.
    ``time_limit_s``, ``warm_start`` (scripts start with the common libraries already imported)
    and ``library_versions`` describe the sandbox the prediction is about; ``sandbox`` (its
    :class:`~wmrl.sandbox.SandboxFacts`), when given, describes it whole (budget, backstop,
    memory, cores, GPUs, warm start) and the first two come from it. ``seed`` starts the stream of per-request sampling seeds; the trainer calls :meth:`reseed`
    each step, so that a resumed run asks the backend exactly what an uninterrupted one asked.
    """

    def __init__(self, backend, mode: str = "decomposed", temperature: float = 0.7, max_new_tokens: int = 160,
                 time_limit_s: float = 1200.0, warm_start: bool = False, library_versions: dict[str, str] | None = None,
                 min_fail_confidence: float = 0.5, guided: bool = True, seed: int = 0,
                 max_defaulted_share: float = WorldModelConfig.max_defaulted_share, sandbox=None):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if not 0.0 <= min_fail_confidence <= 1.0:
            raise ValueError(f"min_fail_confidence must be in [0, 1], got {min_fail_confidence}")
        self.backend, self.mode, self.temperature = backend, mode, float(temperature)
        self.max_new_tokens, self.time_limit_s = int(max_new_tokens), float(time_limit_s)
        self.warm_start, self.sandbox = bool(warm_start), sandbox
        if sandbox is not None:
            self.time_limit_s, self.warm_start = float(sandbox.cpu_budget_s), bool(sandbox.warm_start)
        if library_versions is None:
            library_versions = sandbox.library_versions() if sandbox is not None else sandbox_library_versions()
        self.library_versions = dict(library_versions)
        self.min_fail_confidence, self.guided = float(min_fail_confidence), guided
        if not 0.0 <= max_defaulted_share <= 1.0:
            raise ValueError(f"max_defaulted_share must be in [0, 1], got {max_defaulted_share}")
        self.max_defaulted_share = float(max_defaulted_share)
        self._counts: Counter[str] = Counter()
        self._step_mark: dict[str, float] = {}
        self.reseed(seed)

    def reseed(self, seed) -> None:
        """Restart the stream of sampling seeds (``seed``: anything ``numpy.random.default_rng`` takes)."""
        self.rng = np.random.default_rng(seed)

    def stats(self) -> dict[str, float]:
        """Counts since construction (:data:`COUNTS`), the backend's as ``backend_*``, and
        :func:`stat_rates`."""
        counts = {key: self._counts[key] for key in COUNTS}
        backend_stats = getattr(self.backend, "stats", None)
        if callable(backend_stats):
            counts.update({f"backend_{k}": v for k, v in backend_stats().items()})
        return counts | stat_rates(counts)

    def _totals(self) -> dict[str, float]:
        return {k: v for k, v in self.stats().items() if not k.endswith("_rate")}

    def _since_mark(self, now: dict[str, float]) -> dict[str, float]:
        delta = {k: v - self._step_mark.get(k, 0) for k, v in now.items()}
        return delta | stat_rates(delta)

    def pending_stats(self) -> dict[str, float]:
        """The counts since the last :meth:`step_stats`, with their rates, without resetting them."""
        return self._since_mark(self._totals())

    def step_stats(self, check: bool = True) -> dict[str, float]:
        """The counts since the previous call (read and reset), with their rates: one row of a step's log.

        Raises :class:`DefaultedVerdictsError` (unless ``check`` is False) when the share of those
        checks defaulted to pass is above ``max_defaulted_share`` (:meth:`check_defaulted`).
        """
        now = self._totals()
        row, self._step_mark = self._since_mark(now), now
        if check:
            self.check_defaulted(row)
        return row

    def check_defaulted(self, row: dict) -> None:
        """Raise :class:`DefaultedVerdictsError` when ``row`` (a step's counts, as :meth:`pending_stats`
        gives them, or their sum over processes) has more defaulted verdicts than ``max_defaulted_share``,
        saying how many had no reply and what the backend last said."""
        if row["defaulted_rate"] > self.max_defaulted_share:
            checks = row["requests"] - row["repairs"]
            last = getattr(self.backend, "last_error", None)
            raise DefaultedVerdictsError(
                f"the world model's verdicts defaulted to pass for {row['defaulted']} of {checks} checks of this "
                f"step ({row['defaulted_rate']:.0%}, above world_model.max_defaulted_share="
                f"{self.max_defaulted_share:g}): {row['no_reply']} got no reply from the backend, "
                f"{row['parse_failures']} no usable reply" + (f"; the backend last said: {last}" if last else "")
                + ". The run stops rather than train on defaults: fix the world model (is its server running?) and "
                "rerun the same command to resume from the last checkpoint")

    @property
    def server_shared(self) -> bool:
        """Whether the backend is a server the run's processes share, billed once per step from
        :meth:`take_server_spans` instead of per call."""
        return bool(getattr(self.backend, "shared", False))

    def take_server_spans(self) -> list[tuple[float, float]]:
        """The ``(start, end)`` wall-clock times of the shared server's calls since the last take ([] for a backend
        that keeps none)."""
        spans = getattr(self.backend, "server_spans", None)
        if not spans:
            return []
        taken = list(spans)
        del spans[: len(taken)]
        return taken

    @property
    def server_s(self) -> float | None:
        """Seconds the backend's engine worked outside this process's CPU (a server, a GPU); None if it does not
        say (an engine on this CPU: its cost is this process's CPU time)."""
        value = getattr(self.backend, "server_s", None)
        return None if value is None else float(value)

    @property
    def parse_fail_rate(self) -> float:
        """Share of checks whose reply stayed unusable after the repair round (since construction)."""
        return self.stats()["parse_failure_rate"]

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
                self._counts["gated"] += 1
                continue
            system = system_prompt(task, self.library_versions, self.time_limit_s, self.warm_start, sandbox=self.sandbox)
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
        self._counts["predictions"] += len(items)
        return predictions  # type: ignore[return-value]

    def _generate(self, conversations: list[list[dict]], schemas: list[dict]) -> list[str | None]:
        self._counts["requests"] += len(conversations)
        seeds = self.rng.integers(0, 2**31 - 1, size=len(conversations)).tolist()
        return self.backend.generate(conversations, max_new_tokens=self.max_new_tokens, temperature=self.temperature,
                                     json_schema=schemas if self.guided else None, seeds=seeds)

    def _ask(self, requests: list[tuple[str, list[dict]]]) -> list[tuple[ParsedReply | None, str]]:
        """Ask, validate, repair once: one (parsed reply, raw text) per request; (None, "") for no reply."""
        if not requests:
            return []
        schemas = [schema_for(check) for check, _ in requests]
        texts = self._generate([messages for _, messages in requests], schemas)
        results = [(None, "") if text is None else (parse_reply(text, schema), text)
                   for text, schema in zip(texts, schemas)]
        bad = [i for i, (reply, _) in enumerate(results) if reply is not None and not reply.ok]
        if bad:
            self._counts["repairs"] += len(bad)
            retry = [repair_messages(requests[i][1], results[i][1], results[i][0].errors, schemas[i]) for i in bad]
            for i, text in zip(bad, self._generate(retry, [schemas[i] for i in bad])):
                if text is not None:  # no reply to the repair: keep the first, unusable one
                    results[i] = (parse_reply(text, schemas[i]), text)
        return results

    def _verdicts(self, check: str, reply: ParsedReply | None, raw: str) -> list[dict]:
        """One reply as verdict dicts for :func:`aggregate` (the holistic reply names its failing check)."""
        if reply is None or not reply.ok:  # DEFAULT TO PASS: no usable reply is a pass, counted
            self._counts["defaulted"] += 1
            self._counts["no_reply" if reply is None else "parse_failures"] += 1
            reason = "no reply from the backend" if reply is None else "unusable reply: " + "; ".join(reply.errors)
            return [{"check": check, "verdict": "pass", "parse_fail": reply is not None, "no_reply": reply is None,
                     "reason": reason, "raw": raw[:300]}]
        value = dict(reply.value, parse_fail=False)
        if value["verdict"] == "fail" and value["confidence"] < self.min_fail_confidence:
            self._counts["demoted"] += 1
            value.update(verdict="pass", demoted=True)  # DEFAULT TO PASS: an unsure fail is a pass
        if check != "holistic":
            return [dict(value, check=check)]
        quality = {"check": "quality", "verdict": "pass", "quality_bucket": value.pop("quality_bucket"),
                   "parse_fail": False}
        failed = value.pop("failed_check") or "other_runtime"
        return [dict(value, check=failed), quality] if value["verdict"] == "fail" else [quality]
