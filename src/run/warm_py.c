/*
 * warm_py.c — the embedded Python of the warm interpreter (warm.h). Built only into
 * benchdesk-warm; it creates no process (exec_warm.c forks).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "jail.h"
#include "warm.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

/* What a case does in Python before the rubric's first byte: our own code, compiled at
 * start-up. `case(code, argv)` returns (code, globals) for the rubric. The streams are made
 * as CPython's create_stdio makes them for PYTHONIOENCODING=utf-8 and pipes. */
static const char helper_src[] =
    "import io, os, signal, sys\n"
    "from importlib.machinery import SourceFileLoader as _Loader\n"
    "_Code = type(compile('', '', 'exec'))\n"
    "def _retarget(code, filename):\n"
    "    consts = tuple(_retarget(c, filename) if isinstance(c, _Code) else c\n"
    "                   for c in code.co_consts)\n"
    "    return code.replace(co_filename=filename, co_consts=consts)\n"
    "def _stream(fd, write, name, errors, line_buffering):\n"
    "    buf = io.open(fd, 'wb' if write else 'rb', -1, None, None, None, False)\n"
    "    buf.raw.name = name\n"
    "    s = io.TextIOWrapper(buf, 'utf-8', errors, '\\n', line_buffering, False)\n"
    "    s.mode = 'w' if write else 'r'\n"
    "    return s\n"
    "def compile_rubric(src):\n"
    "    import warnings\n"
    "    with warnings.catch_warnings(record=True) as seen:\n"
    "        warnings.simplefilter('always')\n"
    "        code = compile(src, 'rubric.py', 'exec', 0, 1)\n"
    "    return code, tuple((w.message, w.category, w.lineno) for w in seen)\n"
    "def names(code):\n"
    "    seen, todo = set(), [code]\n"
    "    while todo:\n"
    "        c = todo.pop()\n"
    "        seen.update(n.partition('.')[0] for n in c.co_names)\n"
    "        todo.extend(x for x in c.co_consts if isinstance(x, _Code))\n"
    "    return seen\n"
    "def case(code, argv, compiled_warnings):\n"
    "    signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    "    sys.stdin = sys.__stdin__ = _stream(0, False, '<stdin>', 'strict', False)\n"
    "    sys.stdout = sys.__stdout__ = _stream(1, True, '<stdout>', 'strict', False)\n"
    "    sys.stderr = sys.__stderr__ = _stream(2, True, '<stderr>', 'backslashreplace', True)\n"
    "    sys.argv = list(argv)\n"
    "    path = os.path.join(os.getcwd(), argv[0])\n"
    "    sys.path.insert(0, os.path.dirname(os.path.realpath(path)))\n"
    "    d = sys.modules['__main__'].__dict__\n"
    "    b = d['__builtins__']\n"
    "    d.clear()\n"
    "    d.update(__name__='__main__', __doc__=None, __package__=None, __loader__=None,\n"
    "             __spec__=None, __annotations__={}, __builtins__=b, __file__=path,\n"
    "             __cached__=None)\n"
    "    d['__loader__'] = _Loader('__main__', path)\n"
    "    if compiled_warnings:\n"
    "        import warnings\n"
    "        for message, category, lineno in compiled_warnings:\n"
    "            warnings.warn_explicit(message, category, path, lineno)\n"
    "    if code is None:\n"
    "        with open(path, 'rb') as f:\n"
    "            src = f.read()\n"
    "        return src, path, d\n"
    "    return _retarget(code, path), path, d\n"
    "def exit_code(e):\n"
    "    c = e.code\n"
    "    if c is None:\n"
    "        return 0\n"
    "    if isinstance(c, int):\n"
    "        return c\n"
    "    try:\n"
    "        sys.stderr.write(str(c) + '\\n')\n"
    "    except Exception:\n"
    "        pass\n"
    "    return 1\n"
    "def shutdown():\n"
    "    t = sys.modules.get('threading')\n"
    "    if t is not None:\n"
    "        t._shutdown()\n"
    "    import atexit\n"
    "    atexit._run_exitfuncs()\n"
    "    rc = 0\n"
    "    for s, status in ((sys.stdout, 120), (sys.stderr, 0)):\n"
    "        try:\n"
    "            if s is not None and not s.closed:\n"
    "                s.flush()\n"
    "        except Exception:\n"
    "            rc = rc or status\n"
    "    return rc\n";

static PyObject *helper_compile;   /* compile_rubric(src): (code, the warnings it gave) */
static PyObject *helper_names;     /* names(code): every name its code objects use */
static PyObject *helper_case;      /* the helper's case() */
static PyObject *helper_exit_code; /* exit_code(SystemExit) */
static PyObject *helper_shutdown;  /* shutdown(): threads, atexit, flush */
static PyObject *cached_code;      /* the compiled rubric, or NULL */
static PyObject *stand_in_code;    /* the learning's stand-in rubric (below), compiled here */
static PyObject *cached_warnings;  /* what compiling it warned: (message, category, line)... */
static void freeze(void);
static char *cached_src;
static size_t cached_len;

/* The learning's stand-in rubric (bd_warm_py_learn_child): our own code, run through a
 * case's steps; no byte of a rubric. */
static const char stand_in_src[] =
    "import json, sys\n"
    "doc = json.loads('{\"case\": {\"id\": \"c\", \"input\": {\"q\": [1, 2.5, \"s\"]}},'\n"
    "                 ' \"expected\": {\"a\": true}, \"harness_output\": \"x\"}')\n"
    "ok = doc['expected'] == {'a': True} and doc['harness_output'].strip() == 'x'\n"
    "sys.stdout.write(json.dumps({'score': 1.0 if ok else 0.0, 'passed': ok, 'breakdown': {},\n"
    "                             'failure_modes': [], 'cost_usd': 0.0, 'details': ''}) + '\\n')\n";

static const char *const allowlist[] = {BD_WARM_ALLOWLIST};

/* The modules of the allowlist after its first that `code` names (an import, an attribute,
 * a global: a name is enough), imported here; a module that fails to import is left to
 * the case, which then fails as a cold start would. */
static void import_named(PyObject *code)
{
    PyObject *names = PyObject_CallFunctionObjArgs(helper_names, code, NULL);
    for (size_t i = 1; names && i < sizeof(allowlist) / sizeof(allowlist[0]); i++) {
        PyObject *name = PyUnicode_FromString(allowlist[i]);
        int named = name ? PySet_Contains(names, name) : -1;
        PyObject *m = named == 1 ? PyImport_ImportModule(allowlist[i]) : NULL;
        if (!m)
            PyErr_Clear(); /* no exception may be pending at the next call */
        Py_XDECREF(m);
        Py_XDECREF(name);
    }
    Py_XDECREF(names);
    PyErr_Clear();
}

int bd_warm_py_init(const char *interp, char *why, size_t whylen)
{
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    char *argv[] = {(char *)interp, "-s", "rubric.py", NULL};
    PyStatus st = PyConfig_SetBytesArgv(&config, 3, argv);
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(why, whylen, "cannot initialise Python: %s", st.err_msg ? st.err_msg : "?");
        return -1;
    }
    PyObject *m = PyImport_ImportModule(allowlist[0]);
    if (!m) {
        PyErr_Clear();
        snprintf(why, whylen, "cannot import %s", allowlist[0]);
        return -1;
    }
    Py_DECREF(m);
    PyObject *ns = PyDict_New();
    PyObject *code = ns ? Py_CompileString(helper_src, "<benchdesk-warm>", Py_file_input) : NULL;
    PyObject *r = NULL;
    if (code) {
        PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins());
        r = PyEval_EvalCode(code, ns, ns);
    }
    helper_compile = r ? PyDict_GetItemString(ns, "compile_rubric") : NULL;
    helper_names = r ? PyDict_GetItemString(ns, "names") : NULL;
    helper_case = r ? PyDict_GetItemString(ns, "case") : NULL;
    helper_exit_code = r ? PyDict_GetItemString(ns, "exit_code") : NULL;
    helper_shutdown = r ? PyDict_GetItemString(ns, "shutdown") : NULL;
    Py_XINCREF(helper_compile);
    Py_XINCREF(helper_names);
    Py_XINCREF(helper_case);
    Py_XINCREF(helper_exit_code);
    Py_XINCREF(helper_shutdown);
    Py_XDECREF(r);
    Py_XDECREF(code);
    Py_XDECREF(ns);
    if (!helper_compile || !helper_names || !helper_case || !helper_exit_code || !helper_shutdown) {
        PyErr_Clear();
        snprintf(why, whylen, "cannot set up the warm interpreter's helper");
        return -1;
    }
    /* Compiled before any fork, as a case's rubric is: the learning then copies only the
     * pages a case writes, not the compiler's. */
    stand_in_code = Py_CompileString(stand_in_src, "rubric.py", Py_file_input);
    if (!stand_in_code)
        PyErr_Clear(); /* no learning: each case faults its pages in */
    freeze();
    return 0;
}

bool bd_warm_py_compile(const char *src, size_t len)
{
    if (cached_src && cached_len == len && memcmp(cached_src, src, len) == 0)
        return false;
    Py_CLEAR(cached_code);
    Py_CLEAR(cached_warnings);
    free(cached_src);
    cached_src = NULL;
    /* The warnings the compiler gives (a SyntaxWarning, say) are recorded, not shown:
     * each case shows them again on its own stderr, under its path, as a cold start's
     * compile would (helper_src, case()). */
    PyObject *bytes = PyBytes_FromStringAndSize(src, (Py_ssize_t)len);
    PyObject *r = bytes ? PyObject_CallFunctionObjArgs(helper_compile, bytes, NULL) : NULL;
    Py_XDECREF(bytes);
    if (r && PyTuple_Check(r) && PyTuple_GET_SIZE(r) == 2) {
        cached_code = PyTuple_GET_ITEM(r, 0);
        cached_warnings = PyTuple_GET_ITEM(r, 1);
        Py_INCREF(cached_code);
        Py_INCREF(cached_warnings);
    }
    Py_XDECREF(r);
    if (!cached_code) {
        PyErr_Clear(); /* each case compiles it again and prints the error */
        return true;
    }
    cached_src = malloc(len ? len : 1);
    if (cached_src) {
        memcpy(cached_src, src, len);
        cached_len = len;
        import_named(cached_code);
    } else {
        Py_CLEAR(cached_code);
        Py_CLEAR(cached_warnings);
    }
    freeze();
    return true;
}

/* Objects the forks inherit go to the collector's permanent generation: a case's
 * collections never walk (and so never copy) the warm interpreter's pages. */
static void freeze(void)
{
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *r = gc ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
    if (!r)
        PyErr_Clear();
    Py_XDECREF(r);
    Py_XDECREF(gc);
}

void bd_warm_py_before_fork(void)
{
    PyOS_BeforeFork();
}

void bd_warm_py_after_fork_parent(void)
{
    PyOS_AfterFork_Parent();
}

/* ---- the pages a case writes --------------------------------------------------------
 * A case's rubric process is a copy of the warm server, and a trivial rubric copies about
 * 440 of its pages on write, the same ones every case; each copy is a fault. Asked for at
 * once (MADV_POPULATE_WRITE), the same copies cost less where every fault traps. The
 * stand-in: our own code, run through a case's steps; no byte of a rubric. */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif
/* The kernel's UIO_MAXIOV: iovecs one process_madvise call takes. */
#define POPULATE_IOV_MAX 1024

/* A run of learned pages as the learning fork sends it on its pipe. */
typedef struct page_run {
    uintptr_t start;
    size_t len;
} page_run;

/* The learned runs, kept as the iovecs a case's process_madvise takes: built once in the
 * warm server, only read by each case (a per-case array would be written, so copied). */
static struct iovec *learned;
static size_t n_learned;

#define LEARN_MAPS 1024

void bd_warm_py_learn_child(int fd)
{
    PyOS_AfterFork_Child();
    /* The server's writable private mappings, before the stand-in adds any. */
    static uintptr_t map_lo[LEARN_MAPS], map_hi[LEARN_MAPS];
    size_t n_maps = 0;
    FILE *maps = fopen("/proc/self/maps", "re");
    char line[512];
    while (maps && n_maps < LEARN_MAPS && fgets(line, sizeof(line), maps)) {
        unsigned long lo, hi;
        char perms[5];
        if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && perms[1] == 'w' &&
            perms[3] == 'p') {
            map_lo[n_maps] = lo;
            map_hi[n_maps++] = hi;
        }
    }
    if (maps)
        fclose(maps);
    PyObject *args = Py_BuildValue("[s]", "rubric.py");
    PyObject *r = stand_in_code && args
                      ? PyObject_CallFunction(helper_case, "OOO", stand_in_code, args, Py_None)
                      : NULL;
    PyObject *c = NULL, *path = NULL, *globals = NULL;
    PyObject *result = r && PyArg_ParseTuple(r, "OOO", &c, &path, &globals)
                           ? PyEval_EvalCode(c, globals, globals)
                           : NULL;
    Py_XDECREF(result);
    PyObject *s = PyObject_CallNoArgs(helper_shutdown);
    Py_XDECREF(s);
    PyErr_Clear();
    /* The pages now this process's own (bit 56 of pagemap: mapped here only), in runs. */
    int pm = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    long page = sysconf(_SC_PAGESIZE);
    size_t total = 0;
    page_run run = {0, 0};
    for (size_t m = 0; pm >= 0 && m < n_maps && total < BD_WARM_LEARN_PAGES; m++) {
        for (uintptr_t a = map_lo[m]; a < map_hi[m] && total < BD_WARM_LEARN_PAGES;) {
            uint64_t ent[512];
            size_t want = (map_hi[m] - a) / (uintptr_t)page;
            if (want > 512)
                want = 512;
            ssize_t got = pread(pm, ent, want * 8, (off_t)(a / (uintptr_t)page * 8));
            if (got <= 0)
                break;
            for (size_t i = 0; i < (size_t)got / 8 && total < BD_WARM_LEARN_PAGES;
                 i++, a += (uintptr_t)page) {
                bool own = (ent[i] >> 63) & 1 && (ent[i] >> 56) & 1;
                if (!own)
                    continue;
                total++;
                if (run.len && run.start + run.len == a) {
                    run.len += (size_t)page;
                    continue;
                }
                if (run.len && write(fd, &run, sizeof(run)) != (ssize_t)sizeof(run))
                    _exit(1);
                run = (page_run){a, (size_t)page};
            }
        }
    }
    if (run.len && write(fd, &run, sizeof(run)) != (ssize_t)sizeof(run))
        _exit(1);
    _exit(0);
}

size_t bd_warm_py_learn_read(int fd)
{
    page_run run;
    size_t pages = 0, cap = 0;
    long page = sysconf(_SC_PAGESIZE);
    while (read(fd, &run, sizeof(run)) == (ssize_t)sizeof(run)) {
        if (run.len == 0 || run.len % (size_t)page || run.start % (uintptr_t)page ||
            run.start + run.len < run.start || pages + run.len / (size_t)page > BD_WARM_LEARN_PAGES)
            break;
        if (n_learned == cap) {
            cap = cap ? cap * 2 : 64;
            struct iovec *grown = realloc(learned, cap * sizeof(*learned));
            if (!grown)
                break;
            learned = grown;
        }
        learned[n_learned++] = (struct iovec){(void *)run.start, run.len};
        pages += run.len / (size_t)page;
    }
    return pages;
}

/* The learned runs in process_madvise calls on this process, POPULATE_IOV_MAX runs a
 * call: most runs are one or two pages, and a system call a run cost about 1.4 µs of its
 * own against 0.5 µs a run in one call (tests/perf/cowfloor.c). 0, or -1 when the kernel
 * refuses (before 6.13 process_madvise takes no MADV_POPULATE_WRITE; before 5.10 there is
 * none): the caller then asks run by run. */
static int populate_vector(void)
{
    int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
    if (pidfd < 0)
        return -1;
    int rc = 0;
    for (size_t done = 0; rc == 0 && done < n_learned;) {
        size_t n = n_learned - done < POPULATE_IOV_MAX ? n_learned - done : POPULATE_IOV_MAX;
        size_t bytes = 0;
        for (size_t i = 0; i < n; i++)
            bytes += learned[done + i].iov_len;
        if (syscall(SYS_process_madvise, pidfd, learned + done, n, MADV_POPULATE_WRITE, 0) !=
            (long)bytes)
            rc = -1;
        done += n;
    }
    close(pidfd);
    return rc;
}

/* In the rubric's process, before any Python runs: the learned pages, asked for at once
 * (once: the process may have asked while it waited for its case). A kernel without
 * MADV_POPULATE_WRITE (before 5.14) says EINVAL: the pages then fault as they would have. */
static bool populated;

void bd_warm_py_populate(void)
{
    if (populated)
        return;
    populated = true;
    if (n_learned == 0 || populate_vector() == 0)
        return;
    /* Run by run; a run the vector already copied costs only its walk. */
    for (size_t i = 0; i < n_learned; i++)
        if (madvise(learned[i].iov_base, learned[i].iov_len, MADV_POPULATE_WRITE) != 0 &&
            errno == EINVAL)
            return;
}

static void __attribute__((noreturn)) setup_failed(int status_fd, const char *what)
{
    char line[200];
    int n = snprintf(line, sizeof(line), "error warm %d %s\n", EPROTO, what);
    if (n > 0 && write(status_fd, line, (size_t)n) < 0)
        _exit(127);
    _exit(127);
}

/* Exit as CPython's main does after running a file — an uncaught exception prints and
 * gives 1, SystemExit its code (a non-integer printed, 1), an uncaught KeyboardInterrupt
 * ends by SIGINT; then what finalisation does that a rubric can observe: threads joined,
 * atexit handlers run, stdout and stderr flushed (a failed stdout flush gives 120) — but
 * not the teardown of every object, which in a fork would copy the warm interpreter's
 * whole heap page by page for nothing. */
static void __attribute__((noreturn)) finish(PyObject *result)
{
    int rc = 0;
    bool sigint = false;
    if (!result) {
        if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyErr_NormalizeException(&type, &value, &tb);
            PyObject *c = value ? PyObject_CallOneArg(helper_exit_code, value) : NULL;
            rc = c && PyLong_Check(c) ? (int)PyLong_AsLong(c) : 1;
            PyErr_Clear();
            Py_XDECREF(c);
            Py_XDECREF(type);
            Py_XDECREF(value);
            Py_XDECREF(tb);
        } else {
            sigint = PyErr_ExceptionMatches(PyExc_KeyboardInterrupt);
            PyErr_Print();
            rc = 1;
        }
    }
    Py_XDECREF(result);
    PyObject *s = PyObject_CallNoArgs(helper_shutdown);
    if (s && PyLong_Check(s) && PyLong_AsLong(s) != 0 && rc == 0)
        rc = (int)PyLong_AsLong(s);
    if (!s) {
        PyErr_Clear();
        if (rc == 0)
            rc = 120;
    }
    if (sigint) {
        signal(SIGINT, SIG_DFL);
        kill(getpid(), SIGINT);
    }
    _exit(rc);
}

void bd_warm_case_main(char **argv, int status_fd)
{
    bd_warm_py_populate();
    /* What a cold start's execve as an unprivileged uid does to the capabilities the
     * clone gave in the case's user namespace. */
    if (bd_jail_drop_caps() != 0)
        setup_failed(status_fd, "cannot drop the capabilities");
    /* The name a cold start's process has (its program's base name). */
    const char *base = strrchr(argv[0], '/');
    prctl(PR_SET_NAME, base ? base + 1 : argv[0], 0, 0, 0);
    /* A cold start's execve makes the rubric dumpable again after the jail's change of
     * uid (its /proc/self files are its own, /proc/self/environ readable): so here. */
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    PyOS_AfterFork_Child();
    /* Python's own dispositions, as a fresh interpreter sets them; nothing blocked. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);

    PyObject *args = PyList_New(0);
    for (int i = 2; args && argv[i]; i++) {
        PyObject *s = PyUnicode_DecodeFSDefault(argv[i]);
        if (!s || PyList_Append(args, s) != 0)
            Py_CLEAR(args);
        Py_XDECREF(s);
    }
    PyObject *r =
        args ? PyObject_CallFunction(helper_case, "OOO", cached_code ? cached_code : Py_None, args,
                                     cached_warnings ? cached_warnings : Py_None)
             : NULL;
    Py_XDECREF(args);
    PyObject *code = NULL, *path = NULL, *globals = NULL;
    if (!r || !PyArg_ParseTuple(r, "OOO", &code, &path, &globals)) {
        PyErr_Clear();
        setup_failed(status_fd, "cannot restore a cold start");
    }
    /* Nothing of the supervisor's may reach the rubric: the status pipe and every other
     * descriptor but 0..2 close now (a cold start's execve closes them). */
    close(status_fd);
#ifdef SYS_close_range
    syscall(SYS_close_range, 3u, ~0u, 0u);
#endif
    PyObject *result;
    if (PyBytes_Check(code)) {
        /* Not compiled in advance (it does not compile): compile now, as a cold start
         * would, so the same error is printed. */
        PyObject *builtins = PyEval_GetBuiltins();
        PyObject *compile = PyDict_GetItemString(builtins, "compile");
        PyObject *c = PyObject_CallFunction(compile, "OOsii", code, path, "exec", 0, 1);
        result = c ? PyEval_EvalCode(c, globals, globals) : NULL;
        Py_XDECREF(c);
    } else {
        result = PyEval_EvalCode(code, globals, globals);
    }
    Py_DECREF(r);
    finish(result);
}
