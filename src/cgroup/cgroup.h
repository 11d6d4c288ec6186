/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A cgroup (v2) per workspace daemon: where each daemon's CPU, memory, I/O
 * and tasks are accounted and limited, so one runaway daemon cannot starve
 * the others and an operator sees which daemon costs what.
 *
 * The cgroups are systemd scopes (`layoutd-ws-<id>.scope` in
 * `layoutd.slice`), made over the system bus (StartTransientUnit with the
 * daemon's pid; systemd's private socket only where no bus daemon runs). Not a delegated subtree of
 * layoutd.service: a delegated unit whose own cgroup has controllers
 * enabled cannot be started again while its subgroups hold processes
 * (systemd#24064, #41278: exit status 219/CGROUP), and the daemons outlive
 * the agent by design. Scopes outlive it on their own, and a restarted
 * agent finds each daemon's again from /proc/PID/cgroup.
 *
 * cgroup-stats.c reads the figures (pure reads of cgroupfs, which never
 * wait on a device); scope.c talks to systemd. Library code: 0 / -errno.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "layout.h"
#include "macro.h"

#define CGROUP_ROOT "/sys/fs/cgroup"

/* Whether the unified (v2) hierarchy is mounted at /sys/fs/cgroup. */
bool cgroup_unified(void);

/* The cgroup of pid as an absolute path below CGROUP_ROOT (the "0::"
 * line of /proc/PID/cgroup). Returns -ENOENT (gone, or no v2 line),
 * -errno, 0 with *ret. */
int cgroup_of_pid(pid_t pid, char **ret);

typedef struct CgroupStats {
    uint64_t cpu_usec;            /* cpu.stat usage_usec */
    uint64_t memory_current;      /* memory.current */
    bool has_memory_peak;
    uint64_t memory_peak;         /* memory.peak (5.19+) */
    uint64_t memory_max, memory_high; /* UINT64_MAX: "max" */
    uint64_t pids_current, pids_max;
    uint64_t io_read_bytes, io_write_bytes; /* io.stat, every device */
    /* PSI "some" totals (usec stalled) and 10 s averages (percent). */
    uint64_t cpu_pressure_usec, memory_pressure_usec, io_pressure_usec;
    double cpu_pressure_avg10, memory_pressure_avg10, io_pressure_avg10;
    uint64_t oom_kills;           /* memory.events oom_kill */
} CgroupStats;

/* Reads what a cgroup's files say; a file that is missing (a controller
 * not enabled) leaves its figures 0. Returns -ENOENT (no such cgroup), 0. */
int cgroup_read_stats(const char *path, CgroupStats *ret);

/* ---- scope.c: systemd scopes -------------------------------------------- */

typedef struct ScopeManager ScopeManager;

/*
 * Connects to systemd over the system bus (sd_bus_open_system), or, when
 * no bus daemon runs, over its private socket /run/systemd/private (root
 * only), and attaches to the event loop.
 * Returns -ENOMEDIUM (no unified cgroup hierarchy), -EHOSTDOWN (systemd is
 * not the service manager here), -errno; 0 with *ret.
 */
int scope_manager_new(sd_event *e, ScopeManager **ret);
/* Whether it fell back to the private socket (for the agent's log). */
bool scope_manager_uses_private_bus(const ScopeManager *m);
ScopeManager *scope_manager_free(ScopeManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(ScopeManager *, scope_manager_free)

/* The scope's unit name for workspace id below root:
 * "layoutd-ws-<id>.scope" for the default root, with a short hash of the
 * root otherwise (two agents on two roots must not share names).
 * Returns 0 or -ENOMEM. */
int scope_unit_name(const char *root, const char *id, char **ret);

/* Done: error 0 (pid is in the scope, with the limits) or -errno with a
 * message (systemd's). */
typedef void (*ScopeDone)(int error, const char *message, void *userdata);

/*
 * Puts pid into scope `unit` in layoutd.slice with the limits, creating
 * the scope (StartTransientUnit), or when it exists already (a daemon of
 * the same workspace restarted before the old scope went away) moving the
 * pid into it and setting its limits. done (may be NULL) runs later, on
 * the loop. Returns -errno when the request could not be sent, 0.
 */
int scope_manager_place(ScopeManager *m, const char *unit, pid_t pid, const char *description,
                        const WorkspaceResources *limits, ScopeDone done, void *userdata);
