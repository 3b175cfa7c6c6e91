/* benchdesk verdict SEQ... --verdict V [--note TEXT] [--key FPR] — a reviewer's signed
 * verdict on score records (docs/provenance.md#verdicts); and the verdict files' part of
 * `verify` (cli_verify_verdicts). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "gitops.h"
#include "verdict.h"

static const char verdict_help[] =
    "usage: benchdesk verdict SEQ... --verdict V [--note TEXT] [--key FPR] [--json]\n\n"
    "Give your verdict on score records of this machine's history (SEQ: a record's seq, as\n"
    "`history log` shows it). V is one of:\n"
    "  confirmed   the score is right\n"
    "  rubric_bug  the rubric scored this wrongly, either way\n"
    "  case_bug    the case or its expected value is wrong\n"
    "  flaky       the result does not reproduce\n"
    "  infra       the harness or the environment failed, not the system under test\n"
    "  withdrawn   take back your earlier verdict on the record\n"
    "Each verdict is one file under audit/verdicts/, signed with your GnuPG key (--key FPR,\n"
    "else signing_key in .benchdesk/config.yaml, else GnuPG's default key; it must have the\n"
    "reviewer role in bench/trusted-signers.yaml). Stage and commit the files to share them.\n"
    "rubric_bug, case_bug and infra take a record out of recommend's evidence only when two\n"
    "reviewers agree. --note: at most 1024 bytes.\n"
    "Exit: 0 written; 2 bad usage (unknown verdict, not a score record, a seq past the\n"
    "chain); 3 refused (a key without the reviewer role, the same verdict as your latest).\n";

static int parse_seq(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s < '0' || *s > '9' || *end || v == 0 || v > BD_HISTORY_SEQ_MAX)
        return -1;
    *out = v;
    return 0;
}

int cmd_verdict(bd_cli *cli, int argc, char **argv)
{
    if (cli_common_opts(cli, &argc, argv))
        return cli_help(verdict_help);
    const char *word = NULL, *note = NULL, *key = NULL;
    uint64_t *seqs = calloc((size_t)argc, sizeof(*seqs));
    size_t n = 0;
    int status = 0;
    if (!seqs)
        return cli_usage(cli, "verdict", "out of memory");
    for (int i = 1; i < argc; i++) {
        const char **slot = strcmp(argv[i], "--verdict") == 0 ? &word
                            : strcmp(argv[i], "--note") == 0  ? &note
                            : strcmp(argv[i], "--key") == 0   ? &key
                                                              : NULL;
        if (slot) {
            if (i + 1 >= argc || *slot) {
                status = cli_usage(cli, "verdict", "%s needs one value", argv[i]);
                goto out;
            }
            *slot = argv[++i];
        } else if (argv[i][0] == '-' || parse_seq(argv[i], &seqs[n]) != 0) {
            status = cli_usage(cli, "verdict", "'%s' is not a record's seq", cli_vis(argv[i]));
            goto out;
        } else {
            n++;
        }
    }
    bd_verdict_kind kind;
    if (!word || bd_verdict_kind_parse(word, &kind) != 0) {
        status = cli_usage(cli, "verdict",
                           "--verdict is one of confirmed, rubric_bug, case_bug, flaky, infra, "
                           "withdrawn%s%s",
                           word ? "; not " : "", word ? cli_vis(word) : "");
        goto out;
    }
    if (n == 0) {
        status = cli_usage(cli, "verdict", "name at least one record (SEQ)");
        goto out;
    }
    bd_bench *bench = NULL;
    if ((status = cli_open_bench(cli, &bench)) != 0)
        goto out;
    bd_err err = BD_ERR_INIT;
    bd_config cfg;
    bd_verdict_subject *subj = NULL;
    char **paths = NULL;
    memset(&cfg, 0, sizeof(cfg));
    bd_verdict_give_opts o = BD_VERDICT_GIVE_OPTS_INIT;
    if (bd_provenance_init(&err) != 0 || bd_config_load(&cfg, bench->root, &err) != 0 ||
        bd_verdict_subjects(&subj, bench->root, seqs, n, &err) != 0) {
        status = cli_fail(cli, &err);
        goto done;
    }
    o.sign.key = key ? key : cfg.signing_key;
    if (bd_verdict_give(&paths, bench->root, subj, n, kind, note, &o, &err) != 0) {
        status = cli_fail(cli, &err);
        goto done;
    }
    cJSON *j = cli->json ? cJSON_CreateObject() : NULL;
    cJSON *arr = j ? cJSON_AddArrayToObject(j, "verdicts") : NULL;
    for (size_t i = 0; i < n; i++) {
        if (arr) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddNumberToObject(x, "seq", (double)subj[i].seq);
            cJSON_AddStringToObject(x, "score_id", subj[i].score_id);
            cJSON_AddStringToObject(x, "verdict", bd_verdict_kind_str(kind));
            cJSON_AddStringToObject(x, "file", paths[i]);
            cJSON_AddItemToArray(arr, x);
        } else {
            printf("record %llu (%s/%s, run %s): %s\nwrote %s\n", (unsigned long long)subj[i].seq,
                   subj[i].task_class, subj[i].case_id, cli_vis(subj[i].run_id),
                   bd_verdict_kind_str(kind), paths[i]);
        }
    }
    if (j) {
        cli_print_json(j);
        cJSON_Delete(j);
    } else {
        printf("stage and commit %s: benchdesk stage %s && benchdesk commit -m 'verdicts'\n",
               n == 1 ? "it" : "them", BD_VERDICT_DIR);
    }
done:
    for (size_t i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    free(subj);
    bd_config_release(&cfg);
    bd_bench_free(bench);
out:
    free(seqs);
    return status;
}

/* ---- verify's part ------------------------------------------------------------------------ */

/* Verdict files that the last commit holds and the work tree or the index no longer does:
 * deleting a verdict makes recommend more conservative, except deleting a `withdrawn`,
 * which revives what it took back (docs/security.md#a-deleted-verdict-file). A bench
 * outside git has nothing to compare with. */
static void warn_deleted(bd_cli *cli, const bd_bench *bench, cJSON *warns)
{
    bd_git *g = NULL;
    bd_git_status st;
    bd_err err = BD_ERR_INIT;
    if (bd_git_open(&g, bench->root, &err) != 0)
        return;
    if (bd_git_status_get(&st, g, &err) == 0) {
        size_t pl = strlen(BD_VERDICT_DIR "/");
        for (size_t i = 0; i < st.n; i++) {
            const bd_git_entry *e = &st.entries[i];
            if (strncmp(e->path, BD_VERDICT_DIR "/", pl) != 0 ||
                (e->staged != 'D' && e->unstaged != 'D'))
                continue;
            char w[1200];
            snprintf(w, sizeof(w),
                     "verdict file %s, which the last commit holds, is gone: a deleted verdict "
                     "no longer counts (a deleted `withdrawn` revives what it took back); "
                     "restore it with `git checkout HEAD -- %s` unless that was meant",
                     e->path, e->path);
            if (cli->json)
                cJSON_AddItemToArray(warns, cJSON_CreateString(w));
            else
                cli_warn(w);
        }
        bd_git_status_release(&st);
    }
    bd_git_close(g);
}

int cli_verify_verdicts(bd_cli *cli, const bd_bench *bench, bd_prov_ctx *prov, cJSON *root,
                        size_t *failed, int *status)
{
    bd_verdict_set s;
    bd_err err = BD_ERR_INIT;
    cJSON *o = cJSON_AddObjectToObject(root, "verdicts");
    cJSON *fails = cJSON_AddArrayToObject(o, "failures");
    cJSON *untrusted = cJSON_AddArrayToObject(o, "untrusted");
    warn_deleted(cli, bench, cJSON_AddArrayToObject(o, "warnings"));
    int rc = bd_verdict_set_check(&s, bench->root, NULL, prov, &err);
    if (rc != 0) {
        (*failed)++;
        if (*status == 0)
            *status = bd_code_exit(err.code);
        if (cli->json) {
            cJSON *x = cJSON_CreateObject();
            cJSON_AddStringToObject(x, "code", bd_code_str(err.code));
            cJSON_AddStringToObject(x, "message", cli_err_text(&err));
            cJSON_AddItemToArray(fails, x);
        } else {
            cli_err_line(err.code, cli_err_text(&err));
        }
        cJSON_AddBoolToObject(o, "ok", false);
        return -1;
    }
    for (size_t i = 0; i < s.n; i++) {
        const bd_verdict_entry *e = &s.e[i];
        if (e->state == BD_VST_BAD) {
            (*failed)++;
            if (*status == 0)
                *status = bd_code_exit(e->err.code);
            if (cli->json) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "code", bd_code_str(e->err.code));
                cJSON_AddStringToObject(x, "message", cli_err_text(&e->err));
                cJSON_AddStringToObject(x, "file", e->path);
                cJSON_AddItemToArray(fails, x);
            } else {
                cli_err_line(e->err.code, cli_err_text(&e->err));
            }
        } else if (e->state == BD_VST_UNTRUSTED || e->state == BD_VST_NO_SUBJECT) {
            const char *why = e->state == BD_VST_UNTRUSTED ? e->why : "subject not in this history";
            if (cli->json) {
                cJSON *x = cJSON_CreateObject();
                cJSON_AddStringToObject(x, "file", e->path);
                cJSON_AddStringToObject(x, "state",
                                        e->state == BD_VST_UNTRUSTED ? "untrusted" : "no_subject");
                cJSON_AddStringToObject(x, "why", why);
                cJSON_AddItemToArray(untrusted, x);
            } else {
                printf("verdict %s: %s, counts for nothing (%s)\n", e->path,
                       e->state == BD_VST_UNTRUSTED ? "untrusted" : "not here", cli_vis(why));
            }
        }
    }
    cJSON_AddNumberToObject(o, "files", (double)s.n);
    cJSON_AddNumberToObject(o, "counting", (double)s.n_counting);
    cJSON_AddNumberToObject(o, "untrusted_count", (double)s.n_untrusted);
    cJSON_AddNumberToObject(o, "no_subject", (double)s.n_no_subject);
    cJSON_AddNumberToObject(o, "bad", (double)s.n_bad);
    cJSON_AddBoolToObject(o, "ok", s.n_bad == 0);
    if (!cli->json && s.n)
        printf("%-24s %4zu files     %zu counting, %zu untrusted, %zu not in this history%s\n",
               "verdicts", s.n, s.n_counting, s.n_untrusted, s.n_no_subject,
               s.n_bad ? ", some FAILED" : "");
    bd_verdict_set_release(&s);
    return 0;
}

/* ---- history log's filters ------------------------------------------------------------ */

typedef struct log_filter {
    bd_verdict_set vs;
    bool unreviewed;
    bd_verdict_kind kind;
    bool (*next)(const bd_history_record *r, void *ctx);
    void *next_ctx;
} log_filter;

static bool keep_verdict(const bd_history_record *r, void *ctx)
{
    log_filter *f = ctx;
    if (r->is_audit || (f->next && !f->next(r, f->next_ctx)))
        return false;
    const bd_verdict_entry *on[16];
    size_t n = bd_verdict_set_on(&f->vs, r->seq, on, 16);
    if (f->unreviewed)
        return !r->score.passed && n == 0;
    for (size_t i = 0; i < n && i < 16; i++)
        if (on[i]->v.verdict == f->kind)
            return true;
    return false;
}

int cli_log_verdicts_open(void **state, bd_cli *cli, const bd_bench *bench, const char *verdict,
                          bool unreviewed, bd_history_log_opts *o)
{
    *state = NULL;
    log_filter *f = calloc(1, sizeof(*f));
    bd_err err = BD_ERR_INIT;
    bd_prov_ctx *prov = NULL;
    if (!f)
        return cli_usage(cli, "history", "out of memory");
    f->unreviewed = unreviewed;
    if (verdict && bd_verdict_kind_parse(verdict, &f->kind) != 0) {
        free(f);
        return cli_usage(cli, "history",
                         "--verdict is one of confirmed, rubric_bug, case_bug, flaky, infra; "
                         "not %s",
                         cli_vis(verdict));
    }
    if (bd_provenance_init(&err) != 0 || bd_prov_ctx_new(&prov, bench->bench_dir, &err) != 0 ||
        bd_verdict_set_check(&f->vs, bench->root, o->task_class, prov, &err) != 0) {
        bd_prov_ctx_free(prov);
        free(f);
        return cli_fail(cli, &err);
    }
    bd_prov_ctx_free(prov);
    f->next = o->keep;
    f->next_ctx = o->keep_ctx;
    o->keep = keep_verdict;
    o->keep_ctx = f;
    *state = f;
    return 0;
}

void cli_log_verdicts_close(void *state)
{
    log_filter *f = state;
    if (!f)
        return;
    bd_verdict_set_release(&f->vs);
    free(f);
}
