"""What the warm interpreter imports of its allowlist (docs/runner.md#the-allowlist-a-rubric-names),
for the perf scripts that stand in for it (nsfloor.py --warm, fork_size.py). The list is
read from src/run/warm.h, so the two cannot drift."""
import os
import re
import sys

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../src/run/warm.h")


def allowlist():
    """BD_WARM_ALLOWLIST of src/run/warm.h, in order; the script ends when it is missing."""
    text = open(HEADER).read()
    m = re.search(r"#define BD_WARM_ALLOWLIST((?:[^\n]*\\\n)*[^\n]*)", text)
    if not m:
        sys.exit("no BD_WARM_ALLOWLIST in %s" % HEADER)
    return re.findall(r'"([A-Za-z_][A-Za-z0-9_.]*)"', m.group(1))


def imported_for(code):
    """The modules the warm interpreter imports for a rubric compiled to `code`: the list's
    first, and each other one a name of its code objects (their first part) names."""
    named, todo = set(), [code]
    while todo:
        c = todo.pop()
        named.update(n.partition(".")[0] for n in c.co_names)
        todo.extend(x for x in c.co_consts if isinstance(x, type(code)))
    return [name for i, name in enumerate(allowlist()) if i == 0 or name in named]
