"""Trainer presets, nanoGPT style: a flat dict of :class:`~wmrl.trainer.config.TrainConfig` overrides.

- ``smoke``: seconds; exercises every code path (CI).
- ``small``: the laptop reproduction (2 CPU cores, every arm x 3 seeds inside ``make reproduce``):
  the paper's 8 groups a step (so one anchor group is 12.5%, as in the paper's App. D) but groups
  of 4 trajectories instead of 8, 3 turns instead of 4, 16 steps, a 2 s execution budget and
  avg@4 on every held-out task. Real execution dominates the cost even so, which is the paper's
  premise. The budget was 5 s until a measured grpo run (seed 0, 936 executions) showed that
  timeouts were 5% of its executions but 41% of their cost, while 93% of its scripts that ran ok
  finished in under 2 s: at 2 s the expensive configurations still fail (a capacity too large for
  the task is one of the grammar's mistakes) at a third less execution time. Online Debiasing's
  schedule is scaled with the run: the paper waits for 200 pairs (25 steps of one anchor group of 8) in runs of hundreds
  of steps; here the first fit comes after 16 pairs (4 steps) and a refit every 8 pairs (2 steps).
- ``paper``: the paper's settings (Sec. 4.1), for the GPU path.
"""

from __future__ import annotations

__all__ = ["PRESETS", "preset_overrides"]

PRESETS: dict[str, dict] = {
    "smoke": {
        "steps": 2, "groups_per_step": 3, "group_size": 3, "max_turns": 2, "eval_every": 2, "eval_samples": 2,
        "eval_tasks": 1, "train_tasks": 1, "od_min_pairs": 4, "od_refit_every": 3, "ivd_window": 2,
        "anchor_fraction": 0.34, "timeout_s": 5.0,
    },
    "small": {
        "steps": 16, "groups_per_step": 8, "group_size": 4, "max_turns": 3, "eval_every": 8, "eval_samples": 4,
        "od_min_pairs": 16, "od_refit_every": 8, "ivd_window": 4, "timeout_s": 2.0, "lr": 0.01,
    },
    "paper": {
        "steps": 400, "groups_per_step": 8, "group_size": 8, "max_turns": 4, "lr": 1e-6, "eval_every": 50,
        "eval_samples": 8, "od_min_pairs": 200, "od_refit_every": 64, "timeout_s": 1200.0,
    },
}


def preset_overrides(name: str) -> dict:
    """The overrides of a preset; an unknown name lists the known ones."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}")
    return dict(PRESETS[name])
