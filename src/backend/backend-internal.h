/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Steps and checks that more than one backend needs (the loop backends
 * and vdo-xfs share the backing file, the loop device, mkfs, the mount and
 * the growth of the file). Not exported beyond src/backend/: each backend's
 * apply_step composes them; the rules they enforce (never overcommit the
 * host, never format what we did not create blank) live here once.
 */

#include "backend.h"

/* Runs argv with argv[0] resolved in PATH; words "not found: install
 * <package>" and a failure with the tool's last lines into sr. When the
 * kernel denied it and `capability` is what the kernel checks for it (an
 * online grow: the FsType row's grow.capability_name, CAP_SYS_RESOURCE for
 * ext4), it is -EPERM with that said. package and capability may be NULL.
 * Returns: -ENOENT, -ENOSPC, -EPERM, -EPROTO, -errno, 0. */
int backend_run_tool(char **argv, const char *package, const char *capability, ApplyStepResult *sr);

/* Volumes are never overcommitted: need bytes must fit in the free space
 * of dir's filesystem on top of what our other sparse files may still
 * claim. Returns: -ENOSPC (sr says the figures), -errno, 0. */
int backend_check_space(VolumeSetup *s, const char *dir, uint64_t need, ApplyStepResult *sr);

/* CREATE_FILE: records the intent (created_file) first, then creates the
 * sparse file with O_EXCL. */
int backend_step_create_file(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);
/* ATTACH: loop device with direct I/O as asked, verified; a fallback to
 * buffered is a note. Resets unset writeback limits, waits for udev. */
int backend_step_attach(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);
/* DETACH of p->path (a loop node). */
int backend_step_detach(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);
/* FORMAT of node (which must probe blank) as p->fs_type (a row of the
 * FsType table), with a new UUID
 * saved in the record before mkfs and formatted=true after it. Only when
 * the record says layoutd created the storage. prezeroed: the file was
 * created by this very run (mkfs need not zero). */
int backend_step_format(VolumeSetup *s, const PlanStep *p, const char *node, bool prezeroed,
                        ApplyStepResult *sr);
/* ADOPT: our UUID (saved before an interrupted mkfs) found: record it. */
int backend_step_adopt(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);
/* MOUNT of node (devno) on p->mount_path with the pool's options. */
int backend_step_mount(VolumeSetup *s, const PlanStep *p, const char *node, dev_t devno, ApplyStepResult *sr);
/* IDENTIFY: the identity file at p->mount_path (identity.h). A UUID new
 * to the record is saved before the file is written; a file that names
 * another volume is refused (-EEXIST), and so is a device backend's
 * mount path that is not a mount point (the bare directory under a
 * volume that is not mounted must never look like the volume). */
int backend_step_identify(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);
/* SET_LIMITS on the loop device's bdi. */
int backend_step_set_limits(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr);
/* The storage half of GROW: extends the backing file to p->size (space
 * checked) and refreshes the loop device's size. *ret_new_size: the
 * device's size now. */
int backend_grow_storage(VolumeSetup *s, const PlanStep *p, uint64_t *ret_new_size, ApplyStepResult *sr);
/* The filesystem half of GROW: the FsType row's grow command (resize2fs
 * on node, xfs_growfs or btrfs filesystem resize on p->mount_path); then
 * the record's size. */
int backend_grow_fs(VolumeSetup *s, const PlanStep *p, const char *node, uint64_t new_size, ApplyStepResult *sr);

/* Teardown pieces: unmount (holders named when busy; lazily only when
 * asked), loop detach, and (the destroy op) the files layoutd created:
 * the backing file, and the mount directory (with everything in it when
 * remove_mount_tree, never crossing into another filesystem). Each adds
 * its step to s->result; return <0 when the volume must stay (the
 * failure is in the result). */
int backend_teardown_unmount(VolumeSetup *s, const char *mount_path, const TeardownOptions *opts);
int backend_teardown_detach(VolumeSetup *s, const char *node, const char *backing_path);
int backend_teardown_destroy(VolumeSetup *s, const VolumeObservation *o, bool remove_mount_tree);

/* The identity rule every backend's planner ends with, once the volume is
 * (or this plan puts it) in service (pure): an identity file that names
 * another volume, or one the record does not know, is refused; a missing
 * one is an IDENTIFY step. up: o is in service now (else the plan mounts
 * it before this step). */
void backend_plan_identity(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                           const VolumeObservation *o, bool up);

/* A volume mounted by an older layoutd (or by hand) without nosuid,nodev:
 * a non-blocking DRIFT note (pure). */
void backend_plan_mount_flags(PlanBuilder *b, const PlanSubject *subj, const VolumeObservation *o);

/* The DELETE steps of a teardown with --destroy-data (pure): the backing
 * file when layoutd created it (a note that it stays otherwise), and the
 * mount directory (whole_tree: with everything in it). */
void backend_plan_teardown_destroy(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                                   const VolumeObservation *o, const char *dir, bool whole_tree);

/* Observation pieces: the backing file's stat, the loop device attached to
 * it (with bdi and I/O counters), and the probe of node (or the file). */
int backend_observe_backing(const VolumeSpec *spec, const Layout *l, VolumeObservation *o);
int backend_observe_loop(VolumeObservation *o);
void backend_observe_probe(VolumeObservation *o, const char *node);

/* The mountinfo-and-device checks every device backend's planner shares:
 * an unreadable backing file, or a mount path taken by something else.
 * Returns true when it emitted a refusal (the volume is left alone). */
bool backend_plan_refuse_unusable(PlanBuilder *b, const PlanSubject *subj, const VolumeObservation *o);
/* The record/filesystem identity rules (docs/volumes.md): emits the
 * refusal (and returns true) unless the filesystem signature `sig` is one
 * this agent may use: the recorded UUID of `want_type` on a formatted
 * volume, blank on one layoutd created and never formatted (then
 * *ret_need_format), or our own UUID after an interrupted mkfs (then an
 * ADOPT step). want_uuid: the record's fs_uuid, may be NULL. */
bool backend_plan_check_identity(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec,
                                 const VolumeObservation *o, const ProbeResult *sig, bool probed,
                                 int probe_error, const char *want_type, const char *want_uuid,
                                 bool *ret_need_format);
/* The refused shrink of a backing file larger than the pool's
 * volume_size (and not grown there by the pool's growth): a note, not a
 * block. Returns true when it emitted it. */
bool backend_plan_shrink_note(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeObservation *o);
/* GROW (with fs's grow command) to want bytes when the file (or the record, after a grow that
 * stopped half-way) is smaller. */
void backend_plan_grow(PlanBuilder *b, const PlanSubject *subj, const VolumeRecord *rec, const VolumeObservation *o,
                       const FsType *fs, uint64_t want);
/* SET_LIMITS when the pool asks for writeback limits the bdi lacks. */
void backend_plan_limits(PlanBuilder *b, const PlanSubject *subj, const Pool *p, const VolumeObservation *o);
