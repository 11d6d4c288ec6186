/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Content shard mapping: test vectors (the digests and expected shards
 * were computed independently with Python's hashlib and int(h[:4], 16) % n;
 * docs/content-shards.md prints the same table), a cross-check against the
 * digest bytes computed here with libcrypto, and input validation.
 * Run with LAYOUTD_PRINT_VECTORS=1 to print the table as Markdown.
 */
#include <openssl/evp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "place-shard.h"
#include "util.h"

static const unsigned shard_counts[] = { 1, 2, 3, 4, 7, 8, 16, 100, 65536 };

static const struct {
    const char *input;
    const char *digest;
    unsigned shard[ELEMENTSOF(shard_counts)];
} vectors[] = {
    { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      { 0, 0, 1, 0, 6, 0, 0, 88, 58288 } },
    { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
      { 0, 0, 0, 0, 3, 0, 8, 36, 47736 } },
    { "hello\n", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
      { 0, 1, 2, 1, 0, 1, 1, 73, 22673 } },
    { "layoutd", "878b2119531627a35b8ae3c4864bb466cd0d878e2adce29cfd9c44ad5df8617b",
      { 0, 1, 1, 3, 0, 3, 11, 99, 34699 } },
    { "The quick brown fox jumps over the lazy dog",
      "d7a8fbb307d7809469ca9abcb0082e4f8d5651e46d3cdb762d02d0bf37c9e592",
      { 0, 0, 2, 0, 6, 0, 8, 8, 55208 } },
};

static void sha256_hex(const char *s, char out[65], unsigned char md[32]) {
    unsigned len = 0;
    assert_int_equal(EVP_Digest(s, strlen(s), md, &len, EVP_sha256(), NULL), 1);
    assert_int_equal(len, 32);
    for (unsigned i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void test_vectors(void **state) {
    bool print = getenv("LAYOUTD_PRINT_VECTORS") != NULL;
    if (print) {
        printf("| input | SHA-256 | first 4 hex = u16 |");
        for (size_t k = 0; k < ELEMENTSOF(shard_counts); k++)
            printf(" n=%u |", shard_counts[k]);
        printf("\n|---|---|---|");
        for (size_t k = 0; k < ELEMENTSOF(shard_counts); k++)
            printf("---|");
        printf("\n");
    }
    for (size_t i = 0; i < ELEMENTSOF(vectors); i++) {
        char hex[65];
        unsigned char md[32];
        sha256_hex(vectors[i].input, hex, md);
        assert_string_equal(hex, vectors[i].digest);
        unsigned u16 = ((unsigned) md[0] << 8) | md[1];
        if (print)
        {
            printf("| `\"");
            for (const char *c = vectors[i].input; *c; c++)
                fputs(*c == '\n' ? "\\n" : (char[]) { *c, 0 }, stdout);
            printf("\"` | `%s` | `%.4s` = %u |", hex, hex, u16);
        }
        for (size_t k = 0; k < ELEMENTSOF(shard_counts); k++) {
            unsigned s = UINT32_MAX;
            assert_int_equal(place_shard_for_digest(hex, shard_counts[k], &s), 0);
            assert_int_equal(s, vectors[i].shard[k]);
            assert_int_equal(s, u16 % shard_counts[k]); /* the same from the raw bytes */
            if (print)
                printf(" %u |", s);
        }
        if (print)
            printf("\n");
    }
}

/* Over many digests, the mapping equals the byte formula, and with a
 * shard count dividing 65536 the shards are hit evenly. */
static void test_many(void **state) {
    unsigned hits[8] = {};
    for (unsigned i = 0; i < 65536; i++) {
        char in[16], hex[65];
        unsigned char md[32];
        snprintf(in, sizeof(in), "obj-%u", i);
        sha256_hex(in, hex, md);
        unsigned s;
        assert_int_equal(place_shard_for_digest(hex, 8, &s), 0);
        assert_int_equal(s, (((unsigned) md[0] << 8) | md[1]) % 8);
        hits[s]++;
    }
    for (unsigned k = 0; k < 8; k++)
        assert_true(hits[k] > 65536 / 8 * 9 / 10 && hits[k] < 65536 / 8 * 11 / 10);
}

static void test_invalid(void **state) {
    unsigned s = 77;
    const char *good = vectors[0].digest;
    assert_int_equal(place_shard_for_digest(good, 0, &s), -EINVAL);
    assert_int_equal(place_shard_for_digest(good, 65537, &s), -ERANGE);
    assert_int_equal(place_shard_for_digest(good, 65536, &s), 0);
    assert_int_equal(place_shard_for_digest(NULL, 1, &s), -EINVAL);
    assert_int_equal(place_shard_for_digest("e3b0", 4, &s), -EINVAL);     /* too short */
    char upper[65];
    strcpy(upper, good);
    upper[0] = 'E';
    assert_int_equal(place_shard_for_digest(upper, 4, &s), -EINVAL);      /* uppercase */
    char longer[80];
    snprintf(longer, sizeof(longer), "%s00", good);
    assert_int_equal(place_shard_for_digest(longer, 4, &s), -EINVAL);     /* too long */
    char bad[65];
    strcpy(bad, good);
    bad[40] = 'g';
    assert_int_equal(place_shard_for_digest(bad, 4, &s), -EINVAL);        /* not hex */
    s = 77;
    assert_int_equal(place_shard_for_digest(bad, 4, &s), -EINVAL);
    assert_int_equal(s, 77); /* untouched on error */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_many),
        cmocka_unit_test(test_invalid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
