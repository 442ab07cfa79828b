"""Micro-benchmarks: ``python -m bench.micro`` (what ``make bench`` runs).

Why: WMRL's promise is that a world model makes a step cheap, so the bookkeeping it adds
(anchor selection, Online Debiasing, IVD, advantages) must cost nothing next to generation and
execution. The goals: an isotonic refit on 5,000 anchor pairs under 5 ms, and a
whole step's bookkeeping for 8 groups x 8 trajectories under 1 ms. A missed goal is profiled on
the spot (top functions by cumulative time), so the report says where the time goes.

The timing harness (:class:`~bench.harness.Bench`, :func:`~bench.harness.run_bench`) lives in
:mod:`bench.harness`, so that the sandbox's and the VLA's benchmark modules can declare benchmarks
without importing this runner.

Adding a section: a module exposes ``BENCHES: list[bench.harness.Bench]`` and is listed in
:data:`SECTIONS` (``bench.sandbox``, ``bench.vla`` are, and run when importable). Mark
anything over a second ``slow=True``; ``--skip-slow`` leaves it out.
"""

from __future__ import annotations

import argparse
import importlib
import sys

import numpy as np

from bench.harness import Bench, fmt, profile, run_bench
from wmrl.advantage import group_advantages
from wmrl.anchor import AnchorScheduler
from wmrl.calibration import OnlineDebiaser
from wmrl.denoise import InverseVarianceWeighter, fused_group_weights

__all__ = ["BENCHES", "SECTIONS", "main"]

GROUPS, GROUP_SIZE, N_PAIRS = 8, 8, 5000


def _scores(rng, n):
    """World-model-like (predicted, true) pairs: ladder rungs for failures, 0.5 + 0.5*percentile for successes."""
    true = np.where(rng.random(n) < 0.4, rng.choice([0.0, 0.1, 0.2], n), 0.5 + 0.5 * rng.random(n))
    pred = np.clip(0.3 + 0.7 * true + 0.1 * rng.standard_normal(n), 0, 1)
    return pred, true


def _fitted_debiaser(rng, refit_every=None):
    od = OnlineDebiaser() if refit_every is None else OnlineDebiaser(refit_every=refit_every)  # the config's schedule
    od.push_many(*_scores(rng, N_PAIRS))
    return od


def _setup_refit():
    return _fitted_debiaser(np.random.default_rng(0)).refit


class _Step:
    """The bookkeeping of one WMRL step, in the trainer's order, with its parts callable one by one.

    Online Debiasing is fitted (5,000 pairs) and never due for a refit here: the refit is its own
    benchmark, amortised over ``refit_every / (anchor pairs per step)`` = 8 steps in the paper.
    """

    def __init__(self):
        rng = np.random.default_rng(0)
        self.anchors = AnchorScheduler(seed=0)  # MethodConfig's share and minimum
        self.od = _fitted_debiaser(rng, refit_every=10**12)
        self.ivd = InverseVarianceWeighter(warmup_groups=8)  # MethodConfig's window and rho_max
        pred, true = _scores(rng, GROUPS * GROUP_SIZE)
        self.wm, self.true = pred.reshape(GROUPS, GROUP_SIZE), true.reshape(GROUPS, GROUP_SIZE)
        for k in range(16):
            self.ivd.observe(self.wm[k % GROUPS], self.true[k % GROUPS])
        self.idx = self.anchors.select(GROUPS)
        self.is_anchor = np.zeros(GROUPS, bool)
        self.is_anchor[self.idx] = True
        self.cal = self.od.transform(self.wm)

    def select(self):
        self.idx = self.anchors.select(GROUPS)
        self.is_anchor = np.zeros(GROUPS, bool)
        self.is_anchor[self.idx] = True

    def push(self):
        self.od.push_many(self.wm[self.idx].ravel(), self.true[self.idx].ravel())

    def transform(self):
        self.cal = self.od.transform(self.wm)

    def observe_rho(self):
        for k in self.idx:
            self.ivd.observe(self.cal[k], self.true[k])
        return self.ivd.rho

    def weights(self):
        return fused_group_weights(self.is_anchor, self.ivd.rho)

    def advantages(self):
        return group_advantages(np.where(self.is_anchor[:, None], self.true, self.cal))

    def __call__(self):
        self.select()
        self.push()
        self.transform()
        self.observe_rho()
        self.weights()
        return self.advantages()


def _part(method: str):
    return lambda: getattr(_Step(), method)


BENCHES = [
    Bench(f"OnlineDebiaser.refit ({N_PAIRS} pairs)", _setup_refit, goal_s=5e-3),
    Bench(f"step bookkeeping ({GROUPS}x{GROUP_SIZE}, no refit)", _Step, goal_s=1e-3),
    Bench("  AnchorScheduler.select", _part("select")),
    Bench("  OnlineDebiaser.push_many (1 group)", _part("push")),
    Bench("  OnlineDebiaser.transform (64 scores)", _part("transform")),
    Bench("  IVD observe + rho", _part("observe_rho")),
    Bench("  fused_group_weights", _part("weights")),
    Bench("  group_advantages", _part("advantages")),
]

SECTIONS = {"core": "bench.micro", "sandbox": "bench.sandbox", "vla": "bench.vla"}


def _load(module: str):
    """A section's BENCHES, or None when its module does not exist (yet)."""
    if module == "bench.micro":  # this module (also when run as __main__)
        return BENCHES
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and module.startswith(e.name):
            return None  # the section does not exist yet
        raise
    if not hasattr(mod, "BENCHES"):
        raise AttributeError(f"{module} must expose BENCHES, a list of bench.harness.Bench (see bench.micro's docstring)")
    return mod.BENCHES


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.micro", description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="+", choices=list(SECTIONS), help="sections to run (default: all)")
    parser.add_argument("--skip-slow", action="store_true", help="leave out benchmarks marked slow")
    parser.add_argument("--repeat", type=int, default=15, help="repeats per benchmark (median reported)")
    args = parser.parse_args(argv)
    missed = []
    for section, module in SECTIONS.items():
        if args.only and section not in args.only:
            continue
        try:
            benches = _load(module)
        except Exception as e:  # noqa: BLE001 -- a broken section must not hide the others
            print(f"\n[{section}] could not load {module}: {type(e).__name__}: {e}")
            continue
        if benches is None:
            print(f"\n[{section}] {module} not available, skipped")
            continue
        print(f"\n[{section}]\n  {'benchmark':<48} {'wall median':>12} {'wall min':>12} {'CPU median':>12} {'calls':>7}  goal")
        for b in benches:
            if b.slow and args.skip_slow:
                print(f"  {b.name:<54} skipped (slow)")
                continue
            r = run_bench(b, repeat=args.repeat)
            goal = "" if r.goal_s is None else f"< {fmt(r.goal_s).strip()}  {'OK' if r.ok else 'MISSED'}"
            print(f"  {r.name:<48} {fmt(r.median_s)} {fmt(r.min_s)} {fmt(r.cpu_median_s)} {r.calls:>7}  {goal}  {b.note}".rstrip())
            if r.ok is False:
                missed.append(b)
    for b in missed:
        print(f"\nProfile of {b.name!r} (goal missed), top functions by cumulative time:\n{profile(b)}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
