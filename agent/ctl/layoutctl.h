/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * layoutctl: one command, one verb per file (layoutctl-<verb>.c), all
 * listed in the table in layoutctl.c. A verb gets its own argv (argv[0] is
 * the verb) and the global options, and returns the process exit code.
 */

#include <stdbool.h>

/*
 * Exit codes, shared by every verb (listed in `layoutctl --help` and in
 * layoutctl(8)). The anchors are systemctl's (3: not running, 4: no such
 * unit) and Terraform's `plan -detailed-exitcode` (2: changes).
 */
#define LAYOUTCTL_EXIT_OK 0
#define LAYOUTCTL_EXIT_FAILURE 1     /* the verb failed; for validate: a layout is invalid */
#define LAYOUTCTL_EXIT_USAGE 2       /* bad command line */
#define LAYOUTCTL_EXIT_CHANGES 2     /* plan --detailed-exitcode: there is something to do */
#define LAYOUTCTL_EXIT_UNREACHABLE 3 /* client verbs: layoutd is not running (no socket / refused) */
#define LAYOUTCTL_EXIT_NOT_FOUND 4   /* show: no such workspace or volume */
#define LAYOUTCTL_EXIT_UNHEALTHY 5   /* status, is-healthy: the agent answers, but is degraded,
                                        starting or stopping */
#define LAYOUTCTL_EXIT_INCOMPLETE 7  /* check: it could not look at everything */
#define LAYOUTCTL_EXIT_TIMEOUT 8     /* --wait ran out while the operation was still running
                                        (it goes on in the agent; its id is printed) */
#define LAYOUTCTL_EXIT_REFUSED 6     /* why: the workspace would be refused (the answer, not an error) */

typedef struct LayoutctlGlobals {
    bool json;               /* --json: machine-readable output */
    const char *socket_path; /* --socket PATH: the agent's API socket */
    bool socket_given;       /* --socket was on the command line (else
                                socket_path is the built-in default) */
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
int layoutctl_quota(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_reload(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_gc(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_check(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_shutdown(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_show(int argc, char **argv, const LayoutctlGlobals *g);
/* env ID: the workspace's cache environment as shell export lines. */
int layoutctl_env(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_events(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_export(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_import(int argc, char **argv, const LayoutctlGlobals *g);
int layoutctl_is_healthy(int argc, char **argv, const LayoutctlGlobals *g);

/* ---- layoutctl-args.c: what every parser shares -------------------------- */

struct option;

/* The candidate closest to word (an edit distance of at most a third of
 * its length, at least 1, or word a unique prefix of it), or NULL. */
const char *layoutctl_suggest(const char *word, const char *const *candidates, size_t n);

/*
 * After getopt_long() returned '?' or ':' (the parsers set opterr = 0 and
 * start their short options with ':'): prints one line naming the bad
 * option and, when one is close, "did you mean", and where the help is.
 * Returns LAYOUTCTL_EXIT_USAGE.
 */
int layoutctl_option_error(const char *verb, char **argv, const struct option *options, int c);

/* "layoutctl VERB: MESSAGE (see 'layoutctl VERB --help')" on stderr, one
 * line. Returns LAYOUTCTL_EXIT_USAGE. */
int layoutctl_usage_error(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
