/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layoutctl verbs that talk to a running agent over its status API
 * (docs/api.md): status, volumes, workspaces, add, rm, restart, reload.
 * HTTP over the Unix socket with libcurl; JSON with json-c. Output is an
 * aligned table by default (colour only on a terminal), or the API's JSON
 * untouched with --json.
 *
 * Exit status: 0 ok, 1 the request failed (the API answered an error, or
 * the answer was not understood), 2 usage, 3 the agent is not reachable
 * (no socket, or nothing listening on it).
 */
#include <getopt.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "layout.h"
#include "layoutctl.h"
#include "util.h"

#define CLIENT_MAX_RESPONSE (64 * MIB)

static bool use_color;

#define C_BOLD (use_color ? "\033[1m" : "")
#define C_GREEN (use_color ? "\033[32m" : "")
#define C_RED (use_color ? "\033[31m" : "")
#define C_YELLOW (use_color ? "\033[33m" : "")
#define C_RESET (use_color ? "\033[0m" : "")

/* ---- HTTP ---- */

typedef struct Buffer {
    char *data;
    size_t len;
    bool overflow;
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

typedef struct Reply {
    long status;
    json_object *json; /* parsed body (NULL if not JSON) */
    char *raw;         /* body as received */
} Reply;

static void reply_done(Reply *r) {
    json_object_put(r->json);
    free(r->raw);
    *r = (Reply) {};
}

/*
 * One request. On transport failure prints the reason and returns the
 * exit code (3: agent not reachable, 1: other); on any HTTP answer
 * returns 0 with *ret filled (the caller looks at the status).
 */
static int client_call(const char *verb, const char *socket_path, const char *method, const char *path,
                       json_object *body, Reply *ret) {
    CURL *curl = curl_easy_init();
    if (!curl) {
        fprintf(stderr, "layoutctl %s: cannot initialise libcurl\n", verb);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    char url[512];
    snprintf(url, sizeof(url), "http://localhost%s", path);
    Buffer b = {};
    char errbuf[CURL_ERROR_SIZE] = "";
    struct curl_slist *headers = NULL;

    curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket_path);
    curl_easy_setopt(curl, CURLOPT_URL, url);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
    /* Creating a workspace may start a daemon and wait for it to be ready. */
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 120L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    headers = curl_slist_append(headers, "Accept: application/json");
    if (body) {
        headers = curl_slist_append(headers, "Content-Type: application/json");
        /* The body is small: no "Expect: 100-continue" round trip. */
        headers = curl_slist_append(headers, "Expect:");
        curl_easy_setopt(curl, CURLOPT_COPYPOSTFIELDS, json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
    } else if (streq(method, "POST"))
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);

    CURLcode cc = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);

    if (cc != CURLE_OK) {
        free(b.data);
        if (cc == CURLE_COULDNT_CONNECT) {
            int r = diagnose_socket(socket_path);
            if (r == -ENOENT) {
                fprintf(stderr, "layoutctl %s: layoutd is not running (no socket at %s)\n", verb, socket_path);
                return LAYOUTCTL_EXIT_UNREACHABLE;
            }
            if (r == -ECONNREFUSED) {
                fprintf(stderr, "layoutctl %s: layoutd is not running (nothing listens on %s)\n", verb, socket_path);
                return LAYOUTCTL_EXIT_UNREACHABLE;
            }
            if (r == -EACCES || r == -EPERM) {
                fprintf(stderr, "layoutctl %s: permission denied on %s (root or the socket's group can connect)\n",
                        verb, socket_path);
                return LAYOUTCTL_EXIT_FAILURE;
            }
            fprintf(stderr, "layoutctl %s: cannot connect to layoutd at %s: %s\n", verb, socket_path,
                    r < 0 ? strerror(-r) : (errbuf[0] ? errbuf : curl_easy_strerror(cc)));
            return LAYOUTCTL_EXIT_UNREACHABLE;
        }
        if (b.overflow)
            fprintf(stderr, "layoutctl %s: answer larger than %llu bytes, refused\n", verb,
                    (unsigned long long) CLIENT_MAX_RESPONSE);
        else
            fprintf(stderr, "layoutctl %s: request to layoutd failed: %s\n", verb,
                    errbuf[0] ? errbuf : curl_easy_strerror(cc));
        return LAYOUTCTL_EXIT_FAILURE;
    }

    Reply r = { .status = status, .raw = b.data ?: strdup("") };
    if (r.raw && r.raw[0]) {
        json_tokener *tok = json_tokener_new();
        if (tok) {
            r.json = json_tokener_parse_ex(tok, r.raw, (int) strlen(r.raw));
            json_tokener_free(tok);
        }
    }
    *ret = r;
    return 0;
}

static const char *jstr(json_object *o, const char *key) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !v)
        return NULL;
    return json_object_get_string(v);
}

static int64_t jint(json_object *o, const char *key) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    return json_object_get_int64(v);
}

static uint64_t juint(json_object *o, const char *key) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v) || !v)
        return 0;
    return json_object_get_uint64(v);
}

static json_object *jget(json_object *o, const char *key) {
    json_object *v;
    if (!o || !json_object_object_get_ex(o, key, &v))
        return NULL;
    return v;
}

/* Reports an API error answer; returns the exit code (1). */
static int report_error(const char *verb, const Reply *r) {
    json_object *e = jget(r->json, "error");
    const char *code = jstr(e, "code"), *msg = jstr(e, "message");
    if (msg)
        fprintf(stderr, "layoutctl %s: %s (HTTP %ld, %s)\n", verb, msg, r->status, code ?: "error");
    else
        fprintf(stderr, "layoutctl %s: layoutd answered HTTP %ld\n", verb, r->status);
    return LAYOUTCTL_EXIT_FAILURE;
}

/* --json: the API's answer, verbatim (it ends with a newline). */
static void print_raw(const Reply *r) {
    fputs(r->raw, stdout);
    if (r->raw[0] && r->raw[strlen(r->raw) - 1] != '\n')
        putchar('\n');
}

/* ---- tables ---- */

#define TABLE_MAX_COLS 12

typedef struct Table {
    size_t n_cols;
    const char *header[TABLE_MAX_COLS];
    bool right[TABLE_MAX_COLS];   /* right-align (numbers, sizes) */
    char **cells;                 /* n_rows * n_cols */
    const char **colors;          /* per cell, may be NULL */
    size_t n_rows;
} Table;

static int table_add_row(Table *t, char *const *cells, const char *const *colors) {
    char **c = realloc(t->cells, (t->n_rows + 1) * t->n_cols * sizeof(char *));
    if (!c)
        return -ENOMEM;
    t->cells = c;
    const char **k = realloc(t->colors, (t->n_rows + 1) * t->n_cols * sizeof(char *));
    if (!k)
        return -ENOMEM;
    t->colors = k;
    for (size_t i = 0; i < t->n_cols; i++) {
        t->cells[t->n_rows * t->n_cols + i] = strdup(cells[i] ?: "-");
        t->colors[t->n_rows * t->n_cols + i] = colors ? colors[i] : NULL;
    }
    t->n_rows++;
    return 0;
}

static void table_print(const Table *t) {
    size_t w[TABLE_MAX_COLS] = {};
    for (size_t i = 0; i < t->n_cols; i++) {
        w[i] = strlen(t->header[i]);
        for (size_t r = 0; r < t->n_rows; r++)
            w[i] = MAX(w[i], strlen(t->cells[r * t->n_cols + i] ?: ""));
    }
    for (size_t i = 0; i < t->n_cols; i++)
        printf("%s%s%-*s%s", i ? "  " : "", C_BOLD, i + 1 == t->n_cols ? 0 : (int) w[i], t->header[i], C_RESET);
    putchar('\n');
    for (size_t r = 0; r < t->n_rows; r++) {
        for (size_t i = 0; i < t->n_cols; i++) {
            const char *s = t->cells[r * t->n_cols + i] ?: "";
            const char *col = t->colors[r * t->n_cols + i];
            int width = i + 1 == t->n_cols && !t->right[i] ? 0 : (int) w[i];
            printf("%s%s", i ? "  " : "", col ?: "");
            printf(t->right[i] ? "%*s" : "%-*s", width, s);
            printf("%s", col ? C_RESET : "");
        }
        putchar('\n');
    }
}

static void table_free(Table *t) {
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t->colors);
}

static const char *health_color(const char *s) {
    if (!s)
        return NULL;
    if (STR_IN_SET(s, "ok", "running", "ready"))
        return C_GREEN;
    if (STR_IN_SET(s, "starting", "stopping", "restarting", "backoff", "degraded"))
        return C_YELLOW;
    return C_RED;
}

static char *size_str(uint64_t v) {
    char b[32];
    return strdup(format_bytes(b, sizeof(b), v));
}

static char *uint_str(uint64_t v) {
    char *s = NULL;
    return asprintf(&s, "%" PRIu64, v) < 0 ? NULL : s;
}

/* ---- common option parsing ---- */

typedef struct ClientArgs {
    bool json;
    const char *socket_path;
} ClientArgs;

enum {
    OPT_JSON = 0x100,
    OPT_SOCKET,
    OPT_TENANT,
    OPT_QUOTA,
    OPT_LABEL,
    OPT_DESTROY_DATA,
};

#define CLIENT_COMMON_OPTIONS                                   \
    { "json", no_argument, NULL, OPT_JSON },                    \
    { "socket", required_argument, NULL, OPT_SOCKET },          \
    { "help", no_argument, NULL, 'h' }

static void client_init(ClientArgs *a, const LayoutctlGlobals *g) {
    a->json = g->json;
    a->socket_path = g->socket_path ?: LAYOUT_API_SOCKET_DEFAULT;
    use_color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
}

/* Handles the options every client verb has. Returns true if consumed. */
static bool client_common_opt(ClientArgs *a, int c) {
    switch (c) {
    case OPT_JSON:
        a->json = true;
        return true;
    case OPT_SOCKET:
        a->socket_path = optarg;
        return true;
    }
    return false;
}

#define COMMON_HELP                                                              \
    "  --json          print the API's JSON answer as is\n"                     \
    "  --socket PATH   the agent's API socket (default " LAYOUT_API_SOCKET_DEFAULT ")\n" \
    "  -h, --help\n"                                                             \
    "\n"                                                                         \
    "Exit status: 0 ok, 1 request failed, 2 usage, 3 layoutd not reachable.\n"

/* Parses only the common options and expects `n_args` positional args. */
static int parse_simple(int argc, char **argv, const LayoutctlGlobals *g, ClientArgs *a, int n_args,
                        const char *usage_text) {
    static const struct option options[] = { CLIENT_COMMON_OPTIONS, {} };
    int c;
    client_init(a, g);
    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
        if (client_common_opt(a, c))
            continue;
        if (c == 'h') {
            fputs(usage_text, stdout);
            return -1;
        }
        fputs(usage_text, stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }
    if (argc - optind != n_args) {
        fprintf(stderr, "layoutctl %s: expected %d argument%s\n", argv[0], n_args, n_args == 1 ? "" : "s");
        fputs(usage_text, stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }
    return 0;
}

/* GET path; on success leaves the reply in *r. Returns an exit code, or
 * -1 when the caller should go on and print. */
static int get_or_fail(const char *verb, const ClientArgs *a, const char *path, Reply *r) {
    int ec = client_call(verb, a->socket_path, "GET", path, NULL, r);
    if (ec != 0)
        return ec;
    if (r->status != 200)
        return report_error(verb, r);
    if (a->json) {
        print_raw(r);
        return LAYOUTCTL_EXIT_OK;
    }
    if (!r->json) {
        fprintf(stderr, "layoutctl %s: layoutd's answer is not JSON\n", verb);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    return -1;
}

/* ---- verbs ---- */

int layoutctl_status(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl status [--json] [--socket PATH]\n"
        "\n"
        "Shows the agent's state, its layout, and a summary of volumes and workspaces.\n"
        "\n" COMMON_HELP;
    ClientArgs a;
    int ec = parse_simple(argc, argv, g, &a, 0, usage_text);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;

    Reply r = {};
    ec = get_or_fail("status", &a, "/v1/status", &r);
    if (ec >= 0) {
        reply_done(&r);
        return ec;
    }
    json_object *o = r.json, *l = jget(o, "layout"), *v = jget(o, "volumes"), *w = jget(o, "workspaces");
    const char *state = jstr(o, "state");
    uint64_t up = juint(o, "uptime_sec");
    printf("%slayoutd %s%s (pid %" PRId64 "), state %s%s%s, up %" PRIu64 "h%02" PRIu64 "m%02" PRIu64 "s\n", C_BOLD,
           jstr(o, "version") ?: "?", C_RESET, jint(o, "pid"), health_color(state) ?: "", state ?: "?", C_RESET,
           up / 3600, up / 60 % 60, up % 60);
    const char *hash = jstr(l, "hash");
    printf("Layout:      %s (%.12s)\n", jstr(l, "path") ?: "-", hash ?: "-");
    printf("Volumes:     %" PRId64 " total, %" PRId64 " ok, %s%" PRId64 " degraded%s\n", jint(v, "total"),
           jint(v, "ok"), jint(v, "degraded") ? C_RED : "", jint(v, "degraded"), jint(v, "degraded") ? C_RESET : "");
    printf("Workspaces:  %" PRId64 " total, %" PRId64 " running, %s%" PRId64 " failed%s\n", jint(w, "total"),
           jint(w, "running"), jint(w, "failed") ? C_RED : "", jint(w, "failed"), jint(w, "failed") ? C_RESET : "");
    json_object *p = jget(o, "problems");
    size_t np = p && json_object_is_type(p, json_type_array) ? json_object_array_length(p) : 0;
    if (np == 0)
        printf("Problems:    none\n");
    for (size_t i = 0; i < np; i++) {
        json_object *x = json_object_array_get_idx(p, i);
        const char *msg = json_object_is_type(x, json_type_string) ? json_object_get_string(x) : jstr(x, "message");
        printf("%s %s%s%s\n", i == 0 ? "Problems:   " : "            ", C_RED, msg ?: json_object_get_string(x), C_RESET);
    }
    reply_done(&r);
    return LAYOUTCTL_EXIT_OK;
}

int layoutctl_volumes(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl volumes [--json] [--socket PATH]\n"
        "\n"
        "Lists the volumes (flush domains): device, direct I/O, space, workspaces, health.\n"
        "\n" COMMON_HELP;
    ClientArgs a;
    int ec = parse_simple(argc, argv, g, &a, 0, usage_text);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;

    Reply r = {};
    ec = get_or_fail("volumes", &a, "/v1/volumes", &r);
    if (ec >= 0) {
        reply_done(&r);
        return ec;
    }
    Table t = { .n_cols = 11,
                .header = { "NAME", "ROLE", "BACKEND", "FS", "DEVICE", "DIRECT-IO", "SIZE", "USED", "FREE", "SCOPE", "HEALTH" },
                .right = { [6] = true, [7] = true, [8] = true, [9] = true } };
    json_object *arr = jget(r.json, "volumes");
    size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        json_object *dio = jget(v, "direct_io");
        bool dio_on = dio && json_object_get_boolean(dio);
        _cleanup_free_ char *size = size_str(juint(v, "size_bytes")), *used = size_str(juint(v, "used_bytes")),
                            *fr = size_str(juint(v, "free_bytes")), *scope = uint_str(juint(v, "flush_scope"));
        char *cells[] = { (char *) jstr(v, "name"), (char *) jstr(v, "role"), (char *) jstr(v, "backend"),
                          (char *) jstr(v, "fs_type"), (char *) jstr(v, "device"),
                          dio ? (char *) (dio_on ? "yes" : "NO") : NULL, size, used, fr, scope,
                          (char *) jstr(v, "health") };
        const char *colors[11] = { [5] = dio && !dio_on ? C_RED : NULL, [10] = health_color(jstr(v, "health")) };
        table_add_row(&t, cells, colors);
    }
    if (n == 0)
        printf("No volumes.\n");
    else
        table_print(&t);
    table_free(&t);
    reply_done(&r);
    return LAYOUTCTL_EXIT_OK;
}

static void labels_str(json_object *labels, char *buf, size_t size) {
    buf[0] = 0;
    size_t off = 0;
    if (!labels || !json_object_is_type(labels, json_type_object))
        return;
    json_object_object_foreach(labels, k, v) {
        int n = snprintf(buf + off, size - off, "%s%s=%s", off ? "," : "", k, json_object_get_string(v));
        if (n < 0 || (size_t) n >= size - off)
            break;
        off += (size_t) n;
    }
}

int layoutctl_workspaces(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl workspaces [--json] [--socket PATH]\n"
        "\n"
        "Lists the workspaces: placement, flush scope, FUSE daemon state, quota, labels.\n"
        "\n" COMMON_HELP;
    ClientArgs a;
    int ec = parse_simple(argc, argv, g, &a, 0, usage_text);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;

    Reply r = {};
    ec = get_or_fail("workspaces", &a, "/v1/workspaces", &r);
    if (ec >= 0) {
        reply_done(&r);
        return ec;
    }
    Table t = { .n_cols = 9,
                .header = { "ID", "TENANT", "VOLUME", "SCOPE", "DAEMON", "PID", "RESTARTS", "QUOTA", "LABELS" },
                .right = { [3] = true, [5] = true, [6] = true, [7] = true } };
    json_object *arr = jget(r.json, "workspaces");
    size_t n = arr && json_object_is_type(arr, json_type_array) ? json_object_array_length(arr) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *w = json_object_array_get_idx(arr, i), *d = jget(w, "daemon");
        char labels[256];
        labels_str(jget(w, "labels"), labels, sizeof(labels));
        uint64_t q = juint(w, "quota_bytes");
        _cleanup_free_ char *scope = uint_str(juint(w, "flush_scope")), *pid = uint_str(juint(d, "pid")),
                            *restarts = uint_str(juint(d, "restarts")), *quota = q ? size_str(q) : NULL;
        char *cells[] = { (char *) jstr(w, "id"), (char *) jstr(w, "tenant"), (char *) jstr(w, "volume"), scope,
                          (char *) jstr(d, "state"), juint(d, "pid") ? pid : NULL, restarts, quota,
                          labels[0] ? labels : NULL };
        const char *colors[9] = { [4] = health_color(jstr(d, "state")) };
        table_add_row(&t, cells, colors);
    }
    if (n == 0)
        printf("No workspaces.\n");
    else
        table_print(&t);
    table_free(&t);
    reply_done(&r);
    return LAYOUTCTL_EXIT_OK;
}

int layoutctl_add(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl add ID [--tenant T] [--quota SIZE] [--label KEY=VALUE]... [--json] [--socket PATH]\n"
        "\n"
        "Creates a workspace: the agent places it on a state volume and starts its FUSE daemon.\n"
        "\n"
        "  --tenant T        the workspace's tenant ([a-z0-9][a-z0-9-]*)\n"
        "  --quota SIZE      e.g. 10G, 512MiB (default: none)\n"
        "  --label KEY=VALUE a label; may be repeated\n" COMMON_HELP;
    static const struct option options[] = {
        CLIENT_COMMON_OPTIONS,
        { "tenant", required_argument, NULL, OPT_TENANT },
        { "quota", required_argument, NULL, OPT_QUOTA },
        { "label", required_argument, NULL, OPT_LABEL },
        {},
    };
    ClientArgs a;
    client_init(&a, g);
    json_object *body = json_object_new_object(), *labels = json_object_new_object();
    int c, ec = LAYOUTCTL_EXIT_USAGE;
    if (!body || !labels) {
        fprintf(stderr, "layoutctl add: out of memory\n");
        ec = LAYOUTCTL_EXIT_FAILURE;
        goto out;
    }
    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
        if (client_common_opt(&a, c))
            continue;
        switch (c) {
        case OPT_TENANT:
            if (!layout_name_is_valid(optarg, LAYOUT_NAME_MAX)) {
                fprintf(stderr, "layoutctl add: invalid tenant '%s' (use [a-z0-9][a-z0-9-]*)\n", optarg);
                goto out;
            }
            json_object_object_add(body, "tenant", json_object_new_string(optarg));
            break;
        case OPT_QUOTA: {
            uint64_t q;
            if (layout_parse_size(optarg, &q) < 0) {
                fprintf(stderr, "layoutctl add: invalid size '%s' (e.g. 10G, 512MiB)\n", optarg);
                goto out;
            }
            json_object_object_add(body, "quota", json_object_new_uint64(q));
            break;
        }
        case OPT_LABEL: {
            const char *eq = strchr(optarg, '=');
            if (!eq || eq == optarg) {
                fprintf(stderr, "layoutctl add: --label wants KEY=VALUE, got '%s'\n", optarg);
                goto out;
            }
            _cleanup_free_ char *k = strndup(optarg, (size_t) (eq - optarg));
            if (!k) {
                ec = LAYOUTCTL_EXIT_FAILURE;
                goto out;
            }
            json_object_object_add(labels, k, json_object_new_string(eq + 1));
            break;
        }
        case 'h':
            fputs(usage_text, stdout);
            ec = LAYOUTCTL_EXIT_OK;
            goto out;
        default:
            fputs(usage_text, stderr);
            goto out;
        }
    }
    if (argc - optind != 1) {
        fprintf(stderr, "layoutctl add: expected one workspace ID\n");
        fputs(usage_text, stderr);
        goto out;
    }
    if (!layout_name_is_valid(argv[optind], LAYOUT_WORKSPACE_ID_MAX)) {
        fprintf(stderr, "layoutctl add: invalid workspace ID '%s' (use [a-z0-9][a-z0-9-]*, at most %d characters)\n",
                argv[optind], LAYOUT_WORKSPACE_ID_MAX);
        goto out;
    }
    json_object_object_add(body, "id", json_object_new_string(argv[optind]));
    if (json_object_object_length(labels) > 0)
        json_object_object_add(body, "labels", json_object_get(labels));

    Reply r = {};
    ec = client_call("add", a.socket_path, "POST", "/v1/workspaces", body, &r);
    if (ec != 0)
        goto out;
    if (r.status != 201)
        ec = report_error("add", &r);
    else if (a.json)
        print_raw(&r);
    else {
        const char *mp = jstr(r.json, "mountpoint");
        printf("Created workspace %s%s%s on %s (flush scope %" PRId64 ")%s%s\n", C_BOLD, jstr(r.json, "id") ?: argv[optind],
               C_RESET, jstr(r.json, "volume") ?: "?", jint(r.json, "flush_scope"), mp ? ", mounted at " : "", mp ?: "");
    }
    reply_done(&r);
out:
    json_object_put(body);
    json_object_put(labels);
    return ec;
}

int layoutctl_rm(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl rm ID [--destroy-data] [--json] [--socket PATH]\n"
        "\n"
        "Removes a workspace: stops its daemon and unmounts it. Its data is kept (and a\n"
        "later `add` of the same ID finds it again) unless --destroy-data is given.\n"
        "\n"
        "  --destroy-data  delete the workspace's state directory too\n" COMMON_HELP;
    static const struct option options[] = {
        CLIENT_COMMON_OPTIONS,
        { "destroy-data", no_argument, NULL, OPT_DESTROY_DATA },
        {},
    };
    ClientArgs a;
    bool destroy = false;
    int c;
    client_init(&a, g);
    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
        if (client_common_opt(&a, c))
            continue;
        if (c == OPT_DESTROY_DATA) {
            destroy = true;
            continue;
        }
        if (c == 'h') {
            fputs(usage_text, stdout);
            return LAYOUTCTL_EXIT_OK;
        }
        fputs(usage_text, stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }
    if (argc - optind != 1 || !layout_name_is_valid(argv[optind], LAYOUT_WORKSPACE_ID_MAX)) {
        fprintf(stderr, "layoutctl rm: expected one valid workspace ID\n");
        fputs(usage_text, stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }
    const char *id = argv[optind];
    char path[128];
    snprintf(path, sizeof(path), "/v1/workspaces/%s%s", id, destroy ? "?destroy_data=true" : "");
    Reply r = {};
    int ec = client_call("rm", a.socket_path, "DELETE", path, NULL, &r);
    if (ec != 0)
        return ec;
    if (r.status != 200)
        ec = report_error("rm", &r);
    else if (a.json)
        print_raw(&r);
    else
        printf("Removed workspace %s (%s)\n", id, destroy ? "data destroyed" : "data kept");
    reply_done(&r);
    return ec;
}

int layoutctl_restart(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl restart ID [--json] [--socket PATH]\n"
        "\n"
        "Restarts the workspace's FUSE daemon.\n"
        "\n" COMMON_HELP;
    ClientArgs a;
    int ec = parse_simple(argc, argv, g, &a, 1, usage_text);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX)) {
        fprintf(stderr, "layoutctl restart: invalid workspace ID '%s'\n", id);
        return LAYOUTCTL_EXIT_USAGE;
    }
    char path[128];
    snprintf(path, sizeof(path), "/v1/workspaces/%s/restart", id);
    Reply r = {};
    ec = client_call("restart", a.socket_path, "POST", path, NULL, &r);
    if (ec != 0)
        return ec;
    if (r.status != 202 && r.status != 200)
        ec = report_error("restart", &r);
    else if (a.json)
        print_raw(&r);
    else
        printf("Restarting the daemon of workspace %s\n", id);
    reply_done(&r);
    return ec;
}

int layoutctl_reload(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage_text[] =
        "Usage: layoutctl reload [--json] [--socket PATH]\n"
        "\n"
        "Makes the agent re-read its layout. An invalid layout is refused and the\n"
        "running one stays (the errors are printed).\n"
        "\n" COMMON_HELP;
    ClientArgs a;
    int ec = parse_simple(argc, argv, g, &a, 0, usage_text);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    Reply r = {};
    ec = client_call("reload", a.socket_path, "POST", "/v1/reload", NULL, &r);
    if (ec != 0)
        return ec;
    if (r.status != 200)
        ec = report_error("reload", &r);
    else if (a.json)
        print_raw(&r);
    else {
        json_object *ch = jget(r.json, "changed");
        printf("Reloaded the layout: %s (%.12s)\n", ch && json_object_get_boolean(ch) ? "changed" : "unchanged",
               jstr(r.json, "layout_hash") ?: "-");
    }
    reply_done(&r);
    return ec;
}
