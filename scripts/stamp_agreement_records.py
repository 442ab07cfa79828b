"""Stamp each kept agreement (``results/executions/<campaign>.agreement.json``) that lacks ``record_sha256`` with
the digest of the record committed beside it: the record at the commit that last wrote the agreement, which is the
record its retrained runs made. ``wmrl.reproduce.save_agreement`` stamps new agreements itself; this reads git
history, so it needs a full clone. Idempotent: a stamped agreement is left as it is.

    python scripts/stamp_agreement_records.py
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from wmrl.provenance import REPO, write_json_atomic


def _git(*args: str) -> bytes:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, check=True).stdout


def main() -> int:
    if _git("rev-parse", "--is-shallow-repository").strip() == b"true":
        print("a shallow clone lacks the history the stamps are read from", file=sys.stderr)
        return 1
    for path in sorted((REPO / "results" / "executions").glob("*.agreement.json")):
        kept = json.loads(path.read_text())
        if "record_sha256" in kept:
            continue
        rel = path.relative_to(REPO).as_posix()
        commit = _git("log", "-1", "--format=%H", "--", rel).decode().strip()
        blob = _git("show", f"{commit}:{rel.removesuffix('.agreement.json')}.jsonl.gz")
        provenance = kept.pop("provenance", None)
        kept["record_sha256"] = hashlib.sha256(blob).hexdigest()
        write_json_atomic(path, {**kept, "provenance": provenance} if provenance is not None else kept)
        print(f"{rel}: the record of {commit[:7]}, {kept['record_sha256'][:12]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
