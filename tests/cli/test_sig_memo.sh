#!/usr/bin/env bash
# This user's signature memo (docs/provenance.md#verifying-many-signatures): a verdict of
# GnuPG's is remembered outside the bench, authenticated with the user's own secret; a
# second `verify` asks GnuPG nothing it already answered; `verify --full` neither reads nor
# writes it; altered entries are not believed; a signature moved to another role or a
# changed key file is checked again by GnuPG, memo or not.
. "$(dirname "$0")/lib.sh"
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -p "$HOME"
root=$(demo_copy)
bd() { "$BD_BIN" -C "$root" "$@"; }
memo="$XDG_STATE_HOME/benchdesk/sig-memo"
entries="$memo/entries"
# size: the bytes of the signature and case-verdict records (a case's stamps and shape,
# written once its files have settled for 2 s, are test_unchanged_cases.sh's to count).
size() { echo $((176 * $(memo_records "$entries" sig case))); }

# --full first: nothing is written.
expect 0 - -- bd verify --full
if [ "$(size)" = 0 ]; then pass "verify --full writes no memo"; else fail "verify --full wrote $(size) bytes"; fi

expect 0 - -- bd verify
first=$(size)
if [ "$first" -gt 0 ] && [ $((first % 176)) = 0 ]; then
    pass "verify remembered $((first / 176)) signatures"
else
    fail "memo after the first verify: $first bytes"
fi
mode=$(stat -c %a "$memo"); kmode=$(stat -c %a "$memo/key"); emode=$(stat -c %a "$entries")
if [ "$mode" = 700 ] && [ "$kmode" = 600 ] && [ "$emode" = 600 ]; then
    pass "the memo is the user's alone (700/600/600)"
else
    fail "memo modes: dir $mode key $kmode entries $emode"
fi
expect 0 - -- bd verify
if [ "$(size)" = "$first" ]; then pass "a second verify asked GnuPG nothing new"; else fail "second verify grew the memo to $(size)"; fi
# With every signature in the memo, no GnuPG process starts at all: not gpg, and not the
# five GPGME runs to learn its engines (gpgconf twice, each engine's --version). Traced
# without the leak check, whose own ptrace cannot run under strace.
traced_execs() { # ARGS... -> the programs `benchdesk ARGS` started (itself first), one a line
    ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -e trace=execve \
        -o "$BD_TMP/exec.log" "$BD_BIN" -C "$root" "$@" >/dev/null 2>&1 || echo "exit $?"
    sed -nE 's/^[0-9]+ +execve\("([^"]+)".*= 0$/\1/p' "$BD_TMP/exec.log"
}
if command -v strace >/dev/null; then
    started=$(traced_execs verify)
    [ "$started" = "$BD_BIN" ] && pass "a warm verify starts no GnuPG process" ||
        fail "a warm verify started: $(tr '\n' ' ' <<<"$started")"
    grep -qx '.*/gpg' <<<"$(traced_execs verify --full)" && pass "verify --full starts gpg (the trace sees it)" ||
        fail "verify --full started no gpg under the trace"
else
    fail "strace is not installed: cannot check which processes a warm verify starts"
fi
expect 0 - -- bd verify --full
if [ "$(size)" = "$first" ]; then pass "verify --full left the memo alone"; else fail "verify --full changed the memo"; fi

# Every entry's tag broken (one byte of each record's verdict): none is believed, every
# signature goes to GnuPG again and is remembered anew.
python3 - "$entries" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
for off in range(0, len(b), 176):
    b[off + 40] ^= 0x5A
open(p, "wb").write(b)
PY
expect 0 - -- bd verify
if [ "$(size)" = $((2 * first)) ]; then pass "altered entries were not believed (all checked again)"; else fail "after altering: $(size), wanted $((2 * first))"; fi

# A signature moved to the other role: never good, warm memo or not.
c=$(ls -d "$root"/bench/vuln-remediation/cases/*/ | head -1)
python3 - "$c/provenance.yaml" <<'PY'
import re, sys
p = sys.argv[1]
s = open(p).read()
sigs = re.findall(r"-----BEGIN PGP SIGNATURE-----.*?-----END PGP SIGNATURE-----", s, re.S)
assert len(sigs) == 2, sigs
a, r = sigs
s = s.replace(a, "@@A@@").replace(r, a).replace("@@A@@", r)
open(p, "w").write(s)
PY
out=$(bd verify vuln-remediation 2>&1) && rc=0 || rc=$?
if [ "$rc" != 0 ] && grep -q 'provenance.bad_signature' <<<"$out"; then
    pass "swapped signatures are bad with a warm memo"
else
    fail "swapped signatures: exit $rc: $out"
fi
cp "$BD_SOURCE_DIR/bench/vuln-remediation/cases/$(basename "$c")/provenance.yaml" "$c/provenance.yaml"

# Another key file in bench/keys/: a new context, so every signature is checked again.
before=$(size)
cp "$(ls "$root"/bench/keys/*.asc | head -1)" "$root/bench/keys/zz-copy.asc"
expect 0 - -- bd verify
if [ "$(size)" -gt "$before" ]; then pass "a changed bench/keys/ is checked by GnuPG again"; else fail "bench/keys/ changed but the memo answered"; fi
finish
