/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#include "layoutctl-http.h"
#include "layoutctl-table.h"
#include "util.h"

#define TABLE_MAX_COLS 32

/* The columns to show, in order: -o's, or every column not hidden. */
static size_t select_columns(const Column *cols, size_t n, const char *spec, const Column **ret) {
    size_t k = 0;
    if (!spec) {
        for (size_t i = 0; i < n && k < TABLE_MAX_COLS; i++)
            if (!cols[i].hidden)
                ret[k++] = &cols[i];
        return k;
    }
    while (*spec && k < TABLE_MAX_COLS) {
        size_t len = strcspn(spec, ",");
        for (size_t i = 0; i < n; i++)
            if (strlen(cols[i].name) == len && strncasecmp(cols[i].name, spec, len) == 0) {
                ret[k++] = &cols[i];
                break;
            }
        spec += len + (spec[len] == ',');
    }
    return k;
}

int table_check_columns(const char *verb, const Column *cols, size_t n, const char *spec) {
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, ",");
        bool known = false;
        for (size_t i = 0; i < n && !known; i++)
            known = strlen(cols[i].name) == len && strncasecmp(cols[i].name, p, len) == 0;
        if (!known || len == 0) {
            fprintf(stderr, "layoutctl %s: unknown column '%.*s'; known:", verb, (int) len, p);
            for (size_t i = 0; i < n; i++)
                fprintf(stderr, "%s%s", i ? "," : " ", cols[i].name);
            fputc('\n', stderr);
            return -EINVAL;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

static bool is_right(ColumnKind k) {
    return k == COLUMN_COUNT || k == COLUMN_SIZE;
}

/* The cell's text (malloc'ed) and colour. */
static char *cell(const Column *c, json_object *row, const TableOptions *o, const char **ret_color) {
    json_object *v = jget(row, c->key);
    char buf[32];
    char *s = NULL;
    *ret_color = NULL;
    if (!v)
        return strdup("-");
    switch (c->kind) {
    case COLUMN_TEXT:
        return strdup(json_object_get_string(v));
    case COLUMN_HEALTH:
        *ret_color = client_health_color(json_object_get_string(v));
        return strdup(json_object_get_string(v));
    case COLUMN_COUNT:
        return asprintf(&s, "%" PRIu64, json_object_get_uint64(v)) < 0 ? NULL : s;
    case COLUMN_SIZE:
        if (o->bytes)
            return asprintf(&s, "%" PRIu64, json_object_get_uint64(v)) < 0 ? NULL : s;
        return strdup(format_bytes(buf, sizeof buf, json_object_get_uint64(v)));
    case COLUMN_YES_NO: {
        bool b = json_object_get_boolean(v);
        *ret_color = b ? NULL : C_RED;
        return strdup(b ? "yes" : "NO");
    }
    case COLUMN_LABELS:
    case COLUMN_LIST: {
        size_t len = 0;
        FILE *f = open_memstream(&s, &len);
        if (!f)
            return NULL;
        bool first = true;
        if (c->kind == COLUMN_LABELS && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, k, x) {
                fprintf(f, "%s%s=%s", first ? "" : ",", k, json_object_get_string(x));
                first = false;
            }
        } else if (json_object_is_type(v, json_type_array))
            for (size_t i = 0; i < json_object_array_length(v); i++)
                fprintf(f, "%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(v, i)));
        fclose(f);
        if (s && !s[0]) {
            free(s);
            return strdup("-");
        }
        return s;
    }
    }
    return strdup("?");
}

void table_print_json(const Column *cols, size_t n, json_object *rows, const TableOptions *o) {
    const Column *shown[TABLE_MAX_COLS];
    size_t k = select_columns(cols, n, o->columns, shown);
    size_t nr = rows && json_object_is_type(rows, json_type_array) ? json_object_array_length(rows) : 0;
    char **cells = calloc(MAX(nr * k, 1u), sizeof(char *));
    const char **colors = calloc(MAX(nr * k, 1u), sizeof(char *));
    size_t w[TABLE_MAX_COLS] = {};
    if (!cells || !colors) {
        free(cells);
        free(colors);
        return;
    }
    for (size_t j = 0; j < k; j++)
        w[j] = o->no_legend ? 0 : strlen(shown[j]->name);
    for (size_t r = 0; r < nr; r++)
        for (size_t j = 0; j < k; j++) {
            cells[r * k + j] = cell(shown[j], json_object_array_get_idx(rows, r), o, &colors[r * k + j]);
            w[j] = MAX(w[j], strlen(cells[r * k + j] ?: ""));
        }
    if (!o->no_legend) {
        for (size_t j = 0; j < k; j++)
            printf("%s%s%-*s%s", j ? "  " : "", C_BOLD, j + 1 == k ? 0 : (int) w[j], shown[j]->name, C_RESET);
        putchar('\n');
    }
    for (size_t r = 0; r < nr; r++) {
        for (size_t j = 0; j < k; j++) {
            const char *s = cells[r * k + j] ?: "";
            const char *col = colors[r * k + j];
            bool right = is_right(shown[j]->kind);
            int width = j + 1 == k && !right ? 0 : (int) w[j];
            printf("%s%s", j ? "  " : "", col ?: "");
            printf(right ? "%*s" : "%-*s", width, s);
            printf("%s", col ? C_RESET : "");
        }
        putchar('\n');
    }
    for (size_t i = 0; i < nr * k; i++)
        free(cells[i]);
    free(cells);
    free(colors);
}

void table_print_help(const Column *cols, size_t n, FILE *f) {
    fputs("  -o, --output COLUMNS  comma-separated columns to show, in order:\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "                  %-10s %s%s\n", cols[i].name, cols[i].help ?: "",
                cols[i].hidden ? " (not shown by default)" : "");
    fputs("  --no-legend     no header line\n"
          "  --bytes         sizes in bytes, not rounded to K/M/G\n",
          f);
}
