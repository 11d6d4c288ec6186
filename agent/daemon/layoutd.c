/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutd: the node agent. Runs as a systemd unit (Type=notify) or in the
 * foreground with --layout for development and tests.
 */
#include <getopt.h>
#include <stdio.h>

#include "agent.h"
#include "log.h"


static void usage(FILE *f) {
    fprintf(f,
            "Usage: layoutd [OPTIONS]\n"
            "\n"
            "The layoutd node agent: carves the layout's volumes, places and\n"
            "supervises workspaces, and serves the status API.\n"
            "\n"
            "  --layout PATH     layout file, or a directory holding exactly one\n"
            "                    *.yaml (default %s)\n"
            "  --root DIR        override the layout's root\n"
            "  --socket PATH     override the API socket path\n"
            "  --no-workspaces   bring volumes up and serve the API, supervise nothing\n"
            "  --log-level L     err, warning, notice, info (default), debug\n"
            "  -h, --help        this help\n"
            "  --version         the version\n"
            "\n"
            "Signals: SIGHUP reloads the layout (an invalid one is refused and the\n"
            "old one keeps running); SIGTERM exits leaving the workspaces serving,\n"
            "for the next agent to re-adopt (unless workspace.on_agent_stop is stop);\n"
            "SIGINT stops every workspace and exits; SIGUSR2 exits leaving them\n"
            "serving whatever the layout says.\n",
            ENGINE_DEFAULT_LAYOUT_DIR);
}

static int parse_level(const char *s) {
    static const char *const names[] = { [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                                         [LOG_INFO] = "info", [LOG_DEBUG] = "debug" };
    for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
        if (names[i] && streq(names[i], s))
            return i;
    return -EINVAL;
}

int main(int argc, char **argv) {
    enum { OPT_LAYOUT = 0x100, OPT_ROOT, OPT_SOCKET, OPT_NO_WORKSPACES, OPT_LOG_LEVEL, OPT_VERSION };
    static const struct option options[] = {
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "root", required_argument, NULL, OPT_ROOT },
        { "socket", required_argument, NULL, OPT_SOCKET },
        { "no-workspaces", no_argument, NULL, OPT_NO_WORKSPACES },
        { "log-level", required_argument, NULL, OPT_LOG_LEVEL },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, OPT_VERSION },
        {},
    };
    AgentOptions o = { .layout = ENGINE_DEFAULT_LAYOUT_DIR };
    _cleanup_(agent_freep) Agent *a = NULL;
    int c, r;

    /* A worker (src/engine/worker.h): this same binary, so the agent and
     * its workers always speak the same protocol. */
    if (argc == 2 && streq(argv[1], "--worker"))
        return worker_main();
    /* An export (agent-export.c): the archive on fd 3. */
    if (argc >= 2 && streq(argv[1], "--export-worker"))
        return agent_export_worker_main(argc, argv);

    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
        switch (c) {
        case OPT_LAYOUT:
            o.layout = optarg;
            break;
        case OPT_ROOT:
            if (optarg[0] != '/') {
                fprintf(stderr, "layoutd: --root needs an absolute path\n");
                return 2;
            }
            o.root = optarg;
            break;
        case OPT_SOCKET:
            o.socket = optarg;
            break;
        case OPT_NO_WORKSPACES:
            o.no_workspaces = true;
            break;
        case OPT_LOG_LEVEL:
            r = parse_level(optarg);
            if (r < 0) {
                fprintf(stderr, "layoutd: unknown log level '%s'\n", optarg);
                return 2;
            }
            log_set_max_level(r);
            break;
        case 'h':
            usage(stdout);
            return 0;
        case OPT_VERSION:
            printf("layoutd %s\n", LAYOUTD_VERSION);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    if (optind < argc) {
        fprintf(stderr, "layoutd: unexpected argument '%s'\n", argv[optind]);
        return 2;
    }
    if (geteuid() != 0)
        log_warning("Not running as root: loop devices, mounts and FUSE supervision will fail");

    r = agent_new(&o, &a);
    if (r < 0)
        return 1;
    r = agent_run(a);
    return r < 0 ? 1 : r;
}
