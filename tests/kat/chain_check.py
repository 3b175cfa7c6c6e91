#!/usr/bin/env python3
"""Independent checker of a benchdesk history chain (DESIGN.md section 5).

It shares no code with benchdesk: BLAKE3 comes from the `b3sum` command, SHA-256 from
Python's hashlib, JSON from Python's json module. For every record file
<dir>/<seq, 10 digits>.json, in order from 1:

    record_hash = SHA-256(b"benchdesk-chain-v1\\0" + unhex(prev_hash) + BLAKE3(file bytes))

and it checks: contiguous seq file names, the seq field equal to the file name, each
prev_hash equal to the previous record's hash (64 zeros for the first), and the bytes
being canonical JSON (sorted keys, no whitespace) as Python writes it.

Usage: chain_check.py HISTORY_DIR [--json]
Output: one line per record, "<seq> <record_hash>", then "ok <count> <head>" (exit 0),
or "bad <seq> <what>" (exit 1). With --json, one JSON object instead.
"""
import hashlib
import json
import os
import re
import subprocess
import sys

TAG = b"benchdesk-chain-v1\0"
NAME = re.compile(r"^[0-9]{10}\.json$")
ZERO = "0" * 64
# Score records: version 1 (rubric_digest) stays valid in a chain; version 2 is written now
# (task_class_digest, run_scope, run_cases; `origin` on records imported from a shard).
SCORE_KEYS_V1 = sorted([
    "schema_version", "seq", "run_id", "task_class", "case_id", "case_digest",
    "rubric_digest", "cassette_digest", "harness_version", "isolation_class",
    "provenance_verified", "operator_fingerprint", "started_at", "finished_at", "score",
    "prev_hash"])
SCORE_KEYS_V2 = sorted([
    "schema_version", "seq", "run_id", "run_scope", "run_cases", "task_class", "case_id",
    "case_digest", "task_class_digest", "cassette_digest", "harness_version",
    "isolation_class", "provenance_verified", "operator_fingerprint", "started_at",
    "finished_at", "score", "prev_hash"])


def keys_ok(obj):
    keys = sorted(obj.keys())
    if obj.get("kind") == "audit":
        return keys == AUDIT_KEYS
    if obj.get("schema_version") == 1:
        return keys == SCORE_KEYS_V1
    if obj.get("schema_version") == 2:
        return keys in (SCORE_KEYS_V2, sorted(SCORE_KEYS_V2 + ["origin"]))
    return False
AUDIT_KEYS = sorted([
    "schema_version", "seq", "kind", "event", "task_class", "detail",
    "operator_fingerprint", "harness_version", "at", "prev_hash"])


def b3sum(paths):
    """BLAKE3 of each file, by the b3sum command, in batches."""
    out = []
    for i in range(0, len(paths), 500):
        batch = paths[i:i + 500]
        res = subprocess.run(["b3sum", "--no-names", "--"] + batch, check=True,
                             capture_output=True, text=True)
        lines = res.stdout.split()
        if len(lines) != len(batch):
            raise SystemExit("b3sum printed %d hashes for %d files" % (len(lines), len(batch)))
        out.extend(lines)
    return out


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def check(directory):
    seqs = sorted(int(n[:10]) for n in os.listdir(directory) if NAME.match(n))
    records = []
    for expect, seq in enumerate(seqs, start=1):
        if seq != expect:
            return records, ("bad", expect, "missing")
    paths = [os.path.join(directory, "%010d.json" % s) for s in seqs]
    blakes = b3sum(paths)
    prev = ZERO
    for seq, path, b3 in zip(seqs, paths, blakes):
        with open(path, "rb") as f:
            data = f.read()
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return records, ("bad", seq, "unparseable")
        if not isinstance(obj, dict):
            return records, ("bad", seq, "unparseable")
        if not keys_ok(obj):
            return records, ("bad", seq, "schema_invalid")
        if canonical(obj) != data:
            return records, ("bad", seq, "not canonical")
        if obj["seq"] != seq:
            return records, ("bad", seq, "seq field %r" % obj["seq"])
        if obj["prev_hash"] != prev:
            return records, ("bad", seq, "prev_hash does not link")
        h = hashlib.sha256(TAG + bytes.fromhex(obj["prev_hash"]) + bytes.fromhex(b3))
        prev = h.hexdigest()
        records.append((seq, prev))
    return records, ("ok", len(records), prev)


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    records, verdict = check(argv[1])
    if "--json" in argv[2:]:
        out = {"records": [{"seq": s, "record_hash": h} for s, h in records]}
        if verdict[0] == "ok":
            out.update({"ok": True, "count": verdict[1], "head": verdict[2]})
        else:
            out.update({"ok": False, "seq": verdict[1], "reason": verdict[2]})
        print(json.dumps(out))
    else:
        for s, h in records:
            print(s, h)
        print(*verdict)
    return 0 if verdict[0] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
