# The namespace floor (run by warm_bench.sh and signed_e2e_bench.sh; time it from outside):
# what a fresh namespace set costs per case on this machine. N forks that each unshare()
# into new user, PID, mount, network, IPC and UTS namespaces, fork the new PID
# namespace's PID 1, which exits, and exit; nothing else, so no jailed start is cheaper.
#
#   python3 nsfloor.py N [STREAMS]    N forks in all, split over STREAMS processes running
#                                     side by side (default 1): how far the kernel lets
#                                     namespace creation and teardown scale
import ctypes, os, sys

FLAGS = 0x10000000 | 0x20000000 | 0x00020000 | 0x40000000 | 0x08000000 | 0x04000000


def stream(n):
    libc = ctypes.CDLL(None, use_errno=True)
    for _ in range(n):
        pid = os.fork()
        if pid == 0:
            if libc.unshare(FLAGS) != 0:
                os._exit(1)
            if os.fork() == 0:  # PID 1 of the new PID namespace
                os._exit(0)
            os.wait()
            os._exit(0)
        _, st = os.waitpid(pid, 0)
        if st != 0:
            sys.exit("unshare failed")


n, streams = int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1
if streams == 1:
    stream(n)
    sys.exit(0)
pids = []
for k in range(streams):
    pid = os.fork()
    if pid == 0:
        try:
            stream(n // streams + (1 if k < n % streams else 0))
        except SystemExit as e:
            os._exit(1 if e.code else 0)
        os._exit(0)
    pids.append(pid)
if any(os.waitpid(p, 0)[1] != 0 for p in pids):
    sys.exit("unshare failed")
