#!/usr/bin/env bash
# Isolation classes, proved from outside (docs/runner.md; docs/security.md cites each row).
#
# The fixture bench tests/fixtures/isolation/bench/probes has one case per escape: TCP to
# a listener on 127.0.0.1, a DNS query to a resolver on 127.0.0.1, host name resolution,
# /proc/<ppid>/environ and every readable /proc entry searched for a secret put only in
# benchdesk's environment, writes to the bench, its own rubric.py, the history folder, a
# home directory and /tmp, reading a key in a home directory, agent sockets in a home
# directory, under /run and in the abstract namespace, ptrace and process_vm_readv of a
# victim process, a bounded fork bomb, a setsid + double-fork sleeper. run_probes.py runs
# them under `namespaces` (every one must be blocked) and under `subprocess` (the outcome
# of each is stated and checked: the holes that class leaves are expected failures, shown,
# never skipped), judging by what the rubric reported and what the host saw.
#
# Also: `--isolation auto` never falls back silently — with user namespaces disabled it
# exits 3 naming what is missing, and runs under subprocess only with
# --allow-weaker-isolation (the class used is in the events).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "FAIL: python3 is required"; exit 1; }

python3 "$BD_SOURCE_DIR/tests/fixtures/isolation/run_probes.py" || fail "isolation probes"

# Consent for a weaker class: inside a user namespace whose own limit of user namespaces
# is 0, the jail cannot be built.
if unshare -Ur true 2>/dev/null; then
    root="$BD_TMP/weaker"
    mkdir -p "$root"
    cp -a "$BD_SOURCE_DIR/tests/fixtures/isolation/bench" "$root/bench"
    out=$(unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces &&
          exec "$0" -C "$1" run probes --case dns-resolve --drafts' "$BD_BIN" "$root" 2>&1) && rc=0 || rc=$?
    if [ "$rc" = 3 ] && grep -q 'isolation.unavailable' <<<"$out" &&
       grep -q 'user.max_user_namespaces=0' <<<"$out" && grep -q -- '--allow-weaker-isolation' <<<"$out"; then
        pass "auto without user namespaces: exit 3, says what is missing"
    else
        fail "auto without user namespaces: exit $rc: $out"
    fi
    out=$(unshare -Ur sh -c 'echo 0 > /proc/sys/user/max_user_namespaces &&
          exec "$0" -C "$1" run probes --case dns-resolve --drafts --json --allow-weaker-isolation' \
          "$BD_BIN" "$root" 2>&1) && rc=0 || rc=$?
    if [ "$rc" = 0 ] && grep -q '"event":"run.started".*"isolation_class":"subprocess"' <<<"$out"; then
        pass "--allow-weaker-isolation: runs under subprocess and says so"
    else
        fail "--allow-weaker-isolation: exit $rc: $out"
    fi
else
    echo "note: cannot create a user namespace here (unshare -Ur failed); the fallback-consent check needs one"
    mkdir -p "$BD_TMP/auto"
    cp -a "$BD_SOURCE_DIR/tests/fixtures/isolation/bench" "$BD_TMP/auto/bench"
    if "$BD_BIN" -C "$BD_TMP/auto" run probes --case dns-resolve --drafts >/dev/null 2>"$BD_TMP/err"; then
        fail "namespaces unavailable, yet auto ran without --allow-weaker-isolation"
    elif grep -q 'isolation.unavailable' "$BD_TMP/err"; then
        pass "auto refuses (exit 3) where namespaces are unavailable: $(cat "$BD_TMP/err")"
    else
        fail "auto failed otherwise: $(cat "$BD_TMP/err")"
    fi
fi
finish
