"""The load benchmark's fixed set of scripts (bench/sandbox_load.py): importable and drawn as documented."""

from bench.sandbox_load import agent_scripts


def test_the_fixed_set_is_n_scripts_round_robin_over_the_pool_and_the_same_for_a_seed():
    first = agent_scripts(6, seed=3)
    assert len(first) == 6
    assert all(isinstance(code, str) and code for _, code in first)
    assert len({task.name for task, _ in first}) == 6  # round robin: six tasks, one script each
    assert [code for _, code in agent_scripts(6, seed=3)] == [code for _, code in first]
