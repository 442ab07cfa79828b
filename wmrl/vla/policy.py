r"""The small multi-task policy (the MiniVLA analog) and its behaviour-cloning SFT.

A Gaussian MLP :math:`\pi(a \mid s, z) = \mathcal N(\mu_\theta(s, z), \operatorname{diag}\sigma^2)`
reads the 39-d Meta-World state :math:`s` and a task one-hot :math:`z` (the analog of the language
instruction). The standard deviation is state-independent and floored at ``min_std``: GRPO needs
the policy to keep exploring after SFT, and an unfloored BC fit would shrink it to the demos'
noise level.

SFT is behaviour cloning: maximise :math:`\log \pi(a^* \mid s, z)` on expert-labelled states
(:func:`collect_demos`). The demos are DART-style (Laskey et al., 2017): the scripted expert's
action is executed with Gaussian noise, the clean expert action is the label, so the cloned
policy sees some recovery states. A rollout's log-probability is the sum over its steps,
:math:`\log \pi(\tau) = \sum_t \log \pi(a_t \mid s_t, z)` (the sequence log-prob of the paper's
GRPO, with actions in place of tokens).

The policy computes in float64 with :mod:`wmrl.vla.exact`'s operations, so a run gives the same
bits on every CPU, and the same episodes on every x86-64 CPU with AVX2 and FMA (why that takes more
than float64: that module).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from wmrl.vla import exact
from wmrl.vla.envs import ACT_DIM, OBS_DIM, TaskEnv, expert_policy
from wmrl.vla.exact import DTYPE

__all__ = ["Demos", "GaussianPolicy", "bc_train", "collect_demos"]

_LOG_SQRT_2PI = 0.9189385332046727  # log(2 pi) / 2


@dataclass
class Demos:
    """Expert demonstrations: per-step arrays plus per-demo state sequences (for the progress model)."""

    obs: np.ndarray           # (N, OBS_DIM) visited states
    task: np.ndarray          # (N,) task index
    action: np.ndarray        # (N, ACT_DIM) clean expert labels
    episodes: list            # [(task_idx, states (T+1, OBS_DIM))] successful demos only
    success_rate: float


def collect_demos(tasks, states, per_state: int, noise: float, horizon: int, seed: int) -> Demos:
    """Run the scripted expert with action noise ``noise`` from each of ``states`` of each task."""
    rng = np.random.default_rng(seed)
    obs, task_ids, acts, episodes, ok = [], [], [], [], []
    for ti, task in enumerate(tasks):
        env, expert = TaskEnv(task), expert_policy(task)
        for s in states:
            for _ in range(per_state):
                o, traj, done = env.reset(int(s)), [], False
                traj.append(o)
                for _ in range(horizon):
                    a = np.clip(expert.get_action(o), -1, 1)
                    obs.append(o), task_ids.append(ti), acts.append(a)
                    o, done = env.step(a + noise * rng.standard_normal(ACT_DIM))
                    traj.append(o)
                    if done:
                        break
                ok.append(done)
                if done:
                    episodes.append((ti, np.asarray(traj)))
    return Demos(np.asarray(obs), np.asarray(task_ids), np.asarray(acts), episodes, float(np.mean(ok)))


class GaussianPolicy(nn.Module):
    """:math:`\\mu_\\theta(s, z)` by a tanh MLP on normalised states; a learned, floored log-std.

    Everything it computes, forward and backward, is float64 in :mod:`wmrl.vla.exact`'s arithmetic,
    the same bits on every CPU; ``net`` holds the layers' parameters (and their names in a state dict).
    """

    def __init__(self, n_tasks: int, hidden: int = 128, init_std: float = 0.3, min_std: float = 0.1,
                 seed: int = 0):
        super().__init__()
        self.n_tasks = n_tasks
        self.net = nn.Sequential(
            nn.Linear(OBS_DIM + n_tasks, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh(),
            nn.Linear(hidden, ACT_DIM),
        )
        self.log_std = nn.Parameter(torch.full((ACT_DIM,), math.log(init_std)))
        self.min_log_std = math.log(min_std)
        self.register_buffer("obs_mean", torch.zeros(OBS_DIM))
        self.register_buffer("obs_std", torch.ones(OBS_DIM))
        exact.init_(self, seed)

    def set_normaliser(self, obs: np.ndarray) -> None:
        self.obs_mean.copy_(torch.as_tensor(obs.mean(0), dtype=DTYPE))
        self.obs_std.copy_(torch.as_tensor(obs.std(0) + 1e-3, dtype=DTYPE))

    def mean_log_std(self, obs, task) -> tuple[torch.Tensor, torch.Tensor]:
        """:math:`\\mu_\\theta(s, z)` for every row (each row computed alone, so whatever the batch) and the
        floored log-std."""
        x = (torch.as_tensor(obs, dtype=DTYPE) - self.obs_mean) / self.obs_std
        z = nn.functional.one_hot(torch.as_tensor(task, dtype=torch.long), self.n_tasks).to(DTYPE)
        return exact.mlp(self.net, torch.cat([x, z], dim=-1), exact.tanh), self.log_std.clamp(min=self.min_log_std)

    def std(self) -> float:
        """The mean of the (unfloored) standard deviation over action dimensions, as logged."""
        return float(exact.fsum(exact.exp(self.log_std.detach()), 0)) / ACT_DIM

    def log_prob(self, obs, task, actions) -> torch.Tensor:
        """Per-step :math:`\\log \\pi(a_t \\mid s_t, z)`, summed over action dimensions."""
        mean, log_std = self.mean_log_std(obs, task)
        return _gaussian_log_prob(torch.as_tensor(actions, dtype=DTYPE), mean, log_std)

    def sampler(self):
        """``act(obs, task, eps) -> (actions, logp)`` for :func:`wmrl.vla.envs.rollout_batch`:
        :math:`a = \\mu + \\sigma \\odot \\epsilon` with the rollout's own standard normal draws ``eps``.

        Each row's mean is computed alone, so with its own draws (:mod:`wmrl.vla.crn`) a rollout is
        the same whichever rollouts share its batch and whenever they end.
        """

        @torch.no_grad()
        def act(obs, task, eps):
            mean, log_std = self.mean_log_std(obs, task)
            a = mean + exact.exp(log_std) * torch.as_tensor(eps, dtype=DTYPE)
            return a.numpy(), _gaussian_log_prob(a, mean, log_std).numpy()

        return act


def _gaussian_log_prob(a: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_d -\tfrac12 ((a_d - \mu_d)/\sigma_d)^2 - \log \sigma_d - \tfrac12 \log 2\pi`."""
    log_std = exact.broadcast(log_std, mean)
    z = (a - mean) / exact.exp(log_std)
    return exact.fsum(-0.5 * (z * z) - log_std - _LOG_SQRT_2PI, -1)


def bc_train(policy: GaussianPolicy, demos: Demos, epochs: int, lr: float, batch: int, seed: int) -> list[float]:
    """Behaviour cloning by Gaussian NLL; returns the mean loss per epoch (it should fall)."""
    gen = torch.Generator().manual_seed(seed)
    policy.set_normaliser(demos.obs)
    obs = torch.as_tensor(demos.obs, dtype=DTYPE)
    task = torch.as_tensor(demos.task)
    act = torch.as_tensor(demos.action, dtype=DTYPE)
    opt = exact.Adam(policy.parameters(), lr=lr)
    losses = []
    for _ in range(epochs):
        perm, total = torch.randperm(len(obs), generator=gen), 0.0
        for i in range(0, len(obs), batch):
            j = perm[i:i + batch]
            loss = -exact.fsum(policy.log_prob(obs[j], task[j], act[j]), 0) / len(j)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.item() * len(j)
        losses.append(total / len(obs))
    return losses
