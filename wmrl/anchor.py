r"""The anchor stream: which groups of a step are really executed (Sec. 3.3).

WMRL keeps a small share of groups (about 10%, at least one per step) scored by *both* the world
model and real execution. These anchor groups give the training signal its ground truth and
give Online Debiasing and Inverse-Variance Denoising the pairs they need.

:meth:`AnchorScheduler.select` is the paper's rule: uniform without replacement, before anything
is generated. :meth:`AnchorScheduler.select_by` takes the groups of highest priority instead, at
the same budget (:meth:`AnchorScheduler.n_anchors` groups a step); it serves active selection,
which goes beyond the paper and lives in :mod:`wmrl.beyond` with the priority it reads.
The share and the minimum default to :class:`~wmrl.config.MethodConfig`'s.
"""

from __future__ import annotations

import numpy as np

from wmrl.config import MethodConfig

__all__ = ["AnchorScheduler"]

_METHOD = MethodConfig()


class AnchorScheduler:
    """Anchor groups, ``max(min_per_step, round(fraction * n_groups))`` a step, chosen at random or by priority.

    The realised fraction is recorded because with 8 groups a step ``round(0.1 * 8) = 1``, i.e.
    12.5%, not 10%: the reviews ask exactly this of the paper's GPU-hour accounting.
    """

    def __init__(self, fraction: float = _METHOD.anchor_fraction, min_per_step: int = _METHOD.anchor_min,
                 seed: int = 0):
        if not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction must be in [0, 1], got {fraction}")
        if min_per_step < 0:
            raise ValueError(f"min_per_step must be >= 0, got {min_per_step}")
        self.fraction = float(fraction)
        self.min_per_step = int(min_per_step)
        self.rng = np.random.default_rng(seed)
        self.n_selected = 0
        self.n_seen = 0

    def n_anchors(self, n_groups: int) -> int:
        """How many of ``n_groups`` groups are anchors this step."""
        k = max(self.min_per_step, int(np.floor(self.fraction * n_groups + 0.5)))
        return min(k, n_groups)

    def select(self, n_groups: int) -> np.ndarray:
        """Sorted indices of this step's anchor groups, uniformly at random (the paper's rule)."""
        if n_groups < 1:
            raise ValueError(f"n_groups must be >= 1, got {n_groups}")
        return self._record(self.rng.choice(n_groups, size=self.n_anchors(n_groups), replace=False), n_groups)

    def select_by(self, priority) -> np.ndarray:
        """Sorted indices of the ``n_anchors`` groups of highest ``priority`` (one value per group).

        Ties, and NaN (no information: every group NaN before the first anchor pair), are broken
        uniformly at random with the scheduler's seeded stream, so with no information this is the
        random rule again, and a resumed run chooses what the uninterrupted one chose.
        """
        p = np.asarray(priority, dtype=float)
        if p.ndim != 1 or p.size < 1:
            raise ValueError(f"priority must hold one value per group (a non-empty 1-d array), got shape {p.shape}")
        order = self.rng.permutation(p.size)  # random tie-breaking
        ranked = order[np.argsort(-np.nan_to_num(p[order], nan=-np.inf), kind="stable")]
        return self._record(ranked[: self.n_anchors(p.size)], p.size)

    def _record(self, idx: np.ndarray, n_groups: int) -> np.ndarray:
        self.n_selected += len(idx)
        self.n_seen += n_groups
        return np.sort(idx)

    @property
    def realised_fraction(self) -> float:
        """Share of all groups seen so far that were anchors (NaN before the first step)."""
        return self.n_selected / self.n_seen if self.n_seen else float("nan")

    def state_dict(self) -> dict:
        return {"rng": self.rng.bit_generator.state, "n_selected": self.n_selected, "n_seen": self.n_seen}

    def load_state_dict(self, state: dict) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.n_selected, self.n_seen = state["n_selected"], state["n_seen"]
