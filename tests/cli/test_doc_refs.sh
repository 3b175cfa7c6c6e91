#!/usr/bin/env bash
# The repository carries its own contract: what benchdesk shows or writes, and the demo
# bench, cite docs/ pages, never a document outside the tree. Every `docs/<page>.md#<anchor>`
# in bench/, src/, ui/, tests/, docs/, scripts/ and README.md, and in every command's --help,
# names a page that exists and a heading of it (GitHub's anchor rules); nothing under bench/
# and no --help mentions the design document outside the repository; no file under src/, ui/,
# tests/, scripts/, bench/ or docs/ cites a section by number (a § and a digit) unless the §
# follows the name of an outside standard ("FIPS 180-4 §6.2.2"); and `pin` writes a
# digests.yaml header that cites docs/.
. "$(dirname "$0")/lib.sh"

# ---- the help texts, collected for the anchor check below ------------------------------
root=$(demo_copy)
cmds=$("$BD_BIN" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
[ -n "$cmds" ] || fail "no commands in --help"
helps="$BD_TMP/helps"
mkdir -p "$helps"
"$BD_BIN" --help >"$helps/benchdesk.txt"
for c in $cmds; do
    "$BD_BIN" -C "$root" "$c" --help >"$helps/$c.txt" 2>&1 || fail "$c --help failed"
done
hits=$(grep -l 'DESIGN' "$helps"/*.txt || true)
[ -z "$hits" ] && pass "no --help cites the design document ($(echo $cmds | wc -w) commands)" ||
    fail "--help citing the design document: $(for f in $hits; do basename "$f" .txt; done | tr '\n' ' ')"

# ---- the demo bench ---------------------------------------------------------------------
hits=$(grep -rl 'DESIGN' "$BD_SOURCE_DIR/bench" || true)
[ -z "$hits" ] && pass "nothing under bench/ cites the design document" ||
    fail "bench/ files citing the design document: $(tr '\n' ' ' <<<"$hits")"

# ---- every docs/ reference resolves -----------------------------------------------------
python3 - "$BD_SOURCE_DIR" "$helps" >"$BD_TMP/refs.report" <<'PY'
import os, re, sys

src, helps = sys.argv[1], sys.argv[2]

def slugs(md):
    """GitHub's heading anchors: lower case, punctuation but '-' and '_' dropped, spaces
    to '-', a repeated anchor gets -1, -2, ... Headings inside code fences do not count."""
    seen, out, fence = {}, set(), False
    for line in open(md, encoding="utf-8"):
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        m = None if fence else re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        s = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
        n = seen.get(s, 0)
        seen[s] = n + 1
        out.add(s if n == 0 else f"{s}-{n}")
    return out

files = [os.path.join(src, "README.md")]
for top in ("bench", "src", "ui", "tests", "docs", "scripts"):
    for d, _, names in os.walk(os.path.join(src, top)):
        files += [os.path.join(d, n) for n in names]
files += [os.path.join(helps, n) for n in sorted(os.listdir(helps))]
ref = re.compile(r"docs/([A-Za-z0-9_.-]+\.md)#([A-Za-z0-9_-]+)")
cache, count, bad = {}, 0, 0
for f in sorted(files):
    try:
        text = open(f, encoding="utf-8").read()
    except (UnicodeDecodeError, IsADirectoryError):
        continue
    for page, anchor in ref.findall(text):
        count += 1
        where = os.path.relpath(f, src) if f.startswith(src) else "--help of " + os.path.basename(f)[:-4]
        path = os.path.join(src, "docs", page)
        if not os.path.isfile(path):
            print(f"FAIL {where}: docs/{page} does not exist"); bad += 1
            continue
        if path not in cache:
            cache[path] = slugs(path)
        if anchor not in cache[path]:
            print(f"FAIL {where}: docs/{page} has no heading for #{anchor}"); bad += 1
if count == 0:
    print("FAIL no docs/<page>.md#<anchor> reference found at all")
elif bad == 0:
    print(f"ok   {count} docs/<page>.md#<anchor> references resolve to a heading")
PY
report_lines "$BD_TMP/refs.report"

# ---- no section numbers of a document outside the tree -----------------------------------
# A rule is cited by its docs/ page and heading. A § stays only right after the name of an
# outside standard from `standards`.
python3 - "$BD_SOURCE_DIR" >"$BD_TMP/sections.report" <<'PY'
import os, re, sys

src = sys.argv[1]
standards = [r"FIPS \d+-\d+", r"YAML 1\.[0-2]", r"RFC ?\d+", r"ISO(?:/IEC)? \d+(?::\d+)?",
             r"POSIX\.1(?:-\d+)?", r"C(?:99|11|17)"]
section = re.compile(r"§\s*\d")
allowed = re.compile(r"(?:" + "|".join(standards) + r"),? §\s*\d")
hits, files = [], 0
for top in ("src", "ui", "tests", "scripts", "bench", "docs"):
    for d, dirs, names in os.walk(os.path.join(src, top)):
        dirs.sort()
        for n in sorted(names):
            path = os.path.join(d, n)
            try:
                lines = open(path, encoding="utf-8").read().split("\n")
            except (UnicodeDecodeError, IsADirectoryError):
                continue
            files += 1
            for i, line in enumerate(lines, 1):
                if len(section.findall(line)) > len(allowed.findall(line)):
                    hits.append(f"{os.path.relpath(path, src)}:{i}")
if files == 0:
    print("FAIL no file read under src/ ui/ tests/ scripts/ bench/ docs/")
elif hits:
    print(f"FAIL {len(hits)} line(s) cite a section by number, not a docs/ page: " + " ".join(hits))
else:
    print(f"ok   no section number outside a named standard in {files} files")
PY
report_lines "$BD_TMP/sections.report"

# ---- what pin writes --------------------------------------------------------------------
# A changed rubric makes pin rewrite digests.yaml whole, header included.
echo "# edited" >>"$root/bench/vuln-remediation/rubric.py"
"$BD_BIN" -C "$root" pin vuln-remediation >/dev/null 2>&1 || fail "pin vuln-remediation failed"
head1=$(head -n1 "$root/bench/vuln-remediation/cases/digests.yaml")
[ "$head1" = "# Pins written by \`benchdesk pin\`: the task-class digest (registration.yaml + rubric.py) and each case's digest (docs/formats.md#digests)." ] &&
    pass "pin's digests.yaml header cites docs/formats.md#digests" ||
    fail "pin's digests.yaml header: $head1"

finish
