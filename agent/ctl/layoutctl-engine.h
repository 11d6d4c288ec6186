/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * The volume verbs (plan, apply, teardown, repair) work directly on the
 * engine, as root, without the agent. They share everything but their
 * action: one option parser (--layout, --root, --json and the verb's own
 * flags), opening the engine, printing the result and the exit code.
 * A verb is a table entry (EngineVerb) in its own file.
 */
#include <stdbool.h>

#include "engine.h"
#include "layoutctl.h"

typedef enum EngineVerbFlag {
    ENGINE_VERB_DESTROY_DATA = 1u << 0,  /* --destroy-data */
    ENGINE_VERB_LAZY = 1u << 1,          /* --lazy */
    ENGINE_VERB_FORGET_MISSING = 1u << 2, /* --forget-missing */
    ENGINE_VERB_REMOVE_WORKSPACES = 1u << 3, /* --remove-workspaces */
    ENGINE_VERB_DRY_RUN = 1u << 4,       /* --dry-run */
    ENGINE_VERB_DETAILED_EXITCODE = 1u << 5, /* --detailed-exitcode */
} EngineVerbFlag;

typedef struct EngineVerbOptions {
    const char *layout;
    const char *root;
    bool json;
    bool destroy_data;
    bool lazy;
    bool forget_missing;
    bool remove_workspaces;
    bool dry_run;
    bool detailed_exitcode;     /* plan: exit 2 when there are changes */
    bool refused;               /* set by run: a printed plan refuses (exit 1) */
} EngineVerbOptions;

typedef struct EngineVerb {
    const char *name;
    const char *synopsis;       /* after "layoutctl <name> ": the verb's own flags */
    const char *description;    /* the help text between synopsis and options */
    const char *options_help;   /* help lines of the verb's own flags, or "" */
    const char *exit_help;      /* "Exit status: ..." */
    unsigned flags;             /* EngineVerbFlag: which flags it takes */
    bool changes;               /* takes the root's lock and may create the root */
    /* The action: either a plan (printed as a plan) or a result. */
    int (*run)(Engine *e, EngineVerbOptions *o, Plan **ret_plan, ApplyResult **ret_result);
} EngineVerb;

/* Parses argv for the verb, opens the engine, runs it, prints the plan or
 * result (text or --json), and returns the exit code: 0 ok, 1 a volume
 * failed or was refused (or an error), 2 usage. */
int engine_verb_main(const EngineVerb *v, int argc, char **argv, const LayoutctlGlobals *g);
