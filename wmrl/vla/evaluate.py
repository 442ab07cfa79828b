r"""Evaluation on the fixed initial states: success rate, in-domain / OOD / Overall, Best@k, All@k.

Each of the first ``eval_states`` initial states of every task gets ``eval_samples`` = k rollouts
of the stochastic policy (as the paper samples at temperature 1). Per state, the success rate is
the mean over the k rollouts (avg@k), Best@k is 1 if any succeeded, All@k if all did.
In-domain = states 0-15 (the training states), OOD = states 16-49; the paper's Overall weights
them by their share of the 50 states, :math:`0.32\,SR_{ID} + 0.68\,SR_{OOD}`, which equals the
plain mean over all 50 states.

The evaluation's action noise is common random numbers (:mod:`wmrl.vla.crn`): rollout
``(task, state, sample)`` of seed ``s`` draws the same noise whatever the policy, so every arm of a
seed is evaluated on the same draws and their paired difference is free of the noise they share.
"""

from __future__ import annotations

import numpy as np

from wmrl.vla.crn import EVAL, action_noise
from wmrl.vla.envs import ACT_DIM, N_STATES, N_TRAIN, TASKS, EnvPool, rollout_batch

__all__ = ["ID_WEIGHT", "evaluate", "summarise"]

ID_WEIGHT = N_TRAIN / N_STATES  # 0.32


def evaluate(policy, pool: EnvPool, n_states: int, samples: int, horizon: int, seed: int) -> np.ndarray:
    """Successes as a (tasks, n_states, samples) array; rollout (task, state, sample) has its own noise stream."""
    t = np.repeat(np.arange(len(TASKS)), n_states * samples)
    s = np.tile(np.repeat(np.arange(n_states), samples), len(TASKS))
    k = np.tile(np.arange(samples), len(TASKS) * n_states)
    noise = action_noise(seed, EVAL, np.stack([t, s, k], 1), horizon, ACT_DIM)
    ro = rollout_batch(pool, policy.sampler(), t, s, horizon, noise)
    return ro.success.reshape(len(TASKS), n_states, samples)


def summarise(success: np.ndarray) -> dict:
    """Metrics from a (tasks, states, samples) success array, overall and per task.

    If fewer than 50 states were evaluated (the smoke preset), OOD covers those past 15.
    """
    per_state = success.mean(-1)
    best, every = success.max(-1), success.min(-1)
    out = {}
    for name, sl in [("all", slice(None))] + [(t, slice(i, i + 1)) for i, t in enumerate(TASKS)]:
        sr_id, sr_ood = per_state[sl, :N_TRAIN].mean(), per_state[sl, N_TRAIN:].mean()
        out[name] = {
            "sr_id": float(sr_id), "sr_ood": float(sr_ood),
            "overall": float(ID_WEIGHT * sr_id + (1 - ID_WEIGHT) * sr_ood),
            "best_at_k": float(best[sl].mean()), "all_at_k": float(every[sl].mean()),
        }
    out["k"] = int(success.shape[-1])
    return out
