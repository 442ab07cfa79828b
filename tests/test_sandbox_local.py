"""What only the local backend has: namespaces and cgroups that may be missing, and their fallbacks.

The hostile-program suite, which every backend passes, is tests/test_sandbox_hostile.py. Each
test here runs once "cold" (a fresh interpreter per run) and once "warm" (a fork of a preloaded
server; see tests/test_sandbox_warm.py for what only it needs).
"""
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from wmrl.provenance import REPO
from wmrl.sandbox import ExecutionResult, Limits, Sandbox, SandboxError, library_versions, local
from wmrl.sandbox.runner import check_interpreter_seen
from wmrl.sandbox.toy import SECRET, cpu_burner, forking_burner, sandbox_processes, toy_grade, toy_solution
from wmrl.sandbox.view import OS_FOLDERS, interpreter_folders, solution_view

WRITE_SUBMISSION = toy_solution()


@pytest.fixture(scope="module", params=[False, True], ids=["cold", "warm"])
def warm(request):
    return request.param


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


@pytest.mark.parametrize("account", ["proc (namespaces, no CPU cgroup)", "proc (no namespaces, no CPU cgroup)"])
def test_without_a_cpu_cgroup_the_budget_still_counts_the_forked_tree(toy, runs_dir, warm, monkeypatch, account):
    monkeypatch.setattr(local, "cpu_cgroup_root", lambda: None)
    if "no namespaces" in account:
        monkeypatch.setattr(local, "probe_namespaces", lambda: ([], "no-namespaces"))
    sandbox = Sandbox("local", timeout_s=1.5, wall_timeout_s=6, grader=toy_grade, base_dir=runs_dir, warm=warm)
    assert "cpucg" not in sandbox.isolation
    finished = run(sandbox, toy, forking_burner(2, 0.3, then=WRITE_SUBMISSION))
    assert finished.status == "ok" and 0.55 <= finished.cpu_s < 1.5, finished
    burner = run(sandbox, toy, forking_burner(4, 0.6))
    assert (burner.status, burner.limit) == ("timeout", "cpu") and "proc account" in burner.reason, burner


def test_six_valid_scripts_at_once_on_a_busy_machine_all_run_ok(toy, runs_dir):
    """Six copies of a 0.8-CPU-second script at once on 2 cores with a 2 s budget: a wall-clock budget would
    time some of them out; CPU seconds do not grow with the queue."""
    sandbox = Sandbox("local", timeout_s=2.0, grader=toy_grade, base_dir=runs_dir, warm=False)
    results = sandbox.run_many([(toy, cpu_burner(0.8) + WRITE_SUBMISSION)] * 6, max_workers=6)
    assert [r.status for r in results] == ["ok"] * 6, [r.reason for r in results]
    assert all(0.75 < r.cpu_s < 2.0 for r in results), [r.cpu_s for r in results]


@pytest.mark.parametrize("kwargs, named", [
    ({"timeout_s": 0}, "timeout_s=0"), ({"timeout_s": float("nan")}, "timeout_s=nan"),
    ({"memory_mb": 8}, "memory_mb=8"), ({"cpus": 0}, "cpus=0"), ({"gpus": -1}, "gpus=-1"),
    ({"timeout_s": 10, "wall_timeout_s": 5}, "wall_timeout_s=5"),
], ids=["zero budget", "NaN budget", "tiny memory", "no cpus", "negative gpus", "backstop below the budget"])
def test_bad_limits_are_refused_with_the_value_and_what_was_expected(kwargs, named):
    with pytest.raises(ValueError, match="expected|backstop") as err:
        Limits(**kwargs)
    assert named in str(err.value)


def test_the_wall_backstop_defaults_to_five_times_the_budget_and_at_least_ten_seconds_more():
    assert Limits(timeout_s=2).wall_timeout_s == 12 and Limits(timeout_s=20).wall_timeout_s == 100
    assert Limits(timeout_s=2, wall_timeout_s=4).wall_timeout_s == 4


def test_a_run_with_gpus_has_no_address_space_limit_which_cuda_would_exceed():
    assert "RLIMIT_AS" in Limits().rlimits() and "RLIMIT_AS" not in Limits(gpus=1).rlimits()


def test_gpus_without_the_devices_set_apart_for_executions_are_refused_with_the_way_out():
    with pytest.raises(ValueError, match="gpus=1 needs gpu_devices"):
        Sandbox("local", gpus=1)


def test_the_facts_state_the_budget_the_backstop_and_how_scripts_start(runs_dir, warm):
    facts = Sandbox("local", timeout_s=2, memory_mb=1024, base_dir=runs_dir, warm=warm).facts
    assert (facts.cpu_budget_s, facts.wall_timeout_s, facts.memory_mb, facts.gpus) == (2, 12, 1024, 0)
    assert facts.warm_start == warm and ("pandas" in facts.preloaded) == warm


# ---------------------------------------------------------------- the solution's view (where it cannot be run)
def a_task(root: str, public: str = "public", private: str = "private") -> SimpleNamespace:
    return SimpleNamespace(name="t", root=Path(root), public_dir=Path(root) / public, private_dir=Path(root) / private)


@pytest.mark.parametrize("root, covered", [
    ("/opt/data/mle-bench/dog-breed/prepared", "/opt/data"),
    ("/var/lib/wmrl/pool/iris", "/var/lib/wmrl"),
    ("/usr/share/competitions/iris", "/usr/share/competitions"),
    ("/usr/local/data/iris", "/usr/local/data"),
])
def test_a_task_inside_an_os_folder_costs_the_folder_below_it_never_the_os_folder(root, covered):
    """Tasks are not made on this machine's OS folders: the view is computed, not run."""
    view = solution_view(a_task(root), ("/usr/lib/python3",), "/tmp/runs", tops=[])
    covers = {path for path, _ in view.covers}
    assert covered in covers and not covers & (OS_FOLDERS - {"/tmp", "/var/tmp", "/dev/shm", "/run"})
    assert view.data_dir == f"{root}/public" and view.hides == (f"{root}/private",)


def test_a_task_kept_inside_the_interpreters_folders_is_refused_before_anything_runs(toy, runs_dir):
    sandbox = Sandbox("local", timeout_s=5, grader=toy_grade, base_dir=runs_dir)
    inside = a_task(f"{sandbox.impl.expose[0]}/data/t")
    with pytest.raises(SandboxError, match="inside the interpreter's folder"):
        sandbox.run(inside, toy_solution())
    with pytest.raises(SandboxError, match="inside the interpreter's folder"):
        solution_view(inside, sandbox.impl.expose, runs_dir)


def test_a_task_whose_answers_lie_in_its_public_folder_is_refused_before_anything_runs(toy, runs_dir):
    sandbox = Sandbox("local", timeout_s=5, grader=toy_grade, base_dir=runs_dir)
    leaky = a_task(str(toy.root), public="public", private="public/answers")
    with pytest.raises(SandboxError, match="keep the answers outside the public folder"):
        sandbox.run(leaky, toy_solution())
    assert list(Path(runs_dir).iterdir()) == []


def test_the_interpreters_folders_take_in_what_pth_files_add_but_never_the_repository(tmp_path):
    """A venv whose .pth files add a library folder and the repository (a path-style editable install)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True)
    python = tmp_path / "venv" / "bin" / "python"
    (libs := tmp_path / "libs").mkdir()
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([python, "-c", purelib], capture_output=True, text=True, check=True).stdout.strip())
    (site / "libs.pth").write_text(f"{libs}\n")
    (site / "editable.pth").write_text(f"{REPO}\n")
    probe = "import json; from wmrl.sandbox.view import interpreter_paths; print(json.dumps(interpreter_paths()))"
    out = subprocess.run([python, "-c", probe], env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True,
                         text=True, check=True)
    exposed = json.loads(out.stdout)
    assert str(libs.resolve()) in exposed and str((tmp_path / "venv").resolve()) in exposed, exposed
    assert not [e for e in exposed if Path(e) == REPO or Path(e) in REPO.parents or REPO in Path(e).parents], exposed


def test_a_folder_reached_through_a_link_is_shown_at_the_link_and_at_its_target(tmp_path):
    (real := tmp_path / "envs" / "venv" / "lib").mkdir(parents=True)
    (tmp_path / "project").mkdir()
    (link := tmp_path / "project" / ".venv").symlink_to(tmp_path / "envs" / "venv")
    repo = tmp_path / "project" / "checkout"
    exposed = interpreter_folders([str(link)], [str(link / "lib"), str(repo)], str(repo))
    assert exposed == tuple(sorted({str(link), str(real.parent)}))  # the site folder lies inside both; no repo


@pytest.mark.slow
def test_a_script_run_by_an_interpreter_reached_through_a_link_imports_what_the_server_had_not(tmp_path):
    """A venv behind a link (``.venv -> elsewhere``, a worktree's) names its modules by the link's path: the
    sandbox must show that path too, or every module the warm server had not imported is missing."""
    (tmp_path / "linked").symlink_to(sys.prefix)
    python = tmp_path / "linked" / "bin" / "python"
    driver = textwrap.dedent(f"""
        from pathlib import Path
        from wmrl.sandbox import Sandbox
        from wmrl.sandbox.toy import make_toy_task, toy_grade
        task = make_toy_task(Path({str(tmp_path / "pool")!r}))
        code = "import narwhals._interchange, sklearn.cluster, statsmodels.api\\n"
        for warm in (True, False):
            r = Sandbox(timeout_s=30, grader=toy_grade, warm=warm, base_dir={str(tmp_path / "runs")!r}).run(task, code)
            print(warm, r.status, r.reason[:200])
        """)
    out = subprocess.run([str(python), "-c", driver], check=False, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["True no_submission the script wrote no file at $SUBMISSION_PATH",
                                         "False no_submission the script wrote no file at $SUBMISSION_PATH"], out.stdout


def _failed_import(module: str) -> ExecutionResult:
    return ExecutionResult("runtime_error", "ModuleNotFoundError", 1,
                           reason=f"ModuleNotFoundError: No module named '{module}'")


def test_a_batch_whose_every_solution_misses_a_module_the_host_has_is_the_sandboxs_fault():
    with pytest.raises(SandboxError, match=r"all 3 solutions.*narwhals\._interchange at /.*interpreter_folders"):
        check_interpreter_seen([_failed_import("narwhals._interchange")] * 2 + [_failed_import("sklearn.cluster")])


@pytest.mark.parametrize("results", [
    [_failed_import("narwhals._interchange")],  # one solution may hide a module from itself
    [_failed_import("narwhals._interchange"), ExecutionResult("ok")],  # not every solution
    [_failed_import("narwhals._interchange"), _failed_import("no_such_module_wmrl")],  # the host lacks one too
    [ExecutionResult("runtime_error", "ImportError", 1, reason="ImportError: cannot import name 'x' from 'sklearn'")],
], ids=["one", "not-all", "host-lacks-it", "another-import-error"])
def test_what_the_agents_own_imports_explain_is_left_to_the_reward(results):
    check_interpreter_seen(results)


def test_run_many_stops_a_batch_that_cannot_see_the_interpreters_modules_and_names_them(toy, runs_dir, warm):
    sandbox = Sandbox(timeout_s=10, grader=toy_grade, warm=warm, base_dir=runs_dir)
    hides = "import sys\nsys.path.clear()\nimport statsmodels.api\n"  # what a broken view does to every script
    with pytest.raises(SandboxError, match="statsmodels at "):
        sandbox.run_many([(toy, hides)] * 2, max_workers=2)
    lacks = sandbox.run_many([(toy, "import no_such_module_wmrl\n")] * 2, max_workers=2)
    assert [r.status for r in lacks] == ["runtime_error"] * 2  # the agents' own imports: a reward, not an error
