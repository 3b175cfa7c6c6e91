#!/usr/bin/env python3
"""Independent checker of a benchdesk history chain (docs/history.md).

It shares no code with benchdesk: BLAKE3 comes from the `b3sum` command, SHA-256 from
Python's hashlib, JSON from Python's json module. The records are the lines of
<dir>/segments/<seq of the first record, 10 digits>.jsonl (65,536 a segment; a final
line without its newline is a torn tail, not a record), or, in a version-1 history, the
files <dir>/<seq, 10 digits>.json. For every record, in order from 1:

    record_hash = SHA-256(b"benchdesk-chain-v1\\0" + unhex(prev_hash) + BLAKE3(record bytes))

and it checks: contiguous seqs, the seq field equal to the record's position, each
prev_hash equal to the previous record's hash (64 zeros for the first), the members of
a version-1 or version-2 record, and the bytes being canonical JSON (sorted keys, no
whitespace) as Python writes it.

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
import tempfile

TAG = b"benchdesk-chain-v1\0"
NAME = re.compile(r"^[0-9]{10}\.json$")
SEGMENT = re.compile(r"^[0-9]{10}\.jsonl$")
SEGMENT_RECORDS = 65536
ZERO = "0" * 64
SCORE_COMMON = [
    "schema_version", "seq", "run_id", "task_class", "case_id", "case_digest",
    "cassette_digest", "harness_version", "isolation_class", "provenance_verified",
    "operator_fingerprint", "started_at", "finished_at", "score", "prev_hash"]
SCORE_KEYS = {
    1: sorted(SCORE_COMMON + ["rubric_digest"]),
    2: sorted(SCORE_COMMON + ["task_class_digest", "run_scope", "run_cases"]),
}
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


def load(directory):
    """The records' bytes in order: segment lines, or version-1 files."""
    segdir = os.path.join(directory, "segments")
    if os.path.isdir(segdir):
        firsts = sorted(int(n[:10]) for n in os.listdir(segdir) if SEGMENT.match(n))
        out = []
        for i, first in enumerate(firsts):
            if first != 1 + i * SEGMENT_RECORDS:
                return out, ("bad", first, "segment %010d.jsonl off the grid" % first)
            with open(os.path.join(segdir, "%010d.jsonl" % first), "rb") as f:
                data = f.read()
            lines = data.split(b"\n")
            torn = lines.pop()  # bytes after the last newline: a torn tail, not a record
            if torn and i != len(firsts) - 1:
                return out, ("bad", first + len(lines), "cut line")
            out.extend(lines)
        return out, None
    seqs = sorted(int(n[:10]) for n in os.listdir(directory) if NAME.match(n))
    out = []
    for expect, seq in enumerate(seqs, start=1):
        if seq != expect:
            return out, ("bad", expect, "missing")
        with open(os.path.join(directory, "%010d.json" % seq), "rb") as f:
            out.append(f.read())
    return out, None


def check(directory):
    datas, bad = load(directory)
    if bad:
        return [], bad
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for i, data in enumerate(datas):
            path = os.path.join(tmp, "%010d" % (i + 1))
            with open(path, "wb") as f:
                f.write(data)
            paths.append(path)
        blakes = b3sum(paths)
    prev = ZERO
    for seq, (data, b3) in enumerate(zip(datas, blakes), start=1):
        try:
            obj = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return records, ("bad", seq, "unparseable")
        if not isinstance(obj, dict):
            return records, ("bad", seq, "unparseable")
        keys = sorted(obj.keys())
        if obj.get("kind") == "audit":
            want = AUDIT_KEYS
        else:
            want = SCORE_KEYS.get(obj.get("schema_version"))
            if want and obj.get("schema_version") == 2 and "origin" in obj:
                want = sorted(want + ["origin"])
        if keys != want:
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
