#!/usr/bin/env bash
# `benchdesk verdict` and verify's check of verdict files (docs/provenance.md#verdicts), with
# throwaway keys made by the test: the exact signed message checked by gpg itself, score_id
# against an independent BLAKE3 (b3sum over Python's canonical JSON), the exit codes, and
# forged files — a signature over another verdict word, a subject not in the history, a
# replayed file, untrusted / revoked keys (shown, never a failure).
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
command -v b3sum >/dev/null || { echo "skipped: b3sum is not installed"; exit 77; }
gpg_keys
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state" TMPDIR="$BD_TMP/tmp"
mkdir -p "$HOME" "$TMPDIR"

root="$BD_TMP/bench"
mini_bench "$root" alice bob carol mallory eve
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
pins="$root/bench/tc/cases/digests.yaml"
T=$(awk '$1 == "task_class:" {print $2}' "$pins")
gen() { # case passed [failure_mode]
    local fm=${3:+,\"failure_mode\":\"$3\"}
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$hist" \
        "{\"task_class\":\"tc\",\"case_id\":\"$1\",\"case_digest\":\"$(awk -v c="$1:" '$1 == c {print $2}' "$pins")\",\"task_class_digest\":\"$T\",\"passed\":$2,\"score\":0.5,\"run_id\":\"run-a\",\"run_cases\":3$fm}"
}
gen c1 false x.wrong
gen c2 true
gen c3 false x.wrong
bd promote tc gold >/dev/null 2>&1 || true # record 4: an audit record
[ "$(bd history verify --json | pj 'd["count"]')" = 4 ] && pass "four records" || fail "setup"

"$BD_BIN" verdict --help | grep -q '^usage: benchdesk verdict SEQ' && pass "verdict --help" ||
    fail "verdict --help"
expect 2 usage.bad_args -- bd verdict 1
expect 2 usage.bad_args -- bd verdict 1 --verdict wrong
expect 2 usage.bad_args -- bd verdict --verdict confirmed
expect 2 usage.bad_args -- bd verdict x1 --verdict confirmed
expect 2 usage.bad_args -- bd verdict 9 --verdict confirmed --key "$ALICE_FPR"
expect 2 usage.bad_args -- bd verdict 4 --verdict confirmed --key "$ALICE_FPR"
expect 2 usage.bad_args -- bd verdict 1 --verdict confirmed --key "$ALICE_FPR" \
    --note "$(head -c 1025 /dev/zero | tr '\0' a)"
expect 3 verdict.not_reviewer -- bd verdict 1 --verdict confirmed --key "$MALLORY_FPR"
[ ! -e "$root/audit/verdicts" ] && pass "nothing written by refusals" || fail "refusal wrote"

# alice: rubric_bug on record 1
out=$(bd verdict 1 --verdict rubric_bug --note "expected uses another name" --key "$ALICE_FPR" --json)
f="$root/$(pj 'd["verdicts"][0]["file"]' <<<"$out")"
sid=$(pj 'd["verdicts"][0]["score_id"]' <<<"$out")
[ -f "$f" ] && pass "verdict file written" || fail "no verdict file: $out"
case "$f" in "$root/audit/verdicts/tc/run-a/c1/$ALICE_FPR-"*T*Z.json) pass "verdict path" ;;
*) fail "verdict path $f" ;; esac
[ "$(pj '",".join(sorted(d))' "$f")" = \
    "at,case_id,note,reviewer_fingerprint,run_id,schema_version,score_id,signature,task_class,verdict" ] &&
    pass "verdict file members" || fail "members: $(cat "$f")"
# canonical JSON plus one newline
python3 - "$f" <<'PY' && pass "verdict file is canonical JSON + newline" || fail "not canonical"
import json, sys
b = open(sys.argv[1], "rb").read()
d = json.loads(b)
assert b == json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
PY
# score_id: BLAKE3 of the record without seq, prev_hash, origin, by b3sum
want=$(python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" line "$hist" 1 | python3 -c '
import json, sys
d = json.loads(sys.stdin.read())
for k in ("seq", "prev_hash", "origin"):
    d.pop(k, None)
sys.stdout.write(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False))' |
    b3sum --no-names)
[ "$sid" = "$want" ] && pass "score_id = b3sum of the record without seq/prev_hash/origin" ||
    fail "score_id $sid, b3sum $want"
[ "$(pj 'd["score_id"]' "$f")" = "$want" ] && pass "file's score_id" || fail "file's score_id"
# the exact message, verified by gpg itself
at=$(pj 'd["at"]' "$f")
msg() { # verdict note score_id at
    printf 'benchdesk-verdict-v1\ntask_class:tc\nrun_id:run-a\ncase_id:%s\nscore_id:%s\nverdict:%s\nnote_sha256:%s\nat:%s\n' \
        "${5:-c1}" "$3" "$1" "$(printf '%s' "$2" | sha256sum | cut -d' ' -f1)" "$4"
}
msg rubric_bug "expected uses another name" "$sid" "$at" >"$BD_TMP/msg"
pj 'd["signature"]' "$f" >"$BD_TMP/sig.asc"
gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg" 2>/dev/null &&
    pass "gpg verifies the exact verdict message" || fail "gpg does not verify the message"
msg confirmed "expected uses another name" "$sid" "$at" >"$BD_TMP/msg2"
! gpg --batch --verify "$BD_TMP/sig.asc" "$BD_TMP/msg2" 2>/dev/null &&
    pass "another verdict word: gpg refuses" || fail "gpg verified another word"

expect 3 verdict.duplicate -- bd verdict 1 --verdict rubric_bug --note "expected uses another name" --key "$ALICE_FPR"
out=$(GNUPGHOME="$BD_TMP/empty" bd verify --json)
[ "$(pj 'd["ok"], d["verdicts"]["files"], d["verdicts"]["counting"]' <<<"$out")" = "true 1 1" ] &&
    pass "verify: one counting verdict, without the user's keyring" || fail "verify: $out"

# a file written by hand for the test: sign MESSAGE-ARGS as KEY into FILE's JSON
forge() { # file key verdict note score_id at [case]
    local sig
    sig=$(msg "$3" "$4" "$5" "$6" "${7:-c1}" |
        gpg --batch --quiet --pinentry-mode loopback --passphrase '' -u "$2" --armor --detach-sign)
    SIG=$sig python3 - "$@" <<'PY'
import json, os, sys
f, key, verdict, note, sid, at = sys.argv[1:7]
case = sys.argv[7] if len(sys.argv) > 7 else "c1"
d = {"at": at, "case_id": case, "note": note, "reviewer_fingerprint": os.environ[key + "_FPR"] if key + "_FPR" in os.environ else key,
     "run_id": "run-a", "schema_version": 1, "score_id": sid, "signature": os.environ["SIG"],
     "task_class": "tc", "verdict": verdict}
os.makedirs(os.path.dirname(f), exist_ok=True)
open(f, "w").write(json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
PY
}
export ALICE_FPR BOB_FPR CAROL_FPR MALLORY_FPR EVE_FPR
vdir="$root/audit/verdicts/tc/run-a/c1"
cp "$f" "$BD_TMP/alice.pristine"

# the verdict word edited, the signature kept
sed -i 's/"verdict":"rubric_bug"/"verdict":"case_bug"/' "$f"
expect 1 verdict.invalid -- bd verify
# a signature over another verdict word (alice signed "confirmed", the file says rubric_bug)
forge "$f" "$ALICE_FPR" confirmed "expected uses another name" "$sid" "$at"
sed -i 's/"verdict":"confirmed"/"verdict":"rubric_bug"/' "$f"
expect 1 verdict.invalid -- bd verify
cp "$BD_TMP/alice.pristine" "$f"
# misnamed: the same bytes under another reviewer's name
cp "$f" "$vdir/$BOB_FPR-20260101T000000Z.json"
expect 1 verdict.invalid -- bd verify
rm "$vdir/$BOB_FPR-20260101T000000Z.json"
# replayed: the same signature in a second file (its at moved, renamed to match)
python3 - "$f" "$vdir" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["at"] = "2026-01-01T00:00:00Z"
open(sys.argv[2] + "/" + d["reviewer_fingerprint"] + "-20260101T000000Z.json", "w").write(
    json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n")
PY
expect 1 verdict.replayed -- bd verify
n=$(bd verify --json | pj 'sum(1 for x in d["verdicts"]["failures"] if x["code"] == "verdict.replayed")' || true)
[ "$n" = 2 ] && pass "both files of a replay refused" || fail "replay: $n"
rm "$vdir/$ALICE_FPR-20260101T000000Z.json"
expect 0 - -- bd verify

# a subject not in this history; untrusted and revoked keys: shown, never a failure
other=$(printf 'x' | b3sum --no-names)
forge "$vdir/$ALICE_FPR-20260102T000000Z.json" "$ALICE_FPR" confirmed "" "$other" 2026-01-02T00:00:00Z
forge "$vdir/$MALLORY_FPR-20260102T000000Z.json" "$MALLORY_FPR" rubric_bug "" "$sid" 2026-01-02T00:00:00Z
forge "$vdir/$EVE_FPR-20260102T000000Z.json" "$EVE_FPR" rubric_bug "" "$sid" 2026-01-02T00:00:00Z
out=$(bd verify --json) && pass "verify passes beside untrusted verdicts" || fail "verify failed: $out"
[ "$(pj 'd["verdicts"]["counting"], d["verdicts"]["untrusted_count"], d["verdicts"]["no_subject"]' <<<"$out")" = "1 2 1" ] &&
    pass "untrusted and subject-less verdicts count for nothing" || fail "counts: $out"
pj '" ".join(sorted(x["why"] for x in d["verdicts"]["untrusted"]))' <<<"$out" | grep -q 'revoked' &&
    pass "a revoked key is said so" || fail "revoked: $out"
bd verify | grep -q "untrusted, counts for nothing" && pass "verify text shows untrusted" ||
    fail "verify text"
rm "$vdir/$ALICE_FPR-20260102T000000Z.json" "$vdir/$MALLORY_FPR-20260102T000000Z.json" "$vdir/$EVE_FPR-20260102T000000Z.json"

# withdrawn takes it back; withdrawing twice is refused
sleep 1
expect 0 - -- bd verdict 1 --verdict withdrawn --key "$ALICE_FPR"
[ "$(bd verify --json | pj 'd["verdicts"]["files"], d["verdicts"]["counting"]')" = "2 0" ] &&
    pass "withdrawn: nothing counts" || fail "withdrawn"
expect 3 verdict.duplicate -- bd verdict 1 --verdict withdrawn --key "$ALICE_FPR"
seqs() { bd history log "$@" --json | pj '[r["seq"] for r in d["records"]]'; }
[ "$(seqs --unreviewed)" = "[3, 1]" ] && pass "history log --unreviewed: the failures without a counting verdict" ||
    fail "--unreviewed: $(seqs --unreviewed)"
[ "$(seqs --verdict rubric_bug)" = "[]" ] && pass "history log --verdict: a withdrawn verdict counts as none" ||
    fail "--verdict rubric_bug: $(seqs --verdict rubric_bug)"
expect 2 usage.bad_args -- bd history log --verdict maybe
# two records in one go (bob), a text run
out=$(bd verdict 1 3 --verdict confirmed --key "$BOB_FPR")
grep -q "stage and commit them: benchdesk stage audit/verdicts" <<<"$out" &&
    pass "verdict says to stage and commit" || fail "verdict text: $out"
[ "$(bd verify --json | pj 'd["verdicts"]["counting"]')" = 2 ] && pass "bob's two verdicts count" ||
    fail "bob's verdicts"
[ "$(seqs --verdict confirmed)" = "[3, 1]" ] && [ "$(seqs --unreviewed)" = "[]" ] &&
    pass "history log --verdict confirmed / --unreviewed after bob's verdicts" ||
    fail "log filters: $(seqs --verdict confirmed) / $(seqs --unreviewed)"
bd history log --verdict confirmed --task-class tc | grep -q '^ *3 ' && pass "history log --verdict, text" ||
    fail "log text"

# calibrate: record 1 confirmed (a true failure), record 2 a pass judged rubric_bug (a false
# pass), record 3 confirmed by bob and rubric_bug by alice (disputed, not counted)
expect 0 - -- bd verdict 2 --verdict rubric_bug --key "$CAROL_FPR"
expect 0 - -- bd verdict 3 --verdict rubric_bug --key "$ALICE_FPR"
out=$(bd calibrate tc --json)
python3 - "$out" <<'PY' && pass "calibrate --json: the shape, the 2x2, kappa, false passes, disputed" || fail "calibrate: $out"
import json, sys
d = json.loads(sys.argv[1])
assert sorted(d) == ["agreement", "disputed", "failure_modes", "false_passes", "records", "task_class"], d
a = d["agreement"]
assert sorted(a) == ["both_fail", "both_pass", "kappa", "kappa_ci95", "rate", "rubric_fail_reviewer_pass", "rubric_pass_reviewer_fail"], a
assert (d["records"], a["both_pass"], a["both_fail"], a["rubric_pass_reviewer_fail"], a["rubric_fail_reviewer_pass"]) == (2, 0, 1, 1, 0), d
# Cohen's kappa from the counts, independently
n = 2; po = (0 + 1) / n; pe = ((0 + 1) * (0 + 0) + (0 + 1) * (1 + 1)) / n ** 2
assert abs(a["rate"] - po) < 1e-12 and abs(a["kappa"] - (po - pe) / (1 - pe)) < 1e-12, a
lo, hi = a["kappa_ci95"]
assert lo <= a["kappa"] <= hi or lo <= hi, a
assert d["failure_modes"] == {"x.wrong": {"confirmed": 1, "rubric_bug": 0}}, d["failure_modes"]
assert d["false_passes"] == 1 and d["disputed"] == [3], d
PY
[ "$(bd calibrate tc --json)" = "$out" ] && pass "calibrate: the same numbers again (seeded)" ||
    fail "calibrate not reproducible"
bd calibrate tc | grep -q "disputed (reviewers disagree, not counted): #3" && pass "calibrate text" ||
    fail "calibrate text: $(bd calibrate tc)"
expect 2 usage.bad_args -- bd calibrate
expect 2 bench.unknown_task_class -- bd calibrate nope

# a verdict file deleted after it was committed: verify warns (never fails)
git -C "$root" init -q && git -C "$root" add -A audit &&
    git -C "$root" -c user.name=t -c user.email=t@example.org commit -qm verdicts
gone=$(cd "$root" && ls audit/verdicts/tc/run-a/c2/*.json | head -1)
rm "$root/$gone"
out=$(bd verify --json) && pass "verify passes with a deleted verdict" || fail "verify: $out"
pj '" ".join(d["verdicts"]["warnings"])' <<<"$out" | grep -q "$gone, which the last commit holds, is gone" &&
    pass "verify warns of the deleted verdict file" || fail "no warning: $out"
bd verify 2>&1 >/dev/null | grep -q "warning: verdict file $gone" && pass "the warning on stderr" ||
    fail "no warning line"
finish
