/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* What the files of src/api/ share (api-server.c, api-operation.c,
 * api-events.c); not exported. */

#include <microhttpd.h>
#include <sys/un.h>

#include "api.h"

typedef struct ApiEvents ApiEvents;

/* api-cache.c: rendered GET answers (see there why). An entry is served
 * while younger than API_CACHE_TTL and nothing changed since. */
#define API_CACHE_TTL (250 * USEC_PER_MSEC)
typedef struct ApiCacheEntry ApiCacheEntry;
typedef struct ApiCache {
    ApiCacheEntry *entries;
    size_t n;
} ApiCache;
/* The entry for route and param (NULL: none) if still fresh at now, or NULL. */
const ApiCacheEntry *api_cache_get(ApiCache *c, ApiRouteId route, const char *param, usec_t now);
const char *api_cache_entry_body(const ApiCacheEntry *e, size_t *ret_len, unsigned *ret_status);
/* Keeps a copy of body as the answer of route and param. Returns 0, -ENOMEM. */
int api_cache_put(ApiCache *c, ApiRouteId route, const char *param, unsigned status, const char *body, size_t len,
                  usec_t now);
/* Drops every entry (something changed). */
void api_cache_clear(ApiCache *c);
void api_cache_done(ApiCache *c);

/* The priority of the API's sources: before the engine's (NORMAL). */
#define API_EVENT_PRIORITY (SD_EVENT_PRIORITY_NORMAL - 10)

#define API_STATUS_MIN 100
#define API_STATUS_MAX 599

/* One client connection (MHD's socket context). Kept in a list ordered by
 * deadline: every deadline is "now + request_timeout" when set, so
 * appending keeps the order and the head is always the next to expire. A
 * request that waits for an operation, or streams events, leaves the list
 * while it does (it is long-lived on purpose). */
typedef struct ApiConn {
    struct Api *api;
    struct MHD_Connection *mhd;
    int fd;                        /* MHD's; never closed here */
    usec_t deadline;
    bool linked;                   /* in the deadline list */
    bool killed;                   /* shut down on deadline; MHD closes it */
    struct ApiConn *prev, *next;
    int peer_error;                /* <0: credentials unknown: reads only */
    uid_t uid;
    gid_t gid;
    pid_t pid;
    gid_t *groups;
    size_t n_groups;
    bool read_only;                /* came in on api.readonly_socket */
    bool metrics_only;             /* came in on api.metrics_listen (TCP): GET /metrics only */
} ApiConn;

/* One request (MHD's per-request context). */
typedef struct ApiRequest {
    struct Api *api;
    ApiConn *conn;
    struct MHD_Connection *mhd;
    bool routed;
    ApiRoute route;
    const ApiRouteSpec *spec;
    ApiQuery query;
    char *body;
    size_t body_len;
    size_t body_allocated;
    bool too_large;
    bool responded;                /* a response was queued */
    unsigned status;
    usec_t started;

    /* Waiting for an operation (suspended until it ends or the wait is over). */
    ApiOperation *operation;
    json_object *provisional;      /* the handler's body for a 202 */
    sd_event_source *wait_timer;
    bool suspended;
    bool wait_over;
    bool answer_operation;         /* GET /v1/operations/{id}: answer its resource */
    struct ApiRequest *wait_prev, *wait_next;

    /* Streaming events. */
    bool streaming;
    uint64_t cursor;               /* the last event sequence sent */
    bool heartbeat;                /* write a keep-alive newline */
    struct ApiRequest *stream_prev, *stream_next;

    /* A byte stream from the handler's fd (api-pipe.c). */
    ApiStream *pipe;
} ApiRequest;

struct Api {
    sd_event *event;
    struct MHD_Daemon *mhd;
    /* Told when an operation changed (api_server_operation_changed). */
    void (*operation_changed)(Api *api, ApiOperation *op, bool ended);
    sd_event_source *io;
    sd_event_source *timer;
    sd_event_source *deadline_timer;
    sd_event_source *heartbeat_timer;
    sd_event_source *ro_io;        /* the read-only socket (api-readonly.c) */
    sd_event_source *metrics_io;   /* the TCP /metrics listener (api-metrics-listen.c) */
    struct sockaddr_un ro_addr;
    socklen_t ro_addr_len;
    ApiServerConfig config;
    ApiOps ops;
    void *userdata;
    ApiState state;
    bool freeing;

    ApiConn *conns_head, *conns_tail;
    unsigned n_conns;

    ApiCache cache;                /* rendered GET answers */
    ApiOperation *operations;      /* newest first */
    ApiEvents *events;
    ApiRequest *waiting;           /* requests suspended on an operation */
    ApiRequest *streams;           /* event streams (suspended or not) */
    unsigned n_streams;
    ApiStream *pipes;              /* byte streams (api-pipe.c) */

    /* Own metrics. requests[route + 1][status - 100]; route -1: unrouted. */
    uint64_t requests[_API_ROUTE_MAX + 1][API_STATUS_MAX - API_STATUS_MIN + 1];
    MetricsHistogram latency[_API_ROUTE_MAX];
    uint64_t connections_total;
    uint64_t request_timeouts_total;
};

typedef struct ApiOperationStep {
    char *description;
    int state;                   /* 0 running, 1 done, -1 failed */
    char *message;
    usec_t started_at, ended_at; /* CLOCK_REALTIME */
} ApiOperationStep;

struct ApiOperation {
    unsigned n_ref;
    Api *api;                    /* NULL once the Api is gone */
    ApiOperation *next;          /* the Api's list, newest first */
    char id[24];
    ApiRouteId kind;
    char *resource;
    char *blocked;               /* api_operation_set_blocked(): why it makes no progress, or NULL */
    ApiOperationState state;
    usec_t created_at, updated_at, done_mono; /* REALTIME, REALTIME, MONOTONIC */
    ApiOperationStep *steps;
    size_t n_steps;
    unsigned status;
    json_object *result;
    ApiError error;
};

/* api-operation.c: an operation of route `kind`, in the Api's list. */
int api_operation_create(Api *api, ApiRouteId kind, ApiOperation **ret);
/* Drops finished operations past their keep time, and all of them at
 * the end (the Api is freed: references stay valid, detached). */
void api_operations_expire(Api *api, bool all);

/* api-dispatch.c: the operation changed (a step, or it ended): waiting
 * requests and the event stream are told. api-operation.c calls it through
 * Api.operation_changed, which api_new() sets: operations sit below the
 * dispatch that waits on them. */
void api_server_operation_changed(Api *api, ApiOperation *op, bool ended);

/* api-events.c: the ring. */
int api_events_new(ApiEvents **ret);
ApiEvents *api_events_free(ApiEvents *e);
/* Appends an event (takes fields, an object). Returns its sequence number. */
uint64_t api_events_append(ApiEvents *e, const char *type, json_object *fields);
/* The first event after `since` at or after *cursor: its text (a line
 * with its newline, owned by the ring) and sequence; NULL when none.
 * An event that fell out of the ring is skipped (the gap shows in seq). */
const char *api_events_next(ApiEvents *e, uint64_t after, uint64_t *ret_seq);
uint64_t api_events_last(const ApiEvents *e);

static inline ApiOperation **api_operations_head(Api *api) {
    return &api->operations;
}

/* api-conn.c: a new connection joins the deadline list, a closed one
 * leaves it; the timer follows the list's head. */
void api_conn_track(Api *api, ApiConn *c);
void api_conn_untrack(Api *api, ApiConn *c);
void api_conn_deadline_rearm(Api *api);
/* Connections leave and rejoin the deadline list (a stream has none; a
 * request's deadline restarts when it is answered). */
void api_conn_exempt(Api *api, ApiConn *c);
void api_conn_reset_deadline(Api *api, ApiConn *c);
/* After MHD_resume_connection: makes the loop run MHD at its next turn. */
void api_mhd_kick(Api *api);
/* api-own-metrics.c: the layoutd_api_* families. */
int api_write_own_metrics(Api *api, MetricsWriter *w);

/* api-dispatch.c: the request handler and its helpers, called by the
 * MHD glue in api-server.c. */
enum MHD_Result api_dispatch_request(Api *api, struct MHD_Connection *c, const char *url, const char *method,
                                     const char *upload_data, size_t *upload_data_size, void **req_cls);
void api_dispatch_completed(Api *api, ApiRequest *req, enum MHD_RequestTerminationCode toe);
/* Resumes every suspended request (stop, free): they answer at once. */
void api_dispatch_resume_all(Api *api);

/* api-pipe.c: byte-stream answers (ApiStream, api.h). */
int api_pipe_new(Api *api, ApiRequest *req, ApiStream **ret);
/* The handler gave an fd: queue the streamed answer. */
enum MHD_Result api_pipe_queue(ApiRequest *req);
bool api_pipe_has_fd(const ApiStream *s);
/* The request is over: cancels a producer still running, frees. NULL ok. */
void api_pipe_free(ApiStream *s);
void api_pipe_resume_all(Api *api);
/* The stream heartbeat: every stream writes a newline on its next turn. */
void api_dispatch_heartbeat(Api *api);

/* api-readonly.c: whether the connection on fd came in on the read-only
 * socket (its local address is that socket's path). */
bool api_readonly_connection(const Api *api, int fd);
/* api-metrics-listen.c: whether the connection on fd is a TCP one, which
 * only the metrics listener accepts (every other socket is AF_UNIX). */
bool api_metrics_connection(int fd);
/* api-conn.c: accepts every connection waiting on listen_fd and hands it
 * to the MHD daemon (which closes it if it does not take it). */
void api_accept_into_mhd(Api *api, int listen_fd);
