#!/usr/bin/env bash
# Generate a signed bench of N cases in one task class ("bulk"), for the scale benchmark
# (tests/perf/bench_scale.sh) and the scale tests. Format v2, pinned and signed with
# benchdesk itself:
#   - throwaway ed25519 keys (alice, bob) made in a private GnuPG home that is deleted
#     afterwards; their public keys in bench/keys/, both trusted as author and reviewer;
#   - N cases, each with case.yaml, cassette.json, input/prompt.txt, expected/answer.txt;
#   - `benchdesk pin bulk` (the real pin: every case hashed);
#   - the task class signed by alice (author) and bob (reviewer) with `benchdesk sign`, and
#     the first SIGNED cases (default 20) too; the others stay drafts. Every signature is a
#     real one, and a real one per case is a gpg process per role, so a fully signed
#     100,000-case bench takes hours to make: SIGNED=N does it when you have them.
#
# Usage: make_big_bench.sh ROOT N [BENCHDESK_BINARY]
#   SIGNED=20     how many cases get both signatures
#   ID_LEN=0      pad case ids with 'x' to this length (128: the longest ids, the largest
#                 digests.yaml per case)
#   NO_PIN=1      write the files only (no keys, no pin, no signatures)
#   KEYS_HOME=DIR make the keys in this GnuPG home and keep it (tests sign with it later);
#                 its gpg-agent is the caller's to stop (gpgconf --homedir DIR --kill all)
set -euo pipefail
root=${1:?usage: make_big_bench.sh ROOT N [BENCHDESK_BINARY]}
n=${2:?usage: make_big_bench.sh ROOT N [BENCHDESK_BINARY]}
src=$(cd "$(dirname "$0")/../.." && pwd)
bd=${3:-${BD_BIN:-$src/build/release/src/benchdesk}}
signed=${SIGNED:-20}
id_len=${ID_LEN:-0}
[ -x "$bd" ] || { echo "make_big_bench: no benchdesk binary at $bd" >&2; exit 2; }
command -v b3sum >/dev/null || { echo "make_big_bench: needs b3sum (Debian: b3sum)" >&2; exit 2; }

cassette='{"output": 42}'
cassette_digest="blake3:$(printf '%s\n' "$cassette" | b3sum --no-names)"

python3 - "$root" "$n" "$id_len" "$cassette" "$cassette_digest" <<'PY'
import os, sys
root, n, id_len, cassette, cdig = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
tc = os.path.join(root, "bench", "bulk")
os.makedirs(os.path.join(tc, "cases"), exist_ok=True)
os.makedirs(os.path.join(root, "bench", "keys"), exist_ok=True)
with open(os.path.join(tc, "registration.yaml"), "w") as f:
    f.write("""schema_version: 2
name: bulk
description: "A generated task class of small cases (scale benchmark fixture)."
current_tier: bronze
min_cases_for_promotion: {bronze: 10, silver: 30, gold: 100}
promotion_threshold: {silver: 0.80, gold: 0.90}
breakdown_keys: [answer]
failure_modes:
  - {code: answer.wrong, severity: block, description: "Wrong answer"}
rubric: {wall_clock_seconds: 60, memory_mb: 512}
sut: {kind: cassette}
""")
with open(os.path.join(tc, "rubric.py"), "w") as f:
    f.write("import json, sys\njson.load(sys.stdin)\n"
            "print(json.dumps({'passed': True, 'score': 1.0, 'breakdown': {'answer': 1.0}, "
            "'failure_modes': [], 'cost_usd': 0.0, 'wall_clock_ms': 0}))\n")
width = max(6, len(str(n)))
for i in range(1, n + 1):
    cid = "case-%0*d" % (width, i)
    if id_len > len(cid):
        cid += "-" + "x" * (id_len - len(cid) - 1)
    d = os.path.join(tc, "cases", cid)
    os.makedirs(os.path.join(d, "input"))
    os.makedirs(os.path.join(d, "expected"))
    with open(os.path.join(d, "input", "prompt.txt"), "w") as f:
        f.write("What is six times seven? (case %d)\n" % i)
    with open(os.path.join(d, "expected", "answer.txt"), "w") as f:
        f.write("42\n")
    with open(os.path.join(d, "cassette.json"), "w") as f:
        f.write(cassette + "\n")
    with open(os.path.join(d, "case.yaml"), "w") as f:
        f.write("""schema_version: 2
case_id: %s
title: "Generated case %d"
disposition: positive
difficulty: easy
origin:
  source: curated
  source_ref: {type: synthetic, value: "gen-%d"}
  added_at: "2026-05-12T14:00:00Z"
expected: {answer: 42}
cassette_digest: %s
""" % (cid, i, i, cdig))
PY

[ "${NO_PIN:-0}" = 1 ] && exit 0

if [ -n "${KEYS_HOME:-}" ]; then
    home=$KEYS_HOME
    mkdir -p -m 700 "$home"
else
    home=$(mktemp -d "${TMPDIR:-/tmp}/bd-bigbench-keys.XXXXXX")
    chmod 700 "$home"
    cleanup() { gpgconf --homedir "$home" --kill all >/dev/null 2>&1 || true; rm -rf "$home"; }
    trap cleanup EXIT
fi
export GNUPGHOME="$home"
declare -A fpr
for who in alice bob; do
    gpg --batch --list-keys "<$who@bench.example>" >/dev/null 2>&1 ||
        gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
            --quick-gen-key "${who^} (scale benchmark) <$who@bench.example>" ed25519 sign never 2>/dev/null
    fpr[$who]=$(gpg --batch --with-colons --fingerprint "<$who@bench.example>" 2>/dev/null |
        awk -F: '$1=="fpr" {print $10; exit}')
    gpg --batch --armor --export "${fpr[$who]}" 2>/dev/null >"$root/bench/keys/$who.asc"
done
cat >"$root/bench/trusted-signers.yaml" <<YAML
schema_version: 1
signers:
  - {fingerprint: ${fpr[alice]}, identity: alice@bench.example, roles: [author, reviewer]}
  - {fingerprint: ${fpr[bob]}, identity: bob@bench.example, roles: [author, reviewer]}
YAML

"$bd" -C "$root" pin bulk >/dev/null
"$bd" -C "$root" sign "$root/bench/bulk" --role author --key "${fpr[alice]}" >/dev/null
"$bd" -C "$root" sign "$root/bench/bulk" --role reviewer --key "${fpr[bob]}" >/dev/null
k=0
for d in "$root"/bench/bulk/cases/*/; do
    [ "$k" -lt "$signed" ] || break
    "$bd" -C "$root" sign "$d" --role author --key "${fpr[alice]}" >/dev/null
    "$bd" -C "$root" sign "$d" --role reviewer --key "${fpr[bob]}" >/dev/null
    k=$((k + 1))
done
