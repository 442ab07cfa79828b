"""The agent's and the world model's prompts state the limits of the sandbox they describe, from the config.

At paper scale the sandbox gives each execution a GPU and a budget of 1,200 CPU seconds; on a
laptop there is no GPU and the budget is seconds. A prompt that said "no GPU" and "1200 s of wall
time" at paper scale told the agent and the world model about another sandbox.
"""

from __future__ import annotations

import pytest

from wmrl.agent.llm.prompt import task_messages
from wmrl.config import SandboxConfig
from wmrl.sandbox import SandboxFacts
from wmrl.world_model.prompts import system_prompt

GPU_SLOT = SandboxFacts("docker", 1200.0, 6000.0, 40960, 8.0, 1, False, ())
LAPTOP = SandboxFacts("local", 20.0, 100.0, 2048, 1.0, 0, True, ("numpy", "pandas"))


class StubTask:
    def __init__(self):
        self.name, self.category, self.metric, self.higher_is_better, self.n_rows = "iris", "tabular", "accuracy", True, 120
        self.description = "Classify irises."
        self.inventory = {"train.csv": ["id", "species"], "test.csv": ["id"]}
        self.target_column, self.id_column, self.classes = "species", "id", ["a", "b"]


def _agent(facts) -> str:
    return task_messages(StubTask(), "script", facts, {"python": "3.11.9", "numpy": "2.0"})[1]["content"]


def _wm(facts) -> str:
    return system_prompt(StubTask(), {"numpy": "2.0"}, sandbox=facts)


@pytest.mark.parametrize("prompt", [_agent, _wm], ids=["agent", "world_model"])
def test_a_gpu_slot_is_described_as_one(prompt):
    text = prompt(GPU_SLOT)
    assert "no GPU" not in text and "1 GPU (CUDA)" in text and "8 CPU cores" in text
    assert "1200 s" in text.replace("seconds", "s") and "CPU time" in text
    assert "6000 s" in text.replace("seconds", "s") and "wall time" in text
    assert "40960 MB" in text


@pytest.mark.parametrize("prompt", [_agent, _wm], ids=["agent", "world_model"])
def test_a_laptop_sandbox_is_described_as_one(prompt):
    text = prompt(LAPTOP)
    assert "no GPU" in text and "1 CPU core," in text and "20 s" in text.replace("seconds", "s")
    assert "100 s" in text.replace("seconds", "s") and "2048 MB" in text


def test_the_world_models_prompt_takes_its_warm_start_from_the_facts():
    assert "Scripts start warm" in _wm(LAPTOP) and "Scripts start warm" not in _wm(GPU_SLOT)


def test_without_the_facts_the_world_model_claims_nothing_about_gpus():
    text = system_prompt(StubTask(), {}, time_limit_s=90)
    assert "GPU" not in text and "90 seconds of CPU time" in text


def test_the_paper_presets_prompts_state_its_sandbox(pool):
    """llm-paper: Docker executions with one GPU each and 1,200 CPU seconds; both prompts say so."""
    from wmrl.presets import run_config
    from wmrl.trainer.components import make_sandbox
    from wmrl.trainer.llm.train import rollout_settings

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    assert cfg.sandbox.gpus >= 1  # the premise: the paper's sandbox has a GPU
    facts = make_sandbox(cfg.sandbox).facts
    task = pool["iris_species"]
    agent = rollout_settings(cfg).messages(task)[1]["content"]
    wm = system_prompt(task, sandbox=facts)
    for text in (agent, wm):
        assert "no GPU" not in text and f"{cfg.sandbox.gpus} GPU" in text
        assert f"{cfg.sandbox.timeout_s:g} s" in text.replace("seconds", "s")
        assert f"{facts.wall_timeout_s:g} s" in text.replace("seconds", "s")


def test_the_laptop_presets_prompt_says_there_is_no_gpu(pool):
    from wmrl.presets import run_config
    from wmrl.trainer.llm.train import rollout_settings

    cfg = run_config("wmrl", "llm-smoke", agent="llm")
    text = rollout_settings(cfg).messages(pool["iris_species"])[1]["content"]
    assert cfg.sandbox.gpus == 0 and "no GPU" in text and f"{cfg.sandbox.timeout_s:g} s of CPU time" in text


def test_the_llm_world_model_built_for_a_sandbox_states_that_sandboxs_limits():
    from wmrl.world_model.llm import LLMWorldModel

    class Recording:
        def __init__(self):
            self.conversations = []

        def generate(self, conversations, max_new_tokens=160, temperature=0.7, json_schema=None, seeds=None):
            self.conversations.extend(conversations)
            answer = ('{"reason": "ok", "verdict": "pass", "confidence": 0.9, "error_type": null, "error_line": null, '
                      '"env_feedback": null, "failed_check": null, "quality_bucket": "mid"}')
            return [answer] * len(conversations)

    backend = Recording()
    wm = LLMWorldModel(backend, mode="holistic", sandbox=GPU_SLOT)
    assert (wm.time_limit_s, wm.warm_start) == (1200.0, False)
    wm.predict(StubTask(), "import pandas as pd\nprint(1)\n")
    system = backend.conversations[0][0]["content"]
    assert system == system_prompt(StubTask(), wm.library_versions, sandbox=GPU_SLOT) and "1 GPU (CUDA)" in system


def test_the_components_hand_the_world_model_the_sandboxs_facts(monkeypatch):
    """make_world_model's LLM world model is built from the sandbox it predicts (not a budget alone)."""
    from wmrl.config import WorldModelConfig
    from wmrl.trainer import components

    monkeypatch.setattr(components, "make_backend", lambda *a, **k: object())
    sandbox = components.make_sandbox(SandboxConfig(timeout_s=33.0, memory_mb=4096))
    wm = components.make_world_model(WorldModelConfig(kind="llm"), sandbox, seed=0, agent_model="unused")
    assert wm.sandbox == sandbox.facts and wm.time_limit_s == 33.0


CUDA_IMAGE = SandboxFacts("docker", 1200.0, 6000.0, 40960, 8.0, 1, False, (),
                          (("lightgbm", "4.6.0"), ("python", "3.12.3"), ("torch", "2.11.0"), ("xgboost", "3.1.2")))


def test_both_prompts_name_the_libraries_of_the_interpreter_that_runs_the_code_not_this_machines():
    """A Docker image has its own interpreter (the paper's CUDA image: its own torch, LightGBM and XGBoost): the
    prompts name its versions, which the sandbox's facts carry."""
    agent = task_messages(StubTask(), "script", CUDA_IMAGE)[1]["content"]
    assert "lightgbm 4.6.0" in agent and "xgboost 3.1.2" in agent and "torch 2.11.0" in agent and "3.12" in agent
    wm = system_prompt(StubTask(), sandbox=CUDA_IMAGE)
    assert "lightgbm==4.6.0" in wm and "xgboost==3.1.2" in wm and "Python 3.12.3" in wm


def test_a_local_sandbox_states_this_interpreters_libraries():
    from wmrl.sandbox import Sandbox, library_versions

    assert Sandbox("local").facts.library_versions() == library_versions()
    assert LAPTOP.library_versions() == library_versions()  # facts that do not say: this interpreter's


def test_the_paper_presets_slot_fits_a_gpu_script_and_both_prompts_state_it(pool):
    """llm-paper's slot: a GPU, memory and shared memory sized for a GPU Kaggle script, not the laptop's 2 GB."""
    from wmrl.presets import run_config
    from wmrl.trainer.components import make_sandbox
    from wmrl.trainer.llm.train import rollout_settings

    cfg = run_config("wmrl", "llm-paper", agent="llm")
    box = cfg.sandbox
    assert box.gpus == 1 and box.cpus >= 4 and box.memory_mb >= 32768 and box.work_mb >= 8192
    facts = make_sandbox(box).facts
    assert (facts.memory_mb, facts.cpus, facts.work_mb) == (box.memory_mb, box.cpus, box.work_mb)
    task = pool["iris_species"]
    for text in (rollout_settings(cfg).messages(task)[1]["content"], system_prompt(task, sandbox=facts)):
        assert f"memory {box.memory_mb} MB" in text and f"/dev/shm {box.work_mb} MB" in text
        assert f"{box.cpus:g} CPU cores" in text
    laptop = system_prompt(task, sandbox=LAPTOP)
    assert "/dev/shm" not in laptop  # no GPU, no DataLoader workers: the CPU prompts leave shared memory out
