/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* layoutctl plan: what `apply` would do, and what it would refuse and why. */
#include "layoutctl-engine.h"

static int run(Engine *e, EngineVerbOptions *o, Plan **ret_plan, ApplyResult **ret_result) {
    return engine_plan(e, ret_plan);
}

static const EngineVerb verb = {
    .name = "plan",
    .synopsis = "[--detailed-exitcode] ",
    .description = "Observes the volumes and prints the steps `layoutctl apply` would take:\n"
                   "  + create/attach/vdo-format/dm-create/format/mount   ~ grow/limits/adopt   - detach\n"
                   "  ! refused (and why)            ? drift between the record and reality\n"
                   "Changes nothing and takes no lock, so it also works next to a running agent\n"
                   "(it reads the record as the agent last wrote it).",
    .options_help = "  --detailed-exitcode  exit 2 when there is something to do (or refused), 0 when\n"
                    "                  not (a usage error is then 1)\n",
    .exit_help = "Exit status: 0 (even if there is something to do, unless --detailed-exitcode),\n"
                 "1 error, 2 usage (--detailed-exitcode: changes).",
    .flags = ENGINE_VERB_DETAILED_EXITCODE,
    .run = run,
};

int layoutctl_plan(int argc, char **argv, const LayoutctlGlobals *g) {
    return engine_verb_main(&verb, argc, argv, g);
}
