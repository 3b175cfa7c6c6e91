/*
 * bench_load.c — the strict, typed loaders of registration.yaml, case.yaml,
 * provenance.yaml and trusted-signers.yaml (bench.h), and the words of their enums.
 * digests.yaml has its own room (bench_digests.c); the typing and the checks they share
 * are bench_schema.c's.
 */
#include "bench.h"
#include "bench_schema.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

/* ---- names and enum strings ------------------------------------------------------------ */

bool bd_env_name_valid(const char *s)
{
    static const char *const fixed[] = {"PATH", "LANG", "PYTHONHASHSEED", "PYTHONIOENCODING"};
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
            return false;
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        if (strcmp(s, fixed[i]) == 0)
            return false;
    return true;
}
static const char *const tier_names[] = {"bronze", "silver", "gold"};
static const char *const severity_names[] = {"block", "warn", "info"};
static const char *const sut_names[] = {"cassette", "command"};
static const char *const disposition_names[] = {"positive", "negative", "ambiguous"};
static const char *const difficulty_names[] = {"easy", "medium", "hard"};
static const char *const source_names[] = {"curated", "outcome-ledger-derived",
                                           "regression-converted"};
static const char *const source_ref_names[] = {"ghsa", "ledger", "commit", "synthetic"};
static const char *const role_names[] = {"author", "reviewer", "operator"};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *bd_tier_str(bd_tier t)
{
    return (unsigned)t < COUNT(tier_names) ? tier_names[t] : "?";
}

const char *bd_severity_str(bd_severity s)
{
    return (unsigned)s < COUNT(severity_names) ? severity_names[s] : "?";
}

int bd_severity_parse(const char *s, bd_severity *out)
{
    for (size_t i = 0; s && i < COUNT(severity_names); i++) {
        if (strcmp(s, severity_names[i]) == 0) {
            *out = (bd_severity)i;
            return 0;
        }
    }
    return -1;
}

const char *bd_sut_kind_str(bd_sut_kind k)
{
    return (unsigned)k < COUNT(sut_names) ? sut_names[k] : "?";
}

const char *bd_disposition_str(bd_disposition d)
{
    return (unsigned)d < COUNT(disposition_names) ? disposition_names[d] : "?";
}

const char *bd_difficulty_str(bd_difficulty d)
{
    return (unsigned)d < COUNT(difficulty_names) ? difficulty_names[d] : "?";
}

static bool is_lower_ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* ^[a-z0-9_]+(\.[a-z0-9_]+)+$ */
static bool failure_code_ok(const char *s)
{
    size_t seg = 0, dots = 0;
    for (; *s; s++) {
        if (*s == '.') {
            if (seg == 0)
                return false;
            dots++;
            seg = 0;
        } else if (is_lower_ident_char(*s)) {
            seg++;
        } else {
            return false;
        }
    }
    return dots > 0 && seg > 0;
}

static bool breakdown_key_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!is_lower_ident_char(*s))
            return false;
    return true;
}

#define NAME_MAX_CODE 128

/* ---- registration.yaml ---------------------------------------------------------------- */

void bd_registration_free(bd_registration *reg)
{
    if (!reg)
        return;
    free(reg->name);
    free(reg->description);
    for (size_t i = 0; i < reg->n_breakdown_keys; i++)
        free(reg->breakdown_keys[i]);
    free(reg->breakdown_keys);
    for (size_t i = 0; i < reg->n_failure_modes; i++) {
        free(reg->failure_modes[i].code);
        free(reg->failure_modes[i].description);
    }
    free(reg->failure_modes);
    if (reg->sut_argv)
        for (size_t i = 0; i < reg->sut_argc; i++)
            free(reg->sut_argv[i]);
    free(reg->sut_argv);
    for (size_t i = 0; i < reg->n_sut_env_pass; i++)
        free(reg->sut_env_pass[i]);
    free(reg->sut_env_pass);
    free(reg);
}

static int reg_breakdown(const bd_vctx *v, bd_registration *r, const bd_ynode *n)
{
    if (bd_v_seq(v, n, "breakdown_keys") < 0)
        return -1;
    if (n->n) {
        r->breakdown_keys = calloc(n->n, sizeof(char *));
        if (!r->breakdown_keys)
            return bd_v_nomem(v);
    }
    for (size_t i = 0; i < n->n; i++) {
        const bd_ynode *it = n->items[i];
        char what[48];
        snprintf(what, sizeof(what), "breakdown_keys[%zu]", i);
        if (bd_v_str(v, it, what, false) < 0)
            return -1;
        if (!breakdown_key_ok(it->str) || it->len > NAME_MAX_CODE) {
            char shown[72];
            bd_ydoc_clip(shown, sizeof(shown), it->str);
            return bd_v_fail(v, BD_OK, it,
                             "breakdown key '%s' must match ^[a-z0-9_]+$ (at most %d characters); "
                             "rename it",
                             shown, NAME_MAX_CODE);
        }
        if (!(r->breakdown_keys[i] = strdup(it->str)))
            return bd_v_nomem(v);
        r->n_breakdown_keys = i + 1;
    }
    long dup;
    if (bd_v_find_dup((const char *const *)r->breakdown_keys, r->n_breakdown_keys, &dup) < 0)
        return bd_v_nomem(v);
    if (dup >= 0)
        return bd_v_fail(v, BD_OK, n->items[dup], "breakdown key '%s' is listed twice; keep one",
                         r->breakdown_keys[dup]);
    return 0;
}

static int reg_failure_modes(const bd_vctx *v, bd_registration *r, const bd_ynode *n)
{
    static const char *const keys[] = {"code", "severity", "description", NULL};
    if (bd_v_seq(v, n, "failure_modes") < 0)
        return -1;
    if (n->n) {
        r->failure_modes = calloc(n->n, sizeof(*r->failure_modes));
        if (!r->failure_modes)
            return bd_v_nomem(v);
    }
    for (size_t i = 0; i < n->n; i++) {
        const bd_ynode *it = n->items[i];
        bd_failure_mode_def *fm = &r->failure_modes[i];
        r->n_failure_modes = i + 1;
        char what[64];
        snprintf(what, sizeof(what), "failure_modes[%zu]", i);
        if (bd_v_map(v, it, what) < 0 || bd_v_keys(v, it, what, keys) < 0)
            return -1;
        const bd_ynode *code = bd_v_need(v, it, "code", what);
        if (!code)
            return -1;
        snprintf(what, sizeof(what), "failure_modes[%zu].code", i);
        if (bd_v_str(v, code, what, false) < 0)
            return -1;
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), code->str);
        if (!failure_code_ok(code->str) || code->len > NAME_MAX_CODE)
            return bd_v_fail(v, BD_OK, code,
                             "failure-mode code '%s' must be dotted lower case "
                             "(^[a-z0-9_]+(\\.[a-z0-9_]+)+$, at most %d characters); rename it",
                             shown, NAME_MAX_CODE);
        if (strncmp(code->str, "rubric.", 7) == 0 || strncmp(code->str, "sut.", 4) == 0)
            return bd_v_fail(v, BD_OK, code,
                             "failure-mode code '%s' uses a prefix reserved for the harness "
                             "(rubric., sut.); choose another prefix",
                             shown);
        if (!(fm->code = strdup(code->str)))
            return bd_v_nomem(v);
        const bd_ynode *sev = bd_v_need(v, it, "severity", what);
        if (!sev)
            return -1;
        int s;
        snprintf(what, sizeof(what), "failure_modes[%zu].severity", i);
        if (bd_v_enum(v, sev, what, severity_names, COUNT(severity_names), &s) < 0)
            return -1;
        fm->severity = (bd_severity)s;
        const bd_ynode *desc = bd_ynode_get(it, "description");
        snprintf(what, sizeof(what), "failure_modes[%zu].description", i);
        if (desc) {
            if (bd_v_dup_str(v, desc, what, true, &fm->description) < 0)
                return -1;
        } else if (!(fm->description = strdup(""))) {
            return bd_v_nomem(v);
        }
    }
    const char **codes = NULL;
    if (r->n_failure_modes && !(codes = malloc(r->n_failure_modes * sizeof(*codes))))
        return bd_v_nomem(v);
    for (size_t i = 0; i < r->n_failure_modes; i++)
        codes[i] = r->failure_modes[i].code;
    long dup;
    int rc = bd_v_find_dup(codes, r->n_failure_modes, &dup);
    free(codes);
    if (rc < 0)
        return bd_v_nomem(v);
    if (dup >= 0)
        return bd_v_fail(v, BD_OK, bd_ynode_get(n->items[dup], "code"),
                         "failure-mode code '%s' is listed twice; keep one",
                         r->failure_modes[dup].code);
    return 0;
}

static int reg_sut(const bd_vctx *v, bd_registration *r, const bd_ynode *n)
{
    static const char *const cassette_keys[] = {"kind", NULL};
    static const char *const command_keys[] = {"kind",    "argv",     "wall_clock_seconds",
                                               "network", "env_pass", NULL};
    if (bd_v_map(v, n, "sut") < 0)
        return -1;
    const bd_ynode *kind = bd_v_need(v, n, "kind", "sut");
    int k;
    if (!kind || bd_v_enum(v, kind, "sut.kind", sut_names, COUNT(sut_names), &k) < 0)
        return -1;
    r->sut_kind = (bd_sut_kind)k;
    if (r->sut_kind == BD_SUT_CASSETTE)
        return bd_v_keys(v, n, "sut (kind cassette)", cassette_keys);
    if (bd_v_keys(v, n, "sut (kind command)", command_keys) < 0)
        return -1;
    const bd_ynode *argv = bd_v_need(v, n, "argv", "sut (kind command)");
    if (!argv || bd_v_seq(v, argv, "sut.argv") < 0)
        return -1;
    if (argv->n == 0 || argv->n > 256)
        return bd_v_fail(v, BD_OK, argv,
                         "sut.argv must hold 1 to 256 strings, the first an absolute path; fix it");
    r->sut_argv = calloc(argv->n + 1, sizeof(char *));
    if (!r->sut_argv)
        return bd_v_nomem(v);
    for (size_t i = 0; i < argv->n; i++) {
        char what[48];
        snprintf(what, sizeof(what), "sut.argv[%zu]", i);
        if (bd_v_str(v, argv->items[i], what, i > 0) < 0)
            return -1;
        if (i == 0 && argv->items[0]->str[0] != '/')
            return bd_v_fail(v, BD_OK, argv->items[0],
                             "sut.argv[0] must be an absolute path (no PATH lookup, no shell); "
                             "write the program's full path");
        if (!(r->sut_argv[i] = strdup(argv->items[i]->str)))
            return bd_v_nomem(v);
        r->sut_argc = i + 1;
    }
    r->sut_wall_clock_s = 120;
    const bd_ynode *wc = bd_ynode_get(n, "wall_clock_seconds");
    if (wc && bd_v_int(v, wc, "sut.wall_clock_seconds", 1, BD_RUBRIC_MAX_WALL_S,
                       &r->sut_wall_clock_s) < 0)
        return -1;
    const bd_ynode *net = bd_ynode_get(n, "network");
    if (net && !bd_v_is_false(net)) {
        bd_v_fail(v, BD_OK, net,
                  "sut.network must be false: a run's SUT never has the network (a curator "
                  "records with ");
        bd_err_advise(v->err, BD_ACT_RECORD_NETWORK, NULL);
        return bd_err_append(v->err, ")");
    }
    const bd_ynode *ep = bd_ynode_get(n, "env_pass");
    if (ep && !bd_ynode_is_null(ep)) {
        if (bd_v_seq(v, ep, "sut.env_pass") < 0)
            return -1;
        if (ep->n > 64)
            return bd_v_fail(v, BD_OK, ep, "sut.env_pass names more than 64 variables; name fewer");
        r->sut_env_pass = calloc(ep->n + 1, sizeof(char *));
        if (!r->sut_env_pass)
            return bd_v_nomem(v);
        for (size_t i = 0; i < ep->n; i++) {
            char what[48];
            snprintf(what, sizeof(what), "sut.env_pass[%zu]", i);
            const bd_ynode *it = ep->items[i];
            if (bd_v_str(v, it, what, false) < 0)
                return -1;
            if (!bd_env_name_valid(it->str))
                return bd_v_fail(
                    v, BD_OK, it,
                    "%s must be an environment variable name (^[A-Z_][A-Z0-9_]{0,127}$) "
                    "other than PATH, LANG, PYTHONHASHSEED and PYTHONIOENCODING",
                    what);
            for (size_t j = 0; j < i; j++)
                if (strcmp(r->sut_env_pass[j], it->str) == 0)
                    return bd_v_fail(v, BD_OK, it, "%s repeats '%s'; name each variable once", what,
                                     it->str);
            if (!(r->sut_env_pass[i] = strdup(it->str)))
                return bd_v_nomem(v);
            r->n_sut_env_pass = i + 1;
        }
    }
    return 0;
}

/* min_cases_for_promotion {bronze, silver, gold: integers >= 1} and promotion_threshold
 * {silver, gold: numbers in [0,1]} of the registration's `root`. */
static int reg_tiers(const bd_vctx *v, bd_registration *r, const bd_ynode *root)
{
    static const char *const min_keys[] = {"bronze", "silver", "gold", NULL};
    static const char *const thr_keys[] = {"silver", "gold", NULL};
    const bd_ynode *n;
    const bd_ynode *mc = bd_v_need(v, root, "min_cases_for_promotion", "registration.yaml");
    if (!mc || bd_v_map(v, mc, "min_cases_for_promotion") < 0 ||
        bd_v_keys(v, mc, "min_cases_for_promotion", min_keys) < 0)
        return -1;
    for (int i = 0; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof(what), "min_cases_for_promotion.%s", tier_names[i]);
        if (!(n = bd_v_need(v, mc, tier_names[i], "min_cases_for_promotion")) ||
            bd_v_int(v, n, what, 1, INT_MAX, &r->min_cases[i]) < 0)
            return -1;
    }
    const bd_ynode *th = bd_v_need(v, root, "promotion_threshold", "registration.yaml");
    if (!th || bd_v_map(v, th, "promotion_threshold") < 0 ||
        bd_v_keys(v, th, "promotion_threshold", thr_keys) < 0)
        return -1;
    r->threshold[BD_TIER_BRONZE] = 0.0;
    for (int i = 1; i < 3; i++) {
        char what[64];
        snprintf(what, sizeof(what), "promotion_threshold.%s", tier_names[i]);
        if (!(n = bd_v_need(v, th, tier_names[i], "promotion_threshold")) ||
            bd_v_num(v, n, what, 0.0, 1.0, &r->threshold[i]) < 0)
            return -1;
    }
    return 0;
}

/* The rubric limits in the mapping `n` named `what` (registration.yaml's rubric,
 * case.yaml's rubric_limits): wall_clock_seconds 1..300 and memory_mb 16..4096, each
 * optional (left as they are when absent). */
static int rubric_limits(const bd_vctx *v, const bd_ynode *n, const char *what, int *wall_s,
                         int *memory_mb)
{
    static const char *const keys[] = {"wall_clock_seconds", "memory_mb", NULL};
    const bd_ynode *x;
    char w[64];
    if (bd_v_map(v, n, what) < 0 || bd_v_keys(v, n, what, keys) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.wall_clock_seconds", what);
    if ((x = bd_ynode_get(n, "wall_clock_seconds")) &&
        bd_v_int(v, x, w, 1, BD_RUBRIC_MAX_WALL_S, wall_s) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.memory_mb", what);
    if ((x = bd_ynode_get(n, "memory_mb")) &&
        bd_v_int(v, x, w, 16, BD_RUBRIC_MAX_MEMORY_MB, memory_mb) < 0)
        return -1;
    return 0;
}

/* The run policy in the optional mapping `n`, registration.yaml's run: cost_cap_usd
 * (a number from 0 to BD_COST_CAP_MAX_USD) and require_signed (a boolean). */
static int reg_run(const bd_vctx *v, bd_registration *r, const bd_ynode *n)
{
    static const char *const keys[] = {"cost_cap_usd", "require_signed", NULL};
    const bd_ynode *x;
    if (bd_v_map(v, n, "run") < 0 || bd_v_keys(v, n, "run", keys) < 0)
        return -1;
    if ((x = bd_ynode_get(n, "cost_cap_usd")) &&
        bd_v_num(v, x, "run.cost_cap_usd", 0.0, BD_COST_CAP_MAX_USD, &r->run_cost_cap_usd) < 0)
        return -1;
    if ((x = bd_ynode_get(n, "require_signed")) &&
        bd_v_bool(v, x, "run.require_signed", &r->run_require_signed) < 0)
        return -1;
    return 0;
}

static int registration_from_doc(void *outp, bd_ydoc *doc, const char *expect_name, bd_err *err)
{
    bd_registration **out = outp;
    static const char *const keys[] = {"schema_version",
                                       "name",
                                       "description",
                                       "current_tier",
                                       "min_cases_for_promotion",
                                       "promotion_threshold",
                                       "breakdown_keys",
                                       "failure_modes",
                                       "rubric",
                                       "sut",
                                       "run",
                                       NULL};
    bd_vctx v = {doc->name, BD_E_REGISTRATION_SCHEMA, err};
    int rc = -1;
    const bd_ynode *n, *root = doc->root;
    bd_registration *r = calloc(1, sizeof(*r));

    *out = NULL;
    if (!r) {
        bd_v_nomem(&v);
        goto out;
    }
    if (bd_v_root(&v, doc, 2) < 0 || bd_v_keys(&v, root, "registration.yaml", keys) < 0)
        goto out;
    r->schema_version = 2;

    if (!(n = bd_v_need(&v, root, "name", "registration.yaml")) ||
        bd_v_dup_str(&v, n, "name", false, &r->name) < 0)
        goto out;
    if (!bd_name_valid(r->name)) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), r->name);
        bd_v_fail(&v, BD_E_BAD_ID, n,
                  "task-class name '%s' must match ^[a-z0-9][a-z0-9._-]{0,127}$ without '..'; "
                  "rename it",
                  shown);
        goto out;
    }
    if (expect_name && strcmp(r->name, expect_name) != 0) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), expect_name);
        bd_v_fail(&v, BD_OK, n, "name '%s' differs from its directory '%s'; make them equal",
                  r->name, shown);
        goto out;
    }
    if (!(n = bd_v_need(&v, root, "description", "registration.yaml")) ||
        bd_v_dup_str(&v, n, "description", true, &r->description) < 0)
        goto out;
    int t;
    if (!(n = bd_v_need(&v, root, "current_tier", "registration.yaml")) ||
        bd_v_enum(&v, n, "current_tier", tier_names, COUNT(tier_names), &t) < 0)
        goto out;
    r->current_tier = (bd_tier)t;

    if (reg_tiers(&v, r, root) < 0)
        goto out;
    if (!(n = bd_v_need(&v, root, "breakdown_keys", "registration.yaml")) ||
        reg_breakdown(&v, r, n) < 0)
        goto out;
    if (!(n = bd_v_need(&v, root, "failure_modes", "registration.yaml")) ||
        reg_failure_modes(&v, r, n) < 0)
        goto out;

    r->rubric_wall_clock_s = BD_RUBRIC_DEFAULT_WALL_S;
    r->rubric_memory_mb = BD_RUBRIC_DEFAULT_MEMORY_MB;
    if ((n = bd_ynode_get(root, "rubric")) &&
        rubric_limits(&v, n, "rubric", &r->rubric_wall_clock_s, &r->rubric_memory_mb) < 0)
        goto out;
    if (!(n = bd_v_need(&v, root, "sut", "registration.yaml")) || reg_sut(&v, r, n) < 0)
        goto out;
    r->run_cost_cap_usd = -1.0;
    if ((n = bd_ynode_get(root, "run")) && reg_run(&v, r, n) < 0)
        goto out;
    *out = r;
    r = NULL;
    rc = 0;
out:
    bd_registration_free(r);
    return rc;
}

static const bd_doc_kind registration_kind = {BD_YKIND_OTHER, NULL, BD_E_REGISTRATION_SCHEMA, false,
                                              registration_from_doc};

int bd_registration_parse(bd_registration **out, const char *buf, size_t len, const char *name,
                          const char *expect_name, bd_err *err)
{
    bd_doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return bd_doc_read(&registration_kind, out, &src, expect_name, err);
}

int bd_registration_load(bd_registration **out, const char *path, const char *expect_name,
                         bd_err *err)
{
    bd_doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    return bd_doc_read(&registration_kind, out, &src, expect_name, err);
}

const bd_failure_mode_def *bd_registration_failure_mode(const bd_registration *reg,
                                                        const char *code)
{
    for (size_t i = 0; reg && code && i < reg->n_failure_modes; i++)
        if (strcmp(reg->failure_modes[i].code, code) == 0)
            return &reg->failure_modes[i];
    return NULL;
}

bool bd_registration_has_breakdown_key(const bd_registration *reg, const char *key)
{
    for (size_t i = 0; reg && key && i < reg->n_breakdown_keys; i++)
        if (strcmp(reg->breakdown_keys[i], key) == 0)
            return true;
    return false;
}

cJSON *bd_case_to_json(const bd_case *c)
{
    if (!c || !c->doc)
        return NULL;
    cJSON *root = bd_ynode_to_json(c->doc->root);
    if (!root)
        return NULL;
    return root;
}
/* ---- case.yaml ------------------------------------------------------------------------
 */

void bd_case_free(bd_case *c)
{
    if (!c)
        return;
    free(c->case_id);
    free(c->title);
    free(c->source);
    free(c->source_ref_type);
    free(c->source_ref_value);
    free(c->added_at);
    free(c->path);
    bd_ydoc_free(c->doc);
    free(c);
}

static int case_origin(const bd_vctx *v, bd_case *c, const bd_ynode *p)
{
    static const char *const keys[] = {"source", "source_ref", "added_at", NULL};
    static const char *const ref_keys[] = {"type", "value", NULL};
    const bd_ynode *n;
    int e;
    if (bd_v_map(v, p, "origin") < 0 || bd_v_keys(v, p, "origin", keys) < 0)
        return -1;
    if (!(n = bd_v_need(v, p, "source", "origin")) ||
        bd_v_enum(v, n, "origin.source", source_names, COUNT(source_names), &e) < 0)
        return -1;
    if (!(c->source = strdup(source_names[e])))
        return bd_v_nomem(v);
    const bd_ynode *ref = bd_v_need(v, p, "source_ref", "origin");
    if (!ref || bd_v_map(v, ref, "origin.source_ref") < 0 ||
        bd_v_keys(v, ref, "origin.source_ref", ref_keys) < 0)
        return -1;
    if (!(n = bd_v_need(v, ref, "type", "origin.source_ref")) ||
        bd_v_enum(v, n, "origin.source_ref.type", source_ref_names, COUNT(source_ref_names), &e) <
            0)
        return -1;
    if (!(c->source_ref_type = strdup(source_ref_names[e])))
        return bd_v_nomem(v);
    if (!(n = bd_v_need(v, ref, "value", "origin.source_ref")) ||
        bd_v_dup_str(v, n, "origin.source_ref.value", false, &c->source_ref_value) < 0)
        return -1;
    if (!(n = bd_v_need(v, p, "added_at", "origin")) ||
        bd_v_timestamp(v, n, "origin.added_at", &c->added_at) < 0)
        return -1;
    return 0;
}

/* Validate `doc` as a case.yaml; takes ownership of `doc` whatever happens. */
static int case_from_doc(void *outp, bd_ydoc *doc, const char *expect_id, bd_err *err)
{
    bd_case **out = outp;
    static const char *const keys[] = {"schema_version",  "case_id", "title",    "disposition",
                                       "difficulty",      "origin",  "expected", "rubric_limits",
                                       "cassette_digest", NULL};
    bd_vctx v = {doc->name, BD_E_CASE_SCHEMA, err};
    int rc = -1, e;
    const bd_ynode *n, *root = doc->root;
    bd_case *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c) {
        bd_v_nomem(&v);
        bd_ydoc_free(doc);
        goto out;
    }
    c->doc = doc;
    if (!(c->path = strdup(doc->name))) {
        bd_v_nomem(&v);
        goto out;
    }
    if (bd_v_root(&v, doc, 2) < 0)
        goto out;
    /* A v1 case that says schema_version 2 still carries its v1 members: name the format
     * rather than an unknown key. */
    if ((n = bd_ynode_get(root, "provenance")) || (n = bd_ynode_get(root, "case_digest"))) {
        bd_v_fail(&v, BD_E_FORMAT_V1, n,
                  "'%s' belongs to bench format v1 (signatures now live in "
                  "provenance.yaml, pins in "
                  "digests.yaml); convert the bench with ",
                  n == bd_ynode_get(root, "provenance") ? "provenance" : "case_digest");
        bd_err_advise(v.err, BD_ACT_MIGRATE, NULL);
        goto out;
    }
    if (bd_v_keys(&v, root, "case.yaml", keys) < 0)
        goto out;
    c->schema_version = 2;
    if (!(n = bd_v_need(&v, root, "case_id", "case.yaml")) ||
        bd_v_dup_str(&v, n, "case_id", false, &c->case_id) < 0)
        goto out;
    if (!bd_name_valid(c->case_id)) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), c->case_id);
        bd_v_fail(&v, BD_E_BAD_ID, n,
                  "case_id '%s' must match ^[a-z0-9][a-z0-9._-]{0,127}$ without '..'; rename it",
                  shown);
        goto out;
    }
    if (expect_id && strcmp(c->case_id, expect_id) != 0) {
        char shown[72];
        bd_ydoc_clip(shown, sizeof(shown), expect_id);
        bd_v_fail(&v, BD_E_CASE_ID_MISMATCH, n,
                  "case_id '%s' differs from its directory '%s'; make them equal", c->case_id,
                  shown);
        goto out;
    }
    if (!(n = bd_v_need(&v, root, "title", "case.yaml")) ||
        bd_v_dup_str(&v, n, "title", false, &c->title) < 0)
        goto out;
    if (!(n = bd_v_need(&v, root, "disposition", "case.yaml")) ||
        bd_v_enum(&v, n, "disposition", disposition_names, COUNT(disposition_names), &e) < 0)
        goto out;
    c->disposition = (bd_disposition)e;
    if (!(n = bd_v_need(&v, root, "difficulty", "case.yaml")) ||
        bd_v_enum(&v, n, "difficulty", difficulty_names, COUNT(difficulty_names), &e) < 0)
        goto out;
    c->difficulty = (bd_difficulty)e;
    if (!(n = bd_v_need(&v, root, "origin", "case.yaml")) || case_origin(&v, c, n) < 0)
        goto out;
    if (!(n = bd_v_need(&v, root, "expected", "case.yaml")) || bd_v_map(&v, n, "expected") < 0)
        goto out;
    c->expected = (bd_ynode *)n;
    if ((n = bd_ynode_get(root, "rubric_limits")) && !bd_ynode_is_null(n) &&
        rubric_limits(&v, n, "rubric_limits", &c->wall_clock_s, &c->memory_mb) < 0)
        goto out;
    if (bd_v_digest(&v, bd_ynode_get(root, "cassette_digest"), "cassette_digest", true,
                    c->cassette_digest, &c->has_cassette_digest) < 0)
        goto out;
    *out = c;
    c = NULL;
    rc = 0;
out:
    bd_case_free(c);
    return rc;
}

static const bd_doc_kind case_kind = {BD_YKIND_OTHER, NULL, BD_E_CASE_SCHEMA, true, case_from_doc};

int bd_case_parse(bd_case **out, const char *buf, size_t len, const char *name,
                  const char *expect_id, bd_err *err)
{
    bd_doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return bd_doc_read(&case_kind, out, &src, expect_id, err);
}

int bd_case_load(bd_case **out, const char *path, const char *expect_id, bd_err *err)
{
    bd_doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    return bd_doc_read(&case_kind, out, &src, expect_id, err);
}

/* ---- provenance.yaml ------------------------------------------------------------------
 */

void bd_provfile_free(bd_provfile *p)
{
    if (!p)
        return;
    bd_signature_block *b[] = {&p->author, &p->reviewer};
    for (size_t i = 0; i < 2; i++) {
        free(b[i]->identity);
        free(b[i]->signed_at);
        free(b[i]->signature);
    }
    free(p->last_validated_at);
    free(p->path);
    free(p);
}

/* The member names sig_block reports, "<role>.<member>": spelled out once, not formatted
 * for every block a check reads. */
enum { SIG_IDENTITY, SIG_FINGERPRINT, SIG_SIGNED_AT, SIG_DIGEST, SIG_SIGNATURE, SIG_MEMBERS };
static const char *const sig_names[2][SIG_MEMBERS] = {
    {"author.identity", "author.fingerprint", "author.signed_at", "author.digest",
     "author.signature"},
    {"reviewer.identity", "reviewer.fingerprint", "reviewer.signed_at", "reviewer.digest",
     "reviewer.signature"}};

/* The signature block `n` of role `what` ("author" or "reviewer") into *b. */
static int sig_block(const bd_vctx *v, const bd_ynode *n, const char *what, bd_signature_block *b)
{
    static const char *const keys[] = {"identity", "fingerprint", "signed_at",
                                       "digest",   "signature",   NULL};
    memset(b, 0, sizeof(*b));
    if (!n || bd_ynode_is_null(n))
        return 0;
    const char *const *w = sig_names[strcmp(what, "author") == 0 ? 0 : 1];
    if (bd_v_map(v, n, what) < 0 || bd_v_keys(v, n, what, keys) < 0)
        return -1;
    b->line = n->line;
    const bd_ynode *x;
    if (!(x = bd_v_need(v, n, "identity", what)) ||
        bd_v_dup_str(v, x, w[SIG_IDENTITY], false, &b->identity) < 0)
        return -1;
    if (!(x = bd_v_need(v, n, "fingerprint", what)) ||
        bd_v_fpr(v, x, w[SIG_FINGERPRINT], b->fingerprint) < 0)
        return -1;
    if (!(x = bd_v_need(v, n, "signed_at", what)) ||
        bd_v_timestamp(v, x, w[SIG_SIGNED_AT], &b->signed_at) < 0)
        return -1;
    bool has = false;
    if ((x = bd_ynode_get(n, "digest")) &&
        bd_v_digest(v, x, w[SIG_DIGEST], false, b->digest, &has) < 0)
        return -1;
    if (!(x = bd_v_need(v, n, "signature", what)) ||
        bd_v_dup_str(v, x, w[SIG_SIGNATURE], false, &b->signature) < 0)
        return -1;
    b->present = true;
    return 0;
}

static int provfile_from_doc(void *outp, bd_ydoc *doc, const char *expect, bd_err *err)
{
    bd_provfile **out = outp;
    (void)expect;
    static const char *const keys[] = {"schema_version", "author", "reviewer", "last_validated_at",
                                       NULL};
    bd_vctx v = {doc->name, BD_E_PROVENANCE_SCHEMA, err};
    int rc = -1;
    const bd_ynode *n, *root = doc->root;
    bd_provfile *p = calloc(1, sizeof(*p));
    *out = NULL;
    if (!p || !(p->path = strdup(doc->name))) {
        bd_v_nomem(&v);
        goto out;
    }
    if (bd_v_root(&v, doc, 2) < 0 || bd_v_keys(&v, root, "provenance.yaml", keys) < 0)
        goto out;
    p->schema_version = 2;
    if (sig_block(&v, bd_ynode_get(root, "author"), "author", &p->author) < 0 ||
        sig_block(&v, bd_ynode_get(root, "reviewer"), "reviewer", &p->reviewer) < 0)
        goto out;
    if ((n = bd_ynode_get(root, "last_validated_at")) && !bd_ynode_is_null(n) &&
        bd_v_timestamp(&v, n, "last_validated_at", &p->last_validated_at) < 0)
        goto out;
    *out = p;
    p = NULL;
    rc = 0;
out:
    bd_provfile_free(p);
    return rc;
}

static const bd_doc_kind provenance_kind = {BD_YKIND_OTHER, NULL, BD_E_PROVENANCE_SCHEMA, false,
                                            provfile_from_doc};

int bd_provfile_parse(bd_provfile **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    bd_doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return bd_doc_read(&provenance_kind, out, &src, NULL, err);
}

int bd_provfile_load(bd_provfile **out, const char *path, bd_err *err)
{
    struct stat st;
    *out = NULL;
    if (lstat(path, &st) != 0) {
        if (errno != ENOENT)
            return bd_err_errno(err, BD_E_IO, errno, path, "cannot stat");
        /* No file: signed in neither role. */
        bd_provfile *p = calloc(1, sizeof(*p));
        if (!p || !(p->path = strdup(path))) {
            free(p);
            return bd_err_set(err, BD_E_NOMEM, path, 0, 0, "out of memory");
        }
        p->schema_version = 2;
        *out = p;
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return bd_err_set(err, BD_E_UNSUPPORTED_ENTRY, path, 0, 0,
                          "is not a regular file (a link?); refused (never followed): make it "
                          "a regular file or remove it");
    bd_doc_src src = {.from_file = true, .path = path};
    return bd_doc_read(&provenance_kind, out, &src, NULL, err);
}

/* ---- trusted-signers.yaml -------------------------------------------------------------
 */

void bd_signers_free(bd_signers *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        free(s->signers[i].identity);
    free(s->signers);
    free(s);
}

static int signer_entry(const bd_vctx *v, const bd_ynode *it, size_t i, bd_signer *sg)
{
    static const char *const keys[] = {"fingerprint", "identity", "roles", NULL};
    char what[48], w[96];
    const bd_ynode *n;
    snprintf(what, sizeof(what), "signers[%zu]", i);
    if (bd_v_map(v, it, what) < 0 || bd_v_keys(v, it, what, keys) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.fingerprint", what);
    if (!(n = bd_v_need(v, it, "fingerprint", what)) || bd_v_fpr(v, n, w, sg->fingerprint) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.identity", what);
    if (!(n = bd_v_need(v, it, "identity", what)) ||
        bd_v_dup_str(v, n, w, false, &sg->identity) < 0)
        return -1;
    snprintf(w, sizeof(w), "%s.roles", what);
    const bd_ynode *roles = bd_v_need(v, it, "roles", what);
    if (!roles || bd_v_seq(v, roles, w) < 0)
        return -1;
    if (roles->n == 0)
        return bd_v_fail(v, BD_OK, roles,
                         "%s must list at least one of author, reviewer, operator; add one", w);
    for (size_t j = 0; j < roles->n; j++) {
        int r;
        snprintf(w, sizeof(w), "%s.roles[%zu]", what, j);
        if (bd_v_enum(v, roles->items[j], w, role_names, COUNT(role_names), &r) < 0)
            return -1;
        int bit = r == 0 ? BD_ROLE_AUTHOR : r == 1 ? BD_ROLE_REVIEWER : BD_ROLE_OPERATOR;
        if (sg->roles & bit)
            return bd_v_fail(v, BD_OK, roles->items[j],
                             "role '%s' is listed twice in %s.roles; "
                             "keep one",
                             role_names[r], what);
        sg->roles |= bit;
    }
    /* An operator key signs runs on a machine where rubrics run: it must not be able to
     * sign provenance or verdicts too (docs/provenance.md#the-operator-role). */
    if ((sg->roles & BD_ROLE_OPERATOR) && sg->roles != BD_ROLE_OPERATOR)
        return bd_v_fail(v, BD_OK, roles,
                         "%s.roles gives the operator role together with another; an operator "
                         "key holds no other role: give it its own key",
                         what);
    return 0;
}

static int signers_from_doc(void *outp, bd_ydoc *doc, const char *expect, bd_err *err)
{
    bd_signers **out = outp;
    (void)expect;
    static const char *const keys[] = {"schema_version", "signers", NULL};
    bd_vctx v = {doc->name, BD_E_SIGNERS_SCHEMA, err};
    int rc = -1;
    const bd_ynode *root = doc->root;
    const char **fprs = NULL;
    bd_signers *s = calloc(1, sizeof(*s));

    *out = NULL;
    if (!s) {
        bd_v_nomem(&v);
        goto out;
    }
    if (bd_v_root(&v, doc, 1) < 0 || bd_v_keys(&v, root, "trusted-signers.yaml", keys) < 0)
        goto out;
    s->schema_version = 1;
    const bd_ynode *list = bd_v_need(&v, root, "signers", "trusted-signers.yaml");
    if (!list || bd_v_seq(&v, list, "signers") < 0)
        goto out;
    if (list->n && (!(s->signers = calloc(list->n, sizeof(*s->signers))) ||
                    !(fprs = malloc(list->n * sizeof(*fprs))))) {
        bd_v_nomem(&v);
        goto out;
    }
    for (size_t i = 0; i < list->n; i++) {
        s->n = i + 1;
        if (signer_entry(&v, list->items[i], i, &s->signers[i]) < 0)
            goto out;
        fprs[i] = s->signers[i].fingerprint;
    }
    long dup;
    if (bd_v_find_dup(fprs, s->n, &dup) < 0) {
        bd_v_nomem(&v);
        goto out;
    }
    if (dup >= 0) {
        bd_v_fail(&v, BD_OK, bd_ynode_get(list->items[dup], "fingerprint"),
                  "fingerprint %s is listed twice; merge the entries into one with both roles",
                  s->signers[dup].fingerprint);
        goto out;
    }
    *out = s;
    s = NULL;
    rc = 0;
out:
    free(fprs);
    bd_signers_free(s);
    return rc;
}

static const bd_doc_kind signers_kind = {BD_YKIND_SIGNERS, "trusted-signers.yaml",
                                         BD_E_SIGNERS_SCHEMA, false, signers_from_doc};

int bd_signers_parse(bd_signers **out, const char *buf, size_t len, const char *name, bd_err *err)
{
    bd_doc_src src = {.buf = buf, .len = len, .name = name};
    *out = NULL;
    return bd_doc_read(&signers_kind, out, &src, NULL, err);
}

int bd_signers_load(bd_signers **out, const char *path, bd_err *err)
{
    bd_doc_src src = {.from_file = true, .path = path};
    *out = NULL;
    return bd_doc_read(&signers_kind, out, &src, NULL, err);
}

const bd_signer *bd_signers_find(const bd_signers *s, const char *fingerprint)
{
    if (!s || !fingerprint || strlen(fingerprint) != BD_FPR_LEN)
        return NULL;
    for (size_t i = 0; i < s->n; i++)
        if (strcasecmp(s->signers[i].fingerprint, fingerprint) == 0)
            return &s->signers[i];
    return NULL;
}
