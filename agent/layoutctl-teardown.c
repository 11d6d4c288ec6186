/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutctl teardown: unmounts and detaches every volume the record lists. */
#include <stdio.h>
#include <unistd.h>

#include "layoutctl-engine.h"
#include "util.h"

static int run(Engine *e, const EngineVerbOptions *o, Plan **ret_plan, ApplyResult **ret_result) {
    TeardownOptions t = { .destroy_data = o->destroy_data, .lazy = o->lazy };
    int r = engine_teardown(e, &t, ret_result);
    /* The lock file goes with the root's data. */
    if (r >= 0 && o->destroy_data && apply_result_ok(*ret_result)) {
        _cleanup_free_ char *lock = NULL;
        if (asprintf(&lock, "%s/layoutd-state.lock", e->layout->root) >= 0)
            (void) unlink(lock);
    }
    return r;
}

static const EngineVerb verb = {
    .name = "teardown",
    .synopsis = "[--destroy-data] [--lazy] ",
    .description = "Unmounts and detaches every volume layoutd made (as its record says; nothing\n"
                   "else), and forgets them. Backing files are KEPT unless --destroy-data; kept\n"
                   "files are not adopted again by apply (the record that proved them ours is gone).",
    .options_help = "  --destroy-data  also delete the backing files, the mount directories and the record\n"
                    "  --lazy          lazily detach a mount that stays busy (default: fail and name the holders)\n",
    .exit_help = "Exit status: 0 all torn down, 1 a volume could not be, 2 usage.",
    .flags = ENGINE_VERB_DESTROY_DATA | ENGINE_VERB_LAZY,
    .changes = true,
    .run = run,
};

int layoutctl_teardown(int argc, char **argv, const LayoutctlGlobals *g) {
    return engine_verb_main(&verb, argc, argv, g);
}
