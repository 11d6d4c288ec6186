/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutctl teardown: takes every volume the record lists out of service,
 * all or nothing; with --destroy-data deletes them. */
#include <stdio.h>
#include <unistd.h>

#include "layoutctl-engine.h"
#include "util.h"

static bool plan_blocks(const Plan *p) {
    for (size_t i = 0; p && i < p->n_steps; i++)
        if (!plan_step_kind_is_action(p->steps[i].kind) && p->steps[i].blocks)
            return true;
    return false;
}

static int run(Engine *e, EngineVerbOptions *o, Plan **ret_plan, ApplyResult **ret_result) {
    TeardownOptions t = { .destroy_data = o->destroy_data, .lazy = o->lazy, .remove_workspaces = o->remove_workspaces };
    if (o->dry_run) {
        int r = engine_plan_teardown(e, &t, ret_plan);
        if (r >= 0)
            o->refused = plan_blocks(*ret_plan);
        return r;
    }
    int r = engine_teardown(e, &t, ret_result);
    /* The lock file goes with the root's data. */
    if (r >= 0 && o->destroy_data && apply_result_ok(*ret_result) && e->record->n_volumes == 0 &&
        e->record->n_workspaces == 0) {
        _cleanup_free_ char *lock = NULL;
        if (asprintf(&lock, "%s/layoutd-state.lock", e->layout->root) >= 0)
            (void) unlink(lock);
    }
    return r;
}

static const EngineVerb verb = {
    .name = "teardown",
    .synopsis = "[--destroy-data [--remove-workspaces]] [--lazy] [--dry-run] ",
    .description =
        "Takes every volume layoutd made (as its record says; nothing else) out of service:\n"
        "unmounted and detached, state volumes first. All or nothing: it plans first, and\n"
        "when any volume must be refused (active workspaces on it, the content pool while a\n"
        "workspace that references it stays recorded, a device mounted elsewhere) it changes\n"
        "nothing. Without --destroy-data the files and the record stay: the next start (or\n"
        "apply) attaches the whole set again, as after a reboot. With --destroy-data, and only\n"
        "once every volume is out of service, their files and record entries are deleted,\n"
        "the kept data of removed workspaces with them, the content pool last.",
    .options_help = "  --destroy-data  delete the backing files, the mount directories and the record\n"
                    "  --remove-workspaces  with --destroy-data: active workspaces are destroyed too\n"
                    "                  (default: refused while any is recorded)\n"
                    "  --lazy          lazily detach a mount that stays busy (default: fail and name the holders)\n"
                    "  --dry-run       print the plan (what would be done, what is refused); change nothing\n",
    .exit_help = "Exit status: 0 all torn down (or, with --dry-run, nothing refused), 1 refused or\n"
                 "a volume could not be, 2 usage.",
    .flags = ENGINE_VERB_DESTROY_DATA | ENGINE_VERB_LAZY | ENGINE_VERB_REMOVE_WORKSPACES | ENGINE_VERB_DRY_RUN,
    .changes = true,
    .run = run,
};

int layoutctl_teardown(int argc, char **argv, const LayoutctlGlobals *g) {
    return engine_verb_main(&verb, argc, argv, g);
}
