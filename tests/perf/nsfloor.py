# The namespace floor (run by warm_bench.sh and signed_e2e_bench.sh; time it from outside):
# what a fresh namespace set costs per case on this machine. N forks that each unshare()
# into new user, PID, mount, network, IPC and UTS namespaces, fork the new PID
# namespace's PID 1, which exits, and exit; nothing else, so no jailed start is cheaper.
#
#   python3 nsfloor.py N [STREAMS]    N forks in all, split over STREAMS processes running
#                                     side by side (default 1): how far the kernel lets
#                                     namespace creation and teardown scale
#
#   python3 nsfloor.py N [STREAMS] --warm RUBRIC DOC [--copies 1|2|3]
#       the one-copy warm floor (docs/runner.md#a-machine-where-every-page-table-write-traps):
#       this interpreter compiles RUBRIC, imports what the warm interpreter would of its
#       allowlist (warm_allowlist.py reads it from src/run/warm.h: the first module, and
#       the others RUBRIC's code names) and freezes its objects as the warm interpreter
#       does; then, per case, ONE clone(2) straight into a fresh
#       namespace set, whose child (PID 1 of its namespace) gets DOC on stdin and /dev/null
#       on stdout, fresh text streams over them, and runs the compiled rubric in a fresh
#       __main__ namespace, flushes and exits. That is less than any warm case must do: one
#       copy of the interpreter, the fewest a case can have (the rubric is a fork of it),
#       no separate init, no jail, no limits, no restored state, no supervisor, nothing
#       recorded. So no warm start of that rubric can be cheaper per case on this machine.
#       A warm case's tree has that one copy too (docs/runner.md#how-a-warm-case-runs: its
#       init and supervisor are a small program), so what it costs above this floor is
#       benchdesk's work and the two small programs' starts. --copies 2 gives the same
#       rubric two copies of the interpreter instead: a clone into the fresh namespace set
#       (the init, PID 1), which forks the rubric (PID 2) and waits for it; still nothing
#       else — the tree a warm case had while its init was a copy of the interpreter.
#       --copies 3 adds a fork before the clone (a supervisor that is a copy too): the tree
#       a warm case had when its supervisor was a fork of the warm interpreter, and still
#       has without benchdesk-supervisor.
import ctypes, gc, io, os, sys

from warm_allowlist import imported_for

FLAGS = 0x10000000 | 0x20000000 | 0x00020000 | 0x40000000 | 0x08000000 | 0x04000000
SIGCHLD = 17
CLONE_NR = {"x86_64": 56, "aarch64": 220}  # clone(flags, stack=0, ...) forks like fork()


def wait_then_exit(pid):
    """The end of a process that only waits for its one child (an init, a supervisor)."""
    if pid < 0:
        os._exit(1)
    _, st = os.waitpid(pid, 0)
    os._exit(0 if st == 0 else 1)


def cold_case(libc):
    pid = os.fork()
    if pid == 0:
        if libc.unshare(FLAGS) != 0:
            os._exit(1)
        init = os.fork()
        if init == 0:  # PID 1 of the new PID namespace
            os._exit(0)
        wait_then_exit(init)
    return pid


def clone_into_namespaces(libc):
    return libc.syscall(CLONE_NR[os.uname().machine], FLAGS | SIGCHLD, 0, 0, 0, 0)


def init_and_rubric(libc, warm):
    """Clones the init into a fresh namespace set; the init forks the rubric (PID 2)."""
    init = clone_into_namespaces(libc)
    if init == 0:
        rubric = os.fork()
        if rubric == 0:
            run_rubric(warm)
        wait_then_exit(rubric)
    return init


def warm_case(libc, warm, copies):
    if copies == 1:
        pid = clone_into_namespaces(libc)
        if pid == 0:
            run_rubric(warm)
        return pid
    if copies == 2:
        return init_and_rubric(libc, warm)
    pid = os.fork()  # the supervisor
    if pid == 0:
        wait_then_exit(init_and_rubric(libc, warm))
    return pid


def run_rubric(warm):
    """The rubric's process: the case's document on stdin, fresh text streams, the compiled
    rubric in a fresh __main__; never returns."""
    code, doc, null = warm
    try:
        os.lseek(doc, 0, os.SEEK_SET)
        os.dup2(doc, 0)
        os.dup2(null, 1)
        sys.stdin = io.TextIOWrapper(io.open(0, "rb", closefd=False), "utf-8")
        sys.stdout = io.TextIOWrapper(io.open(1, "wb", closefd=False), "utf-8")
        exec(code, {"__name__": "__main__", "__builtins__": __builtins__})
        sys.stdout.flush()
    except BaseException:
        os._exit(1)
    os._exit(0)


def stream(n, warm, copies=1):
    libc = ctypes.CDLL(None, use_errno=True)
    if warm:  # a file offset of its own: streams side by side must not share one
        code, doc, null = warm
        warm = (code, os.open("/proc/self/fd/%d" % doc, os.O_RDONLY), null)
    for _ in range(n):
        pid = warm_case(libc, warm, copies) if warm else cold_case(libc)
        if pid < 0:
            sys.exit("clone into new namespaces failed: %s" % os.strerror(ctypes.get_errno()))
        _, st = os.waitpid(pid, 0)
        if st != 0:
            sys.exit("unshare failed" if not warm else "the rubric failed in the floor's clone")


def warm_setup(rubric, doc):
    if os.uname().machine not in CLONE_NR:
        sys.exit("nsfloor --warm: no clone number for %s" % os.uname().machine)
    with open(rubric, "rb") as f:
        code = compile(f.read(), "rubric.py", "exec", dont_inherit=True)
    for name in imported_for(code):
        __import__(name)
    fds = (os.open(doc, os.O_RDONLY), os.open(os.devnull, os.O_WRONLY))
    gc.freeze()
    return (code,) + fds


args = sys.argv[1:]
warm, copies = None, 1
if "--copies" in args:
    i = args.index("--copies")
    copies = int(args[i + 1])
    del args[i : i + 2]
    if copies not in (1, 2, 3):
        sys.exit("nsfloor: --copies is 1 (the fewest), 2 (an init and its rubric) or 3 (a warm"
                 " case's process tree)")
if "--warm" in args:
    i = args.index("--warm")
    warm = warm_setup(args[i + 1], args[i + 2])
    del args[i : i + 3]
n, streams = int(args[0]), int(args[1]) if len(args) > 1 else 1
if streams == 1:
    stream(n, warm, copies)
    sys.exit(0)
pids = []
for k in range(streams):
    pid = os.fork()
    if pid == 0:
        try:
            stream(n // streams + (1 if k < n % streams else 0), warm, copies)
        except SystemExit as e:
            os._exit(1 if e.code else 0)
        os._exit(0)
    pids.append(pid)
if any(os.waitpid(p, 0)[1] != 0 for p in pids):
    sys.exit("a floor stream failed")
