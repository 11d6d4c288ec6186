/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The steps that the device backends share (backend-internal.h): the
 * backing file, the loop device, mkfs, the mount, the growth of file and
 * filesystem, and the teardown pieces.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "backend-internal.h"
#include "identity.h"
#include "bdi.h"
#include "dev-util.h"
#include "loop.h"
#include "mkfs.h"
#include "mount.h"
#include "quota.h"
#include "probe.h"
#include "udev.h"
#include "util.h"

#define UDEV_TIMEOUT (10 * USEC_PER_SEC)

/* The last few lines of a tool's output, for an error message. */
static const char *tail_lines(const char *out, int lines) {
    if (!out)
        return "";
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == '\n')
        n--;
    const char *p = out + n;
    while (p > out && lines > 0) {
        p--;
        if (*p == '\n')
            lines--;
    }
    return *p == '\n' ? p + 1 : p;
}

/* The lines of a tool's output that say why it failed: those that name an
 * error, at most `lines` of them; else its last lines. The tools' stdout and
 * stderr arrive merged, and a tool's buffered stdout (mkfs.btrfs's banner)
 * lands after the unbuffered error, so the last lines alone can miss the
 * reason. Returns a new string (NULL when out of memory). */
static char *failure_lines(const char *out, int lines) {
    if (!out)
        return strdup("");
    _cleanup_free_ char *picked = NULL;
    size_t len = 0;
    int found = 0;
    for (const char *p = out; *p && found < lines;) {
        const char *end = strchrnul(p, '\n');
        _cleanup_free_ char *line = strndup(p, (size_t) (end - p));
        if (!line)
            return NULL;
        if (strcasestr(line, "error") || strstr(line, "Cannot") || strstr(line, "cannot")) {
            char *n = realloc(picked, len + strlen(line) + 2);
            if (!n)
                return NULL;
            picked = n;
            len += (size_t) sprintf(picked + len, "%s%s", found ? "\n" : "", line);
            found++;
        }
        p = *end ? end + 1 : end;
    }
    if (found)
        return TAKE_PTR(picked);
    return strdup(tail_lines(out, lines));
}

int backend_run_tool(char **argv, const char *package, const char *capability, ApplyStepResult *sr) {
    _cleanup_free_ char *exe = NULL, *out = NULL;
    const char *prog = argv[0];
    int status = 0;
    /* Looked up in the caller's PATH (not the runner's fixed one) so that
     * an operator, or a test, can choose the tools. */
    int r = dev_find_program(prog, &exe);
    if (r == -ENOENT) {
        apply_step_result_message(sr, "%s not found: install %s", prog, package ?: "the package that provides it");
        return -ENOENT;
    }
    if (r < 0)
        return r;
    char *saved = argv[0];
    argv[0] = exe;
    r = dev_run_program(argv, &out, &status);
    argv[0] = saved;
    if (r == -ENOENT) {
        apply_step_result_message(sr, "%s not found: install %s", prog, package ?: "the package that provides it");
        return r;
    }
    if (r == -EPROTO) {
        _cleanup_free_ char *why = failure_lines(out, 4);
        const char *t = why ?: "";
        apply_step_result_message(sr, "%s failed (status %d): %s", prog,
                                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, isempty(t) ? "no output" : t);
        if (out && (strstr(out, "No space left") || strstr(out, "ENOSPC")))
            return -ENOSPC;
        /* The kernel checks a capability (ext4's online resize wants
         * CAP_SYS_RESOURCE: ext4_resize_begin), and containers often drop
         * it. Say which instead of "Permission denied". resize2fs words it
         * "Permission denied to resize", xfs_growfs and btrfs print
         * strerror(EPERM). */
        if (capability && out && (strstr(out, "Permission denied") || strstr(out, "Operation not permitted"))) {
            apply_step_result_message(sr, "%s was denied by the kernel (it needs %s, which this process lacks): %s",
                                      prog, capability, t);
            return -EPERM;
        }
        return r;
    }
    if (r < 0)
        apply_step_result_message(sr, "cannot run %s: %s", prog, strerror(-r));
    return r;
}

/* Bytes the backing fs has promised already: for each of our sparse files
 * on the same fs, the part not yet allocated. */
static uint64_t outstanding_bytes(const StateRecord *record, dev_t fs_dev, const char *except) {
    uint64_t total = 0;
    for (size_t i = 0; i < record->n_volumes; i++) {
        const VolumeRecord *v = record->volumes[i];
        struct stat st;
        if (!v->backing_path || (except && streq(v->name, except)))
            continue;
        if (stat(v->backing_path, &st) < 0 || !S_ISREG(st.st_mode) || st.st_dev != fs_dev)
            continue;
        uint64_t alloc = (uint64_t) st.st_blocks * 512;
        if ((uint64_t) st.st_size > alloc)
            total += (uint64_t) st.st_size - alloc;
    }
    return total;
}

/* A sparse file is carved (or grown) only if the backing fs can hold all
 * of it on top of what our other volumes may still claim. Otherwise ENOSPC
 * would surface later as I/O errors inside a mounted filesystem, which is
 * much worse than a clear refusal now. */
int backend_check_space(VolumeSetup *s, const char *dir, uint64_t need, ApplyStepResult *sr) {
    struct statvfs sv;
    struct stat st;
    if (statvfs(dir, &sv) < 0 || stat(dir, &st) < 0)
        return negative_errno();
    uint64_t avail = (uint64_t) sv.f_bavail * sv.f_frsize;
    uint64_t promised = outstanding_bytes(s->record, st.st_dev, s->name);
    if (avail < promised || avail - promised < need) {
        char a[16], b[16], c[16];
        apply_step_result_message(sr,
                                  "not enough space on the filesystem of %s: the volume needs %s, %s is free and %s "
                                  "of that is promised to existing volumes (volumes are never overcommitted)",
                                  dir, format_bytes(a, sizeof(a), need), format_bytes(b, sizeof(b), avail),
                                  format_bytes(c, sizeof(c), promised));
        return -ENOSPC;
    }
    return 0;
}

/* Gives the backing file fd the size `size`: sparse (ftruncate), or with
 * preallocate every byte of [0, size) allocated by fallocate(2), the old
 * part's holes included (a file carved sparse before the pool said
 * preallocate gets them filled at its next grow; fallocate skips what is
 * allocated already). Allocated extents
 * are unwritten ones: they read as zeros, so a fresh file still takes the
 * prezeroed mkfs, and no zeros are written. Why at all: a direct-I/O write
 * through the loop device into a hole allocates on the host filesystem,
 * which makes the volume's fsync a host journal commit (shared by every
 * volume on it); into an allocated extent it is not, except the first
 * write's unwritten-to-written conversion. Then fsync. */
static int size_backing_file(int fd, uint64_t size, bool preallocate) {
    if (preallocate) {
        if (fallocate(fd, 0, 0, (off_t) size) < 0)
            return negative_errno();
    } else if (ftruncate(fd, (off_t) size) < 0)
        return negative_errno();
    if (fsync(fd) < 0)
        return negative_errno();
    return 0;
}

int backend_step_create_file(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    _cleanup_free_ char *dir = strdup(p->path);
    int r;
    if (!dir)
        return -ENOMEM;
    dirname(dir);
    r = mkdir_p(dir, 0755);
    if (r < 0) {
        apply_step_result_message(sr, "cannot create %s: %s", dir, strerror(-r));
        return r;
    }
    r = backend_check_space(s, dir, p->size, sr);
    if (r < 0)
        return r;

    /* Record the intent first: if we crash after creating the file, the
     * next run knows the file is ours (and, never formatted, that nothing
     * in it can be lost). */
    VolumeRecord *rec = volume_setup_record(s);
    if (!rec) {
        VolumeRecord v = {
            .name = (char *) s->name,
            .role = p->role,
            .index = p->index,
            .backend = p->backend,
            .backing_path = p->path,
            .size = p->size,
            .created_file = true,
            .created_at = now_usec(CLOCK_REALTIME),
        };
        r = state_record_add_volume(s->record, &v, &rec);
        if (r < 0)
            return r;
        s->undo_record = true;
    } else {
        rec->created_file = true;
        rec->size = p->size;
    }
    r = volume_setup_save(s, sr);
    if (r < 0)
        return r;

    /* O_EXCL: never truncate a file that appeared since the plan. */
    _cleanup_close_ int fd = open(p->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        r = negative_errno();
        apply_step_result_message(sr, "cannot create %s: %s", p->path, strerror(-r));
        return r;
    }
    s->undo_file = strdup(p->path);
    if (!s->undo_file)
        return -ENOMEM;
    /* Sparse by default (like Incus loop pools): space is allocated as the
     * filesystem inside writes; backend_check_space() keeps that honest.
     * preallocate: true allocates it all now instead. */
    r = size_backing_file(fd, p->size, s->pool && s->pool->preallocate);
    if (r < 0) {
        apply_step_result_message(sr, "cannot size %s: %s", p->path, strerror(-r));
        return r;
    }
    sr->changed = true;
    return 0;
}

int backend_step_detach(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    int r = loop_device_detach(p->path);
    if (r == -ENXIO)
        return 0; /* already gone */
    if (r < 0) {
        apply_step_result_message(sr, "cannot detach %s: %s", p->path, strerror(-r));
        return r;
    }
    s->loop_node = mfree(s->loop_node);
    sr->changed = true;
    return 0;
}

int backend_step_attach(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    LoopInfo info = {};
    int r = loop_device_find_by_backing_file(p->path, &info);
    if (r >= 0 && (info.direct_io || !p->direct_io)) {
        /* Attached meanwhile (another run, or by hand with the same file). */
        free(s->loop_node);
        s->loop_node = TAKE_PTR(info.node);
        s->loop_devno = info.devno;
        loop_info_done(&info);
        apply_step_result_message(sr, "already attached to %s", s->loop_node);
        return 0;
    }
    loop_info_done(&info);

    bool fallback = false;
    LoopAttachOptions o = { .direct_io = p->direct_io, .block_size = 0, .autoclear = false };
    r = loop_device_attach(p->path, &o, &info, &fallback);
    if (r == -ENXIO || r == -EBUSY) {
        apply_step_result_message(sr, "no free loop device for %s (all in use, or max_loop reached): %s", p->path,
                                  strerror(-r));
        return r;
    }
    if (r < 0) {
        apply_step_result_message(sr, "cannot attach %s: %s", p->path, strerror(-r));
        return r;
    }
    free(s->loop_node);
    s->loop_node = strdup(info.node);
    s->undo_loop = strdup(info.node);
    s->loop_devno = info.devno;
    if (!s->loop_node || !s->undo_loop) {
        loop_info_done(&info);
        return -ENOMEM;
    }
    sr->changed = true;
    /* Never silent: a volume that asked for direct I/O and did not get it
     * (the backing fs refuses O_DIRECT, e.g. tmpfs) is reported. */
    if (p->direct_io && (fallback || !info.direct_io)) {
        apply_step_result_message(sr, "%s: direct I/O refused by the kernel for %s; attached buffered", info.node,
                                  p->path);
        apply_volume_result_note(s->result, "direct I/O refused for %s (backing filesystem does not support it): "
                                            "%s is attached buffered",
                                 p->path, info.node);
    } else
        apply_step_result_message(sr, "%s (direct_io=%d, logical block size %u)", info.node, info.direct_io,
                                  info.logical_block_size);
    loop_info_done(&info);

    /* A loop device's bdi keeps the writeback limits of its previous user
     * (they survive detach). Knobs this pool leaves unset go back to the
     * kernel's defaults; the ones it sets are written by SET_LIMITS. */
    if (s->pool) {
        const WritebackLimits *w = &s->pool->writeback;
        WritebackLimits defaults = {
            .max_ratio = w->max_ratio < 0 && w->max_bytes == 0 ? 100 : -1,
            .strict_limit = w->strict_limit < 0 ? 0 : -1,
        };
        r = bdi_apply_limits(s->loop_devno, &defaults);
        if (r < 0 && r != -EOPNOTSUPP)
            apply_volume_result_note(s->result, "%s: cannot reset writeback limits to the kernel defaults: %s",
                                     s->loop_node, strerror(-r));
    }

    r = udev_wait_for_device(s->loop_devno, s->loop_node, UDEV_TIMEOUT);
    if (r < 0) {
        apply_step_result_message(sr, "%s did not become ready: %s", s->loop_node, strerror(-r));
        return r;
    }
    return 0;
}

/* Our own UUID (saved before an mkfs that was interrupted) on node. */
static bool is_our_filesystem(const ProbeResult *pr, const VolumeRecord *rec, const char *fs_type) {
    return !pr->blank && rec->fs_uuid && pr->uuid && strcasecmp(pr->uuid, rec->fs_uuid) == 0 &&
           streq_ptr(pr->type, fs_type) && streq_ptr(rec->fs_type, fs_type);
}

#define MKFS_TRIES 3

/* Runs the mkfs command line, again when it failed without writing a
 * signature: mkfs.btrfs, for one, checks the whole host (each mounted loop
 * device's backing file, blkid's cache for a duplicate UUID), so a device
 * that another process attaches or detaches at that moment can make it
 * fail before it writes a byte (seen once, in CI, with two suites' worth of
 * loop devices coming and going). Retrying is safe only on a device that
 * still probes blank: one that holds anything is never formatted over, and
 * the failure stands. *ret_first gets the first failure when a later try
 * succeeded, for the step's message. */
static int run_mkfs(char **argv, const char *package, const char *node, ApplyStepResult *sr, char **ret_first) {
    _cleanup_free_ char *first = NULL;
    int r = 0;
    for (unsigned attempt = 0; attempt < MKFS_TRIES; attempt++) {
        if (attempt > 0)
            usleep(200 * 1000 * attempt);
        r = backend_run_tool(argv, package, NULL, sr);
        if (r >= 0)
            break;
        if (r != -EPROTO)
            return r;
        if (!first && sr->message)
            first = strdup(sr->message);
        ProbeResult pr = {};
        bool blank = probe_path(node, &pr) >= 0 && pr.blank;
        probe_result_done(&pr);
        if (!blank)
            return r;
    }
    if (r < 0)
        return r;
    *ret_first = TAKE_PTR(first);
    return 0;
}

int backend_step_format(VolumeSetup *s, const PlanStep *p, const char *node, bool prezeroed, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    const FsType *fs = fs_type_find(p->fs_type);
    ProbeResult pr = {};
    int r;

    if (!fs) {
        apply_step_result_message(sr, "cannot format %s: %s is not a filesystem layoutd knows", s->name,
                                  p->fs_type ?: "(none)");
        return -EINVAL;
    }
    /* The rules again, at the last moment: only a blank volume whose
     * backing storage this agent created, never anything with a signature. */
    if (!rec || !rec->created_file || rec->formatted) {
        apply_step_result_message(sr, "refusing to format %s: the record does not say layoutd created it", s->name);
        return -EPERM;
    }
    r = probe_path(node, &pr);
    if (r < 0) {
        apply_step_result_message(sr, "cannot probe %s: %s", node, strerror(-r));
        return r;
    }
    if (is_our_filesystem(&pr, rec, p->fs_type)) {
        /* mkfs finished but the agent died before recording it. */
        probe_result_done(&pr);
        rec->formatted = true;
        r = volume_setup_save(s, sr);
        if (r < 0)
            return r;
        apply_step_result_message(sr, "%s already holds the %s filesystem layoutd made (UUID %s): recorded", node,
                                  p->fs_type, rec->fs_uuid);
        sr->changed = true;
        return 0;
    }
    if (!pr.blank) {
        apply_step_result_message(sr, "refusing to format %s: it holds %s (UUID %s)", node,
                                  pr.type ?: "a signature", pr.uuid ?: "none");
        probe_result_done(&pr);
        return -EEXIST;
    }
    probe_result_done(&pr);

    _cleanup_free_ char *uuid = NULL, *label = NULL;
    r = uuid_generate_v4_string(&uuid);
    if (r < 0)
        return r;
    r = plan_volume_label(p->fs_type, p->role, p->index, s->name, &label);
    if (r < 0)
        return r;

    /* Save the UUID we are about to write: a crash after mkfs leaves a
     * filesystem that the next run can prove is ours (ADOPT). */
    free(rec->fs_type);
    free(rec->fs_uuid);
    free(rec->fs_label);
    rec->fs_type = strdup(p->fs_type);
    rec->fs_uuid = strdup(uuid);
    rec->fs_label = strdup(label);
    if (!rec->fs_type || !rec->fs_uuid || !rec->fs_label)
        return -ENOMEM;
    r = volume_setup_save(s, sr);
    if (r < 0)
        return r;

    _cleanup_strv_free_ char **argv = NULL;
    /* A file this very run created with ftruncate reads as zeros
     * everywhere, so mkfs need not zero inode tables and journal (and the
     * file stays sparse). A file from an earlier run may have been written
     * through its loop meanwhile: the full, zeroing mkfs for that one. */
    char *const *extra = s->pool ? s->pool->mkfs_options : NULL;
    if (prezeroed)
        r = mkfs_build_argv_prezeroed(p->fs_type, node, label, uuid, extra, &argv);
    else
        r = mkfs_build_argv(p->fs_type, node, label, uuid, extra, &argv);
    if (r < 0) {
        apply_step_result_message(sr, "cannot build the mkfs command line (check mkfs_options): %s", strerror(-r));
        return r;
    }
    _cleanup_free_ char *first_failure = NULL;
    r = run_mkfs(argv, fs->package, node, sr, &first_failure);
    if (r < 0)
        return r;

    r = probe_path(node, &pr);
    if (r < 0) {
        apply_step_result_message(sr, "cannot probe %s after mkfs: %s", node, strerror(-r));
        return r;
    }
    bool ok = streq_ptr(pr.type, p->fs_type) && pr.uuid && strcasecmp(pr.uuid, uuid) == 0;
    if (!ok) {
        apply_step_result_message(sr, "mkfs ran but %s shows %s UUID %s, expected %s UUID %s", node,
                                  pr.type ?: "nothing", pr.uuid ?: "none", p->fs_type, uuid);
        probe_result_done(&pr);
        return -EIO;
    }
    probe_result_done(&pr);

    /* Known before mounting: a crash from here on leaves a volume we
     * recognise by its UUID. */
    rec->formatted = true;
    r = volume_setup_save(s, sr);
    if (r < 0) {
        rec->formatted = false;
        return r;
    }
    if (first_failure)
        apply_step_result_message(sr, "%s on %s, UUID %s, label %s (a later try: the first failed on the blank device: %s)",
                                  p->fs_type, node, uuid, label, first_failure);
    else
        apply_step_result_message(sr, "%s on %s, UUID %s, label %s", p->fs_type, node, uuid, label);
    sr->changed = true;
    return 0;
}

int backend_step_adopt(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    if (!rec || !rec->fs_uuid || !p->fs_uuid || strcasecmp(rec->fs_uuid, p->fs_uuid) != 0) {
        apply_step_result_message(sr, "refusing to adopt %s: its UUID is not the one in the record", s->name);
        return -EPERM;
    }
    if (rec->formatted)
        return 0;
    rec->formatted = true;
    int r = volume_setup_save(s, sr);
    if (r < 0)
        return r;
    sr->changed = true;
    return 0;
}

int backend_step_mount(VolumeSetup *s, const PlanStep *p, const char *node, dev_t devno, ApplyStepResult *sr) {
    MountInfo mi = {};
    int r;
    if (mount_find_by_target(p->mount_path, &mi) >= 0) {
        bool same = mi.devno == devno;
        mount_info_done(&mi);
        if (same) {
            apply_step_result_message(sr, "already mounted");
            return 0;
        }
        apply_step_result_message(sr, "mount point %s is busy: something else is mounted on it", p->mount_path);
        return -EBUSY;
    }
    r = mkdir_p(p->mount_path, 0755);
    if (r < 0) {
        apply_step_result_message(sr, "cannot create %s: %s", p->mount_path, strerror(-r));
        return r;
    }
    /* Always nosuid,nodev: a workspace's files are its tenant's, and a
     * set-id binary or a device node written through one must never act
     * as such on the host (or a neighbour). The pool's options follow. */
    _cleanup_free_ char *options = NULL;
    const char *extra = s->pool ? s->pool->mount_options : NULL;
    if (asprintf(&options, "nosuid,nodev%s%s", isempty(extra) ? "" : ",", isempty(extra) ? "" : extra) < 0)
        return -ENOMEM;
    /* State volumes get project quotas where the filesystem has them
     * (XFS: only at mount time, never by remount), so that a workspace's
     * quota can be enforced later without taking the volume down. A
     * kernel built without them refuses the option: the volume is mounted
     * without, and quota requests are refused (quota.h). */
    const char *qopt = s->pool && s->pool->role == POOL_STATE ? quota_mount_option(p->fs_type) : NULL;
    /* Without them is said in the step's message, not as a note (a
     * note is a warning in the volume's health): no layout asks for
     * quotas, a workspace does, and that request is refused with the
     * reason (501), as /v1/status.quotas says. A warning here made a
     * fresh carve's health depend on whether the volume was mounted by
     * this agent or found mounted. */
    const char *why = NULL;
    bool no_quota = false;
    if (qopt && quota_kernel_support(p->fs_type, &why) == 0) {
        no_quota = true;
        qopt = NULL;
    }
    if (qopt) {
        _cleanup_free_ char *with = NULL;
        if (asprintf(&with, "%s,%s", options, qopt) < 0)
            return -ENOMEM;
        r = mount_volume(node, p->mount_path, p->fs_type, with);
        if (r == -EINVAL && quota_kernel_support(p->fs_type, &why) == 0) {
            no_quota = true;
            r = mount_volume(node, p->mount_path, p->fs_type, options);
        }
    } else
        r = mount_volume(node, p->mount_path, p->fs_type, options);
    if (r < 0) {
        apply_step_result_message(sr, "cannot mount %s on %s: %s", node, p->mount_path, strerror(-r));
        return r;
    }
    if (no_quota)
        apply_step_result_message(sr, "without project quotas: %s", why);
    s->undo_mount = strdup(p->mount_path);
    if (!s->undo_mount)
        return -ENOMEM;
    sr->changed = true;
    return 0;
}

int backend_step_set_limits(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    if (!s->pool)
        return 0;
    int r = volume_setup_find_loop(s, rec ? rec->backing_path : NULL);
    if (r < 0) {
        apply_step_result_message(sr, "no loop device: %s", strerror(-r));
        return r;
    }
    r = bdi_apply_limits(s->loop_devno, &s->pool->writeback);
    if (r == -EOPNOTSUPP) {
        /* An older kernel lacks max_bytes/strict_limit: worth saying, not
         * worth failing a volume that otherwise works. */
        apply_step_result_message(sr, "this kernel lacks a writeback knob (max_bytes/strict_limit need 6.2+)");
        apply_volume_result_note(s->result, "writeback limits only partly applied: kernel lacks a knob");
        return 0;
    }
    if (r < 0) {
        apply_step_result_message(sr, "cannot set the writeback limits of %u:%u: %s", major(s->loop_devno),
                                  minor(s->loop_devno), strerror(-r));
        return r;
    }
    sr->changed = true;
    return 0;
}

int backend_grow_storage(VolumeSetup *s, const PlanStep *p, uint64_t *ret_new_size, ApplyStepResult *sr) {
    struct stat st;
    int r;
    if (stat(p->path, &st) < 0) {
        r = negative_errno();
        apply_step_result_message(sr, "cannot stat %s: %s", p->path, strerror(-r));
        return r;
    }
    uint64_t old = (uint64_t) st.st_size;
    if (old > p->size) {
        apply_step_result_message(sr, "refusing to shrink %s", p->path);
        return -EPERM;
    }
    r = volume_setup_find_loop(s, p->path);
    if (r < 0) {
        apply_step_result_message(sr, "no loop device for %s: %s", p->path, strerror(-r));
        return r;
    }
    if (old < p->size) {
        _cleanup_free_ char *dir = strdup(p->path);
        if (!dir)
            return -ENOMEM;
        /* The check leaves this volume out of what is promised already
         * (right for a carve, whose need is the whole file), so a grow
         * needs its new part plus what the file may still claim today. */
        uint64_t alloc = (uint64_t) st.st_blocks * 512;
        uint64_t claim = old > alloc ? old - alloc : 0;
        r = backend_check_space(s, dirname(dir), p->size - old + claim, sr);
        if (r < 0)
            return r;
        _cleanup_close_ int fd = open(p->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        r = fd < 0 ? negative_errno() : size_backing_file(fd, p->size, s->pool && s->pool->preallocate);
        if (r < 0) {
            /* A preallocating fallocate that fails half-way (ENOSPC: the
             * host filled meanwhile) has already raised the file's size
             * chunk by chunk. The loop device still has the old size, so
             * the file goes back to it: the next plan must see the truth. */
            if (fd >= 0 && ftruncate(fd, (off_t) old) < 0)
                apply_volume_result_note(s->result, "%s could not be cut back to %" PRIu64 " bytes after a failed grow: %m",
                                         p->path, old);
            apply_step_result_message(sr, "cannot extend %s: %s", p->path, strerror(-r));
            return r;
        }
        sr->changed = true;
    }
    uint64_t newsize = 0;
    r = loop_device_refresh_size(s->loop_node, &newsize);
    if (r < 0) {
        /* The device still has the old size, so the file can go back. */
        _cleanup_close_ int fd = open(p->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0 && old < p->size)
            (void) ftruncate(fd, (off_t) old);
        apply_step_result_message(sr, "cannot refresh the size of %s: %s", s->loop_node, strerror(-r));
        return r;
    }
    *ret_new_size = newsize;
    return 0;
}

int backend_grow_fs(VolumeSetup *s, const PlanStep *p, const char *node, uint64_t new_size, ApplyStepResult *sr) {
    _cleanup_strv_free_ char **argv = NULL;
    const FsType *fs = fs_type_find(p->fs_type);
    int r = mkfs_grow_argv(p->fs_type, node, p->mount_path, &argv);
    if (r < 0)
        return r;
    r = backend_run_tool(argv, fs->package, fs->grow.capability_name, sr);
    if (r < 0) {
        /* The device is larger now and data may be written to the fs, so
         * nothing is shrunk back; growing again is safe. */
        apply_volume_result_note(s->result, "%s grew to %" PRIu64 " bytes but the filesystem did not; run `%s` again",
                                 node, new_size, argv[0]);
        return r;
    }
    VolumeRecord *rec = volume_setup_record(s);
    if (rec) {
        rec->size = p->size;
        r = volume_setup_save(s, sr);
        if (r < 0)
            return r;
    }
    apply_step_result_message(sr, "%s is now %" PRIu64 " bytes", node, new_size);
    sr->changed = true;
    return 0;
}

int backend_step_identify(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = volume_setup_record(s);
    _cleanup_free_ char *found = NULL, *parent = NULL;
    struct stat st, pst;
    int r;
    if (!rec || !p->mount_path) {
        apply_step_result_message(sr, "%s is not in the record: no identity to write", s->name);
        return -ENOENT;
    }
    const BackendTraits *t = backend_traits(rec->backend);
    if (t && t->has_device) {
        /* Only on the volume's own filesystem: never on the directory it
         * is mounted on, whatever happened since the plan was made. */
        if (asprintf(&parent, "%s/..", p->mount_path) < 0)
            return -ENOMEM;
        if (stat(p->mount_path, &st) < 0 || stat(parent, &pst) < 0) {
            r = negative_errno();
            apply_step_result_message(sr, "cannot stat %s: %s", p->mount_path, strerror(-r));
            return r;
        }
        if (st.st_dev == pst.st_dev) {
            apply_step_result_message(sr, "%s is not a mount point: %s is not mounted there", p->mount_path, s->name);
            return -ENOTCONN;
        }
    }
    r = volume_identity_read(p->mount_path, &found);
    if (r >= 0) {
        if (rec->identity && strcasecmp(found, rec->identity) == 0)
            return 0;
        apply_step_result_message(sr, "%s/%s names volume %s, not %s: left as is", p->mount_path,
                                  VOLUME_IDENTITY_FILE, found, rec->identity ?: "(none recorded)");
        return -EEXIST;
    }
    if (r != -ENOENT) {
        apply_step_result_message(sr, "cannot read %s/%s: %s", p->mount_path, VOLUME_IDENTITY_FILE, strerror(-r));
        return r;
    }
    if (!rec->identity) {
        /* Recorded first: a file must never name a volume the record does
         * not know (a crash in between leaves the record ahead, and the
         * next apply writes the file). */
        if ((r = uuid_generate_v4_string(&rec->identity)) < 0)
            return r;
        if ((r = volume_setup_save(s, sr)) < 0)
            return r;
    }
    r = volume_identity_write(p->mount_path, rec->identity, s->name, rec->role);
    if (r < 0) {
        apply_step_result_message(sr, "cannot write %s/%s: %s", p->mount_path, VOLUME_IDENTITY_FILE, strerror(-r));
        return r;
    }
    apply_step_result_message(sr, "identity %s", rec->identity);
    sr->changed = true;
    return 0;
}

/* ---- teardown pieces ---------------------------------------------------- */

int backend_teardown_unmount(VolumeSetup *s, const char *mount_path, const TeardownOptions *opts) {
    _cleanup_free_ char *desc = NULL;
    if (asprintf(&desc, "unmount %s", mount_path) < 0)
        return -ENOMEM;
    ApplyStepResult *sr = apply_volume_result_add_step(s->result, PLAN_STEP_UNMOUNT, desc);
    if (!sr)
        return -ENOMEM;
    _cleanup_strv_free_ char **holders = NULL;
    int r = mount_unmount(mount_path, false, &holders);
    if (r == -EBUSY && opts->lazy) {
        apply_volume_result_note(s->result, "%s was busy: detached lazily (--lazy)", mount_path);
        r = mount_unmount(mount_path, true, NULL);
    }
    if (r < 0 && r != -ENOENT) {
        sr->error = r;
        _cleanup_free_ char *who = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&who, &len);
        if (f) {
            for (char **h = holders; h && *h; h++)
                fprintf(f, "%s%s", h == holders ? "" : ", ", *h);
            fclose(f);
        }
        apply_step_result_message(sr, "cannot unmount %s: %s%s%s", mount_path, strerror(-r),
                                  isempty(who) ? "" : "; held by ", isempty(who) ? "" : who);
        apply_volume_result_fail(s->result, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "unmount failed");
        return r;
    }
    sr->changed = r >= 0;
    return 0;
}

int backend_teardown_detach(VolumeSetup *s, const char *node, const char *backing_path) {
    _cleanup_free_ char *desc = NULL;
    if (asprintf(&desc, "detach %s from %s", backing_path ?: "?", node) < 0)
        return -ENOMEM;
    ApplyStepResult *sr = apply_volume_result_add_step(s->result, PLAN_STEP_DETACH, desc);
    if (!sr)
        return -ENOMEM;
    int r = loop_device_detach(node);
    if (r < 0 && r != -ENXIO) {
        sr->error = r;
        apply_step_result_message(sr, "cannot detach %s: %s", node, strerror(-r));
        apply_volume_result_fail(s->result, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "detach failed");
        return r;
    }
    sr->changed = true;
    return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    if (flag == FTW_DP || flag == FTW_D)
        return rmdir(path) < 0 ? -errno : 0;
    return unlink(path) < 0 ? -errno : 0;
}

/* rm -r that never crosses into another filesystem (FTW_MOUNT) and never
 * follows symlinks (FTW_PHYS). */
static int remove_tree(const char *path) {
    int r = nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
    if (r < 0 && errno == ENOENT)
        return 0;
    if (r > 0)
        return -r;
    return r < 0 ? negative_errno() : 0;
}

int backend_teardown_destroy(VolumeSetup *s, const VolumeObservation *o, bool remove_mount_tree) {
    VolumeRecord *rec = volume_setup_record(s);
    _cleanup_free_ char *desc = NULL;
    ApplyStepResult *sr;
    int r;
    if (!rec)
        return 0;
    if (rec->backing_path && rec->created_file) {
        if (asprintf(&desc, "delete %s", rec->backing_path) < 0)
            return -ENOMEM;
        sr = apply_volume_result_add_step(s->result, PLAN_STEP_DELETE, desc);
        if (!sr)
            return -ENOMEM;
        if (unlink(rec->backing_path) < 0 && errno != ENOENT) {
            sr->error = negative_errno();
            apply_step_result_message(sr, "cannot delete %s: %m", rec->backing_path);
            apply_volume_result_fail(s->result, APPLY_OUTCOME_FAILED, sr->error, "%s", sr->message ?: "delete failed");
            return sr->error;
        }
        sr->changed = true;
    } else if (rec->backing_path)
        apply_volume_result_note(s->result, "%s was not created by layoutd: kept", rec->backing_path);
    if (o && o->mount_path) {
        desc = mfree(desc);
        if (asprintf(&desc, "remove %s", o->mount_path) < 0)
            return -ENOMEM;
        sr = apply_volume_result_add_step(s->result, PLAN_STEP_DELETE, desc);
        if (!sr)
            return -ENOMEM;
        if (remove_mount_tree)
            r = remove_tree(o->mount_path);
        else
            r = rmdir(o->mount_path) < 0 && errno != ENOENT ? negative_errno() : 0;
        if (r < 0) {
            sr->error = r;
            apply_step_result_message(sr, "cannot remove %s: %s", o->mount_path, strerror(-r));
            apply_volume_result_fail(s->result, APPLY_OUTCOME_FAILED, r, "%s", sr->message ?: "remove failed");
            return r;
        }
        sr->changed = true;
    }
    return 0;
}
