/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libFuzzer target for the layout parser: any bytes in, either a Layout
 * (then its JSON, YAML and hash must work, and the YAML must parse back to
 * the same JSON) or a non-empty error list out; never a crash or a leak.
 */
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"

/* Not CHECK(): release builds define NDEBUG, and these checks are the point. */
#define CHECK(x)                                                                 \
    do {                                                                         \
        if (!(x)) {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #x); \
            abort();                                                             \
        }                                                                        \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    LayoutErrors errors = {};
    Layout *l = NULL;

    if (size > 64 * 1024)
        return 0;
    int r = layout_parse_string((const char *) data, size, "fuzz.yaml", &l, &errors);
    if (r == 0) {
        CHECK(l && errors.n == 0);
        char *json = NULL, *yaml = NULL, *hash = NULL;
        if (layout_to_json_string(l, &json) == 0 && layout_to_yaml_string(l, &yaml) == 0 &&
            layout_hash(l, &hash) == 0) {
            /* The normalised YAML is a layout that means the same. */
            Layout *b = NULL;
            LayoutErrors e2 = {};
            int k = layout_parse_string(yaml, strlen(yaml), "fuzz-normalised.yaml", &b, &e2);
            if (k != 0) {
                for (size_t i = 0; i < e2.n; i++)
                    fprintf(stderr, "%u:%u: %s\n", e2.items[i].line, e2.items[i].column, e2.items[i].message);
                fprintf(stderr, "%s", yaml);
            }
            CHECK(k == 0);
            char *json2 = NULL;
            CHECK(layout_to_json_string(b, &json2) == 0);
            CHECK(strcmp(json, json2) == 0);
            free(json2);
            layout_free(b);
            layout_errors_clear(&e2);
        }
        free(json);
        free(yaml);
        free(hash);
    } else {
        CHECK(!l);
        CHECK(r == -ENOMEM || errors.n > 0);
        for (size_t i = 0; i < errors.n; i++)
            CHECK(errors.items[i].file && errors.items[i].message);
    }
    layout_free(l);
    layout_errors_clear(&errors);
    return 0;
}
