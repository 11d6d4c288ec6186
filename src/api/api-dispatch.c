/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One request, from its headers to its answer: routing and access (before
 * the body is read), the query, the body, the route's handler, and then
 * one of three ends:
 *   - an answer at once;
 *   - a wait for the request's operation: the connection is suspended
 *     (MHD_suspend_connection) until the operation ends or the wait is
 *     over, then resumed, and MHD calls us again to answer;
 *   - an event stream: chunked NDJSON from the event ring, suspended
 *     whenever there is nothing to send, resumed by api_event_emit.
 * Nothing here blocks the loop.
 */
#include <stdio.h>

#include "api-internal.h"
#include "util.h"

#define NDJSON_CONTENT_TYPE "application/x-ndjson"
#define STREAM_BLOCK (32 * 1024)

/* ---- answers ---------------------------------------------------------- */

static void count_request(Api *api, const ApiRequest *req) {
    unsigned st = CLAMP(req->status, API_STATUS_MIN, API_STATUS_MAX);
    size_t ri = req->routed ? (size_t) req->route.id + 1 : 0;
    api->requests[ri][st - API_STATUS_MIN]++;
    if (req->routed && req->started > 0)
        metrics_histogram_observe(&api->latency[req->route.id],
                                  (double) (now_usec(CLOCK_MONOTONIC) - req->started) / USEC_PER_SEC);
}

static enum MHD_Result queue_response(ApiRequest *req, unsigned status, struct MHD_Response *resp,
                                      const char *content_type, const char *allow, const char *location) {
    (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (allow)
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (location)
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    enum MHD_Result ok = MHD_queue_response(req->mhd, status, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES) {
        req->status = status;
        req->responded = true;
    }
    return ok;
}

static enum MHD_Result queue_text(ApiRequest *req, unsigned status, char *text, size_t len, const char *content_type,
                                  const char *allow, const char *location) {
    /* MHD takes the buffer and free()s it. */
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO; /* MHD closes the connection */
    }
    return queue_response(req, status, resp, content_type, allow, location);
}

static enum MHD_Result queue_copy(ApiRequest *req, unsigned status, const char *body, size_t len,
                                  const char *content_type) {
    char *text = malloc(len + 1);
    if (!text)
        return MHD_NO;
    memcpy(text, body, len);
    text[len] = 0;
    return queue_text(req, status, text, len, content_type, NULL, NULL);
}

static enum MHD_Result queue_json(ApiRequest *req, unsigned status, json_object *o, const char *allow,
                                  const char *location) {
    size_t len;
    const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    if (!s)
        return MHD_NO;
    char *text = malloc(len + 2);
    if (!text)
        return MHD_NO;
    memcpy(text, s, len);
    text[len] = '\n'; /* so that `curl` output ends with a newline */
    text[len + 1] = 0;
    /* A cached route's 200 is kept as sent (a failure to keep it only
     * costs the next request a render). */
    if (req->spec && req->spec->cached && status == 200)
        (void) api_cache_put(&req->api->cache, req->spec->id, req->route.param, status, text, len + 1,
                             now_usec(CLOCK_MONOTONIC));
    return queue_text(req, status, text, len + 1, "application/json", allow, location);
}

static enum MHD_Result queue_error(ApiRequest *req, ApiError *err, int r, const char *allow) {
    api_error_from_errno(err, r);
    json_object *o = NULL;
    if (api_error_to_json(err, &o) < 0)
        return MHD_NO;
    enum MHD_Result ok = queue_json(req, err->status, o, allow, NULL);
    json_object_put(o);
    return ok;
}

static enum MHD_Result serve_metrics(Api *api, ApiRequest *req) {
    _cleanup_(metrics_writer_freep) MetricsWriter *w = NULL;
    _cleanup_free_ char *engine = NULL;
    ApiError err = {};
    usec_t now = now_usec(CLOCK_MONOTONIC);
    int r = metrics_writer_new(&w);
    if (r < 0)
        return queue_error(req, &err, r, NULL);
    const ApiCacheEntry *e = api_cache_get(&api->cache, API_ROUTE_METRICS, NULL, now);
    if (!e && api->ops.metrics) {
        r = api->ops.metrics(api->userdata, w, &err);
        if (r < 0)
            return queue_error(req, &err, r, NULL);
        /* The engine's part is kept; the API's own families (request
         * counts, latencies) change with every request, so they are
         * always written fresh below. */
        size_t len;
        if ((r = metrics_writer_steal(w, &engine, &len)) < 0)
            return queue_error(req, &err, r, NULL);
        (void) api_cache_put(&api->cache, API_ROUTE_METRICS, NULL, 200, engine, len, now);
    } else if (e)
        engine = strdup(api_cache_entry_body(e, NULL, NULL));
    if (api->ops.metrics && !engine)
        return queue_error(req, &err, -ENOMEM, NULL);
    r = api_write_own_metrics(api, w);
    if (r < 0) {
        /* A family name clash with the engine's is a bug; say what. */
        if (r == -EEXIST)
            api_fail(&err, r, API_CODE_INTERNAL, "Metric family written twice");
        return queue_error(req, &err, r, NULL);
    }
    _cleanup_free_ char *own = NULL;
    size_t len;
    r = metrics_writer_steal(w, &own, &len);
    if (r < 0)
        return queue_error(req, &err, r, NULL);
    size_t elen = engine ? strlen(engine) : 0;
    char *text = malloc(elen + len + 1);
    if (!text)
        return queue_error(req, &err, -ENOMEM, NULL);
    if (elen)
        memcpy(text, engine, elen);
    memcpy(text + elen, own, len + 1);
    return queue_text(req, 200, text, elen + len, METRICS_CONTENT_TYPE, NULL, NULL);
}

/* ---- operations: answering, waiting ------------------------------------ */

static void operation_location(const ApiOperation *op, char *buf, size_t size) {
    snprintf(buf, size, "/v1/operations/%s", api_operation_id(op));
}

/* 202: the handler's provisional body (or {}) with the operation in it. */
static enum MHD_Result queue_accepted(ApiRequest *req) {
    char location[64];
    json_object *o = req->provisional ? json_object_get(req->provisional) : json_object_new_object(), *j = NULL;
    if (!o || api_operation_to_json(req->operation, &j) < 0) {
        json_object_put(o);
        return MHD_NO;
    }
    json_object_object_add(o, "operation", j);
    operation_location(req->operation, location, sizeof location);
    enum MHD_Result ok = queue_json(req, 202, o, NULL, location);
    json_object_put(o);
    return ok;
}

/* The answer of a request whose operation ended (or that asked for the
 * operation's resource). */
static enum MHD_Result queue_operation_result(ApiRequest *req) {
    json_object *body = NULL;
    unsigned status;
    enum MHD_Result ok;
    if (req->answer_operation) {
        if (api_operation_to_json(req->operation, &body) < 0)
            return MHD_NO;
        ok = queue_json(req, 200, body, NULL, NULL);
        json_object_put(body);
        return ok;
    }
    if (!api_operation_done(req->operation))
        return queue_accepted(req);
    if (api_operation_answer(req->operation, &status, &body) < 0)
        return MHD_NO;
    /* A create answers where the new resource is, as before operations. */
    char location[128] = "";
    if (status == 201 && req->operation->resource)
        snprintf(location, sizeof location, "%s", req->operation->resource);
    ok = queue_json(req, status, body, NULL, location[0] ? location : NULL);
    json_object_put(body);
    return ok;
}

static void wait_unlink(Api *api, ApiRequest *req) {
    if (req->wait_prev)
        req->wait_prev->wait_next = req->wait_next;
    else if (api->waiting == req)
        api->waiting = req->wait_next;
    if (req->wait_next)
        req->wait_next->wait_prev = req->wait_prev;
    req->wait_prev = req->wait_next = NULL;
}

static void resume(Api *api, ApiRequest *req) {
    if (!req->suspended)
        return;
    req->suspended = false;
    MHD_resume_connection(req->mhd);
}

static int on_wait_over(sd_event_source *s, uint64_t usec, void *userdata) {
    ApiRequest *req = userdata;
    req->wait_over = true;
    req->wait_timer = sd_event_source_disable_unref(req->wait_timer);
    resume(req->api, req);
    api_mhd_kick(req->api);
    return 0;
}

/* Parks the request until its operation ends or `wait` is over. */
static enum MHD_Result wait_for_operation(Api *api, ApiRequest *req, usec_t wait) {
    int r = sd_event_add_time_relative(api->event, &req->wait_timer, CLOCK_MONOTONIC, wait, 10 * USEC_PER_MSEC,
                                       on_wait_over, req);
    if (r < 0)
        return queue_operation_result(req); /* cannot wait: answer what there is */
    req->wait_next = api->waiting;
    if (api->waiting)
        api->waiting->wait_prev = req;
    api->waiting = req;
    /* A wait is long on purpose: not a slow client. */
    api_conn_exempt(api, req->conn);
    req->suspended = true;
    MHD_suspend_connection(req->mhd);
    return MHD_YES;
}

void api_server_operation_changed(Api *api, ApiOperation *op, bool ended) {
    bool resumed = false;
    api_cache_clear(&api->cache);
    if (ended)
        for (ApiRequest *r = api->waiting; r; r = r->wait_next)
            if (r->operation == op && r->suspended) {
                resume(api, r);
                resumed = true;
            }
    /* External polling: MHD handles a resumed connection on its next run,
     * which the re-armed timer (timeout 0 now) brings at once. */
    if (resumed && api->mhd)
        api_mhd_kick(api);
    json_object *f = json_object_new_object();
    if (f) {
        json_object_object_add(f, "operation", json_object_new_string(api_operation_id(op)));
        json_object_object_add(f, "kind", json_object_new_string(api_route_id_to_string(op->kind) ?: "?"));
        json_object_object_add(f, "state", json_object_new_string(api_operation_state_to_string(op->state)));
        json_object_object_add(f, "resource", op->resource ? json_object_new_string(op->resource) : NULL);
        if (op->n_steps > 0) {
            const ApiOperationStep *s = &op->steps[op->n_steps - 1];
            json_object_object_add(f, "step", json_object_new_string(s->description));
        }
        if (op->state == API_OPERATION_FAILED)
            json_object_object_add(f, "error", json_object_new_string(op->error.message));
    }
    (void) api_event_emit(api, "operation", f);
}

void api_dispatch_resume_all(Api *api) {
    for (ApiRequest *r = api->waiting; r; r = r->wait_next) {
        r->wait_over = true;
        resume(api, r);
    }
    for (ApiRequest *r = api->streams; r; r = r->stream_next)
        resume(api, r);
    api_pipe_resume_all(api);
}

void api_dispatch_heartbeat(Api *api) {
    for (ApiRequest *r = api->streams; r; r = r->stream_next) {
        r->heartbeat = true;
        resume(api, r);
    }
}

/* ---- the event stream --------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    ApiRequest *req = cls;
    Api *api = req->api;
    size_t n = 0;
    if (api->state == API_STATE_STOPPING)
        return MHD_CONTENT_READER_END_OF_STREAM;
    for (;;) {
        uint64_t seq;
        const char *line = api_events_next(api->events, req->cursor, &seq);
        if (!line)
            break;
        size_t len = strlen(line);
        if (len > max) {
            /* A line larger than MHD's block (never, at 32 KiB): skip it
             * rather than stall the stream. */
            req->cursor = seq;
            continue;
        }
        if (n + len > max)
            break;
        memcpy(buf + n, line, len);
        n += len;
        req->cursor = seq;
    }
    if (n == 0 && req->heartbeat) {
        buf[n++] = '\n';
    }
    req->heartbeat = false;
    if (n > 0)
        return (ssize_t) n;
    /* Nothing to send: park until an event (or a heartbeat) resumes us.
     * microhttpd.h: suspending from the content reader and returning 0 is
     * how an external event loop avoids a busy loop here. */
    req->suspended = true;
    MHD_suspend_connection(req->mhd);
    return 0;
}

static enum MHD_Result serve_events(Api *api, ApiRequest *req) {
    /* Without ?since the stream starts now; ?since=0 replays what the ring
     * still holds. A cursor beyond the last event comes from an earlier
     * agent (numbering starts again with each): it replays everything
     * this one holds, so a client resuming across a restart misses
     * nothing and sees the numbers go back. */
    uint64_t last = api_events_last(api->events);
    req->cursor = !req->query.has_since ? last : req->query.since > last ? 0 : req->query.since;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, STREAM_BLOCK, stream_read, req, NULL);
    if (!resp)
        return MHD_NO;
    req->streaming = true;
    req->stream_next = api->streams;
    if (api->streams)
        api->streams->stream_prev = req;
    api->streams = req;
    api->n_streams++;
    api_conn_exempt(api, req->conn);
    return queue_response(req, 200, resp, NDJSON_CONTENT_TYPE, NULL, NULL);
}

/* ---- dispatch ------------------------------------------------------------ */

static enum MHD_Result dispatch(Api *api, ApiRequest *req) {
    const ApiRouteSpec *spec = req->spec;
    ApiWorkspaceRequest wr = {};
    ApiCall call = { .route = spec, .param = req->route.param, .query = &req->query };
    enum MHD_Result ok;
    int r;

    if (spec->id == API_ROUTE_METRICS)
        return serve_metrics(api, req);
    if (spec->id == API_ROUTE_EVENTS)
        return serve_events(api, req);
    if (spec->id == API_ROUTE_OPERATIONS) {
        json_object *o = json_object_new_object(), *arr = json_object_new_array();
        for (ApiOperation *op = api->operations; op; op = op->next) {
            json_object *j = NULL;
            if (api_operation_to_json(op, &j) >= 0)
                json_object_array_add(arr, j);
        }
        json_object_object_add(o, "operations", arr);
        ok = queue_json(req, 200, o, NULL, NULL);
        json_object_put(o);
        return ok;
    }
    if (spec->id == API_ROUTE_OPERATION) {
        ApiOperation *op = NULL;
        for (ApiOperation *o = api->operations; o && !op; o = o->next)
            if (streq(o->id, req->route.param))
                op = o;
        if (!op) {
            api_fail(&call.error, -ENOENT, API_CODE_NOT_FOUND, "No operation '%s' (finished ones are kept 10 minutes)",
                     req->route.param);
            return queue_error(req, &call.error, -ENOENT, NULL);
        }
        req->operation = api_operation_ref(op);
        req->answer_operation = true;
        if (!api_operation_done(op) && req->query.has_wait && req->query.wait > 0)
            return wait_for_operation(api, req, req->query.wait);
        return queue_operation_result(req);
    }

    if (spec->cached) {
        const ApiCacheEntry *e = api_cache_get(&api->cache, spec->id, req->route.param, now_usec(CLOCK_MONOTONIC));
        if (e) {
            size_t len;
            unsigned status;
            const char *body = api_cache_entry_body(e, &len, &status);
            return queue_copy(req, status, body, len, "application/json");
        }
    }
    /* Whatever a change does, the answers kept so far may no longer be
     * true: dropped before it (and again by what it makes known after). */
    if (spec->mutating)
        api_cache_clear(&api->cache);

    ApiHandler h = api->ops.handlers[spec->id];
    if (!h) {
        api_fail(&call.error, -EOPNOTSUPP, API_CODE_NOT_SUPPORTED, "Not supported by this agent");
        return queue_error(req, &call.error, -EOPNOTSUPP, NULL);
    }
    if (spec->body == API_BODY_WORKSPACE) {
        r = api_workspace_request_parse(req->body, req->body_len, &wr, &call.error);
        if (r < 0)
            return queue_error(req, &call.error, r, NULL);
        call.workspace = &wr;
    } else if (spec->body == API_BODY_QUOTA) {
        r = api_quota_request_parse(req->body, req->body_len, &call.quota, &call.error);
        if (r < 0)
            return queue_error(req, &call.error, r, NULL);
    }
    if (spec->stream) {
        /* A byte stream (the events are served above). */
        r = api_pipe_new(api, req, &req->pipe);
        if (r < 0)
            return queue_error(req, &call.error, r, NULL);
        call.stream = req->pipe;
    }
    if (spec->operation) {
        r = api_operation_create(api, spec->id, &req->operation);
        if (r < 0) {
            api_workspace_request_done(&wr);
            return queue_error(req, &call.error, r, NULL);
        }
        call.operation = req->operation;
        api_server_operation_changed(api, req->operation, false);
    }

    r = h(api->userdata, &call);
    unsigned status = call.status ?: spec->status;
    char location[128] = "";
    if (wr.id)
        snprintf(location, sizeof location, "/v1/workspaces/%s", wr.id);
    if (r < 0) {
        /* The handler's own error wins; these only word a bare errno. */
        if (r == -EEXIST && wr.id)
            api_fail_default(&call.error, r, API_CODE_EXISTS, "Workspace '%s' exists already", wr.id);
        else if (r == -ENOENT && spec->param == API_PARAM_WORKSPACE)
            api_fail_default(&call.error, r, API_CODE_NOT_FOUND, "No workspace '%s'", req->route.param);
        else if (r == -ENOENT && spec->param == API_PARAM_VOLUME)
            api_fail_default(&call.error, r, API_CODE_NOT_FOUND, "No volume '%s'", req->route.param);
        api_workspace_request_done(&wr);
        api_error_from_errno(&call.error, r);
        if (req->operation)
            api_operation_fail(req->operation, &call.error);
        json_object_put(call.reply);
        return queue_error(req, &call.error, r, NULL);
    }
    if (r == 0 && api_pipe_has_fd(req->pipe)) {
        json_object_put(call.reply);
        return api_pipe_queue(req);
    }
    if (r == 0) {
        if (!call.reply && !(call.reply = json_object_new_object()))
            return MHD_NO;
        if (req->operation) {
            if (status == 201 && location[0])
                (void) api_operation_set_resource(req->operation, location);
            api_operation_succeed(req->operation, status, json_object_get(call.reply));
        }
        ok = queue_json(req, status, call.reply, NULL, status == 201 && location[0] ? location : NULL);
        json_object_put(call.reply);
        api_workspace_request_done(&wr);
        return ok;
    }
    api_workspace_request_done(&wr);
    /* The work goes on as the operation. */
    req->provisional = call.reply;
    if (!req->operation)
        return MHD_NO; /* a handler bug: only operation routes may go on */
    usec_t wait = req->query.has_wait ? req->query.wait : spec->default_wait_sec * USEC_PER_SEC;
    if (api_operation_done(req->operation) || wait == 0)
        return queue_operation_result(req);
    return wait_for_operation(api, req, wait);
}

typedef struct QueryWalk {
    ApiRequest *req;
    ApiError *err;
    int r;
} QueryWalk;

/* The framing headers, as sent: a message with two different
 * Content-Lengths, or with both Content-Length and Transfer-Encoding, has
 * no single meaning (RFC 9112, 6.3), and a proxy in front of us could read
 * it otherwise than we do (request smuggling). */
typedef struct FramingWalk {
    unsigned n_length;
    bool lengths_differ;
    bool chunked;
    const char *length;
} FramingWalk;

static enum MHD_Result framing_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    FramingWalk *w = cls;
    if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        if (w->n_length++ > 0 && !streq_ptr(w->length, value))
            w->lengths_differ = true;
        w->length = value;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0)
        w->chunked = true;
    return MHD_YES;
}

static enum MHD_Result query_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *value) {
    QueryWalk *w = cls;
    w->r = api_query_parse(w->req->spec, key, value, &w->req->query, w->err);
    return w->r < 0 ? MHD_NO : MHD_YES;
}

static bool body_append(ApiRequest *req, const char *data, size_t n) {
    if (req->body_len + n + 1 > req->body_allocated) {
        size_t a = MAX(req->body_allocated * 2, req->body_len + n + 1);
        char *p = realloc(req->body, a);
        if (!p)
            return false;
        req->body = p;
        req->body_allocated = a;
    }
    memcpy(req->body + req->body_len, data, n);
    req->body_len += n;
    req->body[req->body_len] = 0;
    return true;
}

enum MHD_Result api_dispatch_request(Api *api, struct MHD_Connection *c, const char *url, const char *method,
                                     const char *upload_data, size_t *upload_data_size, void **req_cls) {
    ApiRequest *req = *req_cls;

    if (!req) {
        /* First call: the headers are in, the body (if any) is not. Decide
         * everything that can be decided now, so that a refused request
         * does not get to upload its body (and no "100 Continue"). */
        req = calloc(1, sizeof(*req));
        if (!req)
            return MHD_NO;
        req->api = api;
        req->mhd = c;
        req->started = now_usec(CLOCK_MONOTONIC);
        *req_cls = req;

        const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        req->conn = info ? info->socket_context : NULL;

        ApiError err = {};
        int r = api_route_parse(method, url, &req->route, &err);
        if (r < 0)
            return queue_error(req, &err, r, r == -EOPNOTSUPP ? req->route.allow : NULL);
        req->routed = true;
        req->spec = api_route_spec(req->route.id);

        /* The metrics listener serves the figures and nothing else. */
        if (req->conn && req->conn->metrics_only && req->route.id != API_ROUTE_METRICS) {
            api_fail(&err, -EPERM, API_CODE_FORBIDDEN,
                     "This is the metrics listener (api.metrics_listen): it serves GET /metrics only");
            return queue_error(req, &err, -EPERM, NULL);
        }

        if (req->spec->mutating) {
            ApiConn *conn = req->conn;
            if (conn && conn->read_only) {
                api_fail(&err, -EPERM, API_CODE_FORBIDDEN,
                         "This is the read-only socket (api.readonly_socket): changes go through api.socket");
                return queue_error(req, &err, -EPERM, NULL);
            }
            bool ok = conn && conn->peer_error >= 0 &&
                      api_peer_may(conn->uid, conn->gid, conn->groups, conn->n_groups, api->config.group, true);
            if (!ok) {
                api_fail(&err, -EPERM, API_CODE_FORBIDDEN,
                         "Changes need root or membership in the API socket's group");
                return queue_error(req, &err, -EPERM, NULL);
            }
            if (api->state != API_STATE_READY) {
                bool stopping = api->state == API_STATE_STOPPING;
                api_fail(&err, -EAGAIN, stopping ? API_CODE_SHUTTING_DOWN : API_CODE_NOT_READY,
                         stopping ? "The agent is shutting down" : "The agent is starting, try again shortly");
                return queue_error(req, &err, -EAGAIN, NULL);
            }
        }

        QueryWalk w = { .req = req, .err = &err };
        (void) MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, query_iter, &w);
        if (w.r < 0)
            return queue_error(req, &err, w.r, NULL);

        FramingWalk fw = {};
        (void) MHD_get_connection_values(c, MHD_HEADER_KIND, framing_iter, &fw);
        if (fw.lengths_differ || (fw.n_length > 0 && fw.chunked)) {
            api_fail(&err, -EBADMSG, API_CODE_BAD_REQUEST,
                     fw.lengths_differ ? "Conflicting Content-Length headers"
                                       : "Both Content-Length and Transfer-Encoding: the body's length is ambiguous");
            return queue_error(req, &err, -EBADMSG, NULL);
        }
        const char *cl = fw.length;
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            /* MHD has validated the header's syntax already; refuse early
             * on the announced size so a big body is never read. */
            if (errno == 0 && *end == 0 && n > api->config.max_body) {
                api_fail(&err, -E2BIG, API_CODE_BODY_TOO_LARGE, "Request body larger than %zu bytes",
                         api->config.max_body);
                return queue_error(req, &err, -E2BIG, NULL);
            }
        }
        return MHD_YES;
    }

    if (*upload_data_size > 0) {
        size_t n = *upload_data_size;
        *upload_data_size = 0;
        /* A response is queued already, or the body outgrew the limit
         * (chunked bodies have no Content-Length): drop the bytes, answer
         * once the body is through. */
        if (req->responded || req->too_large)
            return MHD_YES;
        if (n > api->config.max_body - req->body_len) {
            req->too_large = true;
            req->body = mfree(req->body);
            req->body_len = req->body_allocated = 0;
            return MHD_YES;
        }
        return body_append(req, upload_data, n) ? MHD_YES : MHD_NO;
    }

    if (req->responded)
        return MHD_YES;
    if (req->too_large) {
        ApiError err = {};
        api_fail(&err, -E2BIG, API_CODE_BODY_TOO_LARGE, "Request body larger than %zu bytes", api->config.max_body);
        return queue_error(req, &err, -E2BIG, NULL);
    }
    if (req->operation && (req->wait_over || api_operation_done(req->operation))) {
        /* Resumed: the operation ended, or the wait is over. */
        req->wait_timer = sd_event_source_disable_unref(req->wait_timer);
        wait_unlink(api, req);
        return queue_operation_result(req);
    }
    if (req->operation) {
        /* Woken while the operation still runs and the wait is not over:
         * park again. */
        req->suspended = true;
        MHD_suspend_connection(req->mhd);
        return MHD_YES;
    }
    return dispatch(api, req);
}

void api_dispatch_completed(Api *api, ApiRequest *req, enum MHD_RequestTerminationCode toe) {
    if (req->status > 0)
        count_request(api, req);
    /* The next request on this keep-alive connection gets a fresh deadline. */
    if (req->conn && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        api_conn_reset_deadline(api, req->conn);
    if (req->streaming) {
        if (req->stream_prev)
            req->stream_prev->stream_next = req->stream_next;
        else if (api->streams == req)
            api->streams = req->stream_next;
        if (req->stream_next)
            req->stream_next->stream_prev = req->stream_prev;
        api->n_streams--;
    }
    wait_unlink(api, req);
    api_pipe_free(req->pipe);
    sd_event_source_disable_unref(req->wait_timer);
    api_operation_unref(req->operation);
    json_object_put(req->provisional);
    free(req->body);
    free(req);
}
