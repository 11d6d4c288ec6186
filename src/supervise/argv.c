/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "argv.h"
#include "util.h"

typedef struct Buf {
    char *p;
    size_t n, cap;
} Buf;

static int buf_append(Buf *b, const char *s, size_t len) {
    if (b->n + len + 1 > b->cap) {
        size_t cap = MAX(b->cap * 2, b->n + len + 1);
        cap = MAX(cap, (size_t) 64);
        char *p = realloc(b->p, cap);
        if (!p)
            return -ENOMEM;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = 0;
    return 0;
}

static int buf_append_str(Buf *b, const char *s) {
    return buf_append(b, s ?: "", strlen(s ?: ""));
}

static int expand_placeholder(Buf *b, const char *name, size_t len, const ArgvValues *v) {
#define IS(n) (len == strlen(n) && strncmp(name, n, len) == 0)
    if (IS("id")) {
        if (!v->id)
            return -EINVAL;
        return buf_append_str(b, v->id);
    }
    if (IS("tenant"))
        return buf_append_str(b, v->tenant);
    if (IS("state_dir")) {
        if (!v->state_dir)
            return -EINVAL;
        return buf_append_str(b, v->state_dir);
    }
    if (IS("mountpoint")) {
        if (!v->mountpoint)
            return -EINVAL;
        return buf_append_str(b, v->mountpoint);
    }
    if (IS("volume"))
        return buf_append_str(b, v->volume);
    if (IS("content_dir"))
        return buf_append_str(b, v->content_dirs ? v->content_dirs[0] : NULL);
    if (IS("content_dirs")) {
        for (size_t i = 0; v->content_dirs && v->content_dirs[i]; i++) {
            int r = buf_append_str(b, i > 0 ? "," : "");
            if (r < 0)
                return r;
            r = buf_append_str(b, v->content_dirs[i]);
            if (r < 0)
                return r;
        }
        return buf_append_str(b, "");
    }
    if (IS("shards")) {
        char n[32];
        snprintf(n, sizeof n, "%zu", strv_length(v->content_dirs));
        return buf_append_str(b, n);
    }
#undef IS
    return -EINVAL;
}

static int expand_one(const char *t, const ArgvValues *v, char **ret) {
    Buf b = {};
    int r = buf_append_str(&b, ""); /* an empty element stays "" */
    if (r < 0)
        return r;
    for (const char *p = t; *p;) {
        if (p[0] == '{' && p[1] == '{') {
            r = buf_append(&b, "{", 1);
            p += 2;
        } else if (p[0] == '}' && p[1] == '}') {
            r = buf_append(&b, "}", 1);
            p += 2;
        } else if (p[0] == '{') {
            const char *e = strchr(p + 1, '}');
            if (!e) {
                r = -EINVAL;
                break;
            }
            r = expand_placeholder(&b, p + 1, e - p - 1, v);
            p = e + 1;
        } else if (p[0] == '}') {
            r = -EINVAL; /* a stray closing brace is a typo, not text */
        } else {
            size_t n = strcspn(p, "{}");
            r = buf_append(&b, p, n);
            p += n;
        }
        if (r < 0)
            break;
    }
    if (r < 0) {
        free(b.p);
        return r;
    }
    *ret = b.p;
    return 0;
}

int argv_template_expand(const char *const *tmpl, const ArgvValues *v, char ***ret) {
    if (!tmpl || !tmpl[0] || !v || !ret)
        return -EINVAL;
    size_t n = strv_length(tmpl);
    _cleanup_strv_free_ char **out = calloc(n + 1, sizeof(char *));
    if (!out)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        int r = expand_one(tmpl[i], v, &out[i]);
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(out);
    return 0;
}
