"""In-sandbox supervisor: runs one solution script and writes a small status record.

It is the same file for every backend (local namespaces, Docker), so a solution sees the same
world everywhere. Trusted and stdlib-only; it starts as root (or root of a user namespace) and
    1. hides what the solution must not see (empty tmpfs over every folder that may hold data and
       over the shared scratch folders; the public data and the interpreter bound back read-only)
       and makes a fresh tmpfs work folder,
    2. forks the solution: resource limits, an unprivileged uid, no new privileges, a fresh
       session, stdout/stderr into pipes it reads with a cap (head and tail kept),
    3. enforces the budget: the CPU seconds of the solution's whole process tree (every child
       and thread) against ``cpu_limit_s``, and a wall-clock backstop ``wall_limit_s`` against
       programs that sleep or block (TERM, then KILL, to the whole tree); when the solution
       ends it kills every process it left behind (as PID 1 of its own namespace, ``kill(-1)``
       is safe),
    4. copies the submission out (no links) and writes ``{exit_code, signal, timed_out, cpu_s,
       error_type, error_line, stdout, stderr, submission, ...}`` to its meta folder.
The host only ever trusts this status and the copied submission, and grades on its own side.

Why CPU seconds: wall-clock time depends on what else the machine runs (six copies of a
0.8-CPU-second script on 2 cores under a 2 s wall budget: 2 of 6 timed out), CPU time much less
so. The tree's CPU time comes from the run's own cgroup where the host made one (``cpu_account``:
``cpuacct.usage`` or cgroup v2 ``cpu.stat``; inside a Docker container the container's group,
less the supervisor's own time), else from ``/proc``: every live or zombie process of the run
plus what the supervisor reaped (``RUSAGE_CHILDREN``). A run is a timeout by CPU when that total
exceeds the budget, also when the last poll missed it and the solution finished first: the
verdict depends on the CPU time used, never on when the supervisor happened to look.

Spec and status are ``marshal``-ed dicts (plain values only). Usage:
``python -I run_solution.py SPEC`` (see ``wmrl.sandbox.local.RunDir.spec`` for the fields).
The warm server (``warm_server.py``) loads this module and calls ``supervise`` in a fresh fork
per run, so both launch modes share every step above.
"""
import _signal as signal  # not `signal`: it imports enum, and start-up time is per run
import builtins
import ctypes
import marshal  # not json: built in, so the supervisor starts tens of milliseconds sooner
import os
import resource
import select
import stat
import sys
import time

__all__ = ["MS_NODEV", "MS_NOSUID", "MS_REC", "CpuMeter", "apply_mounts", "collect_submission", "libc", "mount",
           "prepare_workdir", "supervise"]

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC = 1, 2, 4, 32, 4096, 16384
PR_SET_NO_NEW_PRIVS = 38
libc = ctypes.CDLL(None, use_errno=True)


def mount(source, target, fstype, flags, data=None):
    enc = [None if s is None else s.encode() for s in (source, target, fstype, data)]
    if libc.mount(enc[0], enc[1], enc[2], ctypes.c_ulong(flags), enc[3]) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} -> {target}: {os.strerror(err)}")


def apply_mounts(spec):
    """Show the solution its public data and the interpreter, and nothing else that may hold data.

    ``cover``: a fresh tmpfs over the scratch folders (mode 1777) and an empty one (0755) over every
    folder that may hold data (see ``wmrl.sandbox.view``); then the public data and the interpreter's
    folders are bound back read-only at their own paths (opened before anything is covered), inside
    folders that are otherwise empty; ``hide``: the answers' folder, covered again should a folder
    bound back hold it (the host refuses such a task: the last wall). Ends in ``/``, so that no
    directory of the host stays this process's working folder.
    """
    os.umask(0o022)  # the folders recreated on the way to what is bound back: enterable by the solution's uid
    keep = [(p, os.open(p, os.O_PATH | os.O_DIRECTORY)) for p in (spec["public_dir"], *spec["expose"])]
    for path, mode in spec["cover"]:
        if os.path.isdir(path):  # one inside an earlier cover is gone already
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmpfs_mb']}m,mode={mode}")
    for path, fd in keep:
        os.makedirs(path, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    for path in spec["hide"]:  # empty, read-only, unreadable: the answers are simply not there
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=000")
    os.chdir("/")


def prepare_workdir(spec, code):
    """A fresh work folder owned by the solution's uid, holding only ``solution.py``.

    Under namespaces it is a size-capped tmpfs, so the solution cannot fill the host's disk and
    nothing it writes outlives the run; Docker gives the same as a tmpfs mount.
    """
    work, uid = spec["workdir"], spec.get("uid")
    if spec.get("work_tmpfs"):
        os.makedirs(work, exist_ok=True)
        mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['tmpfs_mb']}m,mode=0700")
    os.chmod(work, 0o700)
    fd = os.open(os.path.join(work, "solution.py"), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    os.write(fd, code)
    if uid is not None:
        os.fchown(fd, uid, uid)
        os.chown(work, uid, uid)
    os.close(fd)


def collect_submission(spec, meta_fd):
    """Copy the submission to the host's side, refusing links and special files.

    Done by this trusted process after every solution process is dead: the host then reads a
    root-owned copy, never a path the solution controlled (a symlink to the answer file would
    otherwise be graded as a perfect submission).
    """
    try:
        src = os.open(os.path.join(spec["workdir"], "submission.csv"), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return "absent"
    except OSError as exc:
        return f"refused: submission is not a regular file ({exc.strerror})"
    try:
        st = os.fstat(src)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
            return "refused: submission is not a plain regular file (links are refused)"
        if st.st_size > spec["max_submission_mb"] << 20:
            return f"refused: submission larger than {spec['max_submission_mb']} MB"
        dst = os.open("submission.csv", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=meta_fd)
        while data := os.read(src, 1 << 20):
            os.write(dst, data)
        os.close(dst)
        return "copied"
    finally:
        os.close(src)


def _child(spec, out_w, err_w, report_w):
    """Become the solution: limits, identity, stdio, then run the script as ``__main__``."""
    try:
        os.setsid()
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0), os.dup2(out_w, 1), os.dup2(err_w, 2)
        os.closerange(3, report_w)
        os.closerange(report_w + 1, 1 << 16)
        for group in spec.get("cgroups") or ():  # joined before the uid drop: the groups' files belong to root
            with open(os.path.join(group, "cgroup.procs"), "w") as fh:
                fh.write(str(os.getpid()))
        for name, value in spec["limits"].items():
            resource.setrlimit(getattr(resource, name), (value, value))
        if spec.get("nice"):  # below its supervisor where both share one CPU quota (a container)
            os.nice(spec["nice"])
        if spec.get("uid") is not None:
            os.setgroups([])
            os.setgid(spec["uid"])
            os.setuid(spec["uid"])
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        os.umask(0o077)
        os.chdir(spec["workdir"])
    except BaseException:  # noqa: BLE001 - the sandbox could not be set up: say why, never run unconfined
        import traceback

        traceback.print_exc()
        os._exit(125)
    path = spec["solution"]
    sys.argv, sys.path[0:0] = [path], [spec["workdir"]]
    # What runpy.run_path does, without its imports: a fresh __main__ module (so pickling of
    # functions defined in the solution works) and code compiled under the solution's file name
    # (so tracebacks and error lines point into solution.py).
    main = type(sys)("__main__")
    main.__file__, main.__builtins__ = path, builtins  # the module, as in a script's __main__
    sys.modules["__main__"] = main
    report, search_path = {}, list(sys.path)
    try:
        with open(path, "rb") as fh:
            source = fh.read()
        exec(compile(source, path, "exec", dont_inherit=True), main.__dict__)  # noqa: S102 - the sandboxed solution
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if code:
            report = {"error_type": "SystemExit", "message": str(exc.code)}
    except BaseException as exc:  # noqa: BLE001 - the solution's own failure: report it, trimmed to its frames
        tb, line = exc.__traceback__, None
        while tb is not None and tb.tb_frame.f_code.co_filename != path:
            tb = tb.tb_next
        frame = tb
        while frame is not None:
            if frame.tb_frame.f_code.co_filename == path:
                line = frame.tb_lineno
            frame = frame.tb_next
        if isinstance(exc, SyntaxError) and exc.filename == path:
            line = exc.lineno
        report = {"error_type": type(exc).__name__, "error_line": line, "message": str(exc)[:500],
                  "oom": isinstance(exc, MemoryError)}
        code = 1
        try:  # the report above stands even if the solution broke what printing the traceback needs
            sys.path = search_path  # it may have emptied sys.path, and traceback is imported only now
            import traceback  # only on failure: its imports cost start-up time

            traceback.print_exception(type(exc), exc, tb)
        except BaseException:  # noqa: BLE001, S110
            pass
    try:
        sys.stdout.flush(), sys.stderr.flush()
    except BaseException:  # noqa: BLE001, S110 - the solution may have broken its own streams
        pass
    os.write(report_w, marshal.dumps(report)[:8192])
    os._exit(code)


class _Capture:
    """Keeps the first and last ``cap`` bytes of a stream and counts the rest."""

    def __init__(self, cap):
        self.cap, self.head, self.tail, self.total = cap, b"", b"", 0

    def feed(self, data):
        self.total += len(data)
        if len(self.head) < self.cap:
            room = self.cap - len(self.head)
            self.head, data = self.head + data[:room], data[room:]
        if data:
            self.tail = (self.tail + data)[-self.cap:]

    def text(self):
        skipped = self.total - len(self.head) - len(self.tail)
        middle = f"\n... [{skipped} bytes omitted] ...\n".encode() if skipped > 0 else b""
        return (self.head + middle + self.tail).decode("utf-8", "replace")


def _kill_leftovers(spec, pid):
    """Kill every process the solution left behind (daemons, fork-bomb children)."""
    if os.getpid() == 1:  # PID 1 of our own namespace: -1 means exactly the sandbox's processes
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        return
    if spec.get("cgroups"):  # every process of the run is in each, whatever uid or session it took
        for _ in range(200):  # a fork bomb may still be forking: repeat until the group is empty
            with open(os.path.join(spec["cgroups"][0], "cgroup.procs")) as fh:
                pids = [int(p) for p in fh.read().split()]
            if not pids:
                return
            for leftover in pids:
                try:
                    os.kill(leftover, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.005)
    uid = spec.get("uid")
    if uid is None:
        try:
            os.killpg(pid, signal.SIGKILL)  # last resort: the solution's own session
        except ProcessLookupError:
            pass
        return
    for entry in os.listdir("/proc"):  # the run's uid is unique to this run
        try:
            with open(f"/proc/{entry}/status") as fh:
                if any(ln.split()[1] == str(uid) for ln in fh if ln.startswith("Uid:")):
                    os.kill(int(entry), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


class CpuMeter:
    """CPU seconds used so far by the solution's whole process tree (children and threads included).

    ``spec["cpu_account"]`` names the cgroup files to read, first existing one wins, as
    ``[path, "cpuacct" | "cpu.stat"]`` pairs, and ``minus_self`` when the group also holds this
    supervisor (a container's group). Without one the tree is read from ``/proc``: as PID 1 of
    the run's own namespace every other process is the run's; else the processes of the run's
    uid; else (no namespaces, no uid: a degraded run, see ``isolation``) those of the solution's
    session, which a daemon that calls ``setsid`` leaves unaccounted.
    """

    def __init__(self, spec, pid):
        self.pid, self.uid, self.peak = pid, spec.get("uid"), 0.0
        account = spec.get("cpu_account") or {}
        found = [(path, kind) for path, kind in account.get("files", ()) if os.path.exists(path)]
        self.file, self.kind = found[0] if found else (None, None)
        self.minus_self = bool(account.get("minus_self"))
        self.source = "cgroup" if self.file else "proc"
        self.interval = 0.05 if self.file else 0.1
        self.tick = os.sysconf("SC_CLK_TCK")

    def read(self):
        """Seconds so far (never decreasing: a /proc scan can miss a process being reaped)."""
        try:
            value = self._cgroup() if self.file else self._proc()
        except (OSError, ValueError):
            value = self._proc()
        self.peak = max(self.peak, value)
        return self.peak

    def _cgroup(self):
        with open(self.file) as fh:
            text = fh.read()
        if self.kind == "cpuacct":
            value = int(text) / 1e9
        else:
            value = next(int(ln.split()[1]) for ln in text.splitlines() if ln.startswith("usage_usec ")) / 1e6
        if self.minus_self:
            own = resource.getrusage(resource.RUSAGE_SELF)
            value -= own.ru_utime + own.ru_stime
        return value

    def _proc(self):
        me, ticks = os.getpid(), 0
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == me:
                continue
            try:
                if me != 1 and self.uid is not None and os.stat(f"/proc/{entry}").st_uid != self.uid:
                    continue
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()  # fields[0] is field 3 of proc(5)
            except OSError:
                continue
            if me != 1 and self.uid is None and int(fields[3]) != self.pid:  # session id
                continue
            ticks += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ticks / self.tick + reaped.ru_utime + reaped.ru_stime


def _watch(spec, pid, start, caps, poller, meter):
    """Poll the solution until it exits: capture its output, end its tree past the CPU budget or the
    wall deadline (TERM, then KILL after the grace period). Returns the timeout kind (or None) and
    ``(raw_status, usage, wall_s)``."""
    cpu_limit, wall_deadline = spec["cpu_limit_s"], start + spec["wall_limit_s"]
    kill_at, timed_out, waited = None, None, None
    while waited is None:
        now = time.monotonic()
        if timed_out is None:
            if meter.read() > cpu_limit:
                timed_out = "cpu"
            elif now >= wall_deadline:
                timed_out = "wall"
            if timed_out:
                kill_at = now + spec["kill_grace_s"]
                try:
                    os.killpg(pid, signal.SIGTERM)
                except ProcessLookupError:  # the group has just ended by itself
                    pass
        if kill_at is not None and now >= kill_at:
            _kill_leftovers(spec, pid)  # the whole tree, not only the solution's process group
            kill_at = None
        if timed_out:
            wake_at = kill_at if kill_at is not None else now + 0.05
        else:
            wake_at = min(wall_deadline, now + meter.interval)
        for fd, _ in poller.poll(max(wake_at - now, 0.0) * 1000):  # SIGCHLD wakes it via wake_r
            data = os.read(fd, 65536)
            if fd in caps:
                if data:
                    caps[fd].feed(data)
                else:
                    poller.unregister(fd)
        got, raw_status, usage = os.wait4(pid, os.WNOHANG)
        if got == pid:
            waited = (raw_status, usage, time.monotonic() - start)
    return timed_out, waited


def _drain(caps, rep_r):
    """Read what the ended tree left in the output pipes, and the child's report ({} if none)."""
    for fd, cap in caps.items():  # writers are gone now
        os.set_blocking(fd, False)
        try:
            while data := os.read(fd, 65536):
                cap.feed(data)
        except BlockingIOError:
            pass
    os.set_blocking(rep_r, False)
    try:
        return marshal.loads(os.read(rep_r, 8192))
    except (BlockingIOError, EOFError, ValueError, TypeError):  # nothing (or garbage) reported
        return {}


def supervise(spec):
    meta_fd = os.open(spec["meta_dir"], os.O_RDONLY | os.O_DIRECTORY)  # before mounts may cover it
    with open(os.path.join(spec["meta_dir"], "solution.py"), "rb") as fh:
        code = fh.read()
    if spec.get("mounts"):
        apply_mounts(spec)
    prepare_workdir(spec, code)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: None)  # the host's TERM reaches the solution's group
    (out_r, out_w), (err_r, err_w), (rep_r, rep_w) = os.pipe(), os.pipe(), os.pipe()
    start = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(spec, out_w, err_w, rep_w)
    for fd in (out_w, err_w, rep_w):
        os.close(fd)
    caps = {out_r: _Capture(spec["tail_bytes"]), err_r: _Capture(spec["tail_bytes"])}
    poller = select.poll()
    for fd in (*caps, wake_r):
        poller.register(fd, select.POLLIN)
    meter = CpuMeter(spec, pid)
    timed_out, (raw_status, usage, wall) = _watch(spec, pid, start, caps, poller, meter)
    _kill_leftovers(spec, pid)
    report = _drain(caps, rep_r)
    cpu = max(meter.read(), usage.ru_utime + usage.ru_stime)  # the whole tree, everything now ended
    if timed_out is None and cpu > spec["cpu_limit_s"]:  # over budget between two polls: the same verdict
        timed_out = "cpu"
    status = {
        "exit_code": os.WEXITSTATUS(raw_status) if os.WIFEXITED(raw_status) else None,
        "signal": os.WTERMSIG(raw_status) if os.WIFSIGNALED(raw_status) else None,
        "timed_out": timed_out, "wall_s": wall, "cpu_s": cpu, "cpu_source": meter.source,
        "max_rss_mb": usage.ru_maxrss / 1024, "stdout": caps[out_r].text(), "stderr": caps[err_r].text(),
        **{k: report.get(k) for k in ("error_type", "error_line", "message", "oom")},
        "submission": collect_submission(spec, meta_fd),
    }
    status_fd = os.open("status", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=meta_fd)
    os.write(status_fd, marshal.dumps(status))
    os.close(status_fd)

if __name__ == "__main__":
    with open(sys.argv[1], "rb") as fh:
        spec = marshal.load(fh)
    supervise(spec)
    os._exit(0)  # skip interpreter teardown: it is per run too
