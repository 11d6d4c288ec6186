/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutctl apply: carries out the plan; every step says changed / unchanged. */
#include "layoutctl-engine.h"

static int run(Engine *e, EngineVerbOptions *o, Plan **ret_plan, ApplyResult **ret_result) {
    return engine_apply(e, NULL, ret_result);
}

static const EngineVerb verb = {
    .name = "apply",
    .synopsis = "",
    .description = "Carves, attaches (direct I/O), formats (only blank files layoutd created),\n"
                   "mounts and grows the layout's volumes. Prints each volume and each step\n"
                   "with changed/unchanged. A volume that fails is rolled back; the others go on.\n"
                   "Works without the agent (as root); the agent does the same at start and reload.",
    .options_help = "",
    .exit_help = "Exit status: 0 every volume is in service, 1 a volume failed or was refused, 2 usage.",
    .changes = true,
    .run = run,
};

int layoutctl_apply(int argc, char **argv, const LayoutctlGlobals *g) {
    return engine_verb_main(&verb, argc, argv, g);
}
