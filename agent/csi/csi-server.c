/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gRPC server loop (csi-server.h says why the C core, and the shape).
 *
 * Every CsiCall is a tag on the one completion queue, and is freed only
 * by the loop thread: when its request comes back empty (the server shuts
 * down), or when its answer batch completes. A handler thread's last touch
 * of its call is grpc_call_start_batch(); the loop joins the thread when
 * that batch completes, so no thread outlives the call it served.
 */

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "csi-plugin.h"
#include "csi-server.h"
#include "util.h"

/* Handler threads at once; a call beyond them is answered at once with
 * RESOURCE_EXHAUSTED (a kubelet retries). Far above what one node's
 * kubelet sends: it serialises operations per volume. */
#define CSI_MAX_CALLS 64

typedef enum CallKind {
    CALL_REGISTERED, /* requested for one method of the table */
    CALL_GENERIC,    /* any other method: answered UNIMPLEMENTED */
} CallKind;

struct CsiCall {
    CsiServer *server;
    CallKind kind;
    const CsiMethod *method;
    grpc_call *call;
    gpr_timespec deadline;
    grpc_call_details details;          /* CALL_GENERIC */
    grpc_metadata_array metadata;
    grpc_byte_buffer *payload;          /* CALL_REGISTERED */
    usec_t deadline_usec;               /* CLOCK_MONOTONIC */
    bool answering;                     /* the answer batch was started */
    bool has_thread;
    pthread_t thread;

    /* The answer. */
    grpc_byte_buffer *reply;
    grpc_status_code status;
    bool failed;
    char *message;                      /* NULL: none (or out of memory) */
    grpc_slice message_slice;
    int cancelled;
};

struct CsiServer {
    grpc_server *server;
    grpc_completion_queue *cq;
    const CsiMethod *table;
    size_t n_methods;
    void **registered;
    void *userdata;
    bool started;

    /* The loop thread's own counters. */
    unsigned alive;       /* CsiCalls not yet freed, requested ones included */
    unsigned threads;     /* handler threads not yet joined */
    bool shutdown_done;   /* the server's shutdown tag came back */
    bool cq_shut;

    pthread_mutex_t lock; /* stopping, and the sleepers' condition */
    pthread_cond_t cond;
    bool stopping;
};

static char shutdown_tag;

static void call_free(CsiCall *c) {
    if (!c)
        return;
    if (c->call)
        grpc_call_unref(c->call);
    grpc_metadata_array_destroy(&c->metadata);
    grpc_call_details_destroy(&c->details);
    if (c->payload)
        grpc_byte_buffer_destroy(c->payload);
    if (c->reply)
        grpc_byte_buffer_destroy(c->reply);
    free(c->message);
    c->server->alive--;
    free(c);
}

static int request_call(CsiServer *s, const CsiMethod *m) {
    CsiCall *c = calloc(1, sizeof *c);
    if (!c)
        return -ENOMEM;
    c->server = s;
    c->kind = m ? CALL_REGISTERED : CALL_GENERIC;
    c->method = m;
    grpc_metadata_array_init(&c->metadata);
    grpc_call_details_init(&c->details);
    s->alive++;
    grpc_call_error e;
    if (m)
        e = grpc_server_request_registered_call(s->server, s->registered[m - s->table], &c->call, &c->deadline,
                                                &c->metadata, &c->payload, s->cq, s->cq, c);
    else
        e = grpc_server_request_call(s->server, &c->call, &c->details, &c->metadata, s->cq, s->cq, c);
    if (e != GRPC_CALL_OK) {
        call_free(c);
        return -EIO;
    }
    return 0;
}

/* ---- answers ------------------------------------------------------------ */

static void set_status(CsiCall *c, grpc_status_code code, const char *message) {
    if (c->failed || c->reply)
        return; /* the first answer wins */
    c->failed = true;
    c->status = code;
    c->message = strdup(message ?: "");
}

int csi_call_reply(CsiCall *c, const ProtobufCMessage *reply) {
    if (c->failed || c->reply)
        return 0;
    size_t len = protobuf_c_message_get_packed_size(reply);
    uint8_t *buf = malloc(len ?: 1);
    if (!buf)
        return -ENOMEM;
    protobuf_c_message_pack(reply, buf);
    grpc_slice slice = grpc_slice_new(buf, len, free);
    c->reply = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    c->status = GRPC_STATUS_OK;
    return c->reply ? 0 : -ENOMEM;
}

void csi_call_fail(CsiCall *c, grpc_status_code code, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    set_status(c, code, buf);
}

/* Starts the answer batch. The call belongs to the loop once this returned:
 * the caller must not touch c afterwards. */
static void answer(CsiCall *c) {
    if (!c->reply && !c->failed)
        set_status(c, GRPC_STATUS_INTERNAL, "the handler gave no answer");
    /* Static: the text lives in c until the batch is done. */
    c->message_slice = grpc_slice_from_static_string(c->message ?: "");
    grpc_op ops[4];
    size_t n = 0;
    memset(ops, 0, sizeof ops);
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    if (c->reply && c->status == GRPC_STATUS_OK) {
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = c->reply;
    }
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = c->status;
    ops[n++].data.send_status_from_server.status_details = &c->message_slice;
    ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
    c->answering = true;
    grpc_call_error e = grpc_call_start_batch(c->call, ops, n, c, NULL);
    if (e != GRPC_CALL_OK) {
        /* Only a programming error gets here (ops out of order or twice).
         * The tag will never come back: cancel the call so the client
         * hears of it, and leave this CsiCall (and its thread) behind. */
        log_error("grpc_call_start_batch failed (%d): call dropped", (int) e);
        (void) grpc_call_cancel(c->call, NULL);
    }
}

/* ---- handlers ----------------------------------------------------------- */

static void *handler_thread(void *userdata) {
    CsiCall *c = userdata;
    CsiServer *s = c->server;
    ProtobufCMessage *req = NULL;

    if (!c->payload)
        csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "no request message");
    else {
        grpc_byte_buffer_reader reader;
        if (!grpc_byte_buffer_reader_init(&reader, c->payload))
            csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "unreadable request message");
        else {
            grpc_slice slice = grpc_byte_buffer_reader_readall(&reader);
            grpc_byte_buffer_reader_destroy(&reader);
            req = protobuf_c_message_unpack(c->method->request, NULL, GRPC_SLICE_LENGTH(slice),
                                            GRPC_SLICE_START_PTR(slice));
            grpc_slice_unref(slice);
            if (!req)
                csi_call_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "the request is not a valid %s message",
                              c->method->request->name);
        }
    }
    usec_t t0 = now_usec(CLOCK_MONOTONIC);
    if (req) {
        c->method->handler(c, req, s->userdata);
        protobuf_c_message_free_unpacked(req, NULL);
    }
    /* Every refusal is in the plugin's log too, not only in the CO's
     * events: "kubectl logs" of the node plugin tells the whole story. */
    const char *rpc = strrchr(c->method->path, '/');
    if (c->failed)
        log_warning("%s: %s: %s", rpc ? rpc + 1 : c->method->path, csi_status_to_string(c->status),
                    c->message ?: "");
    else
        log_debug("%s: OK in %.3fs", rpc ? rpc + 1 : c->method->path,
                  (double) (now_usec(CLOCK_MONOTONIC) - t0) / USEC_PER_SEC);
    answer(c); /* c is the loop's from here */
    return NULL;
}

static void dispatch(CsiServer *s, CsiCall *c) {
    c->deadline_usec = USEC_INFINITY;
    gpr_timespec inf = gpr_inf_future(c->deadline.clock_type);
    if (gpr_time_cmp(c->deadline, inf) != 0) {
        gpr_timespec left = gpr_time_sub(c->deadline, gpr_now(c->deadline.clock_type));
        int64_t us = left.tv_sec * 1000000 + left.tv_nsec / 1000;
        c->deadline_usec = now_usec(CLOCK_MONOTONIC) + (usec_t) MAX(us, (int64_t) 0);
    }

    if (c->kind == CALL_GENERIC) {
        char *method = grpc_slice_to_c_string(c->details.method);
        log_notice("%s: UNIMPLEMENTED", method ?: "?");
        csi_call_fail(c, GRPC_STATUS_UNIMPLEMENTED, "%s is not implemented by layoutd-csi (a node plugin "
                      "for ephemeral volumes, without a controller service)", method ?: "this method");
        gpr_free(method);
        answer(c);
        return;
    }
    if (s->threads >= CSI_MAX_CALLS) {
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "layoutd-csi serves %d calls at once; try again",
                      CSI_MAX_CALLS);
        answer(c);
        return;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int r = pthread_create(&c->thread, &attr, handler_thread, c);
    pthread_attr_destroy(&attr);
    if (r != 0) {
        csi_call_fail(c, GRPC_STATUS_RESOURCE_EXHAUSTED, "cannot start a thread for this call: %s", strerror(r));
        answer(c);
        return;
    }
    c->has_thread = true;
    s->threads++;
}

/* ---- the server --------------------------------------------------------- */

int csi_server_new(const char *path, const CsiMethod *table, void *userdata, CsiServer **ret) {
    struct stat st;
    if (isempty(path) || path[0] != '/' || !table || !ret)
        return -EINVAL;
    /* gRPC replaces a socket at the path; make sure it is one. */
    if (lstat(path, &st) == 0 && !S_ISSOCK(st.st_mode))
        return -EEXIST;

    _cleanup_free_ char *addr = NULL;
    CsiServer *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->table = table;
    s->userdata = userdata;
    pthread_mutex_init(&s->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cond, &ca);
    pthread_condattr_destroy(&ca);
    while (table[s->n_methods].path)
        s->n_methods++;

    int r = -ENOMEM;
    s->registered = calloc(s->n_methods ?: 1, sizeof(void *));
    s->cq = grpc_completion_queue_create_for_next(NULL);
    s->server = grpc_server_create(NULL, NULL);
    if (!s->registered || !s->cq || !s->server)
        goto fail;
    grpc_server_register_completion_queue(s->server, s->cq, NULL);
    for (size_t i = 0; i < s->n_methods; i++) {
        s->registered[i] = grpc_server_register_method(s->server, table[i].path, NULL,
                                                       GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
        if (!s->registered[i]) {
            r = -EINVAL;
            goto fail;
        }
    }

    if (asprintf(&addr, "unix:%s", path) < 0) {
        addr = NULL;
        goto fail;
    }
    grpc_server_credentials *creds = grpc_insecure_server_credentials_create();
    /* Only root reaches it: kubelet and the registrar run as root. */
    mode_t old = umask(0077);
    int port = grpc_server_add_http2_port(s->server, addr, creds);
    umask(old);
    grpc_server_credentials_release(creds);
    if (port == 0) {
        r = -EADDRNOTAVAIL;
        goto fail;
    }
    *ret = s;
    return 0;

fail:
    csi_server_free(s);
    return r;
}

int csi_server_run(CsiServer *s) {
    grpc_server_start(s->server);
    s->started = true;
    for (size_t i = 0; i < s->n_methods; i++)
        if (request_call(s, &s->table[i]) < 0)
            return -EIO;
    if (request_call(s, NULL) < 0)
        return -EIO;

    for (;;) {
        grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN)
            break;
        if (ev.type != GRPC_OP_COMPLETE)
            continue;
        if (ev.tag == &shutdown_tag)
            s->shutdown_done = true;
        else {
            CsiCall *c = ev.tag;
            if (c->answering) {
                if (c->has_thread) {
                    pthread_join(c->thread, NULL);
                    s->threads--;
                }
                call_free(c);
            } else if (!ev.success)
                call_free(c); /* a request the shutdown cancelled */
            else {
                bool stopping;
                pthread_mutex_lock(&s->lock);
                stopping = s->stopping;
                pthread_mutex_unlock(&s->lock);
                /* Keep one request open per method for the next call. */
                if (!stopping)
                    (void) request_call(s, c->method);
                dispatch(s, c);
            }
        }
        if (s->shutdown_done && s->alive == 0 && !s->cq_shut) {
            grpc_completion_queue_shutdown(s->cq);
            s->cq_shut = true;
        }
    }
    return 0;
}

void csi_server_stop(CsiServer *s) {
    pthread_mutex_lock(&s->lock);
    bool was = s->stopping;
    s->stopping = true;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    if (was)
        return;
    grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
    grpc_server_cancel_all_calls(s->server);
}

CsiServer *csi_server_free(CsiServer *s) {
    if (!s)
        return NULL;
    if (s->server) {
        if (!s->started)
            grpc_server_start(s->server); /* a server must be started to shut down cleanly */
        if (!s->shutdown_done) {
            grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
            grpc_server_cancel_all_calls(s->server);
            for (;;) {
                grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
                if (ev.type == GRPC_OP_COMPLETE && ev.tag == &shutdown_tag)
                    break;
                if (ev.type == GRPC_OP_COMPLETE)
                    call_free(ev.tag);
            }
        }
        grpc_server_destroy(s->server);
    }
    if (s->cq) {
        if (!s->cq_shut)
            grpc_completion_queue_shutdown(s->cq);
        while (grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
            ;
        grpc_completion_queue_destroy(s->cq);
    }
    free(s->registered);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return NULL;
}

const char *csi_call_method(const CsiCall *c) {
    return c->method ? c->method->path : "?";
}

usec_t csi_call_deadline(const CsiCall *c) {
    return c->deadline_usec;
}

bool csi_call_stopping(const CsiCall *c) {
    CsiServer *s = c->server;
    pthread_mutex_lock(&s->lock);
    bool r = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return r;
}

int csi_call_sleep(CsiCall *c, usec_t usec) {
    CsiServer *s = c->server;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t) ts.tv_nsec + (usec % USEC_PER_SEC) * 1000;
    ts.tv_sec += (time_t) (usec / USEC_PER_SEC + ns / 1000000000);
    ts.tv_nsec = (long) (ns % 1000000000);
    pthread_mutex_lock(&s->lock);
    while (!s->stopping)
        if (pthread_cond_timedwait(&s->cond, &s->lock, &ts) != 0)
            break;
    bool stopping = s->stopping;
    pthread_mutex_unlock(&s->lock);
    return stopping ? -ECANCELED : 0;
}
