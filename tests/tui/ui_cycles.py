#!/usr/bin/env python3
"""List dependency cycles among the TUI's files (docs/architecture.md: no import cycles).

    ui_cycles.py UI_DIR [LIBRARY.a]

Modules are the files of UI_DIR without their extension (views/run_view.h belongs to
views/run). Two graphs are checked:
  - includes: module A -> module B when a file of A includes a header of B;
  - links (with LIBRARY.a): A -> B when A's object uses a symbol B's object defines.
Every strongly connected component of more than one module is printed as a cycle; the
exit status is 1 when there is any, else 0.
"""
import os
import re
import subprocess
import sys


def module_of(rel):
    base = os.path.splitext(rel)[0]
    return base[: -len("_view")] if base.endswith("_view") else base


def include_graph(ui):
    files = []
    for d, _, names in os.walk(ui):
        for n in names:
            if n.endswith((".c", ".h")):
                files.append(os.path.relpath(os.path.join(d, n), ui))
    known = set(files)
    g = {}
    for rel in files:
        m = module_of(rel)
        g.setdefault(m, set())
        with open(os.path.join(ui, rel), encoding="utf-8") as f:
            for line in f:
                inc = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not inc:
                    continue
                name = inc.group(1)
                # As the compiler looks: the including file's directory, then UI_DIR.
                cands = [os.path.normpath(os.path.join(os.path.dirname(rel), name)), name]
                hit = next((c for c in cands if c in known), None)
                if hit and module_of(hit) != m:
                    g[m].add(module_of(hit))
    return g


def link_graph(lib):
    out = subprocess.run(["nm", "-A", "-P", lib], capture_output=True, text=True, check=True)
    defs, uses = {}, {}
    for line in out.stdout.splitlines():
        # "lib.a[member.c.o]: symbol TYPE ..."
        m = re.match(r"[^\[]*\[([^\]]+)\]:\s+(\S+)\s+(\S)", line)
        if not m:
            continue
        obj, sym, kind = m.group(1).replace(".c.o", ""), m.group(2), m.group(3)
        if kind == "U":
            uses.setdefault(obj, set()).add(sym)
        elif kind in "TDBRCGSV":
            defs[sym] = obj
    g = {o: set() for o in set(uses) | set(defs.values())}
    for o, syms in uses.items():
        for s in syms:
            if s in defs and defs[s] != o:
                g[o].add(defs[s])
    return g


def cycles(g):
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def main():
    ui = sys.argv[1]
    bad = 0
    graphs = [("includes", include_graph(ui))]
    if len(sys.argv) > 2:
        graphs.append(("links", link_graph(sys.argv[2])))
    for what, g in graphs:
        for c in cycles(g):
            print("cycle (%s): %s" % (what, " <-> ".join(c)))
            bad = 1
        print("%s: %d modules, %d edges" % (what, len(g), sum(len(e) for e in g.values())))
    return bad


if __name__ == "__main__":
    sys.exit(main())
