/*
 * walkfloor.c — the floor of a check that reads every case
 * (docs/provenance.md#verifying-many-signatures).
 *
 *   bd_perf_walkfloor CASES_DIR [THREADS] [--no-hash]
 *   bd_perf_walkfloor CASES_DIR [THREADS] --stat PATHS_FILE
 *
 * Does the least any verify of CASES_DIR must do and nothing else: list every case
 * directory and its subdirectories (getdents64, types from the listing), open every
 * regular file once, fstat it (the digest covers each file's execute bits, which only a
 * stat gives: docs/formats.md#digests), read it, and hash its bytes with BLAKE3 — on
 * THREADS threads (default:
 * the online CPUs) taking cases from one shared counter. No parsing, no ordering, no
 * signature, no memo, no error text: a short read is taken as the end of a file, and
 * anything but a directory or a regular file is skipped. What benchdesk's verify does on
 * top (the digest's canonical stream and order, case.yaml and provenance.yaml parsed, the
 * signature memo) only adds to this, so its wall time on the same bench cannot go below
 * this program's. --no-hash leaves out the hashing (the file system's part alone).
 *
 * --stat is the floor of a check that reads nothing (docs/provenance.md#unchanged-cases):
 * one fstatat, links not followed, of each path of PATHS_FILE (one per line, relative to
 * CASES_DIR: each case directory and every entry below it, e.g. `find . -mindepth 1` run
 * there, made beforehand and not timed), on THREADS threads taking runs of paths from one
 * shared counter; nothing listed, opened or read.
 *
 * Prints one line: cases, dirs, files, bytes, threads, wall seconds (--stat: paths,
 * threads, wall seconds). Exit 0, or 1 with a message when CASES_DIR cannot be listed, a
 * case cannot be read or a path cannot be stat'ed.
 */
#include <blake3.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DENTS_BUF (32 * 1024)
#define READ_BUF  (64 * 1024)
#define MAX_DEPTH 16

typedef struct {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
} linux_dirent64;

static char **cases;
static size_t n_cases;
static int cases_fd;
static bool hash_bytes = true;
static atomic_size_t next_case;
static atomic_int failed;

typedef struct {
    uint64_t dirs, files, bytes, exec_bits;
    char *dents[MAX_DEPTH + 1];
    char *buf;
} worker;

static int read_file(worker *w, int dfd, const char *name)
{
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0) {
        close(fd);
        return -1;
    }
    w->exec_bits += (st.st_mode & 0111) != 0;
    blake3_hasher h;
    if (hash_bytes)
        blake3_hasher_init(&h);
    for (;;) {
        ssize_t n = read(fd, w->buf, READ_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return -1;
        }
        if (hash_bytes)
            blake3_hasher_update(&h, w->buf, (size_t)n);
        w->bytes += (uint64_t)n;
        if (n < READ_BUF)
            break;
    }
    if (hash_bytes) {
        uint8_t out[BLAKE3_OUT_LEN];
        blake3_hasher_finalize(&h, out, sizeof(out));
    }
    close(fd);
    w->files++;
    return 0;
}

/* List the directory open on `dfd` (closed here) and read what it holds. */
static int walk_dir(worker *w, int dfd, int depth)
{
    int rc = 0;
    w->dirs++;
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, w->dents[depth], DENTS_BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = n < 0 ? -1 : 0;
            break;
        }
        for (long pos = 0; pos < n && rc == 0;) {
            const linux_dirent64 *de = (const linux_dirent64 *)(w->dents[depth] + pos);
            pos += de->reclen;
            const char *nm = de->name;
            if (nm[0] == '.' && (nm[1] == '\0' || (nm[1] == '.' && nm[2] == '\0')))
                continue;
            if (de->type == DT_REG) {
                rc = read_file(w, dfd, nm);
            } else if (de->type == DT_DIR && depth < MAX_DEPTH) {
                int sub = openat(dfd, nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                rc = sub < 0 ? -1 : walk_dir(w, sub, depth + 1);
            }
        }
        if (rc != 0)
            break;
    }
    close(dfd);
    return rc;
}

static void *work(void *arg)
{
    worker *w = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&next_case, 1);
        if (i >= n_cases || atomic_load(&failed))
            break;
        int fd = openat(cases_fd, cases[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0 || walk_dir(w, fd, 0) != 0) {
            fprintf(stderr, "walkfloor: cannot read case '%s': %s\n", cases[i], strerror(errno));
            atomic_store(&failed, 1);
            break;
        }
    }
    return NULL;
}

/* ---- --stat: one fstatat per path ---- */

static double now_s(void);

static char **paths;
static size_t n_paths;
#define STAT_RUN 64

static void *stat_work(void *arg)
{
    (void)arg;
    for (;;) {
        size_t first = atomic_fetch_add(&next_case, STAT_RUN);
        if (first >= n_paths || atomic_load(&failed))
            break;
        size_t last = first + STAT_RUN < n_paths ? first + STAT_RUN : n_paths;
        for (size_t i = first; i < last; i++) {
            struct stat st;
            if (fstatat(cases_fd, paths[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
                fprintf(stderr, "walkfloor: cannot stat '%s': %s\n", paths[i], strerror(errno));
                atomic_store(&failed, 1);
                return NULL;
            }
        }
    }
    return NULL;
}

/* The paths of `file`, one per line, into `paths` (one buffer, split in place). */
static int read_paths(const char *file)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    size_t cap = 0, len = 0;
    char *buf = NULL;
    for (;;) {
        if (len + 65536 + 1 > cap) {
            cap = (len + 65536 + 1) * 2;
            char *grown = realloc(buf, cap);
            if (!grown)
                return -1;
            buf = grown;
        }
        size_t got = fread(buf + len, 1, 65536, f);
        len += got;
        if (got == 0)
            break;
    }
    fclose(f);
    buf[len] = '\0';
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += buf[i] == '\n';
    if (!(paths = malloc((lines + 1) * sizeof(*paths))))
        return -1;
    for (char *p = buf; p < buf + len;) {
        char *nl = memchr(p, '\n', (size_t)(buf + len - p));
        if (!nl)
            nl = buf + len;
        *nl = '\0';
        if (*p)
            paths[n_paths++] = p;
        p = nl + 1;
    }
    return 0;
}

static int stat_floor(const char *dir, const char *file, long threads)
{
    if (read_paths(file) != 0 || n_paths == 0) {
        fprintf(stderr, "walkfloor: cannot read paths from '%s'\n", file);
        return 1;
    }
    if ((cases_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        fprintf(stderr, "walkfloor: cannot open '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    if (!tids)
        return 1;
    double t0 = now_s();
    for (long t = 1; t < threads; t++)
        if (pthread_create(&tids[t], NULL, stat_work, NULL) != 0) {
            fprintf(stderr, "walkfloor: cannot start a thread\n");
            return 1;
        }
    stat_work(NULL);
    for (long t = 1; t < threads; t++)
        pthread_join(tids[t], NULL);
    double wall = now_s() - t0;
    if (atomic_load(&failed))
        return 1;
    printf("walkfloor: %zu paths stat'ed, %ld threads: %.3f s\n", n_paths, threads, wall);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    const char *dir = NULL, *stat_file = NULL;
    long threads = sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--no-hash") == 0)
            hash_bytes = false;
        else if (strcmp(argv[i], "--stat") == 0 && i + 1 < argc)
            stat_file = argv[++i];
        else if (!dir)
            dir = argv[i];
        else
            threads = strtol(argv[i], NULL, 10);
    }
    if (!dir || threads < 1 || threads > 64) {
        fprintf(stderr, "usage: bd_perf_walkfloor CASES_DIR [THREADS 1-64] [--no-hash | --stat "
                        "PATHS_FILE]\n");
        return 1;
    }
    if (stat_file)
        return stat_floor(dir, stat_file, threads);
    double t0 = now_s();
    /* The listing of the cases dir is part of the walk (verify lists it too). */
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "walkfloor: cannot list '%s': %s\n", dir, strerror(errno));
        return 1;
    }
    cases_fd = dirfd(d);
    size_t cap = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_type != DT_DIR || de->d_name[0] == '.')
            continue;
        if (n_cases == cap) {
            cap = cap ? cap * 2 : 1024;
            char **grown = realloc(cases, cap * sizeof(*cases));
            if (!grown) {
                fprintf(stderr, "walkfloor: out of memory\n");
                return 1;
            }
            cases = grown;
        }
        if (!(cases[n_cases++] = strdup(de->d_name))) {
            fprintf(stderr, "walkfloor: out of memory\n");
            return 1;
        }
    }
    worker *ws = calloc((size_t)threads, sizeof(*ws));
    pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
    if (!ws || !tids) {
        fprintf(stderr, "walkfloor: out of memory\n");
        return 1;
    }
    for (long t = 0; t < threads; t++) {
        bool ok = (ws[t].buf = malloc(READ_BUF)) != NULL;
        for (int k = 0; k <= MAX_DEPTH; k++)
            ok = (ws[t].dents[k] = malloc(DENTS_BUF)) != NULL && ok;
        if (!ok) {
            fprintf(stderr, "walkfloor: out of memory\n");
            return 1;
        }
    }
    for (long t = 1; t < threads; t++)
        if (pthread_create(&tids[t], NULL, work, &ws[t]) != 0) {
            fprintf(stderr, "walkfloor: cannot start a thread\n");
            return 1;
        }
    work(&ws[0]);
    for (long t = 1; t < threads; t++)
        pthread_join(tids[t], NULL);
    double wall = now_s() - t0;
    closedir(d);
    if (atomic_load(&failed))
        return 1;
    uint64_t dirs = 0, files = 0, bytes = 0, exec_bits = 0;
    for (long t = 0; t < threads; t++) {
        dirs += ws[t].dirs;
        files += ws[t].files;
        bytes += ws[t].bytes;
        exec_bits += ws[t].exec_bits;
    }
    printf("walkfloor: %zu cases, %llu dirs, %llu files (%llu executable), %llu bytes%s, %ld "
           "threads: %.3f s\n",
           n_cases, (unsigned long long)dirs, (unsigned long long)files,
           (unsigned long long)exec_bits, (unsigned long long)bytes, hash_bytes ? " hashed" : "",
           threads, wall);
    return 0;
}
