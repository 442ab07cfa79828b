r"""The grammar agent's GRPO learner: one step of Algorithm 1 around :class:`wmrl.step.WMRLStep`.

One step:

1. the step object routes the groups (which are anchors, :meth:`wmrl.step.WMRLStep.route`; under
   active selection it chooses them after turn 1, :meth:`wmrl.step.WMRLStep.choose_anchors`);
2. roll out: anchors in the sandbox (and through the world model for pairs), the rest through
   the world model only (:func:`wmrl.trainer.rollout.rollout`);
3. the step object turns real rewards and raw world-model scores into training rewards, fused
   group weights and advantages (Online Debiasing, the IVD audit; :mod:`wmrl.step`);
4. loss :math:`-\sum_g w_g \frac1n\sum_i A_{gi}\log\pi(\tau_{gi}) + \beta\,\mathrm{KL}(\pi\|\pi_0)
   - c\,H(\pi)`; one Adam step.

This module only holds what is particular to the grammar policy: its log-probabilities, KL and
entropy over the decision slots.
"""


from __future__ import annotations

import copy

import numpy as np
import torch

from wmrl.agent import grammar
from wmrl.config import RunConfig
from wmrl.step import WMRLStep
from wmrl.trainer.rollout import Scorer, Trajectory, rollout, world_model_step
from wmrl.world_model.exploit import in_region

__all__ = ["GRPOLearner"]


class GRPOLearner:
    """The state that training changes: policy, optimiser, reference policy and the WMRL step."""

    def __init__(self, cfg: RunConfig, policy):
        self.cfg = cfg
        self.policy = policy
        self.reference = copy.deepcopy(policy).requires_grad_(False)  # pi_0 for the KL term
        self.optim = torch.optim.Adam(policy.parameters(), lr=cfg.train.lr)
        self.wmrl = WMRLStep(cfg.arm, cfg.method, cfg.train.groups_per_step, cfg.train.group_size, seed=cfg.seed,
                             std_normalize=cfg.train.std_normalize)
        #: the feature whose region is logged (``region_share``, each anchor pair's ``region``) and, under
        #: conditional calibration, stratified: the calibration's (``method.od_condition``), else the
        #: world model's exploit (``world_model.exploit``), else none
        self._region = cfg.method.od_condition if cfg.method.od_condition != "none" else cfg.world_model.exploit

    def step(self, tasks: list, executed: np.ndarray | None, predicted: np.ndarray, scorer: Scorer, key: tuple) -> dict:
        """Roll out one group per task (sampling key ``key``), then learn from it; returns the step's log, the
        world model's counts of the step among it (``wm_*``).

        ``executed`` is the routing's (None under active selection: the step object chooses the
        anchors from turn 1's predictions, :meth:`wmrl.step.WMRLStep.choose_anchors`).
        """
        t = self.cfg.train
        groups = rollout(self.policy, tasks, executed, predicted, t.group_size, t.max_turns, scorer, key,
                         t.temperature, choose=self.wmrl.choose_anchors)
        wm_row = world_model_step(scorer.world_model)  # before the update: a step of defaults is never learnt
        with scorer.ledger.time("update"):
            return self._learn(groups, np.array([g[0].anchor for g in groups])) | wm_row

    def _learn(self, groups: list[list[Trajectory]], executed: np.ndarray) -> dict:
        cfg = self.cfg.train
        real = np.array([[np.nan if tr.real_reward is None else tr.real_reward for tr in g] for g in groups])
        raw_wm = np.array([[np.nan if tr.wm_reward is None else tr.wm_reward for tr in g] for g in groups])
        flat = [tr for g in groups for tr in g]
        # notebook 09: whether each turn's script is in the region, read once per turn
        inside = {} if self._region == "none" else {id(turn): in_region(self._region, tr.task, turn.code)
                                                      for tr in flat for turn in tr.turns}
        strata = None if self._region == "none" else np.array(  # 1: the scored script is in the region
            [[tr.scored_turn is not None and inside[id(tr.scored_turn)] for tr in g] for g in groups], dtype=int)
        out = self.wmrl(real, raw_wm, executed, strata)
        turn_rows = [(i, turn) for i, tr in enumerate(flat) for turn in tr.turns]
        idx = torch.as_tensor([i for i, _ in turn_rows])

        def stack(attr):
            return torch.as_tensor(np.stack([getattr(turn, attr) for _, turn in turn_rows]))

        feats = torch.as_tensor(np.stack([grammar.task_features(flat[i].task) for i, _ in turn_rows]),
                                dtype=torch.float32)
        masks = torch.as_tensor(np.stack([np.concatenate(grammar.option_mask(flat[i].task)) for i, _ in turn_rows]))
        args = (feats, stack("feedback_in"), stack("prev_choices"), masks, stack("choices").long())
        logp_turn, tables = self.policy.evaluate(*args)
        with torch.no_grad():
            _, ref_tables = self.reference.evaluate(*args)
        logp = torch.zeros(len(flat)).index_add(0, idx, logp_turn)  # log pi(tau) = sum over turns
        # g = sum_g w_g (1/n) sum_i A_gi grad log pi(tau_gi)
        coef = torch.as_tensor((out.weights[:, None] * out.advantages / cfg.group_size).ravel(), dtype=torch.float32)
        pg = -(coef * logp).sum()
        kl = sum(((lp.exp() * (lp - rl)).sum(1)) for lp, rl in zip(tables, ref_tables)).mean()
        ent = sum((-(lp.exp() * lp).sum(1)) for lp in tables).mean()
        loss = pg + cfg.kl_coef * kl - cfg.ent_coef * ent
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        turns_both = [turn for tr in flat for turn in tr.turns if turn.real is not None and turn.pred is not None]
        pairs = out.pairs + ((out.pair_strata,) if strata is not None else ())
        return {
            **out.log, "pairs": tuple(p.tolist() for p in pairs) if out.pairs[0].size else None,
            **({"region_share": float(np.mean(list(inside.values())))} if strata is not None else {}),
            "loss": loss.item(), "kl": kl.item(), "entropy": ent.item(),
            "real_reward": float(np.nanmean(real)) if np.isfinite(real).any() else np.nan,
            "wm_reward": float(np.nanmean(raw_wm)) if np.isfinite(raw_wm).any() else np.nan,
            "status_acc": float(np.mean([t.real.status == t.pred.status for t in turns_both])) if turns_both else np.nan,
            "mean_turns": float(np.mean([len(tr.turns) for tr in flat])),
        }

    def state_dict(self) -> dict:
        return {"policy": self.policy.state_dict(), "reference": self.reference.state_dict(),
                "optim": self.optim.state_dict(), "wmrl": self.wmrl.state_dict()}

    def load_state_dict(self, s: dict) -> None:
        self.policy.load_state_dict(s["policy"])
        self.reference.load_state_dict(s["reference"])
        self.optim.load_state_dict(s["optim"])
        self.wmrl.load_state_dict(s["wmrl"])
