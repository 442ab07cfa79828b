"""``python -m bench.first_look``: how long the README's first command takes a newcomer, measured.

A fresh clone of this repository's ``HEAD`` (committed files only, as a researcher's ``git clone`` gets
them) in a scratch folder, then the README's two steps there, each timed on its own: ``make venv``
(the virtual environment, from pip's cache where it has one) and ``make reproduce-quick`` (the pool
prepared from nothing, the first look's runs trained at seed 0, its notebooks executed). The notebooks'
outcomes are read from the command's own report (and its run counter's lines kept), the runs' recorded
wall times from their ``summary.json``, and ``git status`` in the clone says whether anything committed
changed. All of it, with the machine's load and the provenance, goes to ``results/bench/first_look.json``,
the file the README's first-look heading and example output quote (``tests/test_front_door.py`` holds
them equal).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wmrl.provenance import REPO, provenance, write_json_atomic
from wmrl.reproduce import REPORT_HEADER

__all__ = ["main", "minutes", "parse_report"]

OUT = REPO / "results" / "bench" / "first_look.json"
#: The notebooks' report ``wmrl.reproduce`` prints last: name, status, train and redraw seconds ("-": none).
_ROW = re.compile(r"^(\d\d_\w+)\s+(ok|failed|skipped)\s+(\S+)\s+(\S+)")


def parse_report(stdout: str) -> list[dict]:
    """The notebooks' rows of ``wmrl.reproduce``'s closing report, in its order; seconds are None for '-'."""
    head = stdout.rfind(REPORT_HEADER)
    if head < 0:
        raise ValueError("no notebook report in the command's output (did it stop before its end?)")
    rows = []
    for line in stdout[head:].splitlines()[1:]:
        m = _ROW.match(line)
        if m:
            name, status, train, redraw = m.groups()
            rows.append({"notebook": name, "status": status, "train_s": None if train == "-" else float(train),
                         "redraw_s": None if redraw == "-" else float(redraw)})
    return rows


def minutes(seconds: float) -> int:
    """A duration as the README says it: whole minutes, to the nearest 5."""
    return 5 * max(1, round(seconds / 300))


def _timed(cmd: list[str], cwd: Path, log: Path) -> tuple[float, str]:
    """Run ``cmd`` in ``cwd``, its output shown as it comes and appended to ``log``; its wall seconds and output."""
    lines = []
    t0 = time.perf_counter()
    with subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc, \
            log.open("a") as keep:
        for line in proc.stdout:
            lines.append(line)
            keep.write(line)
            sys.stdout.write(line)
    took = time.perf_counter() - t0
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}) in {cwd}; its output is in {log}")
    return took, "".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args(argv)
    start = provenance()
    if start["git_dirty"]:
        parser.error("the working tree's code differs from HEAD: commit it first (the clone gets HEAD only)")
    scratch = Path(tempfile.mkdtemp(prefix="wmrl-first-look-"))
    clone, log = scratch / "wmrl", scratch / "log.txt"
    keep = args.keep
    try:
        subprocess.run(["git", "clone", "--quiet", "--no-local", str(REPO), str(clone)], check=True)
        print(f"clone of {start['git_commit'][:7]} in {clone}; make venv ...", flush=True)
        venv_s, _ = _timed(["make", "venv"], clone, log)
        print(f"make venv: {venv_s:.0f} s; make reproduce-quick ...", flush=True)
        quick_s, out = _timed(["make", "reproduce-quick"], clone, log)
        notebooks = parse_report(out)
        runs = sorted((clone / "results" / "runs" / "small-seeds0").glob("results/train/*/*/seed0/summary.json"))
        changed = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True,
                                 check=True).stdout.splitlines()
        result = {
            "command": "make reproduce-quick", "venv_s": round(venv_s, 1), "quick_s": round(quick_s, 1),
            "minutes": minutes(quick_s), "notebooks": notebooks,
            "run_counter": [line for line in out.splitlines() if line.startswith("[runs] ")],
            "runs": {p.parent.parent.name: round(json.loads(p.read_text())["wall_s"], 1) for p in runs},
            "committed_files_changed": changed,
            "provenance": {**provenance(), "command": "python -m bench.first_look"}}
        write_json_atomic(args.out, result)
        print(f"make reproduce-quick: {quick_s / 60:.1f} min (README: about {minutes(quick_s)} minutes), "
              f"{len(result['runs'])} runs, committed files changed: {len(changed)} ({args.out})")
        return 0 if not changed and all(n["status"] == "ok" for n in notebooks) else 1
    except RuntimeError as e:
        keep = True
        print(e, file=sys.stderr)
        return 1
    finally:
        if keep:
            print(f"kept: {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
