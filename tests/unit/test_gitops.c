/*
 * Unit tests for gitops (docs/provenance.md#staging-and-committing): status of bench/ and audit/,
 * staging with its refusals, the index pin check, commits into an unborn repository, signed commits
 * that `git verify-commit` accepts, and a racing ref update detected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/gpg/fixture.h"
#include "commit_check.h"
#include "digest.h"
#include "gitops.h"

static char T[512];
static fx_keys K;
static int seq;

static int group_setup(void **state)
{
    (void)state;
    fx_tmpdir(T, sizeof(T), "git");
    /* No user or system git config may leak in: identity comes from each repo. */
    setenv("HOME", T, 1);
    setenv("XDG_CONFIG_HOME", T, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    fx_make_keys(&K, T);
    setenv("GNUPGHOME", K.home, 1);
    bd_err err = BD_ERR_INIT;
    return bd_provenance_init(&err);
}

static int group_teardown(void **state)
{
    (void)state;
    fx_cleanup(&K, T);
    return 0;
}

/* A pinned bench in a fresh git repository (no commit yet) with an identity. Returns
 * the bench root in `root`; the repository is `root` itself, or its parent when
 * `nested` (bench root = <repo>/sub). */
static void new_repo(char *root, size_t cap, bool nested, bool identity)
{
    char repo[600];
    snprintf(repo, sizeof(repo), "%s/r%d", T, ++seq);
    snprintf(root, cap, nested ? "%s/sub" : "%s", repo);
    fx_make_bench(root, NULL, NULL, "schema_version: 1\nsigners: []\n", 2);
    char p[700];
    snprintf(p, sizeof(p), "%s/README", repo);
    fx_write(p, "not part of the bench\n");
    assert_int_equal(fx_sh("git init -q -b main '%s'", repo), 0);
    if (identity)
        assert_int_equal(fx_sh("git -C '%s' config user.name 'Test Curator' && git -C '%s' "
                               "config user.email curator@bench.example",
                               repo, repo),
                         0);
}

static bd_git *open_git(const char *root)
{
    bd_git *g = NULL;
    bd_err err = BD_ERR_INIT;
    if (bd_git_open(&g, root, &err) < 0)
        fail_msg("bd_git_open: %s", err.msg);
    return g;
}

static bd_code stage(const char *root, const char *path)
{
    bd_git *g = open_git(root);
    bd_err err = BD_ERR_INIT;
    const char *paths[1] = {path};
    int rc = bd_git_stage(g, paths, 1, NULL, &err);
    bd_git_close(g);
    return rc == 0 ? BD_OK : err.code;
}

static bd_code commit(const char *root, const char *msg, bd_commit_result *res,
                      const bd_commit_opts *o)
{
    bd_git *g = open_git(root);
    bd_err err = BD_ERR_INIT;
    bd_commit_opts opts = BD_COMMIT_OPTS_INIT;
    bd_commit_result r;
    if (o)
        opts = *o;
    opts.message = msg;
    int rc = bd_git_commit(res ? res : &r, g, &opts, &err);
    if (rc < 0)
        print_message("commit: %s: %s\n", bd_code_str(err.code), err.msg);
    bd_git_close(g);
    return rc == 0 ? BD_OK : err.code;
}

static bd_git_status status(const char *root)
{
    bd_git *g = open_git(root);
    bd_err err = BD_ERR_INIT;
    bd_git_status st;
    assert_int_equal(bd_git_status_get(&st, g, &err), 0);
    bd_git_close(g);
    return st;
}

static const bd_git_entry *find(const bd_git_status *st, const char *path)
{
    for (size_t i = 0; i < st->n; i++)
        if (strcmp(st->entries[i].path, path) == 0)
            return &st->entries[i];
    return NULL;
}

/* Output of a shell command's first line. */
static void sh_out(char *out, size_t cap, const char *cmd)
{
    FILE *f = popen(cmd, "r");
    assert_non_null(f);
    if (!fgets(out, (int)cap, f))
        out[0] = '\0';
    out[strcspn(out, "\n")] = '\0';
    pclose(f);
}

static void repin(const char *root, const char *id)
{
    bd_bench *b = NULL;
    bd_task_class *tc = NULL;
    bd_pin_report rep;
    bd_err err = BD_ERR_INIT;
    const char *ids[1] = {id};
    assert_int_equal(bd_bench_open(&b, root, &err), 0);
    assert_int_equal(bd_task_class_load(&tc, b, "tc", &err), 0);
    assert_int_equal(bd_pin_task_class(&rep, tc, id ? ids : NULL, id ? 1 : 0, &err), 0);
    bd_pin_report_release(&rep);
    bd_task_class_free(tc);
    bd_bench_free(b);
}

/* ---- tests ------------------------------------------------------------------------- */

static void commit_into_an_unborn_repository(void **state)
{
    (void)state;
    char root[700], cmd[1024], head[128];
    new_repo(root, sizeof(root), false, true);
    bd_git_status st = status(root);
    assert_true(st.unborn);
    assert_string_equal(st.branch, "main");
    assert_int_equal(st.n_staged, 0);
    assert_true(st.n_untracked > 0);
    const bd_git_entry *e = find(&st, "bench/tc/cases/c1/case.yaml");
    assert_non_null(e);
    assert_true(e->untracked);
    assert_null(find(&st, "README")); /* outside bench/ and audit/ */
    bd_git_status_release(&st);

    assert_int_equal(commit(root, "empty", NULL, NULL), BD_E_GIT_NOTHING_TO_COMMIT);
    assert_int_equal(stage(root, "bench"), BD_OK);
    st = status(root);
    e = find(&st, "bench/tc/cases/c1/case.yaml");
    assert_non_null(e);
    assert_int_equal(e->staged, 'A');
    assert_int_equal(st.n_untracked, 0);
    bd_git_status_release(&st);

    bd_commit_result r;
    assert_int_equal(commit(root, "Add the bench", &r, NULL), BD_OK);
    assert_true(r.initial);
    assert_false(r.is_signed);
    assert_string_equal(r.branch, "main");
    snprintf(cmd, sizeof(cmd), "git -C '%s' rev-parse HEAD", root);
    sh_out(head, sizeof(head), cmd);
    assert_string_equal(head, r.id);
    snprintf(cmd, sizeof(cmd), "git -C '%s' log -1 --format='%%an <%%ae>|%%s'", root);
    sh_out(head, sizeof(head), cmd);
    assert_string_equal(head, "Test Curator <curator@bench.example>|Add the bench");
    st = status(root);
    assert_int_equal(st.n, 0);
    assert_false(st.unborn);
    bd_git_status_release(&st);
    /* Nothing new: refused. */
    assert_int_equal(commit(root, "again", NULL, NULL), BD_E_GIT_NOTHING_TO_COMMIT);
    assert_int_equal(commit(root, "  \n\n", NULL, NULL), BD_E_USAGE);
}

static void staging_refuses_paths_outside_bench_and_audit(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_repo(root, sizeof(root), false, true);
    assert_int_equal(stage(root, "README"), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, "/etc/passwd"), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, "bench/../README"), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, "."), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, ".git/config"), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, "bench/.git/x"), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, "benchmark"), BD_E_GIT_PATH_OUTSIDE);
    assert_int_equal(stage(root, "bench/no-such-thing"), BD_E_GIT_PATH_UNKNOWN);
    /* A symlink escaping the bench is staged as a link, never followed. */
    snprintf(p, sizeof(p), "%s/bench/escape", root);
    assert_int_equal(symlink("/etc", p), 0);
    snprintf(p, sizeof(p), "%s/bench/escape/passwd", root);
    assert_int_equal(stage(root, p), BD_E_GIT_PATH_OUTSIDE);
    /* One bad path: nothing at all is staged. */
    bd_git *g = open_git(root);
    bd_err err = BD_ERR_INIT;
    const char *two[2] = {"bench/tc", "README"};
    assert_int_equal(bd_git_stage(g, two, 2, NULL, &err), -1);
    assert_int_equal(err.code, BD_E_GIT_PATH_OUTSIDE);
    bd_git_close(g);
    bd_git_status st = status(root);
    assert_int_equal(st.n_staged, 0);
    bd_git_status_release(&st);
    /* audit/ is in scope. */
    snprintf(p, sizeof(p), "%s/audit/anchors/bench", root);
    assert_int_equal(bd_mkdir_p(p, 0755, &err), 0);
    snprintf(p, sizeof(p), "%s/audit/anchors/bench/2026-01-01.json", root);
    fx_write(p, "{}\n");
    assert_int_equal(stage(root, p), BD_OK);
    st = status(root);
    assert_int_equal(st.n_staged, 1);
    assert_int_equal(find(&st, "audit/anchors/bench/2026-01-01.json")->staged, 'A');
    bd_git_status_release(&st);
}

static void stage_and_unstage_deletions_and_edits(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_repo(root, sizeof(root), false, true);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "base", NULL, NULL), BD_OK);
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c2/expected/answer.txt", root);
    assert_int_equal(unlink(p), 0);
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c1/input/prompt.txt", root);
    fx_write(p, "changed\n");
    bd_git_status st = status(root);
    assert_int_equal(find(&st, "bench/tc/cases/c2/expected/answer.txt")->unstaged, 'D');
    assert_int_equal(find(&st, "bench/tc/cases/c1/input/prompt.txt")->unstaged, 'M');
    bd_git_status_release(&st);
    /* A deleted file stages by its path. */
    assert_int_equal(stage(root, "bench/tc/cases/c2/expected/answer.txt"), BD_OK);
    assert_int_equal(stage(root, "bench/tc/cases/c1"), BD_OK);
    st = status(root);
    assert_int_equal(find(&st, "bench/tc/cases/c2/expected/answer.txt")->staged, 'D');
    assert_int_equal(find(&st, "bench/tc/cases/c1/input/prompt.txt")->staged, 'M');
    assert_int_equal(find(&st, "bench/tc/cases/c1/input/prompt.txt")->unstaged, 0);
    bd_git_status_release(&st);
    bd_git *g = open_git(root);
    bd_err err = BD_ERR_INIT;
    const char *paths[2] = {"bench/tc/cases/c2", "bench/tc/cases/c1/input/prompt.txt"};
    assert_int_equal(bd_git_unstage(g, paths, 2, &err), 0);
    bd_git_close(g);
    st = status(root);
    assert_int_equal(find(&st, "bench/tc/cases/c2/expected/answer.txt")->staged, 0);
    assert_int_equal(find(&st, "bench/tc/cases/c2/expected/answer.txt")->unstaged, 'D');
    assert_int_equal(find(&st, "bench/tc/cases/c1/input/prompt.txt")->staged, 0);
    assert_int_equal(st.n_staged, 0);
    bd_git_status_release(&st);
}

static void staged_case_off_its_pin_is_refused(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_repo(root, sizeof(root), false, true);
    /* Nested files, an executable and names that sort around '/': the index digest must
     * equal the case digest (docs/formats.md#digests) of the work tree or this first commit
     * fails. */
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c1/input/sub", root);
    bd_err err = BD_ERR_INIT;
    assert_int_equal(bd_mkdir_p(p, 0755, &err), 0);
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c1/input/sub/deep.txt", root);
    fx_write(p, "deep\n");
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c1/input/sub.txt", root);
    fx_write(p, "sub\n");
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c1/input/run.sh", root);
    fx_write(p, "#!/bin/sh\n");
    assert_int_equal(chmod(p, 0755), 0);
    repin(root, NULL);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "base", NULL, NULL), BD_OK);

    /* An edited input staged without re-pinning. */
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c1/input/prompt.txt", root);
    fx_write(p, "edited\n");
    assert_int_equal(stage(root, p), BD_OK);
    assert_int_equal(commit(root, "edit", NULL, NULL), BD_E_DIGEST_MISMATCH);
    /* Re-pinned in the work tree, but the new pin not staged: still refused. */
    repin(root, "c1");
    assert_int_equal(commit(root, "edit", NULL, NULL), BD_E_DIGEST_MISMATCH);
    /* The index is what counts: work tree restored, index still edited: refused. */
    fx_write(p, "input of c1\n");
    repin(root, "c1");
    assert_int_equal(commit(root, "edit", NULL, NULL), BD_E_DIGEST_MISMATCH);
    /* Pin staged but an edit of case.yaml (inside the case digest) not. */
    fx_write(p, "edited\n");
    char cy[700];
    snprintf(cy, sizeof(cy), "%s/bench/tc/cases/c1/case.yaml", root);
    assert_int_equal(fx_sh("printf '# reviewed\\n' >>'%s'", cy), 0);
    repin(root, "c1");
    assert_int_equal(stage(root, "bench/tc/cases/digests.yaml"), BD_OK);
    assert_int_equal(stage(root, "bench/tc/cases/c1/input"), BD_OK);
    assert_int_equal(commit(root, "edit", NULL, NULL), BD_E_DIGEST_MISMATCH);
    /* Everything staged together: committed. */
    assert_int_equal(stage(root, "bench/tc"), BD_OK);
    assert_int_equal(commit(root, "edit", NULL, NULL), BD_OK);

    /* A new case without a pin. */
    bd_bench *b = NULL;
    bd_task_class *tc = NULL;
    assert_int_equal(bd_bench_open(&b, root, &err), 0);
    assert_int_equal(bd_task_class_load(&tc, b, "tc", &err), 0);
    assert_int_equal(bd_case_scaffold(NULL, tc, "fresh", &err), 0);
    bd_task_class_free(tc);
    bd_bench_free(b);
    assert_int_equal(stage(root, "bench/tc/cases/fresh"), BD_OK);
    assert_int_equal(commit(root, "fresh", NULL, NULL), BD_E_DIGEST_MISSING);
    bd_git *g = open_git(root);
    const char *paths[1] = {"bench/tc/cases/fresh"};
    assert_int_equal(bd_git_unstage(g, paths, 1, &err), 0);
    bd_git_close(g);
    /* The rubric staged without the task-class pin (docs/provenance.md#staging-and-committing). */
    snprintf(p, sizeof(p), "%s/bench/tc/rubric.py", root);
    fx_write(p, "print('changed')\n");
    assert_int_equal(stage(root, p), BD_OK);
    assert_int_equal(commit(root, "rubric", NULL, NULL), BD_E_TC_DIGEST_MISMATCH);
    fx_write(p, "print('{}')\n");
    assert_int_equal(stage(root, p), BD_OK);
    /* A registration edit (a threshold) staged without the pin: the same. */
    char reg[700];
    snprintf(reg, sizeof(reg), "%s/bench/tc/registration.yaml", root);
    assert_int_equal(fx_sh("sed -i 's/silver: 0.80/silver: 0.10/' '%s'", reg), 0);
    assert_int_equal(stage(root, reg), BD_OK);
    assert_int_equal(commit(root, "threshold", NULL, NULL), BD_E_TC_DIGEST_MISMATCH);
    assert_int_equal(fx_sh("sed -i 's/silver: 0.10/silver: 0.80/' '%s'", reg), 0);
    assert_int_equal(stage(root, reg), BD_OK);
    /* A symlink inside a staged case. */
    snprintf(p, sizeof(p), "%s/bench/tc/cases/c2/input/link", root);
    assert_int_equal(symlink("prompt.txt", p), 0);
    assert_int_equal(stage(root, p), BD_OK);
    assert_int_equal(commit(root, "link", NULL, NULL), BD_E_UNSUPPORTED_ENTRY);
}

/* The staged digests.yaml is read by the bench's own strict loader: a file whose pins
 * still match but which the loader refuses (a schema_version it does not know) refuses
 * the commit with the loader's error, as `verify` would. */
static void staged_digests_yaml_is_read_strictly(void **state)
{
    (void)state;
    char root[700], p[1024];
    new_repo(root, sizeof(root), false, true);
    repin(root, NULL);
    snprintf(p, sizeof(p), "%s/bench/tc/cases/digests.yaml", root);
    assert_int_equal(fx_sh("sed -i 's/^schema_version: 2$/schema_version: 9/' '%s'", p), 0);
    assert_int_equal(fx_sh("grep -q '^schema_version: 9$' '%s'", p), 0);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "base", NULL, NULL), BD_E_DIGESTS_SCHEMA);
    assert_int_equal(fx_sh("sed -i 's/^schema_version: 9$/schema_version: 2/' '%s'", p), 0);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "base", NULL, NULL), BD_OK);
}

typedef struct race {
    const char *repo;
    int calls;
} race;

/* Another process commits while we are between building and recording our commit. */
static int move_branch(void *payload)
{
    race *r = payload;
    r->calls++;
    /* Plumbing, so the racer leaves our index alone. */
    return fx_sh("cd '%s' && t=$(git mktree </dev/null) && p=$(git rev-parse -q --verify HEAD); "
                 "c=$(git commit-tree $t ${p:+-p $p} -m 'racing commit') && "
                 "git update-ref refs/heads/main $c",
                 r->repo);
}

static void racing_ref_update_is_detected(void **state)
{
    (void)state;
    char root[700], cmd[1024], head[128], subj[128];
    new_repo(root, sizeof(root), false, true);
    assert_int_equal(stage(root, "bench"), BD_OK);
    /* Unborn: the branch is born under our feet. */
    race rc = {root, 0};
    bd_commit_opts o = BD_COMMIT_OPTS_INIT;
    o.before_ref_update = move_branch;
    o.payload = &rc;
    bd_commit_result r;
    assert_int_equal(commit(root, "first", &r, &o), BD_E_GIT_REF_MOVED);
    assert_int_equal(rc.calls, 1);
    snprintf(cmd, sizeof(cmd), "git -C '%s' log -1 --format=%%s", root);
    sh_out(subj, sizeof(subj), cmd);
    assert_string_equal(subj, "racing commit");
    /* Nothing lost: our commit object exists, the index still holds the staged bench. */
    snprintf(cmd, sizeof(cmd), "git -C '%s' cat-file -t %s", root, r.id);
    sh_out(head, sizeof(head), cmd);
    assert_string_equal(head, "commit");
    bd_git_status st = status(root);
    assert_true(st.n_staged > 0);
    bd_git_status_release(&st);

    /* Born: the branch moves between our read and our update. */
    assert_int_equal(commit(root, "second", &r, &o), BD_E_GIT_REF_MOVED);
    assert_int_equal(rc.calls, 2);
    snprintf(cmd, sizeof(cmd), "git -C '%s' log -1 --format=%%s", root);
    sh_out(subj, sizeof(subj), cmd);
    assert_string_equal(subj, "racing commit");
    /* Retrying without a race records it on top of the racer. */
    assert_int_equal(commit(root, "third", &r, NULL), BD_OK);
    snprintf(cmd, sizeof(cmd), "git -C '%s' log -2 --format=%%s | tr '\\n' '|'", root);
    sh_out(subj, sizeof(subj), cmd);
    assert_string_equal(subj, "third|racing commit|");
}

static void signed_commit_passes_git_verify_commit(void **state)
{
    (void)state;
    char root[700];
    new_repo(root, sizeof(root), false, true);
    assert_int_equal(stage(root, "bench"), BD_OK);
    bd_commit_opts o = BD_COMMIT_OPTS_INIT;
    o.sign = true;
    o.sign_opts.key = K.alice;
    o.sign_opts.gnupg_home = K.home;
    bd_commit_result r;
    assert_int_equal(commit(root, "Signed bench\n\nwith a body", &r, &o), BD_OK);
    assert_true(r.is_signed);
    assert_true(r.initial);
    assert_string_equal(r.signer, K.alice);
    assert_int_equal(
        fx_sh("GNUPGHOME='%s' git -C '%s' verify-commit HEAD 2>/dev/null", K.home, root), 0);
    char cmd[1024], out[256];
    snprintf(cmd, sizeof(cmd), "GNUPGHOME='%s' git -C '%s' log -1 --format='%%G?|%%GF|%%s'", K.home,
             root);
    sh_out(out, sizeof(out), cmd);
    char want[256];
    snprintf(want, sizeof(want), "G|%s|Signed bench", K.alice);
    assert_string_equal(out, want);
    /* An unsigned commit does not pass: the check above can fail. */
    char p[1024];
    snprintf(p, sizeof(p), "%s/bench/tc/rubric.py", root);
    fx_write(p, "print('{}')  \n");
    repin(root, NULL);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "unsigned", NULL, NULL), BD_OK);
    assert_int_not_equal(
        fx_sh("GNUPGHOME='%s' git -C '%s' verify-commit HEAD 2>/dev/null", K.home, root), 0);
    /* A second signed commit on a born branch, with a key that cannot sign: refused. */
    fx_write(p, "print('{}')\n");
    repin(root, NULL);
    assert_int_equal(stage(root, "bench"), BD_OK);
    o.sign_opts.key = K.dave;
    assert_int_equal(commit(root, "expired key", NULL, &o), BD_E_GPG_KEY_NOT_FOUND);
    o.sign_opts.key = K.bob;
    assert_int_equal(commit(root, "by bob", &r, &o), BD_OK);
    assert_false(r.initial);
    assert_int_equal(
        fx_sh("GNUPGHOME='%s' git -C '%s' verify-commit HEAD 2>/dev/null", K.home, root), 0);
}

static void identity_and_head_are_checked(void **state)
{
    (void)state;
    char root[700];
    new_repo(root, sizeof(root), false, false);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "who?", NULL, NULL), BD_E_GIT_NO_IDENTITY);
    assert_int_equal(fx_sh("git -C '%s' -c user.name=x -c user.email=x@y commit -q -m base", root),
                     0);
    assert_int_equal(fx_sh("git -C '%s' checkout -q --detach", root), 0);
    assert_int_equal(
        fx_sh("git -C '%s' config user.name x && git -C '%s' config user.email x@y", root, root),
        0);
    char p[1024];
    snprintf(p, sizeof(p), "%s/bench/tc/rubric.py", root);
    fx_write(p, "print('{}')  \n");
    repin(root, NULL);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "detached", NULL, NULL), BD_E_GIT_DETACHED_HEAD);
    /* Not a repository at all. */
    char plain[700];
    snprintf(plain, sizeof(plain), "%s/plain%d", T, ++seq);
    fx_make_bench(plain, NULL, NULL, "schema_version: 1\nsigners: []\n", 1);
    bd_git *g = NULL;
    bd_err err = BD_ERR_INIT;
    /* T itself is no repository, so the search upwards finds none. */
    int rc = bd_git_open(&g, plain, &err);
    if (rc == 0) {
        bd_git_close(g);
        skip(); /* a repository above TMPDIR: cannot test "no repository" here */
    }
    assert_int_equal(err.code, BD_E_GIT_NOT_REPO);
}

static void bench_root_below_the_work_tree(void **state)
{
    (void)state;
    char root[700], cwd_path[1024];
    new_repo(root, sizeof(root), true, true);
    bd_git *g = open_git(root);
    assert_string_equal(bd_git_prefix(g), "sub/");
    bd_git_close(g);
    /* Relative paths are the bench root's; absolute ones work too. */
    assert_int_equal(stage(root, "bench/tc/cases"), BD_OK);
    snprintf(cwd_path, sizeof(cwd_path), "%s/bench/tc/registration.yaml", root);
    assert_int_equal(stage(root, cwd_path), BD_OK);
    assert_int_equal(stage(root, "../README"), BD_E_GIT_PATH_OUTSIDE);
    bd_git_status st = status(root);
    assert_non_null(find(&st, "bench/tc/cases/c1/case.yaml"));
    assert_int_equal(find(&st, "bench/tc/registration.yaml")->staged, 'A');
    assert_true(find(&st, "bench/tc/rubric.py")->untracked);
    bd_git_status_release(&st);
    assert_int_equal(stage(root, "bench"), BD_OK);
    assert_int_equal(commit(root, "nested", NULL, NULL), BD_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(commit_into_an_unborn_repository),
        cmocka_unit_test(staging_refuses_paths_outside_bench_and_audit),
        cmocka_unit_test(stage_and_unstage_deletions_and_edits),
        cmocka_unit_test(staged_case_off_its_pin_is_refused),
        cmocka_unit_test(staged_digests_yaml_is_read_strictly),
        cmocka_unit_test(racing_ref_update_is_detected),
        cmocka_unit_test(signed_commit_passes_git_verify_commit),
        cmocka_unit_test(identity_and_head_are_checked),
        cmocka_unit_test(bench_root_below_the_work_tree),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
