/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reading client verbs: status, is-healthy, volumes, workspaces, show.
 * Lists are a table of columns each (layoutctl-cols.c); --json prints the
 * API's answer as it is. Every string of the answer is escaped on its way
 * to the terminal (client_safe).
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <time.h>

#include "layout.h"
#include "layoutctl-http.h"
#include "util.h"

/* The agent serves as asked: ready, and nothing worse than a warning
 * (GET /v1/health's rule). */
static bool status_is_healthy(json_object *j) {
    return streq_ptr(json_path_str(j, "state"), "ready") && STR_IN_SET(json_path_str(j, "health") ?: "", "ok", "warning");
}

int layoutctl_status(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] = "Usage: layoutctl status [--json] [--socket PATH] [--wait SEC]\n"
                                "\n"
                                "Shows the agent's state, its layout, a summary of volumes and workspaces,\n"
                                "and every problem it knows of. Exits 5 when the agent is degraded, starting\n"
                                "or stopping (as GET /v1/health answers 503), so that scripts can tell.\n"
                                "With --wait SEC, waits until the agent is ready (or SEC is up, then says\n"
                                "in which state it still is and exits 5).\n"
                                "\n" CLIENT_COMMON_HELP "5 the agent is degraded, starting or stopping.\n";
    ClientOptions o;
    int ec = client_parse(argc, argv, g, 0, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    Reply r = {};
    if ((ec = client_wait_ready("status", &o.args, &r)) != 0)
        return ec;
    json_object *j = r.json;
    ec = status_is_healthy(j) ? LAYOUTCTL_EXIT_OK : LAYOUTCTL_EXIT_UNHEALTHY;
    if (o.args.json) {
        client_print_raw(&r);
        reply_done(&r);
        return ec;
    }
    const char *state = json_path_str(j, "state"), *health = json_path_str(j, "health");
    uint64_t up = json_path_uint(j, "uptime_sec");
    printf("%slayoutd %s%s (pid %" PRId64 "), state %s%s%s, health %s%s%s, up %" PRIu64 "h%02" PRIu64 "m%02" PRIu64
           "s\n",
           C_BOLD, client_safe(0, json_path_str(j, "version") ?: "?"), C_RESET, json_path_int(j, "pid"), client_health_color(state) ?: "",
           client_safe(1, state ?: "?"), C_RESET, client_health_color(health) ?: "", client_safe(2, health ?: "?"),
           C_RESET, up / 3600, up / 60 % 60, up % 60);
    const char *hash = json_path_str(j, "layout.hash");
    printf("Layout:      %s (%.12s, generation %" PRId64 ")\n", client_safe(0, json_path_str(j, "layout.path") ?: "-"),
           client_safe(1, hash ?: "-"), json_path_int(j, "generation"));
    int64_t warning = json_path_int(j, "volumes.warning"), degraded = json_path_int(j, "volumes.degraded") + json_path_int(j, "volumes.failed"),
            failed = json_path_int(j, "workspaces.failed"), blocked = json_path_int(j, "workspaces.by_state.blocked");
    printf("Volumes:     %" PRId64 " total, %" PRId64 " ok, %s%" PRId64 " warning%s, %s%" PRId64 " degraded or failed%s\n",
           json_path_int(j, "volumes.total"), json_path_int(j, "volumes.ok"), warning ? C_YELLOW : "", warning, warning ? C_RESET : "",
           degraded ? C_RED : "", degraded, degraded ? C_RESET : "");
    printf("Workspaces:  %" PRId64 " total, %" PRId64 " running, %s%" PRId64 " failed%s", json_path_int(j, "workspaces.total"),
           json_path_int(j, "workspaces.running"), failed ? C_RED : "", failed, failed ? C_RESET : "");
    if (blocked)
        printf(", %s%" PRId64 " blocked%s", C_YELLOW, blocked, C_RESET);
    putchar('\n');
    json_object *p = json_path_get(j, "problems");
    size_t np = p && json_object_is_type(p, json_type_array) ? json_object_array_length(p) : 0;
    if (np == 0)
        printf("Problems:    none\n");
    for (size_t i = 0; i < np; i++) {
        json_object *x = json_object_array_get_idx(p, i);
        const char *level = json_path_str(x, "level");
        printf("%s %s%s%s%s\n", i == 0 ? "Problems:   " : "            ", client_health_color(level) ?: C_RED,
               level ? client_safe(0, level) : "", level ? ": " : "", client_safe(1, json_path_str(x, "message") ?: "?"));
        fputs(C_RESET, stdout);
    }
    json_object *gc = json_path_get(j, "gc");
    if (gc && !json_object_is_type(gc, json_type_null)) {
        char b[32];
        uint64_t bytes = json_path_uint(gc, "reclaimed_bytes");
        printf("Content GC:  %s, %" PRId64 " runs (%" PRId64 " failed), %s reclaimed since start%s%s\n",
               json_path_bool(gc, "running") ? "running" : "idle", json_path_int(gc, "runs"), json_path_int(gc, "failures"),
               format_bytes(b, sizeof b, bytes), json_path_str(gc, "last_error") ? "; last error: " : "",
               client_safe(0, json_path_str(gc, "last_error") ?: ""));
    }
    reply_done(&r);
    return ec;
}

int layoutctl_is_healthy(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl is-healthy [--socket PATH] [--wait SEC]\n"
        "\n"
        "Prints nothing; exits 0 when the agent is ready and nothing is worse than a\n"
        "warning (GET /v1/health answers 200), 5 when it is degraded, starting or\n"
        "stopping, 3 when it does not answer. For scripts, probes and ExecCondition=,\n"
        "as `systemctl is-active -q`. With --wait SEC, waits until the agent is\n"
        "ready first (exit 5 when SEC is up before).\n"
        "\n" CLIENT_COMMON_HELP "5 the agent is degraded, starting or stopping.\n";
    ClientOptions o;
    int ec = client_parse(argc, argv, g, 0, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    /* Quiet: the exit code says it all. */
    o.args.quiet = true;
    Reply r = {};
    /* --wait: for the agent to be ready, not only to answer. */
    if (o.args.wait_given) {
        if ((ec = client_wait_ready("is-healthy", &o.args, &r)) != 0)
            return ec;
        reply_done(&r);
        /* The time is spent: an agent gone since is not waited for again. */
        o.args.wait_given = false;
    }
    ec = client_call("is-healthy", &o.args, "GET", "/v1/health", NULL, &r);
    if (ec != 0)
        return ec;
    ec = r.status == 200 ? LAYOUTCTL_EXIT_OK : r.status == 503 ? LAYOUTCTL_EXIT_UNHEALTHY : LAYOUTCTL_EXIT_FAILURE;
    reply_done(&r);
    return ec;
}

static const Column volume_columns[] = {
    { "NAME", "name", COLUMN_TEXT, .help = "volume name" },
    { "ROLE", "role", COLUMN_TEXT, .help = "state or content pool" },
    { "BACKEND", "backend", COLUMN_TEXT, .help = "loop-ext4, loop-xfs, loop-btrfs, vdo-xfs, dir" },
    { "FS", "fs_type", COLUMN_TEXT, .help = "filesystem" },
    { "DEVICE", "device", COLUMN_TEXT, .help = "loop device" },
    { "DIRECT-IO", "direct_io", COLUMN_YES_NO, .help = "direct I/O, as the kernel reports it" },
    { "SIZE", "size_bytes", COLUMN_SIZE, .help = "filesystem size" },
    { "USED", "used_bytes", COLUMN_SIZE, .help = "bytes used" },
    { "FREE", "free_bytes", COLUMN_SIZE, .help = "bytes free" },
    { "USE%", "usage.bytes_percent", COLUMN_COUNT, .help = "bytes used, percent (as df counts)" },
    { "IUSE%", "usage.inodes_percent", COLUMN_COUNT, .hidden = true, .help = "inodes used, percent" },
    { "GROWTH", "growth.state", COLUMN_TEXT, .hidden = true, .help = "idle, growing, refused, failed" },
    { "SCOPE", "flush_scope", COLUMN_COUNT, .help = "workspaces on it (its flush scope)" },
    { "FLUSH", "flush_probe.last_seconds", COLUMN_SECONDS, .help = "the last 4 KiB write+fsync probe took" },
    { "HEALTH", "health", COLUMN_HEALTH, .help = "ok, warning, degraded, failed" },
    { "STATE", "state", COLUMN_TEXT, .hidden = true, .help = "up, down, failed, refused" },
    { "MOUNTPOINT", "mountpoint", COLUMN_TEXT, .hidden = true, .trunc = true, .help = "where it is mounted" },
    { "BACKING", "backing_file", COLUMN_TEXT, .hidden = true, .trunc = true, .help = "backing file" },
    { "ALLOCATED", "backing_allocated_bytes", COLUMN_SIZE, .hidden = true, .help = "bytes the backing file uses" },
    { "INODES", "inodes", COLUMN_COUNT, .hidden = true, .help = "inodes" },
    { "IFREE", "free_inodes", COLUMN_COUNT, .hidden = true, .help = "inodes free" },
    { "WORKSPACES", "workspaces", COLUMN_LIST, .hidden = true, .trunc = true, .help = "the workspaces on it" },
    { "FLUSH-ERROR", "flush_probe.last_error", COLUMN_TEXT, .hidden = true, .trunc = true,
      .help = "why the last flush probe failed" },
    { "MESSAGE", "message", COLUMN_TEXT, .hidden = true, .trunc = true, .help = "why it is not ok" },
};

static const Column workspace_columns[] = {
    { "ID", "id", COLUMN_TEXT, .help = "workspace id" },
    { "TENANT", "tenant", COLUMN_TEXT, .help = "tenant" },
    { "VOLUME", "volume", COLUMN_TEXT, .help = "state volume it is placed on" },
    { "SCOPE", "flush_scope", COLUMN_COUNT, .help = "workspaces sharing that volume" },
    { "DAEMON", "daemon.state", COLUMN_HEALTH, .help = "its FUSE daemon's state" },
    { "PID", "daemon.pid", COLUMN_COUNT, .help = "its FUSE daemon's pid" },
    { "RESTARTS", "daemon.restarts", COLUMN_COUNT, .help = "restarts of its daemon" },
    /* The mount point is what an operator goes to: labels give way first. */
    { "MOUNTPOINT", "mountpoint", COLUMN_TEXT, .help = "its FUSE mount" },
    { "LABELS", "labels", COLUMN_LABELS, .trunc = true, .help = "labels" },
    { "QUOTA", "quota_bytes", COLUMN_SIZE, .hidden = true, .help = "quota (0: none)" },
    { "QUOTA-USED", "quota.used_bytes", COLUMN_SIZE, .hidden = true, .help = "bytes charged to its quota" },
    { "STATE-DIR", "state_dir", COLUMN_TEXT, .hidden = true, .trunc = true, .help = "its state directory" },
    { "NEIGHBOURS", "neighbours", COLUMN_LIST, .hidden = true, .trunc = true,
      .help = "the other workspaces on its volume" },
    { "UPTIME", "daemon.uptime_seconds", COLUMN_COUNT, .hidden = true, .help = "seconds its daemon runs" },
    { "BLOCKED-BY", "daemon.blocked_by", COLUMN_TEXT, .hidden = true, .trunc = true,
      .help = "the volume a blocked daemon waits for" },
};

static int list_main(const char *verb, const char *path, const char *key, const Column *cols, size_t n, int argc,
                     char **argv, const LayoutctlGlobals *g, const char *what) {
    char usage[6144];
    FILE *f = fmemopen(usage, sizeof usage, "w");
    if (!f)
        return LAYOUTCTL_EXIT_FAILURE;
    fprintf(f,
            "Usage: layoutctl %s [-o COLUMNS] [-n] [-r|-P|-J] [-b] [--json] [--socket PATH] [--wait SEC]\n\n%s\n\n",
            verb, what);
    table_print_help(cols, n, f);
    fputs(CLIENT_COMMON_HELP, f);
    fclose(f);
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_LIST, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    if (table_check_columns(verb, cols, n, o.table.columns) < 0)
        return LAYOUTCTL_EXIT_USAGE;
    Reply r = {};
    if ((ec = client_get(verb, &o.args, path, &r)) != 0)
        return ec;
    json_object *rows = json_path_get(r.json, key);
    bool plain = o.table.noheadings || o.table.raw || o.table.pairs;
    if (o.args.json && !o.table.json)
        client_print_raw(&r);
    else if (!o.table.json && !plain && (!rows || json_object_array_length(rows) == 0))
        printf("No %s.\n", key);
    else if (table_print(cols, n, rows, &o.table) < 0) {
        fprintf(stderr, "layoutctl %s: cannot print the table: %s\n", verb, strerror(ENOMEM));
        ec = LAYOUTCTL_EXIT_FAILURE;
    }
    reply_done(&r);
    return ec;
}

int layoutctl_volumes(int argc, char **argv, const LayoutctlGlobals *g) {
    return list_main("volumes", "/v1/volumes", "volumes", volume_columns, ELEMENTSOF(volume_columns), argc, argv, g,
                     "Lists the volumes (flush domains): device, direct I/O, space, flush scope and the\n"
                     "latest flush probe, health.");
}

int layoutctl_workspaces(int argc, char **argv, const LayoutctlGlobals *g) {
    return list_main("workspaces", "/v1/workspaces", "workspaces", workspace_columns, ELEMENTSOF(workspace_columns),
                     argc, argv, g,
                     "Lists the workspaces: placement, flush scope, FUSE daemon state, mount point, labels.");
}

static bool has_suffix(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n > m && streq(s + n - m, suffix);
}

/* A Unix time as a person reads it: "2026-12-06 04:31 UTC (3 min ago)". */
static const char *format_when(char *buf, size_t size, double t) {
    time_t sec = (time_t) t;
    struct tm tm;
    char day[32];
    if (t <= 0 || !gmtime_r(&sec, &tm) || strftime(day, sizeof day, "%Y-%m-%d %H:%M UTC", &tm) == 0)
        return NULL;
    double age = (double) time(NULL) - t;
    if (age < -1)
        snprintf(buf, size, "%s (in the future)", day);
    else if (age < 60)
        snprintf(buf, size, "%s (%.0f s ago)", day, age < 0 ? 0 : age);
    else if (age < 3600)
        snprintf(buf, size, "%s (%.0f min ago)", day, age / 60);
    else if (age < 2 * 86400)
        snprintf(buf, size, "%s (%.1f h ago)", day, age / 3600);
    else
        snprintf(buf, size, "%s (%.0f days ago)", day, age / 86400);
    return buf;
}

/* One scalar as `show` prints it: sizes rounded (unless --bytes), times
 * ("..._at") as dates with their age, floats to 4 significant digits;
 * raw with --bytes. NULL for an object or array. */
static const char *format_scalar(char *buf, size_t size, const char *key, json_object *v, bool raw) {
    if (!v)
        return "-";
    if (json_object_is_type(v, json_type_object) || json_object_is_type(v, json_type_array))
        return NULL;
    bool number = json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);
    if (!raw && number && has_suffix(key, "_bytes") && json_object_get_int64(v) >= 0)
        return format_bytes(buf, size, json_object_get_uint64(v));
    if (!raw && number && has_suffix(key, "_at")) {
        const char *w = format_when(buf, size, json_object_get_double(v));
        if (w)
            return w;
    }
    if (!raw && json_object_is_type(v, json_type_double)) {
        snprintf(buf, size, "%.4g", json_object_get_double(v));
        return buf;
    }
    return json_object_get_string(v);
}

/* "key: value" lines of an object, nested keys dotted, for `show`: an
 * array of scalars as one comma-separated line ("-" when empty), an array
 * of objects as key[0].field lines. */
static void print_flat(json_object *o, const char *prefix, bool bytes) {
    json_object_object_foreach(o, k, v) {
        char key[256], buf[128];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (v && json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0) {
            print_flat(v, key, bytes);
            continue;
        }
        if (v && json_object_is_type(v, json_type_array)) {
            size_t n = json_object_array_length(v);
            bool objects = false;
            for (size_t i = 0; i < n; i++)
                objects |= json_object_is_type(json_object_array_get_idx(v, i), json_type_object);
            if (objects) {
                for (size_t i = 0; i < n; i++) {
                    json_object *e = json_object_array_get_idx(v, i);
                    char ekey[300];
                    snprintf(ekey, sizeof ekey, "%s[%zu]", key, i);
                    if (json_object_is_type(e, json_type_object))
                        print_flat(e, ekey, bytes);
                    else
                        printf("%s%-32s%s %s\n", C_BOLD, client_safe(0, ekey), C_RESET,
                               client_safe(1, format_scalar(buf, sizeof buf, k, e, bytes) ?: "?"));
                }
                continue;
            }
            _cleanup_free_ char *line = NULL;
            size_t len = 0;
            FILE *f = open_memstream(&line, &len);
            for (size_t i = 0; f && i < n; i++)
                fprintf(f, "%s%s", i ? ", " : "",
                        format_scalar(buf, sizeof buf, k, json_object_array_get_idx(v, i), bytes) ?: "?");
            if (f)
                fclose(f);
            printf("%s%-32s%s %s\n", C_BOLD, client_safe(0, key), C_RESET,
                   client_safe(1, n == 0 || !line ? "-" : line));
            continue;
        }
        const char *s = format_scalar(buf, sizeof buf, k, v, bytes);
        printf("%s%-32s%s %s\n", C_BOLD, client_safe(0, key), C_RESET, client_safe(1, s ?: "-"));
    }
}

typedef enum ShowType { SHOW_ANY, SHOW_WORKSPACE, SHOW_VOLUME } ShowType;

typedef struct ShowArgs {
    bool bytes;
    ShowType type;
} ShowArgs;

static int set_show_bytes(const char *arg, void *userdata) {
    ((ShowArgs *) userdata)->bytes = true;
    return 0;
}

static int set_show_type(const char *arg, void *userdata) {
    ShowArgs *a = userdata;
    if (streq(arg, "workspace"))
        a->type = SHOW_WORKSPACE;
    else if (streq(arg, "volume"))
        a->type = SHOW_VOLUME;
    else {
        const char *types[] = { "workspace", "volume" };
        const char *s = layoutctl_suggest(arg, types, ELEMENTSOF(types));
        if (s)
            layoutctl_usage_error("show", "--type is workspace or volume, not '%s'; did you mean '%s'?",
                                  client_safe(0, arg), s);
        else
            layoutctl_usage_error("show", "--type is workspace or volume, not '%s'", client_safe(0, arg));
        return -EINVAL;
    }
    return 0;
}

int layoutctl_show(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl show ID [--type workspace|volume] [--bytes] [--json] [--socket PATH] [--wait SEC]\n"
        "\n"
        "Shows everything the agent knows of one workspace or one volume. Without\n"
        "--type, ID is looked up as a workspace first, then as a volume name.\n"
        "\n"
        "  --type T        look ID up as a workspace or as a volume only\n"
        "  --bytes         sizes in bytes, not rounded to K/M/G\n" CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = {
        { { "bytes", no_argument, NULL, 0 }, set_show_bytes },
        { { "type", required_argument, NULL, 0 }, set_show_type },
    };
    ClientOptions o;
    ShowArgs a = {};
    int ec = client_parse(argc, argv, g, 0, extra, ELEMENTSOF(extra), &a, 1, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind];
    size_t max = a.type == SHOW_VOLUME ? LAYOUT_NAME_MAX : LAYOUT_WORKSPACE_ID_MAX;
    if (!layout_name_is_valid(id, max))
        return layoutctl_usage_error("show", "invalid name '%s' (use [a-z0-9][a-z0-9-]*, at most %zu characters)",
                                     client_safe(0, id), max);
    char path[128];
    Reply r = {};
    bool tried_workspace = false;
    if (a.type != SHOW_VOLUME) {
        snprintf(path, sizeof path, "/v1/workspaces/%s", id);
        if ((ec = client_call("show", &o.args, "GET", path, NULL, &r)) != 0)
            return ec;
        tried_workspace = true;
    }
    if (a.type == SHOW_VOLUME || (a.type == SHOW_ANY && r.status == 404 && strlen(id) <= LAYOUT_NAME_MAX)) {
        reply_done(&r);
        snprintf(path, sizeof path, "/v1/volumes/%s", id);
        if ((ec = client_call("show", &o.args, "GET", path, NULL, &r)) != 0)
            return ec;
    }
    if (r.status == 404) {
        const char *what = a.type == SHOW_WORKSPACE ? "no workspace"
                           : a.type == SHOW_VOLUME  ? "no volume"
                           : tried_workspace        ? "no workspace and no volume"
                                                    : "no volume";
        fprintf(stderr, "layoutctl show: %s named '%s'\n", what, id);
        if (o.args.json)
            client_print_raw(&r);
        reply_done(&r);
        return LAYOUTCTL_EXIT_NOT_FOUND;
    }
    if (r.status != 200)
        ec = client_report_error("show", &o.args, &r);
    else if (o.args.json)
        client_print_raw(&r);
    else
        print_flat(r.json, "", a.bytes);
    reply_done(&r);
    return ec;
}

/* [A-Za-z_][A-Za-z0-9_]*: a name `export` takes. */
static bool env_name_is_valid(const char *k) {
    if (!k || !(isalpha((unsigned char) k[0]) || k[0] == '_'))
        return false;
    for (const char *c = k; *c; c++)
        if (!(isalnum((unsigned char) *c) || *c == '_'))
            return false;
    return true;
}

/* Prints s in single quotes, for a POSIX shell: ' becomes '\''. */
static void print_shell_quoted(const char *s) {
    putchar('\'');
    for (; *s; s++) {
        if (*s == '\'')
            fputs("'\\''", stdout);
        else
            putchar(*s);
    }
    putchar('\'');
}

int layoutctl_env(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl env ID [--json] [--socket PATH] [--wait SEC]\n"
        "\n"
        "Prints the environment that points a workspace's tools at its cache\n"
        "(derived data on native storage: pnpm's store, target/, tool caches),\n"
        "as export lines for a shell: eval \"$(layoutctl env ID)\". With --json,\n"
        "the workspace's cache object. Fails (exit 1) when it has no cache\n"
        "(the layout's workspace.cache is off).\n" CLIENT_COMMON_HELP;
    ClientOptions o;
    int ec = client_parse(argc, argv, g, 0, NULL, 0, NULL, 1, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX))
        return layoutctl_usage_error("env", "invalid name '%s' (use [a-z0-9][a-z0-9-]*, at most %d characters)",
                                     client_safe(0, id), LAYOUT_WORKSPACE_ID_MAX);
    char path[128];
    Reply r = {};
    snprintf(path, sizeof path, "/v1/workspaces/%s", id);
    if ((ec = client_call("env", &o.args, "GET", path, NULL, &r)) != 0)
        return ec;
    if (r.status == 404) {
        fprintf(stderr, "layoutctl env: no workspace named '%s'\n", id);
        reply_done(&r);
        return LAYOUTCTL_EXIT_NOT_FOUND;
    }
    if (r.status != 200) {
        ec = client_report_error("env", &o.args, &r);
        reply_done(&r);
        return ec;
    }
    json_object *cache = NULL, *env = NULL, *state = NULL;
    if (!json_object_object_get_ex(r.json, "cache", &cache) || !cache ||
        !json_object_object_get_ex(cache, "environment", &env) || !json_object_is_type(env, json_type_object)) {
        fprintf(stderr, "layoutctl env: workspace '%s' has no cache (the layout's workspace.cache is off)\n", id);
        reply_done(&r);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (o.args.json)
        printf("%s\n", json_object_to_json_string_ext(cache, JSON_C_TO_STRING_PRETTY));
    else {
        /* Said, not refused: the variables are right either way, and the
         * tools work without the mount (through the workspace, slower). */
        if (json_object_object_get_ex(cache, "state", &state) && !streq_ptr(json_object_get_string(state), "mounted"))
            fprintf(stderr, "layoutctl env: workspace '%s': its cache is %s now\n", id, json_object_get_string(state));
        json_object_object_foreach(env, k, v) {
            /* From the agent, but printed for a shell to run: only names a
             * shell takes, only string values. */
            if (!json_object_is_type(v, json_type_string) || !env_name_is_valid(k)) {
                fprintf(stderr, "layoutctl env: skipping '%s': not a variable name with a string value\n",
                        client_safe(0, k));
                continue;
            }
            printf("export %s=", k);
            print_shell_quoted(json_object_get_string(v));
            putchar('\n');
        }
    }
    reply_done(&r);
    return LAYOUTCTL_EXIT_OK;
}
