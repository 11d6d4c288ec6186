/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The layoutd API as layoutd-csi uses it: HTTP/1.1 + JSON on the agent's
 * Unix socket (docs/api.md), with libcurl (CURLOPT_UNIX_SOCKET_PATH) and
 * json-c. One easy handle per request, so any thread may call. The plugin
 * never touches a volume itself: creating, waiting for and removing
 * workspaces all go through here, and layoutd stays their one owner.
 */

#include <json-c/json.h>
#include <stdbool.h>

#include "macro.h"

typedef struct CsiApi CsiApi;

static inline void csi_json_putp(json_object **j) {
    json_object_put(*j);
}
#define _cleanup_json_ _cleanup_(csi_json_putp)

/* An answer: the HTTP status and the parsed body (NULL if it was empty or
 * not JSON). */
typedef struct CsiApiReply {
    long status;
    json_object *body;
} CsiApiReply;

void csi_api_reply_done(CsiApiReply *r);

/* The error answer's "code" and "message" ({"error": {...}}), or NULL. */
const char *csi_api_reply_error_code(const CsiApiReply *r);
const char *csi_api_reply_error_message(const CsiApiReply *r);

/* Call curl_global_init() before the first, and from one thread.
 * Returns: <0 on error, 0 with *ret. */
int csi_api_new(const char *socket_path, CsiApi **ret);
CsiApi *csi_api_free(CsiApi *a);
DEFINE_TRIVIAL_CLEANUP_FUNC(CsiApi *, csi_api_free)

const char *csi_api_socket(const CsiApi *a);

/* From now on every request in flight, and every new one, ends at once
 * with -ECANCELED (the plugin is stopping). Any thread. */
void csi_api_cancel_all(CsiApi *a);

/*
 * method path (with its query) [body]: one request, waiting at most
 * timeout (from now) for the whole answer.
 * Returns: -ECONNREFUSED (nothing listens: the agent is down) or -ENOENT
 * (no socket), -ETIMEDOUT, -ECANCELED, -EPROTO (not an HTTP answer),
 * -ENOMEM; 0 with *ret for any HTTP status (the caller reads it).
 */
int csi_api_call(CsiApi *a, const char *method, const char *path, json_object *body, usec_t timeout,
                 CsiApiReply *ret);

/* Helpers to read a body: NULL / 0 / false when the key is missing or of
 * another type. path is a "/"-less key chain, e.g. ("daemon", "state"). */
const char *csi_json_str(json_object *o, const char *key);
json_object *csi_json_obj(json_object *o, const char *key);
bool csi_json_int(json_object *o, const char *key, int64_t *ret);
