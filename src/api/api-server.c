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


#include "api-internal.h"
#include "util.h"
#include "string-table.h"

#define API_MAX_BODY_DEFAULT (64 * KIB)
#define API_HEADER_MEMORY_DEFAULT (32 * KIB)
#define API_CONNECTION_LIMIT_DEFAULT 4096U
#define API_IDLE_TIMEOUT_DEFAULT 30U
#define API_REQUEST_TIMEOUT_DEFAULT 10U
/* fds the agent keeps for itself (loop devices, daemons, logs, MHD's own). */
#define API_FD_RESERVE 256U

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

/* MHD percent-decodes the path, the query keys and their values before a
 * handler sees them, so "ws-1%00junk" would reach us as "ws-1" and
 * "destroy_data=true%00x" as "true". Valid names and values never need an
 * escape, so nothing is decoded: "%" stays itself and the strict checks
 * after it (names, numbers, booleans) refuse it with 400. */
static size_t keep_escapes(void *cls, struct MHD_Connection *connection, char *s) {
    (void) cls;
    (void) connection;
    return strlen(s);
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
    api_conn_deadline_rearm(api);
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
        c->read_only = api_readonly_connection(api, c->fd);
        c->metrics_only = api_metrics_connection(c->fd);
        c->deadline = now_usec(CLOCK_MONOTONIC) + api->config.request_timeout_sec * USEC_PER_SEC;
        api_conn_track(api, c);
        api->n_conns++;
        api->connections_total++;
        *socket_context = c;
        return;
    }

    ApiConn *c = *socket_context;
    if (!c)
        return;
    api_conn_untrack(api, c);
    api->n_conns--;
    free(c->groups);
    free(c);
    *socket_context = NULL;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **req_cls) {
    return api_dispatch_request(cls, c, url, method, upload_data, upload_data_size, req_cls);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe) {
    Api *api = cls;
    ApiRequest *req = *req_cls;
    if (!req)
        return;
    api_dispatch_completed(api, req, toe);
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
/* Streams write a newline now and then: a client that went away is only
 * noticed when a write fails, and a suspended connection writes nothing. */
#define API_HEARTBEAT_INTERVAL (30 * USEC_PER_SEC)

static int on_heartbeat(sd_event_source *s, uint64_t usec, void *userdata) {
    Api *api = userdata;
    api_dispatch_heartbeat(api);
    api_operations_expire(api, false);
    (void) sd_event_source_set_time_relative(s, API_HEARTBEAT_INTERVAL);
    if (api->n_streams > 0)
        api_mhd_kick(api);
    return 0;
}

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
    api->operation_changed = api_server_operation_changed;
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

    r = api_events_new(&api->events);
    if (r < 0)
        goto fail;

    /* Suspend/resume: a request that waits for an operation, and an event
     * stream with nothing to send, park their connection (it implies an
     * inter-thread channel, which is how a resume wakes the epoll fd). */
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
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
                                MHD_OPTION_UNESCAPE_CALLBACK, keep_escapes, api,
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
    /* Answers first. sd-event dispatches one ready source per iteration,
     * by priority; at equal priority a request that became ready beside a
     * burst of worker results and daemon starts (each of which may save
     * the record: 3-6 ms of fsync under load) waited for all of them. A
     * request costs tens of microseconds, and MHD only handles what is
     * ready, so the rest of the loop's work is delayed by little. */
    (void) sd_event_source_set_priority(api->io, API_EVENT_PRIORITY);
    /* Accuracy 1us: 0 would mean sd-event's default of 250ms, and MHD asks
     * for "run again now" (timeout 0) whenever it left work pending. */
    r = sd_event_add_time(event, &api->timer, CLOCK_MONOTONIC, USEC_INFINITY, 1, on_timer, api);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_description(api->timer, "api-timer");
    (void) sd_event_source_set_priority(api->timer, API_EVENT_PRIORITY);
    r = sd_event_add_time(event, &api->deadline_timer, CLOCK_MONOTONIC, USEC_INFINITY,
                          100 * USEC_PER_MSEC, on_deadline, api);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_description(api->deadline_timer, "api-deadline");
    (void) sd_event_source_set_enabled(api->deadline_timer, SD_EVENT_OFF);
    r = sd_event_add_time_relative(event, &api->heartbeat_timer, CLOCK_MONOTONIC, API_HEARTBEAT_INTERVAL,
                                   USEC_PER_SEC, on_heartbeat, api);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_enabled(api->heartbeat_timer, SD_EVENT_ON);
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
    api->freeing = true;
    api->state = API_STATE_STOPPING;
    api->io = sd_event_source_disable_unref(api->io);
    api->timer = sd_event_source_disable_unref(api->timer);
    api->deadline_timer = sd_event_source_disable_unref(api->deadline_timer);
    api->heartbeat_timer = sd_event_source_disable_unref(api->heartbeat_timer);
    api->ro_io = sd_event_source_disable_unref(api->ro_io); /* closes the read-only socket */
    api->metrics_io = sd_event_source_disable_unref(api->metrics_io); /* and the metrics listener */
    if (api->mhd) {
        /* MHD must not be stopped with suspended connections. */
        api_dispatch_resume_all(api);
        MHD_run(api->mhd);
        MHD_stop_daemon(api->mhd); /* closes connections (notifying us) and the socket */
    }
    api_operations_expire(api, true);
    api_events_free(api->events);
    api_cache_done(&api->cache);
    sd_event_unref(api->event);
    free(api);
    return NULL;
}

void api_set_group(Api *api, gid_t group) {
    if (api)
        api->config.group = group;
}

void api_set_state(Api *api, ApiState state) {
    if (!api || state < 0 || state >= _API_STATE_MAX)
        return;
    api->state = state;
    /* Streams end when the agent stops: wake them to say so. */
    if (state == API_STATE_STOPPING && api->mhd) {
        api_dispatch_resume_all(api);
        api_mhd_kick(api);
    }
}

void api_server_changed(Api *api) {
    if (api)
        api_cache_clear(&api->cache);
}

int api_operation_new(Api *api, ApiRouteId kind, ApiOperation **ret) {
    if (!api || !ret)
        return -EINVAL;
    int r = api_operation_create(api, kind, ret);
    if (r >= 0)
        api_server_operation_changed(api, *ret, false);
    return r;
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
