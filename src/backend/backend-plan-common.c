/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Planning rules that the device backends share (backend-internal.h).
 * Pure: reads its arguments only.
 *
 * Safety rules encoded here (docs/volumes.md):
 *  - FORMAT only a blank volume whose backing file the record says this
 *    agent created, and which the record does not already call formatted;
 *  - never format over any signature, not even our own fs type with another
 *    UUID; a recorded volume whose UUID changed is refused, not "fixed";
 *  - grow, never shrink.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "backend-internal.h"
#include "identity.h"
#include "mount.h"
#include "util.h"

bool backend_plan_refuse_unusable(PlanBuilder *b, const PlanSubject *subj, const VolumeObservation *o) {
    if (o->file_error) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "backing-unreadable", true,
                            "refuse %s: cannot stat backing file %s: %s", o->name, o->backing_path,
                            strerror(o->file_error));
        return true;
    }
    /* Mount path taken by something that is not this volume's device. */
    if (o->mounted && !o->mounted_ours) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "mount-path-busy", true,
                            "refuse %s: %s already has %s mounted on it (not this volume): left alone", o->name,
                            o->mount_path, o->mount.source ?: "something");
        return true;
    }
    return false;
}

bool backend_plan_check_identity(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                                 const VolumeObservation *o, const ProbeResult *sig, bool probed, int probe_error,
                                 const char *want_type, const char *want_uuid, bool *ret_need_format) {
    *ret_need_format = false;
    if (!probed) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "probe-failed", true,
                            "refuse %s: cannot probe %s for signatures: %s", o->name,
                            o->attached ? o->loop.node : o->backing_path, strerror(probe_error ?: EIO));
        return true;
    }
    const char *otype = sig->type ?: "unknown signature";
    const char *ouuid = sig->uuid ?: "none";

    if (!rec || (!rec->created_file && !rec->formatted)) {
        if (sig->blank)
            plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-ours", true,
                                "refuse %s: %s exists but layoutd did not create it (not in the record); will not "
                                "format it",
                                o->name, o->backing_path);
        else
            plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-ours", true,
                                "refuse %s: %s holds %s (UUID %s) that layoutd did not create; left untouched",
                                o->name, o->backing_path, otype, ouuid);
        return true;
    }

    if (rec->formatted) {
        if (sig->blank) {
            plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "signature-lost", true,
                                "refuse %s: the record says it was formatted (%s UUID %s) but it is blank now; not "
                                "re-formatting",
                                o->name, rec->fs_type, rec->fs_uuid);
            return true;
        }
        if (!streq_ptr(sig->type, want_type) || !sig->uuid || !want_uuid || strcasecmp(sig->uuid, want_uuid) != 0) {
            plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "uuid-changed", true,
                                "refuse %s: it holds %s UUID %s but the record says %s UUID %s; left untouched",
                                o->name, otype, ouuid, want_type, want_uuid ?: "none");
            return true;
        }
        return false;
    }
    if (sig->blank) {
        *ret_need_format = true;
        return false;
    }
    if (want_uuid && sig->uuid && strcasecmp(sig->uuid, want_uuid) == 0 && streq_ptr(sig->type, want_type)) {
        /* mkfs finished but the agent died before recording it: the UUID
         * we chose (saved before mkfs) proves the filesystem is ours. */
        PlanStep *s = plan_builder_emit(b, subj, PLAN_STEP_ADOPT,
                                        "adopt %s: %s UUID %s is the one layoutd chose before mkfs; record it",
                                        o->name, otype, ouuid);
        if (s) {
            plan_builder_set(b, &s->fs_type, sig->type);
            plan_builder_set(b, &s->fs_uuid, sig->uuid);
        }
        return false;
    }
    plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "foreign-signature", true,
                        "refuse %s: it holds %s (UUID %s) that layoutd did not make; left untouched", o->name, otype,
                        ouuid);
    return true;
}

bool backend_plan_shrink_note(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeObservation *o) {
    char sz[32], sz2[32];
    uint64_t want = p->volume_size;
    if (o->file_size <= want)
        return false;
    /* Growth made it larger than volume_size, where every volume starts:
     * that is no shrink the layout asks for. */
    if (p->growth.enabled && o->file_size <= p->growth.max_size)
        return false;
    plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "shrink", false,
                        "refuse to shrink %s from %s to %s: volumes only grow; kept at %s", o->name,
                        plan_format_size(sz, o->file_size), plan_format_size(sz2, want),
                        plan_format_size(sz, o->file_size));
    return true;
}

/* "resize2fs", "btrfs filesystem resize max": the row's grow command,
 * for a step's description. */
static const char *grow_command(const FsType *fs, char *buf, size_t n) {
    buf[0] = 0;
    for (const char *const *a = fs && fs->grow.argv ? fs->grow.argv : NULL; a && *a; a++)
        snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", a == fs->grow.argv ? "" : " ", *a);
    return buf[0] ? buf : "the filesystem's grow";
}

void backend_plan_grow(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec, const VolumeObservation *o,
                       const FsType *fs, uint64_t want) {
    char sz[32], sz2[32], cmd[64];
    /* rec->size moves only after the filesystem grew: a grow that failed
     * half-way (file extended, fs not) is retried. */
    uint64_t have = o->file_size;
    if (rec && rec->formatted && rec->size && rec->size < have)
        have = rec->size;
    if (have >= want)
        return;
    PlanStep *s = plan_builder_emit(b, subj, PLAN_STEP_GROW,
                                    "grow %s from %s to %s online (extend %s, refresh the device, %s)", o->name,
                                    plan_format_size(sz, have), plan_format_size(sz2, want), o->backing_path,
                                    grow_command(fs, cmd, sizeof cmd));
    if (s) {
        plan_builder_set(b, &s->path, o->backing_path);
        plan_builder_set(b, &s->mount_path, o->mount_path);
        plan_builder_set(b, &s->fs_type, fs ? fs->name : NULL);
        s->size = want;
        s->old_size = have;
    }
}

static bool limits_wanted(const WritebackLimits *w) {
    return w->max_ratio >= 0 || w->max_bytes > 0 || w->strict_limit >= 0;
}

/* Does the observed bdi already carry the wanted limits? max_bytes is
 * rounded by the kernel (it is stored as a ratio of the dirty limit), so it
 * compares within 1% or 1 MiB. */
static bool limits_match(const VolumeObservation *v, const WritebackLimits *w) {
    if (!v->has_bdi)
        return false;
    if (w->max_ratio >= 0 && v->bdi.max_ratio != w->max_ratio)
        return false;
    if (w->strict_limit >= 0 && v->bdi.has_strict_limit && v->bdi.strict_limit != w->strict_limit)
        return false;
    if (w->max_bytes > 0 && v->bdi.has_max_bytes) {
        uint64_t d = v->bdi.max_bytes > w->max_bytes ? v->bdi.max_bytes - w->max_bytes : w->max_bytes - v->bdi.max_bytes;
        if (d > MAX(w->max_bytes / 100, MIB))
            return false;
    }
    return true;
}

void backend_plan_limits(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeObservation *o) {
    const WritebackLimits *w = &p->writeback;
    if (!limits_wanted(w))
        return;
    /* A fresh (or re-attached) loop device starts from the defaults. */
    bool fresh = !o->attached || (p->direct_io && !o->loop.direct_io);
    if (!fresh && limits_match(o, w))
        return;
    char ratio[32] = "", bytes[64] = "", strict[32] = "";
    if (w->max_ratio >= 0)
        snprintf(ratio, sizeof(ratio), " max_ratio=%d", w->max_ratio);
    if (w->max_bytes > 0)
        snprintf(bytes, sizeof(bytes), " max_bytes=%" PRIu64, w->max_bytes);
    if (w->strict_limit >= 0)
        snprintf(strict, sizeof(strict), " strict_limit=%d", w->strict_limit);
    plan_builder_emit(b, subj, PLAN_STEP_SET_LIMITS, "set writeback limits of %s:%s%s%s", o->name, ratio, bytes,
                      strict);
}

void backend_plan_teardown_destroy(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                                   const VolumeObservation *o, const char *dir, bool whole_tree) {
    if (rec && rec->backing_path && rec->created_file) {
        PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_DELETE, "delete %s", rec->backing_path);
        if (st)
            plan_builder_set(b, &st->path, rec->backing_path);
    } else if (rec && rec->backing_path)
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "not-created", false,
                            "keep %s: layoutd did not create it", rec->backing_path);
    if (dir) {
        PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_DELETE, whole_tree ? "remove %s and everything in it"
                                                                                : "remove %s", dir);
        if (st)
            plan_builder_set(b, &st->path, dir);
    }
}

void backend_plan_identity(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                           const VolumeObservation *o, bool up) {
    if (up && o->identity) {
        if (rec && rec->identity && strcasecmp(o->identity, rec->identity) == 0)
            return;
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "identity-mismatch", true,
                            "refuse %s: %s/%s names volume %s, but the record says %s: another volume's "
                            "filesystem is there; left out of service",
                            o->name, o->mount_path, VOLUME_IDENTITY_FILE, o->identity,
                            rec && rec->identity ? rec->identity : "none was written yet");
        return;
    }
    if (up && o->identity_error && o->identity_error != ENOENT) {
        plan_builder_refuse(b, subj, PLAN_STEP_REFUSE, "identity-unreadable", true,
                            "refuse %s: cannot read %s/%s: %s; left out of service", o->name, o->mount_path,
                            VOLUME_IDENTITY_FILE, strerror(o->identity_error));
        return;
    }
    PlanStep *st = plan_builder_emit(b, subj, PLAN_STEP_IDENTIFY, "write the identity of %s (%s/%s)%s", o->name,
                                     o->mount_path, VOLUME_IDENTITY_FILE,
                                     rec && rec->identity ? "" : ", a new UUID");
    if (st)
        plan_builder_set(b, &st->mount_path, o->mount_path);
}

void backend_plan_mount_flags(PlanBuilder *b, const PlanSubject *subj, const VolumeObservation *o) {
    if (!o->mounted_ours || (mount_options_has(o->mount.options, "nosuid") && mount_options_has(o->mount.options, "nodev")))
        return;
    plan_builder_refuse(b, subj, PLAN_STEP_DRIFT, "mount-flags", false,
                        "drift %s: %s is mounted without nosuid,nodev (by an older layoutd, or by hand), so set-id "
                        "files and device nodes in it act as such; `layoutctl teardown` and a start mount it with "
                        "them",
                        o->name, o->mount_path);
}
