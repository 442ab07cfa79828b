"""The execution record: what runs measured, recorded and served back so that a run replays to the bit."""

import gzip
import hashlib
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from _resume import run_killed_then_resumed
from wmrl import record, reproduce
from wmrl.campaigns import selection
from wmrl.config import RunConfig
from wmrl.experiments.run import run_arm, train_run
from wmrl.provenance import REPO
from wmrl.sandbox.runner import Sandbox


def _use(monkeypatch, spec: str) -> record.Record:
    monkeypatch.setenv(record.ENV, spec)
    return record.active()


def test_a_recorded_sequence_is_served_back_in_order_per_context_and_the_export_is_deterministic(
        tmp_path, monkeypatch):
    out = tmp_path / "x.jsonl.gz"
    rec = _use(monkeypatch, f"record:{out}")
    with record.context("run:a"):
        assert rec.observe("sandbox", "k", {"status": "timeout"}) == {"status": "timeout"}
        assert rec.observe("sandbox", "k", {"status": "ok"}) == {"status": "ok"}  # same script, another outcome
        assert rec.observe("memo", "m", None) is None
        t = record.wall()
    with record.context("run:b"):
        rec.observe("sandbox", "k", {"status": "ok"})
        c = record.cpu()
    first = record.export(out).read_bytes()
    assert record.export(out).read_bytes() == first  # byte-identical: no timestamp in the gzip header
    lines = [json.loads(x) for x in gzip.decompress(first).decode().splitlines()]
    assert sum("p" in x for x in lines) == 2  # {"status": "ok"} is stored once for both contexts

    rep = _use(monkeypatch, f"replay:{tmp_path}")
    with record.context("run:b"):  # contexts are independent: b can be read before a
        assert rep.observe("sandbox", "k", None) == {"status": "ok"}
        assert record.cpu() == c
    with record.context("run:a"):
        assert rep.observe("sandbox", "k", None) == {"status": "timeout"}
        assert rep.observe("sandbox", "k", None) == {"status": "ok"}
        assert rep.observe("memo", "m", None) is None
        assert record.wall() == t
        with pytest.raises(record.ReplayDiverged, match="run:a"):
            rep.observe("sandbox", "k", None)
        with pytest.raises(record.ReplayDiverged, match="clock"):
            record.wall()


def test_a_restarted_context_replaces_its_old_rows_and_a_resumed_one_drops_those_past_its_position(
        tmp_path, monkeypatch):
    out = tmp_path / "x.jsonl.gz"
    rec = _use(monkeypatch, f"record:{out}")
    with record.context("run:a"):
        rec.observe("s", "k", {"v": 1})
    with record.context("run:a"):  # trained again from scratch
        rec.observe("s", "k", {"v": 2})
        record.wall()
        at = record.position()
        rec.observe("s", "k", {"v": 3})  # lost in a crash: the checkpoint was at `at`
    with record.context("run:a", resume_at=at):
        assert record.position() == at
        rec.observe("s", "k", {"v": 4})
    record.export(out)
    rep = _use(monkeypatch, f"replay:{out}")
    with record.context("run:a"):
        assert [rep.observe("s", "k", None)["v"] for _ in range(2)] == [2, 4]


def test_a_working_copy_made_from_another_version_of_the_committed_record_is_refused(tmp_path, monkeypatch):
    """A campaign killed before its export resumes on its working copy; once the committed file changes under it
    (a pull, a checkout), the working copy is refused, naming itself, instead of exporting its old rows over the
    new file's. Deleted, it is made afresh from the committed file."""
    out = tmp_path / "x.jsonl.gz"
    rec = _use(monkeypatch, f"record:{out}")
    with record.context("run:a"):
        rec.observe("s", "k", {"v": 1})
    record.export(out)
    monkeypatch.setattr(record, "_ACTIVE", None)
    rec = _use(monkeypatch, f"record:{out}")  # the same version: recorded on, then killed before its export
    with record.context("run:b"):
        rec.observe("s", "k", {"v": 2})
    newer = tmp_path / "newer" / "x.jsonl.gz"  # the committed record as another machine made it
    newer.parent.mkdir()
    monkeypatch.setattr(record, "_ACTIVE", None)
    with record.context("run:a"):
        _use(monkeypatch, f"record:{newer}").observe("s", "k", {"v": 3})
    record.export(newer)
    out.write_bytes(newer.read_bytes())
    monkeypatch.setattr(record, "_ACTIVE", None)
    with pytest.raises(record.StaleWorkingCopy, match="x.sqlite"):
        record.Record("record", out)
    out.with_suffix("").with_suffix(".sqlite").unlink()
    record.Record("record", out)
    rep = _use(monkeypatch, f"replay:{record.export(out)}")
    with record.context("run:a"):
        assert rep.observe("s", "k", None) == {"v": 3}


def test_a_campaigns_export_drops_the_runs_whose_folders_are_gone_and_keeps_the_rest(tmp_path, monkeypatch, capsys):
    results = tmp_path / "results"
    out = results / "executions" / "primary.jsonl.gz"
    out.parent.mkdir(parents=True)
    (results / "train" / "small" / "wm" / "seed1").mkdir(parents=True)
    with reproduce.executions(f"record:{out}", "13_primary", out):
        rec = record.active()
        for run, value in (("wm/seed1", "kept"), ("wm/seed1#1", "kept"), ("wm/seed2", "gone")):
            with record.context(f"run:train/small/{run}"):
                rec.observe("sandbox", "k", {"v": value})
                record.wall()
        rec.observe("sandbox", "k", {"v": "notebook"})  # outside a run: the notebook's context
    assert _record_contexts(out) == {"run:train/small/wm/seed1", "run:train/small/wm/seed1#1", "notebook:13_primary"}
    assert "gone" not in gzip.decompress(out.read_bytes()).decode()  # its payload went with it
    assert "run:train/small/wm/seed2 dropped" in capsys.readouterr().out
    monkeypatch.setenv(record.ENV, f"replay:{out}")
    with record.context("run:train/small/wm/seed1"):
        assert record.active().observe("sandbox", "k", None) == {"v": "kept"}


def test_bad_specs_and_missing_records_are_refused_clearly(tmp_path, monkeypatch):
    with pytest.raises(ValueError, match="record:<file>"):
        _use(monkeypatch, "replay")
    with pytest.raises(ValueError, match="'record' or 'replay'"):
        _use(monkeypatch, f"play:{tmp_path}")
    with pytest.raises(FileNotFoundError, match="no execution record"):
        _use(monkeypatch, f"replay:{tmp_path / 'empty'}")
    monkeypatch.delenv(record.ENV)
    assert record.active() is None and record.position() is None


def _frames(folder):
    summary = json.loads((folder / "summary.json").read_text())
    summary.pop("provenance")
    return summary, {p.name: pd.read_parquet(p) for p in sorted(folder.glob("*.parquet"))}


@pytest.mark.slow
def test_a_recorded_run_killed_and_resumed_replays_to_the_bit_without_executing_anything(pool, tmp_path,
                                                                                          monkeypatch):
    kw = {"pool": pool, "memo_path": tmp_path / "memo.sqlite", "progress": False,
          "overrides": {"train.steps": 3, "train.checkpoint_every": 1, "sandbox.memo": "shared"}}
    out = tmp_path / "executions" / "smoke.jsonl.gz"
    out.parent.mkdir()
    _use(monkeypatch, f"record:{out}")
    run_killed_then_resumed(monkeypatch, "wmrl", "smoke", 4, tmp_path / "a" / "train" / "smoke" / "wmrl" / "seed4", **kw)
    record.export(out)

    def no_execution(self, task, code):
        raise AssertionError("a replay executed a script")

    monkeypatch.setattr(Sandbox, "_execute", no_execution)
    _use(monkeypatch, f"replay:{out.parent}")
    kw["memo_path"] = tmp_path / "other-memo.sqlite"  # a replay reads no memo file
    run_arm("wmrl", "smoke", seed=4, out=tmp_path / "b" / "train" / "smoke" / "wmrl" / "seed4", **kw)
    (sa, fa), (sb, fb) = (_frames(tmp_path / x / "train" / "smoke" / "wmrl" / "seed4") for x in "ab")
    assert sa == sb  # the memo's hit and miss counters too: the resumed run restored them from its checkpoint
    assert sa["memo"]["hits"] + sa["memo"]["misses"] > 0
    made = [json.loads((tmp_path / x / "train" / "smoke" / "wmrl" / "seed4" / "summary.json").read_text())
            ["provenance"]["executions"] for x in "ab"]
    assert made == [f"record:{out}", f"replay:{out.parent}"]  # each says how its executions were obtained
    assert fa.keys() == fb.keys() and "ledger.parquet" in fa
    for name in fa:
        pd.testing.assert_frame_equal(fa[name], fb[name], check_exact=True, obj=name)
    assert not (tmp_path / "other-memo.sqlite").exists()


@pytest.fixture
def folders(tmp_path, monkeypatch):
    """Variants of ``python -m wmrl.reproduce`` write under ``tmp_path``."""
    monkeypatch.setattr(reproduce, "variant_folders", lambda name: (tmp_path / name / "results",
                                                                    tmp_path / name / "figures"))
    return tmp_path


@pytest.mark.slow
def test_a_trained_notebook_leaves_its_execution_record_and_replaying_it_reproduces_every_file(folders):
    argv = ["--only", "03_anchor_only", "--preset", "smoke"]
    assert reproduce.main(argv) == 0
    recorded, replayed = folders / "smoke" / "results", folders / "replay-executions-smoke" / "results"
    assert (recorded / "executions" / "core.jsonl.gz").stat().st_size > 0
    assert reproduce.main([*argv, "--replay-executions"]) == 0
    found = reproduce.compare_outputs(recorded, replayed)
    assert not found["differ"] and not found["missing"] and not found["rounding"]  # one machine, one process kind
    assert any(p.endswith("summary.json") for p in found["same"]) and any(p.endswith(".parquet") for p in found["same"])
    assert reproduce.compare_outputs(folders / "smoke" / "figures", folders / "replay-executions-smoke" / "figures")[
        "same"]  # the figure's bytes too
    summary = next(replayed.rglob("summary.json"))  # a changed number is found: the comparison can fail
    summary.write_text(summary.read_text().replace('"avg": ', '"avg": 1', 1))
    assert str(summary.relative_to(replayed)) in reproduce.compare_outputs(recorded, replayed)["differ"]


@pytest.mark.slow
@pytest.mark.extended  # notebook 06's smoke run, twice; the VLA run's own replay is tests/test_vla.py's
def test_the_vla_notebook_leaves_its_execution_record_and_replays_from_it_to_every_file_and_figure(folders):
    argv = ["--only", "06_vla", "--preset", "smoke"]
    assert reproduce.main(argv) == 0
    recorded, replayed = folders / "smoke" / "results", folders / "replay-executions-smoke" / "results"
    assert reproduce.main([*argv, "--replay-executions"]) == 0
    found = reproduce.compare_outputs(recorded, replayed)
    assert not found["differ"] and not found["missing"]
    assert any(p.endswith("result.json") for p in found["same"])
    assert reproduce.compare_outputs(folders / "smoke" / "figures", folders / "replay-executions-smoke" / "figures")[
        "same"]


def test_replaying_executions_without_a_record_says_where_it_looked_and_trains_nothing(folders, monkeypatch,
                                                                                       capsys):
    monkeypatch.setattr(reproduce, "train_notebook", lambda *a, **k: pytest.fail("trained without a record"))
    assert reproduce.main(["--only", "03_anchor_only", "--preset", "smoke", "--replay-executions"]) == 2
    assert "no execution record in" in capsys.readouterr().err


def test_every_notebook_trains_under_its_campaigns_record(folders, monkeypatch):
    seen = {}
    monkeypatch.setattr(reproduce, "ensure_kernel", lambda kernel: None)
    monkeypatch.setattr(reproduce, "_sync", lambda name: None)
    monkeypatch.setattr(reproduce, "train_notebook", lambda name, *a, **k: seen.setdefault(
        name, (os.environ.get(record.ENV), os.environ.get(record.CONTEXT_ENV))))
    assert reproduce.main(["--only", "03_anchor_only", "06_vla", "07_llm_agent", "--preset", "smoke"]) == 0
    for name, campaign in (("03_anchor_only", "core"), ("06_vla", "core"), ("07_llm_agent", "llm")):
        spec, context = seen[name]
        assert spec == f"record:{folders / 'smoke' / 'results' / 'executions' / f'{campaign}.jsonl.gz'}"
        assert context == name and record.ENV not in os.environ  # set for the notebook only


def _record_file(path, outcomes: dict):
    rec = record.Record("record", path)
    with record.context("run:x"):
        for key, (status, percentile) in outcomes.items():
            rec.observe("sandbox", key, {"status": status, "percentile": percentile})
    return record.export(path).read_bytes()


def test_a_retrained_campaign_reports_its_runs_verdicts_and_outcomes_against_the_last_commit(tmp_path, monkeypatch):
    results = tmp_path / "results"
    committed = {}
    for seed, (old, new) in enumerate([(0.500, 0.504), (0.500, 0.530)]):
        path = results / "train" / "small" / "wmrl" / f"seed{seed}" / "summary.json"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps({"heldout": {"avg": new}}))
        committed[path.relative_to(results)] = json.dumps({"heldout": {"avg": old}}).encode()
    claims = results / "claims" / "small" / "13_primary.parquet"
    claims.parent.mkdir(parents=True)
    pd.DataFrame({"claim": ["P-C0", "P-C1"], "verdict_holm": ["reproduced", "inconclusive"]}).to_parquet(claims)
    old_claims = tmp_path / "old.parquet"
    pd.DataFrame({"claim": ["P-C0", "P-C1"], "verdict_holm": ["reproduced", "fails"]}).to_parquet(old_claims)
    committed[claims.relative_to(results)] = old_claims.read_bytes()
    new = results / "executions" / "primary.jsonl.gz"
    new.parent.mkdir()
    _record_file(new, {"a": ("ok", 0.5), "b": ("timeout", None), "c": ("ok", 0.1)})
    committed[new.relative_to(results)] = _record_file(tmp_path / "old.jsonl.gz", {"a": ("ok", 0.5), "b": ("ok", 0.7),
                                                                                   "d": ("ok", 0.2)})
    monkeypatch.setattr(reproduce, "_committed", lambda rels: {rel: committed.get(rel) for rel in rels})
    monkeypatch.setattr(reproduce, "selection", lambda campaign, root, preset: [root / "train" / "small" / "wmrl"])
    found = reproduce.agreement("primary", ["13_primary"], results)
    assert (found["runs"], found["within_1pt"]) == (2, 1)
    assert found["median_abs_delta"] == pytest.approx((0.4 + 3.0) / 2)
    assert found["verdicts"] == 2 and found["verdicts_changed"] == ["13_primary P-C1 after Holm: fails -> inconclusive"]
    assert (found["scripts"], found["outcomes_changed"]) == (2, 1)  # a and b in both records; b changed
    path = reproduce.save_agreement("primary", found, results)  # kept: once committed, it cannot be made again
    kept = json.loads(path.read_text())
    assert path == results / "executions" / "primary.agreement.json"
    assert {k: kept[k] for k in found} == found and kept["provenance"]["git_commit"].startswith(kept["compared_with"])
    assert kept["record_sha256"] == hashlib.sha256(new.read_bytes()).hexdigest()  # the record it describes


def _observe_many(spec: str, name: str, n: int) -> None:
    os.environ[record.ENV] = spec
    rec = record.active()
    with record.context(name):
        for i in range(n):
            rec.observe("sandbox", f"k{i % 7}", {"run": name, "i": i})
            record.wall()


def test_runs_recorded_by_parallel_processes_keep_their_own_sequences(tmp_path):
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    out = tmp_path / "x.jsonl.gz"
    with ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")) as pool:
        list(pool.map(_observe_many, [f"record:{out}"] * 4, [f"run:{j}" for j in range(4)], [200] * 4))
    record.export(out)
    rep = record.Record("replay", out)
    for j in range(4):
        with record.context(f"run:{j}"):
            got = [rep.observe("sandbox", f"k{i % 7}", None) for i in range(200)]
            assert got == [{"run": f"run:{j}", "i": i} for i in range(200)]
            assert len(rep._clock[f"run:{j}"]) == 200


def _open_record(spec: str) -> int:
    os.environ[record.ENV] = spec
    rec = record.active()
    return rec._db.execute("SELECT COUNT(*) FROM clock").fetchone()[0]


def test_processes_opening_a_record_whose_working_copy_is_gone_import_it_once(tmp_path):
    """A campaign resumed after its working copy (``.sqlite``) was lost: its parallel workers open the
    committed record at once, and one of them imports it while the others wait, none failing on rows
    another has imported."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    out = tmp_path / "x.jsonl.gz"
    rec = record.Record("record", out)
    with rec._db:
        for j in range(40):
            rec._db.executemany("INSERT INTO clock VALUES (?, ?, ?, NULL)",
                                [(f"run:{j}", i, float(i)) for i in range(5000)])
    record.export(out)
    rec._db.close()
    out.with_suffix("").with_suffix(".sqlite").unlink()
    with ProcessPoolExecutor(3, mp_context=multiprocessing.get_context("spawn")) as pool:
        counts = list(pool.map(_open_record, [f"record:{out}"] * 3))
    assert counts == [40 * 5000] * 3


# -- the committed records ---------------------------------------------------------------------------
COMMITTED = REPO / "results"
#: One run of each campaign whose execution record is committed (its folder under results/train/), replayed in
#: full by the test below: the record must give back that run's committed files on any machine, to the bit but
#: for the last bits of the policy's float32 training diagnostics (wmrl.runs.FLOAT32_DIAGNOSTICS), which depend
#: on the CPU.
REPLAYED = {"beyond": "small/wm~exploit/seed0", "dial": "small/wm~oracle-0/seed0", "core": "small/wmrl/seed0",
            "primary": "small/wmrl~tuning/seed6", "redeclared": "small/wmrl/seed18", "llm": "llm-small/wmrl/seed6"}
#: A replayed LLM run trains SmolLM2 for minutes: it is in ``make test-llm``.
HEAVY = {"llm"}


def _record_contexts(path) -> set[str]:
    return {row["c"] for row in map(json.loads, gzip.decompress(path.read_bytes()).splitlines()) if "c" in row}


@pytest.mark.parametrize("campaign", sorted(REPLAYED))
def test_a_committed_record_holds_every_committed_run_of_its_campaign_and_nothing_else(campaign):
    path = COMMITTED / "executions" / f"{campaign}.jsonl.gz"
    # a grammar run leaves summary.json, a VLA run result.json; each is one context of the record
    runs = {f"run:{p.parent.relative_to(COMMITTED).as_posix()}" for folder in selection(campaign, COMMITTED, "small")
            for name in ("summary.json", "result.json") for p in folder.rglob(name)
            if p.relative_to(COMMITTED).parts[0] != "runs"}  # results/runs/: variants and replays, never committed
    assert runs, f"the {campaign} campaign has no committed runs"
    contexts = _record_contexts(path)
    assert {c for c in contexts if c.startswith("run:")} == runs
    notebooks = {f"notebook:{n}" for n in reproduce.discover(None, campaign)[0]}
    assert {c for c in contexts if not c.startswith(("run:", "sft:"))} <= notebooks  # sft: a VLA seed's SFT stage


#: torch's float32 kernels (wmrl.provenance.float32_kernels) on the CPUs that recorded the committed grammar
#: campaigns: AVX-512 machines, whose runs replay to the bit on AVX-512 CPUs alone (the stamp is in the
#: provenance of runs trained since; docs/reproducibility.md).
RECORDED_KERNELS = "AVX512"


def _recorded_kernels(summary: dict) -> str:
    return summary["provenance"]["machine"].get("float32_kernels", RECORDED_KERNELS)


@pytest.mark.slow
@pytest.mark.parametrize("campaign", [pytest.param(c, marks=pytest.mark.llm_heavy) if c in HEAVY else c
                                      for c in sorted(REPLAYED)])
def test_a_committed_run_replays_from_the_committed_record_to_the_bit(campaign, pool, tmp_path, monkeypatch):
    """Retrain one committed run from its campaign's committed record: nothing executes, no clock is read, and
    every file the run writes equals the committed one (JSON without its provenance, parquet exactly). On a CPU
    whose float32 kernels are not the recording CPU's, the policy's last bits differ, and where that flips a
    sampled decision the replay must stop, naming the run, rather than report other numbers (an expected
    failure, with the reason); where it flips none, the files must still be the committed ones."""
    import torch

    committed = COMMITTED / "train" / REPLAYED[campaign]
    summary = json.loads((committed / "summary.json").read_text())
    config = RunConfig.from_dict(summary["provenance"]["config"])
    monkeypatch.setattr(Sandbox, "_execute", lambda self, task, code: pytest.fail("a replay executed a script"))
    _use(monkeypatch, f"replay:{COMMITTED / 'executions' / f'{campaign}.jsonl.gz'}")
    out = tmp_path.joinpath("train", *REPLAYED[campaign].split("/"))
    here, there = torch.backends.cpu.get_cpu_capability(), _recorded_kernels(summary)
    try:
        train_run(config, REPLAYED[campaign].split("/")[0], out, pool=pool, progress=False)
    except record.ReplayDiverged as diverged:
        assert f"run:train/{REPLAYED[campaign]}" in str(diverged)
        if here == there:
            raise
        pytest.xfail(f"this CPU's float32 kernels are {here}, the recording CPU's {there}: the replay left the "
                     f"recorded path and stopped, naming the run ({str(diverged)[:120]}...)")
    found = reproduce.compare_outputs(committed, out)
    assert not found["differ"] and not found["missing"], found
    assert {"summary.json", "eval.parquet", "ledger.parquet", "pairs.parquet"} <= set(found["same"])
    assert "steps.parquet" in found["same"] + found["rounding"]  # its float32 diagnostics: to rounding elsewhere


def test_the_comparison_allows_float32_rounding_in_the_training_diagnostics_only(tmp_path):
    """A replay on another CPU computes the policy's loss, KL and entropy with other last bits: such a frame is
    reported apart (``rounding``); a larger change there, or any change elsewhere, is a difference."""
    steps = pd.DataFrame({"step": [0, 1], "train_reward": [0.25, 0.5], "loss": [0.0, -1.2085183],
                          "kl": [0.0, 0.0123], "entropy": [10.9, 9.1]})
    (tmp_path / "a").mkdir()
    steps.to_parquet(tmp_path / "a" / "steps.parquet")

    def compared(**changes):
        (tmp_path / "b").mkdir(exist_ok=True)
        steps.assign(**{k: steps[k] + v for k, v in changes.items()}).to_parquet(tmp_path / "b" / "steps.parquet")
        found = reproduce.compare_outputs(tmp_path / "a", tmp_path / "b")
        return next(k for k, v in found.items() if v == ["steps.parquet"])

    assert compared() == "same"
    assert compared(loss=[1e-7, -1.2e-7], entropy=[0.0, 9.5e-7]) == "rounding"
    assert compared(kl=[0.0, 0.01]) == "differ"
    assert compared(train_reward=[0.0, 1e-12]) == "differ"  # a reward is float64 on recorded outcomes: exact


def test_a_campaigns_replay_starts_from_what_it_reads_but_does_not_own(tmp_path):
    recorded, replay = tmp_path / "results", tmp_path / "replay"
    for rel in ("train/small/wm~oracle-0/seed0/summary.json", "train/small/grpo/seed0/summary.json",
                "train/small/grpo/seed0/checkpoint.pt", "fidelity/small/scores.parquet", "executions/dial.jsonl.gz",
                "runs/smoke/results/x.json"):
        (recorded / rel).parent.mkdir(parents=True, exist_ok=True)
        (recorded / rel).write_text(rel)
    copied = reproduce._copy_others("dial", recorded, replay, "small", None)
    assert copied == {"train/small/grpo/seed0/summary.json", "fidelity/small/scores.parquet"}
    assert (replay / "fidelity/small/scores.parquet").read_text() == "fidelity/small/scores.parquet"
    assert not (replay / "train/small/wm~oracle-0").exists()  # its own runs are retrained from the record
    assert reproduce.compare_outputs(recorded, replay, copied) == {"same": [], "rounding": [], "differ": [],
                                                                   "missing": []}


@pytest.mark.slow
def test_the_dial_notebook_replays_from_the_committed_record_to_the_committed_results_and_figure(pool, folders):
    """Notebook 08 retrained through papermill from the committed record: every result and figure it writes equals
    the committed one (what ``python -m wmrl.reproduce --campaign dial --replay-executions`` checks). On CPUs
    whose float32 kernels are the recording CPU's only: elsewhere a replay may stop where a decision flips,
    which the committed-run test checks it does cleanly."""
    import torch

    if (here := torch.backends.cpu.get_cpu_capability()) != RECORDED_KERNELS:
        pytest.skip(f"this CPU's float32 kernels are {here}, the recording CPU's {RECORDED_KERNELS}")
    assert reproduce.main(["--campaign", "dial", "--replay-executions"]) == 0
    replayed = folders / "replay-executions"
    assert (replayed / "figures" / "08_fidelity_dial.png").read_bytes() == (REPO / "figures" / "08_fidelity_dial.png"
                                                                            ).read_bytes()
    found = reproduce.compare_outputs(COMMITTED, replayed / "results", reproduce._copy_others(
        "dial", COMMITTED, folders / "again", "small", None))
    assert not found["differ"] and not found["missing"] and len(found["same"]) >= 30 * 4
    assert {Path(p).name for p in found["rounding"]} <= {"steps.parquet"}


def test_provenance_says_how_a_results_executions_were_obtained_and_on_which_cpu(monkeypatch):
    from wmrl.provenance import provenance

    monkeypatch.setenv(record.ENV, f"replay:{COMMITTED / 'executions'}")
    made = provenance()
    assert made["executions"] == "replay:results/executions"  # relative to the repository: no machine's path
    assert isinstance(made["machine"]["cpu"], str) and made["machine"]["cpu"]
    import torch

    assert made["machine"]["float32_kernels"] == torch.backends.cpu.get_cpu_capability()
    monkeypatch.delenv(record.ENV)
    assert provenance()["executions"] is None
