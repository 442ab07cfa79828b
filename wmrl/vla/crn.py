r"""Common random numbers: every rollout draws its action noise from its own stream.

Why. A policy's action at step :math:`t` is :math:`a_t = \mu_\theta(s_t, z) + \sigma \odot
\epsilon_t`, :math:`\epsilon_t \sim \mathcal N(0, I)`. If every rollout of a batch drew its
:math:`\epsilon_t` from one shared generator, in the order the live rollouts happen to be
stepped, then one rollout that ends a step earlier would shift the noise of every later one: two
arms evaluated "with the same seed" would share nothing but the seed's name, and the evaluation
noise of a difference between arms would be that of two independent evaluations.

Here each rollout's noise :math:`(\epsilon_0, \dots, \epsilon_{H-1})` is a function of its key
alone (``np.random.default_rng([seed, stream, *key])``, NumPy's ``SeedSequence`` hashing of the
key), so it is

- **robust**: a rollout's draws do not depend on which other rollouts share its batch, how long
  they last, or the order they are stepped in;
- **paired across arms** (common random numbers): the rollout ``(seed, task, state, sample)`` of
  the evaluation gets the same draws whatever the policy, so two arms of a seed differ only by
  their policies, and the noise that both share cancels in their paired difference.

Streams (the first key after the seed): evaluation rollouts are keyed by
``(task, state, sample)``; a training group's (task, state) by ``(step, group)``, its rollouts by
``(step, group, member)``. So every arm of a seed trains on the same sequence of (task, state)
groups, and at step 1, where every arm still has the SFT policy, on identical rollouts.

What it buys: robustness and pairing, not precision. The trained policies differ enough that
the same draws take their rollouts to different places, so two policies' outcome noise on the
same draws is about as uncorrelated as with one shared generator, and the evaluation noise of a
paired difference stays about what it would be. More rollouts per state (``eval.samples``) are
the lever that reduces it (its SD falls as one over their square root).
"""

from __future__ import annotations

import numpy as np

__all__ = ["EVAL", "SCHEME", "TRAIN_DRAWS", "TRAIN_NOISE", "action_noise", "train_draws"]

#: Stamped into every checkpoint and result: a run written under another noise scheme (one shared
#: generator, before this module) is retrained, never resumed or reused (:mod:`wmrl.vla.runner`).
SCHEME = "crn-per-rollout"
# Stream labels: the second word of every key, so no two purposes ever share a stream.
EVAL, TRAIN_DRAWS, TRAIN_NOISE = 1, 2, 3


def action_noise(seed: int, stream: int, keys, horizon: int, act_dim: int) -> np.ndarray:
    """``(B, horizon, act_dim)`` standard normal draws; row ``b`` depends only on ``(seed, stream, *keys[b])``."""
    keys = np.asarray(keys, dtype=np.int64).reshape(len(keys), -1)
    if (keys < 0).any() or seed < 0:
        raise ValueError(f"noise keys and the seed must be non-negative integers, got seed {seed} and keys {keys}")
    return np.stack([np.random.default_rng([seed, stream, *map(int, k)]).standard_normal((horizon, act_dim))
                     for k in keys]) if len(keys) else np.zeros((0, horizon, act_dim))


def train_draws(seed: int, step: int, n_groups: int, n_tasks: int, n_states: int) -> tuple[np.ndarray, np.ndarray]:
    """The (task, training state) of each group of training ``step``, group ``g`` from ``(seed, step, g)``
    alone: every arm of ``seed`` trains on the same groups (``anchor_only`` on the first of them)."""
    draws = [np.random.default_rng([seed, TRAIN_DRAWS, step, g]).integers([n_tasks, n_states]) for g in range(n_groups)]
    tasks, states = np.asarray(draws, dtype=int).reshape(n_groups, 2).T
    return tasks, states
