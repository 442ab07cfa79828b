"""Which GPUs an execution gets: explicit devices of the host, handed out in turn.

Why explicit: left to choose, the Docker engine gives every container that asks for ``count=1``
the same first GPU, which on a training node is rank 0's, beside its colocated vLLM engine. A
sandbox is therefore given the GPUs it may use (``sandbox.gpu_devices``: host CUDA indices or
UUIDs) and each execution takes ``gpus`` of them, round robin, so concurrent executions spread
over the set and none lands on a training or world-model GPU. Under the Ray executor Ray assigns
each execution its GPUs and names them in the worker's ``CUDA_VISIBLE_DEVICES``
(:func:`ray_assigned`); the two are not mixed.
"""
from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Sequence

from .view import SandboxError

__all__ = ["GpuPool", "parse_devices", "ray_assigned"]


def parse_devices(devices: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"5,6,7"`` or ``["5", "6"]`` -> ``("5", "6", "7")``; None or empty -> ``()``; duplicates refused."""
    if devices is None:
        return ()
    items = devices.split(",") if isinstance(devices, str) else [str(d) for d in devices]
    out = tuple(d.strip() for d in items if d.strip())
    if len(set(out)) != len(out):
        raise ValueError(f"gpu_devices={devices!r} names a GPU twice; list each host GPU once, e.g. '5,6,7'")
    return out


def ray_assigned(gpus: int) -> tuple[str, ...]:
    """The ``gpus`` GPUs Ray assigned to this worker (its ``CUDA_VISIBLE_DEVICES``), or SandboxError."""
    assigned = parse_devices(os.environ.get("CUDA_VISIBLE_DEVICES", ""))
    if len(assigned) < gpus:
        raise SandboxError(f"gpus={gpus} but this Ray worker was assigned CUDA_VISIBLE_DEVICES="
                           f"{','.join(assigned) or '(none)'}; Ray assigns GPUs only to tasks that ask for them")
    return assigned[:gpus]


class GpuPool:
    """Hands out ``per_run`` of ``devices`` per execution, in turn (thread-safe).

    With ``devices = ("5", "6", "7")`` and ``per_run = 1`` successive executions get 5, 6, 7, 5, ...;
    with ``per_run = 2``: (5, 6), (7, 5), (6, 7), ...
    """

    def __init__(self, devices: Sequence[str], per_run: int):
        self.devices = tuple(devices)
        self.per_run = int(per_run)
        if self.per_run < 1:
            raise ValueError(f"per_run={per_run!r}: an execution takes at least one GPU")
        if len(self.devices) < self.per_run:
            raise ValueError(f"gpus={self.per_run} per execution but gpu_devices names only "
                             f"{len(self.devices)} ({','.join(self.devices) or 'none'})")
        self._next = itertools.cycle(self.devices)
        self._lock = threading.Lock()

    def take(self) -> tuple[str, ...]:
        """The next execution's devices."""
        with self._lock:
            return tuple(next(self._next) for _ in range(self.per_run))

    def __getstate__(self):  # the cycle's position and the lock stay behind (Ray ships the configuration)
        return {"devices": self.devices, "per_run": self.per_run}

    def __setstate__(self, state):
        self.__init__(state["devices"], state["per_run"])
