/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The read-only socket (api.readonly_socket; docs/api.md "Access"): a
 * second listening socket whose connections may only read. It is for
 * monitoring (a Prometheus bridge, the capacity advertiser, a pod that
 * polls /v1/capacity) that must not be able to change anything, whatever
 * its uid and groups: the socket, not the peer, decides.
 *
 * The agent accepts on it itself and hands each connection to the same
 * libmicrohttpd daemon (MHD_add_connection), so both sockets share one
 * route table, one event stream, one set of operations and one
 * connection limit. A connection is known to be read-only by its local
 * address, which for an accepted Unix socket is the path of the socket
 * it came in on.
 */

#include <sys/socket.h>
#include <sys/un.h>

#include "api-internal.h"
#include "util.h"

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    api_accept_into_mhd(userdata, fd);
    return 0;
}

int api_add_readonly_socket(Api *api, int listen_fd) {
    _cleanup_close_ int fd = listen_fd;
    if (!api || fd < 0 || api->ro_io)
        return -EINVAL;
    struct sockaddr_un sa = {};
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0)
        return negative_errno();
    if (sa.sun_family != AF_UNIX || len <= offsetof(struct sockaddr_un, sun_path) || sa.sun_path[0] == 0)
        return -EINVAL;
    api->ro_addr = sa;
    api->ro_addr_len = len;
    int r = sd_event_add_io(api->event, &api->ro_io, fd, EPOLLIN, on_accept, api);
    if (r < 0)
        return r;
    (void) sd_event_source_set_io_fd_own(api->ro_io, true);
    (void) sd_event_source_set_description(api->ro_io, "api-readonly");
    (void) sd_event_source_set_priority(api->ro_io, API_EVENT_PRIORITY);
    TAKE_FD(fd);
    return 0;
}

bool api_readonly_connection(const Api *api, int fd) {
    if (!api->ro_io || fd < 0)
        return false;
    struct sockaddr_un sa = {};
    socklen_t len = sizeof sa;
    if (getsockname(fd, (struct sockaddr *) &sa, &len) < 0)
        return true; /* cannot tell: fail closed, no changes */
    return len == api->ro_addr_len && memcmp(&sa, &api->ro_addr, len) == 0;
}
