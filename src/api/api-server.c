/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Api object: libmicrohttpd on the agent's sd-event loop, without
 * threads. See api.h for the shape and docs/api.md for the contract.
 *
 * How MHD is driven: MHD_USE_EPOLL without MHD_USE_INTERNAL_POLLING_THREAD
 * gives an epoll fd that becomes readable when any of MHD's sockets has an
 * event; it is an io source here, and every wake-up calls MHD_run(). MHD
 * uses edge-triggered epoll internally and may leave work for later (it
 * caps the events it handles per call), in which case MHD_get_timeout()
 * says 0: so after every MHD_run() the timer is re-armed from
 * MHD_get_timeout(), and nothing is left waiting for an edge that already
 * fired.
 */

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <fcntl.h>

#include <microhttpd.h>

#include "api.h"
#include "util.h"
#include "string-table.h"

#define API_MAX_BODY_DEFAULT (64 * KIB)
#define API_HEADER_MEMORY_DEFAULT (32 * KIB)
#define API_CONNECTION_LIMIT_DEFAULT 4096U
#define API_IDLE_TIMEOUT_DEFAULT 30U
#define API_REQUEST_TIMEOUT_DEFAULT 10U
/* fds the agent keeps for itself (loop devices, daemons, logs, MHD's own). */
#define API_FD_RESERVE 256U

#define STATUS_MIN 100
#define STATUS_MAX 599

/* One client connection (MHD's socket context). Kept in a list ordered by
 * deadline: every deadline is "now + request_timeout" when set, so
 * appending keeps the order and the head is always the next to expire. */
typedef struct ApiConn {
    Api *api;
    struct MHD_Connection *mhd;
    int fd;                        /* MHD's; never closed here */
    usec_t deadline;
    bool killed;                   /* shut down on deadline; MHD closes it */
    struct ApiConn *prev, *next;
    int peer_error;                /* <0: credentials unknown: reads only */
    uid_t uid;
    gid_t gid;
    pid_t pid;
    gid_t *groups;
    size_t n_groups;
} ApiConn;

/* One request (MHD's per-request context). */
typedef struct ApiRequest {
    ApiConn *conn;
    bool routed;
    ApiRoute route;
    char *body;
    size_t body_len;
    size_t body_allocated;
    bool too_large;
    bool responded;                /* a response was queued before the body */
    unsigned status;
    usec_t started;
} ApiRequest;

struct Api {
    sd_event *event;
    struct MHD_Daemon *mhd;
    sd_event_source *io;
    sd_event_source *timer;
    sd_event_source *deadline_timer;
    ApiServerConfig config;
    ApiOps ops;
    void *userdata;
    ApiState state;

    ApiConn *conns_head, *conns_tail;
    unsigned n_conns;

    /* Own metrics. requests[route + 1][status - 100]; route -1: unrouted. */
    uint64_t requests[_API_ROUTE_MAX + 1][STATUS_MAX - STATUS_MIN + 1];
    MetricsHistogram latency[_API_ROUTE_MAX];
    uint64_t connections_total;
    uint64_t request_timeouts_total;
};

static const char *const api_state_table[_API_STATE_MAX] = {
    [API_STATE_STARTING] = "starting",
    [API_STATE_READY] = "ready",
    [API_STATE_STOPPING] = "stopping",
};

DEFINE_STRING_TABLE_LOOKUP(api_state, ApiState);

_printf_(3, 4) static void api_log(Api *api, int priority, const char *fmt, ...) {
    if (!api->config.log)
        return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    api->config.log(api->config.log_userdata, priority, buf);
}

_printf_(2, 0) static void mhd_logger(void *cls, const char *fmt, va_list ap) {
    Api *api = cls;
    if (!api->config.log)
        return;
    char buf[512];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    size_t n = strlen(buf);
    while (n > 0 && buf[n - 1] == '\n')
        buf[--n] = 0;
    api->config.log(api->config.log_userdata, 6 /* LOG_INFO */, buf);
}

/* ---- connection list and deadlines ---- */

static void conn_unlink(Api *api, ApiConn *c) {
    if (c->prev)
        c->prev->next = c->next;
    else if (api->conns_head == c)
        api->conns_head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else if (api->conns_tail == c)
        api->conns_tail = c->prev;
    c->prev = c->next = NULL;
}

static void conn_append(Api *api, ApiConn *c) {
    c->prev = api->conns_tail;
    c->next = NULL;
    if (api->conns_tail)
        api->conns_tail->next = c;
    else
        api->conns_head = c;
    api->conns_tail = c;
}

static void deadline_rearm(Api *api) {
    /* Killed connections sit at the head until MHD closes them; skip them. */
    ApiConn *c = api->conns_head;
    while (c && c->killed)
        c = c->next;
    if (!c) {
        (void) sd_event_source_set_enabled(api->deadline_timer, SD_EVENT_OFF);
        return;
    }
    (void) sd_event_source_set_time(api->deadline_timer, c->deadline);
    (void) sd_event_source_set_enabled(api->deadline_timer, SD_EVENT_ONESHOT);
}

static void conn_reset_deadline(Api *api, ApiConn *c) {
    if (c->killed)
        return;
    conn_unlink(api, c);
    c->deadline = now_usec(CLOCK_MONOTONIC) + api->config.request_timeout_sec * USEC_PER_SEC;
    conn_append(api, c);
    deadline_rearm(api);
}

static void mhd_rearm(Api *api);

static int on_deadline(sd_event_source *s, uint64_t usec, void *userdata) {
    Api *api = userdata;
    usec_t now = now_usec(CLOCK_MONOTONIC);
    for (ApiConn *c = api->conns_head; c; c = c->next) {
        if (c->killed)
            continue;
        if (c->deadline > now)
            break;
        /* shutdown(), not close(): MHD owns the fd. The socket turns
         * readable (EOF) and MHD closes the connection itself on its next
         * run, which the epoll fd wakes us for. */
        (void) shutdown(c->fd, SHUT_RDWR);
        c->killed = true;
        api->request_timeouts_total++;
        api_log(api, 6, "API connection (pid %d) did not finish a request within %us, closed",
                (int) c->pid, api->config.request_timeout_sec);
    }
    deadline_rearm(api);
    MHD_run(api->mhd);
    mhd_rearm(api);
    return 0;
}

static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
    Api *api = cls;

    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        ApiConn *c = calloc(1, sizeof(*c));
        if (!c) {
            *socket_context = NULL; /* handled as "credentials unknown" */
            return;
        }
        c->api = api;
        c->mhd = connection;
        c->fd = info ? info->connect_fd : -EBADF;
        /* Credentials once per connection: they are fixed at connect(). */
        c->peer_error = c->fd >= 0 ? api_peer_credentials(c->fd, &c->uid, &c->gid, &c->pid,
                                                          &c->groups, &c->n_groups)
                                   : -EBADF;
        c->deadline = now_usec(CLOCK_MONOTONIC) + api->config.request_timeout_sec * USEC_PER_SEC;
        conn_append(api, c);
        api->n_conns++;
        api->connections_total++;
        if (api->conns_head == c)
            deadline_rearm(api);
        *socket_context = c;
        return;
    }

    ApiConn *c = *socket_context;
    if (!c)
        return;
    bool was_head = api->conns_head == c;
    conn_unlink(api, c);
    api->n_conns--;
    free(c->groups);
    free(c);
    *socket_context = NULL;
    if (was_head)
        deadline_rearm(api);
}

/* ---- responses ---- */

static void count_request(Api *api, const ApiRequest *req) {
    unsigned st = CLAMP(req->status, STATUS_MIN, STATUS_MAX);
    size_t ri = req->routed ? (size_t) req->route.id + 1 : 0;
    api->requests[ri][st - STATUS_MIN]++;
    if (req->routed && req->started > 0)
        metrics_histogram_observe(&api->latency[req->route.id],
                                  (double) (now_usec(CLOCK_MONOTONIC) - req->started) / USEC_PER_SEC);
}

static enum MHD_Result queue_text(struct MHD_Connection *c, ApiRequest *req, unsigned status,
                                  char *text, size_t len, const char *content_type,
                                  const char *allow, const char *location) {
    /* MHD takes the buffer and free()s it. */
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(text);
        return MHD_NO; /* MHD closes the connection */
    }
    (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
    (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (allow)
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, allow);
    if (location)
        (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_LOCATION, location);
    enum MHD_Result ok = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES) {
        req->status = status;
        req->responded = true;
    }
    return ok;
}

static enum MHD_Result queue_json(struct MHD_Connection *c, ApiRequest *req, unsigned status,
                                  json_object *o, const char *allow, const char *location) {
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
    return queue_text(c, req, status, text, len + 1, "application/json", allow, location);
}

static enum MHD_Result queue_error(struct MHD_Connection *c, ApiRequest *req, ApiError *err, int r,
                                   const char *allow) {
    api_error_from_errno(err, r);
    json_object *o = NULL;
    if (api_error_to_json(err, &o) < 0)
        return MHD_NO;
    enum MHD_Result ok = queue_json(c, req, err->status, o, allow, NULL);
    json_object_put(o);
    return ok;
}

/* ---- our own metrics ---- */

static int write_own_metrics(Api *api, MetricsWriter *w) {
    int r;
    char code[8];

    r = metrics_writer_family(w, "layoutd_api_requests_total", METRIC_COUNTER,
                              "API requests answered, by route and HTTP status.");
    if (r < 0)
        return r;
    for (size_t ri = 0; ri <= _API_ROUTE_MAX; ri++)
        for (unsigned st = STATUS_MIN; st <= STATUS_MAX; st++) {
            uint64_t n = api->requests[ri][st - STATUS_MIN];
            if (n == 0)
                continue;
            snprintf(code, sizeof(code), "%u", st);
            const char *labels[] = { "route", ri == 0 ? "none" : api_route_id_to_string(ri - 1), "code", code, NULL };
            r = metrics_writer_sample(w, labels, (double) n);
            if (r < 0)
                return r;
        }

    r = metrics_writer_family(w, "layoutd_api_request_duration_seconds", METRIC_HISTOGRAM,
                              "Time from a request's headers to its completion, by route.");
    if (r < 0)
        return r;
    for (ApiRouteId ri = 0; ri < _API_ROUTE_MAX; ri++) {
        if (api->latency[ri].count == 0)
            continue;
        const char *labels[] = { "route", api_route_id_to_string(ri), NULL };
        r = metrics_histogram_write(&api->latency[ri], w, labels);
        if (r < 0)
            return r;
    }

    struct {
        const char *name;
        MetricType type;
        const char *help;
        double value;
    } simple[] = {
        { "layoutd_api_connections_open", METRIC_GAUGE, "API connections open now.", api->n_conns },
        { "layoutd_api_connection_limit", METRIC_GAUGE, "Most API connections served at once.",
          api_get_connection_limit(api) },
        { "layoutd_api_connections_total", METRIC_COUNTER, "API connections accepted.",
          (double) api->connections_total },
        { "layoutd_api_request_timeouts_total", METRIC_COUNTER,
          "API connections closed for not finishing a request in time.", (double) api->request_timeouts_total },
    };
    for (size_t i = 0; i < ELEMENTSOF(simple); i++) {
        r = metrics_writer_family(w, simple[i].name, simple[i].type, simple[i].help);
        if (r < 0)
            return r;
        r = metrics_writer_sample(w, NULL, simple[i].value);
        if (r < 0)
            return r;
    }
    return 0;
}

static enum MHD_Result serve_metrics(Api *api, struct MHD_Connection *c, ApiRequest *req) {
    _cleanup_(metrics_writer_freep) MetricsWriter *w = NULL;
    ApiError err = {};
    int r = metrics_writer_new(&w);
    if (r < 0)
        return queue_error(c, req, &err, r, NULL);
    if (api->ops.metrics) {
        r = api->ops.metrics(api->userdata, w, &err);
        if (r < 0)
            return queue_error(c, req, &err, r, NULL);
    }
    r = write_own_metrics(api, w);
    if (r < 0) {
        /* A family name clash with the engine's is a bug; say what. */
        if (r == -EEXIST)
            api_error_set(&err, r, 500, "internal", "Metric family written twice");
        return queue_error(c, req, &err, r, NULL);
    }
    char *text;
    size_t len;
    r = metrics_writer_steal(w, &text, &len);
    if (r < 0)
        return queue_error(c, req, &err, r, NULL);
    return queue_text(c, req, 200, text, len, METRICS_CONTENT_TYPE, NULL, NULL);
}

/* ---- dispatch ---- */

static enum MHD_Result dispatch(Api *api, struct MHD_Connection *c, ApiRequest *req) {
    ApiError err = {};
    json_object *o = NULL;
    unsigned status = 200;
    const char *location = NULL;
    char location_buf[128];
    int r;
    const ApiOps *ops = &api->ops;
    const char *param = req->route.param;

#define CALL(fn, ...) (ops->fn ? ops->fn(api->userdata, __VA_ARGS__) : -EOPNOTSUPP)

    switch (req->route.id) {
    case API_ROUTE_STATUS:
        r = CALL(status, &o, &err);
        break;
    case API_ROUTE_VOLUMES:
        r = CALL(list_volumes, &o, &err);
        break;
    case API_ROUTE_VOLUME:
        r = CALL(get_volume, param, &o, &err);
        if (r == -ENOENT)
            api_error_set(&err, r, 404, "not_found", "No volume '%s'", param);
        break;
    case API_ROUTE_WORKSPACES:
        r = CALL(list_workspaces, &o, &err);
        break;
    case API_ROUTE_WORKSPACE:
        r = CALL(get_workspace, param, &o, &err);
        if (r == -ENOENT)
            api_error_set(&err, r, 404, "not_found", "No workspace '%s'", param);
        break;
    case API_ROUTE_WORKSPACE_CREATE: {
        ApiWorkspaceRequest wr = {};
        r = api_workspace_request_parse(req->body, req->body_len, &wr, &err);
        if (r >= 0) {
            r = CALL(create_workspace, &wr, &o, &err);
            if (r == -EEXIST)
                api_error_set(&err, r, 409, "exists", "Workspace '%s' exists already", wr.id);
            snprintf(location_buf, sizeof(location_buf), "/v1/workspaces/%s", wr.id);
            location = location_buf;
            status = 201;
            api_workspace_request_done(&wr);
        }
        break;
    }
    case API_ROUTE_WORKSPACE_DELETE: {
        bool destroy = false;
        const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "destroy_data");
        if (!v && MHD_lookup_connection_value_n(c, MHD_GET_ARGUMENT_KIND, "destroy_data", 12, NULL, NULL) == MHD_YES)
            v = ""; /* "?destroy_data" alone: ambiguous, refuse rather than guess */
        r = api_parse_bool(v, &destroy);
        if (r < 0) {
            api_error_set(&err, r, 400, "bad_request", "destroy_data must be true or false");
            break;
        }
        r = CALL(delete_workspace, param, destroy, &o, &err);
        if (r == -ENOENT)
            api_error_set(&err, r, 404, "not_found", "No workspace '%s'", param);
        break;
    }
    case API_ROUTE_WORKSPACE_RESTART:
        r = CALL(restart_workspace, param, &o, &err);
        if (r == -ENOENT)
            api_error_set(&err, r, 404, "not_found", "No workspace '%s'", param);
        status = 202;
        break;
    case API_ROUTE_RELOAD:
        r = CALL(reload, &o, &err);
        break;
    case API_ROUTE_CAPACITY:
        r = CALL(capacity, &o, &err);
        break;
    case API_ROUTE_METRICS:
        return serve_metrics(api, c, req);
    default:
        r = -ENOENT;
        break;
    }
#undef CALL

    if (r < 0) {
        json_object_put(o);
        return queue_error(c, req, &err, r, NULL);
    }
    if (!o) {
        /* An op with nothing to say still answers an object. */
        o = json_object_new_object();
        if (!o)
            return MHD_NO;
    }
    enum MHD_Result ok = queue_json(c, req, status, o, NULL, location);
    json_object_put(o);
    return ok;
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

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
    Api *api = cls;
    ApiRequest *req = *req_cls;

    if (!req) {
        /* First call: the headers are in, the body (if any) is not. Decide
         * everything that can be decided now, so that a refused request
         * does not get to upload its body (and no "100 Continue"). */
        req = calloc(1, sizeof(*req));
        if (!req)
            return MHD_NO;
        req->started = now_usec(CLOCK_MONOTONIC);
        *req_cls = req;

        const union MHD_ConnectionInfo *info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
        req->conn = info ? info->socket_context : NULL;

        ApiError err = {};
        const char *allow = NULL;
        int r = api_route_parse(method, url, &req->route, &allow, &err);
        if (r < 0)
            return queue_error(c, req, &err, r, allow);
        req->routed = true;

        if (api_route_id_is_mutating(req->route.id)) {
            ApiConn *conn = req->conn;
            bool ok = conn && conn->peer_error >= 0 &&
                      api_peer_may(conn->uid, conn->gid, conn->groups, conn->n_groups, api->config.group, true);
            if (!ok) {
                api_error_set(&err, -EPERM, 403, "forbidden",
                              "Changes need root or membership in the API socket's group");
                return queue_error(c, req, &err, -EPERM, NULL);
            }
            if (api->state != API_STATE_READY) {
                bool stopping = api->state == API_STATE_STOPPING;
                api_error_set(&err, -EAGAIN, 503, stopping ? "shutting_down" : "not_ready",
                              stopping ? "The agent is shutting down" : "The agent is starting, try again shortly");
                return queue_error(c, req, &err, -EAGAIN, NULL);
            }
        }

        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
        if (cl) {
            char *end;
            errno = 0;
            unsigned long long n = strtoull(cl, &end, 10);
            /* MHD has validated the header's syntax already; refuse early
             * on the announced size so a big body is never read. */
            if (errno == 0 && *end == 0 && n > api->config.max_body) {
                api_error_set(&err, -E2BIG, 413, "body_too_large",
                              "Request body larger than %zu bytes", api->config.max_body);
                return queue_error(c, req, &err, -E2BIG, NULL);
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
            free(req->body);
            req->body = NULL;
            req->body_len = req->body_allocated = 0;
            return MHD_YES;
        }
        return body_append(req, upload_data, n) ? MHD_YES : MHD_NO;
    }

    if (req->responded)
        return MHD_YES;
    if (req->too_large) {
        ApiError err = {};
        api_error_set(&err, -E2BIG, 413, "body_too_large", "Request body larger than %zu bytes", api->config.max_body);
        return queue_error(c, req, &err, -E2BIG, NULL);
    }
    return dispatch(api, c, req);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe) {
    Api *api = cls;
    ApiRequest *req = *req_cls;
    if (!req)
        return;
    if (req->status > 0)
        count_request(api, req);
    /* The next request on this keep-alive connection gets a fresh deadline. */
    if (req->conn && toe == MHD_REQUEST_TERMINATED_COMPLETED_OK)
        conn_reset_deadline(api, req->conn);
    free(req->body);
    free(req);
    *req_cls = NULL;
}

/* ---- sd-event glue ---- */

static void mhd_rearm(Api *api) {
    MHD_UNSIGNED_LONG_LONG ms;
    if (MHD_get_timeout(api->mhd, &ms) != MHD_YES) {
        (void) sd_event_source_set_enabled(api->timer, SD_EVENT_OFF);
        return;
    }
    (void) sd_event_source_set_time(api->timer, now_usec(CLOCK_MONOTONIC) + (usec_t) ms * USEC_PER_MSEC);
    (void) sd_event_source_set_enabled(api->timer, SD_EVENT_ONESHOT);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    Api *api = userdata;
    MHD_run(api->mhd);
    mhd_rearm(api);
    return 0;
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Api *api = userdata;
    MHD_run(api->mhd);
    mhd_rearm(api);
    return 0;
}

/* Raises the soft fd limit to the hard one: every connection is an fd,
 * and epoll (unlike select) has no FD_SETSIZE cap to respect. Returns the
 * soft limit now in force. */
static rlim_t raise_nofile(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = { .rlim_cur = rl.rlim_max, .rlim_max = rl.rlim_max };
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl.rlim_cur = rl.rlim_max;
    }
    return rl.rlim_cur;
}

int api_new(sd_event *event, int listen_fd, const ApiServerConfig *config, const ApiOps *ops, void *userdata, Api **ret) {
    _cleanup_close_ int fd = listen_fd;
    int r;

    if (!event || fd < 0 || !ops || !ret)
        return -EINVAL;

    Api *api = calloc(1, sizeof(*api));
    if (!api)
        return -ENOMEM;
    api->event = sd_event_ref(event);
    api->ops = *ops;
    api->userdata = userdata;
    api->state = API_STATE_STARTING;
    api->config = config ? *config : (ApiServerConfig) { .group = GID_INVALID };
    ApiServerConfig *cf = &api->config;
    if (cf->max_body == 0)
        cf->max_body = API_MAX_BODY_DEFAULT;
    if (cf->header_memory == 0)
        cf->header_memory = API_HEADER_MEMORY_DEFAULT;
    if (cf->connection_limit == 0)
        cf->connection_limit = API_CONNECTION_LIMIT_DEFAULT;
    if (cf->idle_timeout_sec == 0)
        cf->idle_timeout_sec = API_IDLE_TIMEOUT_DEFAULT;
    if (cf->request_timeout_sec == 0)
        cf->request_timeout_sec = API_REQUEST_TIMEOUT_DEFAULT;

    rlim_t nofile = raise_nofile();
    if (nofile != RLIM_INFINITY && nofile < (rlim_t) cf->connection_limit + API_FD_RESERVE) {
        /* Past the limit MHD's accept() would fail with EMFILE and spin;
         * a lower connection limit makes it stop accepting instead. */
        cf->connection_limit = nofile > 2 * API_FD_RESERVE ? (unsigned) (nofile - API_FD_RESERVE) : (unsigned) (nofile / 2);
        api_log(api, 4, "RLIMIT_NOFILE is %llu: API connection limit lowered to %u",
                (unsigned long long) nofile, cf->connection_limit);
    }

    static const double latency_bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                             0.025, 0.05, 0.1, 0.5, 1, 5 };
    for (size_t i = 0; i < _API_ROUTE_MAX; i++)
        (void) metrics_histogram_init(&api->latency[i], latency_bounds, ELEMENTSOF(latency_bounds));

    unsigned flags = MHD_USE_EPOLL;
    if (cf->log)
        flags |= MHD_USE_ERROR_LOG;
    api->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, api,
                                /* first, so that MHD never logs to stderr itself */
                                MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, api,
                                MHD_OPTION_LISTEN_SOCKET, (MHD_socket) fd,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned) cf->connection_limit,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) cf->idle_timeout_sec,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) cf->header_memory,
                                MHD_OPTION_NOTIFY_CONNECTION, on_connection, api,
                                MHD_OPTION_NOTIFY_COMPLETED, on_completed, api,
                                MHD_OPTION_END);
    if (!api->mhd) {
        /* MHD does not close a socket it was given when it fails to start
         * (checked: only MHD_stop_daemon does); ours still owns it. */
        r = -EIO;
        goto fail;
    }
    TAKE_FD(fd); /* MHD_stop_daemon() closes it */

    const union MHD_DaemonInfo *info = MHD_get_daemon_info(api->mhd, MHD_DAEMON_INFO_EPOLL_FD);
    if (!info || info->epoll_fd < 0) {
        r = -EIO;
        goto fail;
    }
    r = sd_event_add_io(event, &api->io, info->epoll_fd, EPOLLIN, on_io, api);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_description(api->io, "api-io");
    /* Accuracy 1us: 0 would mean sd-event's default of 250ms, and MHD asks
     * for "run again now" (timeout 0) whenever it left work pending. */
    r = sd_event_add_time(event, &api->timer, CLOCK_MONOTONIC, USEC_INFINITY, 1, on_timer, api);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_description(api->timer, "api-timer");
    r = sd_event_add_time(event, &api->deadline_timer, CLOCK_MONOTONIC, USEC_INFINITY,
                          100 * USEC_PER_MSEC, on_deadline, api);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_description(api->deadline_timer, "api-deadline");
    (void) sd_event_source_set_enabled(api->deadline_timer, SD_EVENT_OFF);
    mhd_rearm(api);

    *ret = api;
    return 0;

fail:
    api_free(api);
    return r;
}

Api *api_free(Api *api) {
    if (!api)
        return NULL;
    api->io = sd_event_source_disable_unref(api->io);
    api->timer = sd_event_source_disable_unref(api->timer);
    api->deadline_timer = sd_event_source_disable_unref(api->deadline_timer);
    if (api->mhd)
        MHD_stop_daemon(api->mhd); /* closes connections (notifying us) and the socket */
    sd_event_unref(api->event);
    free(api);
    return NULL;
}

void api_set_state(Api *api, ApiState state) {
    if (api && state >= 0 && state < _API_STATE_MAX)
        api->state = state;
}

ApiState api_get_state(const Api *api) {
    return api ? api->state : _API_STATE_INVALID;
}

unsigned api_get_connection_limit(const Api *api) {
    return api ? api->config.connection_limit : 0;
}

unsigned api_get_connections(const Api *api) {
    return api ? api->n_conns : 0;
}
