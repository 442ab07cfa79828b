"""Throughput of the VLA analog: ``python -m bench.vla [--preset small]``.

Prints environment steps per second for single-environment stepping (a fresh policy call per
environment) and for lockstep batches (one policy call for the whole wave), and the rollout
cost of one GRPO training step of the preset (``groups * group_size`` rollouts). The policy is
the untrained network: the cost of a step does not depend on its weights, only on how long
rollouts last, so the horizon is run out in full here (an upper bound; successful rollouts
stop early during training).
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
import torch

from bench.harness import Bench
from wmrl.presets import preset_names
from wmrl.vla.config import vla_config
from wmrl.vla.crn import TRAIN_NOISE, action_noise
from wmrl.vla.envs import ACT_DIM, TASKS, EnvPool, rollout_batch
from wmrl.vla.policy import GaussianPolicy

__all__ = ["BENCHES", "bench"]


def _time(fn) -> tuple[float, float, int]:
    """(wall seconds, this process's CPU seconds, env steps): on a shared host the CPU figure is
    the one that does not depend on how many other processes compete for the cores."""
    t0, c0 = time.perf_counter(), time.process_time()
    steps = fn()
    return time.perf_counter() - t0, time.process_time() - c0, steps


def _setup(preset_name: str = "small"):
    """(policy sampler, env pool, the preset's training section) with every task's environments built once."""
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", module="metaworld")
    train = vla_config("grpo", preset_name).train
    act, pool = GaussianPolicy(len(TASKS)).sampler(), EnvPool()
    jobs = np.repeat(np.arange(len(TASKS)), train.group_size)  # one group per task, to build the pool first
    rollout_batch(pool, act, jobs, np.zeros_like(jobs), 1, _noise(len(jobs), 1))
    return act, pool, train


def _noise(b: int, horizon: int) -> np.ndarray:
    """Action noise of ``b`` rollouts (its cost is part of a rollout's, as in training)."""
    return action_noise(0, TRAIN_NOISE, [(0, 0, i) for i in range(b)], horizon, ACT_DIM)


def _train_step(act, pool, train):
    """The rollouts of one GRPO training step (``train``: a preset's training section), run out to the full horizon."""
    g, n = train.groups_per_step, train.group_size
    task = np.repeat(np.arange(g) % len(TASKS), n)
    return lambda: rollout_batch(pool, act, task, np.repeat(np.arange(g), n), train.horizon,
                                 _noise(g * n, train.horizon)).env_steps


def bench(preset_name: str = "small", horizon: int = 50) -> dict:
    act, pool, train = _setup(preset_name)
    n = train.group_size
    out = {}
    for b in (1, n):
        def run(b=b):
            return sum(rollout_batch(pool, act, [t] * b, [0] * b, horizon, _noise(b, horizon), max_envs=b).env_steps
                       for t in range(len(TASKS)))
        dt, cpu, steps = _time(run)
        out[f"env_steps_per_s_batch{b}"], out[f"env_steps_per_cpu_s_batch{b}"] = steps / dt, steps / cpu
    dt, cpu, steps = _time(_train_step(act, pool, train))
    out.update({"train_step_rollout_s": dt, "train_step_rollout_cpu_s": cpu, "train_step_env_steps": steps})
    return out


#: For ``make bench`` (``bench/micro.py``): the rollout cost of one ``small`` training step.
BENCHES = [Bench("rollouts of one small VLA training step", lambda: _train_step(*_setup("small")), slow=True,
                 note="full horizon, an upper bound; `python -m bench.vla` also prints env steps/s")]


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.vla", description=__doc__.split("\n\n")[0])
    ap.add_argument("--preset", choices=preset_names(), default="small")
    args = ap.parse_args(argv)
    res = bench(args.preset)
    p = vla_config("grpo", args.preset).train
    b = p.group_size
    print(f"env steps/s (wall / per CPU-second), one env at a time: {res['env_steps_per_s_batch1']:6.0f} / "
          f"{res['env_steps_per_cpu_s_batch1']:6.0f}")
    print(f"env steps/s (wall / per CPU-second), {b} envs in lockstep: {res[f'env_steps_per_s_batch{b}']:6.0f} / "
          f"{res[f'env_steps_per_cpu_s_batch{b}']:6.0f}")
    print(f"rollout cost per training step ({p.groups_per_step} groups x {b}, horizon {p.horizon}, run out in full): "
          f"{res['train_step_rollout_s']:.1f} s wall, {res['train_step_rollout_cpu_s']:.1f} s CPU, "
          f"{res['train_step_env_steps']} env steps")


if __name__ == "__main__":
    main()
