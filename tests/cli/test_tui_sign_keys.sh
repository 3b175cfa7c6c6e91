#!/usr/bin/env bash
# Keys typed while GnuPG signs are GnuPG's, never benchdesk's (docs/user-guide.md, the
# sign view): with gpg-agent's own pinentry chosen (`l`), a pinentry that takes four
# seconds to answer holds the signature open; the keys typed meanwhile — q, r, Q, j, the
# start of a passphrase — neither leave the view, nor start a run, nor quit, and are not
# taken as commands once the signature is made.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"
bd() { "$BD_BIN" "$@"; }

for tool in gpg gpgconf gpg-agent; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed; this test needs it"; exit 77; }
done

export GNUPGHOME="$BD_TMP/gnupg"
mkdir -m 700 -p "$GNUPGHOME"
trap 'gpgconf --homedir "$GNUPGHOME" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT

# A pinentry that answers GETPIN after four seconds: the window in which keys are typed.
pin="$BD_TMP/slow-pinentry"
cat >"$pin" <<'SH'
#!/bin/sh
echo "OK Pleased to meet you"
while read -r cmd _; do
    case $cmd in
    GETPIN) sleep 4; echo "D s3cret"; echo "OK" ;;
    BYE) echo "OK"; exit 0 ;;
    *) echo "OK" ;;
    esac
done
SH
chmod +x "$pin"
printf 'pinentry-program %s\n' "$pin" >"$GNUPGHOME/gpg-agent.conf"

gpg --batch --no-tty --quiet --pinentry-mode loopback --passphrase 's3cret' \
    --quick-gen-key "Tess Tester <tess@bench.example>" ed25519 sign 1y 2>/dev/null ||
    { fail "gpg could not generate a key"; finish; }
fpr=$(gpg --batch --with-colons --fingerprint tess@bench.example | awk -F: '$1=="fpr" {print $10; exit}')
[ ${#fpr} = 40 ] && pass "a key with a passphrase: $fpr" || { fail "no fingerprint: '$fpr'"; finish; }
gpgconf --homedir "$GNUPGHOME" --kill gpg-agent # nothing cached: the pinentry must answer

root=$(demo_pinned)
gpg --batch --armor --export "$fpr" >"$root/bench/keys/tess.asc"
printf '  - {fingerprint: %s, identity: tess@bench.example, roles: [author]}\n' "$fpr" \
    >>"$root/bench/trusted-signers.yaml"
case_id=$(bd -C "$root" list vuln-remediation --json | python3 -c '
import json, sys
print(next(c["case_id"] for c in json.load(sys.stdin)["cases"] if c["provenance"] == "draft"))')
[ -n "$case_id" ] && pass "draft case $case_id" || { fail "no draft case in the demo bench"; finish; }
prov="$root/bench/vuln-remediation/cases/$case_id/provenance.yaml"

tui_start 100 30
TUI_ENV="GNUPGHOME=$GNUPGHOME"
tui_open -C "$root"
tui_open_cases vuln
tui_keys /
tui_type "$case_id"
tui_keys Enter
expect_screen "1/1 (of " "the draft case is the only row left"
tui_keys Enter
expect_screen_re "status +draft" "the case view of the draft"
tui_keys P
expect_screen "Enter: sign $case_id as author" "P opens the sign view"
tui_keys l
expect_screen "gpg-agent's pinentry" "l hands the passphrase to gpg-agent's pinentry"
tui_keys Enter
expect_screen "signing" "Enter starts the signature"
# The window: the pinentry sleeps; these keys would leave, run, quit, move.
tui_type "qq"
tui_keys r
tui_type "Q"
tui_keys j j y
sleep 0.5
if grep -q "run vuln-remediation" <<<"$(tui_cap)"; then
    fail "a key typed during the signature started a run:
$(tui_cap)"
else
    pass "no run started while GnuPG signs"
fi
expect_screen_re "status +awaiting_review" "the signature is made and the case view shows it"
expect_screen "signed $case_id as author" "the status line says what was signed"
[ -f "$prov" ] && grep -q '^author:$' "$prov" && pass "the author block is written" ||
    fail "no author block in $prov"
# What was typed is gone, not queued: the view stays as it is.
sleep 1
screen=$(tui_cap)
if grep -qE "^EXIT$TUI_N=" <<<"$screen"; then
    fail "a key typed during the signature quit benchdesk:
$screen"
elif grep -q "run vuln-remediation" <<<"$screen"; then
    fail "a key typed during the signature started a run afterwards:
$screen"
elif grep -qE "status +awaiting_review" <<<"$screen"; then
    pass "the keys typed for GnuPG were discarded, not taken as commands"
else
    fail "the view moved after the signature:
$screen"
fi
tui_keys m
expect_screen "Messages, newest first" "m still works afterwards"
if grep -qE "run (started|vuln)|a run is" <<<"$TUI_LAST"; then
    fail "the message log shows a run:
$TUI_LAST"
else
    pass "the message log shows no run"
fi
tui_keys q q q q q
tui_expect_exit 0 "q from the first view"
tui_expect_clean_stderr "keys during signing"
finish
