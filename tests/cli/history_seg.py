#!/usr/bin/env python3
"""Segment surgery and record generation for the history command tests.

Shares no code with benchdesk (BLAKE3 from the b3sum command, SHA-256 from hashlib).
  history_seg.py line HIST N              print the record at position N
  history_seg.py sub HIST N OLD NEW       replace OLD by NEW in record N (first occurrence)
  history_seg.py del HIST N               remove record N (the later lines move up)
  history_seg.py swap HIST A B            swap records A and B
  history_seg.py set HIST N TEXT          replace record N by TEXT
  history_seg.py gen HIST FIELDS_JSON     append one version-2 score record, chained: the
      JSON object gives the fields (task_class, case_id, case_digest, task_class_digest,
      isolation_class, provenance_verified, score, passed, age_days, run_id, failure_mode,
      run_scope, run_cases)
  history_seg.py audit HIST EVENT DETAIL [TASK_CLASS]
      append one version-2 audit record with this event and detail text, chained
  history_seg.py relink HIST              rewrite every prev_hash so the chain links again
      (what an attacker who edited a record does next; the hashes are not secret)
  history_seg.py memo HIST                write the VERIFIED memo naming today's last record
      ("<count, 10 digits> <record_hash> <byte offset in its segment, 12 digits>\n",
      docs/history.md)
"""
import datetime
import hashlib
import json
import os
import subprocess
import sys

SEG = 65536
TAG = b"benchdesk-chain-v1\0"


def load(hist):
    segdir = os.path.join(hist, "segments")
    lines = []
    if not os.path.isdir(segdir):
        return lines
    for first in sorted(int(n[:10]) for n in os.listdir(segdir) if n.endswith(".jsonl")):
        with open(os.path.join(segdir, "%010d.jsonl" % first), "rb") as f:
            data = f.read()
        parts = data.split(b"\n")
        if parts[-1] == b"":
            parts.pop()
        lines.extend(parts)
    return lines


def store(hist, lines):
    segdir = os.path.join(hist, "segments")
    os.makedirs(segdir, mode=0o700, exist_ok=True)
    for n in os.listdir(segdir):
        if n.endswith(".jsonl"):
            os.unlink(os.path.join(segdir, n))
    for i in range(0, len(lines), SEG):
        path = os.path.join(segdir, "%010d.jsonl" % (i + 1))
        with open(path, "wb") as f:
            f.write(b"".join(line + b"\n" for line in lines[i:i + SEG]))
        os.chmod(path, 0o600)


def record_hash(data):
    obj = json.loads(data)
    b3 = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True,
                        check=True).stdout.split()[0].decode()
    return hashlib.sha256(TAG + bytes.fromhex(obj["prev_hash"]) + bytes.fromhex(b3)).hexdigest()


def gen(hist, fields):
    lines = load(hist)
    prev = record_hash(lines[-1]) if lines else "0" * 64
    t = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(
        days=fields.get("age_days", 1))
    at = t.strftime("%Y-%m-%dT%H:%M:%SZ")
    fm = fields.get("failure_mode")
    rec = {
        "schema_version": 2, "seq": len(lines) + 1, "run_id": fields.get("run_id", "gen-1"),
        "run_scope": fields.get("run_scope", "full"), "run_cases": fields.get("run_cases", 1), "task_class": fields["task_class"],
        "case_id": fields["case_id"], "case_digest": fields["case_digest"],
        "task_class_digest": fields["task_class_digest"], "cassette_digest": None,
        "harness_version": "0.1.0", "isolation_class": fields.get("isolation_class", "namespaces"),
        "provenance_verified": fields.get("provenance_verified", True),
        "operator_fingerprint": None, "started_at": at, "finished_at": at,
        "score": {"breakdown": {}, "cost_usd": 0, "failure_modes":
                  [{"code": fm, "severity": "block"}] if fm else [],
                  "passed": fields.get("passed", True), "score": fields.get("score", 1),
                  "wall_clock_ms": 10},
        "prev_hash": prev,
    }
    data = json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    lines.append(data)
    store(hist, lines)


def audit(hist, event, detail, task_class=None):
    lines = load(hist)
    prev = record_hash(lines[-1]) if lines else "0" * 64
    at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    rec = {"schema_version": 2, "seq": len(lines) + 1, "kind": "audit", "event": event,
           "task_class": task_class, "detail": detail, "operator_fingerprint": None,
           "harness_version": "0.1.0", "at": at, "prev_hash": prev}
    lines.append(json.dumps(rec, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode())
    store(hist, lines)


def relink(hist):
    lines = load(hist)
    prev = "0" * 64
    for i, data in enumerate(lines):
        obj = json.loads(data)
        obj["prev_hash"] = prev
        data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        lines[i] = data
        prev = record_hash(data)
    store(hist, lines)


def memo(hist):
    lines = load(hist)
    n = len(lines)
    first = (n - 1) // SEG * SEG
    off = sum(len(line) + 1 for line in lines[first:n - 1])
    with open(os.path.join(hist, "VERIFIED"), "w") as f:
        f.write("%010d %s %012d\n" % (n, record_hash(lines[-1]), off))


def main(argv):
    cmd, hist = argv[1], argv[2]
    if cmd == "gen":
        gen(hist, json.loads(argv[3]))
        return 0
    if cmd == "audit":
        audit(hist, argv[3], argv[4], argv[5] if len(argv) > 5 else None)
        return 0
    if cmd == "relink":
        relink(hist)
        return 0
    if cmd == "memo":
        memo(hist)
        return 0
    lines = load(hist)
    n = int(argv[3])
    if cmd == "line":
        sys.stdout.write(lines[n - 1].decode() + "\n")
        return 0
    if cmd == "sub":
        old, new = argv[4].encode(), argv[5].encode()
        if old not in lines[n - 1]:
            raise SystemExit("history_seg.py: %r not in record %d" % (old, n))
        lines[n - 1] = lines[n - 1].replace(old, new, 1)
    elif cmd == "del":
        del lines[n - 1]
    elif cmd == "swap":
        m = int(argv[4])
        lines[n - 1], lines[m - 1] = lines[m - 1], lines[n - 1]
    elif cmd == "set":
        lines[n - 1] = argv[4].encode()
    else:
        raise SystemExit("history_seg.py: unknown command " + cmd)
    store(hist, lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
