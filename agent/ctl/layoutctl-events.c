/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutctl events: follows the agent's event stream (GET /v1/events). */
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "escape.h"
#include "layoutctl-http.h"
#include "util.h"

typedef struct EventsArgs {
    uint64_t since;
    bool has_since;
    unsigned count;          /* stop after this many events; 0: never */
    unsigned seen;
    bool json;
} EventsArgs;

static int set_since(const char *arg, void *userdata) {
    EventsArgs *e = userdata;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(arg, &end, 10);
    if (errno || *end || !*arg || *arg == '-') {
        layoutctl_usage_error("events", "--since wants an event sequence number, got '%s'", client_safe(0, arg));
        return -EINVAL;
    }
    e->since = v;
    e->has_since = true;
    return 0;
}

static int set_count(const char *arg, void *userdata) {
    EventsArgs *e = userdata;
    char *end;
    errno = 0;
    unsigned long v = strtoul(arg, &end, 10);
    if (errno || *end || !*arg || v == 0 || v > UINT32_MAX) {
        layoutctl_usage_error("events", "--count wants a positive number, got '%s'", client_safe(0, arg));
        return -EINVAL;
    }
    e->count = (unsigned) v;
    return 0;
}

/* "12:04:05.123  #42 workspace.state  workspace=ws-1 from=starting to=running" */
static bool on_event(const char *line, void *userdata) {
    EventsArgs *e = userdata;
    if (e->json) {
        _cleanup_free_ char *safe = json_text_make_safe(line);
        puts(safe ?: line);
        fflush(stdout);
    } else {
        json_object *o = json_tokener_parse(line);
        if (!o)
            return true; /* a keep-alive, or not ours */
        double t = json_object_get_double(json_path_get(o, "time"));
        time_t sec = (time_t) t;
        struct tm tm;
        char when[32] = "?";
        if (localtime_r(&sec, &tm))
            strftime(when, sizeof when, "%H:%M:%S", &tm);
        printf("%s.%03d  #%-5" PRIu64 " %s%-18s%s", when, (int) ((t - (double) sec) * 1000), json_path_uint(o, "seq"), C_BOLD,
               client_safe(0, json_path_str(o, "type") ?: "?"), C_RESET);
        json_object_object_foreach(o, k, v) {
            if (STR_IN_SET(k, "seq", "time", "type"))
                continue;
            printf(" %s=%s", client_safe(0, k), v ? client_safe(1, json_object_get_string(v)) : "-");
        }
        putchar('\n');
        fflush(stdout);
        json_object_put(o);
    }
    return !(e->count && ++e->seen >= e->count);
}

int layoutctl_events(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl events [--since N] [--count N] [--json] [--socket PATH] [--wait SEC]\n"
        "\n"
        "Follows the agent's events as they happen: workspace state changes, volume\n"
        "health changes, carves, reloads, operations. Each has a sequence number;\n"
        "--since N replays what the agent still holds after N (0: all of it).\n"
        "\n"
        "  --since N       start after event N\n"
        "  --count N       stop after N events\n" CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = {
        { { "since", required_argument, NULL, 0 }, set_since },
        { { "count", required_argument, NULL, 0 }, set_count },
    };
    EventsArgs e = {};
    ClientOptions o;
    int ec = client_parse(argc, argv, g, 0, extra, ELEMENTSOF(extra), &e, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    e.json = o.args.json;
    char path[64] = "/v1/events";
    if (e.has_since)
        snprintf(path, sizeof path, "/v1/events?since=%" PRIu64, e.since);
    return client_stream("events", &o.args, path, on_event, &e);
}
