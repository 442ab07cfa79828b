"""A world model behind an HTTP server, as a user runs one: its failures and its cost on the record.

The server is a small stdlib one on 127.0.0.1 in its own process (an OpenAI-compatible chat endpoint that
answers every check with a valid verdict after a short think), so the test can kill it mid-run with
SIGKILL, as a crashed or pre-empted server dies. A grammar-agent run with the LLM world model then either
stops with a clear error (the default limit on defaulted verdicts) or, with the limit lifted, finishes with
the defaults counted per step and in the summary. The world model is charged the server's time.
"""
import subprocess
import sys
import textwrap
import threading

import pandas as pd
import pytest

from wmrl.config import ConfigError, RunConfig
from wmrl.experiments.run import run_arm
from wmrl.ledger import ComputeLedger
from wmrl.presets import run_config
from wmrl.trainer import components
from wmrl.trainer.rollout import Scorer, world_model_step, world_model_totals
from wmrl.world_model.llm import DefaultedVerdictsError, LLMWorldModel

THINK_S = 0.05  # the server's time per request
SERVER = textwrap.dedent(f"""
    import json, sys, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    VERDICT = {{"reason": "reads fine", "verdict": "pass", "confidence": 0.9, "error_type": None,
               "error_line": None, "env_feedback": None, "failed_check": None, "quality_bucket": "mid"}}

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({{"data": [{{"id": "stub"}}]}})

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep({THINK_S})
            self._send({{"choices": [{{"message": {{"role": "assistant", "content": json.dumps(VERDICT)}}}}]}})
            print("served", flush=True)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
""")


class Server:
    """The stub server in its own process; ``kill_after`` requests (None: never) it is SIGKILLed."""

    def __init__(self, kill_after: int | None = None):
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{int(self.proc.stdout.readline())}/v1"
        self.served, self.killed = 0, threading.Event()
        self.kill_after = kill_after
        threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        for _ in self.proc.stdout:
            self.served += 1
            if self.kill_after is not None and self.served >= self.kill_after:
                self.proc.kill()
                self.killed.set()
                return

    def stop(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def server(request):
    s = Server(getattr(request, "param", None))
    yield s
    s.stop()


def overrides(url: str, **more) -> dict:
    return {"world_model.kind": "llm", "world_model.backend": "openai", "world_model.base_url": url,
            "world_model.mode": "holistic", "world_model.max_retries": 0, "world_model.timeout_s": 5.0,
            "world_model.max_concurrency": 4, **more}


# -- the configuration -----------------------------------------------------------------------------------------

def test_a_server_url_without_the_llm_world_model_is_refused_naming_the_field():
    with pytest.raises(ConfigError, match="world_model.kind=llm"):
        RunConfig().with_overrides({"world_model.backend": "openai", "world_model.base_url": "http://127.0.0.1:1/v1"})
    with pytest.raises(ConfigError, match="world_model.kind=llm"):
        RunConfig().with_overrides({"world_model.base_url": "http://127.0.0.1:1/v1"})


def test_the_paper_preset_with_the_offline_engine_and_a_local_gpu_sandbox_builds():
    """The GPU test's overrides: a preset's base_url must be dropped by name, a local GPU slot needs its GPU."""
    gpu_test = {"world_model.backend": "vllm", "world_model.model": "Qwen/Qwen3-0.6B", "sandbox.backend": "local",
                "sandbox.gpu_devices": "0"}
    with pytest.raises(ConfigError, match="world_model.base_url=null"):
        run_config("wmrl", "llm-paper", overrides=gpu_test, agent="llm")
    cfg = run_config("wmrl", "llm-paper", agent="llm", overrides={**gpu_test, "world_model.base_url": None,
                                                                  "world_model.gpu_memory_utilization": 0.25})
    assert components.make_sandbox(cfg.sandbox).gpu_pool.devices == ("0",)
    assert components._engine_options(cfg.world_model) == {"gpu_memory_utilization": 0.25}


def test_engine_settings_of_another_backend_are_refused():
    with pytest.raises(ConfigError, match="offline vLLM engine"):
        RunConfig().with_overrides({"world_model.kind": "llm", "world_model.max_model_len": 4096})


def test_the_clients_timeout_retries_and_concurrency_come_from_the_config(server):
    cfg = RunConfig().with_overrides(overrides(server.url, **{"world_model.timeout_s": 7.5,
                                                              "world_model.max_concurrency": 3}))
    wm = components.make_world_model(cfg.world_model, components.make_sandbox(cfg.sandbox), 0)
    assert (wm.backend.timeout_s, wm.backend.max_retries, wm.backend.max_concurrency) == (7.5, 0, 3)
    assert wm.max_defaulted_share == cfg.world_model.max_defaulted_share


# -- the parts ---------------------------------------------------------------------------------------------------

class Silent:
    """A backend that gets no reply to anything (a server that is down)."""

    last_error = "ConnectionRefusedError: [Errno 111] Connection refused"

    def generate(self, conversations, **kw):
        return [None] * len(conversations)


def test_a_step_whose_verdicts_defaulted_past_the_limit_stops_with_the_reason(pool):
    task = pool.train[0]
    wm = LLMWorldModel(Silent(), mode="holistic", library_versions={}, max_defaulted_share=0.5)
    wm.predict_many([(task, "print(1)\n")] * 3)
    with pytest.raises(DefaultedVerdictsError, match=r"3 of 3 checks.*3 got no reply.*Connection refused"):
        world_model_step(wm)
    lenient = LLMWorldModel(Silent(), mode="holistic", library_versions={}, max_defaulted_share=1.0)
    lenient.predict_many([(task, "print(1)\n")] * 2)
    row = world_model_step(lenient)
    assert (row["wm_no_reply"], row["wm_defaulted_rate"]) == (2, 1.0)
    assert world_model_totals([row, row])["defaulted"] == 4 and world_model_totals([{"wm_reward": 1}]) is None


def test_the_llm_trainers_reward_hook_stops_on_defaulted_verdicts_before_the_step_is_learnt_from(pool):
    """TRL calls the reward hook before the loss: the check there (over every process's counts) keeps the
    optimiser from ever seeing a step of defaults; the step's log row later reads the counts without a check."""
    from types import SimpleNamespace

    from wmrl.trainer.llm.grpo import RunLog, WMRLReward

    wm = LLMWorldModel(Silent(), mode="holistic", library_versions={}, max_defaulted_share=0.5)
    wm.predict_many([(pool.train[0], "print(1)\n")] * 2)
    stepped = []
    rollout = SimpleNamespace(world_model=wm, routing=None)
    trainer = SimpleNamespace(num_generations=2, state=SimpleNamespace(global_step=0))
    reward = WMRLReward(lambda *a: stepped.append(a), rollout, RunLog(), lambda: trainer)
    with pytest.raises(DefaultedVerdictsError, match="2 of 2 checks"):
        reward(["p", "p"], ["c", "c"], wmrl_row=[0, 1], wmrl_real=[None, None], wmrl_pred=[0.5, 0.5])
    assert stepped == []
    assert wm.step_stats(check=False)["defaulted"] == 2 and wm.pending_stats()["defaulted"] == 0


def test_a_world_model_behind_a_server_is_charged_the_servers_time(toy):
    class Remote:
        server_s = 0.0

        def predict_many(self, items):
            self.server_s += 30.0  # what the server reports having worked, while this process only waited
            return [None] * len(items)

    ledger = ComputeLedger()
    Scorer(None, Remote(), ledger).predict([(toy, "x = 1\n")])
    ledger.end_step()
    charged = ledger.totals().loc["world_model", "charged_s"]
    assert 30.0 <= charged < 31.0


def test_the_server_is_charged_the_time_it_answered_and_nothing_once_it_is_down(server):
    from wmrl.world_model.backends import make_backend

    backend = make_backend("openai", "stub", server.url, max_retries=0, timeout_s=5.0)
    assert backend.generate([[{"role": "user", "content": "hi"}]] * 4) != [None] * 4
    answered = backend.server_s
    assert answered >= THINK_S
    server.stop()
    assert backend.generate([[{"role": "user", "content": "hi"}]] * 4) == [None] * 4
    assert backend.server_s == answered and backend.stats()["no_reply"] == 4


# -- real runs against the server ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_run_against_a_live_server_records_its_requests_and_is_charged_the_servers_time(server, pool, tmp_path):
    summary = run_arm("wm", "smoke", seed=0, out=tmp_path, pool=pool, progress=False,
                      overrides=overrides(server.url))
    totals = summary["world_model"]
    assert totals["requests"] > 0 and totals["no_reply"] == 0 and totals["defaulted_rate"] == 0.0
    steps = pd.read_parquet(tmp_path / "steps.parquet")
    assert {"wm_requests", "wm_no_reply", "wm_parse_failures", "wm_defaulted_rate"} <= set(steps.columns)
    assert steps.wm_requests.sum() == totals["requests"] == server.served
    ledger = pd.read_parquet(tmp_path / "ledger.parquet")
    wm = ledger[ledger.component == "world_model"]
    # at most 4 requests in flight, each THINK_S on the server: the charge is the server's, not the client's CPU
    assert wm.charged_s.sum() >= THINK_S * totals["requests"] / 4 * 0.9


@pytest.mark.slow
@pytest.mark.parametrize("server", [5], indirect=True)
def test_a_server_killed_mid_run_stops_the_run_with_a_clear_error(server, pool, tmp_path):
    with pytest.raises(DefaultedVerdictsError, match=r"max_defaulted_share=0\.5\): \d+ got no reply from the backend"):
        run_arm("wm", "smoke", seed=0, out=tmp_path, pool=pool, progress=False, overrides=overrides(server.url))
    assert server.killed.is_set()
    assert not (tmp_path / "summary.json").exists()


@pytest.mark.slow
@pytest.mark.parametrize("server", [5], indirect=True)
def test_with_the_limit_lifted_a_killed_server_is_on_the_record(server, pool, tmp_path):
    summary = run_arm("wm", "smoke", seed=0, out=tmp_path, pool=pool, progress=False,
                      overrides=overrides(server.url, **{"world_model.max_defaulted_share": 1.0}))
    totals = summary["world_model"]
    assert server.killed.is_set() and totals["no_reply"] > 0 and totals["defaulted_rate"] > 0.5
    steps = pd.read_parquet(tmp_path / "steps.parquet")
    assert steps.wm_no_reply.iloc[-1] == steps.wm_requests.iloc[-1] > 0  # the last step: every request unanswered
