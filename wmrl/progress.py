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

from tqdm.std import tqdm as text_tqdm

__all__ = ["tqdm", "widgets_shown"]


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
