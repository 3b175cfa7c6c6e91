#!/usr/bin/env bash
# isolation_cost.sh — what each isolation costs per case, on the same trivial rubric
# (tests/fixtures/rubrics/trivial.py), in one run.
#
#   tests/perf/isolation_cost.sh [N_CASES]      (default 200 cases, best of 3 rounds)
#
# Part 1, through the chokepoint (a driver on the core API, its own exec server): per case
# a fresh temp dir with rubric.py, the rubric's document on stdin (docs/formats.md#benchscore),
# the scrubbed environment, rlimits, deadline, then the dir removed — identical for every
# row but the isolation:
#   subprocess   the class `subprocess`
#   namespaces   the class `namespaces` (src/run/jail.c: new user/PID/mount/net/IPC/UTS
#                namespaces, minimal read-only root, Landlock, seccomp)
#   bwrap        `subprocess` + `bwrap --unshare-all --die-with-parent` (read-only /usr,
#                /lib*, fresh /proc, /dev, tmpfs /tmp, the cwd bound) wrapping the rubric
#   firejail     `subprocess` + `firejail --quiet --noprofile --net=none` wrapping it
# Rounds are interleaved (every row once per round) so a busy machine hurts all alike.
# Part 2, the whole command: `python3 -s rubric.py < doc` in a shell loop (the floor),
# then `benchdesk run --jobs 1` under subprocess and under namespaces.
#
# bwrap and firejail are benchmark peers only, never dependencies: installed here with
# apt-get when missing (as root); when one cannot run, its row says why.
# Aims (reported, not enforced): namespaces <= 1.25x subprocess per case, and cheaper
# than bwrap and than firejail.
# Uses BD_BIN if set, else the release build in build/release (configured and built here);
# the driver is built against that build's core library.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
n=${1:-200}
rounds=3
die() {
    echo "isolation_cost: $*" >&2
    exit 1
}
PY=${BENCHDESK_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || die "no python at $PY (set BENCHDESK_PYTHON)"
PY=$(readlink -f "$PY")

rel=${BD_PERF_BUILD:-$src/build/release}
[ -f "$rel/CMakeCache.txt" ] || cmake -S "$src" -B "$rel" -DBD_FLAVOUR=release >/dev/null
cmake --build "$rel" -j"$(nproc)" --target bd_analysis >/dev/null || die "release build failed"
if [ -z "${BD_BIN:-}" ]; then
    cmake --build "$rel" -j"$(nproc)" --target benchdesk >/dev/null || die "release build failed"
    BD_BIN="$rel/src/benchdesk"
fi
[ -x "$BD_BIN" ] || die "no benchdesk binary at $BD_BIN"
grep -q -- "-fsanitize" "$(dirname "$BD_BIN")/../CMakeCache.txt" 2>/dev/null &&
    echo "warning: $BD_BIN looks like a sanitizer build; numbers will be high" >&2

# The peers, for the benchmark only.
missing=()
command -v bwrap >/dev/null || missing+=(bubblewrap)
command -v firejail >/dev/null || missing+=(firejail)
if [ "${#missing[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "isolation_cost: installing ${missing[*]} (benchmark peers only)" >&2
    apt-get install -y "${missing[@]}" >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 && apt-get install -y "${missing[@]}" >/dev/null 2>&1; } ||
        echo "isolation_cost: could not install ${missing[*]}" >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/benchdesk-perf-iso.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tmp" "$work/cwd"
chmod 755 "$work" "$work/cwd"
export TMPDIR="$work/tmp"
"$PY" -s "$src/tests/fixtures/rubrics/mkbench.py" "$work/fx" --only trivial --trivial "$n" \
    --manifest "$work/manifest.json" >/dev/null
cp "$work/fx/bench/trivial/rubric.py" "$work/cwd/rubric.py"
"$PY" - "$work/manifest.json" >"$work/doc.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))[0]
json.dump({"case": c["case"], "expected": c["case"]["expected"],
           "harness_output": c["harness_output"], "case_dir": "case"}, sys.stdout)
PY

# ---- part 1: the driver -------------------------------------------------------------------
cat >"$work/driver.c" <<'C'
/* driver MODE N PYTHON RUBRIC DOC [WRAPPER ARGS...]: N cases through the chokepoint;
 * prints "ok <ms>" or "fail <why>". MODE: subprocess | namespaces | wrap. For wrap, the
 * wrapper's argv follows; "@CWD@" in it is replaced by each case's temp dir. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec.h"

static int rm_entry(const char *p, const struct stat *st, int fl, struct FTW *f)
{
    (void)st, (void)fl, (void)f;
    return remove(p);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(1 << 20);
    *len = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[*len] = '\0';
    return buf;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], BD_EXEC_HELPER_ARG) == 0)
        return bd_exec_helper_main(argc, argv);
    if (argc < 6)
        return 2;
    const char *mode = argv[1], *py = argv[3];
    int n = atoi(argv[2]);
    size_t rlen, dlen;
    char *rubric = slurp(argv[4], &rlen), *doc = slurp(argv[5], &dlen);
    bd_err e = BD_ERR_INIT;
    bd_exec_ctx *ctx;
    bd_isolation iso = strcmp(mode, "namespaces") == 0 ? BD_ISO_NAMESPACES : BD_ISO_SUBPROCESS;
    if (!rubric || !doc || bd_exec_ctx_new(&ctx, iso, NULL, &e) != 0 ||
        bd_exec_ctx_allow(ctx, py, &e) != 0) {
        printf("fail %s\n", e.msg[0] ? e.msg : "cannot read the rubric or the document");
        return 1;
    }
    int nw = strcmp(mode, "wrap") == 0 ? argc - 6 : 0;
    if (nw > 0 && bd_exec_ctx_allow(ctx, argv[6], &e) != 0) {
        printf("fail %s\n", e.msg);
        return 1;
    }
    const char *tmp = getenv("TMPDIR");
    double t0 = now_ms();
    for (int i = 0; i < n; i++) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/bd-iso-case-XXXXXX", tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            printf("fail mkdtemp\n");
            return 1;
        }
        char path[4200];
        snprintf(path, sizeof(path), "%s/rubric.py", dir);
        FILE *f = fopen(path, "wb");
        fwrite(rubric, 1, rlen, f);
        fclose(f);
        if (nw > 0) {
            const char *w[64];
            for (int k = 0; k < nw && k < 63; k++)
                w[k] = strcmp(argv[6 + k], "@CWD@") == 0 ? dir : argv[6 + k];
            w[nw < 63 ? nw : 63] = NULL;
            if (bd_exec_ctx_set_wrapper(ctx, w, &e) != 0) {
                printf("fail %s\n", e.msg);
                return 1;
            }
        }
        const char *av[] = {py, "-s", "rubric.py", NULL};
        bd_exec_spec spec = {av, dir, doc, dlen, BD_EXEC_LIMITS_INIT, NULL, false};
        bd_exec_result r;
        if (bd_exec_run(&r, ctx, &spec, &e) != 0) {
            printf("fail %s\n", e.msg);
            return 1;
        }
        if (!r.started || !r.exited || r.exit_code != 0 || !strstr(r.out, "\"passed\": true")) {
            char line[200];
            snprintf(line, sizeof(line), "%s%s", r.setup_error, r.err);
            for (char *c = line; *c; c++)
                if (*c == '\n')
                    *c = ' ';
            printf("fail exit %d signal %d: %s\n", r.exit_code, r.term_signal, line);
            return 1;
        }
        bd_exec_result_free(&r);
        nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    printf("ok %.0f\n", now_ms() - t0);
    bd_exec_ctx_free(ctx);
    free(rubric);
    free(doc);
    return 0;
}
C
. "$src/tests/perf/core_flags.sh"
# shellcheck disable=SC2046
cc -O2 -std=c11 -D_GNU_SOURCE $(bd_core_cflags "$src" "$rel") "$work/driver.c" -o "$work/driver" \
    $(bd_core_libs "$rel") \
    $(pkg-config --libs libcjson libcrypto libuv yaml-0.1 libgit2 gpgme libseccomp sqlite3) -lm -lpthread ||
    die "cannot build the driver"

# bwrap's view: the host's /usr read-only, /lib* and /bin as the host has them.
bwrap_cmd=("$(command -v bwrap || echo /usr/bin/bwrap)" --unshare-all --die-with-parent --ro-bind /usr /usr)
for d in bin sbin lib lib32 lib64 libx32; do
    if [ -L "/$d" ]; then
        bwrap_cmd+=(--symlink "$(readlink "/$d")" "/$d")
    elif [ -d "/$d" ]; then
        bwrap_cmd+=(--ro-bind "/$d" "/$d")
    fi
done
bwrap_cmd+=(--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache --proc /proc --dev /dev
    --tmpfs /tmp --bind @CWD@ @CWD@ --chdir @CWD@)
firejail_cmd=("$(command -v firejail || echo /usr/bin/firejail)" --quiet --noprofile --net=none)

declare -A args best why
args[subprocess]="subprocess"
args[namespaces]="namespaces"
rows=(subprocess namespaces)
if command -v bwrap >/dev/null; then rows+=(bwrap); else why[bwrap]="not installed (apt-get install bubblewrap)"; fi
if command -v firejail >/dev/null; then rows+=(firejail); else why[firejail]="not installed (apt-get install firejail)"; fi
drive() { # row count -> "ok MS" | "fail WHY"
    case $1 in
    subprocess | namespaces) "$work/driver" "$1" "$2" "$PY" "$work/cwd/rubric.py" "$work/doc.json" ;;
    bwrap) "$work/driver" wrap "$2" "$PY" "$work/cwd/rubric.py" "$work/doc.json" "${bwrap_cmd[@]}" ;;
    firejail) "$work/driver" wrap "$2" "$PY" "$work/cwd/rubric.py" "$work/doc.json" "${firejail_cmd[@]}" ;;
    esac 2>&1 | tail -1
}
echo "isolation_cost: $n cases, best of $rounds, $(nproc) CPUs, $(uname -r), $("$PY" --version 2>&1), uid $(id -u)" >&2
live=()
for row in "${rows[@]}"; do # one case first: a row that cannot run here says why
    out=$(drive "$row" 1)
    if [[ $out == ok* ]]; then live+=("$row"); else why[$row]="cannot run here: ${out#fail }"; fi
done
for r in $(seq "$rounds"); do
    for row in "${live[@]}"; do
        out=$(drive "$row" "$n")
        if [[ $out != ok* ]]; then
            why[$row]="failed: ${out#fail }"
            continue
        fi
        ms=${out#ok }
        if [ -z "${best[$row]:-}" ] || [ "$ms" -lt "${best[$row]}" ]; then best[$row]=$ms; fi
        printf '  round %d  %-12s %8d ms\n' "$r" "$row" "$ms" >&2
    done
done

# ---- part 2: the whole command ----------------------------------------------------------------
now() { date +%s%N; }
whole() { # name command...: best of $rounds in ms
    local b=0 t0 t1 ms name=$1
    shift
    for _ in $(seq "$rounds"); do
        t0=$(now)
        "$@" || { why[$name]="failed"; return 0; }
        t1=$(now)
        ms=$(((t1 - t0) / 1000000))
        if [ "$b" = 0 ] || [ "$ms" -lt "$b" ]; then b=$ms; fi
    done
    best[$name]=$b
    printf '  %-26s %8d ms\n' "$name" "$b" >&2
}
bare() {
    (cd "$work/cwd" && for _ in $(seq "$n"); do "$PY" -s rubric.py <"$work/doc.json" >/dev/null; done)
}
bench() { # class
    local out
    out=$("$BD_BIN" -C "$work/fx" run trivial --drafts --jobs 1 --isolation "$1" 2>&1) ||
        { echo "$out" >&2; return 1; }
    grep -qE "^  passed +$n\$" <<<"$out" || { echo "not all $n cases passed: $out" >&2; return 1; }
}
whole "bare python" bare
whole "benchdesk run subprocess" bench subprocess
whole "benchdesk run namespaces" bench namespaces

vals=()
for name in subprocess namespaces bwrap firejail "bare python" "benchdesk run subprocess" "benchdesk run namespaces"; do
    vals+=("$name" "${best[$name]:-}" "${why[$name]:-}")
done
"$PY" - "$n" "${vals[@]}" <<'PY'
import sys
n = int(sys.argv[1])
t, notes, order = {}, {}, []
it = iter(sys.argv[2:])
for name, ms, note in zip(it, it, it):
    order.append(name)
    t[name] = int(ms) if ms else None
    notes[name] = note
def table(title, names, base):
    print(title)
    print("  %-26s %10s %12s %10s %16s" % ("variant", "total ms", "ms per case", "ratio", "added per case"))
    for name in names:
        ms = t[name]
        if ms is None:
            print("  %-26s %s" % (name, notes[name] or "not measured"))
            continue
        b = t.get(base)
        ratio = "%.2fx" % (ms / b) if b else "-"
        added = "%+.2f ms" % ((ms - b) / n) if b and name != base else ""
        print("  %-26s %10d %12.2f %10s %16s" % (name, ms, ms / n, ratio, added))
table("through the chokepoint (ratio and added cost against subprocess)",
      ["subprocess", "namespaces", "bwrap", "firejail"], "subprocess")
print()
table("the whole command (ratio and added cost against bare python)",
      ["bare python", "benchdesk run subprocess", "benchdesk run namespaces"], "bare python")
def aim(ok, text):
    print("%-6s %s" % ("met" if ok else "MISSED", text))
print()
ns, sp = t["namespaces"], t["subprocess"]
if ns and sp:
    aim(ns <= 1.25 * sp, "namespaces <= 1.25x subprocess per case, through the chokepoint (%.2fx)" % (ns / sp))
wn, ws = t["benchdesk run namespaces"], t["benchdesk run subprocess"]
if wn and ws:
    aim(wn <= 1.25 * ws, "namespaces <= 1.25x subprocess per case, whole command (%.2fx)" % (wn / ws))
for peer in ("bwrap", "firejail"):
    if t[peer] is None or not ns:
        print("n/a    namespaces vs %s: %s" % (peer, notes[peer] or "not measured"))
    else:
        aim(ns < t[peer], "namespaces cheaper than %s (%.2f vs %.2f ms per case)" % (peer, ns / n, t[peer] / n))
PY
