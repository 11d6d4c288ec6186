/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutctl repair: resolves the drift cases that have a safe answer. */
#include "layoutctl-engine.h"

static int run(Engine *e, EngineVerbOptions *o, Plan **ret_plan, ApplyResult **ret_result) {
    RepairOptions r = { .forget_missing = o->forget_missing };
    return engine_repair(e, &r, ret_result);
}

static const EngineVerb verb = {
    .name = "repair",
    .synopsis = "[--forget-missing] ",
    .description = "Resolves the drift between the record and reality where that is safe:\n"
                   "  - a volume mounted by hand elsewhere (UUID matching): mounted at its own path too;\n"
                   "  - our UUID found after an interrupted mkfs: recorded as formatted;\n"
                   "  - a recorded volume whose backing file was deleted: forgotten (--forget-missing).\n"
                   "Refuses the unsafe ones (changed UUID, foreign or lost signature, busy mount path)\n"
                   "and says why. Run `layoutctl apply` afterwards for the remaining changes.",
    .options_help = "  --forget-missing  forget volumes whose formatted backing file is gone\n",
    .exit_help = "Exit status: 0 nothing unsafe left, 1 something refused or failed, 2 usage.",
    .flags = ENGINE_VERB_FORGET_MISSING,
    .changes = true,
    .run = run,
};

int layoutctl_repair(int argc, char **argv, const LayoutctlGlobals *g) {
    return engine_verb_main(&verb, argc, argv, g);
}
