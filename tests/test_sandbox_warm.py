"""What only the warm launcher needs: fresh state per run, the cold path's world, no stray servers.

The hostile suite (tests/test_sandbox_local.py) runs in both modes; these tests cover what a
fork of a long-lived, preloaded server could get wrong and a fresh interpreter cannot.
"""
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from wmrl.sandbox import Sandbox, SandboxError, warm
from wmrl.sandbox.cgroup import run_group_paths
from wmrl.sandbox.toy import sandbox_processes, toy_grade, toy_solution

pytestmark = pytest.mark.skipif(not Sandbox("local", warm=True).isolation.endswith("+warm"),
                                reason="the warm launcher does not apply here (see local.warm_available)")


@pytest.fixture(autouse=True)
def host_unchanged(runs_dir):
    yield
    assert sandbox_processes(runs_dir) == []
    assert list(Path(runs_dir).iterdir()) == []


def sandbox(runs_dir, warm_mode=True, **kw):
    return Sandbox("local", timeout_s=kw.pop("timeout_s", 5), grader=toy_grade, base_dir=runs_dir, warm=warm_mode,
                   **kw)


def test_module_state_changed_by_one_run_never_reaches_the_next(toy, runs_dir):
    box = sandbox(runs_dir)
    patch = "import numpy, pandas\npandas.read_csv = None\nnumpy.WMRL_MARK = 1\n"
    assert box.run(toy, patch).status == "no_submission"
    check = textwrap.dedent("""
        import os, numpy, pandas as pd
        assert pd.read_csv is not None and not hasattr(numpy, "WMRL_MARK")
        test = pd.read_csv(os.path.join(os.environ["DATA_DIR"], "test.csv"))
        pd.DataFrame({"id": test["id"], "y": 1}).to_csv(os.environ["SUBMISSION_PATH"], index=False)
        """)
    result = box.run(toy, check)
    assert result.status == "ok", result


def test_unseeded_random_numbers_differ_between_runs(toy, runs_dir):
    box = sandbox(runs_dir)
    code = "import random, numpy as np\nprint(np.random.rand(), random.random())\n"
    first, second = (box.run(toy, code).stdout_tail for _ in range(2))
    assert first and first.split()[0] != second.split()[0] and first.split()[1] != second.split()[1]


PROBE = textwrap.dedent("""
    import json, os, resource, signal, sys, tempfile
    work = os.getcwd()
    status = dict(line.split(":", 1) for line in open("/proc/self/status"))
    world = {
        "env": dict(os.environ), "cwd": work, "argv": sys.argv, "path": sys.path, "file": __file__,
        "name": __name__, "pid": os.getpid(), "ppid": os.getppid(), "tmp": tempfile.gettempdir(),
        "fds": sorted(os.listdir("/proc/self/fd")), "threads": len(os.listdir("/proc/self/task")),
        "limits": [resource.getrlimit(getattr(resource, n)) for n in dir(resource) if n.startswith("RLIMIT_")],
        "status": {k: status[k].strip() for k in ("NoNewPrivs", "CapEff", "CapPrm", "Groups", "Seccomp")},
        "uid_is_sandbox": os.getuid() == os.geteuid() == os.getgid() >= 1_000_000,
        "signals": {s: str(signal.getsignal(getattr(signal, s))) for s in ("SIGINT", "SIGTERM", "SIGCHLD", "SIGPIPE")},
        "umask": os.umask(0o077), "stdin": sys.stdin.read(), "isolated": sys.flags.isolated,
        "mounts": sorted(line.split()[1] for line in open("/proc/self/mounts")),
        "procs": sorted(p for p in os.listdir("/proc") if p.isdigit()),
        "ifaces": sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else None,
        "builtins": type(__builtins__).__name__,
    }
    print(json.dumps(world).replace(work, "<work>").replace(os.path.dirname(work), "<run>"))
    """)


def test_the_solution_sees_the_same_world_in_both_modes(toy, runs_dir):
    worlds = {}
    for mode in (False, True):
        result = sandbox(runs_dir, mode).run(toy, PROBE)
        assert result.status == "no_submission", result
        worlds[mode] = json.loads(result.stdout_tail)
    assert worlds[True] == worlds[False]


def test_a_server_is_single_threaded_and_holds_only_its_socket(toy, runs_dir):
    sandbox(runs_dir).run(toy, toy_solution())
    for pid in warm.servers():
        assert len(os.listdir(f"/proc/{pid}/task")) == 1
        fds = {fd: os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        assert fds["0"] == fds["1"] == os.devnull and len(fds) == 4, fds  # + its stderr file and socket


@pytest.mark.slow
def test_run_many_runs_one_server_per_worker_in_parallel(toy, runs_dir):
    warm.shutdown()
    box = sandbox(runs_dir)
    jobs = [(toy, "import time\ntime.sleep(1)\n" + toy_solution())] * 4
    box.run(toy, toy_solution())  # one server up, so the timing below is not dominated by start-up
    start = time.monotonic()
    results = box.run_many(jobs, max_workers=2)
    assert [r.status for r in results] == ["ok"] * 4
    assert len(warm.servers()) == 2
    assert time.monotonic() - start < sum(r.wall_s for r in results)


def test_a_server_killed_mid_run_is_a_sandbox_error_and_leaves_nothing(toy, runs_dir):
    box = sandbox(runs_dir, timeout_s=30)
    box.run(toy, toy_solution())
    outcome = {}

    def long_run():
        try:
            outcome["result"] = box.run(toy, "import time\ntime.sleep(30)\n")
        except SandboxError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=long_run)
    thread.start()
    deadline = time.monotonic() + 30
    while not sandbox_processes(runs_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    (busy,) = [pid for pid in warm.servers() if Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    os.kill(busy, signal.SIGKILL)
    thread.join(30)
    assert "error" in outcome and "warm sandbox server" in str(outcome["error"]), outcome
    assert box.run(toy, toy_solution()).status == "ok"  # a new server takes over


HOST = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from wmrl.sandbox import Sandbox, warm
    from wmrl.sandbox.toy import make_toy_task, toy_grade
    task = make_toy_task(Path(sys.argv[1]))
    box = Sandbox(timeout_s=60, grader=toy_grade, base_dir=sys.argv[2])
    threading.Thread(target=box.run, args=(task, "import time\\ntime.sleep(60)\\n"), daemon=True).start()
    while not warm.servers():
        time.sleep(0.05)
    print(warm.servers()[0], flush=True)
    time.sleep(120)
    """)


@pytest.mark.slow
def test_servers_and_their_runs_die_with_the_host(tmp_path):
    base = tmp_path / "runs"
    host = subprocess.Popen([sys.executable, "-c", HOST, str(tmp_path / "pool"), str(base)],
                            stdout=subprocess.PIPE, cwd=Path(__file__).parents[1])
    try:
        server = int(host.stdout.readline())
        deadline = time.monotonic() + 120
        while not sandbox_processes(base) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sandbox_processes(base), "the run never started"
    finally:
        host.kill()
        host.wait()
    deadline = time.monotonic() + 10
    while (os.path.exists(f"/proc/{server}") or sandbox_processes(base)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{server}") and sandbox_processes(base) == []
    for run in base.iterdir():  # the dead host never removed its run's groups
        for group in run_group_paths(run.name):
            group.rmdir()


def test_warm_falls_back_to_cold_where_it_cannot_match_it(runs_dir):
    assert not sandbox(runs_dir, cpus=2).isolation.endswith("+warm")
    assert not sandbox(runs_dir, False).isolation.endswith("+warm")


@pytest.mark.slow
def test_a_real_task_baseline_scores_the_same_in_both_modes(pool, runs_dir):
    from wmrl.agent import grammar

    task = pool.train[0]
    code = grammar.render(task, grammar.baseline_choices(task))
    results = [Sandbox("local", timeout_s=60, base_dir=runs_dir, warm=mode).run(task, code) for mode in (False, True)]
    assert [r.status for r in results] == ["ok", "ok"], results
    assert results[0].percentile == results[1].percentile and results[0].raw_score == results[1].raw_score
