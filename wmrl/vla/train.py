r"""GRPO post-training of the SFT policy, one arm of :mod:`wmrl.arms` (Table 2 of the paper and Table 3's rows).

Every arm of a seed starts from the same SFT policy and frozen progress estimator
(:func:`build_sft`) and sees the same training states. Sparse end-of-rollout success is the
*executed* reward (the anchor signal), the progress estimator's score the *world-model* one.
Which groups get which, Online Debiasing, the :math:`\eta^2` audit and the fused group weights
are :class:`wmrl.step.WMRLStep`'s (Algorithm 1's reward side); this module only rolls out, scores
and updates the policy:

- ``sft``: no post-training, only evaluated;
- ``grpo``: every group rewarded by success :math:`r \in \{0, 1\}`;
- ``wm``: every group rewarded by the raw progress :math:`\hat r \in [0, 1]` (dense, biased);
- ``mix`` / ``od`` / ``ivd`` / ``wmrl``: anchor groups (10%, at least one) rewarded by success,
  the others by progress, calibrated by the isotonic :math:`\hat f` (an estimate of
  :math:`P(\text{success} \mid \hat r)`) in ``od``/``wmrl``, the streams fused by :math:`\rho` in
  ``ivd``/``wmrl``;
- ``anchor_only``: only the anchor groups, rewarded by success.

The simulator reports every rollout's success for free; the method sees it only on executed
groups. It is logged for all rollouts, as a diagnostic (``train_success``), and so is the world
model's fidelity on each step's rollouts, whoever trains on it: mean progress on successes and on
failures, and how well progress ranks success against failure (ROC AUC over the step's rollouts,
and within groups, the ranking GRPO's advantages read). A policy that learns to please the
progress estimator without succeeding (reward hacking, in the ``wm`` arm) shows as progress that
rises while success does not, and as a falling AUC.

Randomness is common random numbers (:mod:`wmrl.vla.crn`): group ``g`` of step ``s`` draws its
(task, state) from ``(seed, s, g)`` and rollout ``i`` of it its action noise from ``(seed, s, g, i)``,
so every arm of a seed trains on the same groups with the same draws (and on identical rollouts at
step 1, where every arm still has the SFT policy).

The update is GRPO's clipped surrogate on per-step likelihood ratios, with the step object's
std-normalised group advantages :math:`A_{ki}` and group weights :math:`w_k`:
:math:`L = -\sum_k w_k \frac1n \sum_i \frac1H \sum_t \min(\kappa_t A_{ki},
\operatorname{clip}(\kappa_t, 1\pm\epsilon) A_{ki})`, :math:`\kappa_t = \pi_\theta/\pi_{old}`.
With :math:`w_k = 1/G` this is plain GRPO; with the fused weights it is the paper's
:math:`g = (\rho g_E + g_{WM}) / (\rho|G_E| + |G_{WM}|)`.

A checkpoint after every step (the config, policy, optimiser, step object, history) lets a killed
run resume to the same result (the draws depend on the step, not on a generator's state); a
checkpoint of another config or stamp (:data:`STAMPS`) is not resumed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from tqdm import tqdm  # text bars: no ipywidgets needed

from wmrl import record as clock
from wmrl.provenance import atomic_path
from wmrl.step import WMRLStep
from wmrl.vla import crn, exact
from wmrl.vla.config import SFTConfig, VLAConfig, VLATrainConfig
from wmrl.vla.envs import ACT_DIM, N_TRAIN, TASKS, rollout_batch, shared_pool
from wmrl.vla.exact import ARITHMETIC, DTYPE
from wmrl.vla.policy import GaussianPolicy, bc_train, collect_demos
from wmrl.vla.progress import ProgressEstimator, train_progress

__all__ = ["STAMPS", "build_sft", "fidelity", "resumable", "sft_path", "stamp_changes", "train"]

#: What a run's results depend on besides its config, stamped into every checkpoint and result: the noise
#: scheme (:mod:`wmrl.vla.crn`) and the arithmetic (:mod:`wmrl.vla.exact`).
STAMPS = {"noise": crn.SCHEME, "arithmetic": ARITHMETIC}
_BEFORE_STAMPS = {"noise": "one shared generator", "arithmetic": "float32"}  # what a file without one was


def stamp_changes(saved: dict) -> list[str]:
    """``"<stamp> (<saved> -> <now>)"`` for every stamp of a saved checkpoint or result that is not today's."""
    was = {k: saved.get(k, _BEFORE_STAMPS[k]) for k in STAMPS}
    return [f"{k} ({was[k]} -> {v})" for k, v in STAMPS.items() if was[k] != v]


def sft_path(sft: SFTConfig, seed: int, cache: Path) -> Path:
    """The cache file of the SFT stage: keyed by the ``sft`` section, the seed, the tasks and the arithmetic."""
    key = json.dumps({"sft": dataclasses.asdict(sft), "seed": seed, "tasks": list(TASKS), "arithmetic": ARITHMETIC},
                     sort_keys=True)
    return Path(cache) / f"seed{seed}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.pt"


def build_sft(sft: SFTConfig, seed: int, cache: Path) -> dict:
    """SFT policy and frozen progress estimator of ``seed``, built once per ``sft`` section and shared by the arms.

    Under an execution record (:mod:`wmrl.record`) the build is its own context, named after its
    cache file (``sft:<file stem>``), so that whichever process builds it in a replay reads its
    recorded clock."""
    path = sft_path(sft, seed, cache)
    if path.exists():
        art = torch.load(path, weights_only=False)
        if art["sft"] == dataclasses.asdict(sft) and art["seed"] == seed:
            return art
    with clock.context(f"sft:{path.stem}"):
        return _build_sft(sft, seed, path)


def _build_sft(sft: SFTConfig, seed: int, path: Path) -> dict:
    t0 = clock.wall()
    demos = collect_demos(TASKS, range(sft.demo_states), sft.demos_per_state, sft.demo_noise, sft.demo_horizon, seed)
    policy = GaussianPolicy(len(TASKS), seed=seed)
    losses = bc_train(policy, demos, sft.bc_epochs, sft.bc_lr, sft.bc_batch, seed)
    wm = train_progress(demos.episodes, len(TASKS), sft.progress_epochs, sft.progress_lr, sft.progress_prefixes, seed)
    art = {"sft": dataclasses.asdict(sft), "seed": seed, "policy": policy.state_dict(), "progress": wm.state_dict(),
           "bc_losses": losses, "demo_success": demos.success_rate, "n_demo_steps": len(demos.obs),
           "build_s": clock.wall() - t0}
    with atomic_path(path) as tmp:
        torch.save(art, tmp)
    return art


class _Run:
    """The mutable state of one (arm, seed) training run; everything here is checkpointed."""

    def __init__(self, cfg: VLAConfig, sft: dict):
        self.cfg = cfg
        self.policy = GaussianPolicy(len(TASKS))
        self.policy.load_state_dict(sft["policy"])
        self.wm = ProgressEstimator(len(TASKS))
        self.wm.load_state_dict(sft["progress"])
        self.wm.freeze()
        self.opt = exact.Adam(self.policy.parameters(), lr=cfg.train.lr)
        t = cfg.train
        self.wmrl = WMRLStep(cfg.arm, cfg.method, t.groups_per_step, t.group_size, seed=cfg.seed,
                             std_normalize=t.std_normalize)
        self.step, self.history, self.pairs, self.wall_s = 0, [], [], 0.0

    def state_dict(self) -> dict:
        return {"config": self.cfg.to_dict(), **STAMPS,
                "policy": self.policy.state_dict(), "opt": self.opt.state_dict(), "wmrl": self.wmrl.state_dict(),
                "step": self.step, "history": self.history, "pairs": self.pairs, "wall_s": self.wall_s,
                "position": clock.position()}

    def load_state_dict(self, s: dict) -> None:
        self.policy.load_state_dict(s["policy"])
        self.opt.load_state_dict(s["opt"])
        self.wmrl.load_state_dict(s["wmrl"])
        self.step, self.history, self.pairs, self.wall_s = s["step"], s["history"], s["pairs"], s["wall_s"]


def _mean(x: np.ndarray) -> float:
    return float(x.mean()) if x.size else float("nan")


def _auc(success: np.ndarray, progress: np.ndarray) -> float:
    """P(progress of a success > that of a failure), ties half (ROC AUC); NaN without both outcomes."""
    return float(roc_auc_score(success, progress)) if 0 < success.sum() < success.size else float("nan")


def fidelity(success: np.ndarray, progress: np.ndarray) -> dict:
    """The world model's fidelity on one step's ``(G, n)`` rollouts: mean progress by outcome, the ROC AUC
    of progress for success over all rollouts and within the ``groups_mixed`` groups with both outcomes
    (the ranking GRPO's advantages use)."""
    within = [_auc(s, p) for s, p in zip(success, progress) if 0 < s.sum() < s.size]
    return {"progress_if_success": _mean(progress[success == 1]), "progress_if_failure": _mean(progress[success == 0]),
            "progress_auc": _auc(success.reshape(-1), progress.reshape(-1)),
            "progress_auc_within": _mean(np.asarray(within)), "groups_mixed": len(within)}


def _update(run: _Run, ro, adv: np.ndarray, weights: np.ndarray, t: VLATrainConfig) -> float:
    """GRPO clipped-surrogate epochs; ``adv`` and ``weights`` per rollout (flattened groups)."""
    mask = torch.as_tensor(ro.mask, dtype=DTYPE)
    obs = torch.as_tensor(ro.obs[:, :-1], dtype=DTYPE)
    task = torch.as_tensor(np.repeat(ro.task[:, None], t.horizon, 1))
    old = torch.as_tensor(ro.logp, dtype=DTYPE)
    a = torch.as_tensor(adv, dtype=DTYPE)[:, None]
    w = torch.as_tensor(weights / t.group_size / t.horizon, dtype=DTYPE)[:, None]
    for _ in range(t.ppo_epochs):
        ratio = exact.exp(run.policy.log_prob(obs, task, ro.actions) - old)
        surr = torch.minimum(ratio * a, ratio.clamp(1 - t.clip, 1 + t.clip) * a)
        loss = -exact.fsum((w * surr * mask).reshape(-1), 0)
        run.opt.zero_grad()
        loss.backward()
        run.opt.step()
    return float(loss.detach())


def resumable(cfg: VLAConfig, folder: Path) -> dict | None:
    """The checkpoint in ``folder`` if the run of ``cfg`` resumes from it (same config and :data:`STAMPS`),
    else None; any other checkpoint is deleted, saying so. Its ``position`` is where the
    run's execution record goes on from (:func:`wmrl.record.context`)."""
    ckpt = Path(folder) / "checkpoint.pt"
    if not ckpt.exists():
        return None
    saved = torch.load(ckpt, weights_only=False)
    if saved["config"] == cfg.to_dict() and not stamp_changes(saved):
        return saved
    print(f"{ckpt} was written with another config, noise scheme or arithmetic; training {cfg.arm} seed {cfg.seed} "
          "from its SFT start")
    ckpt.unlink()
    return None


_READ = object()  # train's default: read the checkpoint itself


def train(cfg: VLAConfig, folder: Path, cache: Path, progress_bar: bool = True, saved=_READ) -> _Run:
    """Post-train the SFT policy of ``cfg.seed`` with ``cfg.arm``, resuming from ``folder/checkpoint.pt``.

    Returns the finished run (its ``policy``, ``history``, ``pairs``). A checkpoint written with
    another config is not resumed: the run starts again and replaces it. ``saved``: what :func:`resumable`
    returned, when the caller has read the checkpoint already (read here by default).
    """
    sft = build_sft(cfg.sft, cfg.seed, cache)
    run = _Run(cfg, sft)
    ckpt = Path(folder) / "checkpoint.pt"
    if saved is _READ:
        saved = resumable(cfg, folder)
    if saved is not None:
        run.load_state_dict(saved)
    t, n = cfg.train, cfg.train.group_size
    total = t.steps if cfg.arm_spec.train else 0
    pool = shared_pool()
    for _ in tqdm(range(run.step, total), desc=f"{cfg.arm} seed {cfg.seed}", disable=not progress_bar,
                  initial=run.step, total=total):
        t0 = clock.wall()
        routing = run.wmrl.route()  # which groups are executed (scored by success) and predicted (by progress)
        g = routing.n_groups
        task, state = crn.train_draws(cfg.seed, run.step, g, len(TASKS), N_TRAIN)  # training states only: 0..15
        keys = [(run.step, k, i) for k in range(g) for i in range(n)]  # (step, group, member)
        noise = crn.action_noise(cfg.seed, crn.TRAIN_NOISE, keys, t.horizon, ACT_DIM)
        ro = rollout_batch(pool, run.policy.sampler(), np.repeat(task, n), np.repeat(state, n), t.horizon, noise)
        t1 = clock.wall()
        success, progress = ro.success.reshape(g, n), run.wm.score(ro).reshape(g, n)
        t2 = clock.wall()
        real = np.where(routing.executed[:, None], success, np.nan)
        predicted = np.where(routing.predicted[:, None], progress, np.nan)
        out = run.wmrl(real, predicted, routing.executed)  # rewards, OD, eta^2, rho, weights, advantages
        loss = _update(run, ro, out.advantages.reshape(-1), np.repeat(out.weights, n), t)
        run.step += 1
        run.pairs += [{"step": run.step, "pred": p, "calibrated": c, "true": r}
                      for p, c, r in zip(*(a.tolist() for a in out.pairs))]
        run.history.append({"step": run.step, "train_success": float(success.mean()),
                            "progress": float(progress.mean()), "loss": loss, "env_steps": ro.env_steps,
                            **fidelity(success, progress),  # the world model on this step's rollouts
                            "t_rollout": t1 - t0, "t_wm": t2 - t1, "t_update": clock.wall() - t2,
                            "std": run.policy.std(), **out.log})
        run.wall_s += clock.wall() - t0
        with atomic_path(ckpt) as tmp:
            torch.save(run.state_dict(), tmp)
    return run
