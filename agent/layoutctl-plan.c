/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl plan [--layout FILE] [--root DIR] [--json]
 * Prints what `apply` would do, and what it would refuse and why.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "layoutctl-engine.h"
#include "layoutctl.h"
#include "plan.h"
#include "util.h"

static void plan_usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl plan [--layout FILE] [--root DIR] [--json]\n"
            "\n"
            "Observes the volumes and prints the steps `layoutctl apply` would take:\n"
            "  + create/attach/format/mount   ~ grow/limits/adopt   - detach\n"
            "  ! refused (and why)            ? drift between the record and reality\n"
            "Changes nothing. Works without the agent (as root).\n"
            "\n"
            "  --layout FILE  the layout (default: the one in %s)\n"
            "  --root DIR     override the layout's root\n"
            "  --json         {\"steps\": [...], \"actions\": N}\n"
            "\n"
            "Exit status: 0 (even if there is something to do), 1 error, 2 usage.\n",
            LAYOUTCTL_DEFAULT_LAYOUT_DIR);
}

int layoutctl_plan(int argc, char **argv, const LayoutctlGlobals *g) {
    enum { OPT_JSON = 0x100, OPT_LAYOUT, OPT_ROOT };
    static const struct option options[] = {
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "root", required_argument, NULL, OPT_ROOT },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        {},
    };
    const char *layout = NULL, *root = NULL;
    bool json = g->json;
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
        switch (c) {
        case OPT_LAYOUT:
            layout = optarg;
            break;
        case OPT_ROOT:
            root = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            plan_usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            plan_usage(stderr);
            return LAYOUTCTL_EXIT_USAGE;
        }
    if (optind < argc) {
        plan_usage(stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }

    EngineContext ctx;
    int ret = engine_context_open(&ctx, layout, root);
    if (ret != LAYOUTCTL_EXIT_OK) {
        engine_context_close(&ctx);
        return ret;
    }
    _cleanup_(plan_freep) Plan *plan = NULL;
    _cleanup_free_ char *text = NULL;
    int r = plan_compute(ctx.layout, ctx.record, ctx.obs, &plan);
    if (r >= 0)
        r = json ? plan_to_json_string(plan, &text) : plan_to_text(plan, &text);
    if (r < 0) {
        fprintf(stderr, "layoutctl: cannot compute the plan: %s\n", strerror(-r));
        ret = LAYOUTCTL_EXIT_FAILURE;
    } else
        printf("%s%s", text, json ? "\n" : "");
    engine_context_close(&ctx);
    return ret;
}
