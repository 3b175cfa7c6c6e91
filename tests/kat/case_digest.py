#!/usr/bin/env python3
"""Independent reference for benchdesk digests (docs/formats.md#digests), stdlib only.

    case_digest.py PATH                 print "blake3:<hex>" of a case dir, a task-class dir
                                        (one holding registration.yaml), or a file's bytes
    case_digest.py --stream OUT DIR     also write the exact section-2 byte stream to OUT

The byte stream is built here and hashed by the external `b3sum` command
(`b3sum --no-names`), so this shares no code with benchdesk (format v2):

  case:        "benchdesk-case-v2\\n", then for every regular file below DIR except the
               top-level provenance.yaml (case.yaml included), sorted bytewise by relative
               path ('/' separator):
               T "\\0" relpath "\\0" size-in-decimal "\\0" bytes  (T = "x" if any execute bit else "f")
  task class:  "benchdesk-task-class-v2\\n", then the entries of exactly registration.yaml
               and rubric.py, in that order.

Symlinks, FIFOs, sockets and devices anywhere are refused (exit 1), as in benchdesk.
"""
import os
import stat
import subprocess
import sys

HEADER = b"benchdesk-case-v2\n"
TC_HEADER = b"benchdesk-task-class-v2\n"
TC_FILES = (b"registration.yaml", b"rubric.py")  # already in bytewise order
EXCLUDED = b"provenance.yaml"  # the one unhashed file, top level only
CHUNK = 1 << 20


def collect(top):
    """All (relpath bytes, full path bytes) of regular files, refusing anything else."""
    files = []
    pending = [b""]
    while pending:
        rel_dir = pending.pop()
        full_dir = os.path.join(top, rel_dir) if rel_dir else top
        for name in os.listdir(full_dir):
            rel = rel_dir + b"/" + name if rel_dir else name
            full = os.path.join(top, rel)
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                pending.append(rel)
            elif stat.S_ISREG(st.st_mode):
                if rel != EXCLUDED:
                    files.append((rel, full))
            else:
                sys.exit("case_digest.py: unsupported entry %r" % rel)
    files.sort(key=lambda f: f[0])  # bytes compare bytewise
    return files


def entry_chunks(rel, full):
    st = os.lstat(full)
    if not stat.S_ISREG(st.st_mode):
        sys.exit("case_digest.py: unsupported entry %r" % rel)
    kind = b"x" if st.st_mode & 0o111 else b"f"
    yield kind + b"\0" + rel + b"\0" + str(st.st_size).encode() + b"\0"
    got = 0
    with open(full, "rb") as f:
        while True:
            block = f.read(CHUNK)
            if not block:
                break
            got += len(block)
            yield block
    if got != st.st_size:
        sys.exit("case_digest.py: %r changed size while being read" % rel)


def task_class_chunks(top):
    yield TC_HEADER
    for rel in TC_FILES:
        yield from entry_chunks(rel, os.path.join(top, rel))


def stream_chunks(top):
    yield HEADER
    for rel, full in collect(top):
        yield from entry_chunks(rel, full)


def file_chunks(path):
    with open(path, "rb") as f:
        while True:
            block = f.read(CHUNK)
            if not block:
                return
            yield block


def main(argv):
    stream_out = None
    if len(argv) == 4 and argv[1] == "--stream":
        stream_out, path = argv[2], argv[3]
    elif len(argv) == 2:
        path = argv[1]
    else:
        sys.exit("usage: case_digest.py [--stream OUT] PATH")
    top = os.fsencode(path.rstrip("/") or "/")
    st = os.lstat(top)
    if stat.S_ISDIR(st.st_mode) and os.path.lexists(os.path.join(top, b"registration.yaml")):
        chunks = task_class_chunks(top)
    elif stat.S_ISDIR(st.st_mode):
        chunks = stream_chunks(top)
    elif stat.S_ISREG(st.st_mode):
        chunks = file_chunks(top)
    else:
        sys.exit("case_digest.py: %s is neither a directory nor a regular file" % path)

    b3 = subprocess.Popen(["b3sum", "--no-names"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out = open(stream_out, "wb") if stream_out else None
    for chunk in chunks:
        b3.stdin.write(chunk)
        if out:
            out.write(chunk)
    b3.stdin.close()
    if out:
        out.close()
    hexdigest = b3.stdout.read().decode().strip()
    if b3.wait() != 0 or len(hexdigest) != 64:
        sys.exit("case_digest.py: b3sum failed")
    print("blake3:" + hexdigest)


if __name__ == "__main__":
    main(sys.argv)
