#!/usr/bin/env bash
# Large benches (docs/formats.md, "Large benches"): the per-kind YAML limits at their
# boundaries; a task class whose digests.yaml outgrows 1 MiB still pins and verifies (it
# used to brick itself); atomic writes never put a temp file inside a case dir; a leftover
# from an interrupted write is reported, never hashed; private GnuPG homes are removed on
# SIGTERM during verify and during sign, and swept when their owner is dead.
. "$(dirname "$0")/lib.sh"
command -v b3sum >/dev/null || { echo "SKIP: needs b3sum"; exit 77; }
command -v gpg >/dev/null || { echo "SKIP: needs gpg"; exit 77; }
bd() { "$BD_BIN" "$@"; }
keys="$BD_TMP/keys"
pinentry_pid="$BD_TMP/pinentry.pid"
cleanup() {
    gpgconf --homedir "$keys" --kill all >/dev/null 2>&1 || true
    [ -s "$pinentry_pid" ] && kill "$(cat "$pinentry_pid")" 2>/dev/null || true
    rm -rf "$BD_TMP"
}
trap cleanup EXIT
export TMPDIR="$BD_TMP/tmp"
mkdir -p "$TMPDIR"
gen() { KEYS_HOME="$keys" SIGNED=${SIGNED:-2} bash "$BD_SOURCE_DIR/tests/perf/make_big_bench.sh" "$@" "$BD_BIN"; }

# ---- a task class whose digests.yaml is over 1 MiB: pin, verify, pin again -------------
# 5,200 cases with 128-byte ids: digests.yaml is about 1.07 MB (over the 1 MiB that used to
# be the limit for every YAML file, which made `pin` write a file nothing could read).
big="$BD_TMP/big"
ID_LEN=128 SIGNED=0 KEYS_HOME="$keys" bash "$BD_SOURCE_DIR/tests/perf/make_big_bench.sh" "$big" 5200 "$BD_BIN" >/dev/null 2>&1 ||
    fail "generating a 5,200-case bench with 128-byte ids"
size=$(stat -c %s "$big/bench/bulk/cases/digests.yaml")
[ "$size" -gt 1048576 ] && pass "digests.yaml of 5,200 long ids is $size bytes (> 1 MiB)" ||
    fail "digests.yaml is only $size bytes"
expect 0 - -- bd -C "$big" verify bulk
expect 0 - -- bd -C "$big" pin bulk
one=$(ls "$big/bench/bulk/cases" | grep -v digests | sed -n 1p)
expect 0 - -- bd -C "$big" pin bulk "$one"
n=$(bd -C "$big" list bulk --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["cases"]))')
[ "$n" = 5200 ] && pass "list --json streams 5,200 cases" || fail "list --json gave $n cases"

# ---- the limits of each kind, at the boundary -------------------------------------------
small="$BD_TMP/small"
SIGNED=1 gen "$small" 3 >/dev/null 2>&1 || fail "generating a 3-case bench"
tc="$small/bench/bulk"
# pad FILE SIZE: append a YAML comment so that FILE is exactly SIZE bytes.
pad() {
    python3 - "$1" "$2" <<'PY'
import os, sys
path, size = sys.argv[1], int(sys.argv[2])
with open(path, "rb") as f:
    data = f.read()
# Drop an earlier padding line, so padding again sets the size afresh.
if data.endswith(b"x\n") and b"\n#x" in data:
    data = data[: data.rindex(b"\n#x") + 1]
data = data.rstrip(b"\n") + b"\n"
need = size - len(data)
assert need >= 3, need
data += b"#" + b"x" * (need - 2) + b"\n"
with open(path, "wb") as f:
    f.write(data)
assert os.path.getsize(path) == size
PY
}
cp "$tc/cases/digests.yaml" "$BD_TMP/digests.orig"
pad "$tc/cases/digests.yaml" $((64 * 1024 * 1024))
expect 0 - -- bd -C "$small" verify bulk
pad "$tc/cases/digests.yaml" $((64 * 1024 * 1024 + 1))
expect 2 yaml.too_large -- bd -C "$small" verify bulk
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "67108864-byte (65536 KiB) limit for digests.yaml files" <<<"$out" &&
    pass "the digests.yaml message names its limit" || fail "no limit named: $out"
cp "$BD_TMP/digests.orig" "$tc/cases/digests.yaml"

cp "$small/bench/trusted-signers.yaml" "$BD_TMP/signers.orig"
pad "$small/bench/trusted-signers.yaml" $((16 * 1024 * 1024))
expect 0 - -- bd -C "$small" verify bulk
pad "$small/bench/trusted-signers.yaml" $((16 * 1024 * 1024 + 1))
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "yaml.too_large: .*16777216-byte (16384 KiB) limit for trusted-signers.yaml" <<<"$out" &&
    pass "trusted-signers.yaml: 16 MiB + 1 refused, naming its limit" || fail "signers: $out"
cp "$BD_TMP/signers.orig" "$small/bench/trusted-signers.yaml"

# Every other kind keeps 1 MiB.
c1="$tc/cases/$(ls "$tc/cases" | grep -v digests | sed -n 1p)"
cp "$c1/case.yaml" "$BD_TMP/case.orig"
pad "$c1/case.yaml" $((1024 * 1024))
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "too_large" <<<"$out" && fail "case.yaml of exactly 1 MiB refused: $out" ||
    pass "case.yaml of exactly 1 MiB is read"
pad "$c1/case.yaml" $((1024 * 1024 + 1))
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "yaml.too_large: .*1048576-byte (1024 KiB) limit for YAML files" <<<"$out" &&
    pass "case.yaml of 1 MiB + 1 refused, naming its limit" || fail "case.yaml: $out"
cp "$BD_TMP/case.orig" "$c1/case.yaml"
cp "$tc/registration.yaml" "$BD_TMP/reg.orig"
pad "$tc/registration.yaml" $((1024 * 1024 + 1))
expect 2 yaml.too_large -- bd -C "$small" verify bulk
cp "$BD_TMP/reg.orig" "$tc/registration.yaml"
expect 0 - -- bd -C "$small" verify bulk

# ---- temp files never inside a hashed scope ------------------------------------------------
# Every file created while pinning (a cassette change rewrites case.yaml), scaffolding and
# signing, as the kernel saw it: nothing but the final names may appear in a case dir.
if command -v strace >/dev/null; then
    c2="$tc/cases/$(ls "$tc/cases" | grep -v digests | sed -n 2p)"
    echo '{"output": 43}' >"$c2/cassette.json" # pin rewrites case.yaml's cassette_digest (a draft)
    fpr_a=$(gpg --homedir "$keys" --batch --with-colons --fingerprint "<alice@bench.example>" 2>/dev/null |
        awk -F: '$1=="fpr" {print $10; exit}')
    c3="$tc/cases/$(ls "$tc/cases" | grep -v digests | sed -n 3p)"
    : >"$BD_TMP/trace"
    # LeakSanitizer cannot run under ptrace; everything else of the test build still does.
    saved_asan=${ASAN_OPTIONS:-}
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
    GNUPGHOME="$keys" strace -f -qq -e trace=openat,open,creat,rename,renameat,renameat2,linkat,mkdir \
        -o "$BD_TMP/trace.pin" "$BD_BIN" -C "$small" pin bulk >/dev/null 2>&1 ||
        fail "pin under strace"
    GNUPGHOME="$keys" strace -f -qq -e trace=openat,open,creat,rename,renameat,renameat2,linkat,mkdir \
        -o "$BD_TMP/trace.new" "$BD_BIN" -C "$small" case new bulk scaffolded >/dev/null 2>&1 ||
        fail "case new under strace"
    GNUPGHOME="$keys" strace -f -qq -e trace=openat,open,creat,rename,renameat,renameat2,linkat,mkdir \
        -o "$BD_TMP/trace.sign" "$BD_BIN" -C "$small" sign "$c3" --role author --key "$fpr_a" \
        >/dev/null 2>&1 || true
    export ASAN_OPTIONS="$saved_asan"
    cat "$BD_TMP"/trace.pin "$BD_TMP"/trace.new "$BD_TMP"/trace.sign >"$BD_TMP/trace"
    # Paths created (O_CREAT) or renamed from, below cases/<id>/, other than final names.
    bad=$(python3 - "$BD_TMP/trace" "$tc/cases" <<'PY'
import re, sys
trace, cases = sys.argv[1], sys.argv[2].rstrip("/") + "/"
finals = {"case.yaml", "provenance.yaml", "cassette.json"}
bad = []
for line in open(trace, errors="replace"):
    paths = re.findall(r'"([^"]*)"', line)
    creating = "O_CREAT" in line or "rename" in line or "link" in line
    if not creating:
        continue
    for p in paths:
        if not p.startswith(cases):
            continue
        rel = p[len(cases):]
        parts = rel.split("/")
        if len(parts) < 2:
            continue  # cases/<file>: outside every case dir
        if "mkdir" in line and len(parts) == 2:
            continue  # a new case dir
        if len(parts) == 2 and parts[1] in finals and "O_CREAT" not in line:
            continue  # the rename target
        if "mkdir" in line and parts[-1] in ("input", "expected"):
            continue
        bad.append(line.strip())
print("\n".join(bad))
PY
    )
    [ -z "$bad" ] && pass "pin, case new and sign create no temp file inside a case dir" ||
        fail "temp files in a case dir: $bad"
    grep -q "rename.*\.benchdesk-tmp\." "$BD_TMP/trace" && pass "writes went through temp files in cases/" ||
        fail "no atomic write seen in the trace"
else
    echo "SKIP (part): strace is not installed: the temp-file placement check did not run"
fi
expect 0 - -- bd -C "$small" pin bulk

# ---- leftovers from an interrupted write: reported, never hashed ---------------------------
before=$(cat "$tc/cases/digests.yaml")
printf 'schema_version: 2\n' >"$c1/case.yaml.4242.tmp"
expect 1 case.leftover_temp -- bd -C "$small" verify bulk
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "case.yaml.4242.tmp' is a temporary file left by an interrupted write" <<<"$out" &&
    pass "verify names the leftover and what to do" || fail "verify: $out"
expect 1 case.leftover_temp -- bd -C "$small" pin bulk
[ "$(cat "$tc/cases/digests.yaml")" = "$before" ] && pass "pin wrote nothing with a leftover present" ||
    fail "pin rewrote digests.yaml over a leftover"
rm "$c1/case.yaml.4242.tmp"
: >"$c1/.benchdesk-tmp.provenance.yaml.99.Ab12Cd"
expect 1 case.leftover_temp -- bd -C "$small" verify bulk
rm "$c1/.benchdesk-tmp.provenance.yaml.99.Ab12Cd"
# One left in cases/ (where writes now put them) is outside every case: not a case, no failure.
: >"$tc/cases/.benchdesk-tmp.digests.yaml.99.Zz12Zz"
expect 0 - -- bd -C "$small" verify bulk
rm "$tc/cases/.benchdesk-tmp.digests.yaml.99.Zz12Zz"

# ---- messages that say what is true ------------------------------------------------------
mv "$c1/case.yaml" "$BD_TMP/case.yaml.saved"
mkdir "$c1/case.yaml"
expect 2 case.schema_invalid -- bd -C "$small" verify bulk
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "case.yaml: is a directory; it must be a regular YAML file" <<<"$out" &&
    pass "case.yaml as a directory: invalid input (exit 2), said as such" || fail "case.yaml dir: $out"
rmdir "$c1/case.yaml"
mv "$BD_TMP/case.yaml.saved" "$c1/case.yaml"
mkdir -p "$small/.benchdesk/history"
chmod 777 "$small/.benchdesk/history"
out=$(bd -C "$small" verify bulk 2>&1 || true)
grep -q "^benchdesk: warning: .*/.benchdesk/history is writable by every user (mode 777)" <<<"$out" &&
    pass "verify warns about a world-writable history dir" || fail "no warning: $out"
chmod 755 "$small/.benchdesk/history"
mv "$small/.benchdesk" "$BD_TMP/state.saved"
: >"$small/.benchdesk"
out=$(bd -C "$small" sign "$c1" --role author --key 0000000000000000000000000000000000000000 2>&1 || true)
grep -q "config.yaml" <<<"$out" && fail "a config.yaml that does not exist is named: $out" ||
    pass "an unusable .benchdesk is named, not config.yaml"
rm "$small/.benchdesk"
mv "$BD_TMP/state.saved" "$small/.benchdesk"

# ---- private GnuPG homes: SIGTERM during verify and during sign, sweep --------------------
homes() { find "$TMPDIR" -maxdepth 1 -name 'benchdesk-gnupg-*' | wc -l; }
sig="$BD_TMP/sig"
SIGNED=6 gen "$sig" 6 >/dev/null 2>&1 || fail "generating a signed bench"
for signal in TERM HUP; do
    "$BD_BIN" -C "$sig" verify >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 200); do
        [ "$(homes)" -gt 0 ] && break
        sleep 0.05
    done
    seen=$(homes)
    kill -"$signal" "$pid" 2>/dev/null || true
    rc=0
    wait "$pid" || rc=$?
    if [ "$seen" -gt 0 ] && [ "$(homes)" = 0 ]; then
        pass "SIG$signal during verify (exit $rc): the private GnuPG home is gone"
    else
        fail "SIG$signal during verify: seen $seen homes, $(homes) left: $(ls "$TMPDIR")"
    fi
done

# Sign as reviewer with a passphrase-protected key whose pinentry never answers: the author
# signature is verified first (in a private home), then signing waits on gpg-agent.
cat >"$BD_TMP/pinentry" <<SH
#!/bin/sh
echo \$\$ >"$pinentry_pid"
exec sleep 60
SH
chmod +x "$BD_TMP/pinentry"
gpg --homedir "$keys" --batch --quiet --pinentry-mode loopback --passphrase 'secret' \
    --quick-gen-key "Carol <carol@bench.example>" ed25519 sign never 2>/dev/null
carol=$(gpg --homedir "$keys" --batch --with-colons --fingerprint "<carol@bench.example>" 2>/dev/null |
    awk -F: '$1=="fpr" {print $10; exit}')
gpg --homedir "$keys" --batch --armor --export "$carol" 2>/dev/null >"$sig/bench/keys/carol.asc"
echo "  - {fingerprint: $carol, identity: carol@bench.example, roles: [author, reviewer]}" \
    >>"$sig/bench/trusted-signers.yaml"
echo "pinentry-program $BD_TMP/pinentry" >"$keys/gpg-agent.conf"
gpgconf --homedir "$keys" --kill gpg-agent >/dev/null 2>&1 || true
alice=$(gpg --homedir "$keys" --batch --with-colons --fingerprint "<alice@bench.example>" 2>/dev/null |
    awk -F: '$1=="fpr" {print $10; exit}')
case_dir=$(ls -d "$sig"/bench/bulk/cases/*/ | tail -1)
rm -f "$case_dir/provenance.yaml"
GNUPGHOME="$keys" "$BD_BIN" -C "$sig" sign "$case_dir" --role author --key "$alice" >/dev/null 2>&1 ||
    fail "author signature for the sign test"
GNUPGHOME="$keys" "$BD_BIN" -C "$sig" sign "$case_dir" --role reviewer --key "$carol" >/dev/null 2>&1 </dev/null &
pid=$!
for _ in $(seq 1 300); do
    [ -s "$pinentry_pid" ] && break
    sleep 0.05
done
seen=$(homes)
kill -TERM "$pid" 2>/dev/null || true
rc=0
wait "$pid" || rc=$?
if [ -s "$pinentry_pid" ] && [ "$seen" -gt 0 ] && [ "$(homes)" = 0 ]; then
    pass "SIGTERM during sign (exit $rc, waiting on the passphrase): the private home is gone"
elif [ ! -s "$pinentry_pid" ]; then
    fail "sign never reached the passphrase prompt (exit $rc)"
else
    fail "SIGTERM during sign: seen $seen homes, $(homes) left"
fi

# SIGKILL cannot be caught: the next start sweeps a dead owner's home, never a live one's.
mkdir -p "$TMPDIR/benchdesk-gnupg-p999999s1-deadbe/public-keys.d"
: >"$TMPDIR/benchdesk-gnupg-p999999s1-deadbe/pubring.kbx"
start=$(awk '{print $22}' "/proc/$$/stat")
mkdir "$TMPDIR/benchdesk-gnupg-p$$s$start-alive1"
expect 0 - -- bd -C "$sig" verify bulk
[ ! -e "$TMPDIR/benchdesk-gnupg-p999999s1-deadbe" ] && pass "a dead owner's home is swept" ||
    fail "a dead owner's home was left"
[ -d "$TMPDIR/benchdesk-gnupg-p$$s$start-alive1" ] && pass "a live owner's home is kept" ||
    fail "a live owner's home was swept"
rmdir "$TMPDIR/benchdesk-gnupg-p$$s$start-alive1"

finish
