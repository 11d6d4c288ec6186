/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Rendered answers of the GET routes that cost the most to build (the
 * volume and workspace lists, /metrics' engine part), kept for a short
 * while. With 43 volumes, /v1/volumes took ~500 us of json-c allocation
 * and printing per request, so one polling dashboard cost the loop more
 * than everything else it did. An answer is served again only while
 * nothing has changed: the agent drops the whole cache on every change it
 * makes known (an event, an operation, a mutating request, a new
 * observation: api_server_changed()), and an entry never outlives
 * API_CACHE_TTL, which bounds how stale the figures that drift without
 * an event (uptime, cgroup counters, used bytes between observations)
 * can be.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api-internal.h"
#include "util.h"

/* A cache of more entries is dropped whole (a client walking every
 * workspace by id); the next requests fill it again. */
#define API_CACHE_MAX 256

struct ApiCacheEntry {
    ApiRouteId route;
    char *param;
    unsigned status;
    char *body;
    size_t len;
    usec_t made;                 /* CLOCK_MONOTONIC */
};

void api_cache_clear(ApiCache *c) {
    for (size_t i = 0; i < c->n; i++) {
        free(c->entries[i].param);
        free(c->entries[i].body);
    }
    c->n = 0;
}

void api_cache_done(ApiCache *c) {
    api_cache_clear(c);
    c->entries = mfree(c->entries);
}

const ApiCacheEntry *api_cache_get(ApiCache *c, ApiRouteId route, const char *param, usec_t now) {
    for (size_t i = 0; i < c->n; i++) {
        ApiCacheEntry *e = &c->entries[i];
        if (e->route == route && streq(e->param, param ?: ""))
            return now - e->made < API_CACHE_TTL ? e : NULL;
    }
    return NULL;
}

const char *api_cache_entry_body(const ApiCacheEntry *e, size_t *ret_len, unsigned *ret_status) {
    if (ret_len)
        *ret_len = e->len;
    if (ret_status)
        *ret_status = e->status;
    return e->body;
}

int api_cache_put(ApiCache *c, ApiRouteId route, const char *param, unsigned status, const char *body, size_t len,
                  usec_t now) {
    ApiCacheEntry *e = NULL;
    for (size_t i = 0; i < c->n && !e; i++)
        if (c->entries[i].route == route && streq(c->entries[i].param, param ?: ""))
            e = &c->entries[i];
    if (!e) {
        if (c->n >= API_CACHE_MAX)
            api_cache_clear(c);
        if (!c->entries && !(c->entries = calloc(API_CACHE_MAX, sizeof(*c->entries))))
            return -ENOMEM;
        e = &c->entries[c->n];
        *e = (ApiCacheEntry) { .route = route, .param = strdup(param ?: "") };
        if (!e->param)
            return -ENOMEM;
        c->n++;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        return -ENOMEM;
    memcpy(copy, body, len);
    copy[len] = 0;
    free(e->body);
    e->body = copy;
    e->len = len;
    e->status = status;
    e->made = now;
    return 0;
}
