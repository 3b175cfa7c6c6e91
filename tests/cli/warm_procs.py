"""What the warm tests check is left behind: processes seen during a run, and processes of
a private benchdesk-warm binary. Imported by the scripts test_run_warm_prepared.sh embeds
(sys.path gets $BD_SOURCE_DIR/tests/cli); prints "ok  " or "FAIL" lines for report_lines
(lib.sh)."""
import os


def alive(pid, start):
    """Whether process `pid` is still the one that started at `start` (field 22 of stat)."""
    try:
        return open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()[19] == start
    except OSError:
        return False


def report_left(seen, exe, what):
    """One line for the (pid, start) pairs in `seen` still alive (`what` names them), one
    for any process left whose executable is `exe` (the test's private benchdesk-warm) or
    the benchdesk-supervisor beside it."""
    left = [k for k in seen if alive(*k)]
    print(("ok  " if not left else "FAIL") + " %s: %s" % (what, left))
    exes = (exe, os.path.join(os.path.dirname(exe), "benchdesk-supervisor"))
    stray = []
    for p in os.listdir("/proc"):
        try:
            if p.isdigit() and os.readlink("/proc/%s/exe" % p) in exes:
                stray.append(int(p))
        except OSError:
            pass
    print(("ok  " if not stray else "FAIL")
          + " no process of this benchdesk-warm or benchdesk-supervisor is left: %s" % stray)
