#include "sigclean.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SLOTS     16
#define MAX_DEPTH 8 /* a GnuPG home is two levels deep at most (public-keys.d/...) */

static char slot_path[SLOTS][PATH_MAX];
static atomic_int slot_used[SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bool installed;

static const int fatal_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* linux_dirent64, as getdents64 returns it (glibc's readdir is not signal-safe). */
struct ldirent {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Empty the directory `fd` (and close it). Signal-safe: no malloc, no stdio. */
static void empty_dir(int fd, int depth)
{
    char buf[2048];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        bool removed_any = false;
        for (long off = 0; off < n;) {
            struct ldirent *d = (struct ldirent *)(buf + off);
            off += d->d_reclen;
            const char *name = d->d_name;
            if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
                continue;
            if (d->d_type == DT_DIR && depth < MAX_DEPTH) {
                int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (sub >= 0)
                    empty_dir(sub, depth + 1);
                if (unlinkat(fd, name, AT_REMOVEDIR) == 0)
                    removed_any = true;
            } else if (unlinkat(fd, name, 0) == 0) {
                removed_any = true;
            }
        }
        if (removed_any)
            lseek(fd, 0, SEEK_SET); /* entries moved: list again from the start */
    }
    close(fd);
}

static void remove_all(void)
{
    for (int i = 0; i < SLOTS; i++) {
        if (!atomic_load(&slot_used[i]))
            continue;
        int fd = open(slot_path[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            empty_dir(fd, 0);
        rmdir(slot_path[i]);
        atomic_store(&slot_used[i], 0);
    }
}

static void on_fatal(int sig)
{
    int saved = errno;
    remove_all();
    /* Die of the same signal, as if nothing had been installed. */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    errno = saved;
    raise(sig);
}

static void install(void)
{
    for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
        struct sigaction old;
        if (sigaction(fatal_signals[i], NULL, &old) != 0)
            continue;
        /* Someone handles (or ignores) it: leave it to them. */
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL)
            continue;
        if (old.sa_flags & SA_SIGINFO)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_fatal;
        sigfillset(&sa.sa_mask); /* one cleanup at a time */
        sigaction(fatal_signals[i], &sa, NULL);
    }
}

int bd_sigclean_add(const char *path)
{
    if (!path || strlen(path) >= PATH_MAX)
        return -1;
    int slot = -1;
    pthread_mutex_lock(&mu);
    if (!installed) {
        install();
        installed = true;
    }
    for (int i = 0; i < SLOTS; i++) {
        if (!atomic_load(&slot_used[i])) {
            memcpy(slot_path[i], path, strlen(path) + 1);
            atomic_store(&slot_used[i], 1); /* the path is whole before the handler sees it */
            slot = i;
            break;
        }
    }
    pthread_mutex_unlock(&mu);
    return slot;
}

void bd_sigclean_remove(int slot)
{
    if (slot < 0 || slot >= SLOTS)
        return;
    pthread_mutex_lock(&mu);
    atomic_store(&slot_used[slot], 0);
    pthread_mutex_unlock(&mu);
}
