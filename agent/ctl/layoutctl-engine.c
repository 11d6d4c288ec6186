/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "layoutctl-engine.h"
#include "util.h"

static void verb_usage(const EngineVerb *v, FILE *f) {
    fprintf(f,
            "Usage: layoutctl %s %s[--layout FILE] [--root DIR] [--json]\n"
            "\n"
            "%s\n"
            "\n"
            "%s"
            "  --layout FILE   the layout (default: the one in %s)\n"
            "  --root DIR      override the layout's root\n"
            "  --json          machine-readable output\n"
            "\n"
            "%s\n",
            v->name, v->synopsis, v->description, v->options_help, ENGINE_DEFAULT_LAYOUT_DIR, v->exit_help);
}

/* With --detailed-exitcode, 2 means "changes": a usage error is 1 then
 * (as Terraform has it), so that 2 never means two things. */
static int usage_exit(const EngineVerbOptions *o, int ec) {
    return o->detailed_exitcode && ec == LAYOUTCTL_EXIT_USAGE ? LAYOUTCTL_EXIT_FAILURE : ec;
}

/* What apply would do: an action step, or a refusal (which apply would
 * report as a failure, so it is a change from "nothing to do" too). */
static bool plan_has_changes(const Plan *p) {
    for (size_t i = 0; i < p->n_steps; i++)
        if (plan_step_kind_is_action(p->steps[i].kind) || p->steps[i].blocks)
            return true;
    return false;
}

int engine_verb_main(const EngineVerb *v, int argc, char **argv, const LayoutctlGlobals *g) {
    enum {
        OPT_JSON = 0x100,
        OPT_LAYOUT,
        OPT_ROOT,
        OPT_DESTROY,
        OPT_LAZY,
        OPT_FORGET,
        OPT_REMOVE_WS,
        OPT_DRY_RUN,
        OPT_DETAILED,
    };
    static const struct option all[] = {
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "root", required_argument, NULL, OPT_ROOT },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        { "destroy-data", no_argument, NULL, OPT_DESTROY },
        { "lazy", no_argument, NULL, OPT_LAZY },
        { "forget-missing", no_argument, NULL, OPT_FORGET },
        { "remove-workspaces", no_argument, NULL, OPT_REMOVE_WS },
        { "dry-run", no_argument, NULL, OPT_DRY_RUN },
        { "detailed-exitcode", no_argument, NULL, OPT_DETAILED },
        {},
    };
    /* The common four, then only the flags this verb takes. */
    struct option options[ELEMENTSOF(all)] = {};
    size_t n = 0;
    for (size_t i = 0; all[i].name; i++) {
        unsigned need = all[i].val == OPT_DESTROY     ? ENGINE_VERB_DESTROY_DATA
                        : all[i].val == OPT_LAZY      ? ENGINE_VERB_LAZY
                        : all[i].val == OPT_FORGET    ? ENGINE_VERB_FORGET_MISSING
                        : all[i].val == OPT_REMOVE_WS ? ENGINE_VERB_REMOVE_WORKSPACES
                        : all[i].val == OPT_DRY_RUN   ? ENGINE_VERB_DRY_RUN
                        : all[i].val == OPT_DETAILED  ? ENGINE_VERB_DETAILED_EXITCODE
                                                      : 0;
        if (!need || (v->flags & need))
            options[n++] = all[i];
    }
    EngineVerbOptions o = { .json = g->json };
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
        switch (c) {
        case OPT_LAYOUT:
            o.layout = optarg;
            break;
        case OPT_ROOT:
            o.root = optarg;
            break;
        case OPT_JSON:
            o.json = true;
            break;
        case OPT_DESTROY:
            o.destroy_data = true;
            break;
        case OPT_LAZY:
            o.lazy = true;
            break;
        case OPT_FORGET:
            o.forget_missing = true;
            break;
        case OPT_REMOVE_WS:
            o.remove_workspaces = true;
            break;
        case OPT_DRY_RUN:
            o.dry_run = true;
            break;
        case OPT_DETAILED:
            o.detailed_exitcode = true;
            break;
        case 'h':
            verb_usage(v, stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            return usage_exit(&o, layoutctl_option_error(v->name, argv, options, c));
        }
    if (optind < argc)
        return usage_exit(&o, layoutctl_usage_error(v->name, "unexpected argument '%s'", argv[optind]));
    if (o.remove_workspaces && !o.destroy_data)
        return layoutctl_usage_error(v->name, "--remove-workspaces destroys the workspaces' data: it needs --destroy-data");
    if (o.lazy && o.dry_run)
        return layoutctl_usage_error(v->name, "--lazy changes how a busy mount is detached; --dry-run detaches nothing");
    if (o.root && o.root[0] != '/')
        return usage_exit(&o, layoutctl_usage_error(v->name, "bad --root %s (it must be absolute)", o.root));

    /* A dry run changes nothing, but it takes the lock all the same: what
     * it prints must be what a run would do, not what an agent is
     * changing meanwhile. */
    EngineOptions eo = { .layout_path = o.layout, .root = o.root, .lock = v->changes, .create_root = v->changes && !o.dry_run };
    _cleanup_(engine_freep) Engine *e = NULL;
    _cleanup_free_ char *error = NULL;
    int r = engine_open(&eo, &e, &error);
    if (r < 0) {
        fprintf(stderr, "layoutctl %s: %s\n", v->name, error ?: strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    _cleanup_(plan_freep) Plan *plan = NULL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    _cleanup_free_ char *text = NULL;
    r = v->run(e, &o, &plan, &res);
    if (r >= 0 && plan)
        r = o.json ? plan_to_json_string(plan, &text) : plan_to_text(plan, &text);
    else if (r >= 0 && res)
        r = o.json ? apply_result_to_json_string(res, &text) : apply_result_to_text(res, &text);
    if (r < 0) {
        fprintf(stderr, "layoutctl %s: failed: %s\n", v->name, strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    printf("%s%s", text ?: "", o.json ? "\n" : "");
    if (o.refused)
        return LAYOUTCTL_EXIT_FAILURE;
    if (plan && o.detailed_exitcode && plan_has_changes(plan))
        return LAYOUTCTL_EXIT_CHANGES;
    return !res || apply_result_ok(res) ? LAYOUTCTL_EXIT_OK : LAYOUTCTL_EXIT_FAILURE;
}
