/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl teardown [--destroy-data] [--lazy] [--layout FILE] [--root DIR] [--json]
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "apply.h"
#include "layoutctl-engine.h"
#include "layoutctl.h"
#include "util.h"

static void teardown_usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl teardown [--destroy-data] [--lazy] [--layout FILE] [--root DIR] [--json]\n"
            "\n"
            "Unmounts and detaches every volume layoutd made (as its record says; nothing\n"
            "else), and forgets them. Backing files are KEPT unless --destroy-data; kept\n"
            "files are not adopted again by apply (the record that proved them ours is gone).\n"
            "\n"
            "  --destroy-data  also delete the backing files, the mount directories and the record\n"
            "  --lazy          lazily detach a mount that stays busy (default: fail and name the holders)\n"
            "  --layout FILE   the layout (default: the one in %s)\n"
            "  --root DIR      override the layout's root\n"
            "\n"
            "Exit status: 0 all torn down, 1 a volume could not be, 2 usage.\n",
            LAYOUTCTL_DEFAULT_LAYOUT_DIR);
}

int layoutctl_teardown(int argc, char **argv, const LayoutctlGlobals *g) {
    enum { OPT_JSON = 0x100, OPT_LAYOUT, OPT_ROOT, OPT_DESTROY, OPT_LAZY };
    static const struct option options[] = {
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "root", required_argument, NULL, OPT_ROOT },
        { "destroy-data", no_argument, NULL, OPT_DESTROY },
        { "lazy", no_argument, NULL, OPT_LAZY },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        {},
    };
    const char *layout = NULL, *root = NULL;
    bool json = g->json;
    TeardownOptions o = {};
    int c;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
        switch (c) {
        case OPT_LAYOUT:
            layout = optarg;
            break;
        case OPT_ROOT:
            root = optarg;
            break;
        case OPT_DESTROY:
            o.destroy_data = true;
            break;
        case OPT_LAZY:
            o.lazy = true;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            teardown_usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            teardown_usage(stderr);
            return LAYOUTCTL_EXIT_USAGE;
        }
    if (optind < argc) {
        teardown_usage(stderr);
        return LAYOUTCTL_EXIT_USAGE;
    }

    EngineContext ctx;
    int ret = engine_context_open(&ctx, layout, root);
    if (ret != LAYOUTCTL_EXIT_OK) {
        engine_context_close(&ctx);
        return ret;
    }
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    _cleanup_free_ char *text = NULL;
    int r = apply_teardown(ctx.layout, ctx.obs, ctx.record, ctx.record_path, &o, &res);
    if (r >= 0)
        r = json ? apply_result_to_json_string(res, &text) : apply_result_to_text(res, &text);
    if (r < 0) {
        fprintf(stderr, "layoutctl: teardown failed: %s\n", strerror(-r));
        ret = LAYOUTCTL_EXIT_FAILURE;
    } else {
        printf("%s%s", text, json ? "\n" : "");
        ret = apply_result_ok(res) ? LAYOUTCTL_EXIT_OK : LAYOUTCTL_EXIT_FAILURE;
    }
    /* The lock file goes with the root's data. */
    if (ret == LAYOUTCTL_EXIT_OK && o.destroy_data) {
        _cleanup_free_ char *lock = NULL;
        if (asprintf(&lock, "%s/layoutd-state.lock", ctx.layout->root) >= 0)
            (void) unlink(lock);
    }
    engine_context_close(&ctx);
    return ret;
}
