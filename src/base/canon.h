/*
 * canon.h — canonical JSON: object keys sorted bytewise at every depth, no insignificant
 * whitespace, strings escaped minimally ("\"", "\\", control characters as \uXXXX except
 * \b \f \n \r \t), non-ASCII UTF-8 passed through, numbers as integers when they are
 * integral and |x| < 2^53, otherwise the shortest "%.17g" form that round-trips.
 * History records are hashed over exactly these bytes (docs/history.md).
 *
 * Exactly:
 *   - objects: members sorted by memcmp of their UTF-8 key bytes (= code-point order);
 *     "{" k ":" v ("," k ":" v)* "}", arrays "[" v ("," v)* "]", no spaces anywhere;
 *   - strings: `"` and `\` as \" and \\; U+0008 U+000C U+000A U+000D U+0009 as
 *     \b \f \n \r \t; every other byte below 0x20 as \u00xx (lower-case hex); all other
 *     bytes (including '/', DEL and non-ASCII UTF-8) raw;
 *   - numbers: 0 for both zeros; integral with |x| < 2^53 as a plain integer ("-3",
 *     "1700000000000"); otherwise the first of printf "%.15g", "%.16g", "%.17g" that
 *     strtod() reads back as the same double ("0.75", "0.1", "1e+20", "1.5e-07"),
 *     always in the C locale whatever the process locale;
 *   - true, false, null.
 * For ordinary records (strings, integers, floats such as 0.75 / 0.1 / 12.5, nested
 * objects and arrays) these bytes equal Python's
 *   json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).
 * They differ for floats that are integral (Python "1.0", here "1"), for -0.0, and for
 * the rare double whose shortest form needs fewer digits than %.15g gives (denormals).
 */
#ifndef BD_CANON_H
#define BD_CANON_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* Serialize `item` canonically. Returns a new NUL-terminated string (caller frees with
 * free()) and its length in *len (may be NULL), or NULL on out-of-memory or when the
 * tree holds NaN/Infinity (which canonical JSON cannot express). Also NULL, because the
 * bytes would not be one unambiguous JSON document, when the tree holds: an object with
 * two members of the same key (cJSON keeps both when it parses such a document); a
 * string or key that is not valid UTF-8; a cJSON_Raw or invalid item; a member without
 * a key; nesting deeper than BD_CANON_MAX_DEPTH. */
char *bd_canon_json(const cJSON *item, size_t *len);

/* `item` as compact JSON for people and scripts (the CLI's --json output), not for hashing:
 * members in the tree's order (not sorted, a repeated key kept), strings escaped as
 * above but bytes that are not UTF-8 passed through (the caller's sanitizer spells them),
 * NaN and Infinity as null, and numbers exactly as canonical JSON writes them: integers
 * plainly, any other double in the shortest of %.15g/%.16g/%.17g that reads back as the
 * same double (0.8173076923076923, never 0.81730769230769229). Returns a new string
 * (free()) and its length in *len (may be NULL), or NULL when out of memory, on a
 * cJSON_Raw or invalid item, or nesting deeper than BD_CANON_MAX_DEPTH. */
char *bd_json_print(const cJSON *item, size_t *len);

#define BD_CANON_MAX_DEPTH 1024

#endif
