/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * api.metrics_listen: the address of the opt-in TCP listener for /metrics
 * (as node_exporter's --web.listen-address). Pure: inet_pton, no lookup.
 * "9464" is loopback (127.0.0.1:9464), so that naming only a port never
 * exposes the node's figures to the network; "0.0.0.0:9464" or
 * "[::]:9464" must be written out.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "util.h"

static int parse_port(const char *s, uint16_t *ret) {
    if (!s || !*s || strlen(s) > 5 || strspn(s, "0123456789") != strlen(s))
        return -EINVAL;
    unsigned long v = strtoul(s, NULL, 10);
    if (v == 0 || v > 65535)
        return -EINVAL;
    *ret = (uint16_t) v;
    return 0;
}

int layout_parse_listen(const char *s, struct sockaddr_storage *ret, socklen_t *ret_len) {
    struct sockaddr_storage ss = {};
    socklen_t len;
    uint16_t port;
    if (!s || !ret || !ret_len)
        return -EINVAL;
    const char *colon = strrchr(s, ':');
    if (!colon) { /* a port alone: loopback */
        if (parse_port(s, &port) < 0)
            return -EINVAL;
        struct sockaddr_in *in = (struct sockaddr_in *) &ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(*in);
    } else if (s[0] == '[') { /* [IPv6]:PORT */
        const char *close = strchr(s, ']');
        if (!close || close + 1 != colon || close - s - 1 >= INET6_ADDRSTRLEN || parse_port(colon + 1, &port) < 0)
            return -EINVAL;
        char host[INET6_ADDRSTRLEN];
        memcpy(host, s + 1, (size_t) (close - s - 1));
        host[close - s - 1] = 0;
        struct sockaddr_in6 *in6 = (struct sockaddr_in6 *) &ss;
        if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
            return -EINVAL;
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(port);
        len = sizeof(*in6);
    } else { /* IPv4:PORT */
        if (colon - s >= INET_ADDRSTRLEN || parse_port(colon + 1, &port) < 0)
            return -EINVAL;
        char host[INET_ADDRSTRLEN];
        memcpy(host, s, (size_t) (colon - s));
        host[colon - s] = 0;
        struct sockaddr_in *in = (struct sockaddr_in *) &ss;
        if (inet_pton(AF_INET, host, &in->sin_addr) != 1)
            return -EINVAL;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        len = sizeof(*in);
    }
    *ret = ss;
    *ret_len = len;
    return 0;
}
