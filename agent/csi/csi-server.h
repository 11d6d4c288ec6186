/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The gRPC server of layoutd-csi, on the gRPC C core (libgrpc, Debian's
 * libgrpc-dev) with protobuf-c messages. Why the C core and not grpc++:
 * the plugin is C like the rest of layoutd, and the C core's completion
 * queue API is all a unary server needs (request a call, read its one
 * message, answer with one batch); no HTTP/2 or gRPC framing is written
 * here, the library does all of it.
 *
 * Shape: one thread (csi_server_run) owns the completion queue. For every
 * method in the table it keeps one call requested; an arriving call is
 * handed to a thread of its own (the handlers block on the layoutd API
 * for as long as a workspace takes to start, and a Probe must not wait
 * behind a publish), which unpacks the request, runs the handler and
 * answers. Calls to methods that are not in the table (the Controller
 * service, NodeStageVolume...) are answered UNIMPLEMENTED.
 */

#include <grpc/grpc.h>
#include <grpc/status.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

#include "macro.h"

typedef struct CsiServer CsiServer;
typedef struct CsiCall CsiCall;

/* A handler: reads request (unpacked, freed by the server after), answers
 * with csi_call_reply() or csi_call_fail(). A handler that does neither
 * is answered INTERNAL. */
typedef void (*CsiHandler)(CsiCall *call, const ProtobufCMessage *request, void *userdata);

typedef struct CsiMethod {
    const char *path;                           /* "/csi.v1.Node/NodePublishVolume" */
    const ProtobufCMessageDescriptor *request;  /* how to unpack its request */
    CsiHandler handler;
} CsiMethod;

/*
 * Listens on the Unix socket at path (a stale socket there is replaced;
 * anything else there is -EEXIST), serving the methods of table[] (ended
 * by a row with path NULL; the table must outlive the server).
 * Returns: <0 on error, 0 with *ret.
 */
int csi_server_new(const char *path, const CsiMethod *table, void *userdata, CsiServer **ret);

/* Serves until csi_server_stop(); then waits for the calls in flight.
 * Returns: 0 when stopped, <0 on error. */
int csi_server_run(CsiServer *s);

/* Asks a running server to stop (any thread; async-signal-unsafe). Calls
 * in flight are cancelled and their handlers see csi_call_stopping(). */
void csi_server_stop(CsiServer *s);

/* Frees a server that is not running. NULL ok; returns NULL. */
CsiServer *csi_server_free(CsiServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(CsiServer *, csi_server_free)

/* The answer: reply is packed at once (the caller keeps ownership of it).
 * Returns: 0, or -ENOMEM (the call is then answered INTERNAL). */
int csi_call_reply(CsiCall *c, const ProtobufCMessage *reply);

/* An error answer with code and a message (what the CO shows the user:
 * kubectl describe pod prints it). The first answer set wins. */
void csi_call_fail(CsiCall *c, grpc_status_code code, const char *fmt, ...) _printf_(3, 4);

/* The method's path, for logs. */
const char *csi_call_method(const CsiCall *c);

/* When the caller gives up (its gRPC deadline), CLOCK_MONOTONIC usec;
 * USEC_INFINITY when it set none. */
usec_t csi_call_deadline(const CsiCall *c);

/* Whether the server is stopping (the handler should return soon). */
bool csi_call_stopping(const CsiCall *c);

/* Sleeps usec, or less when the server stops.
 * Returns: 0, -ECANCELED when the server is stopping. */
int csi_call_sleep(CsiCall *c, usec_t usec);
