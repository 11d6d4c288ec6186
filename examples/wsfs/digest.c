/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SHA-256 digests as 32 bytes and as 64 lowercase hex digits, and an
 * open-addressing set of them (the sweeper's references, fsck's objects
 * seen, a workspace's pool usage, the missing objects of the stats file).
 * SHA-256 bits are uniform already, so the first 8 bytes are the hash.
 */
#include "wsfs.h"

bool digest_from_hex(const char *s, Digest *ret) {
    if (!cas_is_hex(s))
        return false;
    for (size_t i = 0; i < 32; i++) {
        int hi = s[2 * i] <= '9' ? s[2 * i] - '0' : s[2 * i] - 'a' + 10;
        int lo = s[2 * i + 1] <= '9' ? s[2 * i + 1] - '0' : s[2 * i + 1] - 'a' + 10;
        ret->b[i] = (unsigned char) (hi << 4 | lo);
    }
    return true;
}

void digest_to_hex(const Digest *d, char out[WSFS_HEX_LEN + 1]) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < 32; i++) {
        out[2 * i] = digits[d->b[i] >> 4];
        out[2 * i + 1] = digits[d->b[i] & 15];
    }
    out[WSFS_HEX_LEN] = 0;
}

static size_t digest_hash(const Digest *d, size_t cap) {
    uint64_t h;
    memcpy(&h, d->b, sizeof(h));
    return h & (cap - 1);
}

int digest_set_add(DigestSet *s, const Digest *d) {
    if ((s->n + 1) * 2 > s->cap) {
        DigestSet n = { .cap = s->cap ? s->cap * 2 : 1024 };
        n.slots = calloc(n.cap, sizeof(Digest));
        n.used = calloc(n.cap, sizeof(bool));
        if (!n.slots || !n.used) {
            free(n.slots);
            free(n.used);
            return -ENOMEM;
        }
        for (size_t i = 0; i < s->cap; i++)
            if (s->used[i])
                (void) digest_set_add(&n, &s->slots[i]);
        free(s->slots);
        free(s->used);
        *s = n;
    }
    for (size_t i = digest_hash(d, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (!s->used[i]) {
            s->used[i] = true;
            s->slots[i] = *d;
            s->n++;
            return 1;
        }
        if (memcmp(s->slots[i].b, d->b, 32) == 0)
            return 0;
    }
}

bool digest_set_has(const DigestSet *s, const Digest *d) {
    if (s->cap == 0)
        return false;
    for (size_t i = digest_hash(d, s->cap);; i = (i + 1) & (s->cap - 1)) {
        if (!s->used[i])
            return false;
        if (memcmp(s->slots[i].b, d->b, 32) == 0)
            return true;
    }
}

void digest_set_done(DigestSet *s) {
    free(s->slots);
    free(s->used);
    *s = (DigestSet) {};
}
