# Helpers for the `benchdesk run` tests: a fixture bench and a private TMPDIR per test.
# Source after lib.sh.
FX="$BD_TMP/fx"
STATE="$BD_TMP/state"
RUNTMP="$BD_TMP/runtmp"
mkdir -p "$RUNTMP"
PY=$(command -v /usr/bin/python3 || command -v python3)
"$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --state "$STATE" --python "$PY" >/dev/null
bd() { TMPDIR="$RUNTMP" "$BD_BIN" -C "$FX" "$@"; }
# These tests pin the `subprocess` class (whose guarantees they check); the namespaces
# class has its own tests.
SUB=(--isolation subprocess)

# std_fds PID: what PID's fds 0-2 point at, each target once ("/dev/null " when all three
# are /dev/null).
std_fds() { for f in 0 1 2; do readlink "/proc/$1/fd/$f" 2>/dev/null || :; done | sort -u | tr '\n' ' '; }

# Number of entries left in the private TMPDIR.
tmp_left() { find "$RUNTMP" -mindepth 1 -maxdepth 1 | wc -l; }

# Processes whose working directory is under the private TMPDIR (a case's init and
# rubric show their jail's view of it, where a cold start's cwd would be), and, with
# private_binaries, this test's own warm supervisors, whose cwd is the case's dir in a warm
# run's staging dir in /dev/shm (docs/runner.md#the-staging-directory).
procs_left() {
    local n=0 p cwd
    for p in /proc/[0-9]*; do
        cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
        case "$cwd" in
        "$RUNTMP"/*) n=$((n + 1)) ;;
        /dev/shm/benchdesk-run-*)
            case "$BD_BIN" in "$BD_TMP"/*)
                [ "$(readlink "$p/exe" 2>/dev/null)" != "$BD_BIN-warm" ] || n=$((n + 1)) ;;
            esac ;;
        esac
    done
    echo "$n"
}

# private_binaries: run the rest of the test on its own copy of benchdesk, benchdesk-warm
# and benchdesk-supervisor (in $BD_TMP/bin, which others may enter), so the processes it
# looks for in /proc by their executable are its own, whatever other tests run beside it.
# Sets BD_BIN.
private_binaries() {
    mkdir -p "$BD_TMP/bin"
    cp "$BD_BIN" "$BD_TMP/bin/"
    [ ! -x "$BD_BIN-warm" ] || cp "$BD_BIN-warm" "$BD_TMP/bin/"
    [ ! -x "$BD_BIN-supervisor" ] || cp "$BD_BIN-supervisor" "$BD_TMP/bin/"
    chmod 755 "$BD_TMP/bin"
    BD_BIN="$BD_TMP/bin/benchdesk"
}

# started FILE: "<start> <start_reason>" of the run.started event in a `run --json` output.
started() {
    "$PY" -c 'import json,sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    if e["event"] == "run.started": print(e.get("start"), e.get("start_reason") or "")' "$1"
}

# run_adversarial MODE JOBS: the whole adversarial fixture under namespaces with --start
# MODE at --jobs JOBS, its events in $BD_TMP/adv.MODE (stderr in adv.err.MODE); passes when
# the run completes and run.started says it started MODE.
run_adversarial() {
    local m=$1 rc=0
    bd run adversarial --isolation namespaces --drafts --jobs "$2" --start "$m" --json \
        >"$BD_TMP/adv.$m" 2>"$BD_TMP/adv.err.$m" || rc=$?
    [ "$rc" = 0 ] && pass "$m: the adversarial run completes" || fail "$m run -> $rc: $(cat "$BD_TMP/adv.err.$m")"
    [ "$(started "$BD_TMP/adv.$m")" = "$m " ] && pass "$m: run.started says start $m" ||
        fail "$m: run.started says '$(started "$BD_TMP/adv.$m")'"
}

# require_warm: adds the probe task class to the fixture, then exits 77 (skipped, saying
# why) unless a warm namespaces run starts here: TMPDIR under /tmp, the jail built (under
# BD_REQUIRE_NAMESPACES=1 a jail that cannot be built fails instead), and the probe run
# with the default start saying `start warm` (its events stay in $BD_TMP/w0).
require_warm() {
    "$PY" -s "$BD_SOURCE_DIR/tests/fixtures/rubrics/mkbench.py" "$FX" --state "$STATE" \
        --python "$PY" --only probe >/dev/null
    case "$RUNTMP" in /tmp/*) ;; *) echo "SKIP: warm starts need TMPDIR under /tmp ($RUNTMP)"; exit 77 ;; esac
    local why
    if ! why=$(bd run probe --isolation namespaces --drafts --case probe-00 2>&1 >/dev/null); then
        [ "${BD_REQUIRE_NAMESPACES:-0}" = 1 ] && { echo "FAIL: the jail cannot be built: $why"; exit 1; }
        echo "SKIP: the namespaces jail is unavailable here: $why"; exit 77
    fi
    bd run probe --isolation namespaces --drafts --case probe-00 --json >"$BD_TMP/w0" 2>"$BD_TMP/w0.err" || true
    warm_or_skip "$BD_TMP/w0" "$BD_TMP/w0.err"
}

# warm_or_skip EVENTS STDERR: returns when the run whose --json events are in EVENTS started
# warm; exits 77 (skipped, saying why) when it started cold; fails when it never started (a
# crash is a failure, not a reason to skip), and when it started cold although this build
# has benchdesk-warm and the machine must build the jail (BD_REQUIRE_NAMESPACES=1): there a
# cold fallback is a broken warm start.
warm_or_skip() {
    local how
    how=$(started "$1")
    case "$how" in
    "warm ") ;;
    cold*)
        if [ "${BD_REQUIRE_NAMESPACES:-0}" = 1 ] && [ -x "$BD_BIN-warm" ]; then
            echo "FAIL: this build has benchdesk-warm and this machine namespaces, but the run started $how"
            exit 1
        fi
        echo "SKIP: this build or machine cannot start warm: $how"; exit 77 ;;
    *) echo "FAIL: the run that should say how it started did not start: $(head -c 2000 "$2")"; exit 1 ;;
    esac
}
