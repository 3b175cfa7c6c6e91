#!/usr/bin/env bash
# signed_e2e_bench.sh — a fully signed bench of N cases end to end: the signatures (cold
# and warm signature memo) and the whole run (warm start, namespaces, history on)
# (docs/runner.md#a-signed-bench-end-to-end, docs/provenance.md#verifying-many-signatures).
#
#   tests/perf/signed_e2e_bench.sh [N]      (default 100000 cases)
#
# The bench: tests/perf/make_big_bench.sh with every case signed by both roles (SIGNED=N;
# gpg processes side by side, SIGN_JOBS), in $BD_E2E_DIR/n<N> (default /tmp/bd-e2e100k):
# made when missing (minutes: about 200,000 gpg processes for 100,000 cases), reused when
# present. Its history and run summaries are removed first, so every invocation measures
# the same bench; the signature memo is a private XDG_STATE_HOME made here, empty at first.
#
# Rows, each timed by /usr/bin/time (wall; peak RSS = the largest single process) and a
# cpuacct cgroup of its own when one can be made (as root; CPU = every process the command
# started, gpg, warm interpreters and rubrics included, whoever reaps them; else user + sys
# of the reaped process tree, which misses what jailed processes do), and beside it the
# whole machine's busy CPU during the row (/proc/stat: the kernel's own threads working for
# the row, tearing down the cases' namespaces, are in it; so is any other load):
#   verify, memo empty     `benchdesk verify` (cold): every signature checked, in-process
#                          (the bench's signatures are plain Ed25519) or by GnuPG
#   verify, memo filled    the same again: GnuPG's answers come from the memo (warm); after
#                          the cold check it runs twice, the first row ("first") showing
#                          what re-reading a bench that left the page cache costs
#   run gate, memo filled  `benchdesk run bulk --cost-cap 0 --start cold`: the whole gate
#                          (the chain, every pin, cassette and signature), then the cost
#                          cap of 0 stops the run before any case starts
#   run gate, memo empty   the same with a fresh memo (BD_E2E_GATE_COLD=1; as long as the
#                          cold verify)
#   run --jobs 2           `benchdesk run bulk --jobs 2 --start warm --isolation namespaces`,
#                          the whole command; checked: the summary says `start warm`, N
#                          passed, nothing unrecorded, and `history log --run` lists N
#                          records
#   run --jobs 1           the same at --jobs 1 (BD_E2E_JOBS1=1)
# BD_E2E_STATE=DIR keeps the memo in DIR (an XDG_STATE_HOME, mode 0700) across invocations;
# BD_E2E_COLD=0 then leaves out the cold verify, for a memo DIR that is already filled (the
# warm rows then show the memo's cost, not GnuPG's).
# and the floors measured on this machine now:
#   gpg verify             one `gpg --verify` of a case signature, 200 times one at a time
#                          with the bench's keys (GnuPG's cost of a signature alone)
#   gpg --multifile        the first cases' signatures (up to 2,000), wrapped as verify's
#                          batches wrap them, in one `gpg --multifile --verify`: its CPU per
#                          signature x 2N / the CPUs is what a cold verify would cost if
#                          GnuPG checked every signature (`verify --full`: nothing but
#                          GnuPG counted)
#   Ed25519                bd_perf_sigfloor (tests/perf/sigfloor.c): 2(N+1) Ed25519 checks
#                          with libsodium, one thread a CPU, nothing else — the arithmetic
#                          of the in-process check a cold verify makes of each signature;
#                          beside the walk, what a cold verify cannot go below
#   walk                   bd_perf_walkfloor (tests/perf/walkfloor.c) on the cases, one thread
#                          a CPU, right after the warm verify (the same cache state): only
#                          listing every directory, stat'ing (the digest covers execute
#                          bits), reading every file once and hashing its bytes — what any
#                          check that reads every case does before it parses or decides
#                          anything (a cold verify, and a warm one whose cases changed)
#   stat                   bd_perf_walkfloor --stat: one fstatat of each case directory and
#                          each entry below it (their list made beforehand, not timed),
#                          one thread a CPU — what a warm check of unchanged cases
#                          (docs/provenance.md#unchanged-cases) cannot go below: its CPU
#                          over the CPUs is the warm rows' floor
#   namespace floor        tests/perf/nsfloor.py, 1000 fresh namespace sets, one and two
#                          streams at once: the faster per case x N is what a run that
#                          gives each case its own jail cannot go below
# Aims (reported, not enforced), for 100,000 cases (in proportion for another N): verify
# and the run gate <= 30 s cold, <= 2 s warm; the run <= 7 min on 2 CPUs (5 min the
# stretch). Beside an aim missed, the floor that bounds
# it. The machine is shared: the load average is printed before and after each row.
#
# Uses BD_BIN if set, else the release build in build/release (configured and built here).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-100000}
dir=${BD_E2E_DIR:-/tmp/bd-e2e100k}
die() {
    echo "signed_e2e_bench: $*" >&2
    exit 1
}
. "$src/tests/perf/warm_lib.sh"
warm_bins
[ -x /usr/bin/time ] || die "needs /usr/bin/time (Debian: time)"
# The walk floor's program: BD_WALKFLOOR if set, else built in the release build.
walkfloor=${BD_WALKFLOOR:-}
if [ -z "$walkfloor" ]; then
    release_build bd_perf_walkfloor
    walkfloor="$src/build/release/tests/bd_perf_walkfloor"
fi
[ -x "$walkfloor" ] || die "no walk floor program at $walkfloor"
# The in-process signature floor's program: BD_SIGFLOOR if set, else the release build's.
sigfloor=${BD_SIGFLOOR:-}
if [ -z "$sigfloor" ]; then
    release_build bd_perf_sigfloor
    sigfloor="$src/build/release/tests/bd_perf_sigfloor"
fi
[ -x "$sigfloor" ] || die "no signature floor program at $sigfloor"
case "$dir" in /tmp/*) ;; *) die "BD_E2E_DIR must lie under /tmp (warm starts need their temp dirs there)" ;; esac

root="$dir/n$n"
mkdir -p "$dir"
if [ ! -f "$root/.complete" ]; then
    rm -rf "$root"
    echo "signed_e2e_bench: making a bench of $n signed cases in $root (log: $dir/gen-$n.log)" >&2
    t0=$(date +%s)
    SIGNED=$n SIGN_LOG="$dir/gen-$n.log" "$src/tests/perf/make_big_bench.sh" "$root" "$n" "$BD_BIN" ||
        die "make_big_bench.sh failed"
    echo "made in $(($(date +%s) - t0)) s" >>"$dir/gen-$n.log"
    touch "$root/.complete"
fi
rm -rf "$root/.benchdesk"
work=$(mktemp -d "$dir/run.XXXXXX")
cg=/sys/fs/cgroup/cpuacct/bd-e2e-$$
mkdir "$cg" 2>/dev/null || cg=
trap 'rm -rf "$work"; [ -z "$cg" ] || rmdir "$cg"' EXIT
mkdir -m 700 "$work/tmp" "$work/state-cold" "$work/state-gate"
# The memo the warm rows use: a fresh one, or BD_E2E_STATE's (kept; see BD_E2E_COLD).
state=${BD_E2E_STATE:-$work/state-cold}
# The history just removed had its index sealed in that state directory: without the seal
# the new history's index is made quietly, with it benchdesk would rightly warn that the
# index "was changed outside benchdesk" (docs/history.md).
rm -rf "$state/benchdesk/index-seals"
export TMPDIR="$work/tmp"
first=$(awk '$1=="cases:"{c=1;next} c&&NF==2{sub(/:$/,"",$1);print $1;exit}' "$root/bench/bulk/cases/digests.yaml")
load() { cut -d' ' -f1-3 /proc/loadavg | tr ' ' /; }
# The whole machine's busy CPU so far, in clock ticks (/proc/stat: all but idle and iowait).
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
hz=$(getconf CLK_TCK)
rows=()
# timed NAME STATE_DIR command... : one row "name wall_s cpu_s rss_mb load_before load_after
# machine_busy_s" (machine_busy_s: every CPU's busy time during the row, whoever used it);
# the command's output in $work/out and $work/err.
timed() {
    local name=$1 state=$2 l0 b0
    shift 2
    l0=$(load)
    b0=$(busy_ticks)
    echo "  $name (load $l0) ..." >&2
    [ -z "$cg" ] || echo 0 >"$cg/cpuacct.usage"
    (
        [ -z "$cg" ] || echo "$BASHPID" >"$cg/cgroup.procs"
        XDG_STATE_HOME="$state" exec /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >"$work/out" 2>"$work/err"
    ) || {
        tail -5 "$work/err" >&2
        die "$name failed"
    }
    read -r w u s m <"$work/time"
    local cpu
    cpu=$(echo "$u + $s" | bc)
    [ -z "$cg" ] || cpu=$(echo "scale=2; $(cat "$cg/cpuacct.usage") / 1000000000" | bc)
    local busy
    busy=$(echo "scale=2; ($(busy_ticks) - $b0) / $hz" | bc)
    rows+=("$name|$w|$cpu|$((m / 1024))|$l0|$(load)|$busy")
    echo "    wall $w s, cpu $cpu s, peak RSS $((m / 1024)) MB" >&2
}
signed_line="cases: $n signed, 0 awaiting review, 0 draft"
echo "signed_e2e_bench: $n cases, $(nproc) CPUs, load $(load), $BD_BIN, bench $root" >&2
if [ "${BD_E2E_COLD:-1}" = 1 ]; then
    timed "verify, memo empty" "$work/state-cold" "$BD_BIN" -C "$root" verify
    grep -qF "$signed_line" "$work/out" || die "verify did not find $n signed cases: $(tail -1 "$work/out")"
    [ "$state" = "$work/state-cold" ] || cp -a "$work/state-cold/." "$state/"
fi
# Right after the cold check, or after other work, the bench may have left the page cache
# (a machine that pages out what is idle for a minute: docs/runner.md#a-signed-bench-end-to-end),
# and a new build has no stamps of its own yet: this row shows that; the next one is the
# warm check the aim judges.
timed "verify, memo filled, first" "$state" "$BD_BIN" -C "$root" verify
grep -qF "$signed_line" "$work/out" || die "verify did not find $n signed cases"
timed "verify, memo filled" "$state" "$BD_BIN" -C "$root" verify
grep -qF "$signed_line" "$work/out" || die "verify did not find $n signed cases"
timed "floor: walk every case" "$state" "$walkfloor" "$root/bench/bulk/cases" "$(nproc)"
grep -q "^walkfloor: $n cases," "$work/out" || die "the walk floor did not read $n cases: $(cat "$work/out")"
# Every case directory and entry below it (digests.yaml, beside the cases, is not one).
(cd "$root/bench/bulk/cases" && find . -mindepth 1) | sed 's|^\./||' | grep -vx digests.yaml >"$work/paths"
timed "floor: stat every case entry" "$state" "$walkfloor" "$root/bench/bulk/cases" "$(nproc)" --stat "$work/paths"
grep -q "^walkfloor: [0-9]* paths stat'ed" "$work/out" || die "the stat floor failed: $(cat "$work/out")"
timed "floor: Ed25519 x$((2 * (n + 1)))" "$state" "$sigfloor" "$((2 * (n + 1)))" "$(nproc)"
grep -q "^sigfloor: $((2 * (n + 1))) signatures," "$work/out" || die "the signature floor failed: $(cat "$work/out")"
gate=(run bulk --cost-cap 0 --start cold --isolation namespaces --jobs 1)
if [ "${BD_E2E_GATE_COLD:-0}" = 1 ]; then
    timed "run gate, memo empty" "$work/state-gate" "$BD_BIN" -C "$root" "${gate[@]}"
fi
timed "run gate, memo filled" "$state" "$BD_BIN" -C "$root" "${gate[@]}"
grep -qE "^  cases +0 of $n\$" "$work/out" || die "the gate run did not select $n cases: $(grep cases "$work/out")"
# check_run JOBS: the run ran warm, passed and recorded every case.
check_run() {
    grep -qE '^  start +warm$' "$work/out" || die "--jobs $1 did not start warm: $(grep start "$work/out")"
    grep -qE "^  passed +$n\$" "$work/out" || die "--jobs $1 did not pass $n cases"
    local id recs
    id=$(awk '$1=="run"{print $2; exit}' "$work/out")
    recs=$(XDG_STATE_HOME="$state" "$BD_BIN" -C "$root" history log --run "$id" --json --limit $((n + 10)) |
        "$PY" -c 'import json,sys; print(len(json.load(sys.stdin)["records"]))')
    [ "$recs" = "$n" ] || die "--jobs $1: history log --run $id lists $recs records, not $n"
    echo "  run $id: start warm, $n passed, $recs records" >&2
}
run=(run bulk --start warm --isolation namespaces)
timed "run --jobs 2 (warm)" "$state" "$BD_BIN" -C "$root" "${run[@]}" --jobs 2
check_run 2
if [ "${BD_E2E_JOBS1:-0}" = 1 ]; then
    timed "run --jobs 1 (warm)" "$state" "$BD_BIN" -C "$root" "${run[@]}" --jobs 1
    check_run 1
fi

# The floors. GnuPG: the first case's author signature over its message, with the keys.
export GNUPGHOME="$work/gnupg"
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --import "$root"/bench/keys/*.asc 2>/dev/null
cdir="$root/bench/bulk/cases/$first"
printf 'benchdesk-provenance-v2\nrole: author\nsubject: case\ntask_class: bulk\ncase_id: %s\ndigest: %s\n' \
    "$first" "$("$BD_BIN" digest "$cdir")" >"$work/msg"
awk '$1=="author:"{a=1;next} a&&/^  signature: \|/{s=1;next} s&&(/^    /||/^$/){sub(/^    /,""); print; next} s{exit}' \
    "$cdir/provenance.yaml" >"$work/sig.asc"
gpg --batch --verify "$work/sig.asc" "$work/msg" 2>/dev/null || die "gpg does not verify $cdir's author signature"
timed "floor: gpg --verify x200" "$state" bash -c \
    'for _ in $(seq 200); do gpg --batch --quiet --no-autostart --trust-model always --verify "$1" "$2" 2>/dev/null; done' \
    _ "$work/sig.asc" "$work/msg"
# GnuPG in batches: the first cases' signatures (up to 2,000), each wrapped as verify's
# batches wrap it (docs/provenance.md#verifying-many-signatures), checked by one
# `gpg --multifile --verify`.
mkdir "$work/batch"
"$PY" - "$root/bench/bulk/cases" "$work/batch" <<'PY'
import base64, os, re, sys
cases, out = sys.argv[1], sys.argv[2]
def dearmor(text):
    lines = text.strip().split("\n")
    body = lines[lines.index("") + 1:]
    return base64.b64decode("".join(l for l in body if l and l[0] not in "-="))
k = 0
for cid in sorted(os.listdir(cases)):
    p = os.path.join(cases, cid, "provenance.yaml")
    if k >= 2000 or not os.path.isfile(p):
        continue
    text = open(p).read()
    for role in ("author", "reviewer"):
        block = text.split("\n" + role + ":\n", 1)[1]
        digest = re.search(r'digest: "([^"]+)"', block).group(1)
        armor = block.split("signature: |\n", 1)[1].split("-----END PGP SIGNATURE-----")[0]
        sig = dearmor("\n".join(l[4:] for l in armor.split("\n")))
        msg = ("benchdesk-provenance-v2\nrole: %s\nsubject: case\ntask_class: bulk\n"
               "case_id: %s\ndigest: %s\n" % (role, cid, digest)).encode()
        body = b"b\0\0\0\0\0" + msg
        assert len(body) < 192
        open(os.path.join(out, "%d.gpg" % k), "wb").write(sig + bytes([0xCB, len(body)]) + body)
        k += 1
PY
nbatch=$(find "$work/batch" -name '*.gpg' | wc -l)
timed "floor: gpg --multifile x$nbatch" "$state" bash -c \
    'find "$1" -name "*.gpg" | sort | gpg --batch --no-tty --no-autostart --trust-model always --status-fd 1 --multifile --verify 2>/dev/null | grep -c "^\[GNUPG:\] GOODSIG" >"$2"' \
    _ "$work/batch" "$work/goodsigs"
[ "$(cat "$work/goodsigs")" = "$nbatch" ] || die "gpg --multifile found $(cat "$work/goodsigs") good signatures of $nbatch"
gpgconf --homedir "$GNUPGHOME" --kill all >/dev/null 2>&1 || true
timed "floor: namespaces x1000, 1 stream" "$state" "$PY" "$src/tests/perf/nsfloor.py" 1000
timed "floor: namespaces x1000, 2 streams" "$state" "$PY" "$src/tests/perf/nsfloor.py" 1000 2
echo "load after: $(load)" >&2

"$PY" - "$n" "$(nproc)" "${cg:+cgroup}" "${rows[@]}" <<'PY'
import sys
n, cpus, cg = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
rows = {}
print("cpu s: %s" % ("the row's own cpuacct cgroup (every process it started)" if cg else
                     "user + sys of the reaped process tree (no cgroup: jailed work is missed)"))
print("machine busy s: every CPU's busy time during the row (/proc/stat), whoever used it: the "
      "kernel's own threads working for the row (tearing down namespaces) and any other load")
print("%-36s %9s %9s %8s  %-15s %-15s %14s" % ("row (%d signed cases)" % n, "wall s", "cpu s",
                                               "RSS MB", "load before", "load after",
                                               "machine busy s"))
for r in sys.argv[4:]:
    name, w, c, m, l0, l1, b = r.split("|")
    rows[name] = (float(w), float(c), float(b))
    print("%-36s %9.2f %9.2f %8s  %-15s %-15s %14.2f" % (name, float(w), float(c), m, l0, l1,
                                                         float(b)))
gpg_cpu = rows["floor: gpg --verify x200"][1] / 200
batch_name = [k for k in rows if k.startswith("floor: gpg --multifile x")][0]
batch_cpu = rows[batch_name][1] / int(batch_name.rsplit("x", 1)[1])
sigs = 2 * (n + 1)
gpg_floor = batch_cpu * sigs / cpus
ns1 = rows["floor: namespaces x1000, 1 stream"][0] / 1000
ns2 = rows["floor: namespaces x1000, 2 streams"][0] / 1000
ns_floor = min(ns1, ns2) * n
print()
print("floors: GnuPG %.2f ms CPU per signature alone, %.2f ms in a batch; in batches x %d "
      "signatures / %d CPUs = %.0f s; a fresh namespace set %.2f ms one at a time, %.2f ms "
      "per case two at a time (%.2fx) x %d cases = %.0f s"
      % (gpg_cpu * 1000, batch_cpu * 1000, sigs, cpus, gpg_floor, ns1 * 1000, ns2 * 1000,
         ns1 / ns2, n, ns_floor))
scale = n / 100000.0  # the aims are for 100,000 cases; another N scales them


def aim(name, limit, floor=None, floor_text="", stretch=None):
    if name not in rows:
        return
    limit *= scale
    stretch = stretch * scale if stretch is not None else None
    w = rows[name][0]
    ok = w <= limit
    extra = ""
    if stretch is not None:
        extra = "; stretch %.2f s %s" % (stretch, "met" if w <= stretch else "missed")
    print("%-6s %-26s %8.2f s, aim <= %.2f s%s" % ("met" if ok else "MISSED", name, w, limit, extra))
    if floor is not None and (not ok or (stretch is not None and w > stretch)):
        if floor > w:
            why = " (not a bound: the row itself is faster)"
        else:
            why = " (the aim is out of reach here)" if floor > limit else ""
        print("       floor: %s = %.1f s%s" % (floor_text, floor, why))
walk, walk_cpu = rows["floor: walk every case"][0], rows["floor: walk every case"][1]
stat_wall, stat_cpu = rows["floor: stat every case entry"][0], rows["floor: stat every case entry"][1]
# Warm, with every case unchanged, a check does at least a stat of each entry; on `cpus`
# CPUs that work alone needs its CPU time over the CPUs, however well it is spread: a
# lower bound, where the program's own wall time is only one program's.
warm_floor = stat_cpu / cpus
warm_text = ("the CPU of one stat of every case directory and entry "
             "(bd_perf_walkfloor --stat: %.2f s of CPU, %.2f s of wall on %d threads; reading "
             "every file too would take %.2f s of CPU) / %d CPUs"
             % (stat_cpu, stat_wall, cpus, walk_cpu, cpus))
ed_name = [k for k in rows if k.startswith("floor: Ed25519 x")][0]
ed_floor = rows[ed_name][0]
print("floors: in-process, %.1f us CPU per Ed25519 signature: x %d signatures / %d CPUs = %.1f s, "
      "beside the walk %.1f s = %.1f s" % (rows[ed_name][1] * 1e6 / sigs, sigs, cpus, ed_floor,
                                           walk, ed_floor + walk))
cold_floor = ed_floor + walk
cold_text = "the Ed25519 checks (bd_perf_sigfloor) + the walk, each on %d threads" % cpus
aim("verify, memo empty", 30, cold_floor, cold_text)
aim("verify, memo filled", 2, warm_floor, warm_text)
aim("run gate, memo empty", 30, cold_floor, cold_text)
aim("run gate, memo filled", 2, warm_floor, warm_text)
for name in ("run --jobs 2 (warm)", "run --jobs 1 (warm)"):
    aim(name, 420, ns_floor,
        "the namespace floor per case at the best parallelism measured x %d" % n, stretch=300)
    if name in rows:
        print("       its CPU: %.2f ms per case; on %d CPUs and nothing else, that alone takes %.0f s"
              % (rows[name][1] * 1000 / n, cpus, rows[name][1] / cpus))
        w, _, b = rows[name]
        print("       the machine: its %d CPUs %.0f %% busy during the run, %.2f ms per case "
              "(the kernel's threads and any other load included)"
              % (cpus, 100 * b / (w * cpus), b * 1000 / n))
PY
