#!/usr/bin/env bash
# Decisions rest only on verified bytes (docs/security.md, "What each file beside the
# records can and cannot do"): an attacker who can write the bench checkout edits the
# derived index (with Python's sqlite3, the real library) and the VERIFIED memo; recommend,
# history log, list and verify must answer as the records say, and a record the full check
# rejects is never reported intact or anchored. Real GnuPG keys made by the test.
. "$(dirname "$0")/lib.sh"
. "$BD_SOURCE_DIR/tests/fixtures/gpg/lib.sh"
# The index's seals live in the user's state directory: this test's own.
export HOME="$BD_TMP/home" XDG_STATE_HOME="$BD_TMP/home/state"
mkdir -p "$HOME"
sql() { python3 -c 'import sqlite3, sys
c = sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.commit(); c.close()' "$@"; }

# ---- the derived index (demo bench, records made by an independent generator) -------
root=$(demo_copy)
bd() { "$BD_BIN" -C "$root" "$@"; }
hist="$root/.benchdesk/history"
ix="$root/.benchdesk/index/history.sqlite"
tc=vuln-remediation
pins="$root/bench/$tc/cases/digests.yaml"
T=$(awk '$1 == "task_class:" {print $2}' "$pins")
cases=$(awk '$1 ~ /^ghsa-/ {sub(":", "", $1); print $1}' "$pins")
gen() { # hist case passed score [failure_mode]
    local fm=${5:+,\"failure_mode\":\"$5\"}
    python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" gen "$1" \
        "{\"task_class\":\"$tc\",\"case_id\":\"$2\",\"case_digest\":\"$(awk -v c="$2:" '$1 == c {print $2}' "$pins")\",\"task_class_digest\":\"$T\",\"passed\":$3,\"score\":$4$fm}"
}
i=0
for c in $cases; do
    i=$((i + 1))
    if [ $((i % 3)) = 0 ]; then gen "$hist" "$c" false 0.2 vuln.still_present; else gen "$hist" "$c" true 0.9; fi
done
n=$i
[ "$n" -ge 6 ] || { fail "the demo's cases were not found ($n)"; finish; }

rec=$(bd recommend $tc --json)
want_rate=$(pj 'd["pass_rate"]' <<<"$rec")
want_failed=$(bd history log --failed --json | pj '" ".join(str(r["seq"]) for r in d["records"])')
want_fm=$(bd history log --failure-mode vuln.still_present --json | pj 'len(d["records"])')
lastcol() { bd list $tc --json | pj '" ".join("%s=%s" % (c["case_id"], (c.get("last_score") or {}).get("seq")) for c in d["cases"])'; }
want_last=$(lastcol)
[ -f "$ix" ] && pass "the index was built ($n records)" || fail "no index at $ix"
grep -q '=[0-9]' <<<"$want_last" && pass "baseline: list shows LAST seqs" || fail "list: $want_last"
[ -n "$want_failed" ] && [ "$want_fm" -gt 0 ] && pass "baseline: failed records $want_failed" ||
    fail "baseline: no failed records ($want_failed / $want_fm)"

# 1. recommend does not read the index (it once took each case's newest record from it):
# every row made a pass, every case's newest record pointed at record 1.
sql "$ix" "UPDATE rec SET flags=2; UPDATE latest SET seq=1"
got=$(bd recommend $tc --json | pj 'd["pass_rate"]')
[ "$got" = "$want_rate" ] && pass "index rows all passed, latest=1: recommend's pass rate stays $want_rate" ||
    fail "forged index: recommend's pass rate $got, wanted $want_rate"

# 2. failures hidden in the index are found: the edit broke its seal, it is rebuilt.
sql "$ix" "UPDATE rec SET flags=10; DELETE FROM fm"
got=$(bd history log --failed --json 2>"$BD_TMP/err" | pj '" ".join(str(r["seq"]) for r in d["records"])')
[ "$got" = "$want_failed" ] && pass "flags=10, fm emptied: history log --failed still lists $got" ||
    fail "history log --failed after the index edit: '$got', wanted '$want_failed'"
grep -q '^benchdesk: warning: .*changed outside benchdesk.*rebuilt' "$BD_TMP/err" &&
    pass "says the index was changed and rebuilt" || fail "no warning: $(cat "$BD_TMP/err")"
sql "$ix" "DELETE FROM fm"
got=$(bd history log --failure-mode vuln.still_present --json 2>/dev/null | pj 'len(d["records"])')
[ "$got" = "$want_fm" ] && pass "--failure-mode after DELETE FROM fm: $got records" ||
    fail "--failure-mode after DELETE FROM fm: $got, wanted $want_fm"

# 3. list's LAST column does not move with the index.
sql "$ix" "UPDATE latest SET seq=seq-3 WHERE seq > 3"
got=$(lastcol 2>/dev/null)
[ "$got" = "$want_last" ] && pass "UPDATE latest SET seq=seq-3: list's LAST unchanged" ||
    fail "list after the index edit: $got, wanted $want_last"

# 4. an index of another history, relabelled with this chain's head.
other=$(demo_copy)
for c in $cases; do gen "$other/.benchdesk/history" "$c" true 1; done
"$BD_BIN" -C "$other" history log --failed >/dev/null
bd history log >/dev/null 2>&1
python3 - "$ix" "$other/.benchdesk/index/history.sqlite" <<'PY'
import shutil, sqlite3, sys
mine, theirs = sys.argv[1], sys.argv[2]
c = sqlite3.connect(mine)
head = dict(c.execute("SELECT k, v FROM meta WHERE k LIKE 'head_%'"))
c.close()
shutil.copyfile(theirs, mine)
c = sqlite3.connect(mine)
for k, v in head.items():
    c.execute("UPDATE meta SET v=? WHERE k=?", (v, k))
c.commit()
c.close()
PY
got=$(bd history log --failed --json 2>/dev/null | pj '" ".join(str(r["seq"]) for r in d["records"])')
[ "$got" = "$want_failed" ] && pass "an index of another history, relabelled: --failed still lists $got" ||
    fail "relabelled index: '$got', wanted '$want_failed'"
# an edit that puts the modification time back (os.utime) still breaks the seal: the
# change time cannot be set
bd history log >/dev/null 2>&1
python3 - "$ix" <<'PY'
import os, sqlite3, sys
st = os.stat(sys.argv[1])
c = sqlite3.connect(sys.argv[1]); c.execute("UPDATE rec SET flags=10"); c.commit(); c.close()
os.utime(sys.argv[1], ns=(st.st_atime_ns, st.st_mtime_ns))
PY
got=$(bd history log --failed --json 2>"$BD_TMP/err" | pj '" ".join(str(r["seq"]) for r in d["records"])')
[ "$got" = "$want_failed" ] && grep -q 'changed outside benchdesk' "$BD_TMP/err" &&
    pass "an edit with its modification time put back is caught" ||
    fail "utime'd edit: '$got' / $(cat "$BD_TMP/err")"
# a journal planted beside it: SQLite would play it back into the file
bd history log >/dev/null 2>&1
cp "$ix" "$ix-journal"
got=$(bd history log --failed --json 2>/dev/null | pj '" ".join(str(r["seq"]) for r in d["records"])')
[ "$got" = "$want_failed" ] && pass "a planted journal changes nothing" || fail "planted journal: '$got'"
rm -f "$ix-journal"
# an index no edit touched is used as it is: no warning, no rebuild
bd history log --failed >/dev/null 2>&1
bd history log --failed >/dev/null 2>"$BD_TMP/err"
[ ! -s "$BD_TMP/err" ] && pass "an untouched index is used quietly" || fail "untouched: $(cat "$BD_TMP/err")"

# ---- the memo and anchors (a small bench, throwaway keys) ----------------------------
gpg_keys
mb="$BD_TMP/mini"
mini_bench "$mb" alice bob mallory
mbd() { "$BD_BIN" -C "$mb" "$@"; }
mh="$mb/.benchdesk/history"
hs() { python3 "$BD_SOURCE_DIR/tests/cli/history_seg.py" "$1" "$mh" "${@:2}"; }
D=blake3:$(printf '%064d' 0)
mgen() { hs gen "{\"task_class\":\"tc\",\"case_id\":\"c$1\",\"case_digest\":\"$D\",\"task_class_digest\":\"$D\"}"; }
export TMPDIR="$BD_TMP/tmp"
mkdir -p "$TMPDIR"
for k in 1 2 3 4 5 6 7 8; do mgen "$k"; done
expect 0 - -- mbd history verify

# A lying memo: record 5's score edited to 9 (outside [0,1]), the chain re-linked, a memo
# naming the new head. Nothing reports it intact, and nothing anchors it.
hs sub 5 '"passed":true,"score":1' '"passed":true,"score":9'
hs relink
hs memo
expect 1 chain.tampered -- mbd history verify
expect 1 chain.tampered -- mbd history verify --full
expect 1 - -- mbd verify
expect 1 chain.tampered -- mbd anchor publish --key "$ALICE_FPR"
[ -z "$(ls "$mb/audit/anchors/bench" 2>/dev/null)" ] && pass "no anchor was written over it" ||
    fail "an anchor was written: $(ls "$mb/audit/anchors/bench")"
out=$(mbd history verify --json 2>/dev/null || true)
[ "$(pj 'd["error"]["seq"], d["error"]["reason"]' <<<"$out")" = "5 schema_invalid" ] &&
    pass "history verify names record 5, schema_invalid" || fail "history verify: $out"

# Anchors: records under a signed anchor are re-hashed, the rest parsed.
hs sub 5 '"passed":true,"score":9' '"passed":true,"score":1'
hs relink
expect 0 - -- mbd history verify
mbd anchor publish --key "$ALICE_FPR" >/dev/null && pass "anchor published over 8 records" ||
    fail "anchor publish"
for k in 9 10 11; do mgen "$k"; done
got=$(mbd verify --json | pj 'd["history"]["parsed_from"], d["history"]["records"]' 2>/dev/null || true)
[ "$got" = "9 11" ] && pass "verify parses records 9..11, re-hashes 1..8 under the anchor" ||
    fail "verify's parsed_from/records: '$got'"
got=$(mbd verify --full --json | pj 'd["history"]["parsed_from"]' 2>/dev/null || true)
[ "$got" = "1" ] && pass "verify --full parses every record, the anchored ones too" ||
    fail "verify --full: parsed_from '$got'"
# a record under the anchor edited (and the chain re-linked): the anchor does not vouch
hs sub 3 '"passed":true,"score":1' '"passed":true,"score":9'
hs relink
hs memo
expect 1 chain.tampered -- mbd verify
expect 1 chain.tampered -- mbd recommend tc
# an anchor with a broken signature vouches for nothing: everything is parsed
hs sub 3 '"passed":true,"score":9' '"passed":true,"score":1'
hs relink
a=$(ls "$mb/audit/anchors/bench"/*.json)
python3 - "$a" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
d["signature"] = d["signature"].replace("A", "B", 1) if "A" in d["signature"][40:] else d["signature"]
open(p, "w").write(json.dumps(d, sort_keys=True, separators=(",", ":")) + "\n")
PY
got=$(mbd verify --json 2>/dev/null | pj 'd["history"]["parsed_from"]' 2>/dev/null || true)
[ "$got" = "1" ] && pass "a bad anchor vouches for nothing: every record parsed" ||
    fail "bad anchor: parsed_from '$got'"
rm -f "$a"

# A record of a newer schema: upgrade, not tampering (exit 4).
hs set 11 "$(hs line 11 | sed 's/"schema_version":2/"schema_version":3/')"
expect 4 history.newer_version -- mbd history verify
expect 4 history.newer_version -- mbd verify
finish
