#!/usr/bin/env bash
# The TUI's sign and stage views (docs/provenance.md, docs/provenance.md#staging-and-committing, docs/user-guide.md), driven through tmux: a draft
# case of a copy of the demo bench, in a fresh git repository, is signed as author in the
# sign view with a throwaway ed25519 key (no passphrase), shows "awaiting review" in the
# case view, is staged with `u` in the stage view and committed, signed, with `C`; git
# itself then checks the commit.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/tui/lib.sh"
bd() { "$BD_BIN" "$@"; }

for tool in gpg gpgconf git; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed; this test needs it"; exit 0; }
done

# A throwaway GnuPG home with one signing key and no passphrase.
export GNUPGHOME="$BD_TMP/gnupg"
mkdir -m 700 -p "$GNUPGHOME"
trap 'gpgconf --homedir "$GNUPGHOME" --kill all >/dev/null 2>&1 || true; _tui_cleanup' EXIT
gpg --batch --no-tty --quiet --pinentry-mode loopback --passphrase '' \
    --quick-gen-key "Tess Tester <tess@bench.example>" ed25519 sign 1y 2>/dev/null ||
    { fail "gpg could not generate a key"; finish; }
fpr=$(gpg --batch --with-colons --fingerprint tess@bench.example | awk -F: '$1=="fpr" {print $10; exit}')
[ ${#fpr} = 40 ] && pass "throwaway key $fpr" || { fail "no fingerprint: '$fpr'"; finish; }

# A reviewer's key with a passphrase, asked by benchdesk's own masked line (loopback).
gpg --batch --no-tty --quiet --pinentry-mode loopback --passphrase 's3cret' \
    --quick-gen-key "Rex Reviewer <rex@bench.example>" ed25519 sign 1y 2>/dev/null ||
    { fail "gpg could not generate the reviewer's key"; finish; }
rfpr=$(gpg --batch --with-colons --fingerprint rex@bench.example | awk -F: '$1=="fpr" {print $10; exit}')
gpgconf --homedir "$GNUPGHOME" --kill gpg-agent # no cached passphrase

# The demo bench, trusting those keys, committed in a new repository.
root=$(demo_pinned)
gpg --batch --armor --export "$fpr" >"$root/bench/keys/tess.asc"
printf '  - {fingerprint: %s, identity: tess@bench.example, roles: [author, reviewer]}\n' "$fpr" \
    >>"$root/bench/trusted-signers.yaml"
gpg --batch --armor --export "$rfpr" >"$root/bench/keys/rex.asc"
printf '  - {fingerprint: %s, identity: rex@bench.example, roles: [reviewer]}\n' "$rfpr" \
    >>"$root/bench/trusted-signers.yaml"
bd -C "$root" verify >/dev/null 2>&1 && pass "the bench verifies with the new signer" ||
    fail "the bench does not verify: $(bd -C "$root" verify 2>&1 | tail -3)"
git -C "$root" init -q -b main
git -C "$root" config user.name "Tess Tester"
git -C "$root" config user.email tess@bench.example
git -C "$root" add -A && git -C "$root" commit -q -m "demo bench" && pass "bench committed" ||
    fail "cannot commit the bench"

case_id=$(bd -C "$root" list vuln-remediation --json | python3 -c '
import json, sys
print(next(c["case_id"] for c in json.load(sys.stdin)["cases"] if c["provenance"] == "draft"))')
# Signatures live in the case's provenance.yaml (format v2), which a draft does not have yet.
rel="bench/vuln-remediation/cases/$case_id/provenance.yaml"
caserel="bench/vuln-remediation/cases/$case_id/case.yaml"
[ ! -e "$root/$rel" ] && pass "a draft has no provenance.yaml" || fail "the draft has $rel"
[ -n "$case_id" ] && pass "draft case $case_id" || fail "no draft case in the demo bench"

tui_start 100 30
TUI_ENV="GNUPGHOME=$GNUPGHOME"
tui_open -C "$root"
tui_open_cases vuln
tui_keys /
tui_type "$case_id"
tui_keys Enter
expect_screen "1/1 (of " "the draft case is the only row left"
tui_keys Enter
expect_screen "Provenance" "the case view opens"
expect_screen_re "status +draft" "the case is a draft"

# The sign view: the exact message, the key, the role.
tui_keys P
expect_screen "message to be signed" "P opens the sign view"
expect_screen "digest: blake3:" "the message is prepared"
expect_screen "benchdesk-provenance-v2" "the message's first line"
expect_screen "subject: case" "the kind of subject is in the message"
expect_screen "task_class: vuln-remediation" "the task class is in the message"
expect_screen "role: author" "the role is in the message"
expect_screen "case_id: $case_id" "the case id is in the message"
expect_screen "$fpr" "the key picker lists the secret key"
expect_screen "Enter: sign $case_id as author with tess@bench.example" "Enter says what it will do"
sign_pane=$(tui_cap)
tui_keys t
expect_screen "provenance.missing" "a draft cannot be reviewed"
tui_keys Enter
expect_screen_re "status +awaiting_review" "after signing, the case view shows awaiting review"
expect_screen "good signature by a trusted author" "the new signature verifies"
expect_screen "signed $case_id as author" "the status line says what was signed"
grep -q '^author:$' "$root/$rel" && pass "author block written into provenance.yaml" || fail "no author block"
git -C "$root" diff --quiet -- "$caserel" && pass "case.yaml untouched by signing" || fail "case.yaml changed"
bd -C "$root" list vuln-remediation --json | python3 -c '
import json, sys
c = next(c for c in json.load(sys.stdin)["cases"] if c["case_id"] == sys.argv[1])
assert c["provenance"] == "awaiting_review", c' "$case_id" &&
    pass "benchdesk list agrees: awaiting_review" || fail "benchdesk list disagrees"

# The stage view: stage the new provenance.yaml with u, commit with C, signed (Tab).
tui_keys w
expect_screen "git status of bench/ and audit/" "w opens the stage view"
expect_screen "Untracked files:" "untracked files listed"
expect_screen "? $rel" "the new provenance.yaml is untracked"
tui_keys u
expect_screen "staged $rel" "u stages the selected path"
expect_screen_re "1 staged, 0 unstaged, 0 untracked" "the status is read again"
stage_pane=$(tui_cap)
tui_keys C
expect_screen "Enter commit" "C opens the commit message editor"
tui_type "Sign $case_id as author"
tui_keys Tab
expect_screen "signed: YES" "Tab turns signing on"
editor_pane=$(tui_cap)
tui_keys Enter
expect_screen_re "committed [0-9a-f]{7} on main, signed by $fpr" "Enter commits, signed"
expect_screen "0 staged, 0 unstaged, 0 untracked" "nothing left to commit"
tui_keys C Enter
expect_screen "usage.bad_args: the commit message is empty" "an empty message is refused with its code"
tui_type "again"
tui_keys Enter
expect_screen "git.nothing_to_commit" "committing again is refused with its code"
# Esc alone (an Esc followed at once by q would be Alt-q, which the TUI ignores).
tui_keys Escape
sleep 0.5
tui_keys q
expect_screen_re "status +awaiting_review" "q goes back to the case view"

# The review: a second key, its passphrase typed into benchdesk's masked line.
tui_keys P
expect_screen "sign as reviewer" "an authored case opens the sign view as reviewer"
tui_wait_re "provenance.same_signer|Enter: sign" >/dev/null
tui_keys G
expect_screen "Enter: sign $case_id as reviewer with rex@bench.example" "the reviewer's key picked"
expect_screen "role: reviewer" "the reviewer's message"
tui_keys Enter
expect_screen "Passphrase for" "benchdesk asks the passphrase itself"
tui_type "wrong"
expect_screen "*****" "the passphrase line is masked"
tui_keys Enter
expect_screen "gpg.sign_failed" "a wrong passphrase fails with its code"
expect_screen "Enter: sign $case_id as reviewer" "the message stays, ready to try again"
tui_keys Enter
expect_screen "Passphrase for" "Enter asks again"
tui_type "s3cret"
if grep -q "s3cret" <<<"$(tui_cap)"; then fail "the passphrase shows on screen"; else pass "the passphrase never shows"; fi
tui_keys Enter
expect_screen_re "status +signed" "after the review the case is signed"
expect_screen "good signature by a trusted reviewer" "the review verifies"
tui_keys q q q q
tui_expect_exit 0 "q from the first view"
tui_expect_clean_stderr "sign and stage"

subject=$(git -C "$root" log -1 --format=%s)
[ "$subject" = "Sign $case_id as author" ] && pass "git log -1: the message" ||
    fail "git log -1: '$subject'"
stat=$(git -C "$root" show --stat=400 --format= HEAD)
if grep -qF "$rel" <<<"$stat" && [ "$(grep -c '|' <<<"$stat")" = 1 ]; then
    pass "git show --stat: the commit holds exactly the provenance.yaml"
else
    fail "git show --stat: $stat"
fi
git -C "$root" show "HEAD:$rel" | grep -q 'BEGIN PGP SIGNATURE' &&
    pass "the committed provenance.yaml carries the signature" || fail "no signature committed"
git -C "$root" show "HEAD:$rel" | grep -qF "fingerprint: $fpr" &&
    pass "the committed provenance.yaml names the signer" || fail "signer not committed"
git -C "$root" verify-commit HEAD 2>/dev/null && pass "git verify-commit accepts the commit" ||
    fail "git verify-commit refuses the commit"

# Panes for docs/provenance.md (BD_TUI_PANES=DIR keeps them).
if [ -n "${BD_TUI_PANES:-}" ]; then
    mkdir -p "$BD_TUI_PANES"
    printf '%s\n' "$sign_pane" | tui_mask "$root" >"$BD_TUI_PANES/sign.txt"
    printf '%s\n' "$stage_pane" | tui_mask "$root" >"$BD_TUI_PANES/stage.txt"
    printf '%s\n' "$editor_pane" | tui_mask "$root" >"$BD_TUI_PANES/commit.txt"
fi
finish
