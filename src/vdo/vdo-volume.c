/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "loop.h"
#include "probe.h"
#include "util.h"
#include "vdo-dm.h"
#include "vdo-table.h"
#include "vdo-volume.h"
#include "vdoformat.h"

void vdo_volume_info_done(VdoVolumeInfo *i) {
    if (!i)
        return;
    free(i->dm_name);
    free(i->dm_node);
    free(i->storage_node);
    *i = (VdoVolumeInfo) {};
}

int vdo_volume_dm_name(const char *volume_name, char **ret) {
    if (isempty(volume_name))
        return -EINVAL;
    char *s = NULL;
    if (asprintf(&s, "layoutd-%s", volume_name) < 0)
        return -ENOMEM;
    if (!vdo_dm_name_is_valid(s)) {
        free(s);
        return -EINVAL;
    }
    *ret = s;
    return 0;
}

_printf_(2, 3) static int set_error(char **ret_error, const char *fmt, ...) {
    if (!ret_error)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) >= 0) {
        free(*ret_error);
        *ret_error = s;
    }
    va_end(ap);
    return 0;
}

static int block_device_size(const char *node, uint64_t *ret) {
    LoopInfo li = {};
    /* Loop devices: the size as the kernel sees it now. */
    if (loop_device_get_info(node, &li) >= 0) {
        *ret = li.size;
        loop_info_done(&li);
        return 0;
    }
    _cleanup_close_ int fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return negative_errno();
    off_t end = lseek(fd, 0, SEEK_END);
    if (end < 0)
        return negative_errno();
    *ret = (uint64_t) end;
    return 0;
}

static unsigned logical_block_size(const char *node) {
    LoopInfo li = {};
    unsigned bs = 4096;
    if (loop_device_get_info(node, &li) >= 0) {
        bs = li.logical_block_size;
        loop_info_done(&li);
    }
    /* dm-vdo takes 512 or 4096; a 4K device must not get 512-byte I/O. */
    return bs == 512 ? 512 : 4096;
}

/* What up() made, to undo on failure (newest first). */
typedef struct VdoSetup {
    char *file;               /* created by this call */
    char *loop;               /* attached by this call */
    char *dm_name;            /* created by this call */
} VdoSetup;

static void vdo_setup_undo(VdoSetup *s) {
    _cleanup_free_ char *ignored = NULL;
    if (s->dm_name)
        (void) vdo_dm_remove(s->dm_name, &ignored);
    if (s->loop)
        (void) loop_device_detach(s->loop);
    if (s->file)
        (void) unlink(s->file);
}

static void vdo_setup_done(VdoSetup *s) {
    free(s->file);
    free(s->loop);
    free(s->dm_name);
    *s = (VdoSetup) {};
}

static int create_backing_file(const char *path, uint64_t size) {
    _cleanup_free_ char *dir = strdup(path);
    if (!dir)
        return -ENOMEM;
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        int r = mkdir_p(dir, 0755);
        if (r < 0)
            return r;
    }
    _cleanup_close_ int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return negative_errno();
    if (ftruncate(fd, (off_t) size) < 0) {
        int r = negative_errno();
        (void) unlink(path);
        return r;
    }
    return 0;
}

int vdo_volume_format_storage(const Pool *pool, const char *storage_node, char **ret_error) {
    if (!pool || !pool->has_vdo || isempty(storage_node))
        return -EINVAL;
    VdoFormatOptions fo = { .logical_size = pool->vdo.logical_size };
    _cleanup_free_ char *out = NULL;
    int r = vdoformat_run(storage_node, &fo, NULL, &out);
    if (r == -ENOENT)
        return set_error(ret_error, "vdoformat not found: install the 'vdo' package"), r;
    if (r == -EPROTONOSUPPORT)
        return set_error(ret_error, "vdoformat is too old for the dm-vdo target (need 8.x)"), r;
    if (r < 0)
        return set_error(ret_error, "vdoformat %s failed: %s", storage_node, out ?: strerror(-r)), r;
    return 0;
}

/* The dm-vdo target on info->storage_node (its size in info). */
static int create_target(const Pool *pool, VdoVolumeInfo *info, char **ret_error) {
    VdoTable t = {};
    int r = vdo_table_from_pool(pool, info->storage_node, info->storage_size, logical_block_size(info->storage_node),
                                &t);
    if (r < 0)
        return set_error(ret_error, "invalid vdo settings for %s", info->dm_name), r;

    _cleanup_free_ char *err = NULL;
    r = vdo_dm_create(info->dm_name, &t, &info->dm_node, &info->devno, &err);
    if (r == -EIO)
        /* The kernel's message is in dmesg only; the usual cause: */
        return set_error(ret_error,
                         "%s (if the backing storage was resized while the volume was down, its size no longer "
                         "matches the VDO super block; see dmesg)",
                         err ?: "cannot create the vdo target"),
               r;
    if (r < 0)
        return set_error(ret_error, "%s", err ?: strerror(-r)), r;
    info->created = true;
    return 0;
}

int vdo_volume_create(const Pool *pool, const char *volume_name, const char *storage_node, VdoVolumeInfo *ret,
                      char **ret_error) {
    if (!pool || !ret || !pool->has_vdo || isempty(storage_node))
        return -EINVAL;
    VdoVolumeInfo info = {};
    _cleanup_free_ char *why = NULL;
    int r = vdo_volume_dm_name(volume_name, &info.dm_name);
    if (r < 0)
        return set_error(ret_error, "invalid volume name '%s'", volume_name), r;
    r = vdo_dm_check_support(NULL, &why);
    if (r < 0) {
        set_error(ret_error, "%s", why ?: VDO_DM_UNSUPPORTED_MESSAGE);
        goto fail;
    }
    if (!(info.storage_node = strdup(storage_node))) {
        r = -ENOMEM;
        goto fail;
    }
    r = block_device_size(storage_node, &info.storage_size);
    if (r < 0) {
        set_error(ret_error, "cannot read the size of %s: %s", storage_node, strerror(-r));
        goto fail;
    }
    info.logical_size = pool->vdo.logical_size;
    dev_t devno;
    if (vdo_dm_get_devno(info.dm_name, &devno) >= 0) {
        info.devno = devno;
        if (asprintf(&info.dm_node, "/dev/mapper/%s", info.dm_name) < 0) {
            r = -ENOMEM;
            goto fail;
        }
    } else {
        r = create_target(pool, &info, ret_error);
        if (r < 0)
            goto fail;
    }
    *ret = info;
    return 0;
fail:
    vdo_volume_info_done(&info);
    return r;
}

int vdo_volume_dm_node(const char *volume_name, char **ret_node, dev_t *ret_devno) {
    _cleanup_free_ char *name = NULL, *node = NULL;
    struct stat st;
    int r = vdo_volume_dm_name(volume_name, &name);
    if (r < 0)
        return r;
    if (asprintf(&node, "/dev/mapper/%s", name) < 0)
        return -ENOMEM;
    if (stat(node, &st) < 0)
        return negative_errno();
    if (!S_ISBLK(st.st_mode))
        return -ENOTBLK;
    if (ret_devno)
        *ret_devno = st.st_rdev;
    if (ret_node)
        *ret_node = TAKE_PTR(node);
    return 0;
}

static int up_locked(const Pool *pool, const char *volume_name, const char *backing_path,
                     const VdoVolumeUpOptions *opts, VdoSetup *undo, VdoVolumeInfo *info, char **ret_error) {
    int r;

    r = vdo_volume_dm_name(volume_name, &info->dm_name);
    if (r < 0)
        return set_error(ret_error, "invalid volume name '%s'", volume_name), r;

    /* Up front: without dm-vdo nothing below can work, and nothing should
     * be created (a backing file, a loop device) for a volume that cannot
     * come up. */
    _cleanup_free_ char *why = NULL;
    r = vdo_dm_check_support(NULL, &why);
    if (r < 0) {
        set_error(ret_error, "%s", why ?: VDO_DM_UNSUPPORTED_MESSAGE);
        return r;
    }

    /* Storage: a block device named by the pool, or the loop device of the
     * backing file. */
    if (pool->vdo.device) {
        struct stat st;
        if (stat(pool->vdo.device, &st) < 0) {
            r = negative_errno();
            set_error(ret_error, "cannot use %s: %s", pool->vdo.device, strerror(-r));
            return r;
        }
        if (!S_ISBLK(st.st_mode))
            return set_error(ret_error, "%s is not a block device", pool->vdo.device), -ENOTBLK;
        info->storage_node = strdup(pool->vdo.device);
        if (!info->storage_node)
            return -ENOMEM;
    } else {
        if (isempty(backing_path))
            return set_error(ret_error, "no backing file"), -EINVAL;
        if (access(backing_path, F_OK) < 0) {
            if (errno != ENOENT) {
                r = negative_errno();
                set_error(ret_error, "cannot access %s: %s", backing_path, strerror(-r));
                return r;
            }
            r = create_backing_file(backing_path, pool->volume_size);
            if (r < 0)
                return set_error(ret_error, "cannot create %s: %s", backing_path, strerror(-r)), r;
            undo->file = strdup(backing_path);
            if (!undo->file)
                return -ENOMEM;
            info->created_file = true;
        }
        LoopInfo li = {};
        r = loop_device_find_by_backing_file(backing_path, &li);
        if (r == -ENOENT) {
            LoopAttachOptions lo = { .direct_io = pool->direct_io };
            bool fallback = false;
            r = loop_device_attach(backing_path, &lo, &li, &fallback);
            if (r < 0)
                return set_error(ret_error, "cannot attach %s: %s", backing_path, strerror(-r)), r;
            info->dio_fallback = fallback;
            info->attached = true;
            undo->loop = strdup(li.node);
            if (!undo->loop) {
                loop_info_done(&li);
                return -ENOMEM;
            }
        } else if (r < 0)
            return set_error(ret_error, "cannot look for the loop device of %s: %s", backing_path, strerror(-r)), r;
        info->direct_io = li.direct_io;
        info->storage_node = strdup(li.node);
        loop_info_done(&li);
        if (!info->storage_node)
            return -ENOMEM;
    }

    r = block_device_size(info->storage_node, &info->storage_size);
    if (r < 0)
        return set_error(ret_error, "cannot read the size of %s: %s", info->storage_node, strerror(-r)), r;
    info->logical_size = pool->vdo.logical_size;

    /* Already up (agent restart, second apply): adopt it. */
    dev_t devno;
    if (vdo_dm_get_devno(info->dm_name, &devno) >= 0) {
        info->devno = devno;
        if (asprintf(&info->dm_node, "/dev/mapper/%s", info->dm_name) < 0)
            return -ENOMEM;
        return 0;
    }

    ProbeResult pr = {};
    r = probe_path(info->storage_node, &pr);
    if (r < 0)
        return set_error(ret_error, "cannot probe %s: %s", info->storage_node, strerror(-r)), r;
    bool blank = pr.blank, is_vdo = pr.type && streq(pr.type, "vdo");
    _cleanup_free_ char *type = pr.type ? strdup(pr.type) : NULL;
    probe_result_done(&pr);

    if (blank) {
        if (!info->created_file && !(opts && opts->may_format))
            return set_error(ret_error,
                             "%s is blank but this agent did not create it: not formatting it", info->storage_node),
                   -EEXIST;
        r = vdo_volume_format_storage(pool, info->storage_node, ret_error);
        if (r < 0)
            return r;
        info->formatted = true;
    } else if (!is_vdo)
        return set_error(ret_error, "%s holds a %s signature: not formatting over it", info->storage_node,
                         type ?: "unknown"),
               -EEXIST;

    r = create_target(pool, info, ret_error);
    if (r < 0)
        return r;
    undo->dm_name = strdup(info->dm_name);
    if (!undo->dm_name)
        return -ENOMEM;
    info->created = true;
    return 0;
}

int vdo_volume_up(const Pool *pool, const char *volume_name, const char *backing_path,
                  const VdoVolumeUpOptions *opts, VdoVolumeInfo *ret, char **ret_error) {
    if (!pool || !ret || pool->backend != BACKEND_VDO_XFS || !pool->has_vdo)
        return -EINVAL;
    VdoSetup undo = {};
    VdoVolumeInfo info = {};
    int r = up_locked(pool, volume_name, backing_path, opts, &undo, &info, ret_error);
    if (r < 0) {
        vdo_setup_undo(&undo);
        vdo_setup_done(&undo);
        vdo_volume_info_done(&info);
        return r;
    }
    vdo_setup_done(&undo);
    *ret = info;
    return 0;
}

int vdo_volume_down(const char *volume_name, const char *backing_path, char **ret_error) {
    _cleanup_free_ char *name = NULL, *err = NULL;
    int r = vdo_volume_dm_name(volume_name, &name);
    if (r < 0)
        return r;
    r = vdo_dm_remove(name, &err);
    if (r < 0 && r != -ENXIO) {
        set_error(ret_error, "%s", err ?: strerror(-r));
        return r;
    }
    if (isempty(backing_path))
        return 0;
    struct stat st;
    if (stat(backing_path, &st) < 0 || !S_ISREG(st.st_mode))
        return 0; /* a block device named by the pool: nothing to detach */
    LoopInfo li = {};
    r = loop_device_find_by_backing_file(backing_path, &li);
    if (r == -ENOENT)
        return 0;
    if (r < 0)
        return r;
    r = loop_device_detach(li.node);
    if (r < 0 && r != -ENXIO)
        set_error(ret_error, "cannot detach %s: %s", li.node, strerror(-r));
    loop_info_done(&li);
    return r == -ENXIO ? 0 : r;
}

int vdo_volume_stats(const char *volume_name, VdoStats *ret, char **ret_error) {
    _cleanup_free_ char *name = NULL;
    int r = vdo_volume_dm_name(volume_name, &name);
    if (r < 0)
        return r;
    return vdo_dm_get_stats(name, ret, ret_error);
}

int vdo_volume_grow(const Pool *pool, const char *volume_name, const char *backing_path, uint64_t new_logical_size,
                    bool *ret_changed, char **ret_error) {
    if (!pool || pool->backend != BACKEND_VDO_XFS || !pool->has_vdo)
        return -EINVAL;
    _cleanup_free_ char *name = NULL, *err = NULL;
    int r = vdo_volume_dm_name(volume_name, &name);
    if (r < 0)
        return r;
    VdoStats st = {};
    r = vdo_dm_get_stats(name, &st, &err);
    if (r < 0)
        return set_error(ret_error, "%s", err ?: strerror(-r)), r;
    if (!st.has_message)
        return set_error(ret_error, "cannot read the vdo statistics of %s", name), -EIO;

    _cleanup_free_ char *storage = NULL;
    if (pool->vdo.device)
        storage = strdup(pool->vdo.device);
    else {
        LoopInfo li = {};
        r = loop_device_find_by_backing_file(backing_path, &li);
        if (r < 0)
            return set_error(ret_error, "no loop device for %s", backing_path), r;
        storage = strdup(li.node);
        loop_info_done(&li);
    }
    if (!storage)
        return -ENOMEM;
    uint64_t storage_size;
    r = block_device_size(storage, &storage_size);
    if (r < 0)
        return r;

    uint64_t logical = MAX(st.logical_blocks * VDO_BLOCK_SIZE, new_logical_size);
    uint64_t physical = st.physical_blocks;
    if (storage_size / VDO_BLOCK_SIZE >= physical + VDO_PHYSICAL_GROW_MIN_BLOCKS)
        physical = storage_size / VDO_BLOCK_SIZE;
    if (logical == st.logical_blocks * VDO_BLOCK_SIZE && physical == st.physical_blocks) {
        if (ret_changed)
            *ret_changed = false;
        return 0;
    }

    VdoTable t = {};
    r = vdo_table_from_pool(pool, storage, physical * VDO_BLOCK_SIZE, logical_block_size(storage), &t);
    if (r < 0)
        return r;
    t.logical_size = ROUND_UP(logical, VDO_BLOCK_SIZE);
    free(err);
    err = NULL;
    r = vdo_dm_reload(name, &t, &err);
    if (r < 0)
        return set_error(ret_error, "%s", err ?: strerror(-r)), r;
    if (ret_changed)
        *ret_changed = true;
    return 0;
}

int vdo_fstrim_argv(const char *mountpoint, char ***ret) {
    if (isempty(mountpoint) || mountpoint[0] != '/')
        return -EINVAL;
    _cleanup_strv_free_ char **argv = NULL;
    if (strv_extend(&argv, "fstrim") < 0 || strv_extend(&argv, "--verbose") < 0 ||
        strv_extend(&argv, mountpoint) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(argv);
    return 0;
}

int vdo_mount_options_check(const char *options, const char **ret_reason) {
    if (isempty(options))
        return 0;
    const char *p = options;
    while (*p) {
        size_t n = strcspn(p, ",");
        if (n == strlen("discard") && strncmp(p, "discard", n) == 0) {
            if (ret_reason)
                *ret_reason = "mount option 'discard' on XFS over VDO can stall all I/O on deletes "
                              "(dm-vdo/vdo#57); layoutd trims periodically instead (vdo.fstrim_interval)";
            return -EINVAL;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}
