#include "score_rules.h"

#include <float.h>
#include <math.h>
#include <string.h>

static const char *const member_names[BD_SM__COUNT] = {
#define BD_X(name, str) str,
    BD_SCORE_MEMBERS(BD_X)
#undef BD_X
};

static const char *const fm_member_names[BD_SFM__COUNT] = {
#define BD_X(name, str) str,
    BD_SCORE_FM_MEMBERS(BD_X)
#undef BD_X
};

static const char *const check_member_names[BD_SCK__COUNT] = {
#define BD_X(name, str) str,
    BD_SCORE_CHECK_MEMBERS(BD_X)
#undef BD_X
};

const bd_score_rule_def bd_score_rules[BD_SR__COUNT] = {
    [BD_SR_SCORE] = {0, 1, false, 1},
    [BD_SR_BREAKDOWN_VALUE] = {0, 1, false, 1},
    /* Version 1 held cost_usd only to "finite and >= 0". */
    [BD_SR_COST] = {0, BD_SCORE_MAX_COST_USD, false, DBL_MAX},
    [BD_SR_WALL] = {0, BD_SCORE_MAX_WALL_MS, true, BD_SCORE_MAX_WALL_MS},
    [BD_SR_BREAKDOWN_COUNT] = {0, BD_SCORE_MAX_BREAKDOWN, true, INFINITY},
    [BD_SR_FM_COUNT] = {0, BD_SCORE_MAX_FAILURE_MODES, true, INFINITY},
    [BD_SR_BREAKDOWN_KEY] = {1, BD_SCORE_MAX_NAME, true, BD_SCORE_MAX_NAME},
    [BD_SR_FM_CODE] = {1, BD_SCORE_MAX_NAME, true, BD_SCORE_MAX_NAME},
    [BD_SR_FM_DETAIL] = {0, BD_SCORE_MAX_FM_DETAIL, true, INFINITY},
    /* checks came with version 2 records: no legacy record holds them. */
    [BD_SR_CHECK_COUNT] = {0, BD_SCORE_MAX_CHECKS, true, BD_SCORE_MAX_CHECKS},
    [BD_SR_CHECK_NAME] = {1, BD_SCORE_MAX_CHECK_NAME, true, BD_SCORE_MAX_CHECK_NAME},
    [BD_SR_CHECK_VALUE] = {0, BD_SCORE_MAX_CHECK_VALUE, true, BD_SCORE_MAX_CHECK_VALUE},
};

const char *bd_score_member_name(bd_score_member m)
{
    return (int)m >= 0 && m < BD_SM__COUNT ? member_names[m] : "";
}

const char *bd_score_fm_member_name(bd_score_fm_member m)
{
    return (int)m >= 0 && m < BD_SFM__COUNT ? fm_member_names[m] : "";
}

bool bd_score_member_optional(bd_score_member m)
{
    return m == BD_SM_CHECKS;
}

const char *bd_score_check_member_name(bd_score_check_member m)
{
    return (int)m >= 0 && m < BD_SCK__COUNT ? check_member_names[m] : "";
}

static int lookup(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return i;
    return -1;
}

int bd_score_member_lookup(const char *name)
{
    return lookup(member_names, BD_SM__COUNT, name);
}

int bd_score_fm_member_lookup(const char *name)
{
    return lookup(fm_member_names, BD_SFM__COUNT, name);
}

int bd_score_check_member_lookup(const char *name)
{
    return lookup(check_member_names, BD_SCK__COUNT, name);
}

bool bd_score_check_name_chars_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_'))
            return false;
    }
    return true;
}

bool bd_score_rule_ok(bd_score_rule r, double v, int version)
{
    if ((int)r < 0 || r >= BD_SR__COUNT || !isfinite(v))
        return false;
    const bd_score_rule_def *d = &bd_score_rules[r];
    double max = version <= 1 ? d->legacy_max : d->max;
    return v >= d->min && v <= max && (!d->integer || v == trunc(v));
}

static bool contains_ci(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++) {
        size_t k = 0;
        while (k < m) {
            unsigned char c = (unsigned char)s[i + k];
            if (c >= 'A' && c <= 'Z')
                c = (unsigned char)(c - 'A' + 'a');
            if (c != (unsigned char)needle[k])
                break;
            k++;
        }
        if (k == m)
            return true;
    }
    return false;
}

const char *bd_score_banned_word(const char *key, size_t n)
{
    static const char *const words[] = {"confidence", "llm", "self_reported", "model_says"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (contains_ci(key, n, words[i]))
            return words[i];
    return NULL;
}
