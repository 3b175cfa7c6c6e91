/*
 * test_jail.c — the `namespaces` isolation class (jail.h) through the real chokepoint:
 * identity, PID namespace, the minimal read-only root, the private /tmp, the seccomp
 * filter (each denied call kills with SIGSYS, which the runner reports as
 * rubric.sandbox_violation), Landlock, no network, unreachable host sockets, no secret
 * readable through /proc, descendants gone with the case, contained fork bombs, setup
 * failures reported, and the availability probe's message.
 *
 * Each test fails if its protection is removed. When the machine cannot build the jail
 * (bd_isolation_available says why), the jail tests print the reason and skip — unless
 * BD_REQUIRE_NAMESPACES=1, which makes that a failure; the probe's refusal path is
 * still tested. This program is its own exec server.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "exec.h"
#include "jail.h"
#include "jail_state.h"
#include "runner.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

static char *python;
static bd_exec_ctx *ctx;
static bool available;
static char why[512];
static char dir[PATH_MAX]; /* the current test's cwd */

#define SKIP_UNLESS_JAIL()                                                                         \
    do {                                                                                           \
        if (!available) {                                                                          \
            fprintf(stderr, "test_jail: skipped, namespaces unavailable here: %s\n", why);         \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int setup(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    const char *want = getenv("BENCHDESK_PYTHON");
    if (bd_exec_find_program(&python, want && want[0] ? want : "python3", &err) != 0) {
        fprintf(stderr, "test_jail: no python3: %s\n", err.msg);
        return -1;
    }
    available = bd_isolation_available(BD_ISO_NAMESPACES, why, sizeof(why));
    if (!available) {
        /* Where the jail must work (CI), a broken jail must not pass as a skip. */
        const char *req = getenv("BD_REQUIRE_NAMESPACES");
        if (req && strcmp(req, "1") == 0) {
            fprintf(stderr, "test_jail: BD_REQUIRE_NAMESPACES=1 but %s\n", why);
            return -1;
        }
        return 0;
    }
    if (bd_exec_ctx_new(&ctx, BD_ISO_NAMESPACES, NULL, &err) != 0 ||
        bd_exec_ctx_allow(ctx, python, &err) != 0) {
        fprintf(stderr, "test_jail: %s\n", err.msg);
        return -1;
    }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    bd_exec_ctx_free(ctx);
    free(python);
    return 0;
}

/* A fresh cwd per run (as the runner makes one per case): 0700, holding a read-only
 * case/ with one input file and a 0400 rubric.py. */
static void fresh_dir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof(dir), "%s/bd-test-jail-XXXXXX", t && t[0] == '/' ? t : "/tmp");
    assert_non_null(mkdtemp(dir));
    char p[PATH_MAX + 32];
    snprintf(p, sizeof(p), "%s/case", dir);
    assert_int_equal(mkdir(p, 0700), 0);
    snprintf(p, sizeof(p), "%s/case/input.txt", dir);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs("case input\n", f);
    fclose(f);
    chmod(p, 0444);
    snprintf(p, sizeof(p), "%s/case", dir);
    chmod(p, 0555);
    snprintf(p, sizeof(p), "%s/rubric.py", dir);
    f = fopen(p, "w");
    assert_non_null(f);
    fputs("print('original')\n", f);
    fclose(f);
    chmod(p, 0400);
}

static bd_exec_limits limits(int64_t wall_ms)
{
    bd_exec_limits l = BD_EXEC_LIMITS_INIT;
    l.wall_ms = wall_ms;
    l.cpu_s = (uint64_t)(wall_ms + 999) / 1000;
    l.as_bytes = 512ull * 1024 * 1024;
    return l;
}

/* Run a python snippet in the jail in a fresh cwd (left in `dir` for the caller to
 * inspect; removed by the next run_in or done()). */
static void run_in(bd_exec_result *res, const char *code, const bd_exec_limits *lim)
{
    fresh_dir();
    const char *argv[] = {python, "-s", "-c", code, NULL};
    bd_exec_spec spec = {argv, dir, NULL, 0, limits(20000), NULL, false};
    if (lim)
        spec.limits = *lim;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_exec_run(res, ctx, &spec, &err), 0);
    if (!res->started || (res->exited && res->exit_code != 0))
        fprintf(stderr, "test_jail: setup=%s exit=%d signal=%d stderr=%s\n", res->setup_error,
                res->exit_code, res->term_signal, res->err);
    assert_true(res->started);
    assert_int_equal(res->isolation, BD_ISO_NAMESPACES);
}

static void done(bd_exec_result *res)
{
    bd_exec_result_free(res);
    rm_tree(dir);
}

/* Run and parse the one JSON object the snippet prints. */
static cJSON *run_json(bd_exec_result *res, const char *code)
{
    run_in(res, code, NULL);
    assert_true(res->exited);
    assert_int_equal(res->exit_code, 0);
    cJSON *j = cJSON_Parse(res->out);
    if (!j)
        fprintf(stderr, "test_jail: not JSON: %s\n", res->out);
    assert_non_null(j);
    return j;
}

static const char *jstr(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(j, key);
    assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static double jnum(const cJSON *j, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(j, key);
    assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* ---- availability ------------------------------------------------------------------ */

static void test_probe_and_choice(void **state)
{
    (void)state;
    bd_isolation iso;
    bool weaker = true;
    bd_err err = BD_ERR_INIT;
    if (available) {
        assert_int_equal(bd_isolation_choose(&iso, &weaker, "auto", false, &err), 0);
        assert_int_equal(iso, BD_ISO_NAMESPACES);
        assert_false(weaker);
    } else {
        /* auto never falls back silently: exit 3 with what is missing, unless consented */
        fprintf(stderr, "test_jail: namespaces unavailable here: %s\n", why);
        assert_non_null(strstr(why, "unavailable on this machine"));
        assert_int_equal(bd_isolation_choose(&iso, &weaker, "auto", false, &err), -1);
        assert_int_equal(err.code, BD_E_ISOLATION_UNAVAILABLE);
        assert_non_null(strstr(err.msg, "--allow-weaker-isolation"));
        assert_int_equal(bd_isolation_choose(&iso, &weaker, "auto", true, &err), 0);
        assert_int_equal(iso, BD_ISO_SUBPROCESS);
        assert_true(weaker);
    }
}

static void test_probe_explains_a_refusal(void **state)
{
    (void)state;
    char w[512] = "";
    /* What the probe says when the kernel refuses the namespaces (clone failed). */
    assert_false(bd_jail_probe_finish(-1, EPERM, w, sizeof(w)));
    assert_non_null(strstr(w, "namespaces isolation is unavailable on this machine"));
    assert_non_null(strstr(w, strerror(EPERM)));
    assert_false(bd_jail_probe_finish(-1, ENOSPC, w, sizeof(w)));
    assert_non_null(strstr(w, strerror(ENOSPC)));
    assert_true(bd_jail_clone_flags() & CLONE_NEWUSER);
    assert_true(bd_jail_clone_flags() & CLONE_NEWPID);
    assert_true(bd_jail_clone_flags() & CLONE_NEWNET);
    assert_true(bd_jail_clone_flags() & CLONE_NEWNS);
}

/* ---- identity, PID namespace, file system -------------------------------------------- */

static void test_identity_unprivileged(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    bd_exec_result r;
    cJSON *j = run_json(&r, "import os,json\n"
                            "st={l.split(':')[0]:l.split(':',1)[1].split() for l in "
                            "open('/proc/self/status')}\n"
                            "open('made-here','w').write('x')\n"
                            "print(json.dumps({'uid':os.getuid(),'euid':os.geteuid(),"
                            "'gid':os.getgid(),'groups':os.getgroups(),'capeff':st['CapEff'][0],"
                            "'capprm':st['CapPrm'][0],'nnp':st['NoNewPrivs'][0],"
                            "'seccomp':st['Seccomp'][0]}))");
    assert_int_equal((int)jnum(j, "uid"), BD_JAIL_UID);
    assert_int_equal((int)jnum(j, "euid"), BD_JAIL_UID);
    assert_int_equal((int)jnum(j, "gid"), BD_JAIL_UID);
    assert_string_equal(jstr(j, "capeff"), "0000000000000000");
    assert_string_equal(jstr(j, "capprm"), "0000000000000000");
    assert_string_equal(jstr(j, "nnp"), "1");
    assert_string_equal(jstr(j, "seccomp"), "2");
    /* What it wrote lives in its own tmpfs: nothing of it is on the host. */
    char p[PATH_MAX + 32];
    snprintf(p, sizeof(p), "%s/made-here", dir);
    struct stat st;
    assert_int_equal(stat(p, &st), -1);
    /* Outside, its case dir belongs to the invoking user, or as root to a uid of the
     * case's own from the private range (never nobody). */
    assert_int_equal(stat(dir, &st), 0);
    if (geteuid() == 0) {
        assert_true(st.st_uid >= BD_JAIL_HOST_BASE);
        assert_true(st.st_uid < BD_JAIL_HOST_BASE + BD_JAIL_HOST_RANGE);
    } else {
        assert_int_equal(st.st_uid, geteuid());
    }
    assert_true(st.st_uid != 0);
    if (geteuid() == 0) {
        cJSON *g = cJSON_GetObjectItem(j, "groups");
        assert_true(cJSON_GetArraySize(g) == 0 ||
                    (cJSON_GetArraySize(g) == 1 && g->child->valueint == BD_JAIL_UID));
    }
    cJSON_Delete(j);
    done(&r);
}

static void test_pid_namespace_and_fresh_proc(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    bd_exec_result r;
    cJSON *j = run_json(&r, "import os,json\n"
                            "pids=sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
                            "print(json.dumps({'pid':os.getpid(),'ppid':os.getppid(),'pids':pids,"
                            "'env':open('/proc/self/environ').read().rstrip('\\0').split('\\0'),"
                            "'host':os.uname().nodename}))");
    /* The program is PID 2, child of the minimal init (PID 1): nothing else is there. */
    assert_int_equal((int)jnum(j, "pid"), 2);
    assert_int_equal((int)jnum(j, "ppid"), 1);
    cJSON *pids = cJSON_GetObjectItem(j, "pids");
    assert_int_equal(cJSON_GetArraySize(pids), 2);
    /* The program has exactly the scrubbed environment. */
    cJSON *env = cJSON_GetObjectItem(j, "env");
    assert_int_equal(cJSON_GetArraySize(env), BD_EXEC_ENV_COUNT);
    assert_string_equal(cJSON_GetArrayItem(env, 0)->valuestring, BD_EXEC_ENV_PATH);
    assert_string_equal(jstr(j, "host"), BD_JAIL_HOSTNAME);
    cJSON_Delete(j);
    done(&r);
}

static void test_root_is_minimal(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    bd_exec_result r;
    cJSON *j = run_json(&r, "import os,json\n"
                            "print(json.dumps({'root':sorted(os.listdir('/')),"
                            "'etc':sorted(os.listdir('/etc')),'dev':sorted(os.listdir('/dev')),"
                            "'cwd':os.getcwd(),'here':sorted(os.listdir('.')),"
                            "'case':open('case/input.txt').read()}))");
    static const char *const allowed[] = {"bin",    "dev",  "etc",  "lib", "lib32", "lib64",
                                          "libx32", "proc", "sbin", "tmp", "usr"};
    cJSON *root = cJSON_GetObjectItem(j, "root");
    cJSON *e;
    /* ... plus the first component of the cwd's path, which keeps its host path. */
    char first[PATH_MAX];
    snprintf(first, sizeof(first), "%s", dir + 1);
    *strchr(first, '/') = '\0';
    cJSON_ArrayForEach(e, root)
    {
        bool ok = strcmp(e->valuestring, first) == 0;
        for (size_t i = 0; i < sizeof(allowed) / sizeof(allowed[0]); i++)
            ok = ok || strcmp(e->valuestring, allowed[i]) == 0;
        if (!ok)
            fprintf(stderr, "test_jail: unexpected /%s in the jail\n", e->valuestring);
        assert_true(ok); /* no home, root, run, var, opt, mnt, sys, ... */
    }
    static const char *const etc[] = {"alternatives", "group",         "ld.so.cache",
                                      "localtime",    "nsswitch.conf", "passwd"};
    cJSON_ArrayForEach(e, cJSON_GetObjectItem(j, "etc"))
    {
        bool ok = false;
        for (size_t i = 0; i < sizeof(etc) / sizeof(etc[0]); i++)
            ok = ok || strcmp(e->valuestring, etc[i]) == 0;
        assert_true(ok); /* no shadow, ssh, ssl keys, hosts, resolv.conf, ... */
    }
    assert_string_equal(jstr(j, "cwd"), dir);
    assert_string_equal(jstr(j, "case"), "case input\n");
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "here")), 2); /* case, rubric.py */
    cJSON_Delete(j);
    done(&r);
}

static void test_writes_outside_cwd_fail(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    char marker[64];
    snprintf(marker, sizeof(marker), "bd-jail-tmp-%d", (int)getpid());
    char code[2048];
    snprintf(code, sizeof(code),
             "import os,json,errno\n"
             "res={}\n"
             "def w(p):\n"
             "  try:\n"
             "    with open(p,'a') as f: f.write('pwned')\n"
             "    res[p]='wrote'\n"
             "  except OSError as e: res[p]=errno.errorcode[e.errno]\n"
             "for p in ['/x','/usr/bin/x','/etc/passwd','/proc/x','case/x','case/input.txt',"
             "'rubric.py']: w(p)\n"
             "try:\n"
             "  os.chmod('rubric.py',0o600); res['chmod']='changed'\n"
             "except OSError as e: res['chmod']=errno.errorcode[e.errno]\n"
             "w('rubric.py')\n"
             "w('out.txt'); w('/tmp/%s')\n"
             "print(json.dumps(res))",
             marker);
    bd_exec_result r;
    cJSON *j = run_json(&r, code);
    assert_string_equal(jstr(j, "/x"), "EROFS");
    assert_string_equal(jstr(j, "/usr/bin/x"), "EROFS");
    assert_string_equal(jstr(j, "/etc/passwd"), "EROFS");
    assert_string_not_equal(jstr(j, "/proc/x"), "wrote");
    assert_string_equal(jstr(j, "case/x"), "EROFS");
    assert_string_not_equal(jstr(j, "case/input.txt"), "wrote");
    assert_string_equal(jstr(j, "chmod"), "EROFS");
    assert_string_not_equal(jstr(j, "rubric.py"), "wrote");
    assert_string_equal(jstr(j, "out.txt"), "wrote"); /* its cwd is writable */
    char tmpkey[96];
    snprintf(tmpkey, sizeof(tmpkey), "/tmp/%s", marker);
    assert_string_equal(jstr(j, tmpkey), "wrote"); /* its private /tmp too */
    /* ... and nothing of it reached the host. */
    char p[PATH_MAX + 32];
    struct stat st;
    assert_int_equal(stat(tmpkey, &st), -1);
    snprintf(p, sizeof(p), "%s/rubric.py", dir);
    FILE *f = fopen(p, "r");
    assert_non_null(f);
    char buf[64] = "";
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    assert_string_equal(buf, "print('original')\n");
    /* Its cwd is a tmpfs of its mount namespace: what it wrote there is not on the host. */
    snprintf(p, sizeof(p), "%s/out.txt", dir);
    assert_int_equal(stat(p, &st), -1);
    cJSON_Delete(j);
    done(&r);
}

/* ---- seccomp ------------------------------------------------------------------------- */

typedef struct {
    const char *what;
    char code[512];
} deny_case;

static void test_seccomp_kills_denied_calls(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    deny_case cases[32];
    size_t n = 0;
#define PYSYS "import ctypes;L=ctypes.CDLL(None,use_errno=True);L.syscall.restype=ctypes.c_long;"
#define ADD_SYS(name, nr, args)                                                                    \
    do {                                                                                           \
        cases[n].what = name;                                                                      \
        snprintf(cases[n].code, sizeof(cases[n].code), PYSYS "L.syscall(%ld%s)\nprint('alive')",   \
                 (long)(nr), args);                                                                \
        n++;                                                                                       \
    } while (0)
#define ADD_PY(name, py)                                                                           \
    do {                                                                                           \
        cases[n].what = name;                                                                      \
        snprintf(cases[n].code, sizeof(cases[n].code), "%s\nprint('alive')", py);                  \
        n++;                                                                                       \
    } while (0)
    ADD_PY("socket(AF_INET)", "import socket;socket.socket(socket.AF_INET,socket.SOCK_STREAM)");
    ADD_PY("socket(AF_INET6)", "import socket;socket.socket(socket.AF_INET6,socket.SOCK_DGRAM)");
    ADD_PY("socket(AF_NETLINK)", "import socket;socket.socket(socket.AF_NETLINK,socket.SOCK_RAW)");
    ADD_PY("socket(AF_PACKET)", "import socket;socket.socket(17,socket.SOCK_RAW)");
    ADD_PY("socketpair(AF_INET)", "import socket;socket.socketpair(socket.AF_INET)");
    ADD_SYS("ptrace", SYS_ptrace, ",0,0,0,0");
    ADD_SYS("process_vm_readv", SYS_process_vm_readv, ",1,0,0,0,0,0");
    ADD_SYS("process_vm_writev", SYS_process_vm_writev, ",1,0,0,0,0,0");
    ADD_SYS("bpf", SYS_bpf, ",0,0,0");
    ADD_SYS("keyctl", SYS_keyctl, ",0,0,0,0,0");
    ADD_SYS("add_key", SYS_add_key, ",0,0,0,0,0");
    ADD_SYS("request_key", SYS_request_key, ",0,0,0,0");
    ADD_SYS("io_uring_setup", SYS_io_uring_setup, ",1,0");
    ADD_SYS("perf_event_open", SYS_perf_event_open, ",0,0,-1,-1,0");
    ADD_SYS("mount", SYS_mount, ",0,0,0,0,0");
    ADD_SYS("umount2", SYS_umount2, ",0,0");
    ADD_SYS("pivot_root", SYS_pivot_root, ",0,0");
    ADD_SYS("setns", SYS_setns, ",-1,0");
    ADD_SYS("unshare(CLONE_NEWUSER)", SYS_unshare, ",0x10000000");
    ADD_SYS("clone(CLONE_NEWUSER)", SYS_clone, ",0x10000011,0,0,0,0");
    ADD_SYS("kexec_load", SYS_kexec_load, ",0,0,0,0");
    ADD_SYS("open_by_handle_at", SYS_open_by_handle_at, ",-1,0,0");
    for (size_t i = 0; i < n; i++) {
        bd_exec_result r;
        run_in(&r, cases[i].code, NULL);
        if (r.term_signal != SIGSYS)
            fprintf(stderr, "test_jail: %s was not killed (exited=%d code=%d signal=%d out=%s)\n",
                    cases[i].what, r.exited, r.exit_code, r.term_signal, r.out);
        assert_int_equal(r.term_signal, SIGSYS);
        assert_null(strstr(r.out, "alive"));
        /* ... and the runner names it. */
        bd_exec_limits lim = limits(20000);
        char detail[BD_SCORE_DETAIL_MAX];
        assert_int_equal(bd_runner_classify(&r, &lim, detail), BD_HM_SANDBOX_VIOLATION);
        done(&r);
    }
}

static void test_seccomp_allows_ordinary_work(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    char code[2048];
    snprintf(code, sizeof(code),
             "import os,json,socket,subprocess,threading,ctypes\n"
             "a,b=socket.socketpair(); a.send(b'x'); r=b.recv(1)\n"
             "u=socket.socket(socket.AF_UNIX); u.bind('/tmp/s'); u.listen(1)\n"
             "t=[]; th=threading.Thread(target=lambda:t.append(1)); th.start(); th.join()\n"
             "p=os.fork()\n"
             "if p==0: os._exit(3)\n"
             "st=os.waitpid(p,0)[1]\n"
             "sp=subprocess.run(['/bin/sh','-c','echo sub > /dev/stdout'],capture_output=True)\n"
             "L=ctypes.CDLL(None,use_errno=True); L.syscall.restype=ctypes.c_long\n"
             "c3=L.syscall(%ld,0,88); e3=ctypes.get_errno()\n"
             "open('/dev/stdout','w').write('')\n"
             "print(json.dumps({'pair':r.decode(),'thread':len(t),'fork':os.waitstatus_to_exitcode("
             "st),'sub':sp.stdout.decode(),'clone3':c3,'clone3_errno':e3}))",
             (long)SYS_clone3);
    bd_exec_result r;
    cJSON *j = run_json(&r, code);
    assert_string_equal(jstr(j, "pair"), "x");
    assert_int_equal((int)jnum(j, "thread"), 1);
    assert_int_equal((int)jnum(j, "fork"), 3);
    assert_string_equal(jstr(j, "sub"), "sub\n");
    /* clone3's flags cannot be inspected: ENOSYS, so libc falls back to clone. */
    assert_int_equal((int)jnum(j, "clone3"), -1);
    assert_int_equal((int)jnum(j, "clone3_errno"), ENOSYS);
    cJSON_Delete(j);
    done(&r);
}

static void test_landlock_confines_writes(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    if (bd_jail_landlock_abi() <= 0) {
        fprintf(stderr, "test_jail: skipped, this kernel has no Landlock\n");
        skip();
    }
    /* /proc/self/comm is the program's own and writable by it: only Landlock refuses. */
    bd_exec_result r;
    cJSON *j = run_json(&r, "import json,errno\n"
                            "try:\n"
                            "  open('/proc/self/comm','w').write('x'); o='wrote'\n"
                            "except OSError as e: o=errno.errorcode[e.errno]\n"
                            "print(json.dumps({'comm':o}))");
    assert_string_equal(jstr(j, "comm"), "EACCES");
    cJSON_Delete(j);
    done(&r);
}

/* ---- network, sockets, secrets ------------------------------------------------------- */

static void test_no_network_and_no_host_sockets(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    /* A TCP listener on 127.0.0.1 and a unix socket in a host directory. */
    int tcp = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    assert_true(tcp >= 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(tcp, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(tcp, 4), 0);
    socklen_t sl = sizeof(sa);
    assert_int_equal(getsockname(tcp, (struct sockaddr *)&sa, &sl), 0);
    char sockdir[] = "/tmp/bd-test-jail-sock-XXXXXX";
    assert_non_null(mkdtemp(sockdir));
    chmod(sockdir, 0755);
    int ux = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un su = {.sun_family = AF_UNIX};
    snprintf(su.sun_path, sizeof(su.sun_path), "%s/agent.sock", sockdir);
    assert_int_equal(bind(ux, (struct sockaddr *)&su, sizeof(su)), 0);
    chmod(su.sun_path, 0777);
    assert_int_equal(listen(ux, 4), 0);
    /* An abstract one too: the network namespace has its own abstract names. */
    int ab = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_un sb = {.sun_family = AF_UNIX};
    int alen = snprintf(sb.sun_path + 1, sizeof(sb.sun_path) - 1, "bd-test-jail-%d", (int)getpid());
    assert_int_equal(bind(ab, (struct sockaddr *)&sb,
                          (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)alen)),
                     0);
    assert_int_equal(listen(ab, 4), 0);

    char code[2048];
    snprintf(code, sizeof(code),
             "import socket,json,errno,sys\n"
             "res={}\n"
             "for k,a in [('unix','%s'),('abstract','\\0bd-test-jail-%d')]:\n"
             "  s=socket.socket(socket.AF_UNIX)\n"
             "  try: s.connect(a); res[k]='connected'\n"
             "  except OSError as e: res[k]=errno.errorcode[e.errno]\n"
             "try: socket.getaddrinfo('localhost',80); res['dns']='resolved'\n"
             "except OSError as e: res['dns']='failed'\n"
             "print(json.dumps(res)); sys.stdout.flush()\n"
             "socket.create_connection(('127.0.0.1',%d),timeout=2)\n"
             "print('connected')",
             su.sun_path, (int)getpid(), (int)ntohs(sa.sin_port));
    bd_exec_result r;
    run_in(&r, code, NULL);
    /* The TCP attempt is killed by the filter before any packet. */
    assert_int_equal(r.term_signal, SIGSYS);
    assert_null(strstr(r.out, "connected\n"));
    char *nl = strchr(r.out, '\n');
    assert_non_null(nl);
    *nl = '\0';
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    assert_string_equal(jstr(j, "unix"), "ENOENT");
    assert_string_equal(jstr(j, "abstract"), "ECONNREFUSED");
    assert_string_equal(jstr(j, "dns"), "failed");
    cJSON_Delete(j);
    /* No listener saw a connection. */
    assert_int_equal(accept(tcp, NULL, NULL), -1);
    assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
    assert_int_equal(accept(ux, NULL, NULL), -1);
    assert_int_equal(accept(ab, NULL, NULL), -1);
    close(tcp);
    close(ux);
    close(ab);
    unlink(su.sun_path);
    rmdir(sockdir);
    done(&r);
}

static void test_no_secret_through_proc(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    /* A secret in this process's environment (the exec context's parent). */
    char secret[64];
    snprintf(secret, sizeof(secret), "bd-jail-secret-%d-%ld", (int)getpid(), (long)time(NULL));
    setenv("BD_TEST_JAIL_SECRET", secret, 1);
    char rev[64];
    size_t len = strlen(secret);
    for (size_t i = 0; i < len; i++)
        rev[i] = secret[len - 1 - i];
    rev[len] = '\0';
    char code[2048];
    snprintf(
        code, sizeof(code),
        "import os,json\n"
        "S=b'%s'[::-1]\n" /* reversed: its own command line must not hold it */
        "found=[]; n=0\n"
        "for root,dirs,files in os.walk('/proc'):\n"
        "  dirs[:]=[d for d in dirs if d not in ('fd','fdinfo','map_files','net','ns')]\n"
        "  for f in files:\n"
        "    p=os.path.join(root,f)\n"
        "    if f in ('mem','pagemap','kcore','kmsg','clear_refs','pagemap'): continue\n"
        "    try:\n"
        "      fd=os.open(p,os.O_RDONLY|os.O_NONBLOCK); b=os.read(fd,1<<20); os.close(fd); n+=1\n"
        "      if S in b: found.append(p)\n"
        "    except OSError: pass\n"
        "print(json.dumps({'found':found,'read':n,'ppid':os.getppid()}))",
        rev);
    bd_exec_result r;
    cJSON *j = run_json(&r, code);
    assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "found")), 0);
    assert_true(jnum(j, "read") > 5);          /* it did read /proc */
    assert_int_equal((int)jnum(j, "ppid"), 1); /* its init */
    assert_null(strstr(r.out, secret));
    cJSON_Delete(j);
    done(&r);
    unsetenv("BD_TEST_JAIL_SECRET");
}

/* ---- processes ------------------------------------------------------------------------- */

/* True when some process on the host has `marker` in its command line. */
static bool host_has_marker(const char *marker)
{
    DIR *d = opendir("/proc");
    assert_non_null(d);
    bool hit = false;
    struct dirent *de;
    while (!hit && (de = readdir(d)) != NULL) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char p[300];
        snprintf(p, sizeof(p), "/proc/%s/cmdline", de->d_name);
        int fd = open(p, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        for (ssize_t i = 0; i < n; i++)
            if (buf[i] == '\0')
                buf[i] = ' ';
        if (n > 0) {
            buf[n] = '\0';
            hit = strstr(buf, marker) != NULL;
        }
    }
    closedir(d);
    return hit;
}

static void test_setsid_double_fork_is_gone(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    char marker[64];
    snprintf(marker, sizeof(marker), "bd-jail-sleeper-%d", (int)getpid());
    char code[1024];
    snprintf(code, sizeof(code),
             "import os,time,sys\n"
             "if os.fork()==0:\n"
             "  os.setsid()\n"
             "  if os.fork()==0:\n"
             "    os.execv('%s',['python3','-c','import signal,time;"
             "signal.signal(signal.SIGTERM,signal.SIG_IGN);time.sleep(300)','%s'])\n"
             "  os._exit(0)\n"
             "time.sleep(0.5)\n"
             "print('parent done')",
             python, marker);
    bd_exec_result r;
    run_in(&r, code, NULL);
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 0);
    assert_true(r.wall_ms < 10000);
    /* When PID 1 of the namespace exited, the kernel killed the sleeper. */
    assert_false(host_has_marker(marker));
    done(&r);
}

static void test_fork_bomb_is_contained(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    bd_exec_limits lim = limits(20000);
    lim.nproc = 24;
    /* Fork until refused (bounded at 500 in case nothing refuses); children sleep. */
    bd_exec_result r;
    run_in(&r,
           "import os,time,json\n"
           "n=0\n"
           "try:\n"
           "  while n<500:\n"
           "    if os.fork()==0:\n"
           "      time.sleep(60); os._exit(0)\n"
           "    n+=1\n"
           "except OSError as e: err=e.errno\n"
           "print(json.dumps({'forks':n}))",
           &lim);
    assert_true(r.exited);
    cJSON *j = cJSON_Parse(r.out);
    assert_non_null(j);
    int forks = (int)jnum(j, "forks");
    assert_true(forks < 24); /* RLIMIT_NPROC counts per user namespace: its own processes */
    assert_true(forks > 0);
    assert_true(r.wall_ms < 15000); /* did not wait for the sleepers */
    cJSON_Delete(j);
    done(&r);
}

static void test_timeout_and_cpu_limit_under_init(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    /* Wall clock: killed at the deadline, classified as a timeout. */
    bd_exec_limits lim = limits(400);
    lim.cpu_s = 10;
    bd_exec_result r;
    run_in(&r, "import time\ntime.sleep(30)", &lim);
    char detail[BD_SCORE_DETAIL_MAX];
    assert_true(r.timed_out);
    assert_int_equal(bd_runner_classify(&r, &lim, detail), BD_HM_TIMEOUT);
    done(&r);
    /* CPU: the program is PID 2, so SIGXCPU at the soft limit ends it: cpu_limit. */
    lim = limits(20000);
    lim.cpu_s = 1;
    run_in(&r, "while True: pass", &lim);
    assert_false(r.timed_out);
    assert_int_equal(bd_runner_classify(&r, &lim, detail), BD_HM_CPU_LIMIT);
    done(&r);
}

/* ---- setup ----------------------------------------------------------------------------- */

/* `spec` run with `cwd`: refused before the program exists, as not a private cwd. */
static void assert_cwd_refused(bd_exec_spec *spec, const char *cwd)
{
    bd_exec_result r;
    bd_err err = BD_ERR_INIT;
    spec->cwd = cwd;
    assert_int_equal(bd_exec_run(&r, ctx, spec, &err), 0);
    assert_false(r.started);
    assert_non_null(strstr(r.setup_error, "private working directory"));
    bd_exec_result_free(&r);
}

static void test_setup_failure_is_reported(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    /* "/" is not a private working directory: refused before the program exists. */
    const char *argv[] = {python, "-s", "-c", "print(1)", NULL};
    bd_exec_spec spec = {argv, "/", NULL, 0, limits(5000), NULL, false};
    bd_exec_result r;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_exec_run(&r, ctx, &spec, &err), 0);
    assert_false(r.started);
    assert_non_null(strstr(r.setup_error, "isolation"));
    assert_non_null(strstr(r.setup_error, "private working directory"));
    assert_int_equal(r.out_len, 0);
    bd_exec_result_free(&r);
    /* Nor the host's /tmp, which would show every socket in it, nor a system dir. */
    static const char *const refused[] = {"/tmp",       "/tmp/", "/usr/lib",
                                          "/proc/self", "/dev",  "/dev/shm"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        assert_cwd_refused(&spec, refused[i]);
    /* Nor a path that steps up or stays put at its end, nor a dir in /dev/shm (which only
     * ever holds a warm run's staging dir, never a cold start's cwd). Each exists. */
    fresh_dir();
    char shm[] = "/dev/shm/bd-test-jail-XXXXXX";
    bool have_shm = mkdtemp(shm) != NULL;
    char up[PATH_MAX + 8], here[PATH_MAX + 8];
    snprintf(up, sizeof(up), "%s/case/..", dir);
    snprintf(here, sizeof(here), "%s/.", dir);
    const char *const refused_existing[] = {up, here, have_shm ? shm : up};
    for (size_t i = 0; i < sizeof(refused_existing) / sizeof(refused_existing[0]); i++)
        assert_cwd_refused(&spec, refused_existing[i]);
    if (have_shm)
        assert_int_equal(rmdir(shm), 0);
    rm_tree(dir);
    /* As root the cwd tree is handed to nobody: only a 0700 directory, root's (a second,
     * independent check, so a wrong path check cannot chown a shared directory). */
    fresh_dir();
    assert_int_equal(chmod(dir, 0755), 0);
    spec.cwd = dir;
    assert_int_equal(bd_exec_run(&r, ctx, &spec, &err), 0);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    if (geteuid() == 0) {
        assert_false(r.started);
        assert_non_null(strstr(r.setup_error, "not a private working directory"));
        assert_int_equal(st.st_uid, 0); /* untouched */
    } else {
        assert_true(r.started); /* nothing is chowned for a user */
        assert_int_equal(st.st_uid, geteuid());
    }
    done(&r);
}

static void test_program_outside_system_dirs_is_shown(void **state)
{
    (void)state;
    SKIP_UNLESS_JAIL();
    /* A copy of python3 in a host temp dir: bound read-only at the same path. */
    char pdir[] = "/tmp/bd-test-jail-prog-XXXXXX";
    assert_non_null(mkdtemp(pdir));
    char copy[PATH_MAX];
    snprintf(copy, sizeof(copy), "%s/echo", pdir);
    int in = open("/bin/echo", O_RDONLY | O_CLOEXEC);
    int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
    assert_true(in >= 0 && out >= 0);
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof(buf))) > 0)
        assert_int_equal(write(out, buf, (size_t)n), n);
    close(in);
    close(out);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_exec_ctx_allow(ctx, copy, &err), 0);
    fresh_dir();
    const char *argv[] = {copy, "shown", NULL};
    bd_exec_spec spec = {argv, dir, NULL, 0, limits(5000), NULL, false};
    bd_exec_result r;
    assert_int_equal(bd_exec_run(&r, ctx, &spec, &err), 0);
    if (!r.started)
        fprintf(stderr, "test_jail: %s\n", r.setup_error);
    assert_true(r.started);
    assert_true(r.exited);
    assert_int_equal(r.exit_code, 0);
    assert_string_equal(r.out, "shown\n");
    done(&r);
    /* A script named by absolute path (a command SUT's), shown read-only; its directory
     * is not shown. */
    char script[PATH_MAX + 16];
    snprintf(script, sizeof(script), "%s/sut.py", pdir);
    FILE *f = fopen(script, "w");
    assert_non_null(f);
    fputs("import os,errno,sys\n"
          "try:\n"
          "  open(sys.argv[0],'a'); w='wrote'\n"
          "except OSError as e: w=errno.errorcode[e.errno]\n"
          "print(w, sorted(os.listdir(os.path.dirname(sys.argv[0]))))\n",
          f);
    fclose(f);
    chmod(script, 0644);
    fresh_dir();
    const char *argv2[] = {python, "-s", script, pdir, NULL};
    spec.argv = argv2;
    spec.cwd = dir;
    assert_int_equal(bd_exec_run(&r, ctx, &spec, &err), 0);
    assert_true(r.started);
    assert_int_equal(r.exit_code, 0);
    /* Not writable (EACCES or EROFS, whichever the kernel checks first), and alone: the
     * copy of echo next to it is not shown. */
    assert_null(strstr(r.out, "wrote"));
    assert_non_null(strstr(r.out, " ['sut.py']\n"));
    done(&r);
    unlink(script);
    unlink(copy);
    rmdir(pdir);
}

/* The compiled filter as the supervisor program's command line carries it
 * (bd_jail_filter_hex / bd_jail_filter_from_hex): the text read back gives the same
 * filter, and text that is no filter is refused and leaves the filter as it was. That the
 * program's jail then kills a denied call is tests/cli/test_run_warm_prepared.sh's. */
static void test_filter_as_text(void **state)
{
    (void)state;
    static char hex[BD_JAIL_FILTER_HEX_MAX], again[BD_JAIL_FILTER_HEX_MAX];
    static char bad[BD_JAIL_FILTER_HEX_MAX + 16];
    bd_jail_server_init();
    int n = bd_jail_filter_hex(hex, sizeof(hex));
    assert_true(n > 16 && n % 16 == 0);
    assert_int_equal((size_t)n, strlen(hex));
    assert_int_equal(strspn(hex, "0123456789abcdef"), (size_t)n);
    /* the first instruction loads the architecture (BPF_LD|BPF_W|BPF_ABS, offset 4) */
    assert_memory_equal(hex, "0020000000000004", 16);
    assert_int_equal(bd_jail_filter_hex(again, (size_t)n), -1); /* no room for the NUL */
    assert_int_equal(bd_jail_filter_from_hex(hex), 0);
    assert_int_equal(bd_jail_filter_hex(again, sizeof(again)), n);
    assert_string_equal(again, hex);
    /* refused, and the filter unchanged */
    const char *refused[] = {"", "0", "002000000000000", "0020000000000004-"};
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        assert_int_equal(bd_jail_filter_from_hex(refused[i]), -1);
    memcpy(bad, hex, (size_t)n + 1);
    bad[n - 1] = bad[n - 1] == 'a' ? 'A' : 'G'; /* one digit off at the end */
    assert_int_equal(bd_jail_filter_from_hex(bad), -1);
    memset(bad, '0', sizeof(bad) - 1); /* one instruction more than a filter may have */
    bad[sizeof(bad) - 1] = '\0';
    assert_int_equal(strlen(bad) % 16, 0);
    assert_int_equal(bd_jail_filter_from_hex(bad), -1);
    assert_int_equal(bd_jail_filter_hex(again, sizeof(again)), n);
    assert_string_equal(again, hex);
}

/* ---- the filter's layout: a tree decides as the list does ----------------------------- */

/* A classic BPF interpreter for seccomp programs, enough for what libseccomp emits (loads
 * of seccomp_data words, scratch memory, ALU, jumps, returns). Any other instruction, a
 * jump or load out of bounds, or running off the end fails the test: the kernel's checker
 * would have refused such a filter. */
static uint32_t bpf_run(const struct sock_filter *f, unsigned len, const struct seccomp_data *d)
{
    uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
    const unsigned char *data = (const unsigned char *)d;
    for (unsigned pc = 0; pc < len; pc++) {
        const struct sock_filter *i = &f[pc];
        uint32_t k = i->k;
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            assert_true(k % 4 == 0 && k + 4 <= sizeof(*d));
            memcpy(&a, data + k, 4);
            break;
        case BPF_LD | BPF_MEM:
            assert_true(k < BPF_MEMWORDS);
            a = mem[k];
            break;
        case BPF_LDX | BPF_MEM:
            assert_true(k < BPF_MEMWORDS);
            x = mem[k];
            break;
        case BPF_LD | BPF_IMM:
            a = k;
            break;
        case BPF_LDX | BPF_IMM:
            x = k;
            break;
        case BPF_ST:
            assert_true(k < BPF_MEMWORDS);
            mem[k] = a;
            break;
        case BPF_STX:
            assert_true(k < BPF_MEMWORDS);
            mem[k] = x;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= k;
            break;
        case BPF_ALU | BPF_OR | BPF_K:
            a |= k;
            break;
        case BPF_ALU | BPF_AND | BPF_X:
            a &= x;
            break;
        case BPF_MISC | BPF_TAX:
            x = a;
            break;
        case BPF_MISC | BPF_TXA:
            a = x;
            break;
        case BPF_JMP | BPF_JA:
            pc += k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += a == k ? i->jt : i->jf;
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += a > k ? i->jt : i->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += a >= k ? i->jt : i->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += (a & k) ? i->jt : i->jf;
            break;
        case BPF_RET | BPF_K:
            return k;
        case BPF_RET | BPF_A:
            return a;
        default:
            fail_msg("the filter has an instruction this test does not know: %#x at %u", i->code,
                     pc);
        }
    }
    fail_msg("the filter ran off its end");
    return 0;
}

/* The filter bd_jail_build_filter compiles is laid out as a binary tree of call numbers
 * (cheaper for the kernel to load each case); it must decide every call exactly as
 * libseccomp's plain list of the same rules does: every call number of both
 * architectures and the x32 range, with argument words that reach each rule's comparison
 * (socket families, clone flags, high halves set), with and without the host network. */
static void test_filter_tree_decides_as_the_list(void **state)
{
    (void)state;
    static const uint64_t args[] = {0,
                                    1,
                                    AF_UNIX,
                                    AF_INET,
                                    AF_INET6,
                                    AF_NETLINK,
                                    17 /* AF_PACKET */,
                                    AF_INET6 + 1,
                                    AF_UNSPEC,
                                    0x10000000 /* CLONE_NEWUSER */,
                                    0x10000011,
                                    0x00000011,
                                    0xffffffffu,
                                    0x100000000ull | AF_UNIX,
                                    0x100000000ull | AF_INET,
                                    0xffffffff00000001ull,
                                    UINT64_MAX};
    static const uint32_t arches[] = {AUDIT_ARCH_X86_64, AUDIT_ARCH_I386, AUDIT_ARCH_AARCH64};
    static struct sock_filter tree[BD_JAIL_BPF_MAX], list[BD_JAIL_BPF_MAX];
    bool saved_network = bd_jail.host_network;
    for (int host_network = 0; host_network <= 1; host_network++) {
        bd_err err = BD_ERR_INIT;
        bd_jail.host_network = host_network;
        assert_int_equal(bd_jail_build_filter_laid_out(false, &err), 0);
        unsigned list_len = bd_jail.bpf_len;
        memcpy(list, bd_jail.bpf, list_len * sizeof(list[0]));
        assert_int_equal(bd_jail_build_filter(&err), 0);
        unsigned tree_len = bd_jail.bpf_len;
        memcpy(tree, bd_jail.bpf, tree_len * sizeof(tree[0]));
        /* Not the same program: the comparison below is between two layouts. */
        assert_true(tree_len != list_len || memcmp(tree, list, tree_len * sizeof(tree[0])) != 0);
        size_t decisions = 0, killed = 0;
        for (size_t ai = 0; ai < sizeof(arches) / sizeof(arches[0]); ai++)
            for (int nr = -1; nr < 0x40000000 + 600; nr++) {
                if (nr == 1024) /* past every call number, then the x32 range */
                    nr = 0x40000000 - 1;
                for (size_t g = 0; g < sizeof(args) / sizeof(args[0]); g++) {
                    struct seccomp_data d;
                    memset(&d, 0, sizeof(d));
                    d.nr = nr;
                    d.arch = arches[ai];
                    d.args[0] = args[g];
                    d.args[1] = args[(g + 3) % (sizeof(args) / sizeof(args[0]))];
                    uint32_t want = bpf_run(list, list_len, &d), got = bpf_run(tree, tree_len, &d);
                    if (want != got)
                        fail_msg("host_network=%d arch=%#x nr=%d a0=%#llx: the list says %#x, "
                                 "the tree %#x",
                                 host_network, arches[ai], nr, (unsigned long long)d.args[0], want,
                                 got);
                    decisions++;
                    killed += (got & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_KILL_PROCESS;
                }
            }
        /* Both decide something: calls of the list are killed, others allowed. */
        assert_true(killed > 0 && killed < decisions);
        fprintf(stderr,
                "test_jail: host_network=%d: %zu decisions agree (%zu kill), list %u "
                "instructions, tree %u\n",
                host_network, decisions, killed, list_len, tree_len);
    }
    bd_jail.host_network = saved_network;
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_jail_build_filter(&err), 0);
}

/* A jail prepared ahead in one process and taken over by another (docs/runner.md, "the
 * supervisor is no copy of the interpreter"): the warm server prepares and forgets, the
 * supervisor program adopts the sync pipe's write end and does the cwd's part. No process
 * is made: the calls run here (last of the tests: the identity stays set). */
static void test_prepared_jail_hand_over(void **state)
{
    (void)state;
    bd_err err = BD_ERR_INIT;
    const char *const argv[] = {"/usr/bin/python3", "-s", "rubric.py", NULL};
    bd_jail_set_case_identity(false, 0, "/tmp");
    assert_int_equal(bd_jail_prepare_ahead(argv, &err), 0);
    int wr = bd_jail_sync_write_fd(), rd = bd_jail_sync_fd();
    assert_true(wr >= 0 && rd >= 0 && wr != rd);
    int handed = fcntl(wr, F_DUPFD_CLOEXEC, 0); /* what the program receives */
    assert_true(handed >= 0);
    bd_jail_forget();
    assert_int_equal(bd_jail_sync_write_fd(), -1);
    assert_int_equal(bd_jail_sync_fd(), -1);
    assert_int_equal(fcntl(wr, F_GETFD), -1); /* this process's copies are closed */
    assert_int_equal(fcntl(rd, F_GETFD), -1);
    /* the cwd's part needs a jail prepared ahead: refused until it is adopted */
    char dir[] = "/tmp/bd-test-adopt-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_int_equal(bd_jail_prepare_cwd(dir, &err), -1);
    bd_jail_adopt_ahead(handed);
    assert_int_equal(bd_jail_sync_write_fd(), handed);
    assert_int_equal(bd_jail_sync_fd(), handed);
    assert_int_equal(bd_jail_prepare_cwd(dir, &err), 0);
    bd_jail_cwd cwd;
    bd_jail_cwd_get(&cwd);
    assert_string_equal(cwd.path, dir);
    assert_string_equal(cwd.jail, dir); /* in the temp root, where a cold start's appears */
    int trees[2];
    assert_int_equal(bd_jail_case_trees(trees, &err), 0); /* no case/ nor rubric.py in it */
    assert_int_equal(trees[0], -1);
    assert_int_equal(trees[1], -1);
    bd_jail_forget();
    assert_int_equal(fcntl(handed, F_GETFD), -1); /* the adopted end is the jail's to close */
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], BD_EXEC_HELPER_ARG) == 0)
        return bd_exec_helper_main(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe_and_choice),
        cmocka_unit_test(test_probe_explains_a_refusal),
        cmocka_unit_test(test_identity_unprivileged),
        cmocka_unit_test(test_pid_namespace_and_fresh_proc),
        cmocka_unit_test(test_root_is_minimal),
        cmocka_unit_test(test_writes_outside_cwd_fail),
        cmocka_unit_test(test_seccomp_kills_denied_calls),
        cmocka_unit_test(test_seccomp_allows_ordinary_work),
        cmocka_unit_test(test_landlock_confines_writes),
        cmocka_unit_test(test_no_network_and_no_host_sockets),
        cmocka_unit_test(test_no_secret_through_proc),
        cmocka_unit_test(test_setsid_double_fork_is_gone),
        cmocka_unit_test(test_fork_bomb_is_contained),
        cmocka_unit_test(test_timeout_and_cpu_limit_under_init),
        cmocka_unit_test(test_setup_failure_is_reported),
        cmocka_unit_test(test_program_outside_system_dirs_is_shown),
        cmocka_unit_test(test_filter_as_text),
        cmocka_unit_test(test_filter_tree_decides_as_the_list),
        cmocka_unit_test(test_prepared_jail_hand_over),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
