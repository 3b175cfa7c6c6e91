#!/usr/bin/env bash
# A run sharded on a real scheduler (docs/scale.md): a single-node Slurm cluster of this
# test's own runs `sbatch --array=0-3` of `benchdesk run … --shard auto`, the four
# bundles are imported, the chain verifies, and the merged summary equals a one-machine
# run of the same cases (the demo rubrics are deterministic).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../cli/lib.sh"
. "$here/slurm_lib.sh"

for b in munged munge unmunge slurmctld slurmd sbatch squeue scontrol sinfo; do
    if ! command -v "$b" >/dev/null; then
        echo "SKIP: $b is not installed (scripts/setup --test-deps installs slurm-wlm and munge)"
        exit 77
    fi
done
if [ "$(id -u)" != 0 ]; then
    echo "SKIP: slurmd runs jobs as their owner and must be root; run the suite as root"
    exit 77
fi
trap 'slurm_stop; rm -rf "$BD_TMP"' EXIT

TC=incident-triage
root=$(demo_copy)
out="$BD_TMP/bundles"
mkdir -p "$out"
slurm_start
pass "munged, slurmctld and slurmd up (pids ${SL_PIDS[*]})"

cat >"$SL/shard.sh" <<JOB
#!/bin/bash
exec "$BD_BIN" -C "$root" run $TC --shard auto --out "$out/shard-\$SLURM_ARRAY_TASK_ID" --json
JOB
chmod +x "$SL/shard.sh"
jobid=$(sbatch --parsable --array=0-3 --chdir="$BD_TMP" --output="$SL/jobs/%A_%a.out" \
    --time=10 "$SL/shard.sh") || { fail "sbatch refused the array"; slurm_logs; finish; }
jobid=${jobid%%;*}
pass "sbatch --array=0-3 -> job $jobid"

# Wait (bounded) until the array has left the queue.
if ! wait_for 300 sh -c "[ -z \"\$(squeue -h -j $jobid 2>/dev/null)\" ]"; then
    fail "array job $jobid still queued after 300 s: $(squeue -j "$jobid" 2>&1)"
fi
bad=0
for k in 0 1 2 3; do
    info=$(scontrol -o show job "${jobid}_$k" 2>/dev/null || true)
    state="$(grep -o 'JobState=[A-Z_]*' <<<"$info" || true) $(grep -o 'ExitCode=[0-9:]*' <<<"$info" || true)"
    case "$state" in
    "JobState=COMPLETED ExitCode=0:0") ;;
    *) bad=1; fail "array task $k: ${state} ${info:0:300}" ;;
    esac
    [ -f "$out/shard-$k/manifest.json" ] || { bad=1; fail "shard $k wrote no bundle"; }
done
if [ "$bad" = 1 ]; then
    for f in "$SL"/jobs/*.out; do echo "---- $f"; cat "$f"; done
    slurm_logs
else
    pass "four array tasks completed, four bundles written"
fi
grep -q "\"run_id\":\"$jobid\"" "$out/shard-0/manifest.json" &&
    pass "the run id is SLURM_ARRAY_JOB_ID ($jobid)" || fail "run id is not $jobid"
for k in 0 1 2 3; do
    grep -q "\"shard\":$k,\"shards\":4" "$out/shard-$k/manifest.json" ||
        fail "bundle shard-$k is not shard $k of 4"
done
[ -d "$root/.benchdesk/history" ] && fail "a shard run wrote the bench's own history" ||
    pass "shard runs wrote only their bundles"

# Merge in a scrambled order, verify, and import again (a no-op).
imp=$("$BD_BIN" -C "$root" history import --json "$out/shard-2" "$out/shard-0" "$out/shard-3" "$out/shard-1") ||
    fail "history import failed: $imp"
echo "$imp" >"$BD_TMP/import.json"
"$BD_BIN" -C "$root" history verify >/dev/null && pass "history verify after import" ||
    fail "history verify after import"
again=$("$BD_BIN" -C "$root" history import "$out/shard-0" "$out/shard-1" "$out/shard-2" "$out/shard-3")
grep -q "nothing changed" <<<"$again" && pass "importing again changes nothing" ||
    fail "second import: $again"

# The same cases on one machine.
one=$(demo_copy)
"$BD_BIN" -C "$one" run $TC --json 2>/dev/null | tail -n 1 >"$BD_TMP/one.json"
if python3 - "$BD_TMP/import.json" "$BD_TMP/one.json" <<'PY'; then
import json, sys
imp = json.load(open(sys.argv[1]))
one = json.load(open(sys.argv[2]))["summary"]
keys = ["cases", "passed", "failed", "mean_score", "ci95", "failure_modes", "cost_usd"]
a = {k: imp["summary"][k] for k in keys}
b = {k: one[k] for k in keys}
print("merged:   ", json.dumps(a, sort_keys=True))
print("one host: ", json.dumps(b, sort_keys=True))
sys.exit(0 if a == b and imp["appended"] == one["cases"] else 1)
PY
    pass "merged summary equals the one-machine run"
else
    fail "merged summary differs from the one-machine run"
fi

pids=("${SL_PIDS[@]}")
slurm_stop
left=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left=1; done
[ "$left" = 0 ] && pass "daemons stopped by pid" || fail "a daemon outlived slurm_stop"
[ "$fails" -gt 0 ] && slurm_logs
finish
