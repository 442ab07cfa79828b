"""A campaign's missing runs as Ray tasks: the ``ray`` executor of :mod:`wmrl.experiments.executor`.

Ray schedules, places and retries; this module only says what one run is. Each missing (arm,
seed) is one Ray core task (:func:`_train_one`) asking for the CPUs of its sandbox workers, run in
a fresh worker process (``max_calls=1``: no torch or sandbox state carried from another run) and
retried elsewhere when its node is lost (``max_retries``; an error of the run itself is not
retried). A task refuses to run code of another version than the driver's
(:func:`~wmrl.provenance.code_version`). It trains into scratch on its node's own disk and returns
the run folder's files (without the checkpoint and memo files, which exist to resume, not to
report) and its execution record's shard (:mod:`wmrl.record_shards`).

The driver merges the shard into the campaign's record (one transaction), then writes the run
folder: every file into a staging folder beside it, the folder renamed into place, ``summary.json``
last. :func:`~wmrl.experiments.collect.ensure_runs` counts a run as finished by its summary, so
nothing half-written is ever read as a finished run, and a driver lost at any point leaves a
campaign that the same command completes by training only what is missing (a run merged but not
written is trained again and its context replaced; an export drops the context of a run whose
folder never appeared, :func:`wmrl.record.forget_gone_runs`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from pathlib import Path

from wmrl import record
from wmrl.experiments.run import run_arm
from wmrl.progress import tqdm
from wmrl.provenance import code_version, executions, write_json_atomic
from wmrl.record_shards import merge

__all__ = ["MAX_RETRIES", "CodeVersionMismatch", "train_on_ray"]

MAX_RETRIES = 3  # a run's task is retried this often when its node is lost
_NOT_RETURNED = ("checkpoint.pt", "memo.sqlite", "memo.sqlite-wal", "memo.sqlite-shm")


class CodeVersionMismatch(RuntimeError):
    """A Ray worker's checkout runs other code than the driver's."""


def _train_one(arm: str, preset: str, seed: int, rel: str, overrides: dict, version: str, spec: str,
               replay: dict | None, tracker) -> dict:
    """One run, in a fresh worker: train into node-local scratch; return its files and its record shard."""
    if tracker is not None:
        tracker.started.remote(rel)
    here = code_version()
    if here != version:
        raise CodeVersionMismatch(f"this node's checkout runs {here}, the driver's {version}: check out the driver's "
                                  "commit on every node (docs/cluster.md) and restart its Ray (ray stop; ray start ...)")
    scratch = Path(tempfile.mkdtemp(prefix="wmrl-run-"))
    try:
        out, env = scratch / rel, {}
        if spec.startswith("record:"):
            (scratch / "executions").mkdir()
            env[record.ENV] = f"record:{scratch / 'executions' / 'shard.jsonl.gz'}"
        elif replay is not None:
            (scratch / "replay").mkdir()
            for name, blob in replay.items():
                (scratch / "replay" / name).write_bytes(blob)
            env[record.ENV] = f"replay:{scratch / 'replay'}"
        os.environ.pop(record.ENV, None)
        os.environ.update(env)
        run_arm(arm, preset, seed, out, overrides=overrides, progress=False)
        shard = record.export(scratch / "executions" / "shard.jsonl.gz").read_bytes() if spec.startswith(
            "record:") else None
        files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
                 if p.is_file() and p.name not in _NOT_RETURNED and "trl" not in p.relative_to(out).parts[:-1]}
        return {"rel": rel, "files": files, "shard": shard}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def write_run_folder(out: Path, files: dict, executions_spec: str | None) -> None:
    """Write a run's ``files`` (relative path -> bytes) as the folder ``out``, ``summary.json`` last, so that
    the folder is a finished run only once whole. The summary's ``provenance.executions`` names the
    campaign's record, as a run trained here would, instead of the shard the task recorded into."""
    for stale in out.parent.glob(f".{out.name}.incoming-*"):  # left by a driver lost mid-write
        shutil.rmtree(stale, ignore_errors=True)
    staging = out.parent / f".{out.name}.incoming-{uuid.uuid4().hex[:8]}"
    for rel, blob in files.items():
        if rel != "summary.json":
            (staging / rel).parent.mkdir(parents=True, exist_ok=True)
            (staging / rel).write_bytes(blob)
    staging.mkdir(parents=True, exist_ok=True)
    if out.exists():
        shutil.rmtree(out)  # a run trained with another config, or one lost before its summary
    os.replace(staging, out)
    summary = json.loads(files["summary.json"])
    summary["provenance"]["executions"] = executions_spec
    write_json_atomic(out / "summary.json", summary)


def _tracker(ray):
    """An actor on the driver's node counting each run's starts (a start beyond the first is a retry)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    class Starts:
        def __init__(self):
            self.counts: dict[str, int] = {}

        def started(self, rel: str) -> None:
            self.counts[rel] = self.counts.get(rel, 0) + 1

        def snapshot(self) -> dict:
            return dict(self.counts)

    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return Starts.options(scheduling_strategy=here).remote()


def _replay_files() -> dict | None:
    """The files of the record being replayed (a task replays from its own copy), or None."""
    mode, _, where = os.environ.get(record.ENV, "").partition(":")
    if mode != "replay":
        return None
    path = Path(where)
    return {f.name: f.read_bytes() for f in (sorted(path.glob("*.jsonl.gz")) if path.is_dir() else [path])}


def train_on_ray(todo, preset: str, overrides: dict, cpus: int = 1, progress: bool = True) -> None:
    """Train ``todo``'s (arm, seed, run folder) as Ray tasks of ``cpus`` CPUs each and write every run here.

    The cluster is the one :func:`ray.init` finds (``RAY_ADDRESS``, else the one ``ray start --head``
    started on this machine, else a Ray of this process's own). Under an execution record each run's
    shard is merged into it before its folder is written. A run's error (not a lost node: Ray retries
    that) cancels the runs still pending and is raised; the runs written before it stay. A Ray this call
    joined or started is left again at the end (a notebook's kernel then exits without Ray's workers)."""
    import ray

    joined = not ray.is_initialized()
    if joined:
        ray.init(include_dashboard=False, log_to_driver=False)
    spec = os.environ.get(record.ENV, "")
    mode, _, where = spec.partition(":")
    task = ray.remote(num_cpus=cpus, max_retries=MAX_RETRIES, max_calls=1)(_train_one)
    tracker, replay = _tracker(ray), _replay_files()
    replay_ref = None if replay is None else ray.put(replay)
    version, shown = code_version(), executions()
    pending = {task.remote(arm, preset, seed, "/".join(Path(out).parts[-4:]), overrides, version, spec, replay_ref,
                           tracker): Path(out) for arm, seed, out in todo}
    bar = tqdm(total=len(pending), desc=f"training {preset} runs on Ray", disable=not progress)
    try:
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1, timeout=2.0)
            for ref in done:
                out = pending.pop(ref)
                result = ray.get(ref)
                if mode == "record":
                    merge(where, result["shard"])
                write_run_folder(out, result["files"], shown)
                bar.update(1)
            starts = ray.get(tracker.snapshot.remote())
            waiting = {"/".join(out.parts[-4:]) for out in pending.values()}
            bar.set_postfix(running=sum(1 for rel in starts if rel in waiting),
                            retried=sum(n - 1 for n in starts.values()), refresh=True)
    except BaseException:
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    finally:
        bar.close()
        ray.kill(tracker)
        if joined:
            ray.shutdown()
