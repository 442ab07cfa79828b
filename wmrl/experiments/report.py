"""Former home of the notebooks' analysis code; kept as the names the ablation template imports.

The code now lives in modules named after what it does, and nothing is defined here:

- :mod:`wmrl.experiments.stats`: means, intervals, paired differences, detectable differences,
  Holm's correction, verdicts, per-arm tables;
- :mod:`wmrl.experiments.claims`: the paper's claims, their table and the "what we see" sentences;
- :mod:`wmrl.experiments.curves`: learning curves against steps and compute, compute to reach a score;
- :mod:`wmrl.experiments.plots`: colours, style, bars, curves, the figure checks;
- :mod:`wmrl.experiments.costs`: compute totals, the cost model and the paper's GPU-hour arithmetic;
- :mod:`wmrl.experiments.collect`: :func:`~wmrl.experiments.collect.load_arm_runs` and friends.

New code imports from those modules.
"""

from __future__ import annotations

from wmrl.experiments.claims import Claim, claims_table
from wmrl.experiments.collect import check_runs_present
from wmrl.experiments.costs import add_totals
from wmrl.experiments.plots import bar_ci
from wmrl.experiments.stats import arm_summary, arm_table, fmt_ci, paired_diff, verdict

__all__ = ["Claim", "add_totals", "arm_summary", "arm_table", "bar_ci", "check_runs_present", "claims_table", "fmt_ci",
           "paired_diff", "verdict"]
