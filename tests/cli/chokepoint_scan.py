#!/usr/bin/env python3
"""Find process creation outside the chokepoint (docs/runner.md).

    chokepoint_scan.py FILE...    print "file:line: name" for every use of fork, vfork,
                                  the exec family, system, popen, posix_spawn, uv_spawn,
                                  GPGME's gpgme_op_spawn, clone or a raw
                                  fork/clone/exec syscall number

Comments and string/character literals are blanked first (keeping line numbers), then
identifiers are matched as whole tokens: a call (`fork (`, `(system)(`), a function
pointer taken (`p = popen`, `&execve`, `return fork`) and `syscall(SYS_fork)` all count;
a struct member of the same name (`x.system`, `x->fork`), a declaration (`int
system;`) or a syscall named in a seccomp rule (`SCMP_SYS(clone)`) does not. Exit status 1 when anything was found.
"""
import re
import sys

BANNED = {
    "fork", "vfork", "_Fork", "__fork", "clone", "clone3", "__clone", "__clone2",
    "execl", "execle", "execlp", "execv", "execve", "execvp", "execvpe", "execveat",
    "fexecve", "system", "popen", "posix_spawn", "posix_spawnp", "uv_spawn",
    "gpgme_op_spawn", "gpgme_op_spawn_start",
}
SYSCALLS = re.compile(r"^(SYS|__NR)_(fork|vfork|clone|clone3|execve|execveat)$")
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def strip(src):
    """Blank comments and literals, keep newlines."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif src.startswith("/*", i):
            j = src.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(ch if ch == "\n" else " " for ch in src[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and src[j] != c and src[j] != "\n":
                j += 2 if src[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else " " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def scan(path):
    hits = []
    src = open(path, encoding="utf-8", errors="replace").read()
    clean = strip(src)
    for lineno, line in enumerate(clean.split("\n"), 1):
        for m in IDENT.finditer(line):
            name = m.group(0)
            if name not in BANNED and not SYSCALLS.match(name):
                continue
            before = line[:m.start()].rstrip()
            after = line[m.end():].lstrip()
            if before.endswith(".") or before.endswith("->"):
                continue  # a struct member of that name
            if re.search(r"\bSCMP_SYS\s*\($", before):
                continue  # libseccomp's SCMP_SYS(name) names a syscall for a filter rule
            called = after.startswith("(") or after.startswith(")")
            taken = before[-1:] in ("=", "(", ",", "&", "?", ":", "{") or \
                re.search(r"\breturn$", before) is not None
            if not (called or taken or SYSCALLS.match(name)):
                continue  # a declaration such as `int system;`
            hits.append("%s:%d: %s" % (path, lineno, name))
    return hits


def main(paths):
    hits = []
    for p in paths:
        hits.extend(scan(p))
    for h in hits:
        print(h)
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
