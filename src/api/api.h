/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The status API: HTTP/1.1 + JSON on a Unix socket (/run/layoutd/api.sock),
 * so that `curl --unix-socket` is a client. docs/api.md is the reference
 * for routes, fields, errors, the access rule and the limits.
 *
 * Shape:
 *   - api_socket_open() makes the listening socket (mode, group), or
 *     api_socket_from_systemd() takes the one systemd passed.
 *   - api_new() runs libmicrohttpd on it WITHOUT threads: MHD is in epoll
 *     mode and its epoll fd is an io source on the caller's sd-event loop,
 *     with a timer from MHD_get_timeout(); every callback runs on the
 *     agent's single thread.
 *   - The API never touches devices or state itself: it calls the engine
 *     through ApiOps, one handler per route, which the agent implements
 *     (tests use a fake engine, tests/api/api-testserver.c). Handlers run
 *     on the loop and never block: work that takes time is an operation
 *     (api-operation.h) that the agent ends later. A request waits for its
 *     operation (?wait, or the route's default) without blocking the loop:
 *     its connection is suspended and resumed when the operation ends.
 *   - GET /v1/events is a stream of NDJSON lines (api_event_emit), resumed
 *     from ?since=N.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <json-c/json.h>
#include <systemd/sd-event.h>

#include "api-route.h"
#include "macro.h"
#include "metrics.h"

#define API_GROUP_DEFAULT "layoutd"
#define GID_INVALID ((gid_t) -1)

#include "api-operation.h"

/*
 * One call of a route's handler. The handler reads the route, its path
 * parameter, the query and (for a create) the validated body, and answers:
 *   - return <0: an error (call->error when set, else derived from the
 *     errno; the first error set wins);
 *   - return 0: done; call->reply is the body (NULL: {}), call->status the
 *     status (0: the route's);
 *   - return 1 (operation routes only): the work goes on; the handler
 *     keeps a reference to call->operation and ends it later. call->reply
 *     may hold a provisional body (it is what a 202 answer shows, with
 *     the operation added).
 */
typedef struct ApiStream ApiStream;

typedef struct ApiCall {
    const ApiRouteSpec *route;
    const char *param;                     /* {x} of the path, "" if none */
    const ApiQuery *query;
    const ApiWorkspaceRequest *workspace;  /* API_BODY_WORKSPACE */
    uint64_t quota;                        /* API_BODY_QUOTA: bytes, 0: none */
    ApiOperation *operation;               /* operation routes: this request's */
    ApiStream *stream;                     /* byte-stream routes (.stream, not
                                              events): see api_stream_set_fd */
    unsigned status;
    json_object *reply;
    ApiError error;
} ApiCall;

typedef int (*ApiHandler)(void *userdata, ApiCall *call);

/*
 * A byte-stream answer (GET /v1/workspaces/{id}/export): the handler
 * makes the bytes elsewhere (a child process writing into a pipe) and
 * hands the read end over with api_stream_set_fd() before returning 0.
 * The API sends what the fd gives, chunked, without blocking the loop: the
 * connection is suspended while the fd has nothing and resumed when it is
 * readable. At the fd's end the API waits for the handler's verdict,
 * api_stream_end(): 0 ends the answer properly, <0 cuts the connection
 * without the final chunk, so a client never takes a failed stream for a
 * whole one (the status line, 200, went out with the first bytes).
 * If the client goes away (or the agent stops) first, the cancel callback
 * runs; after it, or after api_stream_end(), the handler must not touch
 * the stream again. A handler that returns <0 must not keep it either.
 */
/* Takes fd (made O_NONBLOCK here). Returns -EINVAL, -EALREADY, 0. */
int api_stream_set_fd(ApiStream *s, int fd, const char *content_type, const char *filename);
void api_stream_set_cancel(ApiStream *s, void (*cancel)(void *userdata), void *userdata);
/* The producer is done: error 0 (the stream is whole) or <0. */
void api_stream_end(ApiStream *s, int error);

/*
 * The engine, as the API sees it: a handler per route (a NULL handler
 * answers 501 not_implemented), and the engine's metric families for
 * GET /metrics (the API appends its own, layoutd_api_*).
 */
typedef struct ApiOps {
    ApiHandler handlers[_API_ROUTE_MAX];
    int (*metrics)(void *userdata, MetricsWriter *w, ApiError *err);
} ApiOps;

/* Whether the agent takes changes. Reads are always served. */
typedef enum ApiState {
    API_STATE_STARTING,   /* mutating calls: 503 not_ready */
    API_STATE_READY,
    API_STATE_STOPPING,   /* mutating calls: 503 shutting_down */
    _API_STATE_MAX,
    _API_STATE_INVALID = -EINVAL,
} ApiState;

const char *api_state_to_string(ApiState s);
ApiState api_state_from_string(const char *s);

typedef struct ApiServerConfig {
    size_t max_body;              /* bytes; larger bodies get 413. 0: 64 KiB */
    size_t header_memory;         /* per-connection memory for the request
                                     line and headers; 0: 32 KiB */
    unsigned connection_limit;    /* 0: 4096 (clamped to RLIMIT_NOFILE) */
    unsigned idle_timeout_sec;    /* idle connection closed after; 0: 30 */
    unsigned request_timeout_sec; /* a whole request (headers + body +
                                     response) must finish within this, from
                                     the connection start or the end of the
                                     previous request; stops slowloris
                                     clients that send a byte now and then
                                     (MHD's own timeout is an idle timeout,
                                     reset by every byte). 0: 10 */
    gid_t group;                  /* group whose members may POST/DELETE
                                     (besides root); GID_INVALID: root only */
    /* Optional: MHD's diagnostics and API events, for the agent's log.
     * The API itself never prints. */
    void (*log)(void *userdata, int priority, const char *message);
    void *log_userdata;
} ApiServerConfig;

typedef struct Api Api;

/*
 * Opens the listening socket at path: removes a stale socket there (only
 * if it is a socket: anything else is -EEXIST), binds, sets `mode` and
 * owner root:<group> (a name, or a numeric gid). When the group does not exist the socket keeps
 * root's group and *ret_gid is GID_INVALID (the caller should say so);
 * otherwise *ret_gid is the group's gid. group == NULL: no chown.
 * The parent directory must exist.
 * Returns: <0 on error, 0 on success with *ret_fd (O_CLOEXEC, listening).
 */
int api_socket_open(const char *path, const char *group, mode_t mode, int *ret_fd, gid_t *ret_gid);
/* The socket file's owner (root:<group>, root:root when the group does not
 * exist) and mode, as api_socket_open() sets them: for a reload that
 * changes api.group or api.socket_mode. *ret_gid as there.
 * Returns: <0 on error, 0. */
int api_socket_set_access(const char *path, const char *group, mode_t mode, gid_t *ret_gid);

/*
 * The listening socket systemd passed for path (socket activation,
 * sd_listen_fds(3); $LISTEN_FDS is unset so that children never take it):
 * a listening AF_UNIX stream socket bound to path. It is made O_CLOEXEC
 * and non-blocking, and path gets the group and mode as with
 * api_socket_open(). Passed sockets that are not it are closed.
 * Returns: 0 when systemd passed none (bind it with api_socket_open()),
 * -EADDRNOTAVAIL when none of those passed is bound to path, -errno;
 * 1 with *ret_fd (and *ret_gid as api_socket_open() sets it).
 */
int api_socket_from_systemd(const char *path, const char *group, mode_t mode, int *ret_fd, gid_t *ret_gid);

/*
 * Starts serving on listen_fd (ownership passes to the Api, also on
 * failure) from `event`. Raises RLIMIT_NOFILE's soft limit to the hard
 * limit, and clamps the connection limit so that MHD never hits EMFILE.
 * Returns: <0 on error, 0 on success with *ret.
 */
int api_new(sd_event *event, int listen_fd, const ApiServerConfig *config,
            const ApiOps *ops, void *userdata, Api **ret);

/*
 * Adds a second listening socket (ownership passes, also on failure)
 * whose connections may only read: every GET/HEAD route is served on it,
 * and every mutating route is 403, whoever the peer is (docs/api.md
 * "Access"). Its connections count against the same limit.
 * Returns: <0 on error, 0 on success.
 */
int api_add_readonly_socket(Api *api, int listen_fd);

/*
 * Adds the opt-in TCP listener for Prometheus (api.metrics_listen;
 * ownership of listen_fd passes, also on failure): its connections are
 * served GET /metrics (and HEAD) only; every other route is 403. They
 * count against the same connection limit.
 * Returns: <0 on error, 0 on success.
 */
int api_add_metrics_listener(Api *api, int listen_fd);

/* Stops serving: closes all connections and the socket. NULL ok; returns NULL. */
Api *api_free(Api *api);
DEFINE_TRIVIAL_CLEANUP_FUNC(Api *, api_free)

void api_set_state(Api *api, ApiState state);
/* The group whose members may change things (GID_INVALID: root only),
 * from the next request on: a reload that changes api.group. */
void api_set_group(Api *api, gid_t group);
ApiState api_get_state(const Api *api);

/* The effective connection limit (after clamping to RLIMIT_NOFILE). */
unsigned api_get_connection_limit(const Api *api);
/* Connections currently open. */
unsigned api_get_connections(const Api *api);

/*
 * Appends an event to the stream (GET /v1/events): type ("workspace.state",
 * "volume.health", ...) and its fields (an object, taken; may be NULL).
 * Every open stream gets it at once. Returns its sequence number (0 when
 * it could not be recorded).
 */
uint64_t api_event_emit(Api *api, const char *type, json_object *fields);

/* The engine's state changed in a way GET answers show (an observation
 * merged, a daemon's state, a record change): rendered answers kept for
 * the cached routes are dropped, so the next request sees it. An event
 * (api_event_emit), an operation's change and a mutating request do this
 * themselves. NULL ok. */
void api_server_changed(Api *api);

/* An operation that is not the answer to a request (a reload from
 * SIGHUP, an automatic GC): visible in /v1/operations all the same. */
int api_operation_new(Api *api, ApiRouteId kind, ApiOperation **ret);

/*
 * The access decision for one peer (pure; docs/api.md "Access"): reads
 * are allowed to anyone who could connect (the socket's file mode is the
 * gate); mutating routes need uid 0, or `group` as the primary or a
 * supplementary group of the peer.
 */
bool api_peer_may(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                  gid_t group, bool mutating);

/*
 * The credentials of the process on the other end of a connected Unix
 * socket: SO_PEERCRED, and the supplementary groups from SO_PEERGROUPS
 * (taken at connect time, so not racy), falling back to the Groups: line
 * of /proc/<pid>/status on kernels without it. *ret_groups is malloc'ed.
 * Returns: <0 on error, 0 on success.
 */
int api_peer_credentials(int fd, uid_t *ret_uid, gid_t *ret_gid, pid_t *ret_pid,
                         gid_t **ret_groups, size_t *ret_n_groups);
