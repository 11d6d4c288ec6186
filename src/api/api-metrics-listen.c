/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The metrics listener (api.metrics_listen; docs/api.md "Access"): an
 * opt-in TCP socket that serves GET /metrics and nothing else, so that
 * Prometheus can scrape the agent without socat or a textfile timer (as
 * node_exporter listens on :9100). Nothing but the figures is on it: no
 * read of the record, the workspaces or the layout, no change, whoever
 * connects (TCP has no peer credentials to check).
 *
 * Like the read-only socket, the agent accepts on it itself and hands each
 * connection to the one MHD daemon; a connection is known to be the
 * listener's by its family, since every other socket is AF_UNIX.
 */
#include <sys/socket.h>

#include "api-internal.h"
#include "util.h"

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    api_accept_into_mhd(userdata, fd);
    return 0;
}

int api_add_metrics_listener(Api *api, int listen_fd) {
    _cleanup_close_ int fd = listen_fd;
    if (!api || fd < 0 || api->metrics_io)
        return -EINVAL;
    struct sockaddr_storage sa = {};
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0)
        return negative_errno();
    if (sa.ss_family != AF_INET && sa.ss_family != AF_INET6)
        return -EAFNOSUPPORT;
    int r = sd_event_add_io(api->event, &api->metrics_io, fd, EPOLLIN, on_accept, api);
    if (r < 0)
        return r;
    (void) sd_event_source_set_io_fd_own(api->metrics_io, true);
    (void) sd_event_source_set_description(api->metrics_io, "api-metrics");
    (void) sd_event_source_set_priority(api->metrics_io, API_EVENT_PRIORITY);
    TAKE_FD(fd);
    return 0;
}

bool api_metrics_connection(int fd) {
    struct sockaddr_storage sa = {};
    socklen_t len = sizeof sa;
    if (fd < 0 || getsockname(fd, (struct sockaddr *) &sa, &len) < 0)
        return false;
    return sa.ss_family == AF_INET || sa.ss_family == AF_INET6;
}
