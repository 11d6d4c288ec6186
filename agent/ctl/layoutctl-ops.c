/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The changing client verbs: add, rm, restart, reload. Each is an operation
 * of the agent: layoutctl waits for it by default, printing its steps on
 * stderr as they happen, and prints the outcome on stdout (--json: the
 * final answer); --no-wait prints the operation and returns at once.
 */
#include <inttypes.h>
#include <stdio.h>
#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "escape.h"
#include "layout.h"
#include "layoutctl-http.h"
#include "util.h"

/* The answer of an operation that was not waited for (--no-wait). */
static int print_accepted(const char *verb, const ClientOptions *o, const Reply *r) {
    if (o->args.json)
        client_print_raw(r);
    else
        printf("Accepted: operation %s (follow it: curl --unix-socket %s http://localhost%s?wait=60)\n",
               client_safe(0, json_path_str(r->json, "operation.id") ?: "?"), o->args.socket_path,
               client_safe(1, r->location ?: "/v1/operations"));
    return LAYOUTCTL_EXIT_OK;
}

/* The common ending of a changing verb: an accepted operation (--no-wait),
 * an error answer, or --json's raw answer are printed here, and *ec set.
 * Returns true when the answer is ok_status and the caller prints its own
 * line. */
static bool finish(const char *verb, const ClientOptions *o, const Reply *r, unsigned ok_status, int *ec) {
    *ec = LAYOUTCTL_EXIT_OK;
    if (r->status == 202 && o->no_wait)
        *ec = print_accepted(verb, o, r);
    else if (r->status != ok_status)
        *ec = client_report_error(verb, &o->args, r);
    else if (o->args.json)
        client_print_raw(r);
    else
        return true;
    return false;
}

typedef struct AddArgs {
    json_object *body, *labels;
    bool queue;
} AddArgs;

static int add_queue(const char *arg, void *userdata) {
    ((AddArgs *) userdata)->queue = true;
    return 0;
}

static int add_tenant(const char *arg, void *userdata) {
    AddArgs *a = userdata;
    if (!layout_name_is_valid(arg, LAYOUT_NAME_MAX)) {
        layoutctl_usage_error("add", "invalid tenant '%s' (use [a-z0-9][a-z0-9-]*)", client_safe(0, arg));
        return -EINVAL;
    }
    json_object_object_add(a->body, "tenant", json_object_new_string(arg));
    return 0;
}

static int add_quota(const char *arg, void *userdata) {
    AddArgs *a = userdata;
    uint64_t q;
    if (layout_parse_size(arg, &q) < 0) {
        layoutctl_usage_error("add", "invalid size '%s' (e.g. 10G, 512MiB)", client_safe(0, arg));
        return -EINVAL;
    }
    json_object_object_add(a->body, "quota", json_object_new_uint64(q));
    return 0;
}

static int add_label(const char *arg, void *userdata) {
    AddArgs *a = userdata;
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg) {
        layoutctl_usage_error("add", "--label wants KEY=VALUE, got '%s'", client_safe(0, arg));
        return -EINVAL;
    }
    _cleanup_free_ char *k = strndup(arg, (size_t) (eq - arg));
    if (!k)
        return -ENOMEM;
    json_object_object_add(a->labels, k, json_object_new_string(eq + 1));
    return 0;
}

int layoutctl_add(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl add ID [--tenant T] [--quota SIZE] [--label KEY=VALUE]... [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
        "\n"
        "Creates a workspace: the agent places it on a state volume (carving a new one\n"
        "when every volume is at its bound) and starts its FUSE daemon. Waits until the\n"
        "daemon serves the mount, printing the steps.\n"
        "\n"
        "  --tenant T        the workspace's tenant ([a-z0-9][a-z0-9-]*)\n"
        "  --quota SIZE      e.g. 10G, 512MiB (default: none)\n"
        "  --label KEY=VALUE a label; may be repeated\n"
        "  --queue           while a volume it needs is out of service, wait for it\n"
        "                    (default: refused at once, 409 blocked)\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = {
        { { "tenant", required_argument, NULL, 0 }, add_tenant },
        { { "quota", required_argument, NULL, 0 }, add_quota },
        { { "label", required_argument, NULL, 0 }, add_label },
        { { "queue", no_argument, NULL, 0 }, add_queue },
    };
    AddArgs a = { .body = json_object_new_object(), .labels = json_object_new_object() };
    ClientOptions o;
    int ec = LAYOUTCTL_EXIT_FAILURE;
    if (!a.body || !a.labels)
        goto out;
    ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, extra, ELEMENTSOF(extra), &a, 1, usage, &o);
    if (ec != 0) {
        ec = ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
        goto out;
    }
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX)) {
        ec = layoutctl_usage_error("add", "invalid workspace ID '%s' (use [a-z0-9][a-z0-9-]*, at most %d characters)",
                                   client_safe(0, id), LAYOUT_WORKSPACE_ID_MAX);
        goto out;
    }
    json_object_object_add(a.body, "id", json_object_new_string(id));
    if (json_object_object_length(a.labels) > 0)
        json_object_object_add(a.body, "labels", json_object_get(a.labels));

    Reply r = {};
    ec = client_call_operation("add", &o.args, "POST", a.queue ? "/v1/workspaces?queue=true" : "/v1/workspaces", a.body,
                               o.no_wait, o.args.json, &r);
    if (ec != 0)
        goto out;
    if (finish("add", &o, &r, 201, &ec)) {
        const char *mp = json_path_str(r.json, "mountpoint");
        printf("Created workspace %s%s%s on %s (flush scope %" PRId64 ")%s%s\n", C_BOLD,
               client_safe(0, json_path_str(r.json, "id") ?: id), C_RESET, client_safe(1, json_path_str(r.json, "volume") ?: "?"),
               json_path_int(r.json, "flush_scope"), mp ? ", mounted at " : "", mp ? client_safe(2, mp) : "");
    }
    reply_done(&r);
out:
    json_object_put(a.body);
    json_object_put(a.labels);
    return ec;
}

static int set_flag(const char *arg, void *userdata) {
    *(bool *) userdata = true;
    return 0;
}

int layoutctl_rm(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl rm ID [--destroy-data] [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
        "\n"
        "Removes a workspace: stops its daemon and unmounts it. Its data is kept (and a\n"
        "later `add` of the same ID finds it again) unless --destroy-data is given.\n"
        "\n"
        "  --destroy-data  delete the workspace's state directory too\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP;
    bool destroy = false;
    static const ClientExtraOption extra[] = { { { "destroy-data", no_argument, NULL, 0 }, set_flag } };
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, extra, ELEMENTSOF(extra), &destroy, 1, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX)) {
        return layoutctl_usage_error("rm", "invalid workspace ID '%s'", client_safe(0, id));
    }
    char path[128];
    snprintf(path, sizeof(path), "/v1/workspaces/%s%s", id, destroy ? "?destroy_data=true" : "");
    Reply r = {};
    ec = client_call_operation("rm", &o.args, "DELETE", path, NULL, o.no_wait, o.args.json, &r);
    if (ec != 0)
        return ec;
    if (finish("rm", &o, &r, 200, &ec))
        printf("Removed workspace %s (%s)\n", id, destroy ? "data destroyed" : "data kept");
    reply_done(&r);
    return ec;
}

int layoutctl_restart(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] = "Usage: layoutctl restart ID [--queue] [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
                                "\n"
                                "Restarts the workspace's FUSE daemon and waits until it serves again.\n"
                                "\n"
                                "  --queue         while a volume it needs is out of service, wait for it\n"
                                "                  (default: refused at once, 409 blocked)\n" CLIENT_WAIT_HELP
                                    CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = { { { "queue", no_argument, NULL, 0 }, set_flag } };
    bool queue = false;
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, extra, ELEMENTSOF(extra), &queue, 1,
                          usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX)) {
        return layoutctl_usage_error("restart", "invalid workspace ID '%s'", client_safe(0, id));
    }
    char path[128];
    snprintf(path, sizeof(path), "/v1/workspaces/%s/restart%s", id, queue ? "?queue=true" : "");
    Reply r = {};
    ec = client_call_operation("restart", &o.args, "POST", path, NULL, o.no_wait, o.args.json, &r);
    if (ec != 0)
        return ec;
    if (finish("restart", &o, &r, 200, &ec)) {
        if (json_path_get(r.json, "daemon.pid"))
            printf("Restarted the daemon of workspace %s (pid %" PRId64 ")\n", id, json_path_int(r.json, "daemon.pid"));
        else
            printf("Restarted the daemon of workspace %s\n", id);
    }
    reply_done(&r);
    return ec;
}

int layoutctl_quota(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] = "Usage: layoutctl quota ID SIZE [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
                                "\n"
                                "Sets the workspace's quota online (SIZE e.g. 10G; 0 or none: no limit).\n"
                                "The kernel enforces it (XFS project quotas): writes past it fail with\n"
                                "ENOSPC (XFS reports a project quota so). A host that cannot enforce\n"
                                "one refuses (exit 1, 501); so does a first quota for a workspace whose\n"
                                "daemon has a package store (exit 1, 409: give it at create).\n"
                                "\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP;
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, NULL, 0, NULL, 2, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind], *size = argv[optind + 1];
    uint64_t q = 0;
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX))
        return layoutctl_usage_error("quota", "invalid workspace ID '%s'", client_safe(0, id));
    if (!streq(size, "none") && layout_parse_size(size, &q) < 0)
        return layoutctl_usage_error("quota", "invalid size '%s' (e.g. 10G, 512MiB, none)", client_safe(1, size));
    char path[128];
    snprintf(path, sizeof(path), "/v1/workspaces/%s/quota", id);
    json_object *body = json_object_new_object();
    json_object_object_add(body, "quota", json_object_new_uint64(q));
    Reply r = {};
    ec = client_call_operation("quota", &o.args, "PUT", path, body, o.no_wait, o.args.json, &r);
    json_object_put(body);
    if (ec != 0)
        return ec;
    if (finish("quota", &o, &r, 200, &ec)) {
        if (q)
            printf("Workspace %s: quota %s (%" PRIu64 " bytes)\n", id, size, q);
        else
            printf("Workspace %s: no quota\n", id);
    }
    reply_done(&r);
    return ec;
}

int layoutctl_reload(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] = "Usage: layoutctl reload [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
                                "\n"
                                "Makes the agent re-read its layout and apply the difference. An invalid\n"
                                "layout is refused and the running one stays (the errors are printed);\n"
                                "what the new layout asks for but cannot be done (a shrink) is said.\n"
                                "`systemctl reload layoutd` runs this (the unit's ExecReload=), so a refused\n"
                                "layout fails the reload.\n"
                                "\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP;
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    Reply r = {};
    ec = client_call_operation("reload", &o.args, "POST", "/v1/reload", NULL, o.no_wait, o.args.json, &r);
    if (ec != 0)
        return ec;
    if (finish("reload", &o, &r, 200, &ec)) {
        json_object *ch = json_path_get(r.json, "changed"), *refused = json_path_get(r.json, "refused");
        printf("Reloaded the layout: %s (%.12s, generation %" PRId64 ")\n",
               ch && json_object_get_boolean(ch) ? "changed" : "unchanged",
               client_safe(0, json_path_str(r.json, "layout_hash") ?: "-"), json_path_int(r.json, "generation"));
        for (size_t i = 0; refused && i < json_object_array_length(refused); i++)
            printf("  %snot done%s: %s\n", C_YELLOW, C_RESET,
                   client_safe(0, json_object_get_string(json_object_array_get_idx(refused, i))));
    }
    reply_done(&r);
    return ec;
}

int layoutctl_gc(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl gc [--dry-run] [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
        "\n"
        "Sweeps the content pool now: the objects no workspace references, older than\n"
        "the pool's gc.grace, are deleted (the layout's gc.command does it; the agent\n"
        "also runs it every gc.interval and when the pool runs low). Prints what was\n"
        "reclaimed. Refused while a volume that may hold references is out of service.\n"
        "\n"
        "  --dry-run  report what would be reclaimed, delete nothing\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP;
    bool dry = false;
    static const ClientExtraOption extra[] = { { { "dry-run", no_argument, NULL, 0 }, set_flag } };
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, extra, ELEMENTSOF(extra), &dry, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    Reply r = {};
    ec = client_call_operation("gc", &o.args, "POST", dry ? "/v1/gc?dry_run=true" : "/v1/gc", NULL, o.no_wait,
                               o.args.json, &r);
    if (ec != 0)
        return ec;
    if (finish("gc", &o, &r, 200, &ec)) {
        char b[32];
        printf("%s %" PRIu64 " objects, %s in %.1fs%s\n", dry ? "Would reclaim" : "Reclaimed",
               json_path_uint(r.json, "report.objects_swept"), format_bytes(b, sizeof b, json_path_uint(r.json, "report.bytes_freed")),
               json_path_get(r.json, "duration_seconds") ? json_object_get_double(json_path_get(r.json, "duration_seconds")) : 0.0,
               dry ? " (dry run: nothing deleted)" : "");
    }
    reply_done(&r);
    return ec;
}

int layoutctl_check(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl check [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
        "\n"
        "Checks every workspace's files against the content pool: lists each file whose\n"
        "object the pool does not have (it reads as an I/O error, never as zeros, and\n"
        "keeps its reference: a pool restored from a backup makes it readable again),\n"
        "and each file that still holds its whole data beside its object (space held\n"
        "twice until its daemon punches it).\n"
        "Changes nothing. The pool's own tool does it (layoutd-wsfs fsck for the\n"
        "reference daemon). Refused while a volume that may hold references is out of\n"
        "service.\n"
        "\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP "\n"
        "Exit status: 0 nothing missing, 1 files without their object (listed) or an\n"
        "error, 2 usage, 3 layoutd is not running, 7 the check could not look at\n"
        "everything (nothing missing in what it saw).\n";
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, NULL, 0, NULL, 0, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    Reply r = {};
    ec = client_call_operation("check", &o.args, "POST", "/v1/check", NULL, o.no_wait, o.args.json, &r);
    if (ec != 0)
        return ec;
    if (finish("check", &o, &r, 200, &ec)) {
        json_object *missing = json_path_get(r.json, "report.missing");
        uint64_t stubs = json_path_uint(r.json, "report.stubs_missing"), objects = json_path_uint(r.json, "report.objects_missing");
        json_object *okv = json_path_get(r.json, "report.ok");
        bool complete = okv && json_object_get_boolean(okv);
        for (size_t i = 0; missing && i < json_object_array_length(missing); i++) {
            json_object *m = json_object_array_get_idx(missing, i), *p, *d, *own;
            json_object_object_get_ex(m, "path", &p);
            json_object_object_get_ex(m, "digest", &d);
            json_object_object_get_ex(m, "own_data", &own);
            /* A path is a tenant's file name: it may hold anything. */
            _cleanup_free_ char *path = str_escape_terminal(p ? json_object_get_string(p) : "?");
            printf("missing  %s  %s  %s\n", d ? json_object_get_string(d) : "?", path ?: "?",
                   own ? json_object_get_string(own) : "");
        }
        /* Files held twice: whole on their state volume while the pool has
         * their object, a punch still to come (issue 35.3). Not an error:
         * space, not data. */
        json_object *twice = json_path_get(r.json, "report.twice");
        for (size_t i = 0; twice && i < json_object_array_length(twice); i++) {
            json_object *m = json_object_array_get_idx(twice, i), *p, *d, *al;
            json_object_object_get_ex(m, "path", &p);
            json_object_object_get_ex(m, "digest", &d);
            json_object_object_get_ex(m, "allocated", &al);
            _cleanup_free_ char *path = str_escape_terminal(p ? json_object_get_string(p) : "?");
            printf("twice    %s  %s  %s bytes\n", d ? json_object_get_string(d) : "?", path ?: "?",
                   al ? json_object_get_string(al) : "?");
        }
        printf("%" PRIu64 " stub(s) checked: %" PRIu64 " without their object (%" PRIu64 " object(s))%s\n",
               json_path_uint(r.json, "report.stubs_checked"), stubs, objects, complete ? "" : "; the check was incomplete");
        if (json_path_uint(r.json, "report.held_twice") > 0)
            printf("%" PRIu64 " file(s) hold their whole data beside their object: %" PRIu64
                   " bytes held twice, until their daemon punches them (at their last close, its next batch, or "
                   "its start)\n",
                   json_path_uint(r.json, "report.held_twice"), json_path_uint(r.json, "report.held_twice_bytes"));
        if (stubs > 0)
            ec = LAYOUTCTL_EXIT_FAILURE;
        else if (!complete)
            ec = LAYOUTCTL_EXIT_INCOMPLETE;
    }
    reply_done(&r);
    return ec;
}

/* --stop-workspaces and --keep-workspaces contradict each other: given
 * both, the command is refused rather than the last one winning. */
typedef struct ShutdownArgs {
    int stop;                    /* -1: the layout's on_agent_stop */
    bool conflict;
} ShutdownArgs;

static int set_stop(const char *arg, void *userdata) {
    ShutdownArgs *a = userdata;
    a->conflict = a->conflict || a->stop == 0;
    a->stop = 1;
    return 0;
}

static int set_keep(const char *arg, void *userdata) {
    ShutdownArgs *a = userdata;
    a->conflict = a->conflict || a->stop == 1;
    a->stop = 0;
    return 0;
}

/* Waits until process pid is gone (a pidfd polls readable when it exits;
 * any user may open one). Returns true when it is gone. */
static bool wait_pid_gone(int pidfd, int timeout_ms) {
    struct pollfd p = { .fd = pidfd, .events = POLLIN };
    int r;
    do
        r = poll(&p, 1, timeout_ms);
    while (r < 0 && errno == EINTR);
    return r > 0;
}

int layoutctl_shutdown(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl shutdown [--stop-workspaces | --keep-workspaces] [--no-wait] [--wait SEC] [--json] [--socket PATH]\n"
        "\n"
        "Stops the agent. By default its workspaces do what the layout's\n"
        "workspace.on_agent_stop says (keep: they go on serving and the next agent\n"
        "re-adopts them, as after `systemctl restart`). Waits until the agent exited.\n"
        "Under systemd the unit then stays stopped until `systemctl start layoutd`, or,\n"
        "with layoutd.socket, until the next client connects.\n"
        "\n"
        "  --stop-workspaces  stop every workspace's daemon first (unmounting it)\n"
        "  --keep-workspaces  leave them serving\n" CLIENT_WAIT_HELP CLIENT_COMMON_HELP;
    ShutdownArgs a = { .stop = -1 };
    static const ClientExtraOption extra[] = {
        { { "stop-workspaces", no_argument, NULL, 0 }, set_stop },
        { { "keep-workspaces", no_argument, NULL, 0 }, set_keep },
    };
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_OPERATION | CLIENT_OPT_CHANGES, extra, ELEMENTSOF(extra), &a, 0,
                          usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    if (a.conflict)
        return layoutctl_usage_error("shutdown", "--stop-workspaces and --keep-workspaces contradict each other");
    /* The agent's pid first: the socket is no sign that it is gone, since
     * under socket activation systemd keeps listening on it (and the next
     * connection would start a new agent). */
    Reply r = {};
    if ((ec = client_get("shutdown", &o.args, "/v1/status", &r)) != 0)
        return ec;
    pid_t pid = (pid_t) json_path_int(r.json, "pid");
    reply_done(&r);
    _cleanup_close_ int pidfd = pid > 0 ? (int) syscall(SYS_pidfd_open, pid, 0) : -EBADF;

    const char *path = a.stop < 0 ? "/v1/shutdown" : a.stop ? "/v1/shutdown?stop_workspaces=true"
                                                             : "/v1/shutdown?stop_workspaces=false";
    ec = client_call("shutdown", &o.args, "POST", path, NULL, &r);
    if (ec != 0)
        return ec;
    if (r.status != 202) {
        ec = client_report_error("shutdown", &o.args, &r);
        reply_done(&r);
        return ec;
    }
    bool stops = streq_ptr(json_path_str(r.json, "workspaces"), "stop");
    int64_t n = json_path_int(r.json, "count");
    if (o.args.json)
        client_print_raw(&r);
    reply_done(&r);
    if (o.no_wait)
        return LAYOUTCTL_EXIT_OK;
    /* Stopping every daemon takes up to its stop_timeout; a job running
     * finishes first. Ten minutes is far past both. */
    if (pidfd < 0) {
        fprintf(stderr, "layoutctl shutdown: cannot follow the agent (pid %d): %s; not waiting\n", (int) pid,
                strerror(errno));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (!wait_pid_gone(pidfd, 600 * 1000)) {
        fprintf(stderr, "layoutctl shutdown: the agent (pid %d) still runs after 10 minutes\n", (int) pid);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (!o.args.json) {
        if (stops)
            printf("The agent stopped, and its %" PRId64 " workspace(s) with it\n", n);
        else
            printf("The agent stopped; its %" PRId64 " workspace(s) go on serving (the next agent re-adopts them)\n",
                   n);
    }
    return LAYOUTCTL_EXIT_OK;
}
