"""The docker backend, for real whenever an engine responds (skipped, with the reason, if not).

`.ci/run` installs and starts an engine and builds the offline image when it can.
"""
import pytest

from wmrl.sandbox import Sandbox
from wmrl.sandbox.toy import SECRET, make_toy_task, toy_grade, toy_solution

# skipped, with the reason, by tests/conftest.py when no engine responds; a container per test is slow
pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    return make_toy_task(tmp_path_factory.mktemp("pool"))


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory):
    return Sandbox("docker", timeout_s=3, memory_mb=512, grader=toy_grade, base_dir=tmp_path_factory.mktemp("runs"))


@pytest.mark.parametrize("code, status", [
    (toy_solution(), "ok"),
    ("while True:\n    pass\n", "timeout"),
    ("blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 30))\n", "oom"),
    ("import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=1)\n", "runtime_error"),
    ("import os\nos._exit(0)\n", "no_submission"),
], ids=["a correct solution is ok", "an infinite loop times out", "a memory bomb is oom",
        "the network is unreachable", "an early exit has no submission"])
def test_docker_run_ends_with_a_clear_status(sandbox, toy, code, status):
    result = sandbox.run(toy, code)
    assert result.status == status, result
    assert result.isolation.startswith("docker:")


def test_docker_runs_never_see_the_answers_and_keep_only_head_and_tail(sandbox, toy):
    code = ("import glob\nprint([p for d in ('/wmrl', '/tmp', '/root') for p in glob.glob(d + '/**/*answer*', "
            "recursive=True)])\n"
            f"print(open({str(toy.private_dir / 'test_answer.csv')!r}).read())\n")
    result = sandbox.run(toy, code)
    assert result.status == "runtime_error" and result.error_type == "FileNotFoundError"
    assert SECRET not in result.stdout_tail and result.stdout_tail.startswith("[]")
    flood = sandbox.run(toy, "import sys\nwhile True:\n    sys.stdout.write('y' * 65536)\n")
    assert flood.status == "timeout" and len(flood.stdout_tail) < 5000
