/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Carrying out a plan. One VolumeSetup per volume records what THIS run
 * made, so that a failure undoes exactly that and nothing older.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>

#include "apply-internal.h"
#include "bdi.h"
#include "loop.h"
#include "mkfs.h"
#include "mount.h"
#include "probe.h"
#include "udev.h"
#include "util.h"

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
#define UDEV_TIMEOUT (10 * USEC_PER_SEC)

static ApplyVdoHandler vdo_handler = NULL;
static void *vdo_userdata = NULL;

void apply_set_vdo_handler(ApplyVdoHandler handler, void *userdata) {
    vdo_handler = handler;
    vdo_userdata = userdata;
}

int apply_generate_uuid(char **ret) {
    uint8_t b[16];
    uint64_t x = random_u64(), y = random_u64();
    memcpy(b, &x, 8);
    memcpy(b + 8, &y, 8);
    b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
    b[8] = (b[8] & 0x3f) | 0x80; /* RFC 4122 variant */
    char *s;
    if (asprintf(&s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
                 b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]) < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

/* mkfs and the grow tools are looked up in the caller's PATH (not the
 * runner's fixed one) so that an operator, or a test, can choose them. */
int apply_find_program(const char *name, char **ret) {
    if (!name || !ret)
        return -EINVAL;
    if (strchr(name, '/')) {
        if (access(name, X_OK) < 0)
            return negative_errno();
        char *c = strdup(name);
        if (!c)
            return -ENOMEM;
        *ret = c;
        return 0;
    }
    const char *path = getenv("PATH");
    _cleanup_free_ char *copy = strdup(isempty(path) ? DEFAULT_PATH : path);
    if (!copy)
        return -ENOMEM;
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (d[0] != '/')
            continue; /* relative PATH entries are a trap for a root tool */
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", d, name) < 0)
            return -ENOMEM;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0) {
            *ret = TAKE_PTR(p);
            return 0;
        }
    }
    return -ENOENT;
}

static const char *package_of(const char *program) {
    if (strstr(program, "xfs"))
        return "xfsprogs";
    if (strstr(program, "ext4") || strstr(program, "resize2fs"))
        return "e2fsprogs";
    return "the package that provides it";
}

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

typedef struct VolumeSetup {
    const Layout *layout;
    const Pool *pool;
    StateRecord *record;
    const char *record_path;
    ApplyVolumeResult *result;
    const char *name;
    /* What this run made (undo in reverse order). */
    char *undo_file;         /* a backing file we created */
    char *undo_dir;          /* a directory we created (dir backend) */
    bool undo_record;        /* the volume record we added */
    char *undo_loop;         /* a loop device we attached */
    char *undo_mount;        /* a mount we made */
    /* Runtime facts. */
    char *loop_node;
    dev_t loop_devno;
} VolumeSetup;

static void volume_setup_done(VolumeSetup *s) {
    free(s->undo_file);
    free(s->undo_dir);
    free(s->undo_loop);
    free(s->undo_mount);
    free(s->loop_node);
}

/* Undo in reverse order; each undo failure is a note (never hidden). */
static void volume_setup_rollback(VolumeSetup *s) {
    ApplyVolumeResult *v = s->result;
    int r;
    if (!s->undo_mount && !s->undo_loop && !s->undo_file && !s->undo_dir && !s->undo_record)
        return; /* this run made nothing for the volume: nothing to undo */
    if (s->undo_mount) {
        r = mount_unmount(s->undo_mount, false, NULL);
        if (r < 0 && r != -ENOENT)
            apply_volume_result_note(v, "rollback: unmounting %s failed: %s", s->undo_mount, strerror(-r));
    }
    if (s->undo_loop) {
        r = loop_device_detach(s->undo_loop);
        if (r < 0 && r != -ENXIO)
            apply_volume_result_note(v, "rollback: detaching %s failed: %s", s->undo_loop, strerror(-r));
    }
    if (s->undo_file && unlink(s->undo_file) < 0 && errno != ENOENT)
        apply_volume_result_note(v, "rollback: removing %s failed: %m", s->undo_file);
    if (s->undo_dir && rmdir(s->undo_dir) < 0 && errno != ENOENT)
        apply_volume_result_note(v, "rollback: removing directory %s failed: %m", s->undo_dir);
    if (s->undo_record) {
        (void) state_record_remove_volume(s->record, s->name);
        r = apply_save_record(s->record, s->record_path);
        if (r < 0)
            apply_volume_result_note(v, "rollback: saving the record failed: %s", strerror(-r));
    }
    v->rolled_back = true;
}

/* The loop device of the volume: the one this run attached, else the one
 * the kernel has for the backing file. */
static int setup_find_loop(VolumeSetup *s, const char *backing) {
    if (s->loop_node)
        return 0;
    LoopInfo info = {};
    int r = loop_device_find_by_backing_file(backing, &info);
    if (r < 0)
        return r;
    s->loop_node = TAKE_PTR(info.node);
    s->loop_devno = info.devno;
    loop_info_done(&info);
    return 0;
}

static VolumeRecord *setup_record(VolumeSetup *s) {
    return state_record_find_volume(s->record, s->name);
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

/* Volumes are not overcommitted: a sparse file is carved (or grown) only if
 * the backing fs can hold all of it on top of what our other volumes may
 * still claim. Otherwise ENOSPC would surface later as I/O errors inside a
 * mounted filesystem, which is much worse than a clear refusal now. */
static int check_space(VolumeSetup *s, const char *dir, uint64_t need, ApplyStepResult *sr) {
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

static int step_create_file(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
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
    r = check_space(s, dir, p->size, sr);
    if (r < 0)
        return r;

    /* Record the intent first: if we crash after creating the file, the
     * next run knows the file is ours (and, never formatted, that nothing
     * in it can be lost). */
    VolumeRecord *rec = setup_record(s);
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
    r = apply_save_record(s->record, s->record_path);
    if (r < 0) {
        apply_step_result_message(sr, "cannot save the record %s: %s", s->record_path, strerror(-r));
        return r;
    }

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
    /* Sparse on purpose (like Incus loop pools): space is allocated as the
     * filesystem inside writes; check_space() keeps that honest. */
    if (ftruncate(fd, (off_t) p->size) < 0 || fsync(fd) < 0) {
        r = negative_errno();
        apply_step_result_message(sr, "cannot size %s: %s", p->path, strerror(-r));
        return r;
    }
    sr->changed = true;
    return 0;
}

static int step_create_dir(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    struct stat st;
    int r;
    bool existed = stat(p->path, &st) == 0;
    r = mkdir_p(p->path, 0755);
    if (r < 0) {
        apply_step_result_message(sr, "cannot create %s: %s", p->path, strerror(-r));
        return r;
    }
    if (!existed) {
        s->undo_dir = strdup(p->path);
        if (!s->undo_dir)
            return -ENOMEM;
    }
    if (!setup_record(s)) {
        VolumeRecord v = {
            .name = (char *) s->name,
            .role = p->role,
            .index = p->index,
            .backend = BACKEND_DIR,
            .created_file = !existed,
            .created_at = now_usec(CLOCK_REALTIME),
        };
        r = state_record_add_volume(s->record, &v, NULL);
        if (r < 0)
            return r;
        s->undo_record = true;
        r = apply_save_record(s->record, s->record_path);
        if (r < 0)
            return r;
    }
    sr->changed = !existed;
    return 0;
}

static int step_detach(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    int r = loop_device_detach(p->path);
    if (r == -ENXIO)
        return 0; /* already gone */
    if (r < 0) {
        apply_step_result_message(sr, "cannot detach %s: %s", p->path, strerror(-r));
        return r;
    }
    free(s->loop_node);
    s->loop_node = NULL;
    sr->changed = true;
    return 0;
}

static int step_attach(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    LoopInfo info = {};
    int r = loop_device_find_by_backing_file(p->path, &info);
    if (r >= 0 && (info.direct_io || !p->direct_io)) {
        /* Attached meanwhile (another run, or by hand with the same file). */
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
    const WritebackLimits *w = &s->pool->writeback;
    WritebackLimits defaults = {
        .max_ratio = w->max_ratio < 0 && w->max_bytes == 0 ? 100 : -1,
        .strict_limit = w->strict_limit < 0 ? 0 : -1,
    };
    r = bdi_apply_limits(s->loop_devno, &defaults);
    if (r < 0 && r != -EOPNOTSUPP)
        apply_volume_result_note(s->result, "%s: cannot reset writeback limits to the kernel defaults: %s",
                                 s->loop_node, strerror(-r));

    r = udev_wait_for_device(s->loop_devno, s->loop_node, UDEV_TIMEOUT);
    if (r < 0) {
        apply_step_result_message(sr, "%s did not become ready: %s", s->loop_node, strerror(-r));
        return r;
    }
    return 0;
}

/* Runs argv with argv[0] resolved in PATH; words -ENOENT and failures. */
static int run_tool(char **argv, ApplyStepResult *sr) {
    _cleanup_free_ char *exe = NULL, *out = NULL;
    const char *prog = argv[0];
    int status = 0;
    int r = apply_find_program(prog, &exe);
    if (r == -ENOENT) {
        apply_step_result_message(sr, "%s not found: install %s", prog, package_of(prog));
        return -ENOENT;
    }
    if (r < 0)
        return r;
    char *saved = argv[0];
    argv[0] = exe;
    r = dev_run_program(argv, &out, &status);
    argv[0] = saved;
    if (r == -ENOENT) {
        apply_step_result_message(sr, "%s not found: install %s", prog, package_of(prog));
        return r;
    }
    if (r == -EPROTO) {
        const char *t = tail_lines(out, 4);
        apply_step_result_message(sr, "%s failed (status %d): %s", prog,
                                  WIFEXITED(status) ? WEXITSTATUS(status) : -1, isempty(t) ? "no output" : t);
        if (out && (strstr(out, "No space left") || strstr(out, "ENOSPC")))
            return -ENOSPC;
        /* ext4 online resize needs CAP_SYS_RESOURCE (ext4_resize_begin);
         * containers often drop it. Say so instead of "Permission denied". */
        if (out && strstr(out, "Permission denied to resize")) {
            apply_step_result_message(sr,
                                      "%s: online ext4 resize was denied by the kernel (it needs CAP_SYS_RESOURCE, "
                                      "which this process may lack): %s",
                                      prog, t);
            return -EPERM;
        }
        return r;
    }
    if (r < 0)
        apply_step_result_message(sr, "cannot run %s: %s", prog, strerror(-r));
    return r;
}

static int step_format(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = setup_record(s);
    ProbeResult pr = {};
    int r;

    /* The rules again, at the last moment: only a blank volume whose
     * backing file this agent created, never anything with a signature. */
    if (!rec || !rec->created_file || rec->formatted) {
        apply_step_result_message(sr, "refusing to format %s: the record does not say layoutd created it", s->name);
        return -EPERM;
    }
    r = setup_find_loop(s, p->path);
    if (r < 0) {
        apply_step_result_message(sr, "no loop device for %s: %s", p->path, strerror(-r));
        return r;
    }
    r = probe_path(s->loop_node, &pr);
    if (r < 0) {
        apply_step_result_message(sr, "cannot probe %s: %s", s->loop_node, strerror(-r));
        return r;
    }
    if (!pr.blank) {
        apply_step_result_message(sr, "refusing to format %s: it holds %s (UUID %s)", s->loop_node,
                                  pr.type ?: "a signature", pr.uuid ?: "none");
        probe_result_done(&pr);
        return -EEXIST;
    }
    probe_result_done(&pr);

    _cleanup_free_ char *uuid = NULL, *label = NULL;
    r = apply_generate_uuid(&uuid);
    if (r < 0)
        return r;
    r = plan_volume_label(p->fs_type, p->role, p->index, s->name, &label);
    if (r < 0)
        return r;

    /* Save the UUID we are about to write: a crash after mkfs leaves a
     * filesystem that the next run can prove is ours (plan: ADOPT). */
    free(rec->fs_type);
    free(rec->fs_uuid);
    free(rec->fs_label);
    rec->fs_type = strdup(p->fs_type);
    rec->fs_uuid = strdup(uuid);
    rec->fs_label = strdup(label);
    if (!rec->fs_type || !rec->fs_uuid || !rec->fs_label)
        return -ENOMEM;
    r = apply_save_record(s->record, s->record_path);
    if (r < 0) {
        apply_step_result_message(sr, "cannot save the record: %s", strerror(-r));
        return r;
    }

    _cleanup_strv_free_ char **argv = NULL;
    /* A file this very run created with ftruncate reads as zeros
     * everywhere, so mkfs need not zero inode tables and journal (and the
     * file stays sparse). A file from an earlier run may have been written
     * through its loop meanwhile: the full, zeroing mkfs for that one. */
    char *const *extra = s->pool ? s->pool->mkfs_options : NULL;
    if (s->undo_file && streq(s->undo_file, p->path))
        r = mkfs_build_argv_prezeroed(p->fs_type, s->loop_node, label, uuid, extra, &argv);
    else
        r = mkfs_build_argv(p->fs_type, s->loop_node, label, uuid, extra, &argv);
    if (r < 0) {
        apply_step_result_message(sr, "cannot build the mkfs command line (check mkfs_options): %s", strerror(-r));
        return r;
    }
    r = run_tool(argv, sr);
    if (r < 0)
        return r;

    r = probe_path(s->loop_node, &pr);
    if (r < 0) {
        apply_step_result_message(sr, "cannot probe %s after mkfs: %s", s->loop_node, strerror(-r));
        return r;
    }
    bool ok = streq_ptr(pr.type, p->fs_type) && pr.uuid && strcasecmp(pr.uuid, uuid) == 0;
    if (!ok) {
        apply_step_result_message(sr, "mkfs ran but %s shows %s UUID %s, expected %s UUID %s", s->loop_node,
                                  pr.type ?: "nothing", pr.uuid ?: "none", p->fs_type, uuid);
        probe_result_done(&pr);
        return -EIO;
    }
    probe_result_done(&pr);

    /* Known before mounting: a crash from here on leaves a volume we
     * recognise by its UUID. */
    rec->formatted = true;
    r = apply_save_record(s->record, s->record_path);
    if (r < 0) {
        rec->formatted = false;
        apply_step_result_message(sr, "cannot save the record: %s", strerror(-r));
        return r;
    }
    apply_step_result_message(sr, "%s on %s, UUID %s, label %s", p->fs_type, s->loop_node, uuid, label);
    sr->changed = true;
    return 0;
}

static int step_adopt(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = setup_record(s);
    int r;
    if (p->backend == BACKEND_DIR) {
        if (rec)
            return 0;
        VolumeRecord v = {
            .name = (char *) s->name,
            .role = p->role,
            .index = p->index,
            .backend = BACKEND_DIR,
            .created_at = now_usec(CLOCK_REALTIME),
        };
        r = state_record_add_volume(s->record, &v, NULL);
        if (r < 0)
            return r;
        s->undo_record = true;
    } else {
        if (!rec || !rec->fs_uuid || !p->fs_uuid || strcasecmp(rec->fs_uuid, p->fs_uuid) != 0) {
            apply_step_result_message(sr, "refusing to adopt %s: its UUID is not the one in the record", s->name);
            return -EPERM;
        }
        if (rec->formatted)
            return 0;
        rec->formatted = true;
    }
    r = apply_save_record(s->record, s->record_path);
    if (r < 0) {
        apply_step_result_message(sr, "cannot save the record: %s", strerror(-r));
        return r;
    }
    sr->changed = true;
    return 0;
}

static int step_mount(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = setup_record(s);
    int r;
    if (!rec || !rec->backing_path) {
        apply_step_result_message(sr, "%s is not in the record", s->name);
        return -ENOENT;
    }
    r = setup_find_loop(s, rec->backing_path);
    if (r < 0) {
        apply_step_result_message(sr, "no loop device for %s: %s", rec->backing_path, strerror(-r));
        return r;
    }
    MountInfo mi = {};
    if (mount_find_by_target(p->mount_path, &mi) >= 0) {
        bool same = mi.devno == s->loop_devno;
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
    r = mount_volume(s->loop_node, p->mount_path, p->fs_type, s->pool ? s->pool->mount_options : NULL);
    if (r < 0) {
        apply_step_result_message(sr, "cannot mount %s on %s: %s", s->loop_node, p->mount_path, strerror(-r));
        return r;
    }
    s->undo_mount = strdup(p->mount_path);
    if (!s->undo_mount)
        return -ENOMEM;
    sr->changed = true;
    return 0;
}

static int step_grow(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
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
    r = setup_find_loop(s, p->path);
    if (r < 0) {
        apply_step_result_message(sr, "no loop device for %s: %s", p->path, strerror(-r));
        return r;
    }
    if (old < p->size) {
        _cleanup_free_ char *dir = strdup(p->path);
        if (!dir)
            return -ENOMEM;
        r = check_space(s, dirname(dir), p->size - old, sr);
        if (r < 0)
            return r;
        _cleanup_close_ int fd = open(p->path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0 || ftruncate(fd, (off_t) p->size) < 0 || fsync(fd) < 0) {
            r = negative_errno();
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
    _cleanup_strv_free_ char **argv = NULL;
    r = mkfs_grow_argv(p->fs_type, s->loop_node, p->mount_path, &argv);
    if (r < 0)
        return r;
    r = run_tool(argv, sr);
    if (r < 0) {
        /* The device is larger now and data may be written to the fs, so
         * nothing is shrunk back; growing again is safe. */
        apply_volume_result_note(s->result, "%s grew to %" PRIu64 " bytes but the filesystem did not; run `%s` again",
                                 s->loop_node, newsize, argv[0]);
        return r;
    }
    VolumeRecord *rec = setup_record(s);
    if (rec) {
        rec->size = p->size;
        r = apply_save_record(s->record, s->record_path);
        if (r < 0) {
            apply_step_result_message(sr, "grown, but cannot save the record: %s", strerror(-r));
            return r;
        }
    }
    apply_step_result_message(sr, "%s is now %" PRIu64 " bytes", s->loop_node, newsize);
    sr->changed = true;
    return 0;
}

static int step_set_limits(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    VolumeRecord *rec = setup_record(s);
    if (!s->pool)
        return 0;
    if (!s->loop_node && rec && rec->backing_path) {
        int r = setup_find_loop(s, rec->backing_path);
        if (r < 0) {
            apply_step_result_message(sr, "no loop device: %s", strerror(-r));
            return r;
        }
    }
    int r = bdi_apply_limits(s->loop_devno, &s->pool->writeback);
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

static int step_vdo(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    if (!vdo_handler) {
        apply_step_result_message(sr, "vdo-xfs is handled by src/vdo, which this build does not provide");
        return -EOPNOTSUPP;
    }
    bool changed = false;
    _cleanup_free_ char *msg = NULL;
    int r = vdo_handler(s->layout, p, s->record, s->record_path, &changed, &msg, vdo_userdata);
    if (msg)
        apply_step_result_message(sr, "%s", msg);
    sr->changed = r >= 0 && changed;
    return r;
}

static int run_step(VolumeSetup *s, const PlanStep *p, ApplyStepResult *sr) {
    switch (p->kind) {
    case PLAN_STEP_CREATE_FILE:
        return step_create_file(s, p, sr);
    case PLAN_STEP_CREATE_DIR:
        return step_create_dir(s, p, sr);
    case PLAN_STEP_DETACH:
        return step_detach(s, p, sr);
    case PLAN_STEP_ATTACH:
        return step_attach(s, p, sr);
    case PLAN_STEP_FORMAT:
        return step_format(s, p, sr);
    case PLAN_STEP_ADOPT:
        return step_adopt(s, p, sr);
    case PLAN_STEP_MOUNT:
        return step_mount(s, p, sr);
    case PLAN_STEP_GROW:
        return step_grow(s, p, sr);
    case PLAN_STEP_SET_LIMITS:
        return step_set_limits(s, p, sr);
    case PLAN_STEP_VDO:
        return step_vdo(s, p, sr);
    default:
        return -EINVAL;
    }
}

/* Steps [from, to) of the plan are one volume's. */
static int apply_volume(const Layout *l, const Plan *plan, size_t from, size_t to, StateRecord *record,
                        const char *record_path, ApplyResult *res) {
    const PlanStep *first = &plan->steps[from];
    ApplyVolumeResult *v = apply_result_add_volume(res, first->volume);
    if (!v)
        return -ENOMEM;
    VolumeSetup s = {
        .layout = l,
        .pool = layout_pool(l, first->role),
        .record = record,
        .record_path = record_path,
        .result = v,
        .name = v->volume,
    };
    int r = 0;

    for (size_t i = from; i < to; i++) {
        const PlanStep *p = &plan->steps[i];
        ApplyStepResult *sr = apply_volume_result_add_step(v, p->kind, p->description);
        if (!sr) {
            r = -ENOMEM;
            break;
        }
        if (!plan_step_kind_is_action(p->kind)) {
            if (p->blocks)
                apply_volume_result_fail(v, APPLY_OUTCOME_REFUSED, 0, "%s", p->description);
            continue; /* a note: the step result carries it */
        }
        int k = run_step(&s, p, sr);
        if (k == -ENOMEM) {
            r = k;
            break;
        }
        if (k < 0) {
            sr->error = k;
            apply_volume_result_fail(v, APPLY_OUTCOME_FAILED, k, "%s: %s", plan_step_kind_to_string(p->kind),
                                     sr->message ?: strerror(-k));
            break;
        }
        if (sr->changed && v->outcome == APPLY_OUTCOME_UNCHANGED)
            v->outcome = APPLY_OUTCOME_CHANGED;
    }
    if (r < 0 || v->outcome == APPLY_OUTCOME_FAILED) {
        /* A never-formatted file that this agent created holds nothing:
         * remove it even if an earlier run made it, so that a failed
         * (or partial) mkfs never leaves a half-made signature behind. */
        VolumeRecord *rec = setup_record(&s);
        if (!s.undo_file && rec && rec->created_file && !rec->formatted && rec->backing_path &&
            backend_is_loop(rec->backend)) {
            s.undo_file = strdup(rec->backing_path);
            if (!s.undo_loop && setup_find_loop(&s, rec->backing_path) >= 0)
                s.undo_loop = strdup(s.loop_node);
            s.undo_record = true;
        }
        volume_setup_rollback(&s);
    }
    volume_setup_done(&s);
    return r;
}

int apply_plan(const Layout *l, const Plan *plan, const Observation *obs, StateRecord *record, const char *record_path,
               ApplyResult **ret) {
    if (!l || !plan || !record || !ret)
        return -EINVAL;
    _cleanup_(apply_result_freep) ApplyResult *res = calloc(1, sizeof(*res));
    if (!res)
        return -ENOMEM;
    int r;

    /* The record's directory must exist before the first save. */
    if (record_path) {
        _cleanup_free_ char *dir = strdup(record_path);
        if (!dir)
            return -ENOMEM;
        (void) mkdir_p(dirname(dir), 0755);
    }

    for (size_t i = 0; i < plan->n_steps;) {
        size_t j = i + 1;
        while (j < plan->n_steps && streq(plan->steps[j].volume, plan->steps[i].volume))
            j++;
        r = apply_volume(l, plan, i, j, record, record_path, res);
        if (r < 0)
            return r;
        i = j;
    }

    /* Volumes the plan had nothing for. */
    for (size_t i = 0; obs && i < obs->n; i++) {
        bool seen = false;
        for (size_t k = 0; k < res->n_volumes && !seen; k++)
            seen = streq(res->volumes[k].volume, obs->volumes[i].name);
        if (!seen && (obs->volumes[i].declared || state_record_find_volume(record, obs->volumes[i].name)))
            if (!apply_result_add_volume(res, obs->volumes[i].name))
                return -ENOMEM;
    }
    *ret = TAKE_PTR(res);
    return 0;
}
