/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tables with libsmartcols; see layoutctl-cols.h. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#include <libsmartcols.h>

#include "escape.h"
#include "layoutctl-cols.h"
#include "layoutctl-http.h"
#include "util.h"

#define TABLE_MAX_COLS 32

DEFINE_TRIVIAL_CLEANUP_FUNC(struct libscols_table *, scols_unref_table)

static const Column *find_column(const Column *cols, size_t n, const char *name, size_t len) {
    for (size_t i = 0; i < n; i++)
        if (strlen(cols[i].name) == len && strncasecmp(cols[i].name, name, len) == 0)
            return &cols[i];
    return NULL;
}

/* The columns to show, in order: -o's ("+A,B": the default ones, then
 * those), or every column not hidden. */
static size_t select_columns(const Column *cols, size_t n, const char *spec, const Column **ret) {
    size_t k = 0;
    if (!spec || spec[0] == '+') {
        for (size_t i = 0; i < n && k < TABLE_MAX_COLS; i++)
            if (!cols[i].hidden)
                ret[k++] = &cols[i];
        if (!spec)
            return k;
        spec++;
    }
    while (*spec && k < TABLE_MAX_COLS) {
        size_t len = strcspn(spec, ",");
        const Column *c = find_column(cols, n, spec, len);
        if (c)
            ret[k++] = c;
        spec += len + (spec[len] == ',');
    }
    return k;
}

int table_check_columns(const char *verb, const Column *cols, size_t n, const char *spec) {
    if (spec && spec[0] == '+')
        spec++;
    if (spec && !*spec)
        return layoutctl_usage_error(verb, "-o needs at least one column"), -EINVAL;
    for (const char *p = spec; p && *p;) {
        size_t len = strcspn(p, ",");
        if (!find_column(cols, n, p, len)) {
            _cleanup_free_ char *word = strndup(p, len);
            const char *names[TABLE_MAX_COLS];
            for (size_t i = 0; i < n && i < TABLE_MAX_COLS; i++)
                names[i] = cols[i].name;
            /* Column names are upper case; a typo may not be. */
            for (char *q = word; q && *q; q++)
                *q = (char) toupper((unsigned char) *q);
            const char *s = word ? layoutctl_suggest(word, names, MIN(n, (size_t) TABLE_MAX_COLS)) : NULL;
            _cleanup_free_ char *shown = str_escape_terminal(word ?: "");
            if (s)
                layoutctl_usage_error(verb, "unknown column '%s'; did you mean '%s'?", shown ?: "?", s);
            else
                layoutctl_usage_error(verb, "unknown column '%s'", shown ?: "?");
            return -EINVAL;
        }
        p += len + (p[len] == ',');
    }
    return 0;
}

/* "4.2ms", "1.25s": the flush probe's scale. */
static char *format_seconds(double s) {
    char *r = NULL;
    if (s < 0.001)
        return asprintf(&r, "%.0fus", s * 1e6) < 0 ? NULL : r;
    if (s < 1)
        return asprintf(&r, "%.1fms", s * 1e3) < 0 ? NULL : r;
    return asprintf(&r, "%.2fs", s) < 0 ? NULL : r;
}

/* The cell's text (malloc'ed, unescaped) and colour (NULL: none); NULL
 * text: no value. */
static int cell(const Column *c, json_object *row, const TableOptions *o, char **ret, const char **ret_color) {
    json_object *v = json_path_get(row, c->key);
    char buf[32], *s = NULL;
    *ret_color = NULL;
    *ret = NULL;
    if (!v)
        return 0;
    switch (c->kind) {
    case COLUMN_TEXT:
        s = strdup(json_object_get_string(v));
        break;
    case COLUMN_HEALTH:
        *ret_color = client_health_color_name(json_object_get_string(v));
        s = strdup(json_object_get_string(v));
        break;
    case COLUMN_COUNT:
        if (asprintf(&s, "%" PRIu64, json_object_get_uint64(v)) < 0)
            s = NULL;
        break;
    case COLUMN_SIZE:
        if (o->bytes || o->json) {
            if (asprintf(&s, "%" PRIu64, json_object_get_uint64(v)) < 0)
                s = NULL;
        } else
            s = strdup(format_bytes(buf, sizeof buf, json_object_get_uint64(v)));
        break;
    case COLUMN_SECONDS:
        if (o->bytes || o->json) {
            if (asprintf(&s, "%.6f", json_object_get_double(v)) < 0)
                s = NULL;
        } else
            s = format_seconds(json_object_get_double(v));
        break;
    case COLUMN_YES_NO: {
        bool b = json_object_get_boolean(v);
        *ret_color = b ? NULL : "red";
        s = strdup(o->json ? (b ? "true" : "false") : b ? "yes" : "NO");
        break;
    }
    case COLUMN_LABELS:
    case COLUMN_LIST: {
        size_t len = 0;
        FILE *f = open_memstream(&s, &len);
        if (!f)
            return -ENOMEM;
        bool first = true;
        if (c->kind == COLUMN_LABELS && json_object_is_type(v, json_type_object)) {
            json_object_object_foreach(v, k, x) {
                fprintf(f, "%s%s=%s", first ? "" : ",", k, json_object_get_string(x));
                first = false;
            }
        } else if (json_object_is_type(v, json_type_array))
            for (size_t i = 0; i < json_object_array_length(v); i++)
                fprintf(f, "%s%s", i ? "," : "", json_object_get_string(json_object_array_get_idx(v, i)));
        if (fclose(f) != 0)
            return -ENOMEM;
        if (s && !s[0])
            s = mfree(s);
        *ret = s;
        return 0;
    }
    }
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

static int column_json_type(ColumnKind k) {
    switch (k) {
    case COLUMN_COUNT:
    case COLUMN_SIZE:
    case COLUMN_SECONDS:
        return SCOLS_JSON_NUMBER;
    case COLUMN_YES_NO:
        return SCOLS_JSON_BOOLEAN;
    default:
        return SCOLS_JSON_STRING;
    }
}

int table_print(const Column *cols, size_t n, json_object *rows, const TableOptions *o) {
    const Column *shown[TABLE_MAX_COLS];
    size_t k = select_columns(cols, n, o->columns, shown);
    size_t nr = rows && json_object_is_type(rows, json_type_array) ? json_object_array_length(rows) : 0;

    _cleanup_(scols_unref_tablep) struct libscols_table *tb = scols_new_table();
    if (!tb)
        return -ENOMEM;
    /* Colour only for people: not in -r, -P or -J output. */
    bool plain = o->raw || o->pairs || o->json;
    scols_table_enable_colors(tb, !plain && client_use_color());
    scols_table_enable_noheadings(tb, o->noheadings);
    scols_table_enable_raw(tb, o->raw);
    scols_table_enable_export(tb, o->pairs);
    /* -P: names usable as shell variables ("USE%" is USE_PCT). */
    scols_table_enable_shellvar(tb, o->pairs);
    scols_table_enable_json(tb, o->json);
    /* The table's cells come escaped by us (escape.h knows the bidi
     * characters too): libsmartcols's own encoder would escape our
     * escapes again. (-r and -P are encoded by libsmartcols either way.) */
    scols_table_enable_noencoding(tb, 1);
    if (o->json)
        scols_table_set_name(tb, o->name ?: "rows");

    struct libscols_column *cl[TABLE_MAX_COLS];
    for (size_t j = 0; j < k; j++) {
        ColumnKind kind = shown[j]->kind;
        bool right = kind == COLUMN_COUNT || kind == COLUMN_SIZE || kind == COLUMN_SECONDS;
        int flags = (right ? SCOLS_FL_RIGHT : 0) | (shown[j]->trunc ? SCOLS_FL_TRUNC : 0);
        cl[j] = scols_table_new_column(tb, shown[j]->name, shown[j]->trunc ? 0.3 : 0, flags);
        if (!cl[j])
            return -ENOMEM;
        (void) scols_column_set_json_type(cl[j], column_json_type(shown[j]->kind));
    }
    for (size_t r = 0; r < nr; r++) {
        json_object *row = json_object_array_get_idx(rows, r);
        struct libscols_line *ln = scols_table_new_line(tb, NULL);
        if (!ln)
            return -ENOMEM;
        for (size_t j = 0; j < k; j++) {
            _cleanup_free_ char *text = NULL;
            const char *color;
            int q = cell(shown[j], row, o, &text, &color);
            if (q < 0)
                return q;
            /* The table for people gets our escapes (escape.h: C0, C1, the
             * bidi characters, invalid UTF-8 as \xHH), and an absent value
             * is "-". -r and -P get the string itself: libsmartcols writes
             * every byte that is not printable ASCII (and a backslash, and
             * for -r a blank) as \xHH there, as lsblk's -r and -P do, and
             * an absent value is empty there, as in lsblk's. JSON gets the string itself too
             * (absent: null); its unsafe characters are \u-escaped below. */
            char *data = o->json                ? TAKE_PTR(text)
                         : o->raw || o->pairs ? strdup(text ?: "")
                                              : str_escape_terminal(text ?: "-");
            if (!o->json && !data)
                return -ENOMEM;
            if (data && scols_line_refer_data(ln, j, data) < 0) {
                free(data);
                return -ENOMEM;
            }
            if (color && !plain)
                (void) scols_cell_set_color(scols_line_get_cell(ln, j), color);
        }
    }

    /* Printed to memory first, so that JSON passes the same filter as the
     * API's own (no raw control or bidi character in any string). */
    _cleanup_free_ char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return -ENOMEM;
    scols_table_set_stream(tb, f);
    int q = scols_print_table(tb);
    if (fclose(f) != 0 || q < 0)
        return -EIO;
    if (o->json) {
        _cleanup_free_ char *safe = json_text_make_safe(out);
        if (!safe)
            return -ENOMEM;
        fputs(safe, stdout);
    } else
        fputs(out ?: "", stdout);
    return fflush(stdout) == 0 ? 0 : -EIO;
}

void table_print_help(const Column *cols, size_t n, FILE *f) {
    fputs("  -o, --output COLUMNS  comma-separated columns to show, in order (+COL,... adds):\n", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "                  %-10s %s%s\n", cols[i].name, cols[i].help ?: "",
                cols[i].hidden ? " (not shown by default)" : "");
    fputs("  -n, --noheadings  no header line (--no-legend is the same)\n"
          "  -r, --raw       raw output: one space between cells, blanks escaped\n"
          "  -P, --pairs     KEY=\"value\" pairs, one line per row (names as shell variables)\n"
          "  -J              with -o: the chosen columns as JSON (sizes in bytes); without\n"
          "                  -o: as --json\n"
          "  -b, --bytes     sizes in bytes, durations in seconds, not rounded\n",
          f);
}
