/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* HTTP to the agent's API over its Unix socket (libcurl); see layoutctl-http.h. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <curl/curl.h>

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

const char *client_health_color(const char *s) {
    if (!s)
        return NULL;
    if (STR_IN_SET(s, "ok", "running", "ready", "up", "succeeded"))
        return C_GREEN;
    if (STR_IN_SET(s, "starting", "stopping", "restarting", "backoff", "degraded", "warning"))
        return C_YELLOW;
    return C_RED;
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

static int transport_failure(const char *verb, const ClientArgs *a, CURLcode cc, const char *errbuf, bool overflow) {
    if (cc == CURLE_COULDNT_CONNECT) {
        int r = diagnose_socket(a->socket_path);
        if (r == -ENOENT) {
            fprintf(stderr, "layoutctl %s: layoutd is not running (no socket at %s)\n", verb, a->socket_path);
            return LAYOUTCTL_EXIT_UNREACHABLE;
        }
        if (r == -ECONNREFUSED) {
            fprintf(stderr, "layoutctl %s: layoutd is not running (nothing listens on %s)\n", verb, a->socket_path);
            return LAYOUTCTL_EXIT_UNREACHABLE;
        }
        if (r == -EACCES || r == -EPERM) {
            fprintf(stderr, "layoutctl %s: permission denied on %s (root or the socket's group can connect)\n", verb,
                    a->socket_path);
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

int client_call(const char *verb, const ClientArgs *a, const char *method, const char *path, json_object *body,
                Reply *ret) {
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;
    CURL *curl = request_new(a, method, path, body, &headers, errbuf);
    if (!curl) {
        fprintf(stderr, "layoutctl %s: cannot initialise libcurl\n", verb);
        return LAYOUTCTL_EXIT_FAILURE;
    }
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
        return transport_failure(verb, a, cc, errbuf, b.overflow);
    }
    Reply r = { .status = status, .raw = b.data ?: strdup(""), .location = b.location };
    if (r.raw && r.raw[0])
        r.json = json_tokener_parse(r.raw);
    *ret = r;
    return 0;
}

int client_report_error(const char *verb, const ClientArgs *a, const Reply *r) {
    json_object *e = jget(r->json, "error");
    const char *code = jstr(e, "code"), *msg = jstr(e, "message");
    if (a->json && r->json)
        client_print_raw(r); /* scripts read the API's error object on stdout */
    if (msg)
        fprintf(stderr, "layoutctl %s: %s (HTTP %ld, %s)\n", verb, msg, r->status, code ?: "error");
    else
        fprintf(stderr, "layoutctl %s: layoutd answered HTTP %ld\n", verb, r->status);
    return LAYOUTCTL_EXIT_FAILURE;
}

void client_print_raw(const Reply *r) {
    fputs(r->raw ?: "", stdout);
    if (r->raw && r->raw[0] && r->raw[strlen(r->raw) - 1] != '\n')
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
    json_object *steps = jget(op, "steps");
    size_t n = steps && json_object_is_type(steps, json_type_array) ? json_object_array_length(steps) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *s = json_object_array_get_idx(steps, i);
        const char *state = jstr(s, "state"), *msg = jstr(s, "message");
        if (i >= *printed_started) {
            fprintf(stderr, "  %s ...\n", jstr(s, "description") ?: "?");
            *printed_started = i + 1;
        }
        if (i >= *printed_ended && state && !streq(state, "running")) {
            fprintf(stderr, "  %s: %s%s%s\n", jstr(s, "description") ?: "?", streq(state, "done") ? "done" : "FAILED",
                    msg ? ", " : "", msg ?: "");
            *printed_ended = i + 1;
        } else if (i >= *printed_ended)
            break; /* steps end in order */
    }
}

/* The final answer an operation gives, as if the request had waited. */
static int operation_answer(json_object *op, Reply *ret) {
    json_object *e = jget(op, "error");
    Reply r = {};
    if (e && json_object_is_type(e, json_type_object)) {
        r.status = jint(e, "status") ?: 500;
        r.json = json_object_new_object();
        json_object_object_add(r.json, "error", json_object_get(e));
    } else {
        r.status = jint(op, "status") ?: 200;
        json_object *res = jget(op, "result");
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
    json_object *op = jget(r.json, "operation");
    const char *id = jstr(op, "id");
    if (!id) {
        *ret = r;
        return 0;
    }
    _cleanup_free_ char *opath = NULL;
    if (asprintf(&opath, "/v1/operations/%s?wait=%d", id, CLIENT_OPERATION_POLL_SEC) < 0) {
        reply_done(&r);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    size_t started = 0, ended = 0;
    json_object *cur = json_object_get(op);
    reply_done(&r);
    for (;;) {
        if (!quiet)
            print_steps(cur, &started, &ended);
        const char *state = jstr(cur, "state");
        if (state && !streq(state, "running"))
            break;
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
        return transport_failure(verb, a, cc, errbuf, false);
    if (status != 200) {
        fprintf(stderr, "layoutctl %s: layoutd answered HTTP %ld\n", verb, status);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    return LAYOUTCTL_EXIT_OK;
}

json_object *jget(json_object *o, const char *path) {
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

const char *jstr(json_object *o, const char *path) {
    json_object *v = jget(o, path);
    return v ? json_object_get_string(v) : NULL;
}

int64_t jint(json_object *o, const char *path) {
    json_object *v = jget(o, path);
    return v ? json_object_get_int64(v) : 0;
}

uint64_t juint(json_object *o, const char *path) {
    json_object *v = jget(o, path);
    return v ? json_object_get_uint64(v) : 0;
}

bool jbool(json_object *o, const char *path) {
    json_object *v = jget(o, path);
    return v && json_object_get_boolean(v);
}

/* ---- the client verbs' command line ------------------------------------ */

enum {
    OPT_JSON = 0x100,
    OPT_SOCKET,
    OPT_NO_LEGEND,
    OPT_BYTES,
    OPT_NO_WAIT,
    OPT_EXTRA = 0x200,
};

int client_parse(int argc, char **argv, const LayoutctlGlobals *g, unsigned sets, const ClientExtraOption *extra,
                 size_t n_extra, void *userdata, int n_args, const char *usage, ClientOptions *ret) {
    struct option options[32] = {
        { "json", no_argument, NULL, OPT_JSON },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "help", no_argument, NULL, 'h' },
    };
    size_t n = 3;
    const char *shortopts = "h";
    if (sets & CLIENT_OPT_LIST) {
        options[n++] = (struct option) { "output", required_argument, NULL, 'o' };
        options[n++] = (struct option) { "no-legend", no_argument, NULL, OPT_NO_LEGEND };
        options[n++] = (struct option) { "bytes", no_argument, NULL, OPT_BYTES };
        shortopts = "ho:";
    }
    if (sets & CLIENT_OPT_WAIT)
        options[n++] = (struct option) { "no-wait", no_argument, NULL, OPT_NO_WAIT };
    for (size_t i = 0; i < n_extra && n + 1 < ELEMENTSOF(options); i++) {
        options[n] = extra[i].opt;
        options[n++].val = OPT_EXTRA + (int) i;
    }
    options[n] = (struct option) {};

    *ret = (ClientOptions) {};
    client_init(&ret->args, g);
    int c;
    while ((c = getopt_long(argc, argv, shortopts, options, NULL)) >= 0)
        switch (c) {
        case OPT_JSON:
            ret->args.json = true;
            break;
        case OPT_SOCKET:
            ret->args.socket_path = optarg;
            break;
        case 'o':
            ret->columns = optarg;
            break;
        case OPT_NO_LEGEND:
            ret->no_legend = true;
            break;
        case OPT_BYTES:
            ret->bytes = true;
            break;
        case OPT_NO_WAIT:
            ret->no_wait = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return -1;
        default:
            if (c >= OPT_EXTRA && (size_t) (c - OPT_EXTRA) < n_extra) {
                if (extra[c - OPT_EXTRA].handle(optarg, userdata) < 0)
                    return LAYOUTCTL_EXIT_USAGE;
                break;
            }
            fputs(usage, stderr);
            return LAYOUTCTL_EXIT_USAGE;
        }
    if (argc - optind != n_args) {
        fprintf(stderr, "layoutctl %s: expected %d argument%s\n", argv[0], n_args, n_args == 1 ? "" : "s");
        fputs(usage, stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }
    return 0;
}
