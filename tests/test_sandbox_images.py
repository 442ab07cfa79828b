"""The sandbox images' recipes: what a solution can import in them, and what a GPU container needs.

None of the images can be built here (no registry), so the recipes are checked as text against the
project's own pins and the libraries the world model's prompt lists, and the offline image's root file
system is assembled for real (``build_offline.sh --rootfs``, no docker needed).
"""
import re
import subprocess
import tomllib

import pytest

from wmrl.provenance import REPO
from wmrl.sandbox.runner import LIBRARIES

SANDBOX = REPO / "sandbox"


def pip_pins(dockerfile: str) -> dict[str, str]:
    """``name -> version`` of every ``pip install`` in a Dockerfile (continuation lines joined)."""
    text = (SANDBOX / dockerfile).read_text().replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        if line.startswith("RUN") and "pip install" in line:
            pins.update(dict(re.findall(r"([A-Za-z0-9_.-]+)==([0-9][^\s&]*)", line)))
    return pins


def project_pins() -> dict[str, str]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return dict(dep.split("==") for dep in project["dependencies"] if "==" in dep)


@pytest.mark.parametrize("dockerfile, without", [("Dockerfile.cuda", set()), ("Dockerfile", {"torch"})])
def test_an_image_installs_every_library_the_world_model_is_told_about_at_the_projects_pins(dockerfile, without):
    pins = pip_pins(dockerfile)
    assert set(LIBRARIES) - without <= set(pins), set(LIBRARIES) - without - set(pins)
    ours = project_pins()
    assert {k: v for k, v in pins.items() if k in ours} == {k: ours[k] for k in pins if k in ours}


def test_the_cuda_image_pairs_torchvision_with_its_torch_and_has_the_openmp_runtime():
    pins = pip_pins("Dockerfile.cuda")
    torch_minor = int(pins["torch"].split(".")[1])
    assert pins["torchvision"].split(".")[:2] == ["0", str(torch_minor + 15)]  # torch 2.N <-> torchvision 0.(N+15)
    for dockerfile in ("Dockerfile.cuda", "Dockerfile"):  # LightGBM's wheel links the system's libgomp
        assert re.search(r"apt-get install[^\n]*libgomp1", (SANDBOX / dockerfile).read_text()), dockerfile


def test_each_recipe_says_which_image_runs_where():
    for name in ("Dockerfile.cuda", "Dockerfile", "build_offline.sh"):
        header = (SANDBOX / name).read_text().split("\nFROM")[0].split("\nset -euo")[0]
        for tag in ("wmrl-sandbox:offline", "Dockerfile.cuda", "sandbox/Dockerfile"):
            assert tag in header or name.endswith(tag.split("/")[-1]), (name, tag)


@pytest.mark.slow
def test_the_offline_root_file_system_has_what_the_nvidia_toolkit_needs(tmp_path):
    root = tmp_path / "rootfs"
    subprocess.run(["bash", str(SANDBOX / "build_offline.sh"), "--rootfs", str(root)], check=True,
                   capture_output=True, timeout=300)
    assert (root / "etc/ld.so.conf.d").is_dir()  # the toolkit's ldconfig hook writes and reads there
    assert "include /etc/ld.so.conf.d/*.conf" in (root / "etc/ld.so.conf").read_text()
    assert (root / "usr/bin/sh").exists() and (root / "wmrl/run_solution.py").exists()
