/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The event ring behind GET /v1/events: the latest API_EVENTS_KEEP events,
 * each rendered once as an NDJSON line with its sequence number, so that a
 * stream (or ?since=N after a reconnect) just copies lines.
 */
#include <stdio.h>
#include <time.h>

#include "api-internal.h"
#include "util.h"

#define API_EVENTS_KEEP 4096

typedef struct ApiEvent {
    uint64_t seq;
    char *line;
} ApiEvent;

struct ApiEvents {
    ApiEvent ring[API_EVENTS_KEEP];
    uint64_t last;               /* sequence of the newest event; 0: none yet */
};

int api_events_new(ApiEvents **ret) {
    ApiEvents *e = calloc(1, sizeof(*e));
    if (!e)
        return -ENOMEM;
    *ret = e;
    return 0;
}

ApiEvents *api_events_free(ApiEvents *e) {
    if (!e)
        return NULL;
    for (size_t i = 0; i < API_EVENTS_KEEP; i++)
        free(e->ring[i].line);
    free(e);
    return NULL;
}

uint64_t api_events_append(ApiEvents *e, const char *type, json_object *fields) {
    json_object *o = json_object_new_object();
    if (!o) {
        json_object_put(fields);
        return 0;
    }
    uint64_t seq = e->last + 1;
    json_object_object_add(o, "seq", json_object_new_uint64(seq));
    json_object_object_add(o, "time", json_object_new_double((double) now_usec(CLOCK_REALTIME) / USEC_PER_SEC));
    json_object_object_add(o, "type", json_object_new_string(type));
    if (fields && json_object_is_type(fields, json_type_object)) {
        json_object_object_foreach(fields, k, v) json_object_object_add(o, k, json_object_get(v));
    }
    json_object_put(fields);
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    char *line = s ? malloc(len + 2) : NULL;
    if (line) {
        memcpy(line, s, len);
        line[len] = '\n';
        line[len + 1] = 0;
    }
    json_object_put(o);
    if (!line)
        return 0;
    ApiEvent *slot = &e->ring[seq % API_EVENTS_KEEP];
    free(slot->line);
    *slot = (ApiEvent) { .seq = seq, .line = line };
    e->last = seq;
    return seq;
}

const char *api_events_next(ApiEvents *e, uint64_t after, uint64_t *ret_seq) {
    if (after >= e->last)
        return NULL;
    /* The oldest still in the ring. */
    uint64_t first = e->last >= API_EVENTS_KEEP ? e->last - API_EVENTS_KEEP + 1 : 1;
    uint64_t want = MAX(after + 1, first);
    const ApiEvent *ev = &e->ring[want % API_EVENTS_KEEP];
    if (ev->seq != want || !ev->line)
        return NULL;
    *ret_seq = want;
    return ev->line;
}

uint64_t api_events_last(const ApiEvents *e) {
    return e->last;
}

/* ---- emitting: the ring, then every stream waiting for a line ---- */

uint64_t api_event_emit(Api *api, const char *type, json_object *fields) {
    if (!api || !api->events) {
        json_object_put(fields);
        return 0;
    }
    uint64_t seq = api_events_append(api->events, type, fields);
    api_cache_clear(&api->cache); /* an event is a change */
    /* Wake the suspended streams: they have a line to send. */
    bool resumed = false;
    for (ApiRequest *r = api->streams; r; r = r->stream_next)
        if (r->suspended) {
            r->suspended = false;
            MHD_resume_connection(r->mhd);
            resumed = true;
        }
    if (resumed && api->mhd)
        api_mhd_kick(api);
    return seq;
}
