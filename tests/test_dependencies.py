"""pyproject.toml's pins: one version of each library for the whole project, and the GPU extra runs the CPU tests' code."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# the LLM stack: what the `llm` extra's CPU tests run and a GPU machine (the `gpu` extra) runs alike
LLM_STACK = ("transformers", "trl", "accelerate", "datasets", "gguf")


def _requirement(text: str) -> tuple[str, str]:
    """``"name[extra]==1.2"`` -> ``("name", "==1.2")``, the name normalised as pip compares names."""
    match = re.fullmatch(r"\s*([A-Za-z0-9._-]+)(\[[^\]]*\])?\s*(.*?)\s*", text)
    assert match, f"unreadable requirement {text!r}"
    return re.sub(r"[-_.]+", "-", match.group(1)).lower(), match.group(3)


def _extra(name: str, seen: frozenset = frozenset()) -> dict[str, str]:
    """The pins an extra installs, its self-references (``wmrl[llm]``) expanded."""
    assert name not in seen, f"the extras refer to each other in a cycle through {name!r}"
    pins: dict[str, str] = {}
    for text in PROJECT["optional-dependencies"][name]:
        package, spec = _requirement(text)
        if package == PROJECT["name"]:
            for other in re.search(r"\[(.*)\]", text).group(1).split(","):
                pins.update(_extra(other.strip(), seen | {name}))
        else:
            pins[package] = spec
    return pins


def test_every_library_is_pinned_to_one_version_across_the_dependencies_and_every_extra():
    seen: dict[str, dict[str, str]] = {}  # package -> {where: spec}
    for where, texts in [("dependencies", PROJECT["dependencies"]), *PROJECT["optional-dependencies"].items()]:
        for text in texts:
            package, spec = _requirement(text)
            if package == PROJECT["name"]:
                continue
            assert re.fullmatch(r"==[0-9][0-9A-Za-z.+!-]*", spec), f"{where}: {text!r} is not pinned to one version"
            seen.setdefault(package, {})[where] = spec
    diverged = {package: where for package, where in seen.items() if len(set(where.values())) > 1}
    assert not diverged, f"pinned at different versions in different places: {diverged}"


def test_the_gpu_extra_installs_the_llm_extras_stack_plus_vllm():
    llm, gpu = _extra("llm"), _extra("gpu")
    assert {package: gpu.get(package) for package in llm} == llm
    assert set(LLM_STACK) <= set(llm) and "vllm" in gpu and "vllm" not in llm


def test_this_environment_runs_the_pinned_llm_stack():
    """The CPU tests exercise exactly the library code a GPU machine runs (a stale venv fails here, by name)."""
    llm = _extra("llm")
    try:
        installed = {package: "==" + importlib.metadata.version(package) for package in LLM_STACK}
    except importlib.metadata.PackageNotFoundError as exc:
        pytest.skip(f"the llm extra is not installed ({exc.name})")
    assert installed == {package: llm[package] for package in LLM_STACK}


def test_importing_ray_builds_no_iri_grammars():
    """Every Ray process (driver, agents, each run's fresh worker) imports jsonschema; a jsonschema that
    imports rfc3987-syntax compiles its Earley grammars there first, seconds of CPU each time."""
    pytest.importorskip("ray")
    code = "import sys, ray; print('rfc3987_syntax' in sys.modules, 'lark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.split() == ["False", "False"]
