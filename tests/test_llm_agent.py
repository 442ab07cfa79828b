"""The LLM agent's prompt, code extraction, solution contracts and multi-turn rollout (no training)."""

from __future__ import annotations

import numpy as np
import pytest

from wmrl.agent.grammar import baseline_choices, render
from wmrl.agent.llm.prompt import feedback_message, task_messages
from wmrl.agent.llm.solution import assemble, compact, extract_code, fit_predict_target, reply_for, script_target
from wmrl.sandbox import SandboxFacts

#: a laptop's sandbox, as ``Sandbox.facts`` describes one
LAPTOP = SandboxFacts("local", 7.0, 45.0, 1234, 1.0, 0, False, ())


def test_the_prompt_shows_the_description_every_public_file_and_column_and_the_sandbox(pool):
    task = pool["penguin_species"]
    system, user = task_messages(task, "script", LAPTOP)
    text = user["content"]
    assert system["role"] == "system" and user["role"] == "user"
    assert task.description.strip() in text
    for name, cols in task.inventory.items():
        if name != "description.txt":
            assert name in text
            assert all(c in text for c in cols)
    for fact in ("DATA_DIR", "SUBMISSION_PATH", "Time limit: 7 s of CPU time", "at most 45 s of wall time",
                 "memory 1234 MB", "1 CPU core, no GPU", "scikit-learn", "```python"):
        assert fact in text


def test_the_fit_predict_prompt_asks_for_the_function_and_says_what_a_prediction_is(pool):
    text = task_messages(pool["breast_cancer_diagnosis"], "fit_predict", LAPTOP)[1]["content"]
    assert "fit_predict(train, test)" in text and "probability" in text
    assert "predicted value of `progression`" in task_messages(pool["diabetes_progression"], "fit_predict",
                                                               LAPTOP)[1]["content"]


def test_the_prompt_refuses_limits_that_are_not_a_sandboxs_facts(pool):
    with pytest.raises(TypeError, match="SandboxFacts"):
        task_messages(pool["penguin_species"], "script", 7.0)


def test_an_unknown_contract_is_refused_with_the_known_ones(pool):
    with pytest.raises(ValueError, match="script"):
        task_messages(pool.train[0], "notebook", LAPTOP)


@pytest.mark.parametrize("reply, code", [
    ("Here:\n```python\nprint(1)\n```\nDone.", "print(1)\n"),
    ("```\nx = 2\n```", "x = 2\n"),
    ("```bash\nls\n```\n```py\ny = 3\n```", "y = 3\n"),
    ("```python\nimport os\nx = os.getcwd(", "import os\nx = os.getcwd(\n"),  # cut by the budget: still its code
    ("I would train a random forest.", None),
    ("```python\n\n```", None),
    ("", None),
])
def test_the_code_is_the_first_python_block_and_a_reply_without_one_is_malformed(reply, code):
    assert extract_code(reply) == code


@pytest.mark.parametrize("reply, code", [
    ("<think>\nMaybe ```python\nimport os\n``` first.\n</think>\n\n```python\nx = 1\n```", "x = 1\n"),
    ("draft ```python\nimport os\n```\n</think>\n```python\nx = 1\n```", "x = 1\n"),  # the prompt opened it
    ("<think>\nI could write ```python\nx = 1\n``` but", None),  # cut mid-thought: no answer yet
    ("<think>\n\n</think>\n\n```python\ny = 2\n```", "y = 2\n"),  # Qwen3 with thinking off
])
def test_the_code_is_taken_after_the_thinking(reply, code):
    """A reasoning model's drafted fence inside <think> is not its answer (before: the draft was taken)."""
    assert extract_code(reply) == code


def test_strip_thinking_keeps_a_reply_without_tags_whole():
    from wmrl.agent.llm.solution import strip_thinking

    assert strip_thinking("```python\nx = 1\n```") == "```python\nx = 1\n```"
    assert strip_thinking("<think>a</think>b</think>c") == "c" and strip_thinking(None) == ""


def test_a_reply_made_from_code_extracts_back_to_the_same_code():
    code = "import numpy as np\nprint(np.arange(3))\n"
    assert extract_code(reply_for(code)) == code


def test_feedback_asks_for_a_fix_except_after_the_last_turn():
    assert "Fix the code" in feedback_message("status: runtime_error", 1, 3)["content"]
    assert "Fix" not in feedback_message("status: runtime_error", 3, 3)["content"]


def test_the_compact_script_drops_prints_and_docstrings_but_keeps_every_statement(pool):
    task = pool.train[0]
    full = render(task, baseline_choices(task))
    short = compact(full)
    assert "print(" not in short and '"""' not in short
    assert len(short) < len(full)
    assert "to_csv(SUBMISSION_PATH" in short


@pytest.mark.slow
@pytest.mark.parametrize("name", ["iris_species", "movie_genre", "face_detection", "breast_cancer_diagnosis"])
def test_grammar_targets_run_ok_in_the_real_sandbox_under_both_contracts(pool, name):
    """The SFT targets are real solutions: the compact script and the fit_predict scaffold both run and score."""
    from wmrl.sandbox import Sandbox

    task = pool[name]
    c = baseline_choices(task)
    scripts = [assemble(task, script_target(task, c), "script"),
               assemble(task, fit_predict_target(task, c), "fit_predict")]
    results = Sandbox("local", timeout_s=30).run_many([(task, s) for s in scripts], max_workers=1)
    assert [r.status for r in results] == ["ok", "ok"], [r.reason for r in results]
    assert results[0].percentile == pytest.approx(results[1].percentile)


# -- the multi-turn rollout with a scripted generator and the real tokenizer and sandbox -------------------------

class ScriptedGenerator:
    """One row's replies given in advance, consumed turn by turn; records every context it was given."""

    def __init__(self, tokenizer, replies: list[str]):
        self.tok, self.replies, self.calls = tokenizer, list(replies), []

    def generate(self, contexts, max_new_tokens, seed):
        self.calls.append([list(c) for c in contexts])
        return [self.tok(self.replies.pop(0), add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
                for _ in contexts], None


@pytest.fixture(scope="module")
def tokenizer(smollm2_folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(smollm2_folder))


def test_a_rollout_feeds_back_masks_the_feedback_and_stops_at_the_first_turn_that_runs(pool, tokenizer):
    from wmrl.ledger import ComputeLedger
    from wmrl.sandbox import Sandbox
    from wmrl.trainer.llm.rollout import RolloutSettings, rollout
    from wmrl.trainer.rollout import Scorer

    task = pool["iris_species"]
    good = reply_for(fit_predict_target(task, baseline_choices(task)))
    gen = ScriptedGenerator(tokenizer, ["I think a forest would do.", good, "never asked"])
    sandbox = Sandbox("local", timeout_s=30)
    scorer = Scorer(sandbox, None, ComputeLedger(), None, 1)
    (traj,) = rollout(gen, tokenizer, [task], np.ones(1, bool), np.zeros(1, bool), scorer,
                      RolloutSettings(sandbox=sandbox.facts, contract="fit_predict", max_turns=3, max_new_tokens=600,
                                      obs_max_tokens=64), seed=0)
    first, second = traj.turns
    assert first.malformed and first.real_reward == 0.0
    assert second.real.status == "ok" and traj.real_reward == pytest.approx(0.5 + 0.5 * second.real.percentile)
    assert len(traj.turns) == 2 and second.feedback_ids == []  # ok ends the trajectory
    ids, mask = traj.completion_ids, traj.env_mask
    assert len(ids) == len(mask) == len(first.reply_ids) + len(first.feedback_ids) + len(second.reply_ids)
    assert sum(mask) == len(first.reply_ids) + len(second.reply_ids)
    feedback = tokenizer.decode([t for t, m in zip(ids, mask) if m == 0])
    assert "status: malformed" in feedback and "<|im_start|>user" in feedback and feedback.endswith("assistant\n")
    # the second turn was generated from exactly prompt + reply 1 + feedback 1
    assert gen.calls[1][0] == traj.prompt_ids + first.reply_ids + first.feedback_ids


def test_predicted_rows_read_the_world_models_report_and_are_never_executed(pool, tokenizer):
    from wmrl.ledger import ComputeLedger
    from wmrl.trainer.llm.rollout import RolloutSettings, rollout
    from wmrl.trainer.rollout import Scorer
    from wmrl.world_model.base import aggregate

    class NoSandbox:
        def run_many(self, jobs, max_workers):
            raise AssertionError("a predicted row was executed")

    class FailingWorldModel:
        def predict_many(self, items):
            return [aggregate([{"check": "data_refs", "verdict": "fail", "error_type": "KeyError", "error_line": 3,
                                "reason": "column 'target' is not in train.csv"}]) for _ in items]

    task = pool["iris_species"]
    code = reply_for("def fit_predict(train, test):\n    return train['target']\n")
    gen = ScriptedGenerator(tokenizer, [code, code])
    scorer = Scorer(NoSandbox(), FailingWorldModel(), ComputeLedger(), None, 1)
    (traj,) = rollout(gen, tokenizer, [task], np.zeros(1, bool), np.ones(1, bool), scorer,
                      RolloutSettings(sandbox=LAPTOP, contract="fit_predict", max_turns=2, max_new_tokens=64,
                                      obs_max_tokens=64), seed=0)
    assert traj.real_reward is None and traj.wm_reward == pytest.approx(0.1)
    assert "KeyError" in tokenizer.decode(traj.turns[0].feedback_ids)
    assert "target" in tokenizer.decode(traj.turns[0].feedback_ids)
