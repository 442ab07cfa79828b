"""World-model backends against real HTTP servers on 127.0.0.1: faults survived, formats negotiated.

Every server here is a real ``http.server`` in a thread of this process (or wmrl's own
``serve.py``, or llama-cpp-python's server when installed), scripted to fail the way real ones
do: refuse, drop, stall, answer 500/503, answer nonsense, or reject a request's form.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import pytest

from wmrl.world_model import CHECKS, BackendSetupError, LLMWorldModel, OpenAICompatibleBackend, make_backend
from wmrl.world_model.backends import BACKEND_OPTIONS
from wmrl.world_model.prompts import schema_for, system_prompt
from wmrl.world_model.serve import make_server

VERDICT = json.dumps({"reason": "fine", "verdict": "pass", "confidence": 0.9, "error_type": None, "error_line": None,
                      "env_feedback": None, "quality_bucket": "mid"})
HI = [[{"role": "user", "content": "hi"}]]


def completion(content: str) -> dict:
    return {"id": "x", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
                                                                  "message": {"role": "assistant", "content": content}}]}


class ScriptedServer(ThreadingHTTPServer):
    """Answers the n-th POST with ``actions[n]`` (the last action repeats); records every payload.

    Actions: ``"ok"`` (a verdict), ``("ok", text)``, ``"drop"`` (close without answering),
    ``("stall", seconds)``, ``(status, message)``, ``(status, message, headers)``, ``("raw", bytes)``
    (a 200 with that body), or a callable ``payload -> action``.
    """

    daemon_threads = True

    def __init__(self, actions):
        super().__init__(("127.0.0.1", 0), _ScriptedHandler)
        self.actions, self.payloads, self.lock = list(actions), [], threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_action(self, payload):
        with self.lock:
            self.payloads.append(payload)
            action = self.actions[min(len(self.payloads), len(self.actions)) - 1]
        return action(payload) if callable(action) else action


class _ScriptedHandler(BaseHTTPRequestHandler):
    server: ScriptedServer

    def log_message(self, *args) -> None:
        pass

    def _reply(self, status: int, body: bytes, headers: dict | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._reply(200, json.dumps({"object": "list", "data": [{"id": "scripted-model"}]}).encode())

    def do_POST(self) -> None:
        payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        action = self.server.next_action(payload)
        if action == "ok":
            action = ("ok", VERDICT)
        if action == "drop":
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif action[0] == "ok":
            self._reply(200, json.dumps(completion(action[1])).encode())
        elif action[0] == "stall":
            time.sleep(action[1])
        elif action[0] == "raw":
            self._reply(200, action[1])
        else:
            status, message, *headers = action
            self._reply(status, json.dumps({"error": {"message": message, "code": status}}).encode(),
                        headers[0] if headers else None)


@pytest.fixture
def serve():
    servers = []

    def start(*actions) -> ScriptedServer:
        server = ScriptedServer(actions)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(url: str, **kwargs) -> OpenAICompatibleBackend:
    return OpenAICompatibleBackend(url, "m", **{"max_retries": 2, "backoff_s": 0.01, "timeout_s": 5, **kwargs})


class StubTask:
    name, category, metric, higher_is_better, n_rows = "iris", "tabular", "accuracy", True, 120
    description = "Predict the species of an iris flower."
    inventory: ClassVar[dict] = {"train.csv": ["id", "species"], "sample_submission.csv": ["id", "species"]}


CODE = "import pandas as pd\nprint(pd.__version__)\n"


# --- faults: down, dropping, stalling, failing, talking nonsense -----------------------------------

def test_a_server_that_is_down_gives_counted_pass_verdicts_within_bounded_time_instead_of_a_crash():
    backend = client(f"http://127.0.0.1:{free_port()}/v1", max_retries=2)
    wm = LLMWorldModel(backend, library_versions={})
    start = time.perf_counter()
    prediction = wm.predict(StubTask(), CODE)
    assert time.perf_counter() - start < 10
    assert prediction.status == "ok" and all(v["no_reply"] for v in prediction.verdicts)
    stats = wm.stats()
    assert (stats["no_reply"], stats["defaulted"], stats["parse_failures"]) == (len(CHECKS), len(CHECKS), 0)
    # the first request used its 3 attempts; the server then counted as down for the rest of the call
    assert (stats["backend_requests"], stats["backend_attempts"], stats["backend_retries"]) == (len(CHECKS), 3, 2)
    assert stats["backend_no_reply"] == len(CHECKS) and stats["defaulted_rate"] == 1.0
    assert "Is it running" in backend.last_error


def test_dropped_connections_and_503s_are_retried_until_the_server_answers(serve):
    server = serve("drop", (503, "loading model"), (500, "CUDA out of memory"), "ok")
    backend = client(server.url, max_retries=3)
    assert backend.generate(HI) == [VERDICT]
    assert backend.stats() | {} == {"requests": 1, "attempts": 4, "retries": 3, "transient_failures": 3,
                                    "rejected": 0, "no_reply": 0, "form_fallbacks": 0, "bad_responses": 0,
                                    "reasoning_replies": 0, "cut_while_thinking": 0}


def test_a_stalled_server_times_out_and_the_request_gets_no_reply_after_its_retries(serve):
    server = serve(("stall", 3.0))
    backend = client(server.url, timeout_s=0.3, max_retries=1)
    start = time.perf_counter()
    assert backend.generate(HI) == [None]
    assert time.perf_counter() - start < 2.5  # two attempts of 0.3 s and a short back-off, not two stalls
    assert (backend.stats()["attempts"], backend.stats()["no_reply"]) == (2, 1)
    assert "timed out" in backend.last_error


def test_back_off_waits_grow_with_jitter_and_honour_retry_after_up_to_the_cap(serve):
    backend = client("http://127.0.0.1:1/v1", backoff_s=1.0, max_backoff_s=5.0)
    delays = [[backend._delay(k, None) for _ in range(200)] for k in range(5)]
    for k, sample in enumerate(delays):
        assert 0 <= min(sample) and max(sample) <= min(5.0, 2 ** k)
        assert len(set(sample)) > 150  # jittered, not a fixed schedule
    assert max(delays[1]) > 1.5 and max(delays[0]) <= 1.0
    assert backend._delay(0, 2.0) == 2.0 and backend._delay(0, 60.0) == 5.0
    server = serve((429, "slow down", {"Retry-After": "0.2"}), "ok")
    start = time.perf_counter()
    assert client(server.url).generate(HI) == [VERDICT] and time.perf_counter() - start >= 0.2


@pytest.mark.parametrize("nonsense", [b"<html>502 Bad Gateway</html>", b'{"result": "no choices here"}',
                                      b'{"choices": []}', b"[1, 2, 3]"])
def test_a_server_answering_nonsense_is_retried_then_counted_and_defaulted(serve, nonsense):
    server = serve(("raw", nonsense))
    wm = LLMWorldModel(client(server.url, max_retries=1), mode="holistic", library_versions={})
    prediction = wm.predict(StubTask(), CODE)
    stats = wm.stats()
    assert prediction.status == "ok"
    assert (stats["backend_bad_responses"], stats["backend_attempts"], stats["no_reply"]) == (2, 2, 1)


def test_a_chat_completion_whose_content_is_not_a_verdict_is_a_counted_parse_failure_not_a_transport_fault(serve):
    server = serve(("ok", "I think it is fine!"))
    wm = LLMWorldModel(client(server.url), mode="holistic", library_versions={})
    wm.predict(StubTask(), CODE)
    stats = wm.stats()
    assert (stats["parse_failures"], stats["no_reply"], stats["repairs"], stats["backend_retries"]) == (1, 0, 1, 0)
    assert stats["parse_failure_rate"] == 1.0


def test_step_stats_read_and_reset_the_counts_of_one_step(serve):
    server = serve("ok")
    wm = LLMWorldModel(client(server.url), library_versions={})
    wm.predict(StubTask(), CODE)
    first = wm.step_stats()
    assert (first["predictions"], first["requests"], first["backend_attempts"]) == (1, len(CHECKS), len(CHECKS))
    assert wm.step_stats()["requests"] == 0
    wm.predict_many([(StubTask(), CODE), (StubTask(), "")])
    second = wm.step_stats()
    assert (second["predictions"], second["gated"], second["requests"]) == (2, 1, len(CHECKS))
    assert wm.stats()["predictions"] == 3  # the cumulative counts are untouched


# --- rejected requests are never retried -----------------------------------------------------------

def test_a_request_the_server_rejects_is_not_retried_and_the_error_says_what_the_server_said(serve):
    too_long = "This model's maximum context length is 2048 tokens. However, you requested 9000 tokens."
    server = serve("ok", (400, too_long))
    backend = client(server.url, structured_output="json_schema")
    assert backend.generate(HI, json_schema=schema_for("quality")) == [VERDICT]
    assert backend.generate(HI, json_schema=schema_for("quality")) == [None]
    assert (backend.stats()["attempts"], backend.stats()["rejected"], backend.stats()["retries"]) == (2, 1, 0)
    assert "maximum context length is 2048" in backend.last_error and "HTTP 400" in backend.last_error


@pytest.mark.parametrize("status", [401, 403, 404])
def test_a_wrong_key_url_or_model_is_a_setup_error_raised_at_once(serve, status):
    server = serve((status, "The model `qwen` does not exist."))
    with pytest.raises(BackendSetupError, match=rf"HTTP {status}: The model `qwen` does not exist.*api_key"):
        client(server.url).generate(HI)
    assert len(server.payloads) == 1


# --- structured output negotiated per server ----------------------------------------------------------

def llama_cpp_python_like(payload):
    """What llama-cpp-python's server does: OpenAI's json_schema form is an HTTP 500; json_object + schema works."""
    form = payload.get("response_format", {}).get("type")
    if form == "json_schema":
        return 500, "1 validation error: response_format.type Input should be 'text' or 'json_object'"
    return "ok"


def test_a_server_that_takes_only_json_object_with_a_schema_is_found_by_one_probe_and_remembered(serve):
    server = serve(llama_cpp_python_like)
    backend = client(server.url)
    schemas = [schema_for(check) for check in CHECKS]
    assert backend.generate(HI * len(CHECKS), json_schema=schemas) == [VERDICT] * len(CHECKS)
    forms = [p.get("response_format", {}).get("type") for p in server.payloads]
    assert forms == ["json_schema"] + ["json_object"] * len(CHECKS)  # one probe, one fallback, no retries
    assert server.payloads[1]["response_format"]["schema"] == schemas[0]
    assert backend.structured_output == "json_object"
    assert backend.stats() | {} == {"requests": 8, "attempts": 9, "retries": 0, "transient_failures": 0,
                                    "rejected": 0, "no_reply": 0, "form_fallbacks": 1, "bad_responses": 0,
                                    "reasoning_replies": 0, "cut_while_thinking": 0}
    backend.generate(HI, json_schema=schemas[0])
    assert server.payloads[-1]["response_format"]["type"] == "json_object"


def test_a_server_that_takes_no_response_format_falls_back_to_the_prompt_alone(serve):
    server = serve(lambda p: (400, "unknown field: response_format") if "response_format" in p else "ok")
    backend = client(server.url)
    assert backend.generate(HI, json_schema=schema_for("quality")) == [VERDICT]
    assert [("response_format" in p) for p in server.payloads] == [True, True, False]
    assert backend.structured_output == "none"


def test_a_server_that_takes_openais_form_keeps_it_and_requests_without_a_schema_carry_none(serve):
    server = serve("ok")
    backend = client(server.url)
    backend.generate(HI * 3, json_schema=[schema_for("quality"), None, schema_for("api_calls")])
    sent = sorted(server.payloads, key=lambda p: "response_format" in p)
    assert "response_format" not in sent[0]
    assert all(p["response_format"]["json_schema"]["schema"]["type"] == "object" for p in sent[1:])
    assert backend.structured_output == "json_schema" and backend.stats()["form_fallbacks"] == 0


def test_a_content_rejection_while_probing_does_not_change_the_form(serve):
    server = serve(lambda p: (400, "prompt too long") if len(p["messages"][0]["content"]) > 10 else "ok")
    backend = client(server.url)
    long_one = [[{"role": "user", "content": "x" * 50}]]
    assert backend.generate(long_one, json_schema=schema_for("quality")) == [None]  # every form refused: content
    assert backend.generate(HI, json_schema=schema_for("quality")) == [VERDICT]
    assert server.payloads[-1]["response_format"]["type"] == "json_schema"


def test_model_none_asks_the_server_which_model_it_serves(serve):
    server = serve("ok")
    backend = OpenAICompatibleBackend(server.url)
    backend.generate(HI)
    assert server.payloads[0]["model"] == "scripted-model"


# --- reasoning models: thinking switched off, a reasoning parser's reply read ------------------------

def reasoning_reply(content, reasoning: str, finish_reason: str = "stop", field: str = "reasoning_content") -> bytes:
    """A chat completion as a server started with a reasoning parser (vLLM's --reasoning-parser qwen3) sends it."""
    message = {"role": "assistant", "content": content, field: reasoning}
    return json.dumps({"id": "x", "object": "chat.completion",
                       "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}]}).encode()


def test_every_request_asks_the_chat_template_not_to_think_unless_the_server_rejects_the_switch(serve):
    server = serve("ok")
    client(server.url).generate(HI * 2, json_schema=[schema_for("quality"), None])
    assert [p["chat_template_kwargs"] for p in server.payloads] == [{"enable_thinking": False}] * 2
    strict = serve(lambda p: (400, "Unrecognized request argument supplied: chat_template_kwargs")
                   if "chat_template_kwargs" in p else "ok")
    backend = client(strict.url)
    assert backend.generate(HI, json_schema=schema_for("quality")) == [VERDICT]
    assert backend.generate(HI) == [VERDICT]
    assert [("chat_template_kwargs" in p) for p in strict.payloads] == [True, False, False]
    assert backend.structured_output == "json_schema"  # the rejection was about the switch, not the form
    assert (backend.stats()["rejected"], backend.stats()["form_fallbacks"], backend.stats()["no_reply"]) == (0, 0, 0)


def test_a_verdict_a_reasoning_parser_filed_as_reasoning_is_read_and_one_cut_while_thinking_is_named(serve):
    server = serve(("raw", reasoning_reply(None, VERDICT)), ("raw", reasoning_reply("", VERDICT, field="reasoning")),
                   ("raw", reasoning_reply(VERDICT, "The script reads a CSV, so ...")))
    backend = client(server.url)
    assert [backend.generate(HI) for _ in range(3)] == [[VERDICT]] * 3
    assert (backend.stats()["reasoning_replies"], backend.stats()["cut_while_thinking"]) == (2, 0)
    cut = serve(("raw", reasoning_reply(None, "Okay, let me look at the imports. The script uses pandas", "length")))
    wm = LLMWorldModel(client(cut.url), mode="holistic", library_versions={}, max_defaulted_share=1.0)
    prediction = wm.predict(StubTask(), CODE)
    stats = wm.stats()
    assert prediction.status == "ok" and stats["defaulted"] == 1 and stats["backend_cut_while_thinking"] == 2
    assert "only the model's thinking" in wm.backend.last_error and "max_tokens=" in wm.backend.last_error


def test_the_in_process_backend_renders_qwen3s_template_without_thinking(tmp_path, smollm2_folder):
    import trl
    from transformers import AutoTokenizer

    from wmrl.models import tiny_llama
    from wmrl.world_model.backends.local import TransformersBackend

    folder = tiny_llama(tmp_path / "tiny-qwen3", smollm2_folder)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    tokenizer.chat_template = (Path(trl.__file__).parent / "chat_templates" / "qwen3.jinja").read_text()
    tokenizer.save_pretrained(folder)
    (prompt,) = TransformersBackend(str(folder), constrained=False).render(HI)
    assert prompt.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")  # the template's empty block


# --- wmrl's own server: batching, its errors retried, the schema honoured ---------------------------

class EchoBackend:
    """Replies with the last user message, records the schemas; fails the first ``failures`` calls."""

    def __init__(self, failures=0):
        self.failures, self.batches, self.schemas = failures, [], []

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None, seeds=None):
        self.batches.append(len(conversations))
        self.schemas.extend(json_schema)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("transient")
        return [c[-1]["content"] for c in conversations]


@pytest.fixture
def wmrl_server():
    servers = []

    def start(backend) -> str:
        server = make_server(backend, 0, "echo")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_concurrent_requests_come_back_in_order_and_are_batched_by_the_server(wmrl_server):
    echo = EchoBackend()
    backend = client(wmrl_server(echo), max_concurrency=8, structured_output="json_schema")
    conversations = [[{"role": "user", "content": f"q{i}"}] for i in range(8)]
    assert backend.generate(conversations, json_schema=schema_for("quality")) == [f"q{i}" for i in range(8)]
    assert len(echo.batches) < 8


def test_a_generation_failure_inside_wmrls_server_is_a_500_that_is_retried(wmrl_server):
    backend = client(wmrl_server(EchoBackend(failures=1)))
    assert backend.generate(HI) == ["hi"] and backend.stats()["retries"] == 1


@pytest.mark.parametrize("form", ["json_schema", "json_object"])
def test_wmrls_own_server_passes_the_schema_of_either_form_to_its_backend(wmrl_server, form):
    echo = EchoBackend()
    backend = client(wmrl_server(echo), structured_output=form)
    assert backend.generate(HI, json_schema=schema_for("quality")) == ["hi"]
    assert echo.schemas == [schema_for("quality")]


# --- one factory ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, message", [
    ({"kind": "ollama"}, "kind 'ollama' is not one of transformers, openai, vllm"),
    ({"kind": "openai"}, "kind='openai' needs base_url"),
    ({"kind": "vllm"}, "kind='vllm' needs model"),
    ({"kind": "transformers", "base_url": "http://x/v1"}, "base_url='http://x/v1' is only for kind='openai'"),
    ({"kind": "openai", "base_url": "http://x/v1", "retries": 3}, "unknown option.*'retries'.*max_retries"),
    ({"kind": "openai", "base_url": "localhost:8000"}, "base_url='localhost:8000' is not an http"),
    ({"kind": "openai", "base_url": "http://x/v1", "timeout_s": 0}, "timeout_s=0 is not a number"),
    ({"kind": "openai", "base_url": "http://x/v1", "structured_output": "grammar"},
     "structured_output='grammar' is not one of"),
])
def test_make_backend_names_the_wrong_value_and_the_choices(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_backend(**kwargs)


def test_make_backend_builds_an_openai_client_from_flat_json_settings():
    settings = json.loads('{"kind": "openai", "model": "qwen", "base_url": "http://127.0.0.1:9/v1", '
                          '"api_key": "k", "timeout_s": 30, "max_retries": 1, "structured_output": "json_object"}')
    backend = make_backend(**settings)
    assert isinstance(backend, OpenAICompatibleBackend)
    assert (backend.model, backend.timeout_s, backend.max_retries, backend.structured_output) == \
        ("qwen", 30.0, 1, "json_object")
    assert set(BACKEND_OPTIONS) == {"transformers", "openai", "vllm"}


def test_the_prompt_says_when_the_sandbox_starts_scripts_warm():
    warm, cold = (system_prompt(StubTask(), {}, 60, warm_start=w) for w in (True, False))
    assert "already imported" in warm and "pandas" in warm.split("Scripts start warm")[1]
    assert "already imported" not in cold


def test_a_shared_servers_answered_calls_are_kept_as_spans_and_a_down_servers_are_not(serve):
    server = serve("ok", "ok")
    wm = LLMWorldModel(client(server.url), library_versions={})
    before = time.time()
    wm.backend.generate(HI)
    wm.backend.generate(HI)
    spans = wm.take_server_spans()
    assert wm.server_shared and len(spans) == 2 and wm.take_server_spans() == []  # taken once
    assert all(before <= a <= b <= time.time() for a, b in spans)
    down = LLMWorldModel(client(f"http://127.0.0.1:{free_port()}/v1", max_retries=0), library_versions={})
    down.backend.generate(HI)
    assert down.take_server_spans() == []  # a server that answered nothing worked for nobody
