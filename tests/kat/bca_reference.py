#!/usr/bin/env python3
"""bca_reference.py — an independent reference for src/base/stats.h (Python stdlib only).

Written from the contract in stats.h, not from stats.c:
  - splitmix64 seeding of xoshiro256**, Lemire's multiply-and-reject bounded draw;
  - the BCa interval of the mean: boot[b] = mean of n draws with replacement (draws in
    order), mid-rank z0 with the proportion clamped to [1/(2B), 1 - 1/(2B)], jackknife
    acceleration, alpha_k = Phi(z0 + (z0 + z_k) / (1 - a (z0 + z_k))), and the sorted
    bootstrap means read at alpha_k * (B - 1) with linear interpolation; [x, x] when
    every x is equal.

and, for comparing two runs (src/analysis/compare.h, docs/compare.md):
  - the paired interval: the BCa interval of the mean of the per-case deltas b_i - a_i
    (cases in case-id order), seeded from the two run ids: the first 8 bytes of
    BLAKE3(run_a || NUL || run_b), little-endian (BLAKE3 from the b3sum tool);
  - McNemar's exact test: min(1, 2 * P(X <= min(b, c))), X ~ Binomial(b + c, 1/2),
    computed with exact rationals.

Usage:
  bca_reference.py            JSON of the known answers used by tests/unit/test_stats.c
  bca_reference.py bca SEED B LEVEL X...   one interval, JSON {"lo": .., "hi": ..}
  bca_reference.py paired SEED B LEVEL A1,A2,... B1,B2,...   the paired interval
  bca_reference.py mcnemar B C             the exact p-value, JSON {"p": ..}
  bca_reference.py seed RUN_A RUN_B        the comparison seed (needs b3sum)

Floats are printed with repr(), which round-trips exactly.
"""
import json
import math
import sys
from statistics import NormalDist

M64 = (1 << 64) - 1
RESAMPLES = 10000
RUN_SEED = int.from_bytes(b"benchdsk", "big")
_N = NormalDist()


class Rng:
    """xoshiro256** (Blackman & Vigna), state filled by four splitmix64 outputs."""

    def __init__(self, seed):
        self.s = []
        x = seed & M64
        for _ in range(4):
            x = (x + 0x9E3779B97F4A7C15) & M64
            z = x
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))

    @staticmethod
    def _rotl(v, k):
        return ((v << k) | (v >> (64 - k))) & M64

    def next(self):
        s0, s1, s2, s3 = self.s
        out = (self._rotl((s1 * 5) & M64, 7) * 9) & M64
        t = (s1 << 17) & M64
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = self._rotl(s3, 45)
        self.s = [s0, s1, s2, s3]
        return out

    def below(self, n):
        """Uniform in [0, n) by Lemire's method: reject low halves below 2^64 mod n."""
        if n == 0:
            return 0
        threshold = (1 << 64) % n
        while True:
            m = self.next() * n
            if (m & M64) >= threshold:
                return m >> 64


def phi(z):
    return _N.cdf(z)


def phi_inv(p):
    if p == 0.0:
        return -math.inf
    if p == 1.0:
        return math.inf
    return _N.inv_cdf(p)


def mean(v):
    # Left-to-right accumulation (Python's sum() is compensated on 3.12+).
    acc = 0.0
    for e in v:
        acc += e
    return acc / len(v)


def percentile(sorted_v, q):
    """sorted_v read at q * (len - 1), linearly interpolated; clamped to the ends."""
    pos = q * (len(sorted_v) - 1)
    if pos <= 0:
        return sorted_v[0]
    if pos >= len(sorted_v) - 1:
        return sorted_v[-1]
    i = math.floor(pos)
    f = pos - i
    return sorted_v[i] + (sorted_v[i + 1] - sorted_v[i]) * f


def adjusted(z0, a, z):
    s = z0 + z
    den = 1.0 - a * s
    if den <= 0.0:  # the limit of the formula as the denominator falls to 0+
        return 1.0 if s > 0 else 0.0
    return phi(z0 + s / den)


def bca(x, level=0.95, resamples=0, seed=RUN_SEED):
    n = len(x)
    if n == 0 or not (0.0 < level < 1.0) or not all(math.isfinite(v) for v in x):
        raise ValueError("usage.bad_args")
    theta = mean(x)
    if min(x) == max(x):
        return theta, theta
    B = resamples or RESAMPLES
    rng = Rng(seed)
    boot = []
    for _ in range(B):
        boot.append(mean([x[rng.below(n)] for _ in range(n)]))
    p = (sum(1 for b in boot if b < theta) + sum(1 for b in boot if b == theta) / 2) / B
    p = min(max(p, 1 / (2 * B)), 1 - 1 / (2 * B))
    z0 = phi_inv(p)
    jack = [mean(x[:i] + x[i + 1 :]) for i in range(n)]
    jbar = mean(jack)
    d = [jbar - t for t in jack]
    s2 = sum(e * e for e in d)
    a = sum(e**3 for e in d) / (6 * s2**1.5) if s2 > 0 else 0.0
    tail = (1 - level) / 2
    boot.sort()
    lo = percentile(boot, adjusted(z0, a, phi_inv(tail)))
    hi = percentile(boot, adjusted(z0, a, phi_inv(1 - tail)))
    return min(lo, hi), max(lo, hi)


def paired_bca(a, b, level=0.95, resamples=0, seed=RUN_SEED):
    """A paired bootstrap resamples cases, so each pair stays together: the BCa interval
    of the mean of the deltas."""
    if len(a) != len(b):
        raise ValueError("usage.bad_args")
    return bca([y - x for x, y in zip(a, b)], level, resamples, seed)


def mcnemar(b, c):
    from fractions import Fraction

    n, m = b + c, min(b, c)
    if n == 0:
        return 1.0
    tail = Fraction(sum(math.comb(n, k) for k in range(m + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def compare_seed(run_a, run_b):
    import subprocess

    data = run_a.encode() + b"\0" + run_b.encode()
    out = subprocess.run(["b3sum", "--no-names", "-l", "8"], input=data, check=True,
                         capture_output=True).stdout.decode().strip()
    return int.from_bytes(bytes.fromhex(out), "little")


# The inputs of the known-answer tests in tests/unit/test_stats.c.
BCA_CASES = [
    ("d1_B2000", [0.75, 1.0, 0.0, 0.5, 1.0, 1.0, 0.25, 0.9, 1.0, 0.6], 0.95, 2000, RUN_SEED),
    ("d1_default", [0.75, 1.0, 0.0, 0.5, 1.0, 1.0, 0.25, 0.9, 1.0, 0.6], 0.95, 0, RUN_SEED),
    ("d2", [float(b) for b in (1, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 0)],
     0.95, 1000, 7),
    ("d3", [0.01, 0.02, 0.02, 0.03, 0.05, 0.08, 0.13, 0.21, 0.34, 0.55, 0.89], 0.90, 1500,
     123456789),
    ("ones", [1.0, 1.0, 1.0, 1.0], 0.95, 0, 1),
    ("one", [0.3], 0.95, 0, 1),
]


def known_answers():
    r = Rng(0)
    seed0 = ["0x%016x" % r.next() for _ in range(3)]
    r = Rng(42)
    below10 = [r.below(10) for _ in range(10)]
    below_edge = [r.below(0), r.below(1)]
    cases = {}
    for name, x, level, B, seed in BCA_CASES:
        lo, hi = bca(x, level, B, seed)
        cases[name] = {"x": x, "level": level, "resamples": B, "seed": seed, "lo": lo, "hi": hi}
    return {
        # splitmix64(0)'s first output: the published value is 0xe220a8397b1dcdaf.
        "splitmix64_0_first": "0x%016x" % Rng(0).s[0],
        "rng_seed0_next3": seed0,
        "rng_seed42_below10": below10,
        "rng_seed42_then_below0_below1": below_edge,
        "bca": cases,
    }


def main(argv):
    if len(argv) == 1:
        print(json.dumps(known_answers(), indent=1))
        return 0
    if len(argv) >= 5 and argv[1] == "bca":
        seed, B, level = int(argv[2], 0), int(argv[3]), float(argv[4])
        lo, hi = bca([float(v) for v in argv[5:]], level, B, seed)
        print(json.dumps({"lo": lo, "hi": hi}))
        return 0
    if len(argv) == 7 and argv[1] == "paired":
        seed, B, level = int(argv[2], 0), int(argv[3]), float(argv[4])
        a = [float(v) for v in argv[5].split(",") if v]
        b = [float(v) for v in argv[6].split(",") if v]
        lo, hi = paired_bca(a, b, level, B, seed)
        print(json.dumps({"lo": lo, "hi": hi}))
        return 0
    if len(argv) == 4 and argv[1] == "mcnemar":
        print(json.dumps({"p": mcnemar(int(argv[2]), int(argv[3]))}))
        return 0
    if len(argv) == 4 and argv[1] == "seed":
        print("0x%016x" % compare_seed(argv[2], argv[3]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
