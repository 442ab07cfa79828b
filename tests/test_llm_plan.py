"""The plan contract: a few key=value lines of the grammar's decisions, rendered by the grammar's own renderer."""

from __future__ import annotations

import re

import numpy as np
import pytest

from wmrl.agent.grammar import SLOTS, baseline_choices, random_choices, render
from wmrl.agent.habits import habit_choices
from wmrl.agent.llm.plan import INCIDENTAL, PlanError, design_choices, design_keys, parse_plan, plan_text
from wmrl.agent.llm.prompt import feedback_message, plan_description, task_messages
from wmrl.agent.llm.solution import solution_for
from wmrl.sandbox import SandboxFacts

LAPTOP = SandboxFacts("local", 7.0, 45.0, 1234, 1.0, 0, False, ())
TABLE = ("categorical=onehot\npreprocess=impute_standardize\nmodel=forest\ncapacity=medium\nvalidation=holdout")


def test_a_plan_of_any_grammar_decisions_renders_exactly_the_grammar_agents_script(pool):
    """The habits' draws (mistakes included) and uniform draws, on every task: plan -> choices -> the same script."""
    rng = np.random.default_rng(0)
    for task in pool:
        for draw in [baseline_choices(task)] + [habit_choices(task, rng) for _ in range(6)] + [
                random_choices(task, rng) for _ in range(6)]:
            plan = plan_text(task, draw)
            assert parse_plan(task, plan) == draw
            sol = solution_for(task, plan, "plan")
            assert sol.code == plan and sol.reason == "" and sol.script == render(task, draw)


def test_a_plan_names_every_design_key_and_only_the_incidental_slots_that_deviate(pool):
    task = pool["penguin_species"]
    assert design_keys(task) == ("categorical", "preprocess", "model", "capacity", "validation")
    assert design_keys(pool["movie_genre"]) == ("text_features", "ngram", "model", "capacity", "validation")
    assert design_keys(pool["face_detection"]) == ("preprocess", "image_features", "model", "capacity", "validation")
    c = baseline_choices(task)
    assert plan_text(task, c) == TABLE
    assert plan_text(task, {**c, "api": "removed_kwarg"}).splitlines()[-1] == "api=removed_kwarg"
    assert all(k in INCIDENTAL or k in design_keys(task) for k in (line.split("=")[0] for line in
                                                                    plan_text(task, {**c, "submission": "no_write"}).splitlines()))
    slipped = {**c, "api": "removed_kwarg", "model": "knn", "capacity": "huge"}
    assert plan_text(task, design_choices(slipped)) == TABLE.replace("forest", "knn").replace("medium", "huge")


@pytest.mark.parametrize("reply", [
    TABLE,
    "```\n" + TABLE + "\n```",
    "Here is my plan:\n```plan\n" + TABLE + "\n```\nGood luck.",  # the fence's body is the plan
    "<think>\nforest, I think\n</think>\n" + TABLE,
    "\n\n" + TABLE.replace("=", " = ").replace("\n", "\n\n") + "\n  ",  # spaces and blank lines
    "validation=holdout\ncapacity=medium\nmodel=forest\npreprocess=impute_standardize\ncategorical=onehot",  # any order
])
def test_a_valid_plan_parses_whatever_its_layout(pool, reply):
    task = pool["penguin_species"]
    sol = solution_for(task, reply, "plan")
    assert sol.script == render(task, baseline_choices(task)) and sol.reason == ""


def test_a_partial_plan_keeps_the_neutral_incidental_options_but_a_missing_design_key_is_invalid(pool):
    task = pool["penguin_species"]
    choices = parse_plan(task, TABLE)
    assert {k: choices[k] for k in INCIDENTAL} == {s.name: s.options[0] for s in SLOTS if s.name in INCIDENTAL}
    assert choices["text_features"] == "none" and choices["image_features"] == "none"  # not for a table
    with pytest.raises(PlanError, match="does not choose capacity, validation"):
        parse_plan(task, "categorical=onehot\npreprocess=none\nmodel=forest")
    assert parse_plan(task, TABLE + "\ndata_use=subsample")["data_use"] == "subsample"


@pytest.mark.parametrize("name, reply, reason", [
    ("penguin_species", "", "holds no plan"),
    ("penguin_species", "I would train a random forest on the penguins.", "is not a key=value line"),
    ("penguin_species", "```python\nimport pandas as pd\n```", "is not a key=value line"),
    ("penguin_species", TABLE.replace("model=forest", "model: forest"), "'model: forest' is not a key=value line"),
    ("penguin_species", TABLE.replace("model=forest", "modle=forest"), "unknown key 'modle'"),
    ("penguin_species", TABLE + "\nmodel=tree", "key 'model' is given twice"),
    ("penguin_species", TABLE.replace("forest", "xgboost"), "model='xgboost' is not an option here"),
    ("penguin_species", TABLE.replace("forest", "forest|boosting"), "not an option here"),
    ("penguin_species", TABLE + "\ntext_features=tfidf_word", "text_features='tfidf_word' is not an option here"),
    ("diabetes_progression", TABLE.replace("forest", "naive_bayes"), "naive_bayes"),  # no regressor of the family
    ("movie_genre", TABLE, "categorical='onehot' is not an option here"),
    ("movie_genre", "model=linear\ncapacity=small\nvalidation=none", "does not choose text_features, ngram"),
    ("penguin_species", "<think>\n" + TABLE, "holds no plan"),  # cut mid-thought: no answer yet
])
def test_a_reply_that_is_not_a_valid_plan_is_malformed_with_its_first_reason_and_never_raises(pool, name, reply,
                                                                                              reason):
    sol = solution_for(pool[name], reply, "plan")
    assert sol.script is None and sol.reason.startswith("the reply is not a valid plan: ") and reason in sol.reason


def test_random_text_never_crashes_the_parser(pool):
    rng = np.random.default_rng(1)
    alphabet = list("abcdefmodelcapacity=_|:\n `{}\"") + ["model", "=", "forest", "\n", "```", "<think>", "</think>"]
    task = pool["penguin_species"]
    for _ in range(300):
        reply = "".join(rng.choice(alphabet, size=rng.integers(0, 40)))
        sol = solution_for(task, reply, "plan")
        assert (sol.script is None) == bool(sol.reason)


def test_the_plan_prompt_lists_the_tasks_keys_and_open_options_and_no_files_or_code(pool):
    task = pool["diabetes_progression"]
    system, user = task_messages(task, "plan", LAPTOP)
    text = user["content"]
    assert "plan only" in system["content"] and "code only" not in system["content"]
    assert plan_description(task) in text and "Time limit: 7 s of CPU time." in text
    assert "## Files in DATA_DIR" not in text and "```python" not in text and "No internet" not in text
    assert "## Submission format" not in text and "Hardware:" not in text
    assert "\nmodel=dummy|linear|knn|tree|forest|boosting|svm\n" in text  # naive_bayes has no regressor
    assert "Reply with the 5 lines only." in text
    assert "Change the plan" in feedback_message("status: timeout", 1, 2, "plan")["content"]
    assert "Change" not in feedback_message("status: timeout", 2, 2, "plan")["content"]


def test_the_plan_description_keeps_what_a_choice_needs_in_fewer_words(pool):
    ames = pool["ames_house_prices"]
    text = plan_description(ames)
    full = ames.description
    assert len(text) < len(full) / 4
    assert text.startswith(full.split("\n\n")[0])  # the title
    assert "The data come from" not in text and "sample_submission" not in text and "## Submission format" not in text
    columns = [ln for ln in full.split("## Columns")[1].split("\n## ")[0].splitlines() if ln.startswith("- ")]
    kinds = re.findall(r"(\d+) (numeric|categorical)", text.split("- features: ")[1].splitlines()[0])
    target = next(ln for ln in columns if ln.startswith(f"- {ames.target_column}:"))
    assert target in text and sum(int(n) for n, _ in kinds) + 2 == len(columns)  # every feature counted, id left out
    assert ("missing values" in text) == ("missing" in full.split("## Columns")[1].split("\n## ")[0])
    rows = re.findall(r"(\d+) rows", full.split("## Files")[1].split("\n## ")[0])
    assert f"- {rows[0]} training rows, {rows[1]} test rows." in text
    assert "(" not in text.split("## Evaluation")[1] and "Lower is better" in text  # the metric without its gloss
    penguins = plan_description(pool["penguin_species"])
    assert "numeric with missing values" in penguins and "## Overview" in penguins
    digits = plan_description(pool["handwritten_digits"])
    assert "image: path of the row's image" in digits, "a column of no counted kind is shown in full"
    tweets = plan_description(pool["tweet_likes"])
    assert "1 free text" in tweets


def test_a_description_it_does_not_recognise_keeps_its_words_without_blank_lines_inside_a_section():
    from types import SimpleNamespace

    own = "# Iris\n\nSome competition's own words.\n\n## Data\n- x.csv: 5 rows"
    assert plan_description(SimpleNamespace(description=own, target_column="y", id_column="id")) == \
        "# Iris\nSome competition's own words.\n\n## Data\n- x.csv: 5 rows"


def test_the_warm_starts_plan_targets_are_the_habits_plans_of_the_training_tasks(pool):
    from wmrl.trainer.llm.sft import sft_dataset

    rows = sft_dataset(pool.train, "plan", 3, 0, LAPTOP)
    by_name = {t.name: t for t in pool.train}
    assert {r["task"] for r in rows} == set(by_name)
    for row in rows:
        task = by_name[row["task"]]
        reply = row["completion"][0]["content"]
        assert row["prompt"] == task_messages(task, "plan", LAPTOP)
        assert "```" not in reply and solution_for(task, reply, "plan").script is not None
        assert [line.split("=")[0] for line in reply.splitlines()] == list(design_keys(task)), "the design keys alone"


# -- the rollout, with a scripted generator and the real tokenizer and sandbox ------------------------------------

class Scripted:
    def __init__(self, tokenizer, replies):
        self.tok, self.replies = tokenizer, list(replies)

    def generate(self, contexts, max_new_tokens, seed):
        return [self.tok(self.replies.pop(0), add_special_tokens=False)["input_ids"] + [self.tok.eos_token_id]
                for _ in contexts], None


def test_a_plan_rollout_feeds_back_the_parse_reason_then_runs_the_rendered_script(pool, smollm2_folder):
    from transformers import AutoTokenizer

    from wmrl.ledger import ComputeLedger
    from wmrl.sandbox import Sandbox
    from wmrl.trainer.llm.rollout import RolloutSettings, rollout
    from wmrl.trainer.rollout import Scorer

    tok = AutoTokenizer.from_pretrained(str(smollm2_folder))
    task = pool["iris_species"]
    plan = plan_text(task, baseline_choices(task))
    sandbox = Sandbox("local", timeout_s=30)
    scorer = Scorer(sandbox, None, ComputeLedger(), None, 1)
    (traj,) = rollout(Scripted(tok, [plan.replace("model=", "family="), plan]), tok, [task], np.ones(1, bool),
                      np.zeros(1, bool), scorer, RolloutSettings(sandbox=sandbox.facts, contract="plan", max_turns=2,
                                                                 max_new_tokens=48, obs_max_tokens=64), seed=0)
    first, second = traj.turns
    assert first.malformed and first.real is None and first.real_reward == 0.0
    feedback = tok.decode(first.feedback_ids)
    assert "status: malformed" in feedback and "unknown key 'family'" in feedback and "Change the plan" in feedback
    assert second.script == render(task, baseline_choices(task)) and second.real.status == "ok"
    assert traj.real_reward == pytest.approx(0.5 + 0.5 * second.real.percentile)


# -- a GRPO step on TRL under the plan contract -------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.extended  # the trainer's path is make test's (test_llm_trainer); the plan's parts are tested above
def test_a_grpo_step_under_the_plan_contract_runs_end_to_end_on_a_tiny_model(pool, tmp_path, smollm2_folder,
                                                                             monkeypatch):
    """``run --agent llm --arm wmrl --preset llm-smoke --set llm.contract=plan`` for one step, with a random
    one-layer Llama as policy: the tiny model samples each reply's first tokens, which are then replaced by a valid
    plan on every other context and by a plan with an unknown key on the rest, so plans are rendered, run in the real
    sandbox and scored by the world model (the program-analysis one: the LLM world model's path on the tiny model is
    test_llm_trainer's), malformed ones get the parser's reason back, and TRL updates on both."""
    pytest.importorskip("trl", reason="the LLM agent needs TRL: pip install -e '.[llm]'")
    from wmrl.experiments.run import run_arm
    from wmrl.models import tiny_llama
    from wmrl.trainer.llm import train as llm_train

    tiny = tiny_llama(tmp_path / "tiny", smollm2_folder)
    tasks = list(pool.train) + list(pool.heldout)
    seen = {"valid": 0, "invalid": 0}

    class EveryOtherReplyAPlan(llm_train.TransformersGenerator):
        def generate(self, contexts, max_new_tokens, seed):
            sampled, logprobs = super().generate(contexts, min(max_new_tokens, 4), seed)
            for i, context in enumerate(contexts):
                text = self.tokenizer.decode(context)
                task = next(t for t in tasks if t.description.strip().splitlines()[0] in text)
                plan = plan_text(task, baseline_choices(task))
                seen["valid" if i % 2 == 0 else "invalid"] += 1
                reply = plan if i % 2 == 0 else "family=forest"
                sampled[i] = self.tokenizer(reply, add_special_tokens=False)["input_ids"] + [self.tokenizer.eos_token_id]
            return sampled, logprobs

    monkeypatch.setattr(llm_train, "TransformersGenerator", EveryOtherReplyAPlan)
    out = tmp_path / "wmrl"
    summary = run_arm("wmrl", "llm-smoke", 0, out, agent="llm", memo_path=tmp_path / "memo.sqlite", progress=False,
                      overrides={"agent.model": str(tiny), "llm.contract": "plan", "train.steps": 1,
                                 "world_model.kind": "static"})
    import pandas as pd

    assert summary["provenance"]["config"]["llm"]["contract"] == "plan"
    assert seen["valid"] > 0 and seen["invalid"] > 0
    steps = pd.read_parquet(out / "steps.parquet")
    assert list(steps.step) == [0] and np.isfinite(steps.loss).all()
    pairs = pd.read_parquet(out / "pairs.parquet")
    assert len(pairs) and pairs.true.nunique() > 1  # anchors whose plans ran beside malformed ones
    assert (pd.read_parquet(out / "eval.parquet").ok_rate > 0).any()
