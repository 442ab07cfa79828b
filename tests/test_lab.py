"""JupyterLab: its kernels are the project's, its progress bars widgets, and notebook 01 renders in a browser.

One JupyterLab server (``make lab``'s, with the options of a test) starts on a free loopback port
with a random token, in a Jupyter home of its own (config, data, runtime, settings, workspaces
under a tmp path), on a copy of the committed ``notebooks/01_main_table.ipynb``.

A kernel the server starts for a notebook session (as opening a notebook in the lab does) is
driven with jupyter_client: it must be this venv's Python and draw ``wmrl.progress`` bars as
widgets. In the browser test, Debian's headless Chromium opens notebook 01's page and, in one run,
dumps the DOM and takes a screenshot after ``--virtual-time-budget``: the page's timers run on
virtual time, which advances only while the page is idle (not while a request is pending), so the
wait ends when JupyterLab has rendered, not after a guessed sleep. The test then looks for the
notebook's main table (the text printed by its first checked cell) and for every figure (the base64
PNG of each image output) in the rendered page. The screenshot is kept as an artefact under the
test's tmp path and copied to ``build/test-artifacts/``. The server is always stopped, its kernels
with it.
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parent.parent
NOTEBOOK = REPO / "notebooks" / "01_main_table.ipynb"
ARTIFACTS = REPO / "build" / "test-artifacts"
CHROMIUM = shutil.which("chromium")
# The flags that work in a container as root, offline: no sandbox (root), no GPU, no network
# services of the browser's own, a fresh profile per run.
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
WINDOW = (1400, 4000)  # tall enough for the table and the figure in one screenshot
SERVER_START_S, PAGE_BUDGET_MS, BROWSER_S, STOP_S = 120, 60_000, 240, 20

pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the 'lab' extra: pip install -e '.[lab]')")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, n: int = 3000) -> str:
    return path.read_text(errors="replace")[-n:] if path.is_file() else ""


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the server's process group (the server shuts its kernels down), SIGKILL after STOP_S."""
    for sig, wait_s in ((signal.SIGTERM, STOP_S), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue


@dataclass(frozen=True)
class Lab:
    url: str  # http://127.0.0.1:<port>
    token: str
    runtime: Path  # where the server writes its kernels' connection files
    log: Path


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 serving a copy of notebook 01 (stopped, with its kernels, at the end)."""
    tmp_path = tmp_path_factory.mktemp("lab")
    root, home, log = tmp_path / "notebooks", tmp_path / "jupyter", tmp_path / "lab.log"
    root.mkdir()
    shutil.copy(NOTEBOOK, root)
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')  # no news pop-up
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(home / "config"), "JUPYTER_DATA_DIR": str(home / "data"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime")}
    port, token = _free_port(), secrets.token_urlsafe(24)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.user_settings_dir={home / 'settings'}", f"--LabApp.workspaces_dir={home / 'workspaces'}",
           "--LabApp.extension_manager=readonly", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        status = f"http://127.0.0.1:{port}/api/status?token={token}"
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited with {proc.returncode} before serving:\n{_tail(log)}")
            try:
                with urllib.request.urlopen(status, timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"jupyter lab did not answer on 127.0.0.1:{port} within {SERVER_START_S} s:\n{_tail(log)}")
            time.sleep(0.5)
        yield Lab(f"http://127.0.0.1:{port}", token, home / "runtime", log)
    finally:
        _stop(proc)


def _main_table_and_figures(path: Path) -> tuple[str, list[str]]:
    """The text the notebook's first checked cell prints (its main table) and every PNG output, base64."""
    cells = nbformat.read(path, as_version=4).cells
    checked = next(c for c in cells if "nbval-check-output" in c.metadata.get("tags", []))
    table = "".join(o.text for o in checked.outputs if o.get("name") == "stdout")
    figures = [o.data["image/png"].strip() for c in cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    return table, figures


def test_a_kernel_jupyterlab_starts_is_this_venvs_python_and_draws_progress_bars_as_widgets(lab):
    from jupyter_client import BlockingKernelClient

    request = urllib.request.Request(
        f"{lab.url}/api/sessions", method="POST", headers={"Authorization": f"token {lab.token}"},
        data=json.dumps({"path": "progress.ipynb", "name": "progress.ipynb", "type": "notebook",
                         "kernel": {"name": "python3"}}).encode())
    with urllib.request.urlopen(request, timeout=60) as r:
        kernel_id = json.load(r)["kernel"]["id"]
    client = BlockingKernelClient(connection_file=str(lab.runtime / f"kernel-{kernel_id}.json"))
    client.load_connection_file()
    client.start_channels(hb=False)  # a heartbeat not yet beating under load reads as a dead kernel
    messages = []
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(
            "import sys\nfrom wmrl.progress import tqdm\nprint(sys.prefix)\nfor _ in tqdm(range(3), desc='steps'):\n    pass",
            output_hook=messages.append, timeout=60)
    finally:
        client.stop_channels()
    assert reply["content"]["status"] == "ok", reply["content"]
    printed = "".join(m["content"]["text"] for m in messages if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")
    assert printed.strip() == sys.prefix, "the lab's kernel must be this venv's Python"
    shown = [m["content"]["data"] for m in messages if m["msg_type"] == "display_data"]
    assert any("application/vnd.jupyter.widget-view+json" in d and "steps" in d["text/plain"] for d in shown), shown


@pytest.mark.browser
@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed "
                                             "(apt-get install -y chromium; .ci/run installs it)")
def test_jupyterlab_renders_notebook_01_with_its_main_table_and_figure_in_headless_chromium(lab, tmp_path):
    from PIL import Image

    url, log = f"{lab.url}/lab/tree/{NOTEBOOK.name}?token={lab.token}", lab.log
    table, figures = _main_table_and_figures(NOTEBOOK)
    assert table.strip() and figures, "notebook 01 must hold its main table and a figure (redraw it)"
    shot = tmp_path / "01_main_table.png"
    t0 = time.monotonic()
    browser = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}",
         "--window-size={},{}".format(*WINDOW), f"--virtual-time-budget={PAGE_BUDGET_MS}", f"--screenshot={shot}",
         "--dump-dom", url],
        check=False, capture_output=True, text=True, timeout=BROWSER_S, stdin=subprocess.DEVNULL)
    took = time.monotonic() - t0
    if shot.is_file():
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, ARTIFACTS / "lab_01_main_table.png")
    dom = browser.stdout
    why = (f"(chromium exit {browser.returncode} after {took:.0f} s; screenshot: {ARTIFACTS / 'lab_01_main_table.png'})"
           f"\nchromium stderr:\n{browser.stderr[-2000:]}\nserver log:\n{_tail(log)}")
    assert "jp-Notebook" in dom, f"JupyterLab did not render a notebook {why}"
    assert re.search(r'<script[^>]* src="[^"]*/@jupyter-widgets/jupyterlab-manager/', dom), \
        f"the page did not load the widgets extension (ipywidgets' jupyterlab_widgets) {why}"
    text = html.unescape(re.sub(r"<[^>]+>", "", dom))
    missing = [line for line in table.splitlines() if line.strip() and line not in text]
    assert not missing, f"the main table is not on the page; missing rows: {missing[:3]} {why}"
    for i, png in enumerate(figures):
        assert f'src="data:image/png;base64,{png}' in dom, f"figure {i} of {len(figures)} is not on the page {why}"
    with Image.open(shot) as image:
        assert image.size == WINDOW
        low, high = image.convert("L").getextrema()
        assert high - low > 100, "the screenshot is blank"
