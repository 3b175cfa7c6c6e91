/*
 * sha256many_impl.h — the SHA-256 compression of LANES messages at once, one per vector
 * lane (FIPS 180-4 §6.2.2). Included by sha256many.c once per vector width, with VEC (a
 * GCC vector of LANES uint32_t), LANES, COMPRESS (the function's name) and TARGET (its
 * target attribute) defined. Not a header of its own.
 */
#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))

TARGET static void COMPRESS(VEC st[8], const VEC in[16])
{
    VEC w[16];
    for (int t = 0; t < 16; t++)
        w[t] = in[t];
    VEC a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    for (int t = 0; t < 64; t++) {
        VEC wt;
        if (t < 16) {
            wt = w[t];
        } else {
            VEC w15 = w[(t - 15) & 15], w2 = w[(t - 2) & 15];
            VEC s0 = ROTR(w15, 7) ^ ROTR(w15, 18) ^ (w15 >> 3);
            VEC s1 = ROTR(w2, 17) ^ ROTR(w2, 19) ^ (w2 >> 10);
            wt = w[t & 15] = w[t & 15] + s0 + w[(t - 7) & 15] + s1;
        }
        VEC S1 = ROTR(e, 6) ^ ROTR(e, 11) ^ ROTR(e, 25);
        VEC ch = (e & f) ^ (~e & g);
        VEC t1 = h + S1 + ch + K[t] + wt;
        VEC S0 = ROTR(a, 2) ^ ROTR(a, 13) ^ ROTR(a, 22);
        VEC maj = (a & b) ^ (a & c) ^ (b & c);
        VEC t2 = S0 + maj;
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    st[0] += a;
    st[1] += b;
    st[2] += c;
    st[3] += d;
    st[4] += e;
    st[5] += f;
    st[6] += g;
    st[7] += h;
}

/* SHA-256 of `n` <= LANES messages of `len` <= 119 bytes: two blocks at most. */
TARGET static void MANY(const uint8_t *const *msgs, size_t len, size_t n, uint8_t (*out)[32])
{
    size_t nblocks = len + 9 <= 64 ? 1 : 2;
    VEC st[8], blk[2][16];
    for (int i = 0; i < 8; i++)
        for (int l = 0; l < LANES; l++)
            st[i][l] = IV[i];
    /* Each lane's message padded once, as big-endian words of both blocks. */
    for (int l = 0; l < LANES; l++) {
        uint8_t pad[128];
        memset(pad, 0, sizeof(pad)); /* an idle lane hashes zeros, never read */
        if ((size_t)l < n) {
            memcpy(pad, msgs[l], len);
            pad[len] = 0x80;
            uint64_t bits = (uint64_t)len * 8;
            for (int j = 0; j < 8; j++)
                pad[nblocks * 64 - 1 - j] = (uint8_t)(bits >> (8 * j));
        }
        for (size_t k = 0; k < nblocks; k++)
            for (int t = 0; t < 16; t++) {
                const uint8_t *w = pad + 64 * k + 4 * t;
                blk[k][t][l] =
                    (uint32_t)w[0] << 24 | (uint32_t)w[1] << 16 | (uint32_t)w[2] << 8 | w[3];
            }
    }
    for (size_t k = 0; k < nblocks; k++)
        COMPRESS(st, blk[k]);
    for (size_t l = 0; l < n; l++)
        for (int i = 0; i < 8; i++) {
            uint32_t v = st[i][l];
            out[l][4 * i] = (uint8_t)(v >> 24);
            out[l][4 * i + 1] = (uint8_t)(v >> 16);
            out[l][4 * i + 2] = (uint8_t)(v >> 8);
            out[l][4 * i + 3] = (uint8_t)v;
        }
}

#undef ROTR
