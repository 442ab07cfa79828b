"""Runnable experiments and the analysis every notebook shares.

- running: :mod:`~wmrl.experiments.run` (one arm), :mod:`~wmrl.experiments.collect` (train what is
  missing, load runs, :func:`~wmrl.experiments.collect.ensure_arm_runs`);
- the notebook convention: :mod:`~wmrl.experiments.notebook` (parameters, results with provenance,
  figures);
- analysis: :mod:`~wmrl.experiments.stats` (intervals, paired differences, detectable differences,
  Holm), :mod:`~wmrl.experiments.claims` (the paper's claims and verdicts),
  :mod:`~wmrl.experiments.curves` (learning curves, compute to reach a score),
  :mod:`~wmrl.experiments.noise` (evaluation vs training noise), :mod:`~wmrl.experiments.costs`
  (compute accounting), :mod:`~wmrl.experiments.plots` (the figures' visual language),
  :mod:`~wmrl.experiments.wm_profile` (notebook 05's readout: its helper beside it is a script that
  loads the trainer), :mod:`~wmrl.experiments.paper` (the
  paper's numbers), :mod:`~wmrl.experiments.results_page` (``RESULTS.md``, from the notebooks'
  declared claims).

What only one notebook uses lives beside it, in ``notebooks/_<name>.py``. Notebooks import the
modules explicitly, so nothing is re-exported here.
"""

__all__: list[str] = []
