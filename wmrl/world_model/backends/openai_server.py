"""Chat completions from the OpenAI-compatible servers people actually run, and their faults survived.

**Structured output, negotiated.** Servers disagree on how a request asks for JSON that follows a
schema (their documentation, checked for this module):

- ``"json_schema"``: ``response_format={"type": "json_schema", "json_schema": {"name", "schema"}}``,
  OpenAI's form. vLLM (which also takes ``structured_outputs={"json": schema}``; its older
  ``guided_json`` field is gone), SGLang and llama.cpp's ``llama-server`` accept it.
- ``"json_object"``: ``response_format={"type": "json_object", "schema": schema}``. llama-cpp-python's
  server accepts only this one (it answers ``json_schema`` with HTTP 500); ``llama-server`` takes it too.
- ``"none"``: no constraint; the schema is only in the prompt, and :mod:`..parse` reads and repairs.

``structured_output="auto"`` tries them in this order. The first request that carries a schema is
sent alone, as a probe; if the server rejects its form (HTTP 4xx, or a 500 whose message names the
request's format), the same request is sent in the next form, and the form that first gets an
answer is kept for the life of the backend. After that a rejection is about that one request
(e.g. a prompt longer than the context) and is never retried.

**Faults.** Connection refused or reset, timeouts, HTTP 408/429/502/503/504, a 500 that does not
name the request's format, and a 200 whose body is not a chat completion are transient: retried
``max_retries`` times after exponential back-off with full jitter (``backoff_s * 2**k``, capped
at ``max_backoff_s``, or the server's ``Retry-After``). A request that stays unanswered, or that
the server rejected, gets no reply (``None``: the world model reads it as a pass); once one request
of a call has used up its retries the server counts as down for the rest of that call, so the
call ends within about ``(max_retries + 1) * timeout_s`` however many requests it holds.
HTTP 401, 403 and 404 are setup errors (:class:`~.base.BackendSetupError`), raised at once.
Everything is counted in :meth:`OpenAICompatibleBackend.stats`, and every failure is logged with
what the server said.

**Thinking.** A verdict is a short JSON reply, so every request asks the chat template not to think
(``chat_template_kwargs={"enable_thinking": False}``: Qwen3's switch, which vLLM, SGLang and
llama.cpp's ``llama-server`` hand to the template; templates without it ignore it). A server that
rejects the field by name (HTTP 4xx naming ``chat_template_kwargs``) gets the same request without
it, and no later request carries it. A server started with a reasoning parser returns what the
model thought in ``reasoning_content`` (or ``reasoning``), apart from ``content``: a reply whose
``content`` is empty but whose reasoning the model finished (``finish_reason`` ``stop``) is read from
the reasoning, where such a parser puts an answer it found no end of thinking in; one cut short
while thinking (``length``) is no usable reply, and ``last_error`` says why. Both are counted
(``reasoning_replies``, ``cut_while_thinking``).

**Cost.** ``server_s`` adds up the wall time of the ``generate`` calls that got any answer: the time
the server worked for this process (the client's own CPU time is a rounding error of it); a call to
a server that answered nothing (down) adds nothing. The server is ``shared``: a run's processes call
the same one, so the run is billed the union of their calls' spans (``server_spans``, wall-clock
start and end of each such call), once per step (:func:`wmrl.ledger.shared_share`), not each
process's sum. Per-request timings that some servers report would count concurrent requests twice,
so they are not used.
"""

from __future__ import annotations

import concurrent.futures
import http.client
import json
import logging
import random
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

from wmrl.config import WorldModelConfig
from wmrl.world_model.backends.base import TEMPLATE_KWARGS, BackendSetupError, per_conversation, per_request_seeds

__all__ = ["STRUCTURED_OUTPUT_FORMS", "OpenAICompatibleBackend"]

log = logging.getLogger(__name__)

#: The structured-output forms in the order ``"auto"`` tries them (see the module docstring).
STRUCTURED_OUTPUT_FORMS = ("json_schema", "json_object", "none")
_TRANSIENT_HTTP = frozenset({408, 429, 502, 503, 504})
_SETUP_HTTP = frozenset({401, 403, 404})
# Words with which servers name the part of a request they cannot take, in a rejection's message.
_FORM_WORDS = ("response_format", "json_schema", "json_object", "schema", "grammar", "structured")
# The fields in which servers with a reasoning parser return the model's thinking, apart from its content.
_REASONING_FIELDS = ("reasoning_content", "reasoning")


class _Transient(Exception):
    """An attempt failed in a way that may pass: retry (after ``retry_after`` seconds if the server said)."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class _Rejected(Exception):
    """The server refused this request as it is: never resend it unchanged."""

    def __init__(self, message: str, about_form: bool, about_template: bool = False):
        super().__init__(message)
        self.about_form = about_form
        self.about_template = about_template


def _server_message(body: bytes) -> str:
    """What the server said: the ``error.message`` (OpenAI, vLLM, llama.cpp), ``detail`` (FastAPI) or the text."""
    text = body.decode(errors="replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return text[:300] or "(empty body)"
    if isinstance(obj, dict):
        error = obj.get("error", obj)
        if isinstance(error, dict):
            message = error.get("message") or error.get("detail") or error.get("msg")
            if message:
                return str(message)[:300]
        elif isinstance(error, str):
            return error[:300]
        if "detail" in obj:
            return json.dumps(obj["detail"])[:300]
    return text[:300]


class OpenAICompatibleBackend:
    """Chat completions from an OpenAI-compatible server, sent concurrently (at most ``max_concurrency``).

    ``base_url`` ends in ``/v1`` (e.g. ``http://127.0.0.1:8000/v1``); ``model`` is the id the server
    serves (None: the first one ``GET /models`` lists). ``structured_output`` is ``"auto"`` or one
    of :data:`STRUCTURED_OUTPUT_FORMS` to skip the negotiation. ``timeout_s`` bounds each socket
    wait of one attempt; ``max_retries`` counts resends after transient failures.
    """

    shared = True  # the run's processes call one server: its time is billed once (module docstring)

    def __init__(self, base_url: str, model: str | None = None, api_key: str | None = None,
                 max_concurrency: int = WorldModelConfig.max_concurrency, timeout_s: float = WorldModelConfig.timeout_s,
                 max_retries: int = WorldModelConfig.max_retries, backoff_s: float = 0.5,
                 max_backoff_s: float = 30.0, structured_output: str = "auto"):
        if structured_output != "auto" and structured_output not in STRUCTURED_OUTPUT_FORMS:
            raise ValueError(f"structured_output={structured_output!r} is not one of "
                             f"{('auto', *STRUCTURED_OUTPUT_FORMS)}; 'auto' negotiates with the server")
        if not str(base_url).startswith(("http://", "https://")):
            raise ValueError(f"base_url={base_url!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1")
        for name, value, least in (("timeout_s", timeout_s, 1e-3), ("max_retries", max_retries, 0),
                                   ("backoff_s", backoff_s, 0), ("max_backoff_s", max_backoff_s, 0),
                                   ("max_concurrency", max_concurrency, 1)):
            if isinstance(value, bool) or not isinstance(value, int | float) or value < least:
                raise ValueError(f"{name}={value!r} is not a number of at least {least}")
        self.base_url = str(base_url).rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model, self.api_key = model, api_key
        self.max_concurrency, self.timeout_s = int(max_concurrency), float(timeout_s)
        self.max_retries, self.backoff_s, self.max_backoff_s = int(max_retries), float(backoff_s), float(max_backoff_s)
        # The forms still to try, best first; settled once one of them got an answer.
        self._forms = list(STRUCTURED_OUTPUT_FORMS) if structured_output == "auto" else [structured_output]
        self._settled = structured_output != "auto"
        self._template_kwargs = True  # False once the server rejected chat_template_kwargs by name
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._jitter = random.Random()  # private: never touches the caller's random state
        self.last_error: str | None = None
        #: wall seconds of the ``generate`` calls so far: the server's time, which a run is charged for it
        self.server_s = 0.0
        self.server_spans: list[tuple[float, float]] = []  # (start, end) wall-clock times of those calls

    @property
    def structured_output(self) -> str:
        """The form requests use now (``"auto"`` negotiation may still change it until one succeeds)."""
        return self._forms[0]

    def stats(self) -> dict[str, int]:
        """Counts since construction: requests, attempts, retries, transient failures, rejected requests,
        requests given up (no reply), form fallbacks, malformed responses, replies read from the
        reasoning field and replies cut short while thinking."""
        keys = ("requests", "attempts", "retries", "transient_failures", "rejected", "no_reply", "form_fallbacks",
                "bad_responses", "reasoning_replies", "cut_while_thinking")
        with self._lock:
            return {key: self._counts[key] for key in keys}

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None,
                 seeds=None) -> list[str | None]:
        t0, start = time.perf_counter(), time.time()
        replies = self._generate(conversations, max_new_tokens, temperature, json_schema, seeds)
        if any(reply is not None for reply in replies):  # the server worked for this call while it lasted
            with self._lock:
                self.server_s += time.perf_counter() - t0
                self.server_spans.append((start, time.time()))
        return replies

    def _generate(self, conversations, max_new_tokens, temperature, json_schema, seeds) -> list[str | None]:
        n = len(conversations)
        jobs = [(list(c), int(max_new_tokens), float(temperature), schema, seed) for c, schema, seed
                in zip(conversations, per_conversation(json_schema, n), per_request_seeds(seeds, n))]
        down = threading.Event()  # set once a request used up its retries: the rest of this call is not sent
        replies: list[str | None] = [None] * n
        pending = list(range(n))
        if not self._settled:  # probe: the first request with a schema settles the form alone
            probe = next((i for i in pending if jobs[i][3] is not None), None)
            if probe is not None:
                replies[probe] = self._request(jobs[probe], down)
                pending.remove(probe)
        with concurrent.futures.ThreadPoolExecutor(max(1, min(self.max_concurrency, len(pending))),
                                                   "wmrl-openai") as pool:
            for i, reply in zip(pending, pool.map(lambda i: self._request(jobs[i], down), pending)):
                replies[i] = reply
        return replies

    # --- one request ------------------------------------------------------------------------------

    def _count(self, key: str, n: int = 1) -> None:
        with self._lock:
            self._counts[key] += n

    def _give_up(self, why: str | None) -> None:
        """Count a request left without a reply; ``why`` (None: the cause was already logged) is logged."""
        self._count("no_reply")
        if why is not None:
            self.last_error = why
            log.warning("world-model request got no reply (its verdict defaults to pass): %s", why)

    def _request(self, job, down: threading.Event) -> str | None:
        """Send one request until it is answered, rejected, or out of retries; None when unanswered."""
        self._count("requests")
        if down.is_set():  # not sent: the server did not answer an earlier request of this call
            self._give_up(None)
            return None
        has_schema = job[3] is not None
        forms, k, attempt = list(self._forms), 0, 0  # forms[k]: the form this request tries now
        while True:
            try:
                text = self._post(self._payload(*job, form=forms[k]))
            except _Rejected as exc:
                if exc.about_template:  # only a request that carried the field: the resend does not
                    with self._lock:
                        first, self._template_kwargs = self._template_kwargs, False
                    if first:
                        log.warning("the server at %s rejected chat_template_kwargs (%s); asking without it, so a "
                                    "reasoning model may think before its verdict", self.base_url, exc)
                    continue  # the same request without the field: not a retry
                if has_schema and exc.about_form and not self._settled and k + 1 < len(forms):
                    self._count("form_fallbacks")
                    log.warning("the server at %s rejected structured output as %r (%s); trying %r",
                                self.base_url, forms[k], exc, forms[k + 1])
                    k += 1  # the same request in the next form: not a retry
                    continue
                self._count("rejected")
                form = f" (structured output as {forms[k]!r})" if has_schema else ""
                self._give_up(f"the server at {self.base_url} rejected the request{form}: {exc}")
                return None
            except _Transient as exc:
                self._count("transient_failures")
                if down.is_set():  # another request of this call already found the server down
                    self._give_up(None)
                    return None
                if attempt >= self.max_retries:
                    down.set()
                    self._give_up(f"the server at {self.base_url} failed {attempt + 1} attempts, last: {exc}. "
                                  f"Is it running? (e.g. `python -m wmrl.world_model.serve --port 8000`)")
                    return None
                time.sleep(self._delay(attempt, exc.retry_after))
                attempt += 1
                self._count("retries")
                continue
            if has_schema and not self._settled:  # the first form that got an answer is kept
                with self._lock:
                    if not self._settled:
                        self._forms, self._settled = forms[k:], True
                        log.info("the server at %s takes structured output as %r", self.base_url, forms[k])
            return text

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Exponential back-off with full jitter, or the server's Retry-After, both capped."""
        if retry_after is not None:
            return min(self.max_backoff_s, max(0.0, retry_after))
        return self._jitter.uniform(0.0, min(self.max_backoff_s, self.backoff_s * 2 ** attempt))

    def _payload(self, conversation, max_new_tokens: int, temperature: float, schema: dict | None,
                 seed: int | None, form: str) -> dict:
        payload = {"model": self._model_id(), "messages": conversation, "max_tokens": max_new_tokens,
                   "temperature": temperature}
        if self._template_kwargs:
            payload["chat_template_kwargs"] = dict(TEMPLATE_KWARGS)
        if seed is not None:  # honoured by vLLM, SGLang and llama.cpp servers (not by wmrl's minimal one)
            payload["seed"] = seed
        if schema is not None and form == "json_schema":
            payload["response_format"] = {"type": "json_schema",
                                          "json_schema": {"name": "verdict", "schema": schema, "strict": True}}
        elif schema is not None and form == "json_object":
            payload["response_format"] = {"type": "json_object", "schema": schema}
        return payload

    def _model_id(self) -> str:
        """``model``, or the first model the server lists (asked once)."""
        if self.model is None:
            listing = self._http("GET", self.base_url + "/models", None)
            try:
                self.model = str(listing["data"][0]["id"])
            except (KeyError, IndexError, TypeError):
                self._count("bad_responses")
                raise _Transient(f"GET {self.base_url}/models did not list a model: {str(listing)[:200]}") from None
        return self.model

    def _post(self, payload: dict) -> str:
        body = self._http("POST", self.url, payload)
        try:
            choice = body["choices"][0]
            message = choice["message"]
            content = message["content"]
        except (KeyError, IndexError, TypeError):
            self._count("bad_responses")
            raise _Transient(f"the answer is not a chat completion: {str(body)[:200]}") from None
        if isinstance(content, str) and content.strip():
            return content
        reasoning = next((message[f] for f in _REASONING_FIELDS if isinstance(message.get(f), str)
                          and message[f].strip()), None)
        if reasoning is None:
            return ""
        if choice.get("finish_reason") == "length":  # the token budget ran out before the answer began
            self._count("cut_while_thinking")
            self.last_error = (f"the server at {self.base_url} returned only the model's thinking, cut at "
                               f"max_tokens={payload.get('max_tokens')}: start it without a reasoning parser, with a "
                               "chat template that honours enable_thinking=False, or raise world_model.max_new_tokens")
            log.warning("world-model reply cut short while thinking (its verdict defaults to pass): %s",
                        self.last_error)
            return ""
        self._count("reasoning_replies")  # the parser found no end of thinking and filed the answer as reasoning
        return reasoning

    def _http(self, method: str, url: str, payload: dict | None):
        """One HTTP exchange: the decoded JSON body, or _Transient / _Rejected / BackendSetupError."""
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if payload is None else json.dumps(payload).encode()
        request = urllib.request.Request(url, data, headers, method=method)
        self._count("attempts")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            raise self._classify(exc.code, _server_message(exc.read()), exc.headers, payload) from exc
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            raise _Transient(f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}") from exc
        try:
            return json.loads(raw)
        except ValueError:
            self._count("bad_responses")
            raise _Transient(f"the answer is not JSON: {raw[:200]!r}") from None

    def _classify(self, code: int, message: str, headers, payload: dict | None) -> Exception:
        said = f"HTTP {code}: {message}"
        if code in _SETUP_HTTP:
            return BackendSetupError(f"{self.base_url} answered {said}. Check base_url (it ends in /v1), model "
                                     f"({self.model!r}) and api_key.")
        names_form = payload is not None and "response_format" in payload and \
            any(word in message.lower() for word in _FORM_WORDS)
        if code in _TRANSIENT_HTTP or (code == 500 and not names_form):
            try:
                retry_after = float(headers.get("Retry-After"))
            except (TypeError, ValueError, AttributeError):
                retry_after = None
            return _Transient(said, retry_after)
        # 4xx: the request as it is; a 5xx that names the format: the format. Before a form is
        # settled, any 4xx of a request carrying a format may be about the format.
        names_template = payload is not None and "chat_template_kwargs" in payload and \
            "chat_template_kwargs" in message.lower()
        return _Rejected(said, about_form=not names_template and (names_form or (400 <= code < 500 and not self._settled)),
                         about_template=names_template)
