"""``python -m bench.sandbox_load``: do real outcomes depend on the machine's load?

The goal is that the same seed gives the same numbers idle or busy. The sandbox's budget
counts CPU seconds, not wall-clock seconds, so a queue for a core does not turn valid scripts
into timeouts; what is left is CPU time's own jitter near the budget. This benchmark (in ``make
bench``) measures it on a fixed set of scripts the untrained agent writes for the pool's tasks
(its habits, the fidelity set's sampler), at the small preset's budget: the set runs as the
machine is, then again beside ``--load`` busy loops, and the report gives the largest CPU-time
difference and the share of executions whose outcome (status, limit, percentile) changed
(``bench.sandbox.load_agreement``, which takes any ``(task, code)`` list).
"""
from __future__ import annotations

import argparse

from bench.sandbox import load_agreement, print_agreement
from wmrl.agent.habits import sample_items
from wmrl.sandbox import Sandbox
from wmrl.tasks import get_pool

__all__ = ["agent_scripts", "main"]


def agent_scripts(n: int, seed: int = 0) -> list[tuple]:
    """The fixed set: ``n`` scripts the untrained agent writes, round robin over every pool task."""
    pool = get_pool()
    return sample_items([*pool.train, *pool.heldout], n, seed)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.sandbox_load", description=__doc__.splitlines()[0])
    parser.add_argument("--scripts", type=int, default=32, help="scripts in the fixed set (default 32)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fixed set")
    parser.add_argument("--load", type=int, default=1, help="busy loops beside the busy runs (default 1)")
    parser.add_argument("--repeats", type=int, default=2, help="runs of the set per condition (default 2)")
    parser.add_argument("--budget", type=float, default=2.0, help="CPU seconds per run (default: the small preset's 2)")
    parser.add_argument("--backend", default="local", choices=["local", "docker"])
    args = parser.parse_args(argv)
    report = load_agreement(agent_scripts(args.scripts, args.seed), args.load,
                            Sandbox(args.backend, timeout_s=args.budget), repeats=args.repeats)
    print_agreement(report)
    return report


if __name__ == "__main__":
    main()
