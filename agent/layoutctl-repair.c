/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl repair [--forget-missing] [--layout FILE] [--root DIR] [--json]
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apply.h"
#include "layoutctl-engine.h"
#include "layoutctl.h"
#include "plan.h"
#include "util.h"

static void repair_usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl repair [--forget-missing] [--layout FILE] [--root DIR] [--json]\n"
            "\n"
            "Resolves the drift between the record and reality where that is safe:\n"
            "  - a volume mounted by hand elsewhere (UUID matching): mounted at its own path too;\n"
            "  - our UUID found after an interrupted mkfs: recorded as formatted;\n"
            "  - a recorded volume whose backing file was deleted: forgotten (--forget-missing).\n"
            "Refuses the unsafe ones (changed UUID, foreign or lost signature, busy mount path)\n"
            "and says why. Run `layoutctl apply` afterwards for the remaining changes.\n"
            "\n"
            "Exit status: 0 nothing unsafe left, 1 something refused or failed, 2 usage.\n");
}

int layoutctl_repair(int argc, char **argv, const LayoutctlGlobals *g) {
    enum { OPT_JSON = 0x100, OPT_LAYOUT, OPT_ROOT, OPT_FORGET };
    static const struct option options[] = {
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "root", required_argument, NULL, OPT_ROOT },
        { "forget-missing", no_argument, NULL, OPT_FORGET },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        {},
    };
    const char *layout = NULL, *root = NULL;
    bool json = g->json;
    RepairOptions o = {};
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
        switch (c) {
        case OPT_LAYOUT:
            layout = optarg;
            break;
        case OPT_ROOT:
            root = optarg;
            break;
        case OPT_FORGET:
            o.forget_missing = true;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            repair_usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            repair_usage(stderr);
            return LAYOUTCTL_EXIT_USAGE;
        }
    if (optind < argc) {
        repair_usage(stderr);
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
        r = apply_repair(ctx.layout, plan, ctx.obs, ctx.record, ctx.record_path, &o, &res);
    if (r >= 0)
        r = json ? apply_result_to_json_string(res, &text) : apply_result_to_text(res, &text);
    if (r < 0) {
        fprintf(stderr, "layoutctl: repair failed: %s\n", strerror(-r));
        ret = LAYOUTCTL_EXIT_FAILURE;
    } else {
        printf("%s%s", text, json ? "\n" : "");
        ret = apply_result_ok(res) ? LAYOUTCTL_EXIT_OK : LAYOUTCTL_EXIT_FAILURE;
    }
    engine_context_close(&ctx);
    return ret;
}
