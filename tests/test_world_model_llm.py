"""The LLM world model: gate, prompts, parsing, aggregation, and real backends with SmolLM2-135M."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from wmrl.reward import STATUSES
from wmrl.world_model import (
    CHECKS,
    QUALITY_PERCENTILE,
    LLMWorldModel,
    OpenAICompatibleBackend,
    WorldModel,
    feedback_bucket,
    gate,
)
from wmrl.world_model.parse import extract_json, parse_reply
from wmrl.world_model.prompts import check_messages, reply_template, schema_for, system_prompt


@dataclass(frozen=True)
class StubTask:
    """Stand-in with the fields of ``wmrl.tasks.Task`` that the world model reads."""

    name: str = "iris"
    category: str = "tabular"
    metric: str = "accuracy"
    higher_is_better: bool = True
    n_rows: int = 120
    description: str = "Predict the species of an iris flower from four measurements of its petals and sepals."
    inventory: dict = field(default_factory=lambda: {
        "train.csv": ["id", "sepal_length", "sepal_width", "petal_length", "petal_width", "species"],
        "test.csv": ["id", "sepal_length", "sepal_width", "petal_length", "petal_width"],
        "sample_submission.csv": ["id", "species"],
    })


TASK = StubTask()
GOOD = """\
import os
import pandas as pd
from sklearn.linear_model import LogisticRegression

data = os.environ["DATA_DIR"]
train = pd.read_csv(os.path.join(data, "train.csv"))
test = pd.read_csv(os.path.join(data, "test.csv"))
features = ["sepal_length", "sepal_width", "petal_length", "petal_width"]
model = LogisticRegression(max_iter=200).fit(train[features], train["species"])
pd.DataFrame({"id": test["id"], "species": model.predict(test[features])}).to_csv(
    os.environ.get("SUBMISSION_PATH", "submission.csv"), index=False)
"""
WRONG_COLUMN = GOOD.replace('train["species"]', 'train["label"]')
NO_SUBMISSION = GOOD.rsplit("pd.DataFrame", 1)[0] + "print(model.score(train[features], train['species']))\n"


def reply(verdict="pass", error_type=None, error_line=None, confidence=0.9, **extra) -> str:
    return json.dumps({"reason": "looked at it", "verdict": verdict, "confidence": confidence,
                       "error_type": error_type, "error_line": error_line, "env_feedback": None, **extra})


class ScriptedBackend:
    """Answers each conversation with ``script(check, attempt)``; counts generate calls and conversations."""

    def __init__(self, script):
        self.script, self.calls, self.conversations, self.schemas, self.seeds = script, 0, [], [], []

    def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None, seeds=None):
        self.calls += 1
        self.seeds.extend(seeds or [None] * len(conversations))
        self.conversations.extend(conversations)
        self.schemas.extend(json_schema if isinstance(json_schema, list) else [json_schema] * len(conversations))
        out = []
        for conversation in conversations:
            check = conversation[1]["content"].split("## Check: ")[1].split("\n")[0]
            out.append(self.script(check, (len(conversation) - 2) // 2))
        return out


def passing(bucket="high", **fails):
    """A script where every check passes except ``fails`` (check -> reply kwargs)."""
    def script(check, attempt):
        if check == "quality":
            return reply(quality_bucket=bucket)
        return reply(**fails[check]) if check in fails else reply()
    return script


def model(script, **kwargs) -> tuple[LLMWorldModel, ScriptedBackend]:
    backend = ScriptedBackend(script)
    return LLMWorldModel(backend, library_versions={"numpy": "2.4.6", "scikit-learn": "1.9.1"}, **kwargs), backend


# --- the deterministic gate ---------------------------------------------------------------------

@pytest.mark.parametrize("code", ["", "   \n\t", None])
def test_empty_code_scores_zero_without_calling_the_model(code):
    wm, backend = model(passing())
    prediction = wm.predict(TASK, code)
    assert (prediction.status, prediction.score, backend.calls) == ("malformed", 0.0, 0)


def test_code_that_does_not_compile_scores_zero_with_its_line_without_calling_the_model():
    wm, backend = model(passing())
    prediction = wm.predict(TASK, "import os\n\ndef f(:\n    pass\n")
    assert (prediction.status, prediction.score, prediction.error_line, backend.calls) == ("syntax_error", 0.0, 3, 0)
    assert gate(GOOD) is None


# --- aggregation into the reward ladder ------------------------------------------------------------

@pytest.mark.parametrize("bucket", list(QUALITY_PERCENTILE))
def test_all_checks_passing_gives_ok_with_the_quality_bucket_on_the_ladder(bucket):
    wm, backend = model(passing(bucket))
    prediction = wm.predict(TASK, GOOD)
    assert (prediction.status, prediction.quality_bucket) == ("ok", bucket)
    assert prediction.score == pytest.approx(0.5 + 0.5 * QUALITY_PERCENTILE[bucket])
    assert [v["check"] for v in prediction.verdicts] == list(CHECKS)
    assert (backend.calls, len(backend.conversations)) == (1, len(CHECKS))


def test_the_earliest_failing_line_wins_when_several_checks_fail():
    wm, _ = model(passing(api_calls={"verdict": "fail", "error_type": "TypeError", "error_line": 9},
                          data_refs={"verdict": "fail", "error_type": "KeyError", "error_line": 6},
                          compute_budget={"verdict": "fail"}))
    prediction = wm.predict(TASK, WRONG_COLUMN)
    assert (prediction.status, prediction.error_type, prediction.error_line) == ("runtime_error", "KeyError", 6)
    assert prediction.score == pytest.approx(0.1)
    assert "KeyError at line 6" in prediction.feedback_text


@pytest.mark.parametrize("fails, status, score", [
    ({"compute_budget": {"verdict": "fail"}}, "timeout", 0.1),
    ({"submission": {"verdict": "fail", "error_type": "NoSubmission"}}, "no_submission", 0.2),
    ({"submission": {"verdict": "fail", "error_type": "InvalidSubmission"}}, "invalid_submission", 0.2),
    ({"submission": {"verdict": "fail"}, "compute_budget": {"verdict": "fail"}}, "timeout", 0.1),
])
def test_budget_and_submission_failures_map_to_their_statuses(fails, status, score):
    wm, _ = model(passing(**fails))
    prediction = wm.predict(TASK, GOOD)
    assert (prediction.status, prediction.score, prediction.quality_bucket) == (status, pytest.approx(score), None)


def test_an_unsure_fail_counts_as_a_pass():
    wm, _ = model(passing(data_refs={"verdict": "fail", "error_type": "KeyError", "error_line": 6, "confidence": 0.2}))
    prediction = wm.predict(TASK, GOOD)
    assert prediction.status == "ok"
    assert next(v for v in prediction.verdicts if v["check"] == "data_refs")["demoted"]


def test_many_solutions_are_asked_in_one_batch():
    wm, backend = model(passing())
    predictions = wm.predict_many([(TASK, GOOD), (TASK, ""), (TASK, NO_SUBMISSION)])
    assert [p.status for p in predictions] == ["ok", "malformed", "ok"]
    assert (backend.calls, len(backend.conversations), wm.stats()["gated"]) == (1, 2 * len(CHECKS), 1)


def test_reseeding_replays_the_seeds_asked_of_the_backend():
    wm, backend = model(passing())
    wm.reseed([3, 7])
    wm.predict_many([(TASK, GOOD), (TASK, NO_SUBMISSION)])
    wm.predict(TASK, GOOD)
    first = list(backend.seeds)
    assert len(first) == 3 * len(CHECKS) and len(set(first)) == len(first)  # one fresh seed per request
    wm.reseed([3, 7])  # what the trainer does at the start of each step, so a resumed run replays it
    wm.predict_many([(TASK, GOOD), (TASK, NO_SUBMISSION)])
    wm.predict(TASK, GOOD)
    assert backend.seeds[len(first):] == first
    wm.reseed([3, 8])
    wm.predict(TASK, GOOD)
    assert not set(backend.seeds[2 * len(first):]) & set(first)


def test_holistic_mode_asks_once_and_reads_the_failing_check():
    def script(check, attempt):
        return reply("fail", "KeyError", 9, failed_check="data_refs", quality_bucket="mid")
    wm, backend = model(script, mode="holistic")
    prediction = wm.predict(TASK, WRONG_COLUMN)
    assert (prediction.status, prediction.error_type, prediction.error_line) == ("runtime_error", "KeyError", 9)
    assert len(backend.conversations) == 1


# --- parsing, repair, parse_fail -------------------------------------------------------------------

def test_json_is_found_inside_prose_and_code_fences_and_read_leniently():
    text = 'Sure! Here it is:\n```json\n{"reason": "ok", "verdict": "Pass", "confidence": "0.8", ' \
           '"error_line": "12"}\n```'
    parsed = parse_reply(text, schema_for("api_calls"))
    assert parsed.ok and parsed.value["verdict"] == "pass" and parsed.value["error_line"] == 12
    assert parsed.value["error_type"] is None and extract_json("no json {here") is None


def test_a_reply_missing_the_verdict_is_rejected_with_a_reason():
    parsed = parse_reply('{"reason": "hm", "confidence": "very"}', schema_for("quality"))
    assert not parsed.ok
    assert any("verdict" in e for e in parsed.errors) and any("confidence" in e for e in parsed.errors)


@pytest.mark.parametrize("confidence, read", [(2, 1.0), (-0.5, 0.0), ("1.5", 1.0), (0.3, 0.3)])
def test_a_confidence_outside_zero_to_one_is_clamped_not_rejected(confidence, read):
    # constrained decoders (outlines, xgrammar) cannot bound a number, so 2 means "certain"
    parsed = parse_reply(reply(confidence=confidence), schema_for("api_calls"))
    assert parsed.ok and parsed.value["confidence"] == read


def test_a_bad_reply_is_repaired_once_with_the_errors_shown_to_the_model():
    wm, backend = model(lambda check, attempt: "I think it passes." if attempt == 0 else
                        reply(quality_bucket="fair") if check == "quality" else reply())
    prediction = wm.predict(TASK, GOOD)
    assert (prediction.status, prediction.quality_bucket, wm.stats()["parse_failures"]) == ("ok", "fair", 0)
    assert (backend.calls, wm.stats()["repairs"]) == (2, len(CHECKS))
    assert "no JSON object" in backend.conversations[-1][-1]["content"]


def test_a_reply_that_stays_bad_is_a_counted_parse_fail_read_as_pass():
    wm, _ = model(lambda check, attempt: '{"verdict": "maybe"}')
    prediction = wm.predict(TASK, GOOD)
    assert (prediction.status, prediction.quality_bucket) == ("ok", "low")
    assert wm.stats()["parse_failures"] == len(CHECKS) and wm.parse_fail_rate == 1.0
    assert wm.stats()["defaulted"] == len(CHECKS) and wm.stats()["no_reply"] == 0
    assert all(v["parse_fail"] for v in prediction.verdicts)


# --- prompts -------------------------------------------------------------------------------------

def test_the_system_prompt_carries_task_context_sandbox_facts_and_default_to_pass():
    text = system_prompt(TASK, {"scikit-learn": "1.9.1"}, time_limit_s=90)
    for needle in ("iris", "four measurements", "sample_submission.csv: id, species", "scikit-learn==1.9.1",
                   "90 seconds", "training rows: 120", "DEFAULT TO PASS", "DATA_DIR", "SUBMISSION_PATH"):
        assert needle in text


def test_without_library_versions_the_model_is_told_the_versions_installed_for_the_sandbox():
    """The default the trainer relies on (it passes none): the sandbox's own library versions reach the prompt."""
    from wmrl.sandbox import library_versions

    installed = library_versions()
    wm = LLMWorldModel(ScriptedBackend(passing()))
    assert wm.library_versions == installed
    wm.predict(TASK, GOOD)
    system = wm.backend.conversations[0][0]["content"]
    assert f"scikit-learn=={installed['scikit-learn']}" in system and f"numpy=={installed['numpy']}" in system
    assert system == system_prompt(TASK, time_limit_s=wm.time_limit_s)


@pytest.mark.parametrize("check", [*CHECKS, "holistic"])
def test_every_schema_asks_for_the_reason_first(check):
    schema = schema_for(check)
    assert next(iter(schema["properties"])) == "reason" and set(schema["required"]) == set(schema["properties"])
    assert reply_template(check).startswith('{"reason"')


def test_check_prompts_number_the_code_lines_and_name_the_check():
    messages = check_messages(GOOD, "data_refs", "SYSTEM")
    assert messages[0] == {"role": "system", "content": "SYSTEM"}
    assert "   6 | train = pd.read_csv" in messages[1]["content"] and "## Check: data_refs" in messages[1]["content"]


def test_feedback_buckets_round_trip_the_quality_map_and_world_models_meet_the_protocol():
    assert all(feedback_bucket(p) == b for b, p in QUALITY_PERCENTILE.items())
    assert feedback_bucket(None) is None and feedback_bucket(1.0) == "high"
    assert isinstance(model(passing())[0], WorldModel)


# --- real models ---------------------------------------------------------------------------------
# SmolLM2-135M on a shared 2-core CPU needs about a minute per batch of ~800-token prompts, so the
# real tests use the holistic prompt (one conversation per solution); the decomposed path is the
# same code with eight conversations, covered above with a scripted backend.

SOLUTIONS = [GOOD, WRONG_COLUMN, NO_SUBMISSION]


def check_real_predictions(predictions, wm):
    for prediction in predictions:
        assert prediction.status in STATUSES and 0.0 <= prediction.score <= 1.0
        assert prediction.verdicts and prediction.feedback_text.startswith("status: ")
    stats = wm.stats()
    assert stats["requests"] >= len(predictions) and stats["parse_failures"] <= stats["requests"] - stats["repairs"]


@pytest.fixture(scope="module")
def smollm2(smollm2_folder):
    """The default backend: SmolLM2's float32 folder under the data root (linked to the machine's build)."""
    from wmrl.world_model import TransformersBackend
    return TransformersBackend()


@pytest.mark.slow
@pytest.mark.extended  # loads SmolLM2 (half a minute); make test decodes constrained on a tiny model (test_llm_trainer)
def test_smollm2_with_constrained_decoding_answers_in_the_schema_without_repairs(smollm2):
    wm = LLMWorldModel(smollm2, mode="holistic", max_new_tokens=160, time_limit_s=60)
    start = time.perf_counter()
    predictions = wm.predict_many([(TASK, code) for code in SOLUTIONS])
    seconds = time.perf_counter() - start
    check_real_predictions(predictions, wm)
    stats = wm.stats()
    print(f"\nSmolLM2 in-process, constrained (holistic): {seconds / len(SOLUTIONS):.1f} s per prediction, "
          f"statuses {[p.status for p in predictions]}")
    assert (stats["parse_failures"], stats["repairs"], stats["no_reply"]) == (0, 0, 0)


@pytest.mark.slow
@pytest.mark.extended
def test_smollm2_sampling_follows_the_seeds_it_is_given(smollm2):
    conversation = [{"role": "user", "content": "Name a colour."}]

    def sample(seed):
        return smollm2.generate([conversation], max_new_tokens=12, temperature=1.0, seeds=[seed])[0]

    assert sample(11) == sample(11)
    assert len({sample(s) for s in range(6)}) > 1  # temperature 1.0: six seeds do not all agree


@pytest.mark.slow
@pytest.mark.llm_heavy
def test_the_dequantised_folder_the_default_backend_loads_is_the_gguf_model(smollm2):
    """The default backend loads SmolLM2's float32 folder, built once from the GGUF file: the same tokens and the
    same next-token logits as the GGUF file loaded directly (transformers dequantises it on every load)."""
    import torch

    from wmrl.models import smollm2_gguf
    from wmrl.world_model import TransformersBackend

    gguf = TransformersBackend(str(smollm2_gguf()), constrained=False)
    assert gguf.gguf_file and not smollm2.gguf_file
    text = "def fit_predict(train, test):\n    from sklearn.linear_model import LogisticRegression\n"
    ids = smollm2.tokenizer(text, return_tensors="pt").input_ids
    assert ids.tolist() == gguf.tokenizer(text, return_tensors="pt").input_ids.tolist()
    with torch.no_grad():
        mine, theirs = smollm2.network(ids).logits, gguf.network(ids).logits
    assert torch.allclose(mine, theirs, atol=1e-4, rtol=0), (mine - theirs).abs().max()


def start_server(command: list[str], log_path, ready_within_s: float = 600.0) -> tuple[subprocess.Popen, str]:
    """Start a server on a free port of 127.0.0.1 and wait until it lists its models: (process, base_url)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = open(log_path, "w")  # noqa: SIM115 - the server writes to it as long as it lives
    process = subprocess.Popen([part.replace("{port}", str(port)) for part in command], stdout=log, stderr=log)
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + ready_within_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(base_url + "/models", timeout=5):
                return process, base_url
        except OSError:
            time.sleep(1.0)
    process.kill()
    pytest.fail(f"{command[:3]} did not serve within {ready_within_s:.0f} s: {Path(log_path).read_text()[-2000:]}")


@pytest.mark.slow
@pytest.mark.llm_heavy  # ~5 min on 2 cores: serves SmolLM2 in a child process and asks it for verdicts
def test_openai_compatible_backend_against_wmrls_server_with_smollm2(tmp_path):
    pytest.importorskip("transformers")
    server, base_url = start_server([sys.executable, "-m", "wmrl.world_model.serve", "--port", "{port}"],
                                    tmp_path / "server.log")
    try:
        backend = OpenAICompatibleBackend(base_url, timeout_s=900, max_retries=0)
        wm = LLMWorldModel(backend, mode="holistic", max_new_tokens=160, time_limit_s=60)
        check_real_predictions([wm.predict(TASK, WRONG_COLUMN)], wm)
        assert backend.structured_output == "json_schema" and wm.stats()["parse_failures"] == 0
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.slow
def test_openai_compatible_backend_negotiates_with_llama_cpp_pythons_server(tmp_path):
    """A peer server people run: it takes only json_object + schema, and says so with an HTTP 500."""
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python's server is not installed "
                        "(pip install -e '.[serve]'; it compiles llama.cpp, ~8 min on 2 cores)")
    from wmrl.models import smollm2_gguf

    server, base_url = start_server([sys.executable, "-m", "llama_cpp.server", "--model", str(smollm2_gguf()),
                                     "--host", "127.0.0.1", "--port", "{port}", "--n_ctx", "4096",
                                     # a native build on CPUs with AMX (this project's machines)
                                     # segfaults on batched prompt decoding; one token at a time works
                                     "--n_batch", "1", "--n_ubatch", "1"],
                                    tmp_path / "llama_cpp_server.log")
    try:
        backend = OpenAICompatibleBackend(base_url, timeout_s=600, max_retries=1)
        wm = LLMWorldModel(backend, mode="holistic", max_new_tokens=160, time_limit_s=60)
        predictions = wm.predict_many([(TASK, code) for code in SOLUTIONS])
        check_real_predictions(predictions, wm)
        stats = wm.stats()
        assert backend.structured_output == "json_object"
        assert (stats["backend_form_fallbacks"], stats["backend_retries"], stats["no_reply"]) == (1, 0, 0)
        assert stats["parse_failures"] == 0, [v.get("reason") + " | " + v.get("raw", "") for p in predictions
                                              for v in p.verdicts if v.get("parse_fail")]
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.gpu
def test_vllm_offline_engine_with_guided_json_never_fails_to_parse():
    pytest.importorskip("vllm")
    from wmrl.world_model import VLLMBackend
    model_dir = os.environ.get("WMRL_VLLM_MODEL")
    if not model_dir:
        pytest.skip("set WMRL_VLLM_MODEL to a local model folder")
    wm = LLMWorldModel(VLLMBackend(model_dir, max_model_len=4096), time_limit_s=60)
    check_real_predictions(wm.predict_many([(TASK, code) for code in SOLUTIONS]), wm)
    assert wm.stats()["parse_failures"] == 0
