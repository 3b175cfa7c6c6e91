#!/usr/bin/env bash
# Where a warm run lays out its cases' verified bytes (docs/runner.md#the-staging-directory):
#   - with TMPDIR on a disk and /dev/shm a tmpfs open to all (sticky, root's, room to
#     spare), the run's staging dir and every case dir in it lie in /dev/shm, none in
#     TMPDIR; the case dir holds the verified case/ (read-only) and rubric.py;
#   - inside the case's jail its cwd still appears in TMPDIR, as a cold start's does (the
#     probe's cwd_dir, warm and cold);
#   - a dead run's staging dir left in /dev/shm is swept when the next warm run starts, and
#     the run leaves nothing of its own there (nor in TMPDIR);
#   - as root, with TMPDIR on a tmpfs of its own, the staging dir goes there, not to
#     /dev/shm; a staging dir with no room left stops the run with one line that names it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/run_lib.sh"
private_binaries
require_warm

# Whether /dev/shm can take the staging dir (the rule of warm_start.c's staging_parent).
shm_ok=$("$PY" - <<'PY'
import os, stat
try:
    st, fs = os.lstat("/dev/shm"), os.statvfs("/dev/shm")
    tmpfs = any(l.split()[1] == "/dev/shm" and l.split()[2] == "tmpfs" for l in open("/proc/mounts"))
    print(int(tmpfs and stat.S_ISDIR(st.st_mode) and st.st_uid == 0
              and st.st_mode & 0o1777 == 0o1777 and os.access("/dev/shm", os.W_OK | os.X_OK)
              and fs.f_bavail * fs.f_bsize >= 256 << 20))
except OSError:
    print(0)
PY
)

# watch_run TMP OUT: the adversarial sleep-forever case (1 s wall limit) warm with
# TMPDIR=TMP in the background; while it runs, "<staging dir> <case dir>" of its first
# case dir seen (by the run's owner tag, anywhere in /dev/shm or TMP) goes to OUT.watch, a
# listing of that case dir to OUT.ls; the run's events to OUT.
watch_run() {
    local tmp=$1 out=$2 pid dir i
    : >"$out.watch"
    TMPDIR="$tmp" "$BD_BIN" -C "$FX" run adversarial --isolation namespaces --drafts \
        --case sleep-forever --start warm --json >"$out" 2>"$out.err" &
    pid=$!
    for i in $(seq 1 400); do
        for dir in /dev/shm/benchdesk-run-p"$pid"s*-warm-*/benchdesk-run-p"$pid"s*-sleep-forever-* \
            "$tmp"/benchdesk-run-p"$pid"s*-warm-*/benchdesk-run-p"$pid"s*-sleep-forever-*; do
            [ -d "$dir" ] || continue
            (cd "$dir" && stat -c '%n %A' case rubric.py) >"$out.ls" 2>&1 || true
            echo "$(dirname "$dir") $dir" >"$out.watch"
            break 2
        done
        sleep 0.02
    done
    wait "$pid" || true
    OWNER="p${pid}s"
}

# A dead run's staging dir in /dev/shm (pid 0 never lives): swept by the next warm run.
dead=""
if [ "$shm_ok" = 1 ]; then
    dead=$(mktemp -d /dev/shm/benchdesk-run-p999999999s1-warm-XXXXXX)
    mkdir "$dead/benchdesk-run-p999999999s1-x-AAAAAA" && echo left >"$dead/benchdesk-run-p999999999s1-x-AAAAAA/f"
    trap 'rm -rf "$BD_TMP" "$dead"' EXIT
fi

watch_run "$RUNTMP" "$BD_TMP/s1"
[ "$(started "$BD_TMP/s1")" = "warm " ] && pass "the watched run started warm" ||
    fail "the watched run: $(started "$BD_TMP/s1") $(cat "$BD_TMP/s1.err")"
read -r staging casedir <"$BD_TMP/s1.watch" || true
if [ "$shm_ok" = 1 ]; then
    case "$staging" in
    /dev/shm/benchdesk-run-"$OWNER"*-warm-*) pass "the staging dir lies in /dev/shm ($staging)" ;;
    *) fail "the staging dir is '$staging', not in /dev/shm" ;;
    esac
else
    case "$staging" in
    "$RUNTMP"/benchdesk-run-"$OWNER"*-warm-*) pass "no room in /dev/shm: the staging dir lies in TMPDIR" ;;
    *) fail "the staging dir is '$staging', not in TMPDIR" ;;
    esac
fi
grep -q "^case dr-xr-xr-x$" "$BD_TMP/s1.ls" && grep -q "^rubric.py -r--------$" "$BD_TMP/s1.ls" &&
    pass "the case dir holds the verified case/ (read-only) and rubric.py" ||
    fail "the case dir's listing: $(cat "$BD_TMP/s1.ls")"
"$PY" - "$BD_TMP/s1" <<'PY' >"$BD_TMP/r1" || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/r1"
import json, sys
fin = [json.loads(l) for l in open(sys.argv[1]) if '"case.finished"' in l]
mode = [m["code"] for m in fin[0]["score"]["failure_modes"]] if fin else None
print(("ok  " if mode == ["rubric.timeout"] else "FAIL") + " the watched case ends as on a cold start: %s" % mode)
PY
report_lines "$BD_TMP/r1"
left=$(find /dev/shm "$RUNTMP" -maxdepth 1 -name "benchdesk-run-$OWNER*" 2>/dev/null | wc -l)
[ "$left" = 0 ] && pass "the run left nothing of its own in /dev/shm or TMPDIR" ||
    fail "the run left $left dirs: $(find /dev/shm "$RUNTMP" -maxdepth 1 -name "benchdesk-run-$OWNER*")"
if [ -n "$dead" ]; then
    [ ! -e "$dead" ] && pass "a dead run's staging dir in /dev/shm was swept" ||
        fail "a dead run's staging dir in /dev/shm is still there: $dead"
fi

# The probe, cold then warm: its cwd appears in TMPDIR either way.
bd run probe --isolation namespaces --drafts --start cold >/dev/null 2>&1 || fail "the cold probe run failed"
bd run probe --isolation namespaces --drafts --start warm >/dev/null 2>&1 || fail "the warm probe run failed"
"$PY" - "$FX/.benchdesk/runs" "$RUNTMP" <<'PY' >"$BD_TMP/r2" || echo "FAIL the checker crashed (exit $?)" >>"$BD_TMP/r2"
import sys
sys.path.insert(0, __import__("os").environ["BD_SOURCE_DIR"] + "/tests/cli")
from warm_probe import CASES, probe_runs
cold, warm = probe_runs(sys.argv[1])
for c in CASES:
    got = (cold[c]["cwd_dir"], warm[c]["cwd_dir"])
    print(("ok  " if got == (sys.argv[2], sys.argv[2]) else "FAIL")
          + " %s: the cwd appears in TMPDIR in its jail, cold and warm: %s" % (c, got))
PY
report_lines "$BD_TMP/r2"

# As root: TMPDIR on a tmpfs of its own takes the staging dir itself.
if [ "$(id -u)" = 0 ]; then
    T="$BD_TMP/tmpfs"
    mkdir -p "$T"
    if mount -t tmpfs -o size=64m,mode=0700 tmpfs "$T"; then
        trap 'umount -l "$T" 2>/dev/null || true; rm -rf "$BD_TMP" "$dead"' EXIT
        watch_run "$T" "$BD_TMP/s2"
        read -r staging casedir <"$BD_TMP/s2.watch" || true
        case "$staging" in
        "$T"/benchdesk-run-"$OWNER"*-warm-*) pass "TMPDIR on a tmpfs: the staging dir lies in TMPDIR" ;;
        *) fail "TMPDIR on a tmpfs: the staging dir is '$staging'" ;;
        esac
        umount "$T" || fail "cannot unmount the test's tmpfs $T"
        # A staging dir with no room for a case's dir: the run stops with one line that
        # names the staging dir and what to do, and records nothing.
        if mount -t tmpfs -o size=8m,nr_inodes=2,mode=0700 tmpfs "$T"; then
            rc=0
            TMPDIR="$T" "$BD_BIN" -C "$FX" run adversarial --isolation namespaces --drafts \
                --case pass --start warm >"$BD_TMP/full.out" 2>"$BD_TMP/full.err" || rc=$?
            if [ "$rc" != 0 ] && grep -q "^benchdesk: io.error: $T/benchdesk-run-.*-warm-.*: cannot create a temp dir for case 'pass' in the warm run's staging directory (free space there, or run with --start cold)" "$BD_TMP/full.err"; then
                pass "a full staging dir stops the run with one line naming it ($rc)"
            else
                fail "a full staging dir -> $rc: $(cat "$BD_TMP/full.err")"
            fi
            umount "$T" || fail "cannot unmount the test's tmpfs $T"
        else
            fail "cannot mount a tiny tmpfs at $T as root"
        fi
    else
        fail "cannot mount a tmpfs at $T as root"
    fi
else
    echo "note: not root: the tmpfs TMPDIR part needs a mount and is left out"
fi
finish
