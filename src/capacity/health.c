/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A volume's health, and every reason for it. Each finding names the
 * volume, the figure that tripped it and what an operator can do: a
 * status that says "degraded" and nothing else is a page at 3 a.m. with
 * no runbook.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "capacity.h"
#include "util.h"

void volume_assessment_done(VolumeAssessment *a) {
    if (!a)
        return;
    for (size_t i = 0; i < a->n; i++)
        free(a->findings[i].message);
    free(a->findings);
    *a = (VolumeAssessment) {};
}

_printf_(4, 5) static int add(VolumeAssessment *a, VolumeHealth level, const char *code, const char *fmt, ...) {
    VolumeFinding *t = realloc(a->findings, sizeof(*t) * (a->n + 1));
    if (!t)
        return -ENOMEM;
    a->findings = t;
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    int k = vasprintf(&m, fmt, ap);
    va_end(ap);
    if (k < 0)
        return -ENOMEM;
    /* Worst first; among equals, in the order found. */
    size_t at = a->n;
    while (at > 0 && a->findings[at - 1].level < level)
        at--;
    memmove(a->findings + at + 1, a->findings + at, sizeof(*t) * (a->n - at));
    a->findings[at] = (VolumeFinding) { .level = level, .code = code, .message = m };
    a->n++;
    if (level > a->health)
        a->health = level;
    return 0;
}

#define ADD(...)                          \
    do {                                  \
        if (add(ret, __VA_ARGS__) < 0)    \
            goto oom;                     \
    } while (0)

/* The filesystem's row: what is mounted, else what the backend makes. */
static const FsType *fs_of(const VolumeObservation *v) {
    const FsType *fs = fs_type_find(v->mount.fstype);
    const BackendTraits *t = backend_traits(v->backend);
    return fs ?: t ? t->fs : NULL;
}

static const char *fs_name(const VolumeObservation *v) {
    const FsType *fs = fs_of(v);
    const BackendTraits *t = backend_traits(v->backend);
    if (fs)
        return fs->display_name;
    if (v->mount.fstype)
        return v->mount.fstype;
    return t && !t->has_device ? "the host filesystem" : "the filesystem";
}

/* "check it (e2fsck)", for the runbook in a finding. */
static const char *fs_check(const VolumeObservation *v) {
    const FsType *fs = fs_of(v);
    return fs && fs->check_command ? fs->check_command : "its filesystem's checker";
}

int capacity_assess(const Pool *p, const VolumeObservation *v, const HealthInputs *in, VolumeAssessment *ret) {
    static const HealthInputs none = {};
    CapacityThresholds th = p ? p->capacity : (CapacityThresholds) { .warn = 80, .critical = 95 };
    in = in ?: &none;
    *ret = (VolumeAssessment) {};

    if (!volume_observation_is_up(v)) {
        ADD(VOLUME_HEALTH_FAILED, "not-mounted", "%s is out of service: %s", v->name,
            in->out_of_service ?: "not mounted; `layoutctl plan` shows what apply would do");
        return 0;
    }
    if (v->attached && p && p->direct_io && !v->loop.direct_io)
        ADD(VOLUME_HEALTH_DEGRADED, "direct-io-refused",
            "%s: the kernel refused direct I/O on %s, so the loop device is buffered (its writes are cached "
            "twice and a flush drains both); check that the backing filesystem supports O_DIRECT at %u-byte "
            "blocks", v->name, v->loop.node ?: "its loop device", v->loop.logical_block_size);
    if (v->has_vdo_stats && v->vdo.degraded)
        ADD(VOLUME_HEALTH_DEGRADED, v->vdo.mode == VDO_MODE_READ_ONLY ? "vdo-read-only" : "vdo-index",
            v->vdo.mode == VDO_MODE_READ_ONLY
                ? "%s: VDO went read-only after an error; see the kernel log, then rebuild it offline (vdoforcerebuild)"
                : "%s: the VDO deduplication index is in error; writes go on without deduplication (see the kernel "
                  "log)", v->name);

    /* VDO's physical space runs out under a filesystem that still shows
     * free space (deduplication and compression promise more than there
     * is): what VDO operators fear most (vdo#22). */
    if (v->has_vdo_stats && v->vdo.physical_total > 0) {
        uint64_t used = v->vdo.physical_used, total = v->vdo.physical_total;
        unsigned pct = (unsigned) ((used * 100 + total - 1) / total);
        if (pct >= th.warn)
            ADD(pct >= th.critical ? VOLUME_HEALTH_DEGRADED : VOLUME_HEALTH_WARNING,
                pct >= th.critical ? "vdo-physical-full" : "vdo-physical-filling",
                "%s: VDO physical space %u%% used (%" PRIu64 " of %" PRIu64 " blocks), past capacity.%s (%u%%); "
                "delete files and let fstrim return the blocks, or raise the pool's volume_size and reload",
                v->name, pct, used, total, pct >= th.critical ? "critical" : "warn",
                pct >= th.critical ? th.critical : th.warn);
    }

    /* Writes fail although the volume is mounted. */
    if (v->fs_shutdown)
        ADD(VOLUME_HEALTH_DEGRADED, "fs-shutdown",
            "%s: %s shut down after an error and fails every write; stop its workspaces, unmount it, check it "
            "(%s) and run `layoutctl apply`", v->name, fs_name(v), fs_check(v));
    else if (v->fs_emergency_ro)
        ADD(VOLUME_HEALTH_DEGRADED, "fs-emergency-ro",
            "%s: %s went read-only after an error (emergency_ro), often the host filesystem filling under its "
            "backing file; free space on the host, stop its workspaces, unmount it, check it (%s) and run "
            "`layoutctl apply`", v->name, fs_name(v), fs_check(v));
    else if (v->has_statvfs && v->fs_read_only)
        ADD(VOLUME_HEALTH_DEGRADED, "read-only",
            "%s: %s is mounted read-only, so its workspaces cannot write; see the kernel log for the error that "
            "remounted it", v->name, fs_name(v));
    if (v->has_fs_errors && v->fs_errors > 0) {
        const FsType *fs = fs_of(v);
        ADD(VOLUME_HEALTH_DEGRADED, "fs-errors",
            "%s: %s recorded %" PRIu64 " error%s (%s); check it with %s while its workspaces are stopped", v->name,
            fs_name(v), v->fs_errors, v->fs_errors == 1 ? "" : "s",
            fs && fs->errors.name ? fs->errors.name : "its error counter", fs_check(v));
    }
    if (v->statvfs_error && v->statvfs_error != EIO)
        ADD(VOLUME_HEALTH_DEGRADED, "statfs-failed", "%s: statfs on %s fails: %s", v->name, v->mount_path,
            strerror(v->statvfs_error));

    if (in->objects_missing > 0)
        ADD(VOLUME_HEALTH_DEGRADED, "objects-missing",
            "%s: %" PRIu64 " object(s) that %u workspace(s) reference are missing from it (%s%s): those files read "
            "as I/O errors, their references are kept; put the objects back (a backup of the pool): this clears "
            "within seconds of their return (each daemon looks again every 10 s); `layoutctl check` lists every file",
            v->name, in->objects_missing, in->missing_workspaces, in->missing_example ? "one is " : "",
            in->missing_example ?: "digests unknown");
    if (in->probe_error == ENOSPC || in->probe_error == EDQUOT)
        ADD(VOLUME_HEALTH_DEGRADED, "probe-no-space",
            "%s: the flush probe cannot write a new 4 KiB file: %s; its workspaces' writes fail the same way; "
            "free space in them%s", v->name, strerror(in->probe_error),
            p && p->growth.enabled ? " (growth has not kept up)" : ", or give the pool growth: in the layout");
    else if (in->probe_error == EROFS)
        ADD(VOLUME_HEALTH_DEGRADED, "probe-read-only",
            "%s: the flush probe cannot write: the filesystem is read-only; see the kernel log", v->name);
    else if (in->probe_error)
        ADD(VOLUME_HEALTH_DEGRADED, "probe-failed", "%s: the flush probe fails: %s", v->name,
            strerror(in->probe_error));

    /* How full. Growth that will run (or runs) takes care of a warning;
     * critical is reported whatever growth does: it did not keep up. */
    CapacityUsage u;
    capacity_usage(v, &u);
    const GrowthDecision *g = in->growth;
    bool refused = g && g->action == GROWTH_REFUSE;
    bool growth_covers = p && p->growth.enabled && !refused && !in->growth_error;
    if (u.known && (u.percent >= th.critical || (u.percent >= th.warn && !growth_covers))) {
        _cleanup_free_ char *usage = NULL;
        if (capacity_usage_describe(v, &u, &usage) < 0)
            goto oom;
        bool crit = u.percent >= th.critical;
        const char *what = u.by_inodes ? "delete files in its workspaces" : "free space in its workspaces";
        ADD(crit ? VOLUME_HEALTH_DEGRADED : VOLUME_HEALTH_WARNING,
            crit ? (u.by_inodes ? "inodes-full" : "full") : (u.by_inodes ? "inodes-filling" : "filling"),
            "%s, past capacity.%s (%u%%); %s%s", usage, crit ? "critical" : "warn", crit ? th.critical : th.warn,
            what,
            refused ? "" : p && p->growth.enabled ? "; growth is on and has not caught up"
                                                  : ", or give pool growth: in the layout to let it grow");
    }
    if (refused)
        ADD(VOLUME_HEALTH_DEGRADED, "growth-refused", "%s", g->message);
    else if (in->growth_error)
        ADD(VOLUME_HEALTH_DEGRADED, "growth-failed", "%s: growing failed: %s", v->name, in->growth_error);
    return 0;
oom:
    volume_assessment_done(ret);
    return -ENOMEM;
}
