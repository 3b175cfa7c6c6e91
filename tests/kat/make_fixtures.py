#!/usr/bin/env python3
"""Create the digest KAT fixture trees, deterministically, under DIR (stdlib only).

    make_fixtures.py DIR              creates DIR/<name>/ for every fixture below, prints the names
    make_fixtures.py --random SEED DIR
                                      also DIR/random-SEED/: a seeded tree of odd names, modes
                                      and sizes (for cross-checks against the reference only)

tests/unit/test_digest.c builds the very same trees in C and holds their digests as
computed by tests/kat/case_digest.py; keep the two in step.
"""
import os
import random
import sys

BIG_SIZE = 3 * 1024 * 1024 + 12345  # crosses BLAKE3 chunks and the 1 MiB read buffer


def lcg_bytes(seed, n):
    """byte i = bits 16..23 of x_(i+1), x_(k+1) = (x_k * 1103515245 + 12345) mod 2^31."""
    out = bytearray(n)
    x = seed
    for i in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out[i] = (x >> 16) & 0xFF
    return bytes(out)


# (relative path as bytes, content bytes, mode); a path ending in "/" is a directory.
FIXTURES = {
    "empty": [],
    "basic": [
        (b"case.yaml", b"schema_version: 2\ncase_id: basic\n", 0o644),
        (b"provenance.yaml", b"schema_version: 2\n", 0o644),
        (b"input/prompt.txt", b"hello, bench\n", 0o644),
        (b"expected/answer.txt", b"42\n", 0o644),
        (b"run.sh", b"#!/bin/sh\necho hi\n", 0o755),
        (b"tool", b"u", 0o700),
        (b"grp", b"g", 0o610),
        (b"oth", b"o", 0o601),
        (b"plain", b"p", 0o644),
        (b"empty.txt", b"", 0o644),
        (b"emptydir/", None, 0o755),
        (b"nested/case.yaml", b"nested: true\n", 0o644),
        (b"nested/provenance.yaml", b"nested: signatures\n", 0o644),
        (b"nested/deep/x/y/z.txt", b"deep\n", 0o644),
        (b".hidden", b"dot\n", 0o644),
    ],
    "sort": [
        (b"a/b", b"1", 0o644),
        (b"a/b.c", b"2", 0o644),
        (b"a/b-c", b"3", 0o644),
        (b"a/c/d", b"4", 0o644),
        (b"a.b", b"5", 0o644),
        (b"a-b", b"6", 0o644),
        (b"a0", b"7", 0o644),
        (b"ab", b"8", 0o644),
        (b"A", b"9", 0o644),
        (b"b/x", b"10", 0o644),
        (b"b.x", b"11", 0o644),
        (b"b0/x", b"12", 0o644),
        (b"b-/x", b"13", 0o644),
    ],
    "unicode": [
        ("données/résumé.txt".encode(), "é\n".encode(), 0o644),
        ("日本.txt".encode(), b"nihon\n", 0o644),
        ("Ωmega".encode(), b"", 0o755),
        ("\u00e9.txt".encode(), b"composed\n", 0o644),
        ("e\u0301.txt".encode(), b"decomposed\n", 0o644),
        (b"raw-\xff.bin", b"\xff\x00\x01", 0o644),
    ],
    "tclass": [
        (b"registration.yaml", b"schema_version: 2\nname: tclass\n", 0o644),
        (b"rubric.py", b"print('{}')\n", 0o755),
        (b"provenance.yaml", b"schema_version: 2\n", 0o644),
        (b"notes.txt", b"not hashed\n", 0o644),
        (b"cases/digests.yaml", b"schema_version: 2\n", 0o644),
    ],
    "big": [
        (b"case.yaml", b"case_id: big\n", 0o644),
        (b"provenance.yaml", b"author: null\n", 0o644),
        (b"big.bin", ("lcg", 1, BIG_SIZE), 0o644),
        (b"chunk.bin", ("lcg", 2, 1024), 0o644),
        (b"chunk1.bin", ("lcg", 3, 1025), 0o755),
        (b"sub/mid.bin", ("lcg", 4, 65537), 0o644),
    ],
}


def build(root, entries):
    os.makedirs(root, exist_ok=True)
    os.chmod(root, 0o755)
    for rel, content, mode in entries:
        full = os.path.join(root, rel)
        if rel.endswith(b"/"):
            os.makedirs(full, exist_ok=True)
            os.chmod(full, mode)
            continue
        parent = os.path.dirname(full)
        os.makedirs(parent, exist_ok=True)
        if isinstance(content, tuple):
            content = lcg_bytes(content[1], content[2])
        with open(full, "wb") as f:
            f.write(content)
        os.chmod(full, mode)


NAME_BYTES = b"abcxyzABC0189.-_ ~+=,;'!#%&()[]{}" + "é日Ω".encode()


def random_entries(seed):
    """A deterministic tree: names from NAME_BYTES (plus raw high bytes), nesting up to
    5 levels, sizes around the 1 KiB chunk and the 64 KiB/1 MiB buffer edges."""
    rng = random.Random(seed)
    sizes = [0, 1, 63, 64, 65, 1023, 1024, 1025, 2048, 4097, 65535, 65536, 65537,
             (1 << 20) - 1, (1 << 20) + 1]
    dirs = [b""]
    entries = []
    seen = set()
    for i in range(300):
        parent = rng.choice(dirs)
        name = bytes(rng.choice(NAME_BYTES) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.05:
            name += bytes([rng.randint(0x80, 0xFF)])
        if name in (b".", b".."):
            name += b"_"
        rel = parent + b"/" + name if parent else name
        if rel in seen or (parent == b"" and name in (b"provenance.yaml", b"registration.yaml")):
            continue
        seen.add(rel)
        if rng.random() < 0.15 and rel.count(b"/") < 5:
            dirs.append(rel)
            entries.append((rel + b"/", None, 0o755))
            continue
        size = rng.choice(sizes) if rng.random() < 0.3 else rng.randint(0, 3000)
        data = bytes(rng.getrandbits(8) for _ in range(size)) if size < 5000 else \
            lcg_bytes(i + 1, size)
        mode = rng.choice([0o644, 0o600, 0o755, 0o700, 0o640, 0o604, 0o654])
        entries.append((rel, data, mode))
    # files go below their directories: create directories first
    return sorted(entries, key=lambda e: (not e[0].endswith(b"/"), e[0].count(b"/")))


def main(argv):
    args = argv[1:]
    seed = None
    if len(args) == 3 and args[0] == "--random":
        seed = int(args[1])
        args = args[2:]
    if len(args) != 1:
        sys.exit("usage: make_fixtures.py [--random SEED] DIR")
    os.umask(0o022)
    top = os.fsencode(args[0])
    for name, entries in FIXTURES.items():
        build(os.path.join(top, name.encode()), entries)
        print(name)
    if seed is not None:
        name = "random-%d" % seed
        build(os.path.join(top, name.encode()), random_entries(seed))
        print(name)


if __name__ == "__main__":
    main(sys.argv)
