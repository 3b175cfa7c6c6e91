/*
 * case_stamp.c — a case's stamps (case_stamp.h, docs/provenance.md#unchanged-cases).
 */
#include "case_stamp.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const char stamp_tag[] = "benchdesk-stamps-1";

static void le_put(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void bd_case_stamps_begin(bd_case_stamps *s, time_t now)
{
    s->ok = true;
    s->settled = true;
    s->dir_dev = s->dir_ino = 0;
    s->shape_len = 0;
    s->since = now;
    s->top_done = false;
    memset(s->digest, 0, sizeof(s->digest));
    blake3_hasher_init(&s->h);
    blake3_hasher_update(&s->h, stamp_tag, sizeof(stamp_tag));
}

void bd_case_stamps_fail(bd_case_stamps *s)
{
    s->ok = false;
}

static bool time_settled(const struct timespec *t, time_t since)
{
    return t->tv_sec <= since - BD_STAMP_SETTLE_SECONDS;
}

void bd_case_stamps_add(bd_case_stamps *s, const char *rel, size_t len, const struct stat *st)
{
    if (!s->ok)
        return;
    bool is_dir = S_ISDIR(st->st_mode);
    bool top = !s->top_done;
    size_t plen = len + (is_dir && !top); /* a directory's path ends in '/' */
    if (top != (len == 0) || (!top && s->shape_len + plen + 1 > sizeof(s->shape))) {
        s->ok = false;
        return;
    }
    if (top) {
        s->top_done = true;
        s->dir_dev = (uint64_t)st->st_dev;
        s->dir_ino = (uint64_t)st->st_ino;
    } else {
        memcpy(s->shape + s->shape_len, rel, len);
        if (is_dir)
            s->shape[s->shape_len + len] = '/';
        s->shape[s->shape_len + plen] = '\0';
    }
    uint8_t rec[8 + 4 + 8 * 5 + 4 * 2];
    le_put(rec, plen, 8);
    blake3_hasher_update(&s->h, rec, 8);
    if (!top)
        blake3_hasher_update(&s->h, s->shape + s->shape_len, plen);
    uint8_t *p = rec;
    le_put(p, (uint32_t)st->st_mode, 4), p += 4;
    le_put(p, (uint64_t)st->st_dev, 8), p += 8;
    le_put(p, (uint64_t)st->st_ino, 8), p += 8;
    le_put(p, (uint64_t)st->st_size, 8), p += 8;
    le_put(p, (uint64_t)st->st_mtim.tv_sec, 8), p += 8;
    le_put(p, (uint32_t)st->st_mtim.tv_nsec, 4), p += 4;
    le_put(p, (uint64_t)st->st_ctim.tv_sec, 8), p += 8;
    le_put(p, (uint32_t)st->st_ctim.tv_nsec, 4), p += 4;
    blake3_hasher_update(&s->h, rec, (size_t)(p - rec));
    if (!top)
        s->shape_len += plen + 1;
    if (!time_settled(&st->st_mtim, s->since) || !time_settled(&st->st_ctim, s->since))
        s->settled = false;
}

void bd_case_stamps_end(bd_case_stamps *s)
{
    if (!s->top_done)
        s->ok = false;
    if (s->ok)
        blake3_hasher_finalize(&s->h, s->digest, sizeof(s->digest));
}

int bd_case_stamp_dir(int cases_fd, const char *case_id, struct stat *st)
{
    if (fstatat(cases_fd, case_id, st, AT_SYMLINK_NOFOLLOW) != 0)
        return -1;
    if (!S_ISDIR(st->st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

/* Whether p[0..len) is a relative path the walk could have stamped: parts neither empty
 * nor "." nor "..", a directory's ending in '/'. */
static bool shape_path_ok(const char *p, size_t len)
{
    size_t start = 0;
    if (len == 0 || p[0] == '/')
        return false;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && p[i] != '/')
            continue;
        size_t n = i - start;
        if (i == len && n == 0 && p[len - 1] == '/')
            break; /* the directory's trailing '/' */
        if (n == 0 || (n == 1 && p[start] == '.') ||
            (n == 2 && p[start] == '.' && p[start + 1] == '.'))
            return false;
        start = i + 1;
    }
    return true;
}

int bd_case_restamp(bd_case_stamps *s, int cases_fd, const char *case_id, const struct stat *dir_st,
                    const char *shape, size_t shape_len)
{
    char path[BD_STAMP_SHAPE_MAX + 256];
    size_t id_len = strlen(case_id);
    if (id_len + 1 + shape_len + 1 > sizeof(path) || shape_len == 0 || shape[shape_len - 1] != '\0')
        return -1;
    bd_case_stamps_begin(s, 0);
    bd_case_stamps_add(s, "", 0, dir_st);
    memcpy(path, case_id, id_len);
    path[id_len] = '/';
    for (size_t off = 0; off < shape_len;) {
        const char *p = shape + off;
        size_t len = strlen(p);
        if (!shape_path_ok(p, len))
            return -1;
        bool dir = p[len - 1] == '/';
        memcpy(path + id_len + 1, p, len - dir);
        path[id_len + 1 + len - dir] = '\0';
        struct stat st;
        if (fstatat(cases_fd, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode) != dir)
            return -1;
        bd_case_stamps_add(s, p, len - dir, &st);
        off += len + 1;
    }
    bd_case_stamps_end(s);
    return s->ok ? 0 : -1;
}
