#!/usr/bin/env bash
# `benchdesk migrate` (docs/formats.md) on a committed format-v1 bench (tests/fixtures/v1bench:
# one task class, two cases, signatures inside case.yaml, digests.yaml pinning `rubric`):
# v2 refuses it with bench.format_v1 naming the command; migrate converts it, says every
# signature must be made again, and the result verifies as unsigned drafts with pins an
# independent reference agrees with; a second migrate changes nothing; garbage is refused
# and nothing is written.
. "$(dirname "$0")/lib.sh"
bd() { TMPDIR="$BD_TMP" "$BD_BIN" "$@"; }
TC=vuln-remediation
REF="$BD_SOURCE_DIR/tests/kat/case_digest.py"

root="$BD_TMP/v1"
mkdir -p "$root"
cp -a "$BD_SOURCE_DIR/tests/fixtures/v1bench/bench" "$root/bench"
mkdir -p "$BD_TMP/v1.pristine"
cp -a "$root/bench" "$BD_TMP/v1.pristine/bench"
tree_sum() { (cd "$1" && find bench -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum); }

# ---- v2 refuses a v1 bench, naming the one command that converts it --------------------
for cmd in "verify" "list $TC" "run $TC --drafts" "verify $TC"; do
    # shellcheck disable=SC2086
    expect 2 bench.format_v1 -- bd -C "$root" $cmd
done
out=$(bd -C "$root" verify 2>&1 >/dev/null || true)
grep -q "benchdesk migrate" <<<"$out" && pass "the refusal names benchdesk migrate" || fail "refusal: $out"
[ "$(tree_sum "$root")" = "$(tree_sum "$BD_TMP/v1.pristine")" ] && pass "refusals wrote nothing" ||
    fail "a refusal changed the bench"

# ---- migrate -----------------------------------------------------------------------------
out=$(bd -C "$root" migrate 2>&1) && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "migrate -> 0" || fail "migrate -> $rc: $out"
grep -qi "sign every task class and every case again" <<<"$out" &&
    pass "migrate says every signature must be made again" || fail "migrate output: $out"
grep -q "converted 1 task class and 2 cases" <<<"$out" && pass "migrate counts what it converted" ||
    fail "migrate output: $out"

# The files are v2: case.yaml hashed and free of signatures, pins in digests.yaml only.
cd_dir="$root/bench/$TC/cases"
for id in ghsa-demo-0001-axios-csrf-token-leak ghsa-demo-0018-semver-redos; do
    y="$cd_dir/$id/case.yaml"
    grep -q '^schema_version: 2$' "$y" && grep -q '^origin:$' "$y" && ! grep -qE '^provenance:|^case_digest:|added_by|reviewed_by|PGP' "$y" &&
        pass "$id: case.yaml is v2 and holds no signature" || fail "$id: case.yaml: $(head -12 "$y")"
    want=$(python3 "$REF" "$cd_dir/$id")
    pin=$(awk -v id="$id" '$1 == id":" {print $2}' "$cd_dir/digests.yaml")
    [ "$pin" = "$want" ] && pass "$id: pin = independent v2 digest" || fail "$id: pin $pin, reference $want"
    if [ -e "$cd_dir/$id/provenance.yaml" ]; then
        ! grep -qE '^(author|reviewer):' "$cd_dir/$id/provenance.yaml" &&
            pass "$id: no v1 signature carried over" || fail "$id: a signature was carried over"
    else
        pass "$id: no v1 signature carried over (no provenance.yaml)"
    fi
done
grep -q '^schema_version: 2$' "$root/bench/$TC/registration.yaml" && pass "registration.yaml is v2" ||
    fail "registration.yaml: $(head -2 "$root/bench/$TC/registration.yaml")"
grep -q '^rubric:' "$cd_dir/digests.yaml" && fail "digests.yaml still pins rubric" || pass "no v1 rubric pin"
tcpin=$(awk '$1 == "task_class:" {print $2}' "$cd_dir/digests.yaml")
[ "$tcpin" = "$(python3 "$REF" "$root/bench/$TC")" ] && pass "task-class pin = independent v2 digest" ||
    fail "task-class pin $tcpin"

# The result verifies, unsigned: every subject a draft; a default run is refused (exit 3).
expect 0 - -- bd -C "$root" verify
bd -C "$root" list "$TC" --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert all(c["provenance"] == "draft" for c in d["cases"]) and len(d["cases"]) == 2, d["cases"]' &&
    pass "every migrated case is a draft" || fail "migrated cases are not drafts"
bd -C "$root" verify "$TC" --json | python3 -c '
import json, sys
t = json.load(sys.stdin)["task_classes"][0]
assert t["task_class_provenance"] == "draft" and t["ok"], t' &&
    pass "the migrated task class is a draft" || fail "migrated task class status"
expect 3 provenance.missing -- bd -C "$root" run "$TC" --isolation subprocess

# ---- idempotent -------------------------------------------------------------------------
before=$(tree_sum "$root")
out=$(bd -C "$root" migrate 2>&1) && rc=0 || rc=$?
[ "$rc" = 0 ] && pass "migrate again -> 0" || fail "migrate again -> $rc: $out"
[ "$(tree_sum "$root")" = "$before" ] && pass "migrate again changes nothing" || fail "migrate again changed files"
expect 0 - -- bd -C "$root" verify "$TC"

# ---- garbage is refused, nothing written ---------------------------------------------------
bad="$BD_TMP/bad"
mkdir -p "$bad"
cp -a "$BD_TMP/v1.pristine/bench" "$bad/bench"
printf 'schema_version: 1\ncase_id: [unclosed\n' >"$bad/bench/$TC/cases/ghsa-demo-0018-semver-redos/case.yaml"
before=$(tree_sum "$bad")
out=$(bd -C "$bad" migrate 2>&1 >/dev/null) && rc=0 || rc=$?
[ "$rc" = 2 ] && grep -q '^benchdesk: yaml\.' <<<"$out" && pass "malformed v1 case.yaml refused ($out)" ||
    fail "garbage: rc $rc: $out"
[ "$(tree_sum "$bad")" = "$before" ] && pass "the refused migrate wrote nothing" || fail "the refused migrate wrote"
rm -rf "$bad/bench" && cp -a "$BD_TMP/v1.pristine/bench" "$bad/bench"
printf 'frobnicate: 1\n' >>"$bad/bench/$TC/registration.yaml"
before=$(tree_sum "$bad")
out=$(bd -C "$bad" migrate 2>&1 >/dev/null) && rc=0 || rc=$?
[ "$rc" = 2 ] && [ "$(tree_sum "$bad")" = "$before" ] &&
    pass "a registration with an unknown key is refused, nothing written" ||
    fail "garbage registration: rc $rc: $out"
expect 2 bench.not_found -- bd -C "$BD_TMP/nowhere" migrate
finish
