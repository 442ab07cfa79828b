"""Warm launcher: one trusted process that has already imported the libraries solutions use.

Why: a cold run pays seconds of CPU for interpreter start-up and ``import pandas, sklearn``
before the solution's first own line (``bench.sandbox`` times both launches); the trainer runs thousands. This server imports them once
(the modules the host names on its command line), then for every run forks a pristine copy of itself, which does what the cold
launch ``unshare --mount --net --pid --fork --kill-child --mount-proc python -I
run_solution.py SPEC`` does and then calls the very same ``run_solution.supervise``:

    server --fork--> job (enters the namespaces) --fork--> supervisor, PID 1 (mounts /proc)
                                                                --fork--> the solution

Two differences a solution can measure, both by design: ``cpu_s`` leaves out the
preloaded imports, and RLIMIT_AS (set after the fork, like every limit) counts the preloaded
libraries' ~0.5 GB of mappings from the start, as a cold run does once it imports them; a
script importing none of them has that much less address space than it would cold.

A new PID namespace holds the *children* of the process that unshares it, hence the job in
between, which only waits. Each run is a fresh fork, so nothing a solution changes (module
state, monkeypatches) can reach the next one; the server itself never runs solution code.

It stays single-threaded (checked before every fork): a forked copy of a threaded process may
inherit locks held by threads that do not exist in it. The host therefore starts it with every
thread pool sized to one and pyarrow's jemalloc without its background thread
(``wmrl.sandbox.warm``), and uses this mode only when a run's ``cpus`` is 1.

Protocol: ``python -I warm_server.py FD MODULES``, MODULES comma-separated, FD one end of a socket pair, framed by
``multiprocessing.connection`` (on both sides), each message a ``marshal``-ed dict:
    server -> host, once: {"error": None, or why it cannot serve}
    host -> server, per run: {"spec": path, "backstop_s": s};  server -> host: {"exit", "killed"}
A job's own stderr goes to ``supervisor.err`` in the run's meta folder. End of file on the
socket (the host exited or let the server go) ends the server; PR_SET_PDEATHSIG is not used for
it because it fires when the host *thread* that started it exits, and servers are started
lazily from run_many's short-lived pool threads. Jobs do use it (their parents are
single-threaded), so a dying server takes its running jobs and their namespaces with it.
"""
import _signal as signal
import gc
import importlib
import importlib.util
import marshal
import os
import select
import sys
import traceback
from multiprocessing.connection import Connection

__all__ = ["serve"]


def _load_supervisor():
    """``run_solution.py`` beside this file, loaded without touching ``sys.path`` or ``sys.modules``:
    ``-I`` leaves the script's folder off the path, and a solution must see the cold path's."""
    spec = importlib.util.spec_from_file_location("run_solution", os.path.join(os.path.dirname(__file__),
                                                                               "run_solution.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


run_solution = _load_supervisor()

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWNET = 0x00020000, 0x20000000, 0x40000000
MS_PRIVATE, MS_NOEXEC = 1 << 18, 8
PR_SET_PDEATHSIG = 1


def _threads():
    return len(os.listdir("/proc/self/task"))


def _thread_names():
    names = []
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/comm") as fh:
            names.append(fh.read().strip())
    return sorted(names)


def _die_with_parent(parent):
    """SIGKILL when ``parent`` exits; also when it already has (the race before prctl)."""
    run_solution.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _fresh_process_state(spec):
    """What a new interpreter would have and a fork does not: its environment, and a fresh seed for numpy's
    global RandomState (``random`` reseeds itself after a fork; numpy's would repeat its numbers every job)."""
    os.environ.clear()
    os.environ.update(spec["env"])
    if "numpy.random" in sys.modules:
        sys.modules["numpy.random"].seed()


def _enter_namespaces():
    """What ``unshare --mount --net --pid --fork --kill-child --mount-proc`` does; returns in PID 1."""
    if run_solution.libc.unshare(CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWPID) != 0:
        raise OSError(run_solution.ctypes.get_errno(), "unshare(mount, net, pid)")
    run_solution.mount("none", "/", None, MS_PRIVATE | run_solution.MS_REC)  # nothing propagates out
    alive_r, alive_w = os.pipe()  # getppid() is 0 across the namespace border: the pipe tells instead
    pid = os.fork()
    if pid:
        os.close(alive_r)
        _, status = os.waitpid(pid, 0)
        os._exit(1 if status else 0)
    os.close(alive_w)
    run_solution.libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # PID 1 gone: the namespace goes
    if select.select([alive_r], [], [], 0)[0]:  # end of file: the job died before prctl took effect
        os._exit(1)
    os.close(alive_r)
    run_solution.mount("proc", "/proc", "proc", run_solution.MS_NOSUID | MS_NOEXEC | run_solution.MS_NODEV)


def _job(server, spec_path):
    """The forked copy of the server: becomes a run's supervisor; never returns."""
    try:
        _die_with_parent(server)
        with open(spec_path, "rb") as fh:
            spec = marshal.load(fh)
        log = os.open(os.path.join(spec["meta_dir"], "supervisor.err"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 2)
        os.close(log)
        _fresh_process_state(spec)
        if spec["namespaces"]:
            _enter_namespaces()
        run_solution.supervise(spec)
        code = 0
    except BaseException:  # noqa: BLE001 - the host sees no status and reports this text
        traceback.print_exc()
        code = 1
    os._exit(code)


def _run(conn, request):
    """Fork one job, wait for it (killing it at the backstop), and say how it ended."""
    if _threads() != 1:
        raise RuntimeError(f"warm server has {_threads()} threads; forking it is unsafe")
    server = os.getpid()
    pid = os.fork()
    if pid == 0:
        conn.close()
        _job(server, request["spec"])
    pidfd = os.pidfd_open(pid)
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        poller.register(conn.fileno(), select.POLLIN)  # only end of file is expected while a job runs
        ready = {fd for fd, _ in poller.poll(request["backstop_s"] * 1000)}
    finally:
        os.close(pidfd)
    killed = pidfd not in ready
    if killed:
        os.kill(pid, signal.SIGKILL)  # unreaped, so the pid cannot have been reused
    _, status = os.waitpid(pid, 0)
    if conn.fileno() in ready and pidfd not in ready:
        return None  # the host went away mid-run
    return {"exit": os.waitstatus_to_exitcode(status), "killed": killed}


def serve(conn, preload):
    """Preload, say hello, then run one job per request until the host goes away."""
    error = None
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:
            continue
    if _threads() != 1:  # e.g. a library that starts a helper thread at import time
        error = f"the preloaded libraries started threads {_thread_names()}; a threaded process cannot be forked safely"
    gc.freeze()  # the jobs' collections then leave the inherited objects' pages shared
    conn.send_bytes(marshal.dumps({"error": error}))
    while not error:
        try:
            request = marshal.loads(conn.recv_bytes())
        except EOFError:  # the host exited or let this server go
            return
        reply = _run(conn, request)
        if reply is None:
            return
        conn.send_bytes(marshal.dumps(reply))


if __name__ == "__main__":
    os.chdir("/")
    serve(Connection(int(sys.argv[1])), [m for m in sys.argv[2].split(",") if m] if len(sys.argv) > 2 else [])
    os._exit(0)
