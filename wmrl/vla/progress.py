r"""The frozen progress estimator: this experiment's world model, the Robometer analog.

In the paper's Table 2 the world model is Robometer, a learned reward model that reads 8 frames
sampled from a rollout video and predicts task progress in [0, 1]; it is used frozen as a dense
reward. Here the "frames" are 8 Meta-World states spaced evenly over the rollout,
:math:`t_k = \operatorname{round}(k L / 7)`, :math:`k = 0..7` (:func:`frame_indices`), and the
estimator is an MLP :math:`\hat p = \sigma(f_\psi(s_{t_0}, \dots, s_{t_7}, z))`.

Training data are the expert demonstrations only. For a successful demo of length :math:`T`, a
prefix ending at :math:`e \in \{1..T\}` is a training example with the 8 frames of that prefix and
target :math:`e/T` (the share of the demonstration completed), the standard progress label. So
the estimator has never seen a failure: off the demonstrated states (a policy that hovers near
the object, pushes it past the goal, drops it) its output is an extrapolation, biased in a way
no one designed. That bias is what WMRL's isotonic calibration and inverse-variance fusion have
to correct. After training the estimator is frozen (``requires_grad=False``, ``eval()``).

Frame features (11-d): the gripper opening, the object height, and the three relative vectors
hand - object, object - goal, hand - goal. A vision reward model sees these relations in the
image; handing them over as features stands in for its pre-trained visual backbone, which a
model trained on a hundred demos could not learn from raw coordinates.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from wmrl.vla import exact
from wmrl.vla.envs import Rollouts
from wmrl.vla.exact import DTYPE

__all__ = ["FRAME_DIM", "N_FRAMES", "ProgressEstimator", "frame_features", "frame_indices", "train_progress"]

N_FRAMES = 8
FRAME_DIM = 11


def frame_indices(length: int) -> np.ndarray:
    """Indices of the 8 frames of a rollout with ``length`` steps (states 0..length)."""
    return np.rint(np.linspace(0, length, N_FRAMES)).astype(int)


def frame_features(states: np.ndarray, length: int) -> np.ndarray:
    """The (8 * FRAME_DIM)-d input: the 8 sampled frames, flattened in time order."""
    f = states[frame_indices(length)]
    hand, grip, obj, goal = f[:, 0:3], f[:, 3:4], f[:, 4:7], f[:, 36:39]
    return np.concatenate([grip, obj[:, 2:3], hand - obj, obj - goal, hand - goal], axis=1).reshape(-1)


class ProgressEstimator(nn.Module):
    """The MLP :math:`\\sigma(f_\\psi(\\text{frames}, z))`, in :mod:`wmrl.vla.exact`'s float64 arithmetic (as the policy)."""

    def __init__(self, n_tasks: int, hidden: int = 128, seed: int = 0):
        super().__init__()
        self.n_tasks = n_tasks
        d = N_FRAMES * FRAME_DIM
        self.net = nn.Sequential(nn.Linear(d + n_tasks, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, 1))
        self.register_buffer("x_mean", torch.zeros(d))
        self.register_buffer("x_std", torch.ones(d))
        exact.init_(self, seed)

    def forward(self, x, task) -> torch.Tensor:
        x = (torch.as_tensor(x, dtype=DTYPE) - self.x_mean) / self.x_std
        z = nn.functional.one_hot(torch.as_tensor(task, dtype=torch.long), self.n_tasks).to(DTYPE)
        return exact.sigmoid(exact.mlp(self.net, torch.cat([x, z], -1), torch.relu)).squeeze(-1)

    def freeze(self) -> ProgressEstimator:
        self.eval()
        for p in self.parameters():
            p.requires_grad_(False)
        return self

    @torch.no_grad()
    def score(self, ro: Rollouts) -> np.ndarray:
        """Dense reward of each rollout: predicted progress reached at its last state."""
        x = np.stack([frame_features(ro.obs[i], int(ro.length[i])) for i in range(len(ro.length))])
        return self(x, ro.task).numpy()


def _prefix_examples(episodes, per_episode: int, rng) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xs, ts, ys = [], [], []
    for task, states in episodes:
        total = len(states) - 1
        ends = np.unique(np.r_[total, rng.integers(1, total + 1, size=per_episode)])
        for e in ends:
            xs.append(frame_features(states, int(e)))
            ts.append(task)
            ys.append(e / total)  # progress label: share of the demo completed
    return np.asarray(xs), np.asarray(ts), np.asarray(ys)


def train_progress(episodes, n_tasks: int, epochs: int, lr: float, per_episode: int, seed: int) -> ProgressEstimator:
    """Fit the estimator on demo prefixes by squared error on the progress label; return it frozen."""
    rng = np.random.default_rng(seed)
    x, t, y = _prefix_examples(episodes, per_episode, rng)
    model = ProgressEstimator(n_tasks, seed=seed)
    model.x_mean.copy_(torch.as_tensor(x.mean(0), dtype=DTYPE))
    model.x_std.copy_(torch.as_tensor(x.std(0) + 1e-3, dtype=DTYPE))
    xt, tt, yt = torch.as_tensor(x, dtype=DTYPE), torch.as_tensor(t), torch.as_tensor(y, dtype=DTYPE)
    opt = exact.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    for _ in range(epochs):
        perm = torch.randperm(len(xt), generator=gen)
        for i in range(0, len(xt), 256):
            j = perm[i:i + 256]
            err = model(xt[j], tt[j]) - yt[j]
            loss = exact.fsum(err * err, 0) / len(j)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.freeze()
