r"""The small research agent: an autoregressive policy over the solution grammar's decisions.

At paper scale the agent is an LLM whose trajectory log-probability is the sum of its token
log-probabilities. Here a "token" is one decision of :mod:`wmrl.agent.grammar` (data loading,
features, model family, ...), and

.. math::  \log \pi(\tau) = \sum_{t \in \text{turns}} \sum_{k \in \text{slots}}
           \log \pi(a_{t,k} \mid \text{task}, \text{feedback}_{t-1}, a_{t-1}, a_{t,<k}),

so GRPO's gradient :math:`A_i \nabla \log \pi(\tau_i)`, the KL to the initial policy and the entropy
bonus are the LLM's, term for term.

Conditioning. Each turn sees the task's feature vector, the previous turn's feedback (status,
error type, score bucket: exactly what the sandbox or the world model reports) and the previous
turn's decisions (what an LLM sees as its previous code). Within a turn, slot ``k`` sees the
decisions already taken at slots ``< k``.

Starting point (the analog of an untrained base model). Output weights start at zero and each
head's bias at the log of the grammar's ``prior`` for that slot, so the initial policy samples
every slot independently from the documented prior habits (wrong names, removed arguments,
oversized models at a realistic rate) whatever the context, and learning has to discover both
what to prefer and how to use feedback.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from wmrl.vocabulary import STATUSES

__all__ = ["ERROR_TYPES", "FEEDBACK_DIM", "AgentPolicy", "encode_feedback"]

#: Error types the agent can tell apart; others map to "other". Index 0 means "no error".
ERROR_TYPES = ("none", "KeyError", "FileNotFoundError", "TypeError", "ValueError", "ImportError",
               "AttributeError", "NameError", "IndexError", "MemoryError", "TimeoutError", "other")
_BUCKETS = ("none", "low", "fair", "mid", "high")
_STATUS_START = ("start",) + STATUSES
FEEDBACK_DIM = len(_STATUS_START) + len(ERROR_TYPES) + len(_BUCKETS)


def encode_feedback(feedback: tuple[str, str | None, str | None] | None) -> np.ndarray:
    """One-hot encoding of ``(status, error_type, score_bucket)``; None is the first turn."""
    v = np.zeros(FEEDBACK_DIM, dtype=np.float32)
    status, error_type, bucket = feedback if feedback is not None else ("start", None, None)
    v[_STATUS_START.index(status)] = 1.0
    et = "none" if error_type is None else ("ImportError" if error_type == "ModuleNotFoundError" else error_type)
    v[len(_STATUS_START) + (ERROR_TYPES.index(et) if et in ERROR_TYPES else ERROR_TYPES.index("other"))] = 1.0
    v[len(_STATUS_START) + len(ERROR_TYPES) + _BUCKETS.index(bucket or "none")] = 1.0
    return v


class AgentPolicy(nn.Module):
    """Autoregressive softmax policy over ``len(slot_sizes)`` decision slots.

    Args:
        slot_sizes: number of options of each slot, in the grammar's order.
        task_dim: length of the task feature vector.
        priors: per slot, the initial choice probabilities (the base model's habits).
        hidden: width of the shared context MLP.
    """

    def __init__(self, slot_sizes, task_dim: int, priors=None, hidden: int = 64):
        super().__init__()
        self.slot_sizes = [int(s) for s in slot_sizes]
        self.offsets = np.concatenate([[0], np.cumsum(self.slot_sizes)]).astype(int)
        self.n_choices = int(self.offsets[-1])
        ctx_dim = task_dim + FEEDBACK_DIM + self.n_choices  # task, feedback, previous turn's choices
        self.context = nn.Sequential(nn.Linear(ctx_dim, hidden), nn.Tanh(), nn.Linear(hidden, hidden), nn.Tanh())
        self.heads = nn.ModuleList(nn.Linear(hidden + self.n_choices, s) for s in self.slot_sizes)
        prefix = torch.zeros(len(self.slot_sizes), self.n_choices)
        for k in range(len(self.slot_sizes)):
            prefix[k, : self.offsets[k]] = 1.0  # slot k sees the decisions of slots < k
        self.register_buffer("prefix_mask", prefix)
        with torch.no_grad():
            for k, head in enumerate(self.heads):
                head.weight.zero_()
                p = np.full(self.slot_sizes[k], 1.0 / self.slot_sizes[k]) if priors is None else np.asarray(priors[k], float)
                if p.shape != (self.slot_sizes[k],) or np.any(p <= 0):
                    raise ValueError(f"prior of slot {k} must be {self.slot_sizes[k]} positive numbers, got {p}")
                head.bias.copy_(torch.as_tensor(np.log(p / p.sum()), dtype=torch.float32))

    def one_hot(self, choices: torch.Tensor) -> torch.Tensor:
        """``(B, K)`` option indices -> ``(B, sum of options)`` concatenated one-hots."""
        out = torch.zeros(choices.shape[0], self.n_choices)
        out.scatter_(1, choices + torch.as_tensor(self.offsets[:-1]), 1.0)
        return out

    def _logits(self, c: torch.Tensor, onehot: torch.Tensor, k: int, mask: torch.Tensor) -> torch.Tensor:
        logits = self.heads[k](torch.cat([c, onehot * self.prefix_mask[k]], dim=1))
        return logits.masked_fill(~mask[:, self.offsets[k] : self.offsets[k + 1]], -1e9)

    def _context(self, task_feat, feedback, prev_choices) -> torch.Tensor:
        return self.context(torch.cat([task_feat, feedback, prev_choices], dim=1))

    @torch.no_grad()
    def sample(self, task_feat, feedback, prev_choices, mask, uniforms, temperature: float = 1.0):
        """Sample one decision per slot for each row; returns ``(B, K)`` option indices.

        ``uniforms`` is ``(B, K)`` numbers in [0, 1), one per row and slot, turned into a decision by
        the inverse of the slot's cumulative distribution. A row's decisions depend on its own
        numbers only (not on the batch around it), so two policies given the same numbers make the
        same decision wherever their distributions agree: common random numbers, which pair the
        arms of a seed (:func:`wmrl.trainer.rollout.row_uniforms`).
        """
        u = torch.as_tensor(uniforms, dtype=torch.float64)
        if u.shape != (task_feat.shape[0], len(self.slot_sizes)):
            raise ValueError(f"uniforms must be (rows, slots) = {(task_feat.shape[0], len(self.slot_sizes))}, "
                             f"got {tuple(u.shape)}")
        c = self._context(task_feat, feedback, prev_choices)
        onehot = torch.zeros(c.shape[0], self.n_choices)
        rows = torch.arange(c.shape[0])
        picks = []
        for k in range(len(self.slot_sizes)):
            probs = torch.softmax(self._logits(c, onehot, k, mask) / temperature, dim=1).double()
            cdf = probs.cumsum(dim=1)
            a = torch.searchsorted(cdf, (u[:, k] * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
            last = probs.shape[1] - 1 - torch.argmax((probs.flip(1) > 0).int(), dim=1)  # highest allowed option
            a = torch.minimum(a, last)  # u * total can round onto the last step of the cdf
            onehot[rows, self.offsets[k] + a] = 1.0
            picks.append(a)
        return torch.stack(picks, dim=1)

    def evaluate(self, task_feat, feedback, prev_choices, mask, choices):
        """Per-row log-prob of ``choices``, and per-slot log-probability tables (for KL/entropy)."""
        c = self._context(task_feat, feedback, prev_choices)
        onehot = self.one_hot(choices)
        logp = torch.zeros(c.shape[0])
        tables = []
        for k in range(len(self.slot_sizes)):
            lp = torch.log_softmax(self._logits(c, onehot, k, mask), dim=1)
            logp = logp + lp.gather(1, choices[:, k : k + 1]).squeeze(1)
            tables.append(lp)
        return logp, tables
