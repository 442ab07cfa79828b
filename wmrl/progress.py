"""Progress bars that suit where they are read: widgets in JupyterLab, plain text everywhere else.

``tqdm.auto`` draws widgets in *any* Jupyter kernel. Under papermill and nbval no browser renders
them: the executed notebook keeps a widget reference whose text stands frozen at 0%, and where
ipywidgets is missing tqdm writes a ``TqdmWarning`` into the outputs instead. What tells the two
apart is who started the kernel: a Jupyter server (JupyterLab, Notebook) starts a notebook's
kernel with ``JPY_SESSION_NAME`` in its environment (jupyter_server's session manager sets it, and
ipykernel reads it for ``__session__``); papermill, nbval and nbclient do not. So: widgets for a
kernel a Jupyter server started, text bars on stderr for everything else (a terminal, papermill,
nbval, a script). A papermill run launched from *inside* a JupyterLab kernel inherits the variable
and draws widgets; launch it from a terminal instead.
"""

from __future__ import annotations

import os
import sys
import time

from tqdm.std import tqdm as text_tqdm

__all__ = ["RunCounter", "duration", "tqdm", "widgets_shown"]


def widgets_shown() -> bool:
    """Whether this process is a kernel whose front end renders widgets (see the module's docstring)."""
    if "ipykernel" not in sys.modules or not os.environ.get("JPY_SESSION_NAME"):
        return False
    try:
        import ipywidgets  # noqa: F401  (the front end needs the kernel side of the widgets)
    except ImportError:
        return False
    return True


def tqdm(*args, **kwargs):
    """A ``tqdm`` bar (same arguments): a widget in JupyterLab, text on stderr elsewhere."""
    if widgets_shown():
        from tqdm.notebook import tqdm as widget_tqdm

        return widget_tqdm(*args, **kwargs)
    return text_tqdm(*args, **kwargs)


def duration(seconds: float) -> str:
    """``"4 min 05 s"``, ``"1 h 02 min"`` or ``"40 s"``: a time left as a reader wants it."""
    s = max(0, round(seconds))
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    return f"{s // 60} min {s % 60:02d} s" if s >= 60 else f"{s} s"


NEXT_SHOWN = 3  # the runs a start line names next; the rest are counted


class RunCounter:
    """One line on stderr as each run of a batch starts and ends: runs done, the one running, those left, time left.

    A notebook's kernel writes these lines while it trains; :func:`wmrl.reproduce.train_notebook` passes the
    kernel's stderr on to the terminal, so a campaign shows them (and each run's own step bar) under papermill.
    ``expected`` holds each run's seconds as an earlier run of it recorded them (None: unknown). The time left is
    the runs not finished at those seconds, scaled by how the finished runs' recorded seconds compare with theirs
    (another machine, another load), plus the least time a finished run took beyond its record (starting a
    process, loading a model: the same for a short run and a long one, so it is added, not scaled; the least,
    because a cost paid once, such as the first run's imports, shows in one run only), less what the running one
    has used. An unknown run counts as the mean of the finished runs of its ``groups`` entry (its arm:
    one arm's runs cost alike, another's not), else as the mean of the known.
    ``at_once``: runs trained in parallel, which divide the time left; ``quiet``: say nothing.
    """

    def __init__(self, labels, expected=None, *, groups=None, at_once: int = 1, quiet: bool = False, stream=None,
                 clock=time.monotonic):
        self.labels = list(labels)
        self.expected = list(expected) if expected is not None else [None] * len(self.labels)
        self.groups = list(groups) if groups is not None else list(range(len(self.labels)))
        self.at_once, self.quiet, self.stream, self.clock = max(1, at_once), quiet, stream, clock
        self.took: dict[int, float] = {}
        self.recorded: dict[int, float] = {}
        self.started: dict[int, float] = {}

    def _say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream or sys.stderr, flush=True)

    def _per_run(self) -> list[float | None]:
        """Each run's expected seconds at the speed the finished runs showed, unknown ones filled in."""
        pairs = [(self.recorded.get(i, t), self.expected[i]) for i, t in self.took.items() if self.expected[i]]
        speed = sum(t for t, _ in pairs) / sum(e for _, e in pairs) if pairs else 1.0
        beyond = [self.took[i] - r for i, r in self.recorded.items()]
        overhead = max(0.0, min(beyond)) if beyond else 0.0
        known = [e * speed + overhead for e in self.expected if e]
        fill = (sum(known) / len(known) if known else
                sum(self.took.values()) / len(self.took) if self.took else None)
        took_by_group: dict = {}
        for i, t in self.took.items():
            took_by_group.setdefault(self.groups[i], []).append(t)
        return [e * speed + overhead if e else
                sum(took_by_group[g]) / len(took_by_group[g]) if (g := self.groups[i]) in took_by_group else fill
                for i, e in enumerate(self.expected)]

    def left_s(self) -> float | None:
        """Seconds until every run has finished, or None while nothing tells."""
        per_run, now = self._per_run(), self.clock()
        left = [per_run[i] for i in range(len(self.labels)) if i not in self.took]
        if any(v is None for v in left):
            return None
        used = sum(min(now - t, per_run[i]) for i, t in self.started.items() if i not in self.took)
        return max(0.0, sum(left) - used) / self.at_once

    def _status(self) -> str:
        if len(self.took) == len(self.labels):
            return f"all {len(self.labels)} runs done"
        left = self.left_s()
        return (f"{len(self.took)} of {len(self.labels)} runs done, "
                + (f"about {duration(left)} left" if left is not None else "time left known after the first run"))

    def begin(self) -> None:
        """The batch begins (runs in parallel say no :meth:`start`): say what it trains and the time left."""
        self._say(f"[runs] {len(self.labels)} to train, {self.at_once} at once: {', '.join(self.labels)}; "
                  f"{self._status()}")

    def start(self, i: int) -> None:
        """Run ``i`` begins: say which are done, which runs and which are left."""
        self.started[i] = self.clock()
        waiting = [self.labels[j] for j in range(len(self.labels)) if j not in self.took and j not in self.started]
        shown = ", ".join(waiting[:NEXT_SHOWN]) + (f" and {len(waiting) - NEXT_SHOWN} more" if len(waiting) > NEXT_SHOWN
                                                   else "")
        self._say(f"[runs] training {self.labels[i]} ({len(self.took) + 1} of {len(self.labels)}); "
                  f"left after it: {shown or 'none'}; {self._status()}")

    def finish(self, i: int, seconds: float | None = None, recorded: float | None = None) -> None:
        """Run ``i`` has finished, in ``seconds`` (default: since its :meth:`start`): say it and what is left.
        ``recorded``: the seconds the run recorded itself, the measure ``expected`` holds (default: ``seconds``)."""
        self.took[i] = seconds if seconds is not None else self.clock() - self.started.get(i, self.clock())
        if recorded is not None:
            self.recorded[i] = recorded
        self._say(f"[runs] {self.labels[i]} done in {duration(self.took[i])}; {self._status()}")
