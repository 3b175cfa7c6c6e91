#!/usr/bin/env bash
# One chokepoint (docs/runner.md): no file in src/ or ui/ outside the exec module (src/run/exec.c,
# the parent side, src/run/exec_server.c, the helper side, and src/run/exec_warm.c, the
# warm interpreter's processes; src/run/exec_supervisor.c only builds exec_server.c into
# benchdesk-supervisor and is scanned like any other file) may create
# a process — fork, vfork, exec*, system, popen, posix_spawn, uv_spawn, clone or a raw
# syscall — and outside src/provenance/sigbatch.c none may have GPGME run a program
# (gpgme_op_spawn: the one gpg that checks a batch of signatures; GPGME's own operations
# start the other gpg processes). Comments and string literals are ignored; everything
# else counts.
. "$(dirname "$0")/lib.sh"
scan="python3 $BD_SOURCE_DIR/tests/cli/chokepoint_scan.py"
cd "$BD_SOURCE_DIR"

mapfile -t files < <(find src ui -type f \( -name '*.c' -o -name '*.h' \) ! -path src/run/exec.c ! -path src/run/exec_server.c ! -path src/run/exec_warm.c ! -path src/provenance/sigbatch.c | sort)
[ "${#files[@]}" -gt 10 ] && pass "scanning ${#files[@]} files of src/ and ui/" \
    || fail "found only ${#files[@]} source files: is BD_SOURCE_DIR right?"
if out=$($scan "${files[@]}"); then
    pass "no process creation outside src/run/exec.c, exec_server.c and exec_warm.c"
else
    fail "process creation outside the chokepoint:
$out"
fi

# The chokepoint itself exists and is where the creation happens.
out=$($scan src/run/exec.c || true)
grep -q ': uv_spawn$' <<<"$out" && pass "src/run/exec.c holds the uv_spawn" || fail "no uv_spawn in src/run/exec.c"
out=$($scan src/run/exec_server.c || true)
grep -q ': fork$' <<<"$out" && pass "src/run/exec_server.c holds the forks" || fail "no fork in src/run/exec_server.c"
grep -q ': execve$' <<<"$out" && pass "src/run/exec_server.c holds the execve" || fail "no execve in src/run/exec_server.c"
out=$($scan src/run/exec_warm.c || true)
grep -q ': fork$' <<<"$out" && pass "src/run/exec_warm.c holds the warm server's forks" || fail "no fork in src/run/exec_warm.c"
grep -q ': vfork$' <<<"$out" && pass "src/run/exec_warm.c holds the vfork of a spare that executes benchdesk-supervisor" ||
    fail "no vfork in src/run/exec_warm.c"
out=$($scan src/provenance/sigbatch.c || true)
[ "$out" = "src/provenance/sigbatch.c:$(grep -n 'gpgme_op_spawn(' src/provenance/sigbatch.c | cut -d: -f1): gpgme_op_spawn" ] \
    && pass "src/provenance/sigbatch.c has GPGME run the batch's gpg, and nothing else" \
    || fail "src/provenance/sigbatch.c: expected one gpgme_op_spawn, found: $out"

# The scanner can fail: planted uses are caught, comments/strings/members are not.
p="$BD_TMP/planted.c"
cat >"$p" <<'C'
#include <unistd.h>
void a(void) { fork(); }
void b(void) { FILE *(*p)(const char *, const char *) = popen; (void)p; }
void c(void) { syscall(SYS_clone, 0); }
void d(char **v) { execvp (v[0], v); }
void e(uv_loop_t *l) { uv_spawn(l, 0, 0); }
void h(void) { void *q = &execve; return; }
void f(void) { (system)("x"); }
void k(gpgme_ctx_t g) { gpgme_op_spawn(g, "/bin/sh", 0, 0, 0, 0, 0); }
C
out=$($scan "$p" || true)
for want in "2: fork" "3: popen" "4: SYS_clone" "5: execvp" "6: uv_spawn" "7: execve" "8: system" "9: gpgme_op_spawn"; do
    grep -q "planted.c:$want\$" <<<"$out" && pass "scan catches line $want" || fail "scan misses $want: $out"
done
q="$BD_TMP/quiet.c"
cat >"$q" <<'C'
/* fork() and system("ls") in a comment */
// popen("x", "r");
static const char *msg = "call fork() or uv_spawn( here";
static const char c = 'x';
struct s { int system; int fork; };
int g(struct s *p, struct s q) { return p->system + q.fork; }
int forked(void); int my_system(void); int execution;
int rule(void *ctx) { return seccomp_rule_add(ctx, 0, SCMP_SYS(clone), 0); }
/* multi-line comment
   execve(path, argv, env);
*/
C
if out=$($scan "$q"); then pass "comments, strings, members and longer names are ignored"
else fail "false positives: $out"; fi
finish
