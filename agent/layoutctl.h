/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * layoutctl: one command, one verb per file (layoutctl-<verb>.c), all
 * listed in the table in layoutctl.c. A verb gets its own argv (argv[0] is
 * the verb) and the global options, and returns the process exit code.
 */

#include <stdbool.h>

/* Exit codes, shared by every verb (documented in `layoutctl --help`). */
#define LAYOUTCTL_EXIT_OK 0
#define LAYOUTCTL_EXIT_FAILURE 1 /* the verb failed; for validate: a layout is invalid */
#define LAYOUTCTL_EXIT_USAGE 2   /* bad command line */
#define LAYOUTCTL_EXIT_UNREACHABLE 3 /* client verbs: layoutd is not running (no socket / refused) */

typedef struct LayoutctlGlobals {
    bool json;               /* --json: machine-readable output */
    const char *socket_path; /* --socket PATH: the agent's API socket */
} LayoutctlGlobals;

typedef struct LayoutctlVerb {
    const char *name;
    const char *summary; /* one line for --help */
    int (*run)(int argc, char **argv, const LayoutctlGlobals *g);
} LayoutctlVerb;

int layoutctl_validate(int argc, char **argv, const LayoutctlGlobals *g);
/* The volume verbs (layoutctl-{plan,apply,teardown,repair}.c). */
int layoutctl_plan(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_apply(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_teardown(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_repair(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_why(int argc, char **argv, const LayoutctlGlobals *g);
/* The client verbs: HTTP to the running agent's API (layoutctl-list.c,
 * layoutctl-ops.c, layoutctl-events.c over layoutctl-http.c). */
int layoutctl_status(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_volumes(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_workspaces(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_add(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_rm(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_restart(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_reload(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_gc(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_check(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_shutdown(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_show(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_events(int argc, char **argv, const LayoutctlGlobals *g);
