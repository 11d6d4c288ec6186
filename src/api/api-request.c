/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Request bodies: strict JSON parsing and validation of POST /v1/workspaces. */

#include <stdint.h>
#include <stdio.h>

#include "api-route.h"
#include "escape.h"

/* Bodies are small flat objects; a deep document is an attack, not a request. */
#define API_JSON_DEPTH 8

/*
 * A scan of the raw text before json-c sees it, for the two things json-c
 * would silently paper over: a key given twice in one object (json-c keeps
 * the last: {"id":"a","id":"b"} would create "b") and a NUL inside a
 * string (json-c keys and C strings end there: "nul\u0000../etc" would
 * become "nul"). Only the structure is followed; json-c checks the rest.
 */
typedef struct Scan {
    const char *s;
    size_t len, pos;
    unsigned depth;
} Scan;

static int hexval(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A string at pos (the opening quote), decoded into out (when not NULL).
 * Returns -EINVAL with *why on a NUL or a malformed escape, 0. */
static int scan_string(Scan *sc, char **out, size_t *out_len, const char **why) {
    size_t cap = 0, n = 0;
    char *buf = NULL;
    sc->pos++; /* the quote */
    while (sc->pos < sc->len) {
        unsigned char c = (unsigned char) sc->s[sc->pos++];
        uint32_t cp;
        if (c == '"') {
            if (out) {
                *out = buf ? buf : strdup("");
                *out_len = n;
                if (!*out)
                    return -ENOMEM;
            } else
                free(buf);
            return 0;
        }
        if (c == '\\') {
            if (sc->pos >= sc->len)
                break;
            char e = sc->s[sc->pos++];
            if (e != 'u') {
                cp = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : (uint32_t) e;
            } else {
                if (sc->pos + 4 > sc->len)
                    break;
                int a = hexval(sc->s[sc->pos]), b = hexval(sc->s[sc->pos + 1]), d = hexval(sc->s[sc->pos + 2]),
                    f = hexval(sc->s[sc->pos + 3]);
                if (a < 0 || b < 0 || d < 0 || f < 0)
                    break;
                cp = (uint32_t) (a << 12 | b << 8 | d << 4 | f);
                sc->pos += 4;
            }
        } else
            cp = c;
        if (cp == 0) {
            free(buf);
            *why = "a string holds a NUL character (\\u0000)";
            return -EINVAL;
        }
        if (!out)
            continue;
        /* Keys are compared as decoded code units; UTF-8 for \u escapes. */
        if (n + 4 >= cap) {
            cap = MAX(cap * 2, 32u);
            char *t = realloc(buf, cap);
            if (!t) {
                free(buf);
                return -ENOMEM;
            }
            buf = t;
        }
        if (cp < 0x80)
            buf[n++] = (char) cp;
        else if (cp < 0x800) {
            buf[n++] = (char) (0xc0 | cp >> 6);
            buf[n++] = (char) (0x80 | (cp & 0x3f));
        } else {
            buf[n++] = (char) (0xe0 | cp >> 12);
            buf[n++] = (char) (0x80 | ((cp >> 6) & 0x3f));
            buf[n++] = (char) (0x80 | (cp & 0x3f));
        }
        buf[n] = 0;
    }
    free(buf);
    *why = NULL; /* malformed: json-c says how */
    return -EINVAL;
}

static void skip_ws(Scan *sc) {
    while (sc->pos < sc->len && strchr(" \t\r\n", sc->s[sc->pos]))
        sc->pos++;
}

static int scan_value(Scan *sc, const char **why);

static int scan_object(Scan *sc, const char **why) {
    char **keys = NULL;
    size_t *lens = NULL, n = 0;
    int r = 0;
    sc->pos++; /* { */
    for (;;) {
        skip_ws(sc);
        if (sc->pos >= sc->len) {
            r = -EINVAL;
            break;
        }
        if (sc->s[sc->pos] == '}') {
            sc->pos++;
            break;
        }
        if (sc->s[sc->pos] == ',') {
            sc->pos++;
            continue;
        }
        if (sc->s[sc->pos] != '"') {
            r = -EINVAL;
            break;
        }
        char *k = NULL;
        size_t kl = 0;
        r = scan_string(sc, &k, &kl, why);
        if (r < 0)
            break;
        for (size_t i = 0; i < n; i++)
            if (lens[i] == kl && memcmp(keys[i], k, kl) == 0) {
                *why = "a key is given twice in one object";
                r = -EINVAL;
            }
        char **tk = r >= 0 ? realloc(keys, sizeof(char *) * (n + 1)) : NULL;
        size_t *tl = tk ? realloc(lens, sizeof(size_t) * (n + 1)) : NULL;
        if (tk)
            keys = tk;
        if (!tk || !tl) {
            free(k);
            r = r < 0 ? r : -ENOMEM;
            break;
        }
        lens = tl;
        keys[n] = k;
        lens[n++] = kl;
        skip_ws(sc);
        if (sc->pos >= sc->len || sc->s[sc->pos] != ':') {
            r = -EINVAL;
            break;
        }
        sc->pos++;
        r = scan_value(sc, why);
        if (r < 0)
            break;
    }
    for (size_t i = 0; i < n; i++)
        free(keys[i]);
    free(keys);
    free(lens);
    return r;
}

static int scan_value(Scan *sc, const char **why) {
    skip_ws(sc);
    if (sc->pos >= sc->len)
        return -EINVAL;
    if (++sc->depth > API_JSON_DEPTH + 1)
        return -EINVAL; /* json-c's depth limit words it */
    int r = 0;
    char c = sc->s[sc->pos];
    if (c == '{')
        r = scan_object(sc, why);
    else if (c == '"')
        r = scan_string(sc, NULL, NULL, why);
    else if (c == '[') {
        sc->pos++;
        for (;;) {
            skip_ws(sc);
            if (sc->pos >= sc->len) {
                r = -EINVAL;
                break;
            }
            if (sc->s[sc->pos] == ']') {
                sc->pos++;
                break;
            }
            if (sc->s[sc->pos] == ',') {
                sc->pos++;
                continue;
            }
            r = scan_value(sc, why);
            if (r < 0)
                break;
        }
    } else
        while (sc->pos < sc->len && !strchr(",}] \t\r\n", sc->s[sc->pos]))
            sc->pos++; /* a number, true, false, null */
    sc->depth--;
    return r;
}

int api_json_parse(const char *body, size_t len, json_object **ret, ApiError *err) {
    if (!body || len == 0)
        return api_fail(err, -EINVAL, API_CODE_INVALID_JSON, "Empty request body, expected a JSON object");
    if (len > INT32_MAX)
        return api_fail(err, -EINVAL, API_CODE_INVALID_JSON, "Request body too large");

    json_tokener *tok = json_tokener_new_ex(API_JSON_DEPTH);
    if (!tok)
        return -ENOMEM;
    /* Strict: no comments, no single quotes, no trailing commas. */
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    json_object *o = json_tokener_parse_ex(tok, body, (int) len);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t used = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);

    if (!o) {
        if (e == json_tokener_continue)
            return api_fail(err, -EINVAL, API_CODE_INVALID_JSON, "Invalid JSON: unexpected end of input");
        return api_fail(err, -EINVAL, API_CODE_INVALID_JSON, "Invalid JSON at byte %zu: %s",
                        used, json_tokener_error_desc(e));
    }
    /* Only whitespace may follow the document. */
    for (size_t i = used; i < len; i++)
        if (!strchr(" \t\r\n", body[i])) {
            json_object_put(o);
            return api_fail(err, -EINVAL, API_CODE_INVALID_JSON, "Invalid JSON: trailing data at byte %zu", i);
        }
    /* json-c accepted it; now what it would have hidden. */
    Scan sc = { .s = body, .len = len };
    const char *why = NULL;
    int k = scan_value(&sc, &why);
    if (k == -ENOMEM) {
        json_object_put(o);
        return k;
    }
    if (k < 0 && why) {
        json_object_put(o);
        return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "Refused JSON: %s", why);
    }
    *ret = o;
    return 0;
}

bool api_label_key_is_valid(const char *k) {
    /* Prometheus-label-like keys, plus '.', '-' and '/' as in
     * Kubernetes label keys ("team", "app.kubernetes.io/name"). */
    if (isempty(k) || strlen(k) > API_LABEL_KEY_MAX)
        return false;
    for (const char *p = k; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_.-/", *p)))
            return false;
    return true;
}

bool api_label_value_is_valid(const char *v) {
    /* Valid UTF-8 without control characters or bidirectional marks
     * (src/shared/escape.h): values end up in tables, in logs and in
     * metrics, where they must read as what they are. */
    return v && strlen(v) <= API_LABEL_VALUE_MAX && str_is_terminal_safe(v);
}

void api_workspace_request_done(ApiWorkspaceRequest *r) {
    if (!r)
        return;
    free(r->id);
    free(r->tenant);
    json_object_put(r->labels);
    *r = (ApiWorkspaceRequest) {};
}

static int parse_quota(json_object *v, uint64_t *ret, ApiError *err) {
    switch (json_object_get_type(v)) {
    case json_type_null:
        *ret = 0;
        return 0;
    case json_type_int: {
        /* json-c keeps integers as int64 or uint64; reject negatives. */
        errno = 0;
        int64_t i = json_object_get_int64(v);
        if (i < 0)
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "\"quota\" must not be negative");
        *ret = json_object_get_uint64(v);
        return 0;
    }
    case json_type_string: {
        uint64_t q;
        if (layout_parse_size(json_object_get_string(v), &q) < 0)
            return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                            "\"quota\" must be bytes or a size such as \"10G\"");
        *ret = q;
        return 0;
    }
    default:
        return api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                        "\"quota\" must be an integer (bytes) or a size string");
    }
}

int api_workspace_request_parse(const char *body, size_t len, ApiWorkspaceRequest *ret, ApiError *err) {
    json_object *root = NULL;
    int r = api_json_parse(body, len, &root, err);
    if (r < 0)
        return r;

    ApiWorkspaceRequest req = {};
    if (!json_object_is_type(root, json_type_object)) {
        r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "The body must be a JSON object");
        goto fail;
    }

    json_object_object_foreach(root, key, val) {
        if (streq(key, "id")) {
            const char *s = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
            if (!s || !layout_name_is_valid(s, API_ID_MAX)) {
                r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                             "\"id\" must be a string of [a-z0-9][a-z0-9-]*, at most %d characters", API_ID_MAX);
                goto fail;
            }
            free(req.id);
            if (!(req.id = strdup(s))) {
                r = -ENOMEM;
                goto fail;
            }
        } else if (streq(key, "tenant")) {
            if (json_object_is_type(val, json_type_null))
                continue;
            const char *s = json_object_is_type(val, json_type_string) ? json_object_get_string(val) : NULL;
            if (!s || !layout_name_is_valid(s, LAYOUT_NAME_MAX)) {
                r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                             "\"tenant\" must be a string of [a-z0-9][a-z0-9-]*, at most %d characters", LAYOUT_NAME_MAX);
                goto fail;
            }
            free(req.tenant);
            if (!(req.tenant = strdup(s))) {
                r = -ENOMEM;
                goto fail;
            }
        } else if (streq(key, "quota")) {
            r = parse_quota(val, &req.quota, err);
            if (r < 0)
                goto fail;
        } else if (streq(key, "labels")) {
            if (json_object_is_type(val, json_type_null))
                continue;
            if (!json_object_is_type(val, json_type_object)) {
                r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "\"labels\" must be an object of strings");
                goto fail;
            }
            if (json_object_object_length(val) > API_LABELS_MAX) {
                r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "At most %d labels", API_LABELS_MAX);
                goto fail;
            }
            json_object_object_foreach(val, lk, lv) {
                if (!api_label_key_is_valid(lk)) {
                    r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                                 "Invalid label key (use [A-Za-z0-9_.-/], at most %d characters)", API_LABEL_KEY_MAX);
                    goto fail;
                }
                if (!json_object_is_type(lv, json_type_string) || !api_label_value_is_valid(json_object_get_string(lv))) {
                    r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                                 "Label values must be UTF-8 strings without control characters or bidirectional "
                                 "overrides, at most %d bytes",
                                 API_LABEL_VALUE_MAX);
                    goto fail;
                }
            }
            json_object_put(req.labels);
            req.labels = json_object_get(val);
        } else {
            r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                         "Unknown field \"%.64s\" (known: id, tenant, quota, labels)", key);
            goto fail;
        }
    }
    if (!req.id) {
        r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST, "\"id\" is required");
        goto fail;
    }
    json_object_put(root);
    *ret = req;
    return 0;

fail:
    api_workspace_request_done(&req);
    json_object_put(root);
    return r;
}

int api_quota_request_parse(const char *body, size_t len, uint64_t *ret, ApiError *err) {
    json_object *root = NULL, *v = NULL;
    int r = api_json_parse(body, len, &root, err);
    if (r < 0)
        return r;
    if (!json_object_is_type(root, json_type_object) || !json_object_object_get_ex(root, "quota", &v) ||
        json_object_object_length(root) != 1)
        r = api_fail(err, -EINVAL, API_CODE_BAD_REQUEST,
                     "The body must be {\"quota\": SIZE}, with bytes, a size such as \"10G\", or null for none");
    else
        r = parse_quota(v, ret, err);
    json_object_put(root);
    return r;
}
