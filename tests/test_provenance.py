"""Reading files as a commit holds them: what every redraw of an earlier design and every replay comparison uses."""

import subprocess

import pytest

from wmrl import provenance


@pytest.fixture
def repo(tmp_path, monkeypatch):
    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, capture_output=True, check=True, text=True).stdout.strip()

    git("init", "-q")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a.json").write_bytes(b'{"avg": 0.5}\n')
    (tmp_path / "results" / "b.bin").write_bytes(bytes(range(256)) * 3)  # newlines and every byte inside
    (tmp_path / "empty").write_bytes(b"")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    first = git("rev-parse", "HEAD")
    (tmp_path / "results" / "a.json").write_bytes(b'{"avg": 0.7}\n')
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "second")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    return first


def test_each_file_comes_back_as_the_commit_holds_it_and_a_path_it_lacks_as_none(repo):
    paths = ["results/a.json", "results/nope.json", "results", "results/b.bin", "empty", "results/a.json"]
    found = provenance.committed_files(repo, paths)
    assert found == {"results/a.json": b'{"avg": 0.5}\n', "results/nope.json": None, "results": None,
                     "results/b.bin": bytes(range(256)) * 3, "empty": b""}
    assert provenance.committed_bytes("HEAD", "results/a.json") == b'{"avg": 0.7}\n'


def test_a_commit_not_in_the_history_or_no_clone_at_all_reads_as_none(repo, tmp_path, monkeypatch):
    assert provenance.committed_files("0" * 40, ["results/a.json"]) == {"results/a.json": None}
    assert provenance.committed_bytes("not-a-rev", "results/a.json") is None
    monkeypatch.setattr(provenance, "REPO", tmp_path / "nowhere")
    assert provenance.committed_bytes("HEAD", "results/a.json") is None
    assert provenance.committed_files("HEAD", []) == {}


def test_the_code_digest_stays_across_a_results_commit_and_changes_with_the_code(tmp_path, monkeypatch):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    (tmp_path / "wmrl").mkdir()
    (tmp_path / "wmrl" / "step.py").write_text("x = 1\n")
    (tmp_path / "results.json").write_text("{}\n")
    git("add", ".")
    git("commit", "-qm", "code")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    first = provenance.code_digest()
    (tmp_path / "results.json").write_text('{"avg": 1}\n')
    git("commit", "-qam", "results")
    assert provenance.code_digest() == first  # another commit, the same code
    (tmp_path / "wmrl" / "step.py").write_text("x = 2\n")
    uncommitted = provenance.code_digest()
    assert uncommitted != first
    git("commit", "-qam", "code changed")
    assert provenance.code_digest() not in (first, uncommitted)
