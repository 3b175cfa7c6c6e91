#!/usr/bin/env bash
# test_stats_kat.sh — the known answers in tests/unit/test_stats.c against the
# independent reference tests/kat/bca_reference.py.
#
# The inputs and the expected values are both read from the C test itself (so the two
# cannot drift apart): the rng literals of test_rng_known_answers, and every
# bd_stats_bca(...) call followed by an expected lo/hi in test_bca_known_answers and
# test_bca_degenerate_and_refusals. Each must equal the reference to 1e-12 (exactly for
# the degenerate [x, x] cases), and the reference's own CLI output must list the same
# cases with the same answers.
source "$BD_SOURCE_DIR/tests/cli/lib.sh"
command -v python3 >/dev/null || { fail "python3 is needed for the stats reference"; finish; }

ref="$BD_SOURCE_DIR/tests/kat/bca_reference.py"
python3 "$ref" >"$BD_TMP/ref.json" || fail "bca_reference.py exited $?"

python3 - "$BD_SOURCE_DIR" "$BD_TMP/ref.json" <<'EOF' >"$BD_TMP/report" || fail "checker exited $?"
import json, math, re, sys

src, ref_json = sys.argv[1], sys.argv[2]
sys.path.insert(0, src + "/tests/kat")
import bca_reference as ref

c = open(src + "/tests/unit/test_stats.c").read()
h = open(src + "/src/base/stats.h").read()
out = []
def check(ok, what):
    out.append(("ok   " if ok else "FAIL ") + what)

def body(name):
    m = re.search(r"static void " + name + r"\(void \*\*state\)\n\{(.*?)\n\}\n", c, re.S)
    if not m:
        check(False, "test_stats.c has no " + name)
        return ""
    return m.group(1)

def num_list(text):
    return [float(v) for v in text.replace("\n", " ").split(",") if v.strip()]

# --- rng ---------------------------------------------------------------------------
rb = body("test_rng_known_answers")
m = re.search(r"bd_rng_seed\(&r, 0\);((?:\s*assert_true\(bd_rng_next\(&r\) == 0x[0-9a-f]+ULL\);)+)", rb)
c_next = re.findall(r"0x([0-9a-f]+)ULL", m.group(1)) if m else []
check(len(c_next) == 3, "seed 0: three bd_rng_next literals found (%d)" % len(c_next))
r = ref.Rng(0)
for i, v in enumerate(c_next):
    got = r.next()
    check(got == int(v, 16), "seed 0 next #%d: C 0x%s, reference 0x%016x" % (i + 1, v, got))
m = re.search(r"bd_rng_seed\(&r, 42\);\s*const uint64_t want\[\] = \{([^}]*)\};", rb)
want = [int(v) for v in m.group(1).split(",")] if m else []
check(len(want) == 10, "seed 42: want[] of 10 found (%d)" % len(want))
r = ref.Rng(42)
got = [r.below(10) for _ in want]
check(got == want, "seed 42 below(10) x10: C %s, reference %s" % (want, got))
check("bd_rng_below(&r, 0) == 0" in rb and r.below(0) == 0, "below(0) == 0")
check("bd_rng_below(&r, 1) == 0" in rb and r.below(1) == 0, "below(1) == 0")
check(ref.Rng(0).s[0] == 0xE220A8397B1DCDAF and "0xe220a8397b1dcdaf" in c,
      "splitmix64(0) first output is the published 0xe220a8397b1dcdaf")

# --- bca -----------------------------------------------------------------------------
run_seed = int(re.search(r"#define BD_STATS_RUN_SEED (0x[0-9A-Fa-f]+)ULL", h).group(1), 16)
check(run_seed == ref.RUN_SEED, "BD_STATS_RUN_SEED is \"benchdsk\" big-endian")
cases = []  # (x, level, B, seed, lo, hi, exact)
for fn, want_n in (("test_bca_known_answers", 4), ("test_bca_degenerate_and_refusals", 2)):
    b = body(fn)
    arrays = {k: num_list(v) for k, v in re.findall(r"double (\w+)\[\] = \{([^}]*)\};", b)}
    arrays.update({k: num_list(v) for k, v in re.findall(r"int (\w+)\[\] = \{([^}]*)\};", b)})
    for dst, srcname in re.findall(r"(\w+)\[i\] = (\w+)\[i\];", b):
        arrays[dst] = arrays[srcname]
    calls = list(re.finditer(
        r"bd_stats_bca\((\w+), (\d+), ([0-9.]+), (\d+), (\w+), &lo, &hi, &err\), 0\);", b))
    found = 0
    for i, m in enumerate(calls):
        seg = b[m.end(): calls[i + 1].start() if i + 1 < len(calls) else len(b)]
        lo = re.search(r"fabs\(lo - ([0-9.eE+-]+)\) < 1e-12", seg)
        hi = re.search(r"fabs\(hi - ([0-9.eE+-]+)\) < 1e-12", seg)
        eq = re.search(r"lo == ([0-9.]+) && hi == ([0-9.]+)", seg)
        if not ((lo and hi) or eq):
            continue  # a call whose answer the test does not pin (e.g. only bounds)
        name, n, level, B, seed = m.groups()
        x = arrays[name][: int(n)]
        check(len(x) == int(n), "%s: %s has %s values" % (fn, name, n))
        seed = run_seed if seed == "BD_STATS_RUN_SEED" else int(seed, 0)
        if eq:
            cases.append((x, float(level), int(B), seed, float(eq.group(1)), float(eq.group(2)), True))
        else:
            cases.append((x, float(level), int(B), seed, float(lo.group(1)), float(hi.group(1)), False))
        found += 1
    check(found == want_n, "%s: %d known-answer calls found (want %d)" % (fn, found, want_n))

for x, level, B, seed, clo, chi, exact in cases:
    lo, hi = ref.bca(x, level, B, seed)
    tag = "bca(n=%d, level=%g, B=%d, seed=%d)" % (len(x), level, B, seed)
    if exact:
        ok = lo == clo and hi == chi
    else:
        ok = abs(lo - clo) < 1e-12 and abs(hi - chi) < 1e-12
    check(ok, "%s: C [%r, %r], reference [%r, %r]" % (tag, clo, chi, lo, hi))

# The script's own CLI lists the same cases with the same answers.
j = json.load(open(ref_json))
listed = {(tuple(v["x"]), v["level"], v["resamples"], v["seed"]): (v["lo"], v["hi"])
          for v in j["bca"].values()}
for x, level, B, seed, clo, chi, exact in cases:
    key = (tuple(x), level, B, seed)
    got = listed.get(key)
    check(got is not None and abs(got[0] - clo) < 1e-12 and abs(got[1] - chi) < 1e-12,
          "reference CLI lists bca(n=%d, B=%d, seed=%d): %r" % (len(x), B, seed, got))
check(len(listed) == len(cases), "reference CLI lists %d cases, C test pins %d" % (len(listed), len(cases)))
check(j["rng_seed0_next3"] == ["0x" + v for v in c_next], "reference CLI seed 0 next values")
check(j["rng_seed42_below10"] == want, "reference CLI seed 42 below(10) values")
print("\n".join(out))
EOF

report_lines "$BD_TMP/report"
finish
