"""A campaign on a Ray cluster (``ray.cluster_utils.Cluster``: a head with no CPUs, two 1-CPU worker nodes, one
cluster for the module): runs fan out, survive a lost node and a lost driver, and come back as one record."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from wmrl import record, reproduce
from wmrl.experiments import cluster as ray_runs
from wmrl.experiments import collect

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def nodes(pool):  # `pool` first: the worker nodes' processes inherit the data root that holds it
    from ray.cluster_utils import Cluster

    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    ray.init(address=c.address, include_dashboard=False, log_to_driver=False)
    yield c, workers
    ray.shutdown()
    c.shutdown()


def _contexts(path) -> list[str]:
    rows = [json.loads(x) for x in gzip.decompress(path.read_bytes()).decode().splitlines()]
    return sorted({r["c"] for r in rows if "c" in r})


def _runs(results) -> list[str]:
    return sorted(str(p.parent.relative_to(results)) for p in results.glob("train/*/*/seed*/summary.json"))


@pytest.mark.extended
def test_a_driver_killed_between_merge_and_write_leaves_only_that_run_to_train(nodes, tmp_path, monkeypatch):
    c, _ = nodes
    results = tmp_path / "results"
    rec = results / "executions" / "c.jsonl.gz"
    rec.parent.mkdir(parents=True)
    driver = f"""
import os, ray
from wmrl.experiments import cluster, collect
written, real = [], cluster.write_run_folder
def write_or_die(out, files, spec):  # the second run: merged into the record, then the driver dies
    written.append(out)
    if len(written) == 2:
        os._exit(3)
    real(out, files, spec)
cluster.write_run_folder = write_or_die
ray.init(address={c.address!r}, include_dashboard=False, log_to_driver=False)
collect.ensure_runs(["untrained"], [0, 1], "smoke", {str(results)!r}, progress=False, executor="ray")
"""
    killed = subprocess.run([sys.executable, "-c", driver], env={**os.environ, record.ENV: f"record:{rec}"},
                            capture_output=True, text=True, timeout=600, check=False)
    assert killed.returncode == 3, killed.stderr[-3000:]
    (kept,) = _runs(results)
    lost = ({"train/smoke/untrained/seed0", "train/smoke/untrained/seed1"} - {kept}).pop()
    assert not list(results.glob(f"{lost}/summary.json"))  # nothing half-written reads as finished

    trained, real = [], ray_runs.train_on_ray
    monkeypatch.setattr(ray_runs, "train_on_ray", lambda todo, *a, **kw: (trained.extend(todo), real(todo, *a, **kw)))
    monkeypatch.setenv(record.ENV, f"record:{rec}")
    collect.ensure_runs(["untrained"], [0, 1], "smoke", results, progress=False, executor="ray")
    assert ["/".join(out.parts[-4:]) for _, _, out in trained] == [lost]
    assert _runs(results) == sorted([kept, lost])
    assert _contexts(record.export(rec)) == [f"run:{kept}", f"run:{lost}"]


@pytest.mark.extended
def test_a_campaign_replayed_on_the_cluster_from_a_serial_record_equals_it(nodes, tmp_path, monkeypatch):
    serial, fanned = tmp_path / "serial", tmp_path / "ray"
    rec = serial / "executions" / "c.jsonl.gz"
    rec.parent.mkdir(parents=True)
    monkeypatch.setenv(record.ENV, f"record:{rec}")
    collect.ensure_runs(["untrained"], [0, 1], "smoke", serial, progress=False, executor="local")
    record.export(rec)
    monkeypatch.setenv(record.ENV, f"replay:{rec.parent}")  # each task replays from its own copy of the record
    collect.ensure_runs(["untrained"], [0, 1], "smoke", fanned, progress=False, executor="ray")
    found = reproduce.compare_outputs(serial, fanned)
    assert found["differ"] == [] and found["missing"] == [] and len(found["same"]) >= 8, found
    assert all(json.loads(p.read_text())["provenance"]["executions"].startswith("replay:")
               for p in fanned.glob("train/*/*/seed*/summary.json"))


@pytest.mark.extended
def test_a_campaign_fans_out_survives_a_lost_node_and_equals_its_serial_replay(nodes, tmp_path, monkeypatch):
    c, workers = nodes
    results, serial = tmp_path / "ray", tmp_path / "serial"
    rec = results / "executions" / "c.jsonl.gz"
    rec.parent.mkdir(parents=True)
    monkeypatch.setenv(record.ENV, f"record:{rec}")
    shown, real_tqdm = [], ray_runs.tqdm

    def watched(*a, **kw):  # the campaign's bar: each postfix it shows; a node is lost once both nodes run a run
        bar = real_tqdm(*a, **kw)
        postfix = bar.set_postfix

        def show_and_lose_a_busy_node(**fields):
            shown.append(fields)
            if fields["running"] == 2 and len(c.worker_nodes) == 2:
                c.remove_node(workers[0])
            postfix(**fields)
        bar.set_postfix = show_and_lose_a_busy_node
        return bar

    monkeypatch.setattr(ray_runs, "tqdm", watched)
    arms, seeds = ["grpo", "wmrl"], [0, 1]
    collect.ensure_runs(arms, seeds, "smoke", results, progress=True, executor="ray")  # a bar that counts
    expected = sorted(f"train/smoke/{a}/seed{s}" for a in arms for s in seeds)
    assert _runs(results) == expected  # each run exactly once, no staging folder, checkpoint or memo returned
    assert sorted(str(p.relative_to(results)) for p in results.glob("train/*/*/*")) == expected
    assert not list(results.glob("train/**/checkpoint.pt")) and not list(results.glob("train/**/memo.sqlite*"))
    assert max(f["retried"] for f in shown) >= 1  # the lost node's run was retried elsewhere, and the bar says so
    assert _contexts(record.export(rec)) == [f"run:{r}" for r in expected]

    monkeypatch.setenv(record.ENV, f"replay:{rec.parent}")  # the same runs trained here, one at a time, from it
    collect.ensure_runs(arms, seeds, "smoke", serial, progress=False, executor="local")
    found = reproduce.compare_outputs(results, serial)
    assert found["differ"] == [] and found["missing"] == [] and len(found["same"]) >= 4 * len(expected), found
