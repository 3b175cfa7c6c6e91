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
#     real one, made by a gpg process per case and role.
#   - with SIGN_JOBS=J (the default once SIGNED is over 200: one per CPU), the cases are
#     signed without `benchdesk sign` (a process per signature, with a gpg inside, takes
#     hours for 100,000 cases): the first case is signed with `benchdesk sign`, then each
#     other case's documented message (docs/provenance.md#the-signed-message) goes to
#     `gpg --detach-sign --armor`, J gpg processes at once, and its provenance.yaml is
#     written in the format `benchdesk sign` writes. Before the rest is signed, the file
#     written this way for the first case must equal the one `benchdesk sign` wrote, but
#     for the times and signatures; afterwards `benchdesk verify` must find the first
#     cases signed by both roles (the bench is copied with its first cases only).
#     SIGN_LOG=FILE prints progress there (every 5,000 cases).
#
# Usage: make_big_bench.sh ROOT N [BENCHDESK_BINARY]
#   SIGNED=20     how many cases get both signatures
#   SIGN_JOBS=J   sign with J gpg processes at once, not `benchdesk sign` (see above);
#                 SIGN_JOBS=0 always uses `benchdesk sign`
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
sign_case() {
    "$bd" -C "$root" sign "$1" --role author --key "${fpr[alice]}" >/dev/null
    "$bd" -C "$root" sign "$1" --role reviewer --key "${fpr[bob]}" >/dev/null
}
sign_jobs=${SIGN_JOBS:-}
if [ -z "$sign_jobs" ]; then
    sign_jobs=0
    [ "$signed" -le 200 ] || sign_jobs=$(nproc)
fi
if [ "$sign_jobs" -eq 0 ]; then
    k=0
    for d in "$root"/bench/bulk/cases/*/; do
        [ "$k" -lt "$signed" ] || break
        sign_case "$d"
        k=$((k + 1))
    done
    exit 0
fi
[ "$signed" -gt 0 ] || exit 0

# Fast signing: the first case with `benchdesk sign` (the reference), the others with gpg.
first=$(awk '$1=="cases:"{c=1;next} c&&NF==2{sub(/:$/,"",$1);print $1;exit}' "$root/bench/bulk/cases/digests.yaml")
sign_case "$root/bench/bulk/cases/$first"
python3 - "$root" "$signed" "$sign_jobs" "${fpr[alice]}" "${fpr[bob]}" "${SIGN_LOG:-/dev/null}" <<'PY'
import os, subprocess, sys, threading, time
root, signed, jobs, fa, fb, log = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
tc, cases = "bulk", os.path.join(sys.argv[1], "bench", "bulk", "cases")
signers = {"author": ("alice@bench.example", fa), "reviewer": ("bob@bench.example", fb)}
pins, inside = [], False
for line in open(os.path.join(cases, "digests.yaml")):
    if line.startswith("cases:"):
        inside = True
    elif inside and line.startswith("  "):
        cid, dig = line.split()
        pins.append((cid[:-1], dig))
pins = pins[:signed]

def message(role, cid, dig):  # docs/provenance.md#the-signed-message
    return ("benchdesk-provenance-v2\nrole: %s\nsubject: case\ntask_class: %s\ncase_id: %s\n"
            "digest: %s\n" % (role, tc, cid, dig)).encode()

def block(role, dig, signed_at, sig):  # what `benchdesk sign` writes for one role
    ident, fpr = signers[role]
    body = "".join("    " + l + "\n" if l else "\n" for l in sig.rstrip("\r\n").split("\n"))
    return ('%s:\n  identity: "%s"\n  fingerprint: %s\n  signed_at: "%s"\n  digest: "%s"\n'
            "  signature: |\n%s" % (role, ident, fpr, signed_at, dig, body))

def provfile(dig, blocks):
    return ("# Signatures over this subject's digest (docs/provenance.md#the-signed-message), "
            "written by `benchdesk sign`.\nschema_version: 2\n" +
            "".join(block(r, dig, *blocks[r]) for r in ("author", "reviewer")))

# The reference: rebuild the first case's file from the times and signatures `benchdesk
# sign` put in it; it must come out byte for byte.
cid, dig = pins[0]
ref = open(os.path.join(cases, cid, "provenance.yaml")).read()
got, role, in_sig = {}, None, False
for line in ref.split("\n"):
    if in_sig and (line.startswith("    ") or line == ""):
        got[role][1] += line[4:] + "\n"
        continue
    in_sig = line == "  signature: |"
    if line in ("author:", "reviewer:"):
        role = line[:-1]
        got[role] = ["", ""]
    elif line.startswith('  signed_at: "'):
        got[role][0] = line[len('  signed_at: "'):-1]
if provfile(dig, got) != ref:
    sys.exit("make_big_bench: the provenance.yaml written here differs from benchdesk sign's "
             "(%s): update make_big_bench.sh" % os.path.join(cases, cid, "provenance.yaml"))

gpg = ["gpg", "--batch", "--no-tty", "--quiet", "--no-auto-check-trustdb", "--detach-sign",
       "--armor", "--output", "-", "--local-user"]
lock, nxt, done, t0, failed = threading.Lock(), [1], [0], time.monotonic(), []
logf = open(log, "a")

def worker():
    while not failed:
        with lock:
            i = nxt[0]
            nxt[0] += 1
        if i >= len(pins):
            return
        cid, dig = pins[i]
        blocks = {}
        for role in ("author", "reviewer"):
            r = subprocess.run(gpg + [signers[role][1] + "!"], input=message(role, cid, dig),
                               capture_output=True)
            if r.returncode != 0 or not r.stdout.startswith(b"-----BEGIN PGP SIGNATURE-----"):
                failed.append("%s %s: %s" % (cid, role, r.stderr.decode(errors="replace").strip()))
                return
            blocks[role] = (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), r.stdout.decode())
        tmp = os.path.join(cases, ".provenance-%s.tmp" % cid)
        with open(tmp, "w") as f:
            f.write(provfile(dig, blocks))
        os.replace(tmp, os.path.join(cases, cid, "provenance.yaml"))
        with lock:
            done[0] += 1
            if done[0] % 5000 == 0:
                print("signed %d cases (%d signatures) in %.0f s" % (done[0], 2 * done[0],
                      time.monotonic() - t0), file=logf, flush=True)

threads = [threading.Thread(target=worker) for _ in range(jobs)]
for t in threads:
    t.start()
for t in threads:
    t.join()
if failed:
    sys.exit("make_big_bench: gpg failed: " + failed[0])
print("signed %d cases (%d signatures) with %d gpg processes at once in %.1f s" %
      (done[0], 2 * done[0], jobs, time.monotonic() - t0), file=logf, flush=True)
PY

# The check: a copy of the bench holding only its first cases (the first signed by
# `benchdesk sign`, the next by gpg here) must verify them all signed by both roles.
k=$((signed < 4 ? signed : 4))
chk=$(mktemp -d "${TMPDIR:-/tmp}/bd-bigbench-check.XXXXXX")
mkdir -p "$chk/bench/bulk/cases"
cp -r "$root/bench/keys" "$root/bench/trusted-signers.yaml" "$chk/bench/"
cp "$root"/bench/bulk/{registration.yaml,rubric.py,provenance.yaml} "$chk/bench/bulk/"
awk -v k="$k" 'c&&/^  /{if(++n>k)next} {print} $1=="cases:"{c=1}' \
    "$root/bench/bulk/cases/digests.yaml" >"$chk/bench/bulk/cases/digests.yaml"
for id in $(awk '$1=="cases:"{c=1;next} c&&NF==2{sub(/:$/,"",$1);print $1}' "$chk/bench/bulk/cases/digests.yaml"); do
    cp -r "$root/bench/bulk/cases/$id" "$chk/bench/bulk/cases/"
done
out=$("$bd" -C "$chk" verify --full 2>&1) && grep -q "cases signed $k, awaiting review 0, draft 0" <<<"$out" || {
    echo "make_big_bench: the first $k cases signed here do not verify as signed (bench copy: $chk):" >&2
    echo "$out" >&2
    exit 1
}
rm -rf "$chk"
