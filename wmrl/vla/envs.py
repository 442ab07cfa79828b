r"""Meta-World tasks, their fixed initial states, and batched rollouts (the LIBERO-Long analog).

The paper's VLA experiment (Table 2) trains on the first 16 of 50 fixed initial states per
LIBERO-Long task and evaluates on all 50. Here each task's 50 initial states are Meta-World's own
seeded goal/object placements (``metaworld.MT1(task, seed=STATE_SEED).train_tasks``: 50 distinct
``rand_vec`` draws from a fixed NumPy seed), so the list is identical on every machine.

Observations are Meta-World's 39-d state vectors; no image is rendered. The states sampled from a
rollout play the role of Robometer's 8 video frames (:mod:`wmrl.vla.progress`).

Why a lean step. ``SawyerXYZEnv.step`` spends about half its time computing Meta-World's shaped
reward (contact scans, tolerance curves) that nothing here uses: the sparse reward is success and
the dense one is the progress estimator. :meth:`TaskEnv.step` runs the same physics and the same
observation code and evaluates only each task's success predicate (the exact inequality of its
``evaluate_state``; ``tests/test_vla.py`` checks both paths agree along expert rollouts).

Why no BLAS. ``np.linalg.norm`` of a vector is a BLAS dot product, and OpenBLAS picks its kernel by
the CPU; kernels written for different CPUs may order or fuse the multiply-adds otherwise, and the
length then moves by a rounding. Meta-World puts such a length into every observation (the gripper
opening), and MuJoCo's contacts turn that rounding into another episode, so the demonstrations and
every run after them would depend on the CPU. :meth:`TaskEnv.reset` and :meth:`TaskEnv.step`
compute the opening, and the success distances, by :func:`length` instead: the squares accumulated
in index order by fused multiply-adds, each rounded once, on every CPU. That is how OpenBLAS's
AVX-512 kernels sum a 3-vector (its AVX2 kernel rounds each product apart), so the committed runs,
recorded on an AVX-512 CPU, keep their bits.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import metaworld
import mujoco
import numpy as np
from metaworld import policies as mw_policies

from wmrl.vla.config import N_STATES, N_TRAIN, TASKS

__all__ = [
    "ACT_DIM",
    "N_STATES",
    "N_TRAIN",
    "OBS_DIM",
    "STATE_SEED",
    "TASKS",
    "EnvPool",
    "Rollouts",
    "TaskEnv",
    "eval_states",
    "expert_policy",
    "initial_states",
    "length",
    "rollout_batch",
    "shared_pool",
    "train_states",
]

STATE_SEED = 0  # seed of the initial-state list; never changes with the experiment seed
OBS_DIM, ACT_DIM = 39, 4

# Success predicates, copied from each task's ``evaluate_state``: (uses hand?, radius).
_SUCCESS = {"reach-v3": (True, 0.05), "push-v3": (False, 0.05), "pick-place-v3": (False, 0.07)}


def _fma(a: float, b: float, c: float) -> float:
    """``a * b + c`` rounded once (a fused multiply-add), exactly: in integers, then one correctly rounded
    division (CPython's int / int)."""
    (an, ad), (bn, bd), (cn, cd) = a.as_integer_ratio(), b.as_integer_ratio(), c.as_integer_ratio()
    return (an * bn * cd + cn * ad * bd) / (ad * bd * cd)


def length(v) -> float:
    """Euclidean length of a short vector: its squares accumulated in index order by fused multiply-adds."""
    total = 0.0
    for x in v:
        total = _fma(float(x), float(x), total)
    return math.sqrt(total)


def _current_obs(env) -> np.ndarray:
    """Meta-World's 18-d current observation with the gripper opening (entry 3) computed by :func:`length`."""
    obs = type(env)._get_curr_obs_combined_no_goal(env)
    apart = env.data.body("rightclaw").xpos - env.data.body("leftclaw").xpos
    obs[3] = min(max(length(apart) / 0.1, 0.0), 1.0)  # Meta-World's normalisation and clip
    return obs


@functools.cache
def _benchmark(task: str) -> metaworld.MT1:
    if task not in _SUCCESS:
        raise ValueError(f"unknown task {task!r}; supported: {sorted(_SUCCESS)}")
    return metaworld.MT1(task, seed=STATE_SEED)


def initial_states(task: str) -> list:
    """The task's fixed list of ``N_STATES`` initial states (Meta-World ``Task`` records)."""
    return list(_benchmark(task).train_tasks[:N_STATES])


def train_states() -> range:
    return range(N_TRAIN)


def eval_states() -> range:
    return range(N_STATES)


def expert_policy(task: str):
    """Meta-World's scripted expert for ``task`` (``get_action(obs) -> action``)."""
    words = task.removesuffix("-v3").split("-")
    return getattr(mw_policies, "Sawyer" + "".join(w.capitalize() for w in words) + "V3Policy")()


class TaskEnv:
    """One Meta-World environment of one task that resets to a chosen fixed initial state."""

    def __init__(self, task: str):
        self.task = task
        self.env = _benchmark(task).train_classes[task]()
        self.env._get_curr_obs_combined_no_goal = functools.partial(_current_obs, self.env)
        self._states = initial_states(task)
        self._hand, self._radius = _SUCCESS[task]
        self.env.set_task(self._states[0])
        space = self.env.sawyer_observation_space
        self._low, self._high = space.low, space.high

    def reset(self, state: int) -> np.ndarray:
        self.env.set_task(self._states[state])
        obs, _ = self.env.reset()
        return obs

    def success(self, obs: np.ndarray) -> bool:
        point = self.env.tcp_center if self._hand else obs[4:7]
        return bool(length(point - self.env._target_pos) <= self._radius)

    def step(self, action: np.ndarray) -> tuple[np.ndarray, bool]:
        """``SawyerXYZEnv.step`` without the shaped reward: returns ``(obs, success)``."""
        e = self.env
        a = np.clip(action, -1.0, 1.0)
        e.set_xyz_action(a[:3])
        e.do_simulation([a[-1], -a[-1]], n_frames=e.frame_skip)
        e.curr_path_length += 1
        for site in e._target_site_config:
            e._set_pos_site(*site)
        mujoco.mj_forward(e.model, e.data)
        obs = np.clip(e._get_obs(), self._low, self._high)
        return obs, self.success(obs)


@dataclass
class Rollouts:
    """A batch of B rollouts of at most ``horizon`` steps; step t is valid where ``mask[b, t]``.

    ``obs[b, t]`` is the state before action t (``obs[b, length[b]]`` the last state);
    ``actions`` are the raw Gaussian samples (before the env's clip), so log-probs are exact.
    """

    task: np.ndarray      # (B,) task index
    state: np.ndarray     # (B,) initial-state index
    obs: np.ndarray       # (B, H+1, OBS_DIM)
    actions: np.ndarray   # (B, H, ACT_DIM)
    logp: np.ndarray      # (B, H) behaviour log-probs
    mask: np.ndarray      # (B, H) bool
    length: np.ndarray    # (B,) steps taken
    success: np.ndarray   # (B,) 1.0 if the task succeeded before the horizon

    @property
    def env_steps(self) -> int:
        return int(self.length.sum())


class EnvPool:
    """Environment instances per task, created on demand and reused across batches.

    Building one costs about 0.3 s (MuJoCo model compile), so a process keeps one pool
    (:func:`shared_pool`) for training and evaluation alike.
    """

    def __init__(self, tasks=TASKS):
        self.tasks = tuple(tasks)
        self._envs: dict[int, list[TaskEnv]] = {i: [] for i in range(len(self.tasks))}

    def get(self, task_idx: int, k: int) -> TaskEnv:
        envs = self._envs[task_idx]
        while len(envs) <= k:
            envs.append(TaskEnv(self.tasks[task_idx]))
        return envs[k]


@functools.cache
def shared_pool() -> EnvPool:
    return EnvPool()


def rollout_batch(pool: EnvPool, act, task_idx, state_idx, horizon: int, noise: np.ndarray,
                  max_envs: int = 8) -> Rollouts:
    """Run B rollouts, in waves of at most ``max_envs`` lockstep environments per task.

    ``act(obs (b, OBS_DIM), task (b,), eps (b, ACT_DIM)) -> (actions (b, ACT_DIM), logp (b,))`` is
    called once per step for the whole wave (the batching that pays: one network call instead of
    b); ``eps`` is row ``t`` of each rollout's own ``noise`` (``(B, horizon, ACT_DIM)``, from
    :func:`wmrl.vla.crn.action_noise`), so a rollout's draws do not depend on its batch. A rollout
    stops at its first success (LIBERO ends an episode on success), so success is the sparse
    reward. Environments are costly to build (about 0.3 s each), hence the cap and the pool.
    """
    task_idx, state_idx = np.asarray(task_idx, int), np.asarray(state_idx, int)
    b = len(task_idx)
    if np.shape(noise) != (b, horizon, ACT_DIM):
        raise ValueError(f"noise must be (rollouts, horizon, ACT_DIM) = {(b, horizon, ACT_DIM)}, got {np.shape(noise)}")
    obs = np.zeros((b, horizon + 1, OBS_DIM))
    actions, logp = np.zeros((b, horizon, ACT_DIM)), np.zeros((b, horizon))
    mask = np.zeros((b, horizon), bool)
    length, success = np.zeros(b, int), np.zeros(b)
    rank = np.zeros(b, int)  # position of each job among the jobs of its task
    for t in np.unique(task_idx):
        rank[task_idx == t] = np.arange((task_idx == t).sum())
    for wave in range(int(rank.max()) // max_envs + 1):
        jobs = np.flatnonzero(rank // max_envs == wave)
        envs = [pool.get(int(task_idx[i]), int(rank[i] % max_envs)) for i in jobs]
        obs[jobs, 0] = [env.reset(int(state_idx[i])) for env, i in zip(envs, jobs)]
        alive = np.ones(len(jobs), bool)
        for t in range(horizon):
            live = np.flatnonzero(alive)
            if live.size == 0:
                break
            rows = jobs[live]
            a, lp = act(obs[rows, t], task_idx[rows], noise[rows, t])
            actions[rows, t], logp[rows, t], mask[rows, t] = a, lp, True
            for j, k in enumerate(live):
                i = jobs[k]
                obs[i, t + 1], ok = envs[k].step(a[j])
                length[i] = t + 1
                if ok:
                    success[i], alive[k] = 1.0, False
    return Rollouts(task_idx, state_idx, obs, actions, logp, mask, length, success)
