"""Every backend against ordinary and hostile solutions: the sandbox's guarantees, stated as tests.

Each test runs three times: the local backend "cold" (a fresh interpreter per run), "warm" (a
fork of a preloaded server) and "docker" (one container per run; marked ``docker`` and skipped,
with the reason, when no engine responds or the image is missing: `.ci/run` starts one and
builds the image). Every hostile program must end with a clear status, leave the host unchanged
(no process of a sandbox uid, no run folder, no container left, nothing written outside its
working folder) and never leak the answers.

The budget is CPU seconds of the solution's whole process tree (children and threads
included), with a wall-clock backstop for programs that sleep or block; a timeout's ``limit``
says which one fired.

A solution sees its task's public files and the interpreter, nothing else of anyone's data: for
a competition imported from each layout (with what real sources keep beside the public folder:
MLE-bench's and MLE-Dojo's ``raw/``, DSBench's ``output_model/``), and for the small pool (the
other tasks, the data root, the repository, the home folder), a solution that looks for files
by absolute and relative paths, through ``/proc``, and by walking every folder above its data
finds none.
"""
import json
import os
import shutil
import socket
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from test_importers import LAYOUTS, import_layout
from test_pool_ownership import FIXTURES
from wmrl.provenance import REPO
from wmrl.sandbox import ExecutionResult, Sandbox
from wmrl.sandbox.docker_backend import LABEL, docker_available
from wmrl.sandbox.local import probe_namespaces, warm_available
from wmrl.sandbox.toy import SECRET, forking_burner, sandbox_processes, toy_grade, toy_solution
from wmrl.tasks import default_root

WRITE_SUBMISSION = toy_solution()
CPU_S, WALL_S = 1.5, 6.0  # the budget, and a backstop that a loaded machine does not reach first
BACKENDS = ["cold", "warm", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.fixture(scope="module", params=BACKENDS)
def sandbox(request, runs_dir):
    kind = request.param
    limits = {"timeout_s": CPU_S, "wall_timeout_s": WALL_S, "memory_mb": 1024, "cpus": 1}
    if kind == "docker":
        if (reason := docker_available()) is not None:
            pytest.skip(f"docker: {reason}")
        return Sandbox("docker", **limits, grader=toy_grade, base_dir=runs_dir)
    box = Sandbox("local", **limits, grader=toy_grade, base_dir=runs_dir, warm=kind == "warm")
    if kind == "warm" and not box.facts.warm_start:
        pytest.skip(f"the warm launcher does not apply here: {warm_available(probe_namespaces()[0], 1)}")
    assert box.facts.warm_start == (kind == "warm"), box.isolation
    return box


def leftover_containers(runs_dir) -> list[str]:
    import docker

    client = docker.from_env(timeout=10)
    return [c.name for c in client.containers.list(all=True, filters={"label": LABEL})
            if c.labels[LABEL].startswith(str(runs_dir))]


@pytest.fixture(autouse=True)
def host_unchanged(sandbox, runs_dir):
    """After every test: no sandbox process alive, no run folder or container left, nothing new in /tmp."""
    before = set(os.listdir("/tmp"))
    yield
    assert sandbox_processes(runs_dir) == []
    assert list(Path(runs_dir).iterdir()) == []
    assert {p for p in set(os.listdir("/tmp")) - before if p.startswith("wmrl-escape")} == set()
    if sandbox.backend == "docker":
        assert leftover_containers(runs_dir) == []


def run(sandbox, task, code) -> ExecutionResult:
    result = sandbox.run(task, textwrap.dedent(code))
    assert SECRET not in result.stdout_tail + result.stderr_tail
    return result


def test_a_correct_solution_is_graded_ok_with_its_score(sandbox, toy):
    result = run(sandbox, toy, WRITE_SUBMISSION)
    assert result.status == "ok" and result.limit is None, result
    assert result.raw_score == pytest.approx(0.5) and result.percentile is not None, result
    assert result.wall_s > 0 and result.cpu_s > 0 and "uid" in result.isolation


def test_a_syntax_error_is_caught_on_the_host_with_its_line(sandbox, toy):
    result = sandbox.run(toy, "x = 1\ny = (\n")
    assert (result.status, result.error_type, result.error_line) == ("syntax_error", "SyntaxError", 2)


def test_a_runtime_error_names_the_exception_and_the_solution_line(sandbox, toy):
    result = run(sandbox, toy, "import os\n\ndef f():\n    return {}['target']\n\nf()\n")
    assert (result.status, result.error_type, result.error_line) == ("runtime_error", "KeyError", 4)
    assert "solution.py" in result.stderr_tail and "run_solution" not in result.stderr_tail


HOSTILE = {  # name: (code, allowed statuses, the limit a timeout must name)
    "a CPU-burning loop times out by CPU": ("while True:\n    pass\n", {"timeout"}, "cpu"),
    "a sleeping program times out by the wall backstop": ("import time\ntime.sleep(60)\n", {"timeout"}, "wall"),
    "a program blocked on a pipe times out by the wall backstop": (
        "import os\nr, w = os.pipe()\nos.read(r, 1)\n", {"timeout"}, "wall"),
    "a forking CPU burner times out by its tree's CPU": (forking_burner(4, 0.6), {"timeout"}, "cpu"),
    "CPU burned in threads counts": ("""
        import hashlib, threading
        data = b"x" * (1 << 24)
        def work():
            while True:
                hashlib.sha256(data).digest()  # releases the GIL: the threads run in parallel
        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        """, {"timeout"}, "cpu"),
    "a daemon that leaves the session still counts": ("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            while True:
                pass
        time.sleep(60)
        """, {"timeout"}, "cpu"),
    "a fork bomb is contained": ("""
        import os
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """, {"timeout", "runtime_error"}, "cpu"),
    "a memory bomb ends as oom": ("blocks = []\nwhile True:\n    blocks.append(bytearray(1 << 30))\n", {"oom"}, None),
    "a numpy memory bomb ends as oom": ("import numpy as np\nx = np.ones((1 << 16, 1 << 16))\n", {"oom"}, None),
    "a segfault is a runtime error": ("import ctypes\nctypes.string_at(0)\n", {"runtime_error"}, None),
    "os._exit(0) without a submission is no_submission": ("import os\nos._exit(0)\n", {"no_submission"}, None),
    "sys.exit(3) is a runtime error": ("import sys\nsys.exit(3)\n", {"runtime_error"}, None),
    "a thread still running at the end does not hold the run": ("""
        import threading, time
        threading.Thread(target=time.sleep, args=(60,)).start()
        """ + textwrap.indent(WRITE_SUBMISSION, " " * 8), {"ok"}, None),
    "a daemon child that outlives its parent is killed": ("""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                time.sleep(30)
                open('/tmp/wmrl-escape-daemon', 'w').write('alive')
            os._exit(0)
        """ + textwrap.indent(WRITE_SUBMISSION, " " * 8), {"ok"}, None),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_program(sandbox, toy, name):
    code, expected, limit = HOSTILE[name]
    result = run(sandbox, toy, code)
    assert result.status in expected, result
    assert result.wall_s < sandbox.limits.wall_timeout_s + 3
    if result.status == "timeout":
        assert result.limit == limit and result.reason.startswith({"cpu": "CPU", "wall": "wall"}[limit]), result
        if limit == "cpu":  # stopped at the budget, give or take a poll and the grace period (docker: or by the
            # host's watchdog, WATCHDOG_SLACK_S past it, where the supervisor was starved)
            assert CPU_S < result.cpu_s < CPU_S + 1.5, result
        else:
            assert result.cpu_s < 0.5 * CPU_S and result.wall_s >= WALL_S, result


def test_cpu_s_is_the_whole_trees_cpu_time(sandbox, toy):
    result = run(sandbox, toy, forking_burner(2, 0.3, then=WRITE_SUBMISSION))
    assert result.status == "ok", result
    assert 0.6 <= result.cpu_s < CPU_S, result  # both children, which no per-process measure sees


def test_a_tree_over_the_budget_is_a_timeout_even_when_it_finishes_between_two_polls(sandbox, toy):
    result = run(sandbox, toy, forking_burner(2, 0.8, then=WRITE_SUBMISSION))  # 1.6 CPU s, ends on its own
    assert (result.status, result.limit) == ("timeout", "cpu"), result


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
    for folder in (toy.root.parent, "/wmrl", "/tmp", "/root"):
        code += f"found += [open(p).read() for p in glob.glob('{folder}/**/*answer*', recursive=True)]\n"
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


def test_a_network_connection_to_the_host_fails(sandbox, toy):
    if sandbox.backend == "local" and "netns" not in probe_namespaces()[1]:
        pytest.skip("this kernel allows no network namespace")
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


# ---------------------------------------------------------------- what a solution sees of the file system
LOOK_AROUND = """
import json, os, sys
targets, roots = {targets!r}, {roots!r}
data, work = os.environ["DATA_DIR"], os.getcwd()
mine = {{data, work, *(os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, os.path.dirname(sys.executable),
                                                    *sys.path) if p and os.path.isdir(p))}}

def inside(path, folder):
    return path == folder or path.startswith(folder.rstrip("/") + "/")

read = []  # every way to a host file that opened
for target in targets:
    rel = os.path.relpath(target, work)
    for attempt in (target, rel, os.path.join(data, os.path.relpath(target, data)), "/proc/self/root" + target,
                    "/proc/1/root" + target, "/proc/self/cwd/" + rel, "/proc/1/cwd/" + rel):
        try:
            with open(attempt, "rb") as fh:
                fh.read(1)
            read.append(attempt)
        except OSError:
            pass
above = [os.path.dirname(data)]  # every folder above DATA_DIR but /
while os.path.dirname(above[-1]) != above[-1]:
    above.append(os.path.dirname(above[-1]))
seen = set()  # every file or folder found that is neither its own nor on the way to its own
for top in [*above[:-1], *roots]:
    for here, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(here, name)
            if any(inside(m, path) for m in mine) and not any(inside(path, m) for m in mine):
                continue  # on the way to its own: searched
            if not any(inside(path, m) for m in mine):  # its own is not searched
                seen.add(path)
            if name in dirs:
                dirs.remove(name)
own = [os.path.join(h, f) for h, _, fs in os.walk(data) for f in fs]
for path in own:
    with open(path, "rb") as fh:
        fh.read(1)
print(json.dumps({{"read": read[:10], "n_read": len(read), "seen": sorted(seen)[:10], "n_seen": len(seen),
                   "own": len(own)}}))
"""
# The docker backend's own files beside the data: the run's meta folder (root's, 0700) and the supervisor.
DOCKER_OWN = {"/wmrl/meta", "/wmrl/run_solution.py"}


def look_around(sandbox, task, targets: list[Path], roots: list[Path]) -> dict:
    """Run LOOK_AROUND for ``task``: what it read of ``targets`` and found in ``roots`` and above its data."""
    code = LOOK_AROUND.format(targets=[str(t) for t in targets], roots=[str(r) for r in roots])
    result = run(sandbox, task, code)
    assert result.status == "no_submission", result
    found = json.loads(result.stdout_tail)
    if sandbox.backend == "docker":
        found["n_seen"] -= len(DOCKER_OWN & set(found["seen"]))
        found["seen"] = [p for p in found["seen"] if p not in DOCKER_OWN]
    return found


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in Path(folder).rglob("*") if p.is_file())


def a_few_per_folder(files: list[Path], n: int = 3) -> list[Path]:
    """The first ``n`` files of each folder: an image folder's thousand files say no more than three."""
    kept: dict[Path, list[Path]] = {}
    for path in files:
        kept.setdefault(path.parent, []).append(path)
    return [p for group in kept.values() for p in group[:n]]


def plant(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"id,label\n0,{SECRET}\n")


@pytest.fixture(scope="module")
def imported():
    """The three layouts' fixtures, with what real sources keep beside a task's public folder, each
    imported into a pool of its own: (folder, layout -> pool).

    The copy lies where users keep data, in a world-readable folder outside the scratch folders
    (under the repository's git-ignored build/): a copy in /tmp would prove little, since the
    sandbox empties /tmp anyway and pytest's temporary folders are closed to the solution's uid.
    """
    (REPO / "build").mkdir(exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="sandbox-view-", dir=REPO / "build"))
    try:
        base.chmod(0o755)
        fixtures = Path(shutil.copytree(FIXTURES, base / "fixtures"))
        for layout, (src, _, names) in LAYOUTS.items():
            for name in names:
                if layout == "dsbench":  # other models' predictions, next to data/answers/
                    plant(fixtures / src / "output_model" / "gpt-4o" / name / "submission.csv")
                else:  # the original labelled data: MLE-bench's <id>/raw/, what MLE-Dojo's prepare keeps
                    plant(fixtures / src / name / "raw" / "train.csv")
                if layout == "mledojo":  # kept beside public/ too, in the task's own root
                    plant(fixtures / src / name / "data" / "raw" / "train.csv")
        yield base, {layout: import_layout(fixtures, layout, base / f"pool-{layout}") for layout in LAYOUTS}
    finally:
        shutil.rmtree(base)


@pytest.mark.parametrize("layout, name", [("mledojo", "aerial-cactus-identification"),
                                          ("mlebench", "dog-breed-identification"),
                                          ("dsbench", "see-click-predict-fix")])
def test_an_imported_task_shows_its_public_files_and_nothing_else_of_its_source(sandbox, imported, layout, name):
    base, pools = imported
    task = pools[layout][name]
    public = files_under(task.public_dir)
    others = [p for p in files_under(base) if not p.is_relative_to(task.public_dir)]
    assert {"raw", "output_model", "answers", "private"} & {part for p in others for part in p.parts}
    assert all(p.stat().st_mode & 0o004 for p in others)  # readable by anyone: only the mounts hide them
    found = look_around(sandbox, task, others, [base])
    assert (found["n_read"], found["read"]) == (0, []), found
    assert (found["n_seen"], found["seen"]) == (0, []), found
    assert found["own"] == len(public) > 0, found


def test_a_pool_task_sees_no_other_task_nor_the_data_root_the_repository_or_home(sandbox, pool):
    task = pool.tasks[0]
    root = default_root()
    others = a_few_per_folder([p for p in files_under(root) if not p.is_relative_to(task.public_dir)])
    host = [REPO / "pyproject.toml", REPO / "wmrl" / "__init__.py", *sorted(Path.home().glob("*"))[:20]]
    found = look_around(sandbox, task, [*others, *(p for p in host if p.is_file())],
                        [root, root.parent, REPO, Path.home(), Path("/root"), Path("/home")])
    assert (found["n_read"], found["read"]) == (0, []), found
    assert (found["n_seen"], found["seen"]) == (0, []), found
    assert found["own"] == len(files_under(task.public_dir)), found
