/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Byte-stream answers (ApiStream, api.h): what a handler's fd gives, sent
 * as a chunked answer through MHD's content reader. MHD runs on the
 * agent's loop, so the reader must never wait: when the fd has nothing
 * yet it suspends the connection and arms a one-shot io source on the fd,
 * whose callback resumes it (the same pattern as the event stream, with
 * the fd's readiness instead of api_event_emit as the wake-up).
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "api-internal.h"

#define PIPE_BLOCK (64 * 1024)

struct ApiStream {
    Api *api;
    ApiRequest *req;
    ApiStream *prev, *next;      /* Api.pipes */
    int fd;
    sd_event_source *io;
    char *content_type;
    char *filename;
    bool eof;                    /* the fd gave its end */
    bool ended;                  /* api_stream_end() was called */
    int error;
    void (*cancel)(void *userdata);
    void *cancel_userdata;
};

static void pipe_resume(ApiStream *s) {
    if (!s->req || !s->req->suspended)
        return;
    s->req->suspended = false;
    MHD_resume_connection(s->req->mhd);
    api_mhd_kick(s->api);
}

static void pipe_suspend(ApiStream *s) {
    s->req->suspended = true;
    MHD_suspend_connection(s->req->mhd);
}

static int on_readable(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
    ApiStream *s = userdata;
    (void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
    pipe_resume(s);
    return 0;
}

int api_pipe_new(Api *api, ApiRequest *req, ApiStream **ret) {
    ApiStream *s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    *s = (ApiStream) { .api = api, .req = req, .fd = -EBADF };
    s->next = api->pipes;
    if (api->pipes)
        api->pipes->prev = s;
    api->pipes = s;
    *ret = s;
    return 0;
}

int api_stream_set_fd(ApiStream *s, int fd, const char *content_type, const char *filename) {
    if (!s || fd < 0)
        return -EINVAL;
    if (s->fd >= 0)
        return -EALREADY;
    char *ct = strdup(content_type ?: "application/octet-stream");
    char *fn = filename ? strdup(filename) : NULL;
    if (!ct || (filename && !fn)) {
        free(ct);
        free(fn);
        return -ENOMEM;
    }
    int r = sd_event_add_io(s->api->event, &s->io, fd, EPOLLIN, on_readable, s);
    if (r < 0) {
        free(ct);
        free(fn);
        return r;
    }
    (void) sd_event_source_set_priority(s->io, API_EVENT_PRIORITY);
    (void) sd_event_source_set_enabled(s->io, SD_EVENT_OFF);
    (void) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    s->fd = fd;
    s->content_type = ct;
    s->filename = fn;
    return 0;
}

void api_stream_set_cancel(ApiStream *s, void (*cancel)(void *userdata), void *userdata) {
    if (!s)
        return;
    s->cancel = cancel;
    s->cancel_userdata = userdata;
}

void api_stream_end(ApiStream *s, int error) {
    if (!s || s->ended)
        return;
    s->ended = true;
    s->error = error;
    s->cancel = NULL;
    /* A reader parked at the fd's end waits for this. */
    pipe_resume(s);
}

bool api_pipe_has_fd(const ApiStream *s) {
    return s && s->fd >= 0;
}

static ssize_t pipe_read(void *cls, uint64_t pos, char *buf, size_t max) {
    ApiStream *s = cls;
    if (s->api->state == API_STATE_STOPPING)
        return MHD_CONTENT_READER_END_WITH_ERROR;
    while (!s->eof) {
        ssize_t n = read(s->fd, buf, max);
        if (n > 0)
            return n;
        if (n == 0) {
            s->eof = true;
            s->io = sd_event_source_disable_unref(s->io);
            s->fd = safe_close(s->fd);
            break;
        }
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        /* Nothing yet: park until the fd is readable (0 with the
         * connection suspended, as microhttpd.h asks of an external loop). */
        if (sd_event_source_set_enabled(s->io, SD_EVENT_ONESHOT) < 0)
            return MHD_CONTENT_READER_END_WITH_ERROR;
        pipe_suspend(s);
        return 0;
    }
    if (!s->ended) {
        /* All bytes are out: wait for the producer's verdict. */
        pipe_suspend(s);
        return 0;
    }
    return s->error < 0 ? MHD_CONTENT_READER_END_WITH_ERROR : MHD_CONTENT_READER_END_OF_STREAM;
}

enum MHD_Result api_pipe_queue(ApiRequest *req) {
    ApiStream *s = req->pipe;
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, PIPE_BLOCK, pipe_read, s, NULL);
    if (!resp)
        return MHD_NO;
    (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, s->content_type);
    (void) MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    if (s->filename) {
        char cd[256];
        snprintf(cd, sizeof cd, "attachment; filename=\"%s\"", s->filename);
        (void) MHD_add_response_header(resp, "Content-Disposition", cd);
    }
    /* Long on purpose: not a slow client. */
    api_conn_exempt(req->api, req->conn);
    enum MHD_Result ok = MHD_queue_response(req->mhd, 200, resp);
    MHD_destroy_response(resp);
    if (ok == MHD_YES) {
        req->status = 200;
        req->responded = true;
    }
    return ok;
}

void api_pipe_resume_all(Api *api) {
    for (ApiStream *s = api->pipes; s; s = s->next)
        pipe_resume(s);
}

void api_pipe_free(ApiStream *s) {
    if (!s)
        return;
    if (!s->ended && s->cancel)
        s->cancel(s->cancel_userdata);
    if (s->prev)
        s->prev->next = s->next;
    else if (s->api->pipes == s)
        s->api->pipes = s->next;
    if (s->next)
        s->next->prev = s->prev;
    sd_event_source_disable_unref(s->io);
    safe_close(s->fd);
    free(s->content_type);
    free(s->filename);
    free(s);
}
