/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl main: global options, then dispatch to a verb from the table.
 * To add a verb: write layoutctl-<verb>.c with
 *     int layoutctl_<verb>(int argc, char **argv, const LayoutctlGlobals *g);
 * declare it in layoutctl.h and add one row to `verbs` below.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "layout.h"
#include "layoutctl.h"
#include "util.h"


static const LayoutctlVerb verbs[] = {
    { "validate", "check layout files; --show prints the effective layout", layoutctl_validate },
    { "plan", "show what apply would change, refuse, or report as drift", layoutctl_plan },
    { "apply", "carve, attach, format, mount and grow the volumes", layoutctl_apply },
    { "teardown", "unmount and detach the volumes (--destroy-data: delete them)", layoutctl_teardown },
    { "repair", "resolve the safe drift cases (--forget-missing)", layoutctl_repair },
    { "why", "explain where a workspace would be placed, and why (ID [--tenant T])", layoutctl_why },
    { "status", "the running agent's state and a summary (exit 5: not healthy)", layoutctl_status },
    { "is-healthy", "quiet: exit 0 when the agent is healthy, 5 when not, 3 when not running", layoutctl_is_healthy },
    { "volumes", "list the volumes (flush domains) of the running agent", layoutctl_volumes },
    { "workspaces", "list the workspaces of the running agent", layoutctl_workspaces },
    { "show", "everything about one workspace or volume (ID [--type workspace|volume])", layoutctl_show },
    { "env", "print the environment that points a workspace's tools at its cache (ID)", layoutctl_env },
    { "add", "create a workspace (ID [--tenant T] [--quota SIZE] [--label K=V])", layoutctl_add },
    { "rm", "remove a workspace (ID [--destroy-data])", layoutctl_rm },
    { "restart", "restart a workspace's FUSE daemon (ID)", layoutctl_restart },
    { "quota", "set a workspace's quota online (ID SIZE)", layoutctl_quota },
    { "reload", "make the running agent re-read its layout", layoutctl_reload },
    { "gc", "sweep the content pool now ([--dry-run]): reclaim unreferenced objects", layoutctl_gc },
    { "check", "check every workspace's files against the content pool", layoutctl_check },
    { "shutdown", "stop the agent ([--stop-workspaces]: and every workspace)", layoutctl_shutdown },
    { "events", "follow the running agent's events ([--since N])", layoutctl_events },
    { "export", "write a workspace as a tar+zstd archive (ID -o FILE)", layoutctl_export },
    { "import", "create a workspace from an exported archive (FILE [--id ID] [--tenant T])", layoutctl_import },
};

static void usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl [OPTIONS] COMMAND [ARGS...]\n"
            "\n"
            "Commands:\n");
    for (size_t i = 0; i < sizeof verbs / sizeof verbs[0]; i++)
        fprintf(f, "  %-12s %s\n", verbs[i].name, verbs[i].summary);
    fprintf(f,
            "\n"
            "Options:\n"
            "  --json          machine-readable output\n"
            "  --socket PATH   the agent's API socket (default %s)\n"
            "  -h, --help      show this help\n"
            "  --version       show the version\n"
            "\n"
            "Exit status:\n"
            "  0  success (validate: every layout is valid)\n"
            "  1  failure (validate: at least one layout is invalid or unreadable)\n"
            "  2  usage error (plan --detailed-exitcode: there are changes)\n"
            "  3  layoutd is not running (client commands: no socket, or it refuses)\n"
            "  4  no such workspace or volume (show, rm, restart)\n"
            "  5  status, is-healthy: the agent answers, but is degraded, starting or stopping\n"
            "  6  refused: why's workspace would not be placed\n"
            "\n"
            "`layoutctl COMMAND --help` describes a command.\n",
            LAYOUT_API_SOCKET_DEFAULT);
}

int main(int argc, char **argv) {
    enum { OPT_JSON = 0x100, OPT_SOCKET, OPT_VERSION };
    static const struct option options[] = {
        { "json", no_argument, NULL, OPT_JSON },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, OPT_VERSION },
        {},
    };
    LayoutctlGlobals g = { .socket_path = LAYOUT_API_SOCKET_DEFAULT };
    int c;

    /* "+": stop at the verb, its options are its own; ":": a missing
     * argument is told from an unknown option. */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+:h", options, NULL)) >= 0)
        switch (c) {
        case OPT_JSON:
            g.json = true;
            break;
        case OPT_SOCKET:
            g.socket_path = optarg;
            g.socket_given = true;
            break;
        case 'h':
            usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        case OPT_VERSION:
            printf("layoutctl %s\n", LAYOUTD_VERSION);
            return LAYOUTCTL_EXIT_OK;
        default:
            return layoutctl_option_error(NULL, argv, options, c);
        }
    if (optind >= argc)
        return layoutctl_usage_error(NULL, "no command given");
    const int first = optind;
    const char *verb = argv[first];
    const char *names[ELEMENTSOF(verbs)];
    for (size_t i = 0; i < ELEMENTSOF(verbs); i++) {
        names[i] = verbs[i].name;
        if (strcmp(verbs[i].name, verb) == 0) {
            optind = 0; /* the verb runs getopt from scratch on its own argv */
            return verbs[i].run(argc - first, argv + first, &g);
        }
    }
    _cleanup_free_ char *shown = str_escape_terminal(verb);
    const char *s = layoutctl_suggest(verb, names, ELEMENTSOF(names));
    if (s)
        return layoutctl_usage_error(NULL, "unknown command '%s'; did you mean '%s'?", shown ?: "?", s);
    return layoutctl_usage_error(NULL, "unknown command '%s'", shown ?: "?");
}
