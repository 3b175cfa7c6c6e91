#!/usr/bin/env bash
# Verdicts at scale (docs/provenance.md#verdicts): a bench with one task class of 100 cases,
# N/100 full runs of them — N score records, a third of them failed — and N verdict files (two
# reviewers, real GnuPG keys made here; each signed by `benchdesk verdict`, the setup is
# kept in $BD_VERDICT_BENCH_DIR between runs). Prints one table, an operation per row,
# wall and CPU time (user + system: the machine is shared, so wall times vary with the
# load and CPU times much less):
#   verify, first     `benchdesk verify` with no signature memo (every verdict's signature
#                     checked by GnuPG, a few at once)
#   verify, warm      the same again (what the per-user signature memo keeps, if any)
#   review            `benchdesk review tc --json`
#   calibrate         `benchdesk calibrate tc --json`
#   recommend         `benchdesk recommend tc --json`
# Not a timed test. Usage: tests/perf/verdict_bench.sh [N] (default 10000).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${BD_PERF_BUILD:-$here/build/perf}
n=${1:-10000}
work=${BD_VERDICT_BENCH_DIR:-${TMPDIR:-/tmp}/bd-verdict-bench-$n}

if [ -z "${BD_PERF_BUILD:-}" ]; then # a build of one's own (BD_PERF_BUILD) is used as it is
    cmake -S "$here" -B "$build" -DBD_FLAVOUR=release >/dev/null
    cmake --build "$build" -j2 --target benchdesk >/dev/null
fi
bd=$build/src/benchdesk
command -v b3sum >/dev/null || { echo "verdict_bench: needs b3sum" >&2; exit 1; }

root=$work/bench
export GNUPGHOME=$work/k/gnupg HOME=$work/home XDG_STATE_HOME=$work/home/state
mkdir -p "$HOME"
if [ ! -f "$work/ready" ]; then
    rm -rf "$work" && mkdir -p "$work" "$HOME"
    bash "$here/tests/fixtures/gpg/make-keys.sh" "$work/k" >/dev/null 2>&1
    . "$work/k/env"
    mkdir -p "$root/bench/tc/cases" "$root/bench/keys"
    cat >"$root/bench/tc/registration.yaml" <<'YAML'
schema_version: 2
name: tc
description: Verdicts at scale.
current_tier: bronze
min_cases_for_promotion: {bronze: 1, silver: 2, gold: 3}
promotion_threshold: {silver: 0.80, gold: 0.90}
breakdown_keys: [a]
failure_modes:
  - {code: x.wrong, severity: block, description: Wrong}
rubric: {wall_clock_seconds: 10, memory_mb: 256}
sut: {kind: cassette}
YAML
    echo "print('{}')" >"$root/bench/tc/rubric.py"
    python3 - "$root/bench/tc/cases" 100 <<'PY'
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(n):
    c = os.path.join(d, "c%06d" % i)
    os.makedirs(c + "/input"); os.makedirs(c + "/expected")
    open(c + "/input/prompt.txt", "w").write("input %d\n" % i)
    open(c + "/expected/answer.txt", "w").write("42\n")
    open(c + "/cassette.json", "w").write('{"output": 42}\n')
    open(c + "/case.yaml", "w").write(
        "schema_version: 2\ncase_id: c%06d\ntitle: \"Case %d\"\ndisposition: positive\n"
        "difficulty: easy\norigin:\n  source: curated\n  source_ref: {type: synthetic, value: \"%d\"}\n"
        "  added_at: \"2026-05-12T14:00:00Z\"\nexpected: {answer: 42}\ncassette_digest: null\n" % (i, i, i))
PY
    cat >"$root/bench/trusted-signers.yaml" <<YAML
schema_version: 1
signers:
  - {fingerprint: $ALICE_FPR, identity: alice@bench.example, roles: [author, reviewer]}
  - {fingerprint: $BOB_FPR, identity: bob@bench.example, roles: [author, reviewer]}
YAML
    cp "$work/k/keys/alice.asc" "$work/k/keys/bob.asc" "$root/bench/keys/"
    "$bd" -C "$root" pin tc >/dev/null
    # one full run of n records, chained, by an independent generator (b3sum, hashlib)
    python3 - "$root" "$n" <<'PY'
import datetime, hashlib, json, os, subprocess, sys, tempfile
root, n = sys.argv[1], int(sys.argv[2])
pins = {}
tcd = None
for line in open(root + "/bench/tc/cases/digests.yaml"):
    k, _, v = line.strip().partition(": ")
    if k == "task_class": tcd = v
    elif k.startswith("c0"): pins[k] = v
at = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
recs = []
for i in range(n):
    cid = "c%06d" % (i % 100)
    failed = i % 3 == 0
    recs.append({"schema_version": 2, "seq": i + 1, "run_id": "big-%d" % (i // 100 + 1),
        "run_scope": "full", "run_cases": 100, "task_class": "tc", "case_id": cid, "case_digest": pins[cid],
        "task_class_digest": tcd, "cassette_digest": None, "harness_version": "0.1.0",
        "isolation_class": "namespaces", "provenance_verified": True, "operator_fingerprint": None,
        "started_at": at, "finished_at": at,
        "score": {"breakdown": {}, "cost_usd": 0, "failure_modes": [{"code": "x.wrong", "severity": "block"}] if failed else [],
                  "passed": not failed, "score": 0.2 if failed else 0.9, "wall_clock_ms": 10}})
prev = "0" * 64
tmp = tempfile.mkdtemp()
lines = []
for start in range(0, n, 1):
    r = recs[start]
    r["prev_hash"] = prev
    data = json.dumps(r, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    b3 = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True, check=True).stdout.split()[0].decode()
    prev = hashlib.sha256(b"benchdesk-chain-v1\0" + bytes.fromhex(prev) + bytes.fromhex(b3)).hexdigest()
    lines.append(data)
seg = root + "/.benchdesk/history/segments"
os.makedirs(seg, mode=0o700)
for i in range(0, len(lines), 65536):
    p = seg + "/%010d.jsonl" % (i + 1)
    open(p, "wb").write(b"".join(l + b"\n" for l in lines[i:i + 65536]))
    os.chmod(p, 0o600)
PY
    half=$((n / 2))
    "$bd" -C "$root" verdict $(seq 1 "$half") --verdict confirmed --key "$ALICE_FPR" >/dev/null
    "$bd" -C "$root" verdict $(seq $((half + 1)) "$n") --verdict rubric_bug --key "$BOB_FPR" >/dev/null
    touch "$work/ready"
fi
files=$(find "$root/audit/verdicts" -name '*.json' | wc -l)

row() { # label command...
    local label=$1; shift
    local t0 t1 c0 c1
    t0=$(date +%s.%N)
    c0=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    "$@" >/dev/null 2>&1 || true
    t1=$(date +%s.%N)
    c1=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)
    printf '%-22s %9.2f s %9.2f s\n' "$label" "$(echo "$t1 - $t0" | bc)" \
        "$(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)"
}
printf 'verdicts at scale: %s verdict files, %s records (%s)\n' "$files" "$n" "$(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-22s %11s %11s\n' operation wall cpu
rm -rf "$XDG_STATE_HOME/benchdesk"
row "verify, first" "$bd" -C "$root" verify
row "verify, warm" "$bd" -C "$root" verify
row "review" "$bd" -C "$root" review tc --json
row "calibrate" "$bd" -C "$root" calibrate tc --json
row "recommend" "$bd" -C "$root" recommend tc --json
