#!/usr/bin/env bash
# Signed runs at scale (docs/formats.md#signed-runs): a history of RUNS runs of CASES
# records each, every run signed by one operator key (a run.signed record after its
# records), against the same records unsigned. Prints one table: `history verify` with the
# signature memo warm (the second verify), `history verify --full` (every run.signed
# signature to GnuPG, on a few threads) and the unsigned baseline; wall and CPU (user +
# system, children included: the machine may be shared, so wall time alone says little).
# Not a timed test.
#   tests/perf/signed_runs_bench.sh [BENCHDESK] (default build/release/src/benchdesk)
#   RUNS=200 CASES=10
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
bd=${1:-$src/build/release/src/benchdesk}
runs=${RUNS:-200} cases=${CASES:-10}
command -v b3sum >/dev/null || { echo "signed_runs_bench: needs b3sum" >&2; exit 2; }
work=$(mktemp -d)
export GNUPGHOME="$work/gnupg"
mkdir -m 700 "$GNUPGHOME"
trap 'gpgconf --homedir "$GNUPGHOME" --kill all >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key "Operator <op@bench.example>" ed25519 sign 1y 2>/dev/null
fpr=$(gpg --batch --with-colons --fingerprint op@bench.example | awk -F: '$1=="fpr" {print $10; exit}')
for kind in signed unsigned; do
    mkdir -p "$work/$kind"
    cp -a "$src/bench" "$work/$kind/bench"
done
gpg --batch --armor --export "$fpr" >"$work/signed/bench/keys/op.asc"
echo "  - {fingerprint: $fpr, identity: op@bench.example, roles: [operator]}" \
    >>"$work/signed/bench/trusted-signers.yaml"

python3 - "$work" "$fpr" "$runs" "$cases" <<'PY'
import hashlib, json, os, subprocess, sys
work, fpr, runs, cases = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
TAG = b"benchdesk-chain-v1\0"
canon = lambda o: json.dumps(o, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
def rhash(prev, data):
    b3 = subprocess.run(["b3sum", "--no-names"], input=data, capture_output=True,
                        check=True).stdout.split()[0].decode()
    return hashlib.sha256(TAG + bytes.fromhex(prev) + bytes.fromhex(b3)).hexdigest()
at = "2026-11-01T00:00:00Z"
for kind in ("signed", "unsigned"):
    lines, prev = [], "0" * 64
    for r in range(runs):
        rid = "perf-%06d" % r
        first, last = len(lines) + 1, None
        for c in range(cases):
            rec = {"schema_version": 2, "seq": len(lines) + 1, "run_id": rid, "run_scope": "full",
                   "run_cases": cases, "task_class": "vuln-remediation", "case_id": "case-%03d" % c,
                   "case_digest": "blake3:" + "1" * 64, "task_class_digest": "blake3:" + "2" * 64,
                   "cassette_digest": None, "harness_version": "0.1.0",
                   "isolation_class": "namespaces", "provenance_verified": True,
                   "operator_fingerprint": fpr if kind == "signed" else None,
                   "started_at": at, "finished_at": at,
                   "score": {"breakdown": {}, "cost_usd": 0, "failure_modes": [], "passed": True,
                             "score": 1, "wall_clock_ms": 10}, "prev_hash": prev}
            data = canon(rec)
            lines.append(data)
            prev = last = rhash(prev, data)
        if kind != "signed":
            continue
        msg = "benchdesk-run-v1\nrun_id:%s\nrecords:%d\nfirst_seq:%d\nlast_record_hash:%s\n" % (
            rid, cases, first, last)
        sig = subprocess.run(["gpg", "--batch", "--quiet", "--armor", "--detach-sign", "-u", fpr],
                             input=msg.encode(), capture_output=True, check=True).stdout.decode()
        detail = canon({"run_id": rid, "records": cases, "first_seq": first,
                        "last_record_hash": last, "signature": sig}).decode()
        rec = {"schema_version": 2, "seq": len(lines) + 1, "kind": "audit", "event": "run.signed",
               "task_class": "vuln-remediation", "detail": detail, "operator_fingerprint": fpr,
               "harness_version": "0.1.0", "at": at, "prev_hash": prev}
        data = canon(rec)
        lines.append(data)
        prev = rhash(prev, data)
    seg = os.path.join(work, kind, ".benchdesk", "history", "segments")
    os.makedirs(seg, mode=0o700)
    with open(os.path.join(seg, "0000000001.jsonl"), "wb") as f:
        f.write(b"".join(l + b"\n" for l in lines))
PY

measure() { # label dir args...
    local label=$1 dir=$2; shift 2
    local t0 t1 c0 c1
    read -r c0 < <(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
    t0=$(date +%s.%N)
    "$bd" -C "$dir" history verify "$@" >"$work/out" 2>&1 || { cat "$work/out"; exit 1; }
    t1=$(date +%s.%N)
    read -r c1 < <(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
    printf '| %-44s | %8.3f | %8.3f |\n' "$label" "$(echo "$t1 - $t0" | bc)" \
        "$(echo "($c1 - $c0) / $(getconf CLK_TCK)" | bc -l)"
}
echo "signed runs: $runs runs of $cases records ($((runs * (cases + 1))) records signed, $((runs * cases)) unsigned)"
printf '| %-44s | %8s | %8s |\n' "history verify" "wall s" "CPU s"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..46})" "----------" "----------"
measure "unsigned records (baseline)" "$work/unsigned"
measure "signed, --full (every signature to GnuPG)" "$work/signed" --full
"$bd" -C "$work/signed" history verify >/dev/null 2>&1 # fills the signature memo
measure "signed, memo warm" "$work/signed"
grep -o 'signed runs: .*' "$work/out" || true
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
