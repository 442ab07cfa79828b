"""The GPU check's kit (`make device-kit`, scripts/device_check.sh): what it carries must be what this project runs."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _device_wheels() -> dict[str, str]:
    text = (ROOT / "Makefile").read_text()
    block = re.search(r"^DEVICE_WHEELS := (.*?)(?<!\\)\n", text, re.DOTALL | re.MULTILINE).group(1).replace("\\\n", " ")
    return dict(item.split("==") for item in block.split())


def test_the_kit_carries_the_versions_this_environment_resolved():
    """The wheels are the `llm` extra's pins and their dependencies as this venv has them; a pin moved in
    pyproject.toml without the kit would test another stack on the GPU."""
    if importlib.util.find_spec("trl") is None:
        pytest.skip("the llm extra is not installed")
    wheels = _device_wheels()
    assert {"trl", "datasets", "outlines"} <= set(wheels)
    installed = {name: importlib.metadata.version(name) for name in wheels}
    assert installed == wheels
    pins = dict(re.findall(r'"(trl|datasets|outlines)==([^"]+)"', (ROOT / "pyproject.toml").read_text()))
    assert all(wheels[name] == version for name, version in pins.items())


def test_the_check_script_is_valid_bash_and_refuses_to_run_without_its_kit(tmp_path):
    script = ROOT / "scripts" / "device_check.sh"
    assert subprocess.run(["bash", "-n", str(script)], check=False, capture_output=True).returncode == 0
    done = subprocess.run(["bash", str(script)], check=False, cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "OUT": str(tmp_path / "out")})
    assert done.returncode == 2 and "make device-kit" in done.stdout
