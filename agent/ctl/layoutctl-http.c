/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* HTTP to the agent's API over its Unix socket (libcurl); see layoutctl-http.h. */
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <curl/curl.h>

#include "escape.h"
#include "layout.h"
#include "layoutctl-http.h"
#include "util.h"

#define CLIENT_MAX_RESPONSE (64 * MIB)
/* How long one GET of an operation waits before it is asked again (the
 * agent answers at once when it ends). */
#define CLIENT_OPERATION_POLL_SEC 5

static bool use_color;

void client_init(ClientArgs *a, const LayoutctlGlobals *g) {
    a->json = g->json;
    a->socket_path = g->socket_path ?: LAYOUT_API_SOCKET_DEFAULT;
    use_color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
}

const char *client_color(const char *code) {
    return use_color ? code : "";
}

bool client_use_color(void) {
    return use_color;
}

const char *client_health_color_name(const char *s) {
    if (!s)
        return NULL;
    if (STR_IN_SET(s, "ok", "running", "ready", "up", "succeeded"))
        return "green";
    if (STR_IN_SET(s, "starting", "stopping", "restarting", "backoff", "degraded", "warning", "blocked"))
        return "yellow";
    return "red";
}

const char *client_health_color(const char *s) {
    const char *n = client_health_color_name(s);
    return !n ? NULL : streq(n, "green") ? C_GREEN : streq(n, "yellow") ? C_YELLOW : C_RED;
}

const char *client_safe(unsigned slot, const char *s) {
    static char *buf[4];
    if (!s)
        return NULL;
    slot %= ELEMENTSOF(buf);
    free(buf[slot]);
    buf[slot] = str_escape_terminal(s);
    return buf[slot] ?: "?";
}

void reply_done(Reply *r) {
    json_object_put(r->json);
    free(r->raw);
    free(r->location);
    *r = (Reply) {};
}

typedef struct Buffer {
    char *data;
    size_t len;
    bool overflow;
    char *location;
} Buffer;

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
    Buffer *b = userdata;
    size_t n = size * nmemb;
    if (b->len + n > CLIENT_MAX_RESPONSE) {
        b->overflow = true;
        return 0; /* aborts the transfer */
    }
    char *p = realloc(b->data, b->len + n + 1);
    if (!p)
        return 0;
    memcpy(p + b->len, ptr, n);
    b->data = p;
    b->len += n;
    b->data[b->len] = 0;
    return n;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata) {
    Buffer *b = userdata;
    size_t n = size * nmemb;
    if (n > 10 && strncasecmp(ptr, "Location:", 9) == 0) {
        size_t i = 9, j = n;
        while (i < j && (ptr[i] == ' ' || ptr[i] == '\t'))
            i++;
        while (j > i && (ptr[j - 1] == '\r' || ptr[j - 1] == '\n'))
            j--;
        free(b->location);
        b->location = strndup(ptr + i, j - i);
    }
    return n;
}

/* Why could we not connect? libcurl only says "couldn't connect", so ask
 * the socket ourselves: that tells "not running" from "not allowed". */
static int diagnose_socket(const char *path) {
    struct stat st;
    if (stat(path, &st) < 0)
        return -errno;
    if (!S_ISSOCK(st.st_mode))
        return -ENOTSOCK;
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);
    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
        return -errno;
    return 0;
}

/* The socket's group, for messages: its name, or its number; false when
 * the socket cannot be looked at (a directory on the way is closed). */
static bool socket_group(const char *path, char *buf, size_t n) {
    struct stat st;
    snprintf(buf, n, "?");
    if (stat(path, &st) < 0)
        return false;
    char tmp[4096];
    struct group grp, *g = NULL;
    if (getgrgid_r(st.st_gid, &grp, tmp, sizeof tmp, &g) == 0 && g)
        snprintf(buf, n, "%s", g->gr_name);
    else
        snprintf(buf, n, "%u", (unsigned) st.st_gid);
    return true;
}

/* What an operator does about an agent that is not there. */
static void not_running_hint(void) {
    fprintf(stderr, "Start it with 'systemctl start layoutd'; 'journalctl -u layoutd' says why it stopped.\n");
}

/* Connection failures are either "not there (yet)" (-ENOENT,
 * -ECONNREFUSED: worth waiting for) or final. */
static bool transient_connect_error(int r) {
    return r == -ENOENT || r == -ECONNREFUSED;
}

static int transport_failure(const char *verb, const ClientArgs *a, CURLcode cc, const char *errbuf, bool overflow,
                             int diagnosed) {
    if (a->quiet)
        return cc != CURLE_COULDNT_CONNECT ? LAYOUTCTL_EXIT_FAILURE
               : diagnosed == -EACCES || diagnosed == -EPERM ? LAYOUTCTL_EXIT_FAILURE
                                                               : LAYOUTCTL_EXIT_UNREACHABLE;
    if (cc == CURLE_COULDNT_CONNECT) {
        int r = diagnosed;
        if (r == -ENOENT) {
            fprintf(stderr, "layoutctl %s: layoutd is not running (no socket at %s)\n", verb, a->socket_path);
            not_running_hint();
            return LAYOUTCTL_EXIT_UNREACHABLE;
        }
        if (r == -ECONNREFUSED) {
            fprintf(stderr, "layoutctl %s: layoutd is not running (nothing listens on %s)\n", verb, a->socket_path);
            not_running_hint();
            return LAYOUTCTL_EXIT_UNREACHABLE;
        }
        if (r == -EACCES || r == -EPERM) {
            char group[64];
            if (socket_group(a->socket_path, group, sizeof group))
                fprintf(stderr,
                        "layoutctl %s: permission denied on %s: connecting needs root or membership in its group "
                        "'%s' ('usermod -aG %s USER', then log in again)\n",
                        verb, a->socket_path, group, group);
            else
                fprintf(stderr, "layoutctl %s: permission denied on %s: a directory on its path is closed to you\n",
                        verb, a->socket_path);
            return LAYOUTCTL_EXIT_FAILURE;
        }
        fprintf(stderr, "layoutctl %s: cannot connect to layoutd at %s: %s\n", verb, a->socket_path,
                r < 0 ? strerror(-r) : (errbuf[0] ? errbuf : curl_easy_strerror(cc)));
        return LAYOUTCTL_EXIT_UNREACHABLE;
    }
    if (overflow)
        fprintf(stderr, "layoutctl %s: answer larger than %llu bytes, refused\n", verb,
                (unsigned long long) CLIENT_MAX_RESPONSE);
    else
        fprintf(stderr, "layoutctl %s: request to layoutd failed: %s\n", verb, errbuf[0] ? errbuf : curl_easy_strerror(cc));
    return LAYOUTCTL_EXIT_FAILURE;
}

static CURL *request_new(const ClientArgs *a, const char *method, const char *path, json_object *body,
                         struct curl_slist **headers, char *errbuf) {
    CURL *curl = curl_easy_init();
    if (!curl)
        return NULL;
    char url[1024];
    snprintf(url, sizeof(url), "http://localhost%s", path);
    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, a->socket_path);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    *headers = curl_slist_append(*headers, "Accept: application/json");
    if (body) {
        *headers = curl_slist_append(*headers, "Content-Type: application/json");
        /* The body is small: no "Expect: 100-continue" round trip. */
        *headers = curl_slist_append(*headers, "Expect:");
        curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
    } else if (streq(method, "POST"))
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, *headers);
    return curl;
}

/* One try: 0 with *ret, or <0 with *ret_cc and *ret_overflow set. */
static int call_once(const ClientArgs *a, const char *method, const char *path, json_object *body, Reply *ret,
                     CURLcode *ret_cc, char *errbuf, bool *ret_overflow) {
    struct curl_slist *headers = NULL;
    CURL *curl = request_new(a, method, path, body, &headers, errbuf);
    if (!curl)
        return -ENOMEM;
    Buffer b = {};
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &b);
    /* The longest an agent holds a request is its wait (at most 600 s). */
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 660L);
    CURLcode cc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (cc != CURLE_OK) {
        free(b.data);
        free(b.location);
        *ret_cc = cc;
        *ret_overflow = b.overflow;
        return -EIO;
    }
    Reply r = { .status = status, .raw = b.data ?: strdup(""), .location = b.location };
    if (r.raw && r.raw[0])
        r.json = json_tokener_parse(r.raw);
    *ret = r;
    return 0;
}

/* Sleeps until the next try: short at first (an agent that is about to
 * answer), then a second at a time. Returns false when the deadline is
 * past. */
static bool wait_more(usec_t deadline, unsigned *tries) {
    usec_t now = now_usec(CLOCK_MONOTONIC);
    if (now >= deadline)
        return false;
    usec_t d = MIN((usec_t) (100 * USEC_PER_MSEC) << MIN(*tries, 3u), USEC_PER_SEC);
    (*tries)++;
    usleep((useconds_t) MIN(d, deadline - now));
    return true;
}

int client_call(const char *verb, const ClientArgs *a, const char *method, const char *path, json_object *body,
                Reply *ret) {
    usec_t deadline = now_usec(CLOCK_MONOTONIC) + a->wait;
    bool said_starting = false, said_absent = false;
    unsigned tries = 0;
    for (;;) {
        char errbuf[CURL_ERROR_SIZE] = "";
        CURLcode cc = CURLE_OK;
        bool overflow = false;
        Reply r = {};
        int k = call_once(a, method, path, body, &r, &cc, errbuf, &overflow);
        if (k == -ENOMEM) {
            fprintf(stderr, "layoutctl %s: cannot initialise libcurl\n", verb);
            return LAYOUTCTL_EXIT_FAILURE;
        }
        if (k < 0) {
            int diagnosed = cc == CURLE_COULDNT_CONNECT ? diagnose_socket(a->socket_path) : 0;
            if (a->wait_given && cc == CURLE_COULDNT_CONNECT && transient_connect_error(diagnosed) &&
                wait_more(deadline, &tries)) {
                if (!said_absent && !a->json && !a->quiet)
                    fprintf(stderr, "layoutctl %s: waiting up to %" PRIu64 "s for layoutd to answer on %s\n", verb,
                            a->wait / USEC_PER_SEC, a->socket_path);
                said_absent = true;
                continue;
            }
            return transport_failure(verb, a, cc, errbuf, overflow, diagnosed);
        }
        /* A starting agent serves reads, and answers changes with 503
         * not_ready until its volumes are up: a change waits for it. */
        if (a->changes && r.status == 503 && streq_ptr(json_path_str(json_path_get(r.json, "error"), "code"), "not_ready")) {
            if (wait_more(deadline, &tries)) {
                if (!said_starting && !a->quiet)
                    fprintf(stderr, "layoutctl %s: layoutd is starting; waiting up to %" PRIu64 "s for it (--wait)\n",
                            verb, a->wait / USEC_PER_SEC);
                said_starting = true;
                reply_done(&r);
                continue;
            }
            if ((said_starting || a->wait > 0) && !a->quiet)
                fprintf(stderr, "layoutctl %s: layoutd is still starting after %" PRIu64 "s (--wait SEC waits longer)\n",
                        verb, a->wait / USEC_PER_SEC);
        }
        *ret = r;
        return 0;
    }
}

int client_report_error(const char *verb, const ClientArgs *a, const Reply *r) {
    json_object *e = json_path_get(r->json, "error");
    const char *code = json_path_str(e, "code"), *msg = json_path_str(e, "message");
    if (a->json && r->json)
        client_print_raw(r); /* scripts read the API's error object on stdout */
    if (msg)
        fprintf(stderr, "layoutctl %s: %s (HTTP %ld, %s)\n", verb, client_safe(0, msg), r->status,
                client_safe(1, code ?: "error"));
    else
        fprintf(stderr, "layoutctl %s: layoutd answered HTTP %ld\n", verb, r->status);
    /* (The read-only socket refuses every change whoever asks: its own
     * message says where changes go.) */
    char group[64];
    if (r->status == 403 && streq_ptr(code, "forbidden") && !(msg && strstr(msg, "api.readonly_socket")) &&
        socket_group(a->socket_path, group, sizeof group)) {
        if (streq(group, "root") || streq(group, "0"))
            fprintf(stderr, "Only root may change anything: the socket %s belongs to group root (the layout's "
                            "api.group did not exist when the agent started).\n", a->socket_path);
        else
            fprintf(stderr, "Changes need root or membership in the socket's group '%s' (%s): "
                            "'usermod -aG %s USER', then log in again.\n", group, a->socket_path, group);
    }
    return r->status == 404 && streq_ptr(code, "not_found") ? LAYOUTCTL_EXIT_NOT_FOUND : LAYOUTCTL_EXIT_FAILURE;
}

void client_print_raw(const Reply *r) {
    _cleanup_free_ char *safe = json_text_make_safe(r->raw ?: "");
    const char *t = safe ?: "";
    fputs(t, stdout);
    if (t[0] && t[strlen(t) - 1] != '\n')
        putchar('\n');
}

int client_get(const char *verb, const ClientArgs *a, const char *path, Reply *ret) {
    int ec = client_call(verb, a, "GET", path, NULL, ret);
    if (ec != 0)
        return ec;
    if (ret->status != 200) {
        ec = client_report_error(verb, a, ret);
        reply_done(ret);
        return ec;
    }
    if (!ret->json) {
        fprintf(stderr, "layoutctl %s: layoutd's answer is not JSON\n", verb);
        reply_done(ret);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    return 0;
}

/* Prints the steps of op not printed yet (started and ended). */
static void print_steps(json_object *op, size_t *printed_started, size_t *printed_ended) {
    json_object *steps = json_path_get(op, "steps");
    size_t n = steps && json_object_is_type(steps, json_type_array) ? json_object_array_length(steps) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(steps, i);
        const char *state = json_path_str(s, "state"), *msg = json_path_str(s, "message");
        if (i >= *printed_started) {
            fprintf(stderr, "  %s ...\n", json_path_str(s, "description") ?: "?");
            *printed_started = i + 1;
        }
        if (i >= *printed_ended && state && !streq(state, "running")) {
            fprintf(stderr, "  %s: %s%s%s\n", json_path_str(s, "description") ?: "?", streq(state, "done") ? "done" : "FAILED",
                    msg ? ", " : "", msg ?: "");
            *printed_ended = i + 1;
        } else if (i >= *printed_ended)
            break; /* steps end in order */
    }
}

/* The final answer an operation gives, as if the request had waited. */
static int operation_answer(json_object *op, Reply *ret) {
    json_object *e = json_path_get(op, "error");
    Reply r = {};
    if (e && json_object_is_type(e, json_type_object)) {
        r.status = json_path_int(e, "status") ?: 500;
        r.json = json_object_new_object();
        json_object_object_add(r.json, "error", json_object_get(e));
    } else {
        r.status = json_path_int(op, "status") ?: 200;
        json_object *res = json_path_get(op, "result");
        r.json = res ? json_object_get(res) : json_object_new_object();
    }
    const char *t = r.json ? json_object_to_json_string_ext(r.json, JSON_C_TO_STRING_PLAIN) : NULL;
    r.raw = strdup(t ?: "");
    *ret = r;
    return r.json && r.raw ? 0 : -ENOMEM;
}

int client_call_operation(const char *verb, const ClientArgs *a, const char *method, const char *path,
                          json_object *body, bool no_wait, bool quiet, Reply *ret) {
    _cleanup_free_ char *p = NULL;
    /* wait=0: the answer comes at once, so the steps can be shown as they
     * happen; then the operation is followed. */
    if (asprintf(&p, "%s%swait=0", path, strchr(path, '?') ? "&" : "?") < 0)
        return LAYOUTCTL_EXIT_FAILURE;
    Reply r = {};
    int ec = client_call(verb, a, method, p, body, &r);
    if (ec != 0 || r.status != 202 || no_wait) {
        *ret = r;
        return ec;
    }
    json_object *op = json_path_get(r.json, "operation");
    /* A copy: the id lives in the first answer's JSON, which goes when a
     * later poll's answer replaces it (a use after free in a long wait,
     * found by the ASan chaos soak in import's undo). */
    _cleanup_free_ char *id = json_path_str(op, "id") ? strdup(json_path_str(op, "id")) : NULL;
    if (!id) {
        *ret = r;
        return json_path_str(op, "id") ? LAYOUTCTL_EXIT_FAILURE : 0;
    }
    /* --wait bounds the whole wait, the operation's too: an operation
     * that cannot make progress (its volume out of service) would
     * otherwise hold the command for as long as the fault lasts. Without
     * --wait the operation is followed to its end, as before. */
    usec_t deadline = a->wait_given ? now_usec(CLOCK_MONOTONIC) + a->wait : USEC_INFINITY;
    size_t started = 0, ended = 0;
    json_object *cur = json_object_get(op);
    reply_done(&r);
    for (;;) {
        if (!quiet)
            print_steps(cur, &started, &ended);
        const char *state = json_path_str(cur, "state");
        if (state && !streq(state, "running"))
            break;
        usec_t now = now_usec(CLOCK_MONOTONIC);
        if (now >= deadline) {
            const char *blocked = json_path_str(cur, "blocked");
            fprintf(stderr,
                    "layoutctl %s: operation %s is still running after %llu s%s%s%s; it goes on in the agent "
                    "(follow it: curl --unix-socket %s http://localhost/v1/operations/%s?wait=60)\n",
                    verb, client_safe(0, id), (unsigned long long) (a->wait / USEC_PER_SEC),
                    blocked ? " (blocked: " : "", blocked ? client_safe(1, blocked) : "",
                    blocked ? ")" : "", client_safe(2, a->socket_path), client_safe(3, id));
            json_object_put(cur);
            return LAYOUTCTL_EXIT_TIMEOUT;
        }
        /* The server's wait in whole seconds, never past the deadline. */
        usec_t left = deadline == USEC_INFINITY ? CLIENT_OPERATION_POLL_SEC * USEC_PER_SEC : deadline - now;
        unsigned poll = (unsigned) MIN((left + USEC_PER_SEC - 1) / USEC_PER_SEC, (usec_t) CLIENT_OPERATION_POLL_SEC);
        _cleanup_free_ char *opath = NULL;
        if (asprintf(&opath, "/v1/operations/%s?wait=%u", id, poll) < 0) {
            json_object_put(cur);
            return LAYOUTCTL_EXIT_FAILURE;
        }
        Reply o = {};
        ec = client_call(verb, a, "GET", opath, NULL, &o);
        if (ec != 0) {
            json_object_put(cur);
            return ec;
        }
        if (o.status != 200 || !o.json) {
            json_object_put(cur);
            *ret = o; /* the operation is gone (agent restarted?): its error */
            return 0;
        }
        json_object_put(cur);
        cur = json_object_get(o.json);
        reply_done(&o);
    }
    int k = operation_answer(cur, ret);
    json_object_put(cur);
    return k < 0 ? LAYOUTCTL_EXIT_FAILURE : 0;
}

typedef struct StreamState {
    char *buf;
    size_t len;
    bool (*on_line)(const char *line, void *ud);
    void *userdata;
    bool stop;
} StreamState;

static size_t on_stream(char *ptr, size_t size, size_t nmemb, void *userdata) {
    StreamState *s = userdata;
    size_t n = size * nmemb;
    char *t = realloc(s->buf, s->len + n + 1);
    if (!t)
        return 0;
    s->buf = t;
    memcpy(s->buf + s->len, ptr, n);
    s->len += n;
    size_t start = 0;
    for (size_t i = 0; i < s->len; i++) {
        if (s->buf[i] != '\n')
            continue;
        s->buf[i] = 0;
        if (i > start && !s->on_line(s->buf + start, s->userdata)) {
            s->stop = true;
            return 0; /* aborts the transfer */
        }
        start = i + 1;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    return n;
}

int client_stream(const char *verb, const ClientArgs *a, const char *path, bool (*on_line)(const char *line, void *ud),
                  void *userdata) {
    /* --wait given: an agent that is not there yet is waited for, as by
     * client_call() (a stream is not retried once it ran). */
    if (a->wait_given) {
        usec_t deadline = now_usec(CLOCK_MONOTONIC) + a->wait;
        unsigned tries = 0;
        bool said = false;
        while (transient_connect_error(diagnose_socket(a->socket_path)) && wait_more(deadline, &tries))
            if (!said && !a->quiet) {
                fprintf(stderr, "layoutctl %s: waiting up to %" PRIu64 "s for layoutd to answer on %s\n", verb,
                        a->wait / USEC_PER_SEC, a->socket_path);
                said = true;
            }
    }
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    CURL *curl = request_new(a, "GET", path, NULL, &headers, errbuf);
    if (!curl)
        return LAYOUTCTL_EXIT_FAILURE;
    StreamState s = { .on_line = on_line, .userdata = userdata };
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    CURLcode cc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(s.buf);
    if (s.stop)
        return LAYOUTCTL_EXIT_OK;
    if (cc != CURLE_OK)
        return transport_failure(verb, a, cc, errbuf, false,
                                 cc == CURLE_COULDNT_CONNECT ? diagnose_socket(a->socket_path) : 0);
    if (status != 200) {
        fprintf(stderr, "layoutctl %s: layoutd answered HTTP %ld\n", verb, status);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    return LAYOUTCTL_EXIT_OK;
}

/* on_line of the wait for ready: stops at agent.ready. */
static bool on_ready_line(const char *line, void *userdata) {
    bool *ready = userdata;
    json_object *o = json_tokener_parse(line);
    *ready = streq_ptr(json_path_str(o, "type"), "agent.ready");
    json_object_put(o);
    return !*ready;
}

/* Follows the event stream until agent.ready, the stream's end (the agent
 * stopped) or the deadline. since_start: replay the events this agent
 * holds, so that an agent.ready sent between the look at its state and
 * this connection is not missed (an agent says it once; a stopping one
 * said it long ago, so it is followed from now on). Returns true when
 * agent.ready came. */
static bool follow_until_ready(const ClientArgs *a, bool since_start, usec_t deadline) {
    usec_t now = now_usec(CLOCK_MONOTONIC);
    if (now >= deadline)
        return false;
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    CURL *curl = request_new(a, "GET", since_start ? "/v1/events?since=0" : "/v1/events", NULL, &headers, errbuf);
    if (!curl)
        return false;
    bool ready = false;
    StreamState s = { .on_line = on_ready_line, .userdata = &ready };
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &s);
    /* At least a millisecond: 0 would be "no timeout". */
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long) MAX((deadline - now) / USEC_PER_MSEC, (usec_t) 1));
    (void) curl_easy_perform(curl);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    free(s.buf);
    return ready;
}

int client_wait_ready(const char *verb, const ClientArgs *a, Reply *ret) {
    usec_t deadline = now_usec(CLOCK_MONOTONIC) + (a->wait_given ? a->wait : 0);
    bool said = false;
    unsigned tries = 0;
    for (;;) {
        /* One budget: the socket's wait comes out of it too (the first
         * look has all of it, as its message says). */
        usec_t now = now_usec(CLOCK_MONOTONIC);
        ClientArgs b = *a;
        if (said)
            b.wait = deadline > now ? deadline - now : 0;
        Reply r = {};
        /* (Quiet, for is-healthy: a refusal is its exit code only.) */
        int ec = a->quiet ? client_call(verb, &b, "GET", "/v1/status", NULL, &r)
                          : client_get(verb, &b, "/v1/status", &r);
        if (ec != 0)
            return ec;
        if (r.status != 200 || !r.json) {
            reply_done(&r);
            return LAYOUTCTL_EXIT_FAILURE;
        }
        const char *state = json_path_str(r.json, "state");
        /* An answer without a state is not one to wait on: the verb shows it. */
        if (!a->wait_given || !state || streq(state, "ready")) {
            *ret = r;
            return 0;
        }
        if (now_usec(CLOCK_MONOTONIC) >= deadline) {
            if (a->wait > 0 && !a->quiet)
                fprintf(stderr, "layoutctl %s: layoutd is still %s after %" PRIu64 "s\n", verb, client_safe(0, state),
                        a->wait / USEC_PER_SEC);
            *ret = r;
            return 0;
        }
        if (!said && !a->json && !a->quiet)
            fprintf(stderr, "layoutctl %s: layoutd is %s; waiting up to %" PRIu64 "s for it to be ready\n", verb,
                    client_safe(0, state), a->wait / USEC_PER_SEC);
        said = true;
        bool starting = streq(state, "starting");
        reply_done(&r);
        /* No agent.ready (the agent stopped, or would not stream): look
         * again after a pause, so that nothing spins. */
        if (!follow_until_ready(a, starting, deadline))
            (void) wait_more(deadline, &tries);
    }
}

json_object *json_path_get(json_object *o, const char *path) {
    char key[128];
    while (o && path && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = 0;
        json_object *v;
        if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, key, &v))
            return NULL;
        o = v;
        path += n + (path[n] == '.');
    }
    return o;
}

const char *json_path_str(json_object *o, const char *path) {
    json_object *v = json_path_get(o, path);
    return v ? json_object_get_string(v) : NULL;
}

int64_t json_path_int(json_object *o, const char *path) {
    json_object *v = json_path_get(o, path);
    return v ? json_object_get_int64(v) : 0;
}

uint64_t json_path_uint(json_object *o, const char *path) {
    json_object *v = json_path_get(o, path);
    return v ? json_object_get_uint64(v) : 0;
}

bool json_path_bool(json_object *o, const char *path) {
    json_object *v = json_path_get(o, path);
    return v && json_object_get_boolean(v);
}

/* ---- the client verbs' command line ------------------------------------ */

enum {
    OPT_JSON = 0x100,
    OPT_SOCKET,
    OPT_WAIT,
    OPT_NO_WAIT,
    OPT_EXTRA = 0x200,
};

static int parse_wait(const char *verb, const char *arg, usec_t *ret) {
    char *end;
    errno = 0;
    double v = strtod(arg, &end);
    if (errno || end == arg || *end || !(v >= 0) || v > 86400)
        return layoutctl_usage_error(verb, "--wait wants seconds (0 to 86400), got '%s'", client_safe(0, arg));
    *ret = (usec_t) (v * USEC_PER_SEC);
    return 0;
}

int client_parse(int argc, char **argv, const LayoutctlGlobals *g, unsigned sets, const ClientExtraOption *extra,
                 size_t n_extra, void *userdata, int n_args, const char *usage, ClientOptions *ret) {
    struct option options[40] = {
        { "json", no_argument, NULL, OPT_JSON },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "wait", required_argument, NULL, OPT_WAIT },
        { "help", no_argument, NULL, 'h' },
    };
    size_t n = 4;
    const char *shortopts = ":h";
    if (sets & CLIENT_OPT_LIST) {
        options[n++] = (struct option) { "output", required_argument, NULL, 'o' };
        options[n++] = (struct option) { "noheadings", no_argument, NULL, 'n' };
        options[n++] = (struct option) { "no-legend", no_argument, NULL, 'n' };
        options[n++] = (struct option) { "raw", no_argument, NULL, 'r' };
        options[n++] = (struct option) { "pairs", no_argument, NULL, 'P' };
        options[n++] = (struct option) { "bytes", no_argument, NULL, 'b' };
        shortopts = ":ho:nrPJb";
    }
    if (sets & CLIENT_OPT_OPERATION)
        options[n++] = (struct option) { "no-wait", no_argument, NULL, OPT_NO_WAIT };
    for (size_t i = 0; i < n_extra && n + 1 < ELEMENTSOF(options); i++) {
        options[n] = extra[i].opt;
        options[n++].val = OPT_EXTRA + (int) i;
    }
    options[n] = (struct option) {};

    const char *verb = argv[0];
    *ret = (ClientOptions) {};
    client_init(&ret->args, g);
    ret->args.verb = verb;
    ret->args.changes = sets & CLIENT_OPT_CHANGES;
    ret->args.wait = ret->args.changes ? CLIENT_READY_WAIT_SEC * USEC_PER_SEC : 0;
    ret->table.name = verb;
    bool json_table = false;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, shortopts, options, NULL)) >= 0)
        switch (c) {
        case OPT_JSON:
            ret->args.json = true;
            break;
        case OPT_SOCKET:
            ret->args.socket_path = optarg;
            break;
        case OPT_WAIT:
            if (parse_wait(verb, optarg, &ret->args.wait) != 0)
                return LAYOUTCTL_EXIT_USAGE;
            ret->args.wait_given = true;
            break;
        case 'o':
            ret->table.columns = optarg;
            break;
        case 'n':
            ret->table.noheadings = true;
            break;
        case 'r':
            ret->table.raw = true;
            break;
        case 'P':
            ret->table.pairs = true;
            break;
        case 'J':
            json_table = true;
            break;
        case 'b':
            ret->table.bytes = true;
            break;
        case OPT_NO_WAIT:
            ret->no_wait = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        case '?':
        case ':':
            return layoutctl_option_error(verb, argv, options, c);
        default:
            if (c >= OPT_EXTRA && (size_t) (c - OPT_EXTRA) < n_extra) {
                if (extra[c - OPT_EXTRA].handle(optarg, userdata) < 0)
                    return LAYOUTCTL_EXIT_USAGE;
                break;
            }
            return layoutctl_option_error(verb, argv, options, '?');
        }
    /* -J is the table as JSON, as lsblk -J: the default columns, or -o's
     * (--json with -o is the same); --json alone is the API's answer as
     * is. */
    if (json_table || (ret->args.json && ret->table.columns))
        ret->args.json = ret->table.json = true;
    if ((sets & CLIENT_OPT_LIST) && ret->table.raw + ret->table.pairs + ret->table.json > 1)
        return layoutctl_usage_error(verb, "-r, -P and -J are different outputs: pick one");
    if (argc - optind != n_args) {
        if (argc - optind > n_args)
            return layoutctl_usage_error(verb, "unexpected argument '%s'", client_safe(0, argv[optind + n_args]));
        return layoutctl_usage_error(verb, "expected %d argument%s", n_args, n_args == 1 ? "" : "s");
    }
    return 0;
}
