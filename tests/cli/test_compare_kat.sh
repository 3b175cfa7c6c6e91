#!/usr/bin/env bash
# test_compare_kat.sh — the known answers of tests/unit/test_compare.c (the paired BCa
# interval of a comparison, its seed from the two run ids, McNemar's exact p-value)
# against the independent reference tests/kat/bca_reference.py. The inputs and the
# expected values are read from the C test itself, so the two cannot drift apart.
source "$BD_SOURCE_DIR/tests/cli/lib.sh"
command -v python3 >/dev/null || { fail "python3 is needed for the stats reference"; finish; }
command -v b3sum >/dev/null || { fail "b3sum is needed for the comparison seed (scripts/setup installs it)"; finish; }

python3 - "$BD_SOURCE_DIR" <<'EOF_PY' >"$BD_TMP/report" || fail "checker exited $?"
import re, sys
src = sys.argv[1]
sys.path.insert(0, src + "/tests/kat")
import bca_reference as ref

c = open(src + "/tests/unit/test_compare.c").read()
out = []
def check(ok, what):
    out.append(("ok   " if ok else "FAIL ") + what)

def define(name):
    m = re.search(r"#define " + name + r"\s+(\S+)", c)
    return m.group(1) if m else None

kats = sorted(set(re.findall(r"#define KAT(\d+)_RUN_A", c)))
check(len(kats) >= 1, "paired known answers found (%d)" % len(kats))
for k in kats:
    ra, rb = define("KAT%s_RUN_A" % k).strip('"'), define("KAT%s_RUN_B" % k).strip('"')
    seed = int(define("KAT%s_SEED" % k).rstrip("ULL"), 16)
    lo, hi = float(define("KAT%s_LO" % k)), float(define("KAT%s_HI" % k))
    arr = {}
    for side in "ab":
        m = re.search(r"static const double kat%s_%s\[\] = \{([^}]*)\};" % (k, side), c)
        arr[side] = [float(v) for v in m.group(1).replace("\n", " ").split(",") if v.strip()]
    check(len(arr["a"]) == len(arr["b"]) > 1, "KAT%s: %d pairs" % (k, len(arr["a"])))
    got_seed = ref.compare_seed(ra, rb)
    check(got_seed == seed, "KAT%s seed: C 0x%016x, reference 0x%016x" % (k, seed, got_seed))
    rlo, rhi = ref.paired_bca(arr["a"], arr["b"], 0.95, 0, got_seed)
    check(abs(rlo - lo) < 1e-12 and abs(rhi - hi) < 1e-12,
          "KAT%s paired BCa: C [%r, %r], reference [%r, %r]" % (k, lo, hi, rlo, rhi))

m = re.search(r"mcnemar_kats\[\] = \{(.*?)\n\};", c, re.S)
rows = re.findall(r"\{(\d+), (\d+), ([0-9.eE+-]+)\}", m.group(1)) if m else []
check(len(rows) >= 6, "McNemar known answers found (%d)" % len(rows))
for b, cc, p in rows:
    want = ref.mcnemar(int(b), int(cc))
    check(abs(float(p) - want) <= 1e-15 * max(want, 1e-300) or float(p) == want,
          "McNemar(%s, %s): C %s, reference %r" % (b, cc, p, want))
print("\n".join(out))
EOF_PY

report_lines "$BD_TMP/report"
finish
