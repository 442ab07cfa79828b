"""The local sandbox against ordinary and hostile solutions.

Every hostile program must end with a clear status, leave the host unchanged (no process of a
sandbox uid left, no file written outside its working folder) and never leak the answers, with
either launcher: each test runs once "cold" (a fresh interpreter per run) and once "warm" (a
fork of a preloaded server; see tests/test_sandbox_warm.py for what only it needs).
"""
import os
import socket
import textwrap
import time
from pathlib import Path

import pytest

from wmrl.sandbox import ExecutionResult, Sandbox, library_versions, local
from wmrl.sandbox.local import probe_namespaces
from wmrl.sandbox.toy import SECRET, sandbox_processes, toy_grade, toy_solution

WRITE_SUBMISSION = toy_solution()


@pytest.fixture(scope="module", params=[False, True], ids=["cold", "warm"])
def warm(request):
    return request.param


@pytest.fixture(scope="module")
def sandbox(runs_dir, warm):
    sandbox = Sandbox("local", timeout_s=2.5, memory_mb=1024, cpus=1, grader=toy_grade, base_dir=runs_dir, warm=warm)
    assert sandbox.isolation.endswith("+warm") == warm, sandbox.isolation
    return sandbox


@pytest.fixture(autouse=True)
def host_unchanged(runs_dir):
    """After every test: no sandbox process alive, no run folder left, nothing new in /tmp."""
    before = set(os.listdir("/tmp"))
    yield
    assert sandbox_processes(runs_dir) == []
    assert list(Path(runs_dir).iterdir()) == []
    assert {p for p in set(os.listdir("/tmp")) - before if p.startswith("wmrl-escape")} == set()


def run(sandbox, task, code) -> ExecutionResult:
    result = sandbox.run(task, textwrap.dedent(code))
    assert SECRET not in result.stdout_tail + result.stderr_tail
    return result


def test_a_correct_solution_is_graded_ok_with_its_score(sandbox, toy):
    result = run(sandbox, toy, WRITE_SUBMISSION)
    assert result.status == "ok", result
    assert result.raw_score == pytest.approx(0.5) and result.percentile is not None, result
    assert result.wall_s > 0 and result.cpu_s > 0 and "uid" in result.isolation


@pytest.mark.slow
def test_a_pandas_and_sklearn_script_runs_within_the_default_memory_limit(toy, runs_dir, warm):
    code = textwrap.dedent("""
        import os, pandas as pd
        from sklearn.ensemble import RandomForestClassifier
        train, test = (pd.read_csv(os.path.join(os.environ["DATA_DIR"], f)) for f in ("train.csv", "test.csv"))
        model = RandomForestClassifier(20, n_jobs=-1).fit(train[["x"]], train["y"])
        pd.DataFrame({"id": test["id"], "y": model.predict(test[["x"]])}).to_csv(os.environ["SUBMISSION_PATH"], index=False)
        """)
    result = Sandbox(timeout_s=30, grader=toy_grade, base_dir=runs_dir, warm=warm).run(toy, code)
    assert result.status == "ok", result.stderr_tail


def test_a_syntax_error_is_caught_on_the_host_with_its_line(sandbox, toy):
    result = sandbox.run(toy, "x = 1\ny = (\n")
    assert (result.status, result.error_type, result.error_line) == ("syntax_error", "SyntaxError", 2)


def test_a_runtime_error_names_the_exception_and_the_solution_line(sandbox, toy):
    result = run(sandbox, toy, "import os\n\ndef f():\n    return {}['target']\n\nf()\n")
    assert (result.status, result.error_type, result.error_line) == ("runtime_error", "KeyError", 4)
    assert "solution.py" in result.stderr_tail and "run_solution" not in result.stderr_tail


HOSTILE = {
    "an infinite loop times out": ("while True:\n    pass\n", {"timeout"}),
    "sleeping past the timeout times out": ("import time\ntime.sleep(60)\n", {"timeout"}),
    "a fork bomb is contained": ("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """, {"timeout", "runtime_error"}),
    "a memory bomb ends as oom": ("blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 30))\n", {"oom"}),
    "a numpy memory bomb ends as oom": ("import numpy as np\nx = np.ones((1 << 16, 1 << 16))\n", {"oom"}),
    "a segfault is a runtime error": ("import ctypes\nctypes.string_at(0)\n", {"runtime_error"}),
    "os._exit(0) without a submission is no_submission": ("import os\nos._exit(0)\n", {"no_submission"}),
    "sys.exit(3) is a runtime error": ("import sys\nsys.exit(3)\n", {"runtime_error"}),
    "a thread still running at the end does not hold the run": ("""
        import threading, time
        threading.Thread(target=time.sleep, args=(60,)).start()
        """ + textwrap.indent(WRITE_SUBMISSION, " " * 8), {"ok"}),
    "a daemon child that outlives its parent is killed": ("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(30)
                open('/tmp/wmrl-escape-daemon', 'w').write('alive')
            os._exit(0)
        """ + textwrap.indent(WRITE_SUBMISSION, " " * 8), {"ok"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_program(sandbox, toy, name):
    code, expected = HOSTILE[name]
    result = run(sandbox, toy, code)
    assert result.status in expected, result
    assert result.wall_s < sandbox.limits.timeout_s + 3


def test_a_segfault_reports_the_signal(sandbox, toy):
    assert run(sandbox, toy, "import ctypes\nctypes.string_at(0)\n").error_type == "SIGSEGV"


@pytest.mark.slow
def test_gigabytes_of_stdout_keep_only_head_and_tail(sandbox, toy):
    code = "import sys\nchunk = 'x' * (1 << 20) + '\\n'\nprint('FIRST')\nwhile True:\n    sys.stdout.write(chunk)\n"
    result = run(sandbox, toy, code)
    assert result.status == "timeout"
    assert result.stdout_tail.startswith("FIRST") and "bytes omitted" in result.stdout_tail
    assert len(result.stdout_tail) < 5000


def test_the_answers_are_unreachable_by_guessed_paths(sandbox, toy):
    answer = toy.private_dir / "test_answer.csv"
    guesses = ["os.path.join(os.environ['DATA_DIR'], '..', 'private', 'test_answer.csv')", repr(str(answer)),
               f"'/proc/1/root{answer}'", f"'/proc/self/root{answer}'", "'/proc/1/cwd/../private/test_answer.csv'",
               "'../../private/test_answer.csv'"]
    code = "import os, glob\nfound = []\n"
    for guess in guesses:
        code += f"try:\n    found.append(open({guess}).read())\nexcept Exception as e:\n    print(type(e).__name__)\n"
    code += f"found += [open(p).read() for p in glob.glob('{toy.root.parent}/**/*answer*', recursive=True)]\n"
    code += "print(found)\n"
    result = run(sandbox, toy, code)
    assert result.status == "no_submission" and result.stdout_tail.strip().endswith("[]"), result


def test_a_submission_linked_to_the_answers_is_refused(sandbox, toy):
    code = f"import os\nos.symlink({str(toy.private_dir / 'test_answer.csv')!r}, os.environ['SUBMISSION_PATH'])\n"
    result = run(sandbox, toy, code)
    assert result.status == "invalid_submission" and "link" in result.reason


def test_writes_outside_the_working_folder_never_reach_the_host(sandbox, toy):
    targets = ["/tmp/wmrl-escape-tmp", "/var/tmp/wmrl-escape-var", "/dev/shm/wmrl-escape-shm",
               str(toy.public_dir / "wmrl-escape-public"), str(Path.cwd() / "wmrl-escape-cwd"),
               str(Path(sandbox.base_dir) / "wmrl-escape-runs")]
    code = "import os\n" + "".join(
        f"try:\n    open({t!r}, 'w').write('x')\nexcept OSError as e:\n    print(e.errno)\n" for t in targets)
    result = run(sandbox, toy, code + WRITE_SUBMISSION)
    assert result.status == "ok", result
    assert [t for t in targets if os.path.exists(t)] == []


def test_public_data_is_read_only(sandbox, toy):
    code = "import os\nopen(os.path.join(os.environ['DATA_DIR'], 'train.csv'), 'a').write('1,1,1\\n')\n"
    result = run(sandbox, toy, code)
    assert result.status == "runtime_error" and result.error_type in ("PermissionError", "OSError")


@pytest.mark.skipif("netns" not in probe_namespaces()[1], reason="this kernel allows no network namespace")
def test_a_network_connection_to_the_host_fails(sandbox, toy):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = run(sandbox, toy, f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=1)\n")
        server.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing ever reached the host's listener
            server.accept()
    assert result.status == "runtime_error" and result.error_type in ("OSError", "ConnectionRefusedError")


@pytest.mark.parametrize("header, rows, reason", [
    ("id,label", "[(i, 1) for i in ids]", "column"),
    ("id,y", "[(i, 1) for i in ids[:2]]", "rows"),
    ("id,y", "[(i, 'nan') for i in ids]", "NaN"),
    ("id,y", "[(i + 1000, 1) for i in ids]", "id"),
], ids=["wrong columns", "wrong row count", "NaN", "wrong ids"])
def test_a_malformed_submission_is_invalid(sandbox, toy, header, rows, reason):
    result = run(sandbox, toy, toy_solution(header, rows))
    assert result.status == "invalid_submission" and reason in result.reason, result


def test_run_many_keeps_order_and_runs_in_parallel(sandbox, toy):
    jobs = [(toy, "import time\ntime.sleep(0.6)\n" + WRITE_SUBMISSION), (toy, "raise ValueError('b')\n")] * 2
    start = time.monotonic()
    results = sandbox.run_many(jobs, max_workers=2)
    assert [r.status for r in results] == ["ok", "runtime_error"] * 2
    assert time.monotonic() - start < sum(r.wall_s for r in results)


def test_library_versions_name_the_interpreter_and_its_libraries():
    versions = library_versions()
    assert {"python", "numpy", "pandas", "scikit-learn"} <= set(versions)


@pytest.mark.slow
def test_forked_children_share_one_memory_budget(toy, runs_dir, warm):
    # 1 GB: the per-process limit must also hold the warm server's preloaded libraries (~0.5 GB)
    sandbox = Sandbox("local", timeout_s=10, memory_mb=1024, grader=toy_grade, base_dir=runs_dir, warm=warm)
    if "memcg" not in sandbox.isolation:
        pytest.skip(f"no writable memory cgroup here (isolation: {sandbox.isolation})")
    code = textwrap.dedent("""
        import os, time
        for _ in range(4):  # each child stays under the per-process limit; together they exceed it
            if os.fork() == 0:
                block = bytearray(300 << 20)
                time.sleep(30)
        for _ in range(4):
            _, status = os.wait()
            if status:
                raise SystemExit("a worker died")
        """)
    assert run(sandbox, toy, code).status == "oom"


def test_real_pool_task_is_graded_by_the_real_grader(pool, runs_dir, warm):
    task = min(pool.train, key=lambda t: t.size_bytes)
    sandbox = Sandbox("local", timeout_s=20, base_dir=runs_dir, warm=warm)  # grader: wmrl.grading.grade
    copy_sample = textwrap.dedent("""
        import os, shutil
        shutil.copy(os.path.join(os.environ["DATA_DIR"], "sample_submission.csv"), os.environ["SUBMISSION_PATH"])
        """)
    result = sandbox.run(task, copy_sample)
    assert result.status == "ok" and 0.0 <= result.percentile <= 1.0, result
    drop_target = copy_sample.replace("shutil.copy(", "import pandas as pd\nsrc, dst = (").replace(
        ', os.environ["SUBMISSION_PATH"])', ', os.environ["SUBMISSION_PATH"])\n'
        f'pd.read_csv(src).drop(columns=[{task.target_column!r}]).to_csv(dst, index=False)')
    result = sandbox.run(task, drop_target)
    assert result.status == "invalid_submission" and task.target_column in result.reason, result


def test_without_namespaces_the_run_degrades_and_says_so(toy, runs_dir, warm, monkeypatch):
    monkeypatch.setattr(local, "probe_namespaces", lambda: ([], "no-namespaces"))  # a kernel refusing unshare
    sandbox = Sandbox("local", timeout_s=5, grader=toy_grade, base_dir=runs_dir, warm=warm)
    daemon = textwrap.dedent("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            print("daemon", os.getpid(), flush=True)
            time.sleep(30)
        time.sleep(0.2)
        """)
    result = sandbox.run(toy, daemon + toy_solution())
    assert result.status == "ok" and result.isolation.startswith("no-namespaces"), result
    pid = int(result.stdout_tail.split()[1])
    time.sleep(0.5)
    assert not os.path.exists(f"/proc/{pid}") or Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
