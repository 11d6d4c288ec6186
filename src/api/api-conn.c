/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The connections under their request deadline (a list ordered by
 * deadline, one timer for its head), MHD's next run, and connections
 * accepted on a listener of ours handed to MHD (api-internal.h). The
 * bottom of src/api: it calls nothing of the folder but its state.
 */
#include <sys/socket.h>

#include "api-internal.h"
#include "util.h"


static void conn_unlink(Api *api, ApiConn *c) {
    if (!c->linked)
        return;
    c->linked = false;
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
    c->linked = true;
    c->prev = api->conns_tail;
    c->next = NULL;
    if (api->conns_tail)
        api->conns_tail->next = c;
    else
        api->conns_head = c;
    api->conns_tail = c;
}

void api_conn_deadline_rearm(Api *api) {
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

void api_conn_reset_deadline(Api *api, ApiConn *c) {
    if (c->killed)
        return;
    conn_unlink(api, c);
    c->deadline = now_usec(CLOCK_MONOTONIC) + api->config.request_timeout_sec * USEC_PER_SEC;
    conn_append(api, c);
    api_conn_deadline_rearm(api);
}

void api_conn_exempt(Api *api, ApiConn *c) {
    if (!c)
        return;
    bool was_head = api->conns_head == c;
    conn_unlink(api, c);
    if (was_head)
        api_conn_deadline_rearm(api);
}

void api_conn_track(Api *api, ApiConn *c) {
    conn_append(api, c);
    if (api->conns_head == c)
        api_conn_deadline_rearm(api);
}

void api_conn_untrack(Api *api, ApiConn *c) {
    bool was_head = api->conns_head == c;
    conn_unlink(api, c);
    if (was_head)
        api_conn_deadline_rearm(api);
}

void api_mhd_kick(Api *api) {
    /* A resumed connection is not in MHD's epoll set until MHD_run puts it
     * back (and MHD_get_timeout does not count it), so nothing would wake
     * the loop for it: run MHD at the next turn of the loop. */
    (void) sd_event_source_set_time(api->timer, now_usec(CLOCK_MONOTONIC));
    (void) sd_event_source_set_enabled(api->timer, SD_EVENT_ONESHOT);
}

void api_accept_into_mhd(Api *api, int listen_fd) {
    bool added = false;
    /* Edge or level, take all that wait: each accept is cheap. */
    for (unsigned i = 0; i < 64; i++) {
        struct sockaddr_storage peer = {};
        socklen_t len = sizeof peer;
        int c = accept4(listen_fd, (struct sockaddr *) &peer, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (c < 0)
            break; /* EAGAIN; or EMFILE, ECONNABORTED: the next wake-up tries again */
        if (len < sizeof(sa_family_t))
            len = sizeof(sa_family_t);
        /* MHD closes c whether or not it takes it (at its connection
         * limit it does not). */
        if (MHD_add_connection(api->mhd, c, (const struct sockaddr *) &peer, len) == MHD_YES)
            added = true;
    }
    if (added)
        api_mhd_kick(api); /* a new connection is served by the next MHD_run */
}
