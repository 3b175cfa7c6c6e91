#!/usr/bin/env bash
# Shards and their merge (docs/scale.md), simulated locally: 100 shard bundles of one
# run, imported in any order into the same chain, once; and every bundle import must
# refuse: tampered (byte flip, truncated chain, edited manifest), from another bench
# state, another task-class digest, another run, a duplicate or a missing shard. Missing
# shards are named in words, numbered as --shard K/N numbers them ("shard 1 of 3" is
# K=1); shards of a run already imported import as "already imported"; cases added to
# the bench after the run are listed, not refused.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
PY=$(command -v /usr/bin/python3 || command -v python3)
N=100
FX="$BD_TMP/fx"
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --trivial 40 --only trivial \
    --python "$PY" >/dev/null
# The fixture may still be written in format v1: convert it (a no-op on v2).
"$BD_BIN" -C "$FX" migrate >/dev/null 2>&1 || true
bd() { "$BD_BIN" -C "$1" "${@:2}"; }
RUN=(run trivial --drafts --isolation subprocess --jobs 2)
# want WHAT STATUS CODE -- cmd...: like lib.sh's expect, reported by WHAT (the argument
# lists here are a hundred bundles long).
want() {
    local what=$1 st=$2 code=$3; shift 4
    local out rc=0
    out=$("$@" 2>&1 >/dev/null) || rc=$?
    if [ "$rc" != "$st" ]; then fail "$what -> exit $rc, wanted $st ($out)"; return; fi
    if ! grep -q "^benchdesk: $code: " <<<"$out"; then fail "$what -> wanted $code, got: $out"; return; fi
    pass "$what -> $st $code"
}
copy() { local d="$BD_TMP/$1"; cp -a "$FX" "$d"; printf '%s\n' "$d"; }
head_of() { bd "$1" history verify | sed -n 's/.*head \([0-9a-f]*\).*/\1/p'; }

# ---- the shard spec ---------------------------------------------------------------
expect 2 shard.bad_spec -- env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX \
    "$BD_BIN" -C "$FX" "${RUN[@]}" --shard auto --run-id x --out "$BD_TMP/o1"
expect 2 shard.bad_spec -- bd "$FX" "${RUN[@]}" --shard 4/4 --run-id x --out "$BD_TMP/o2"
expect 2 shard.bad_spec -- bd "$FX" "${RUN[@]}" --shard 1/0 --run-id x --out "$BD_TMP/o3"
expect 2 shard.bad_spec -- bd "$FX" "${RUN[@]}" --shard one/4 --run-id x --out "$BD_TMP/o4"
expect 2 shard.bad_spec -- bd "$FX" "${RUN[@]}" --shard 1/4 --out "$BD_TMP/o5"
expect 2 shard.bad_spec -- bd "$FX" "${RUN[@]}" --shard 1/4 --run-id 'bad id' --out "$BD_TMP/o6"
expect 2 usage.bad_args -- bd "$FX" "${RUN[@]}" --shard 1/4 --run-id x
expect 2 usage.bad_args -- bd "$FX" "${RUN[@]}" --run-id x # an id for a bundle: --out
expect 2 shard.bad_spec -- env SLURM_ARRAY_TASK_ID=3 SLURM_ARRAY_TASK_MIN=0 \
    "$BD_BIN" -C "$FX" "${RUN[@]}" --shard auto --out "$BD_TMP/o8"
expect 2 shard.bad_spec -- env -u SLURM_ARRAY_TASK_ID JOB_COMPLETION_INDEX=1 \
    "$BD_BIN" -C "$FX" "${RUN[@]}" --shard auto --run-id k --out "$BD_TMP/o9"
mkdir -p "$BD_TMP/exists"
expect 2 bundle.exists -- bd "$FX" "${RUN[@]}" --shard 0/2 --run-id x --out "$BD_TMP/exists"
# Slurm: K = ID - MIN (here an array 10-13), N = COUNT, run id = SLURM_ARRAY_JOB_ID.
env SLURM_ARRAY_TASK_ID=12 SLURM_ARRAY_TASK_MIN=10 SLURM_ARRAY_TASK_COUNT=4 SLURM_ARRAY_JOB_ID=777 \
    "$BD_BIN" -C "$FX" "${RUN[@]}" --shard auto --out "$BD_TMP/slurm2" >/dev/null 2>&1
grep -q '"run_id":"777","shard":2,"shards":4' "$BD_TMP/slurm2/manifest.json" &&
    pass "--shard auto under Slurm: shard 2 of 4 of run 777" || fail "slurm auto manifest"
env -u SLURM_ARRAY_TASK_ID JOB_COMPLETION_INDEX=3 BENCHDESK_SHARDS=4 \
    "$BD_BIN" -C "$FX" "${RUN[@]}" --shard auto --run-id k8s --out "$BD_TMP/k8s3" >/dev/null 2>&1
grep -q '"run_id":"k8s","shard":3,"shards":4' "$BD_TMP/k8s3/manifest.json" &&
    pass "--shard auto under a Kubernetes Indexed Job: shard 3 of 4" || fail "k8s auto manifest"

# ---- 100 shards -------------------------------------------------------------------
B="$BD_TMP/bundles"
mkdir -p "$B"
for ((k = 0; k < N; k++)); do
    bd "$FX" "${RUN[@]}" --shard "$k/$N" --run-id sim --out "$B/$k" >/dev/null 2>&1 ||
        fail "shard $k/$N did not finish"
done
[ -d "$FX/.benchdesk/history" ] && fail "a shard run wrote the bench's own history" ||
    pass "$N shard runs wrote only their bundles"
# The partition, recomputed with b3sum: BLAKE3(case id)'s first 8 bytes, big-endian, mod N.
if "$PY" - "$B" "$N" <<'PY'; then
import json, os, subprocess, sys
root, n = sys.argv[1], int(sys.argv[2])
seen = {}
for k in range(n):
    m = json.load(open(os.path.join(root, str(k), "manifest.json")))
    assert m["shard"] == k and m["shards"] == n and m["count"] == len(m["cases"])
    for cid in m["cases"]:
        h = subprocess.run(["b3sum", "--no-names"], input=cid.encode(), capture_output=True,
                           check=True).stdout.decode()[:16]
        assert int(h, 16) % n == k, (cid, k)
        assert cid not in seen, cid
        seen[cid] = k
assert len(seen) == 40, len(seen)
PY
    pass "every case in exactly the shard BLAKE3(id) mod $N names (b3sum)"
else
    fail "the partition differs from BLAKE3(case id) mod $N"
fi

# The same chain whatever the order of the arguments.
A=$(copy a); R=$(copy r); S=$(copy s)
fwd=(); for ((k = 0; k < N; k++)); do fwd+=("$B/$k"); done
rev=(); for ((k = N - 1; k >= 0; k--)); do rev+=("$B/$k"); done
mapfile -t shuf < <(printf '%s\n' "${fwd[@]}" | shuf)
bd "$A" history import "${fwd[@]}" >/dev/null || fail "import in order"
bd "$R" history import "${rev[@]}" >/dev/null || fail "import reversed"
bd "$S" history import "${shuf[@]}" >/dev/null || fail "import shuffled"
ha=$(head_of "$A"); hr=$(head_of "$R"); hs=$(head_of "$S")
[ -n "$ha" ] && [ "$ha" = "$hr" ] && [ "$ha" = "$hs" ] &&
    pass "in order, reversed and shuffled imports give the same chain ($ha)" ||
    fail "chain heads differ: $ha / $hr / $hs"
n_rec=$(bd "$A" history verify | sed -n 's/history intact: \([0-9]*\) record.*/\1/p')
[ "$n_rec" = 40 ] && pass "40 records appended" || fail "records: $n_rec"
[ -f "$A/.benchdesk/runs/sim.json" ] && pass "the merged run's summary is written" ||
    fail "no summary"
bd "$A" history log --limit 1 --json | grep -q '"origin":{"bundle_record_hash":"[0-9a-f]\{64\}","host":"[^"]*","run_id":"sim","shard":[0-9]*,"shards":100}' &&
    pass "records carry their origin" || fail "no origin on imported records"
# Idempotent.
out=$(bd "$A" history import "${shuf[@]}")
[ "$(head_of "$A")" = "$ha" ] && grep -q "nothing changed" <<<"$out" &&
    pass "importing the same run again changes nothing and says so" || fail "re-import: $out"
# Some shards of the run again, without --partial: already imported, not a missing shard.
rc=0
out=$(bd "$A" history import "${fwd[@]:0:2}" 2>&1) || rc=$?
[ "$rc" = 0 ] && [ "$(head_of "$A")" = "$ha" ] &&
    grep -q "^run sim is already imported (.*); nothing changed" <<<"$out" &&
    ! grep -q "missing_shard" <<<"$out" &&
    pass "shards 0 and 1 of an imported run: 'already imported', exit 0, nothing changed" ||
    fail "re-import of a subset: rc=$rc $out"
out=$(bd "$A" history import "${fwd[@]:0:2}" --json)
"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if (d["appended"], d["complete"], d["missing_shards"]) == (0, True, []) and d["already"] >= 0 else 1)' "$out" &&
    pass "the same with --json: appended 0, complete, no missing shard" || fail "re-import --json: $out"

# ---- refusals: nothing is appended ------------------------------------------------
T=$(copy t)
refuse() { # refuse STATUS CODE WHAT -- bundles...
    local st=$1 code=$2 what=$3; shift 4
    local before after
    before=$(bd "$T" history verify)
    want "$what" "$st" "$code" -- bd "$T" history import "$@"
    after=$(bd "$T" history verify)
    [ "$before" = "$after" ] || fail "$what: the chain changed on a refused import"
}
others=("${fwd[@]:1}")
refuse 2 bundle.missing_shard "missing" -- "${others[@]}"
err=$(bd "$T" history import "${others[@]}" 2>&1 >/dev/null || true)
grep -q "^benchdesk: bundle.missing_shard: run 'sim': shard 0 of 100 is neither given nor already imported" <<<"$err" &&
    pass "the missing shard is named in words" || fail "missing shard not named: $err"
refuse 2 bundle.duplicate_shard "duplicate" -- "${fwd[@]}" "$B/7"
cp -a "$B/7" "$BD_TMP/dup7"
refuse 2 bundle.duplicate_shard "duplicate copy" -- "${fwd[@]}" "$BD_TMP/dup7"

# Tampered bundles: a byte flip in a record, a truncated chain, an edited manifest, a
# manifest that is gone (the shard did not finish).
tamper() { local d="$BD_TMP/tamper.$1"; rm -rf "$d"; cp -a "$B" "$d"; printf '%s\n' "$d"; }
first_full() { for ((k = 0; k < N; k++)); do [ -s "$1/$k/records/segments/0000000001.jsonl" ] && { echo "$k"; return; }; done; }
X=$(tamper flip); k=$(first_full "$X")
sed -i 's/"passed":true/"passed":false/' "$X/$k/records/segments/0000000001.jsonl"
refuse 1 bundle.tampered "byte flip" -- "$X"/*
X=$(tamper trunc); k=$(first_full "$X")
sed -i '$d' "$X/$k/records/segments/0000000001.jsonl" # the last record's line
rm -f "$X/$k/records/VERIFIED"
refuse 1 bundle.tampered "truncated chain" -- "$X"/*
X=$(tamper manifest); k=$(first_full "$X")
"$PY" - "$X/$k/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
cid = sorted(m["cases"])[0]
m["cases"][cid] = "blake3:" + "0" * 64
open(p, "w").write(json.dumps(m, sort_keys=True, separators=(",", ":")))
PY
refuse 1 bundle.tampered "edited manifest (case digest)" -- "$X"/*
X=$(tamper count); k=$(first_full "$X")
sed -i 's/"count":\([0-9]*\)/"count":9\1/' "$X/$k/manifest.json"
refuse 1 bundle.tampered "edited manifest (count)" -- "$X"/*
X=$(tamper space)
sed -i 's/^{/{ /' "$X/3/manifest.json"
refuse 2 bundle.invalid "non-canonical manifest" -- "$X"/*
X=$(tamper gone)
rm "$X/4/manifest.json"
refuse 2 bundle.invalid "no manifest" -- "$X"/*
X=$(tamper moved); k=$(first_full "$X")
# A case moved to another shard's bundle with a consistent manifest: not its partition.
"$PY" - "$X/$k/manifest.json" "$(( (k + 1) % N ))" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
m["shard"] = int(sys.argv[2])
open(p, "w").write(json.dumps(m, sort_keys=True, separators=(",", ":")))
PY
rm -rf "$X/$(( (k + 1) % N ))"
refuse 1 bundle.partition_mismatch "case in the wrong shard" -- "$X"/*

# Another run's bundle among this run's.
bd "$FX" "${RUN[@]}" --shard 5/$N --run-id other --out "$BD_TMP/other5" >/dev/null 2>&1
refuse 2 bundle.mixed_runs "another run" -- "${fwd[@]:0:5}" "$BD_TMP/other5" "${fwd[@]:6}"

# Another bench state: a case's content changed (and re-pinned) locally.
P=$(copy pins)
c=$(ls "$P/bench/trivial/cases" | grep -v digests | head -1)
echo "# changed" >>"$P/bench/trivial/cases/$c/case.yaml"
bd "$P" pin trivial >/dev/null 2>&1
want "a case changed since the shards ran" 1 bundle.pin_mismatch -- bd "$P" history import "${fwd[@]}"
# Another task-class digest: the rubric changed (and re-pinned) locally.
Q=$(copy rubric)
echo "# changed" >>"$Q/bench/trivial/rubric.py"
bd "$Q" pin trivial >/dev/null 2>&1
want "the rubric changed since the shards ran" 1 bundle.task_class_mismatch -- bd "$Q" history import "${fwd[@]}"

# A broken local chain is never appended to.
C=$(copy chain)
bd "$C" history import "${fwd[@]:0:50}" --partial >/dev/null 2>&1
# a space after the first record: no longer its canonical bytes
sed -i '1s/$/ /' "$C/.benchdesk/history/segments/0000000001.jsonl"
want "a broken local chain" 1 chain.tampered -- bd "$C" history import "${fwd[@]}"

# --partial: import what is there, name what is missing, complete it later.
Pa=$(copy partial)
err=$(bd "$Pa" history import --partial "${fwd[@]:0:60}" 2>&1 >/dev/null)
[ "$err" = "benchdesk: warning: run sim is partial: shards 60-99 of 100 not imported yet; import their bundles when they are done" ] &&
    pass "--partial names the missing shards in words" || fail "--partial: $err"
bd "$Pa" history import "${fwd[@]}" >/dev/null && bd "$Pa" history verify >/dev/null &&
    [ "$(bd "$Pa" history verify | sed -n 's/history intact: \([0-9]*\).*/\1/p')" = 40 ] &&
    pass "the rest of a partial import completes the run (40 records)" ||
    fail "completing a partial import"
# A shard run again (another bundle of the same shard) conflicts with what is in.
bd "$FX" "${RUN[@]}" --shard "$(first_full "$B")/$N" --run-id sim --out "$BD_TMP/rerun" >/dev/null 2>&1
k=$(first_full "$B")
alt=("${fwd[@]}"); alt[$k]="$BD_TMP/rerun"
want "the same shard from a second run of it" 1 bundle.conflict -- bd "$A" history import "${alt[@]}"

# Three shards, in words: K counts from 0 as in --shard K/N, so "shard 1 of 3" is K=1.
for k in 0 1 2; do
    bd "$FX" "${RUN[@]}" --shard "$k/3" --run-id three --out "$BD_TMP/three$k" >/dev/null 2>&1 ||
        fail "shard $k/3"
done
W=$(copy words)
err=$(bd "$W" history import --partial "$BD_TMP/three0" "$BD_TMP/three2" 2>&1 >/dev/null)
grep -q "^benchdesk: warning: run three is partial: shard 1 of 3 not imported yet; import its bundle when it is done$" <<<"$err" &&
    pass "--partial without K=1: 'shard 1 of 3 not imported'" || fail "three --partial: $err"
out=$(bd "$W" history import --partial --json "$BD_TMP/three0" "$BD_TMP/three2" 2>/dev/null)
"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if (d["missing_shards"], d["complete"], d["appended"]) == ([1], False, 0) else 1)' "$out" &&
    pass "--json: missing_shards [1], not complete, nothing appended again" || fail "three --json: $out"
want "shard 0 alone of a partly imported run" 2 bundle.missing_shard -- bd "$W" history import "$BD_TMP/three0"
err=$(bd "$W" history import "$BD_TMP/three0" 2>&1 >/dev/null || true)
grep -q "shard 1 of 3 is neither given nor already imported" <<<"$err" &&
    pass "only the shard not yet in is named missing (shard 2 was imported before)" ||
    fail "missing after partial: $err"
rc=0
out=$(bd "$W" history import "$BD_TMP/three1" 2>&1) || rc=$?
[ "$rc" = 0 ] && grep -q "the run is now complete in the history" <<<"$out" &&
    bd "$W" history verify | grep -q "history intact: 40 records" &&
    pass "the last shard alone completes a partly imported run" || fail "completing: rc=$rc $out"

# A case added to the bench after the run: the run is judged by its own case list and
# imported; the case it did not cover is listed. While its shard is missing it cannot
# be called uncovered.
shard_of() { "$PY" -c 'import subprocess,sys; h=subprocess.run(["b3sum","--no-names"],input=sys.argv[1].encode(),capture_output=True,check=True).stdout.decode()[:16]; print(int(h,16) % int(sys.argv[2]))' "$@"; }
U=$(copy uncovered)
bd "$U" case new trivial added-later >/dev/null && bd "$U" pin trivial >/dev/null 2>&1 ||
    fail "adding a case locally"
ku=$(shard_of added-later 3)
others3=(); for k in 0 1 2; do [ "$k" = "$ku" ] || others3+=("$BD_TMP/three$k"); done
out=$(bd "$U" history import --partial --json "${others3[@]}" 2>/dev/null) || fail "partial import into U"
"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["uncovered_cases"] == [] and d["missing_shards"] == [int(sys.argv[2])] else 1)' "$out" "$ku" &&
    pass "the added case's shard ($ku of 3) is missing: not listed as uncovered yet" || fail "partial uncovered: $out"
rc=0
out=$(bd "$U" history import "$BD_TMP/three$ku" 2>&1) || rc=$?
[ "$rc" = 0 ] && grep -q "^  not covered    1 local case the run did not score (added since it ran?): added-later$" <<<"$out" &&
    pass "imported into a bench that gained a case: the case is listed as not covered" ||
    fail "uncovered text: rc=$rc $out"
V=$(copy uncovered2)
bd "$V" case new trivial added-later >/dev/null && bd "$V" pin trivial >/dev/null 2>&1
out=$(bd "$V" history import --json "${fwd[@]}") && rc=0 || rc=$?
"$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if d["uncovered_cases"] == ["added-later"] and d["complete"] and d["appended"] == 40 and d["summary"]["cases"] == 40 else 1)' "$out" &&
    [ "$rc" = 0 ] && [ "$(head_of "$V")" = "$ha" ] &&
    pass "--json: uncovered_cases [added-later], 40 of the run's 40 cases, the same chain" ||
    fail "uncovered --json: rc=$rc $out"
# With --partial, a shard left out that selected no case is not missing once every record
# of the run is in (here the added case's shard of 100, which is empty).
k100=$(shard_of added-later "$N")
if ! grep -q '"count":0,' "$B/$k100/manifest.json"; then
    echo "note: shard $k100 of $N is not empty here; the empty-shard check is skipped"
else
    Z=$(copy uncovered3)
    bd "$Z" case new trivial added-later >/dev/null && bd "$Z" pin trivial >/dev/null 2>&1
    without=(); for ((k = 0; k < N; k++)); do [ "$k" = "$k100" ] || without+=("$B/$k"); done
    out=$(bd "$Z" history import --partial --json "${without[@]}" 2>"$BD_TMP/z.err") || fail "import into Z"
    "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); sys.exit(0 if (d["missing_shards"], d["complete"], d["uncovered_cases"]) == ([], True, ["added-later"]) else 1)' "$out" &&
        [ ! -s "$BD_TMP/z.err" ] &&
        pass "--partial without an empty shard: complete, nothing missing, the added case uncovered" ||
        fail "empty shard left out: $out $(cat "$BD_TMP/z.err")"
fi

# Two imports of the same run at once: one appends, the other finds it done.
Two=$(copy two)
bd "$Two" history import "${fwd[@]}" >"$BD_TMP/two1" 2>&1 &
p1=$!
bd "$Two" history import "${rev[@]}" >"$BD_TMP/two2" 2>&1 &
p2=$!
r1=0; r2=0
wait "$p1" || r1=$?
wait "$p2" || r2=$?
n_two=$(bd "$Two" history verify | sed -n 's/history intact: \([0-9]*\).*/\1/p')
if [ "$r1$r2" = 00 ] && [ "$n_two" = 40 ] && [ "$(head_of "$Two")" = "$ha" ] &&
    cat "$BD_TMP/two1" "$BD_TMP/two2" | grep -q "nothing changed"; then
    pass "two concurrent imports of one run append it once"
else
    fail "concurrent imports: exits $r1/$r2, $n_two records: $(cat "$BD_TMP/two1" "$BD_TMP/two2")"
fi

finish
