"""wmrl: the reproducible companion to "Scaling Automatic Research Agents via World Models".

The package is organised after the paper's ideas, one module each; one training step reads top to
bottom in :mod:`wmrl.step` and :mod:`wmrl.trainer.grammar`:

- :mod:`wmrl.advantage`   GRPO group-relative advantages (Sec. 3.1).
- :mod:`wmrl.anchor`      which groups are really executed (the anchor stream, Sec. 3.3).
- :mod:`wmrl.calibration` Online Debiasing: isotonic map from world-model to real scores (Sec. 3.4).
- :mod:`wmrl.denoise`     Inverse-Variance Denoising: fusing anchor and world-model gradients (Sec. 3.5).
- :mod:`wmrl.reward`      the reward ladder that turns an execution outcome into a scalar.
- :mod:`wmrl.ledger`      the compute ledger (generation / world model / execution / update).
- :mod:`wmrl.step`        Algorithm 1's reward side, which every trainer calls.
- :mod:`wmrl.beyond`      what goes beyond the paper (active anchors, conditional OD, regions): a subclass of the step.
- :mod:`wmrl.vocabulary`  the words every layer shares (statuses, the ladder's rungs, buckets, model families).

Sub-packages hold the environment (``tasks``, ``grading``, ``sandbox``), the learner
(``agent``, ``world_model``, ``trainer``), the runnable experiments (``experiments``) and the
embodied transfer (``vla``). Imports flow one way, tasks -> grading -> sandbox -> world model /
agent -> step -> beyond -> trainers -> experiments; ``pyproject.toml``'s ``[tool.importlinter]`` writes the
layers down and ``make lint`` checks them.
"""

__version__ = "0.1.0"
