"""The untrained agent's habits (wmrl/agent/habits.py): a valid prior, followed, masks respected."""

import numpy as np
import pytest

from wmrl.agent import grammar
from wmrl.agent.habits import habit_choices, prior_probabilities, sample_items


def test_habits_give_a_valid_prior_for_every_grammar_slot():
    priors = prior_probabilities()
    assert len(priors) == len(grammar.SLOTS)
    for p, slot in zip(priors, grammar.SLOTS):
        assert p.shape == (len(slot.options),) and p.sum() == pytest.approx(1.0) and (p > 0).all()


def test_habit_choices_follow_the_prior_and_never_pick_a_masked_option(pool):
    rng = np.random.default_rng(0)
    for task in (pool.train[0], next(t for t in pool.train if t.category == "text")):
        masks = grammar.option_mask(task)
        draws = [habit_choices(task, rng) for _ in range(400)]
        for slot, mask in zip(grammar.SLOTS, masks):
            assert all(mask[slot.options.index(d[slot.name])] for d in draws)
    freq = np.mean([d["train_file"] == "correct" for d in draws])
    p = prior_probabilities()[grammar.SLOT_NAMES.index("train_file")][0]
    assert abs(freq - p) < 0.05


def test_a_fixed_script_set_is_drawn_round_robin_and_reproducibly(pool):
    tasks = pool.train[:3]
    items = sample_items(tasks, 7, seed=3)
    assert [t.name for t, _ in items] == [tasks[i % 3].name for i in range(7)]
    assert items == sample_items(tasks, 7, seed=3) and items != sample_items(tasks, 7, seed=4)
    assert all(compile(code, "<script>", "exec") for _, code in items)
