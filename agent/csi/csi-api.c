/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The layoutd API client of layoutd-csi (csi-api.h). */

#include <curl/curl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "csi-api.h"
#include "util.h"

/* Connecting to a Unix socket is local: a second is generous, and an
 * agent that does not accept within it is as good as down. */
#define CSI_API_CONNECT_TIMEOUT_MS 2000L
/* Answers are small (one workspace, the volumes of one host). */
#define CSI_API_MAX_BODY (8 * MIB)

struct CsiApi {
    char *socket;
    atomic_bool cancelled;
};

typedef struct Buffer {
    char *data;
    size_t len;
    bool too_large;
} Buffer;

void csi_api_reply_done(CsiApiReply *r) {
    if (!r)
        return;
    json_object_put(r->body);
    *r = (CsiApiReply) {};
}

static json_object *reply_error(const CsiApiReply *r) {
    return r ? csi_json_obj(r->body, "error") : NULL;
}

const char *csi_api_reply_error_code(const CsiApiReply *r) {
    return csi_json_str(reply_error(r), "code");
}

const char *csi_api_reply_error_message(const CsiApiReply *r) {
    return csi_json_str(reply_error(r), "message");
}

int csi_api_new(const char *socket_path, CsiApi **ret) {
    if (isempty(socket_path) || socket_path[0] != '/' || !ret)
        return -EINVAL;
    CsiApi *a = calloc(1, sizeof *a);
    if (!a || !(a->socket = strdup(socket_path))) {
        free(a);
        return -ENOMEM;
    }
    atomic_init(&a->cancelled, false);
    *ret = a;
    return 0;
}

CsiApi *csi_api_free(CsiApi *a) {
    if (!a)
        return NULL;
    free(a->socket);
    free(a);
    return NULL;
}

const char *csi_api_socket(const CsiApi *a) {
    return a->socket;
}

void csi_api_cancel_all(CsiApi *a) {
    atomic_store(&a->cancelled, true);
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata) {
    Buffer *b = userdata;
    size_t n = size * nmemb;
    if (b->len + n > CSI_API_MAX_BODY) {
        b->too_large = true;
        return 0; /* curl fails the transfer: CURLE_WRITE_ERROR */
    }
    char *p = realloc(b->data, b->len + n + 1);
    if (!p)
        return 0;
    memcpy(p + b->len, ptr, n);
    b->len += n;
    p[b->len] = 0;
    b->data = p;
    return n;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
    CsiApi *a = userdata;
    return atomic_load(&a->cancelled) ? 1 : 0; /* non-zero aborts: CURLE_ABORTED_BY_CALLBACK */
}

static void curl_cleanupp(CURL **c) {
    if (*c)
        curl_easy_cleanup(*c);
}

static void slist_freep(struct curl_slist **l) {
    if (*l)
        curl_slist_free_all(*l);
}

/* What curl's failure means for the caller. A refused connect on a Unix
 * socket is ECONNREFUSED (a stale socket, the agent is gone) or ENOENT
 * (no socket at all); curl says CURLE_COULDNT_CONNECT for both. */
static int curl_error_to_errno(CsiApi *a, CURLcode e) {
    struct stat st;
    switch (e) {
    case CURLE_COULDNT_CONNECT:
        return stat(a->socket, &st) < 0 && errno == ENOENT ? -ENOENT : -ECONNREFUSED;
    case CURLE_OPERATION_TIMEDOUT:
        return -ETIMEDOUT;
    case CURLE_ABORTED_BY_CALLBACK:
        return -ECANCELED;
    case CURLE_OUT_OF_MEMORY:
        return -ENOMEM;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
        return -ECONNRESET; /* the agent went away mid-request */
    default:
        return -EPROTO;
    }
}

int csi_api_call(CsiApi *a, const char *method, const char *path, json_object *body, usec_t timeout,
                 CsiApiReply *ret) {
    if (!a || isempty(method) || isempty(path) || path[0] != '/' || !ret)
        return -EINVAL;
    if (atomic_load(&a->cancelled))
        return -ECANCELED;

    _cleanup_(curl_cleanupp) CURL *c = curl_easy_init();
    if (!c)
        return -ENOMEM;
    _cleanup_free_ char *url = NULL;
    if (asprintf(&url, "http://localhost%s", path) < 0)
        return -ENOMEM;
    const char *payload = body ? json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN) : NULL;
    _cleanup_(slist_freep) struct curl_slist *headers = NULL;
    if (payload) {
        struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
        if (!h)
            return -ENOMEM;
        headers = h;
    }
    long timeout_ms = timeout == USEC_INFINITY ? 0 : (long) MAX(timeout / USEC_PER_MSEC, (usec_t) 1);
    Buffer b = {};
    CURLcode e = CURLE_OK;
#define SET(opt, val)                                   \
    do {                                                \
        if (e == CURLE_OK)                              \
            e = curl_easy_setopt(c, (opt), (val));      \
    } while (0)
    SET(CURLOPT_UNIX_SOCKET_PATH, a->socket);
    SET(CURLOPT_URL, url);
    SET(CURLOPT_CUSTOMREQUEST, method);
    SET(CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for timeouts */
    SET(CURLOPT_CONNECTTIMEOUT_MS, CSI_API_CONNECT_TIMEOUT_MS);
    SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    SET(CURLOPT_WRITEFUNCTION, on_data);
    SET(CURLOPT_WRITEDATA, &b);
    SET(CURLOPT_NOPROGRESS, 0L);
    SET(CURLOPT_XFERINFOFUNCTION, on_progress);
    SET(CURLOPT_XFERINFODATA, a);
    if (payload) {
        SET(CURLOPT_POSTFIELDS, payload);
        SET(CURLOPT_HTTPHEADER, headers);
    } else if (streq(method, "HEAD"))
        SET(CURLOPT_NOBODY, 1L);
#undef SET
    if (e != CURLE_OK) {
        free(b.data);
        return -EINVAL;
    }

    e = curl_easy_perform(c);
    if (e != CURLE_OK) {
        free(b.data);
        if (b.too_large)
            return -EPROTO;
        return curl_error_to_errno(a, e);
    }
    long status = 0;
    (void) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    json_object *j = NULL;
    if (b.len > 0) {
        json_tokener *tok = json_tokener_new();
        if (!tok) {
            free(b.data);
            return -ENOMEM;
        }
        j = json_tokener_parse_ex(tok, b.data, (int) b.len);
        json_tokener_free(tok);
    }
    free(b.data);
    *ret = (CsiApiReply) { .status = status, .body = j };
    return 0;
}

const char *csi_json_str(json_object *o, const char *key) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    return json_object_get_string(v);
}

json_object *csi_json_obj(json_object *o, const char *key) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_object))
        return NULL;
    return v;
}

bool csi_json_int(json_object *o, const char *key, int64_t *ret) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int))
        return false;
    *ret = json_object_get_int64(v);
    return true;
}
