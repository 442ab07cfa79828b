"""Record shards: runs recorded apart (a Ray task's own record) merged into their campaign's record."""

import gzip
import json

import pytest

from wmrl import record
from wmrl.record_shards import ShardError, merge


def _record(monkeypatch, path, observations: dict) -> bytes:
    """Record ``{context: [(stream, key, value), ...]}`` (a clock reading after each) into ``path``; its bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv(record.ENV, f"record:{path}")
    rec = record.active()
    for ctx, seen in observations.items():
        with record.context(ctx):
            for stream, key, value in seen:
                rec.observe(stream, key, value)
                record.wall()
    return record.export(path).read_bytes()


def _contexts(blob: bytes) -> dict:
    rows = [json.loads(x) for x in gzip.decompress(blob).decode().splitlines()]
    out = {}
    for row in rows:
        if "c" in row:
            out.setdefault(row["c"], []).append(row)
    return out


RUN_A, RUN_B = "run:train/smoke/grpo/seed0", "run:train/smoke/grpo/seed1"


def test_two_shards_merged_in_either_order_export_the_same_bytes(tmp_path, monkeypatch):
    shard_a = _record(monkeypatch, tmp_path / "a" / "shard.jsonl.gz",
                      {RUN_A: [("sandbox", "k1", {"status": "ok"}), ("sandbox", "k2", {"status": "timeout"})]})
    shard_b = _record(monkeypatch, tmp_path / "b" / "shard.jsonl.gz",
                      {RUN_B: [("sandbox", "k1", {"status": "ok"}), ("memo", "m", None)]})
    base = _record(monkeypatch, tmp_path / "base" / "core.jsonl.gz",
                   {"notebook:01_main_table": [("sandbox", "k0", {"status": "error"})]})
    monkeypatch.delenv(record.ENV)
    exported = []
    for name, order in (("ab", (shard_a, shard_b)), ("ba", (shard_b, shard_a))):
        campaign = tmp_path / name / "core.jsonl.gz"
        campaign.parent.mkdir()
        campaign.write_bytes(base)  # the committed record; its working copy is made from it by the first merge
        for shard in order:
            merge(campaign, shard)
        exported.append(record.export(campaign).read_bytes())
    assert exported[0] == exported[1]
    contexts = _contexts(exported[0])
    assert sorted(contexts) == sorted(["notebook:01_main_table", RUN_A, RUN_B])  # the campaign's own rows stay
    assert contexts[RUN_A] == _contexts(shard_a)[RUN_A] and contexts[RUN_B] == _contexts(shard_b)[RUN_B]


def test_a_retried_run_replaces_its_context_and_leaves_the_other_runs(tmp_path, monkeypatch):
    first = _record(monkeypatch, tmp_path / "1" / "shard.jsonl.gz",
                    {RUN_A: [("sandbox", "k", {"status": "ok"})] * 3, RUN_A + "#1": [("sandbox", "k", {"status": "ok"})]})
    retried = _record(monkeypatch, tmp_path / "2" / "shard.jsonl.gz", {RUN_A: [("sandbox", "k", {"status": "timeout"})]})
    other = _record(monkeypatch, tmp_path / "3" / "shard.jsonl.gz", {RUN_B: [("sandbox", "k", {"status": "ok"})]})
    monkeypatch.delenv(record.ENV)
    campaign, alone = tmp_path / "campaign.jsonl.gz", tmp_path / "alone" / "campaign.jsonl.gz"
    alone.parent.mkdir()
    campaign.parent.mkdir(exist_ok=True)
    assert merge(campaign, first) == ["train/smoke/grpo/seed0"]
    merge(campaign, other)
    merge(campaign, retried)
    for shard in (other, retried):  # what a campaign that only ever saw the retry would hold
        merge(alone, shard)
    assert record.export(campaign).read_bytes() == record.export(alone).read_bytes()
    contexts = _contexts(record.export(campaign).read_bytes())
    assert sorted(contexts) == [RUN_A, RUN_B]  # the first try's process context is gone with it
    assert len(contexts[RUN_A][0]["v"]) == 1


def test_a_shard_holding_anything_but_run_contexts_is_refused_and_writes_nothing(tmp_path, monkeypatch):
    campaign = tmp_path / "campaign.jsonl.gz"
    before = _record(monkeypatch, campaign, {RUN_B: [("sandbox", "k", {"status": "ok"})]})
    bad = _record(monkeypatch, tmp_path / "s" / "shard.jsonl.gz",
                  {RUN_A: [("sandbox", "k", {"status": "ok"})], "notebook:default": [("sandbox", "k", {"status": "ok"})]})
    monkeypatch.delenv(record.ENV)
    with pytest.raises(ShardError, match="notebook:default"):
        merge(campaign, bad)
    with pytest.raises(ShardError, match="not a record shard"):
        merge(campaign, b"not gzip")
    assert record.export(campaign).read_bytes() == before  # not even the shard's run went in


def test_a_merge_into_a_campaign_whose_working_copy_is_gone_starts_from_the_committed_file(tmp_path, monkeypatch):
    campaign = tmp_path / "campaign.jsonl.gz"
    _record(monkeypatch, campaign, {RUN_B: [("sandbox", "k", {"status": "ok"})]})
    shard = _record(monkeypatch, tmp_path / "s" / "shard.jsonl.gz", {RUN_A: [("sandbox", "k", {"status": "ok"})]})
    monkeypatch.delenv(record.ENV)
    for f in tmp_path.glob("campaign.sqlite*"):
        f.unlink()
    merge(campaign, shard)
    assert sorted(_contexts(record.export(campaign).read_bytes())) == [RUN_A, RUN_B]
