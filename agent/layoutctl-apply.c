/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl apply [--layout FILE] [--root DIR] [--json]
 * Carries out the plan; every step says changed / unchanged; a failed
 * volume is rolled back and the others go on.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apply.h"
#include "layoutctl-engine.h"
#include "layoutctl.h"
#include "plan.h"
#include "util.h"

static void apply_usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl apply [--layout FILE] [--root DIR] [--json]\n"
            "\n"
            "Carves, attaches (direct I/O), formats (only blank files layoutd created),\n"
            "mounts and grows the layout's volumes. Prints each volume and each step\n"
            "with changed/unchanged. A volume that fails is rolled back; the others go on.\n"
            "Works without the agent (as root); the agent does the same at start and reload.\n"
            "\n"
            "  --layout FILE  the layout (default: the one in %s)\n"
            "  --root DIR     override the layout's root\n"
            "  --json         {\"ok\": bool, \"volumes\": [...]}\n"
            "\n"
            "Exit status: 0 every volume is in service, 1 a volume failed or was refused, 2 usage.\n",
            LAYOUTCTL_DEFAULT_LAYOUT_DIR);
}

int layoutctl_apply(int argc, char **argv, const LayoutctlGlobals *g) {
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
            apply_usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            apply_usage(stderr);
            return LAYOUTCTL_EXIT_USAGE;
        }
    if (optind < argc) {
        apply_usage(stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }

    EngineContext ctx;
    int ret = engine_context_open(&ctx, layout, root);
    if (ret != LAYOUTCTL_EXIT_OK) {
        engine_context_close(&ctx);
        return ret;
    }
    _cleanup_(plan_freep) Plan *plan = NULL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    _cleanup_free_ char *text = NULL;
    int r = plan_compute(ctx.layout, ctx.record, ctx.obs, &plan);
    if (r >= 0)
        r = apply_plan(ctx.layout, plan, ctx.obs, ctx.record, ctx.record_path, &res);
    if (r >= 0)
        r = json ? apply_result_to_json_string(res, &text) : apply_result_to_text(res, &text);
    if (r < 0) {
        fprintf(stderr, "layoutctl: apply failed: %s\n", strerror(-r));
        ret = LAYOUTCTL_EXIT_FAILURE;
    } else {
        printf("%s%s", text, json ? "\n" : "");
        ret = apply_result_ok(res) ? LAYOUTCTL_EXIT_OK : LAYOUTCTL_EXIT_FAILURE;
    }
    engine_context_close(&ctx);
    return ret;
}
