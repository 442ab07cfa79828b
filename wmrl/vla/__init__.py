"""The VLA transfer experiment (the paper's Table 2) at small scale, on Meta-World.

Sparse end-of-rollout success is the anchor signal, a frozen progress estimator trained on
demonstrations (the Robometer analog) is the dense world model, and a small task-conditioned
Gaussian policy cloned from scripted demos (the MiniVLA analog) is post-trained by GRPO through
:class:`wmrl.step.WMRLStep`, with any arm of :mod:`wmrl.arms` but ``untrained``.
Modules: :mod:`.config` (the typed :class:`VLAConfig`), :mod:`.envs` (tasks, fixed initial
states, batched rollouts), :mod:`.crn` (common random numbers: each rollout's own noise
stream), :mod:`.policy` (policy, demos, behaviour cloning), :mod:`.exact` (the networks'
CPU-independent float64 arithmetic), :mod:`.progress` (the world model), :mod:`.train` (the GRPO
driver), :mod:`.evaluate` (metrics), :mod:`.runner` (runs to run folders), :mod:`.results` (their layout, reading them back), :mod:`.bench` (throughput).
"""

__all__ = ["TASKS", "VLA_ARMS", "VLAConfig", "vla_config"]

from wmrl.vla.config import TASKS, VLA_ARMS, VLAConfig, vla_config
