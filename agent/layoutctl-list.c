/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reading client verbs: status, volumes, workspaces, show. Lists are
 * a table of columns each (layoutctl-table.c); --json prints the API's
 * answer untouched.
 */
#include <inttypes.h>
#include <stdio.h>

#include "layout.h"
#include "layoutctl-http.h"
#include "layoutctl-table.h"
#include "util.h"

int layoutctl_status(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] = "Usage: layoutctl status [--json] [--socket PATH]\n"
                                "\n"
                                "Shows the agent's state, its layout, a summary of volumes and workspaces,\n"
                                "and every problem it knows of.\n"
                                "\n" CLIENT_COMMON_HELP;
    ClientOptions o;
    int ec = client_parse(argc, argv, g, 0, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    Reply r = {};
    if ((ec = client_get("status", &o.args, "/v1/status", &r)) != 0)
        return ec;
    if (o.args.json) {
        client_print_raw(&r);
        reply_done(&r);
        return LAYOUTCTL_EXIT_OK;
    }
    json_object *j = r.json;
    const char *state = jstr(j, "state"), *health = jstr(j, "health");
    uint64_t up = juint(j, "uptime_sec");
    printf("%slayoutd %s%s (pid %" PRId64 "), state %s%s%s, health %s%s%s, up %" PRIu64 "h%02" PRIu64 "m%02" PRIu64
           "s\n",
           C_BOLD, jstr(j, "version") ?: "?", C_RESET, jint(j, "pid"), client_health_color(state) ?: "", state ?: "?",
           C_RESET, client_health_color(health) ?: "", health ?: "?", C_RESET, up / 3600, up / 60 % 60, up % 60);
    const char *hash = jstr(j, "layout.hash");
    printf("Layout:      %s (%.12s, generation %" PRId64 ")\n", jstr(j, "layout.path") ?: "-", hash ?: "-",
           jint(j, "generation"));
    int64_t warning = jint(j, "volumes.warning"), degraded = jint(j, "volumes.degraded") + jint(j, "volumes.failed"),
            failed = jint(j, "workspaces.failed");
    printf("Volumes:     %" PRId64 " total, %" PRId64 " ok, %s%" PRId64 " warning%s, %s%" PRId64 " degraded or failed%s\n",
           jint(j, "volumes.total"), jint(j, "volumes.ok"), warning ? C_YELLOW : "", warning, warning ? C_RESET : "",
           degraded ? C_RED : "", degraded, degraded ? C_RESET : "");
    printf("Workspaces:  %" PRId64 " total, %" PRId64 " running, %s%" PRId64 " failed%s\n", jint(j, "workspaces.total"),
           jint(j, "workspaces.running"), failed ? C_RED : "", failed, failed ? C_RESET : "");
    json_object *p = jget(j, "problems");
    size_t np = p && json_object_is_type(p, json_type_array) ? json_object_array_length(p) : 0;
    if (np == 0)
        printf("Problems:    none\n");
    for (size_t i = 0; i < np; i++) {
        json_object *x = json_object_array_get_idx(p, i);
        const char *level = jstr(x, "level");
        printf("%s %s%s%s%s\n", i == 0 ? "Problems:   " : "            ", client_health_color(level) ?: C_RED,
               level ? level : "", level ? ": " : "", jstr(x, "message") ?: "?");
        fputs(C_RESET, stdout);
    }
    json_object *gc = jget(j, "gc");
    if (gc && !json_object_is_type(gc, json_type_null)) {
        char b[32];
        uint64_t bytes = juint(gc, "reclaimed_bytes");
        printf("Content GC:  %s, %" PRId64 " runs (%" PRId64 " failed), %s reclaimed since start%s%s\n",
               jbool(gc, "running") ? "running" : "idle", jint(gc, "runs"), jint(gc, "failures"),
               format_bytes(b, sizeof b, bytes), jstr(gc, "last_error") ? "; last error: " : "",
               jstr(gc, "last_error") ?: "");
    }
    reply_done(&r);
    return LAYOUTCTL_EXIT_OK;
}

static const Column volume_columns[] = {
    { "NAME", "name", COLUMN_TEXT, .help = "volume name" },
    { "ROLE", "role", COLUMN_TEXT, .help = "state or content pool" },
    { "BACKEND", "backend", COLUMN_TEXT, .help = "loop-ext4, loop-xfs, vdo-xfs, dir" },
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
    { "HEALTH", "health", COLUMN_HEALTH, .help = "ok, warning, degraded, failed" },
    { "STATE", "state", COLUMN_TEXT, .hidden = true, .help = "up, down, failed, refused" },
    { "MOUNTPOINT", "mountpoint", COLUMN_TEXT, .hidden = true, .help = "where it is mounted" },
    { "BACKING", "backing_file", COLUMN_TEXT, .hidden = true, .help = "backing file" },
    { "ALLOCATED", "backing_allocated_bytes", COLUMN_SIZE, .hidden = true, .help = "bytes the backing file uses" },
    { "INODES", "inodes", COLUMN_COUNT, .hidden = true, .help = "inodes" },
    { "IFREE", "free_inodes", COLUMN_COUNT, .hidden = true, .help = "inodes free" },
    { "WORKSPACES", "workspaces", COLUMN_LIST, .hidden = true, .help = "the workspaces on it" },
    { "MESSAGE", "message", COLUMN_TEXT, .hidden = true, .help = "why it is not ok" },
};

static const Column workspace_columns[] = {
    { "ID", "id", COLUMN_TEXT, .help = "workspace id" },
    { "TENANT", "tenant", COLUMN_TEXT, .help = "tenant" },
    { "VOLUME", "volume", COLUMN_TEXT, .help = "state volume it is placed on" },
    { "SCOPE", "flush_scope", COLUMN_COUNT, .help = "workspaces sharing that volume" },
    { "DAEMON", "daemon.state", COLUMN_HEALTH, .help = "its FUSE daemon's state" },
    { "PID", "daemon.pid", COLUMN_COUNT, .help = "its FUSE daemon's pid" },
    { "RESTARTS", "daemon.restarts", COLUMN_COUNT, .help = "restarts of its daemon" },
    { "QUOTA", "quota_bytes", COLUMN_SIZE, .help = "quota (0: none)" },
    { "LABELS", "labels", COLUMN_LABELS, .help = "labels" },
    { "MOUNTPOINT", "mountpoint", COLUMN_TEXT, .hidden = true, .help = "its FUSE mount" },
    { "STATE-DIR", "state_dir", COLUMN_TEXT, .hidden = true, .help = "its state directory" },
    { "NEIGHBOURS", "neighbours", COLUMN_LIST, .hidden = true, .help = "the other workspaces on its volume" },
    { "UPTIME", "daemon.uptime_seconds", COLUMN_COUNT, .hidden = true, .help = "seconds its daemon runs" },
};

static int list_main(const char *verb, const char *path, const char *key, const Column *cols, size_t n, int argc,
                     char **argv, const LayoutctlGlobals *g, const char *what) {
    char usage[4096];
    FILE *f = fmemopen(usage, sizeof usage, "w");
    if (!f)
        return LAYOUTCTL_EXIT_FAILURE;
    fprintf(f, "Usage: layoutctl %s [-o COLUMNS] [--no-legend] [--bytes] [--json] [--socket PATH]\n\n%s\n\n", verb,
            what);
    table_print_help(cols, n, f);
    fputs(CLIENT_COMMON_HELP, f);
    fclose(f);
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_LIST, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    if (table_check_columns(verb, cols, n, o.columns) < 0)
        return LAYOUTCTL_EXIT_USAGE;
    Reply r = {};
    if ((ec = client_get(verb, &o.args, path, &r)) != 0)
        return ec;
    if (o.args.json)
        client_print_raw(&r);
    else {
        json_object *rows = jget(r.json, key);
        if (!o.no_legend && (!rows || json_object_array_length(rows) == 0))
            printf("No %s.\n", key);
        else {
            TableOptions t = { .columns = o.columns, .no_legend = o.no_legend, .bytes = o.bytes };
            table_print_json(cols, n, rows, &t);
        }
    }
    reply_done(&r);
    return LAYOUTCTL_EXIT_OK;
}

int layoutctl_volumes(int argc, char **argv, const LayoutctlGlobals *g) {
    return list_main("volumes", "/v1/volumes", "volumes", volume_columns, ELEMENTSOF(volume_columns), argc, argv, g,
                     "Lists the volumes (flush domains): device, direct I/O, space, workspaces, health.");
}

int layoutctl_workspaces(int argc, char **argv, const LayoutctlGlobals *g) {
    return list_main("workspaces", "/v1/workspaces", "workspaces", workspace_columns, ELEMENTSOF(workspace_columns),
                     argc, argv, g, "Lists the workspaces: placement, flush scope, FUSE daemon state, quota, labels.");
}

/* "key: value" lines of an object, nested keys dotted, for `show`. */
static void print_flat(json_object *o, const char *prefix, bool bytes) {
    json_object_object_foreach(o, k, v) {
        char key[256];
        snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "", k);
        if (v && json_object_is_type(v, json_type_object) && json_object_object_length(v) > 0) {
            print_flat(v, key, bytes);
            continue;
        }
        char buf[32];
        const char *s = !v ? "-" : json_object_get_string(v);
        if (v && !bytes && json_object_is_type(v, json_type_int) && strlen(k) > 6 &&
            streq(k + strlen(k) - 6, "_bytes"))
            s = format_bytes(buf, sizeof buf, json_object_get_uint64(v));
        printf("%s%-32s%s %s\n", C_BOLD, key, C_RESET, s);
    }
}

static int set_bytes(const char *arg, void *userdata) {
    *(bool *) userdata = true;
    return 0;
}

int layoutctl_show(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] = "Usage: layoutctl show ID [--bytes] [--json] [--socket PATH]\n"
                                "\n"
                                "Shows everything the agent knows of one workspace or one volume (a\n"
                                "workspace id is looked up first, then a volume name).\n"
                                "\n"
                                "  --bytes         sizes in bytes, not rounded to K/M/G\n" CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = { { { "bytes", no_argument, NULL, 0 }, set_bytes } };
    ClientOptions o;
    bool bytes = false;
    int ec = client_parse(argc, argv, g, 0, extra, ELEMENTSOF(extra), &bytes, 1, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    o.bytes = bytes;
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX)) {
        fprintf(stderr, "layoutctl show: invalid name '%s'\n", id);
        return LAYOUTCTL_EXIT_USAGE;
    }
    char path[128];
    Reply r = {};
    snprintf(path, sizeof path, "/v1/workspaces/%s", id);
    ec = client_call("show", &o.args, "GET", path, NULL, &r);
    if (ec != 0)
        return ec;
    if (r.status == 404 && strlen(id) <= LAYOUT_NAME_MAX) {
        reply_done(&r);
        snprintf(path, sizeof path, "/v1/volumes/%s", id);
        if ((ec = client_call("show", &o.args, "GET", path, NULL, &r)) != 0)
            return ec;
    }
    if (r.status == 404) {
        fprintf(stderr, "layoutctl show: no workspace and no volume named '%s'\n", id);
        if (o.args.json)
            client_print_raw(&r);
        reply_done(&r);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (r.status != 200)
        ec = client_report_error("show", &o.args, &r);
    else if (o.args.json)
        client_print_raw(&r);
    else
        print_flat(r.json, "", o.bytes);
    reply_done(&r);
    return ec;
}
