"""Diagnostics and benchmarks, kept outside the ``wmrl`` package: nothing in ``wmrl`` imports them.

Each module runs from the repository root (``make bench`` runs the first four):

- ``python -m bench.micro``: micro-benchmarks of the method's bookkeeping, the sandbox and the VLA;
- ``python -m bench.sandbox_load``: do real outcomes depend on the machine's load (fixed scripts)?
- ``python -m bench.run_costs``: the trainer's cost goals, read off finished runs;
- ``python -m bench.campaign_load``: a short campaign trained idle and busy, compared;
- ``python -m bench.memo_agreement``: is executing a script repeatable (two execution memos)?
- ``python -m bench.rerun_check``: did a rerun regenerate the committed numbers?
- ``python -m bench.llm_bench``: the LLM agent's step cost, runnable rate and warm-start targets.
"""
