"""The package works installed as a wheel, away from the source tree (issue 10).

The wheel is built from a copy of the sources (so the checkout gains no build folders) and
installed into a fresh virtual environment. That environment reaches the test interpreter's
third-party packages through a ``.pth`` line (its site-packages' own ``.pth`` files, among them
the editable install of wmrl, are not processed that way), so numpy, pandas and scikit-learn
are not reinstalled, while ``wmrl`` itself can only come from the wheel: the check runs from a
temporary folder, without PYTHONPATH, and asserts where ``wmrl`` was imported from.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

CHECK = textwrap.dedent("""
    import json, sys, tempfile
    from pathlib import Path
    import wmrl
    from wmrl.provenance import REPO
    from wmrl.sandbox import Sandbox, local, warm
    from wmrl.sandbox.toy import make_toy_task, toy_grade, toy_solution
    task = make_toy_task(Path(tempfile.mkdtemp()) / "pool")
    results = {mode: Sandbox("local", timeout_s=20, grader=toy_grade, warm=mode == "warm").run(task, toy_solution())
               for mode in ("cold", "warm")}
    print(json.dumps({"wmrl": wmrl.__file__, "runtime": str(local.RUNTIME), "server": str(warm.SERVER),
                      "repo": str(REPO), "status": {m: r.status for m, r in results.items()},
                      "isolation": {m: r.isolation for m, r in results.items()}}))
    """)


@pytest.mark.slow
def test_a_wheel_installed_in_a_fresh_environment_runs_a_sandboxed_solution(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "wmrl", source / "wmrl", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                    "-w", str(tmp_path / "dist"), str(source)], check=True)
    (wheel,) = (tmp_path / "dist").glob("wmrl-*.whl")

    env_dir = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip())
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (site / "test-dependencies.pth").write_text("\n".join(sorted(deps)) + "\n")
    subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)], check=True)

    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = subprocess.run([python, "-c", CHECK], cwd=work, env=env, capture_output=True, text=True, timeout=600,
                         check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    for key in ("wmrl", "runtime", "server"):
        assert report[key].startswith(str(site)), report  # from the wheel, not the source tree
    assert report["repo"] == str(work.resolve())  # no checkout around an installed package
    assert report["status"] == {"cold": "ok", "warm": "ok"}, report
