"""Where a campaign's missing runs train: the executor option of :func:`~wmrl.experiments.collect.ensure_runs`.

One option, the same words everywhere: ``python -m wmrl.reproduce --executor SPEC``, ``python -m
wmrl.experiments runs --executor SPEC`` and a notebook's ``EXECUTOR`` parameter (papermill: ``-p
EXECUTOR SPEC``; :mod:`wmrl.reproduce` passes its option on that way). ``SPEC`` is one of

- ``local`` (:data:`DEFAULT`): one run at a time on this machine, with a sandbox worker per core, so
  that each run's wall time is that of a run alone, as reported;
- ``local:N``: ``N`` runs at once in fresh processes on this machine, each with ``cores // N``
  sandbox workers, so that no more solutions run at once than there are cores;
- ``ray`` or ``ray:C``: every missing run one Ray task on the cluster this process joins (the one
  ``RAY_ADDRESS`` names, else one started on this machine by ``ray start --head``, else a Ray of its
  own), asking ``C`` CPUs (default 1) for its ``C`` sandbox workers (:mod:`wmrl.experiments.cluster`).

``sandbox.workers`` is a scheduling field (:data:`~wmrl.config.SCHEDULING_FIELDS`): a run is the same
experiment whichever executor trained it, and is reused by any other.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["DEFAULT", "EXECUTOR_HELP", "Executor", "parse_executor"]

DEFAULT = "local"
KINDS = ("local", "ray")
EXECUTOR_HELP = ("where missing runs train: local (default: one at a time), local:N (N processes on this machine), "
                 "ray or ray:C (one Ray task per run on the cluster this process joins, C CPUs each; "
                 "docs/cluster.md)")
_GONE_ENV = "WMRL_JOBS"


@dataclass(frozen=True)
class Executor:
    """A parsed executor option: ``kind`` local or ray; ``n`` runs at once (local) or CPUs per run (ray)."""

    kind: str
    n: int

    def __str__(self) -> str:
        return self.kind if self.n == 1 else f"{self.kind}:{self.n}"


def parse_executor(spec: str | Executor | None = None) -> Executor:
    """The :class:`Executor` that ``spec`` names (None: :data:`DEFAULT`); a bad one is refused, naming what to pass.

    A ``WMRL_JOBS`` in the environment is refused too: nothing reads it, and a campaign that silently
    trained one run at a time where its user asked for several would mislead."""
    if os.environ.get(_GONE_ENV) is not None:
        raise ValueError(f"{_GONE_ENV} is not read: say where runs train with the executor option instead, e.g. "
                         f"--executor local:{os.environ[_GONE_ENV] or 2} (python -m wmrl.reproduce, python -m "
                         f"wmrl.experiments runs) or EXECUTOR='local:2' (a notebook's parameter), and unset {_GONE_ENV}")
    if isinstance(spec, Executor):
        return spec
    spec = DEFAULT if spec is None else spec
    kind, sep, count = str(spec).partition(":")
    try:
        n = int(count) if sep else 1
    except ValueError:
        n = 0
    if kind not in KINDS or n < 1:
        raise ValueError(f"executor {spec!r} is not one of local, local:N, ray, ray:C (N runs at once, C CPUs per "
                         f"run, positive integers), e.g. --executor local:2 or EXECUTOR='ray'")
    return Executor(kind, n)
