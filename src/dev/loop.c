/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <linux/loop.h>
#include <linux/major.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include "dev-util.h"
#include "loop.h"
#include "util.h"

/* How often attach retries the GET_FREE/CONFIGURE race (systemd uses 64;
 * rawfile-localpv needed ~20 under contention). With 10-250 ms jitter
 * that bounds the worst case at ~16 s. */
#define LOOP_ATTACH_TRIES 64u
/* Detach only waits for transient openers (udev probes), ~2 s at most. */
#define LOOP_DETACH_TRIES 16u

void loop_info_done(LoopInfo *i) {
    if (!i)
        return;
    free(i->node);
    free(i->backing_file);
    *i = (LoopInfo) {};
}

static void loop_info_donep(LoopInfo *i) {
    loop_info_done(i);
}

/* Fills *ret from an open loop device fd, everything read back from the
 * kernel. -ENXIO: the device exists but is not bound to a file. */
static int loop_info_from_fd(int fd, const char *node, LoopInfo *ret) {
    struct stat st;
    if (fstat(fd, &st) < 0)
        return negative_errno();
    if (!S_ISBLK(st.st_mode))
        return -ENOTBLK;
    if (major(st.st_rdev) != LOOP_MAJOR)
        return -ENOTTY; /* a block device, but not a loop device */

    struct loop_info64 li = {};
    if (ioctl(fd, LOOP_GET_STATUS64, &li) < 0)
        return negative_errno(); /* ENXIO: not bound */

    _cleanup_(loop_info_donep) LoopInfo info = {
        .nr = (int) li.lo_number,
        .devno = st.st_rdev,
        .autoclear = li.lo_flags & LO_FLAGS_AUTOCLEAR,
        .read_only = li.lo_flags & LO_FLAGS_READ_ONLY,
    };

    if (node)
        info.node = strdup(node);
    else if (asprintf(&info.node, "/dev/loop%" PRIu32, li.lo_number) < 0)
        info.node = NULL;
    if (!info.node)
        return -ENOMEM;

    /* The full path lives in sysfs; lo_file_name is only the first 63
     * bytes of whatever the attacher passed (and may be empty). */
    _cleanup_free_ char *p = NULL;
    int r = dev_sysfs_path(st.st_rdev, "loop/backing_file", &p);
    if (r < 0)
        return r;
    if (read_one_line_file(p, &info.backing_file) < 0) {
        info.backing_file = strndup((const char *) li.lo_file_name, LO_NAME_SIZE);
        if (!info.backing_file)
            return -ENOMEM;
    }

    /* loop/dio is what the kernel actually does (lo_flags after
     * loop_update_dio()); LO_FLAGS_DIRECT_IO in the status is the same bit,
     * used when sysfs is not mounted. */
    free(p);
    p = NULL;
    r = dev_sysfs_path(st.st_rdev, "loop/dio", &p);
    if (r < 0)
        return r;
    uint64_t v;
    if (dev_read_u64_file(p, &v) >= 0)
        info.direct_io = v == 1;
    else
        info.direct_io = li.lo_flags & LO_FLAGS_DIRECT_IO;

    int ssz = 0;
    if (ioctl(fd, BLKSSZGET, &ssz) < 0)
        return negative_errno();
    info.logical_block_size = (unsigned) ssz;

    free(p);
    p = NULL;
    r = dev_sysfs_path(st.st_rdev, "size", &p);
    if (r < 0)
        return r;
    if (dev_read_u64_file(p, &v) >= 0)
        info.size = v * 512;
    else if (ioctl(fd, BLKGETSIZE64, &info.size) < 0)
        return negative_errno();

    *ret = info;
    info = (LoopInfo) {};
    return 0;
}

static int loop_open(const char *node, int flags) {
    /* O_NONBLOCK: never wait on a removable-media style open. */
    int fd = open(node, flags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    return fd < 0 ? negative_errno() : fd;
}

int loop_device_get_info(const char *node, LoopInfo *ret) {
    if (isempty(node) || !ret)
        return -EINVAL;
    /* O_RDONLY on purpose: closing a writable fd makes udev re-probe the
     * device (inotify IN_CLOSE_WRITE), and reading status must not. */
    _cleanup_close_ int fd = loop_open(node, O_RDONLY);
    if (fd < 0)
        return fd;
    return loop_info_from_fd(fd, node, ret);
}

/* Logical block size of the block device holding st_dev, via sysfs
 * (queue/ lives on the whole disk, so a partition looks one level up).
 * -ENOENT when st_dev is not a block device (tmpfs, overlayfs, btrfs's
 * anonymous devices). */
static int backing_bdev_logical_block_size(dev_t dev, unsigned *ret) {
    if (major(dev) == 0)
        return -ENOENT;
    static const char *const attrs[] = { "queue/logical_block_size", "../queue/logical_block_size" };
    for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
        _cleanup_free_ char *p = NULL;
        int r = dev_sysfs_path(dev, attrs[i], &p);
        if (r < 0)
            return r;
        uint64_t v;
        if (dev_read_u64_file(p, &v) >= 0 && v >= 512 && v <= 65536) {
            *ret = (unsigned) v;
            return 0;
        }
    }
    return -ENOENT;
}

int loop_choose_block_size(const char *path, bool direct_io, unsigned *ret) {
    if (isempty(path) || !ret)
        return -EINVAL;
    struct stat st;
    if (stat(path, &st) < 0)
        return negative_errno();

    unsigned bs = 512;
    if (S_ISBLK(st.st_mode)) {
        /* A block device backing: its own logical sector is the floor. */
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
        int ssz = 0;
        if (fd < 0)
            return negative_errno();
        if (ioctl(fd, BLKSSZGET, &ssz) < 0)
            return negative_errno();
        *ret = MAX(bs, (unsigned) ssz);
        return 0;
    }
    if (!S_ISREG(st.st_mode))
        return -EINVAL;

    /* Never below the logical sector of the disk under the file: a 512 B
     * loop on a 4Kn disk cannot do direct I/O (the kernel silently drops
     * it) and turns every write into read-modify-write (rawfile-localpv
     * #39, which ran like that for months without noticing). */
    unsigned lbs;
    if (backing_bdev_logical_block_size(st.st_dev, &lbs) >= 0)
        bs = MAX(bs, lbs);

    /* The filesystem's own direct-I/O alignment (statx STATX_DIOALIGN,
     * 6.1+) is exactly what the loop driver checks before it enables DIO
     * (lo_min_dio_size), so honour it too; it covers filesystems without
     * a block device (tmpfs, network fs). */
    struct statx sx = {};
    if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) >= 0 && (sx.stx_mask & STATX_DIOALIGN) &&
        sx.stx_dio_offset_align >= 512 && sx.stx_dio_offset_align <= 65536)
        bs = MAX(bs, sx.stx_dio_offset_align);

    /* With direct I/O on a 4 KiB-block filesystem, a 4 KiB loop sector
     * makes the filesystem on top issue block-aligned I/O only, so the
     * backing fs never has to do sub-block (serialised, zeroing) direct
     * writes. Buffered loops go through the page cache, which absorbs it. */
    struct statvfs sv;
    if (direct_io && statvfs(path, &sv) >= 0 && sv.f_bsize >= 4096)
        bs = MAX(bs, 4096u);

    *ret = bs;
    return 0;
}

/* Opens the backing file; with dio, O_DIRECT as systemd does: the loop
 * driver then turns LO_FLAGS_DIRECT_IO on by itself and the backing fd
 * never holds page cache that would alias the loop's direct I/O. */
static int open_backing(const char *path, bool dio) {
    int fd = open(path, O_RDWR | O_CLOEXEC | O_NOCTTY | (dio ? O_DIRECT : 0));
    return fd < 0 ? negative_errno() : fd;
}

/* Configures /dev/loop<nr> with backing_fd. Returns -EBUSY when someone
 * else got the device first (caller retries with another one), -ENOANO
 * when direct I/O was asked but is off after setup (the device has been
 * released again; caller falls back to buffered), -errno, 0 with *ret. */
static int loop_configure_nr(int nr, int backing_fd, const char *path, unsigned bs, bool dio,
                             bool autoclear, LoopInfo *ret) {
    _cleanup_free_ char *node = NULL;
    if (asprintf(&node, "/dev/loop%d", nr) < 0)
        return -ENOMEM;

    /* O_RDWR: LOOP_CONFIGURE of a writable mapping needs it. */
    _cleanup_close_ int fd = loop_open(node, O_RDWR);
    if (fd < 0)
        return fd == -ENOENT || fd == -ENXIO ? -EBUSY : fd; /* removed under us */

    /* The BSD lock: udev (and systemd tools) take LOCK_SH|LOCK_NB before
     * probing and skip a locked device, so nobody probes it half-made; a
     * concurrent attacher that locks too (systemd's loop-util) sees it
     * taken. Closing this fd at the end both releases the lock and, being
     * a close after write-open, triggers udev's re-probe of the finished
     * device. Non-blocking: a device locked by someone else is not free. */
    if (flock(fd, LOCK_EX | LOCK_NB) < 0)
        return errno == EWOULDBLOCK ? -EBUSY : negative_errno();

    /* GET_FREE can hand the same device to two callers; one that does not
     * lock may already have bound it. */
    struct loop_info64 li = {};
    if (ioctl(fd, LOOP_GET_STATUS64, &li) >= 0)
        return -EBUSY;
    if (errno != ENXIO)
        return negative_errno();

    struct loop_config cfg = {
        .fd = (uint32_t) backing_fd,
        .block_size = bs,
        .info.lo_flags = (dio ? LO_FLAGS_DIRECT_IO : 0) | (autoclear ? LO_FLAGS_AUTOCLEAR : 0),
    };
    memcpy(cfg.info.lo_file_name, path, MIN(strlen(path), (size_t) LO_NAME_SIZE - 1));
    if (ioctl(fd, LOOP_CONFIGURE, &cfg) < 0)
        return negative_errno(); /* EBUSY: bound by someone between our check and here */

    /* From here the device is ours: any failure must release it again.
     * We are the only opener (under our lock), so LOOP_CLR_FD takes effect
     * when fd is closed, synchronously. */
    _cleanup_(loop_info_donep) LoopInfo info = {};
    int r = loop_info_from_fd(fd, node, &info);
    if (r < 0)
        goto undo;

    /* Verify, never assume. The kernel silently drops DIO when the backing
     * fs cannot do it at this block size (loop_update_dio); systemd
     * #30064 learnt to read it back. */
    if (dio && !info.direct_io) {
        r = -ENOANO;
        goto undo;
    }
    if (info.logical_block_size != bs) {
        r = -EIO; /* LOOP_CONFIGURE did not honour block_size: refuse a wrong device */
        goto undo;
    }

    *ret = info;
    info = (LoopInfo) {};
    return 0;

undo:
    (void) ioctl(fd, LOOP_CLR_FD);
    return r;
}

int loop_device_attach(const char *path, const LoopAttachOptions *opts, LoopInfo *ret, bool *ret_dio_fallback) {
    static const LoopAttachOptions defaults = {};
    int r;

    if (isempty(path) || !ret)
        return -EINVAL;
    if (!opts)
        opts = &defaults;

    bool dio = opts->direct_io, fallback = false;
    unsigned bs = opts->block_size;
    if (bs == 0) {
        r = loop_choose_block_size(path, dio, &bs);
        if (r < 0)
            return r;
    } else if (bs < 512 || bs > 65536 || (bs & (bs - 1)) != 0)
        return -EINVAL;

    _cleanup_close_ int backing_fd = open_backing(path, dio);
    if (backing_fd == -EINVAL && dio) {
        /* The filesystem refuses O_DIRECT (ramfs, some FUSE and network
         * filesystems): no direct I/O is possible, say so. */
        fallback = true;
        dio = false;
        backing_fd = open_backing(path, false);
    }
    if (backing_fd < 0)
        return backing_fd;

    struct stat st;
    if (fstat(backing_fd, &st) < 0)
        return negative_errno();
    if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        return -EINVAL;

    _cleanup_close_ int control = open("/dev/loop-control", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (control < 0)
        /* No loop driver at all: "no loop device could be had". */
        return errno == ENOENT ? -ENXIO : negative_errno();

    for (unsigned attempt = 0;; attempt++) {
        if (attempt >= LOOP_ATTACH_TRIES)
            return -EBUSY;

        int nr = ioctl(control, LOOP_CTL_GET_FREE);
        if (nr < 0) {
            /* All devices in use and the driver may not create more
             * (max_loop= given, or out of minors): nothing was made. */
            if (errno == ENOMEM)
                return -ENOMEM;
            return -ENXIO;
        }

        r = loop_configure_nr(nr, backing_fd, path, bs, dio, opts->autoclear, ret);
        if (r >= 0)
            break;

        if (dio && (r == -ENOANO || r == -EINVAL)) {
            /* DIO refused (EINVAL from LOOP_CONFIGURE) or silently not
             * taken: start over buffered, with a backing fd that is not
             * O_DIRECT (else the driver would force DIO on again). */
            fallback = true;
            dio = false;
            safe_close(backing_fd);
            backing_fd = open_backing(path, false);
            if (backing_fd < 0)
                return backing_fd;
            continue;
        }
        if (r == -EBUSY || r == -EAGAIN) {
            dev_backoff_jitter();
            continue;
        }
        return r;
    }

    if (ret_dio_fallback)
        *ret_dio_fallback = fallback;
    return 0;
}

int loop_device_detach(const char *node) {
    if (isempty(node))
        return -EINVAL;

    /* Whether autoclear was on before our first LOOP_CLR_FD, which arms
     * it: later attempts must not mistake our own arming for the user's. */
    int had_autoclear = -1;

    for (unsigned attempt = 0;; attempt++) {
        /* O_EXCL on a block device fails with EBUSY while a filesystem is
         * mounted on it or device-mapper holds it: that is "in use", and
         * detaching would only arm autoclear behind the user's back. */
        _cleanup_close_ int fd = loop_open(node, O_RDONLY | O_EXCL);
        if (fd == -EBUSY) {
            if (attempt + 1 >= LOOP_DETACH_TRIES)
                return -EBUSY;
            dev_backoff_jitter();
            continue;
        }
        if (fd < 0)
            return fd;

        struct loop_info64 before = {};
        if (ioctl(fd, LOOP_GET_STATUS64, &before) < 0) {
            /* ENXIO: not attached. On a retry that is our own earlier
             * LOOP_CLR_FD taking effect: with udevd running, its probe held
             * the device open, so the clear only armed autoclear, and the
             * device was released when udev closed it. */
            if (errno == ENXIO && attempt > 0)
                return 0;
            return negative_errno();
        }
        if (had_autoclear < 0)
            had_autoclear = !!(before.lo_flags & LO_FLAGS_AUTOCLEAR);

        if (ioctl(fd, LOOP_CLR_FD) < 0 && errno != EBUSY)
            return negative_errno();
        fd = safe_close(fd);

        /* Since Linux 5.x LOOP_CLR_FD does not fail when others have the
         * device open: it arms autoclear and the device is released when
         * the last opener closes (synchronously in release). So check that
         * it is really gone. Someone else may already have reused the
         * number: then it is no longer "our" file. */
        _cleanup_close_ int check = loop_open(node, O_RDONLY);
        if (check < 0)
            return 0; /* device removed altogether */
        struct loop_info64 now = {};
        if (ioctl(check, LOOP_GET_STATUS64, &now) < 0)
            return errno == ENXIO ? 0 : negative_errno();
        if (now.lo_device != before.lo_device || now.lo_inode != before.lo_inode)
            return 0;

        if (attempt + 1 >= LOOP_DETACH_TRIES) {
            /* Still held open by someone: give up, and do not leave the
             * autoclear we armed behind if it was not there before. */
            if (!had_autoclear) {
                now.lo_flags &= ~LO_FLAGS_AUTOCLEAR;
                (void) ioctl(check, LOOP_SET_STATUS64, &now);
            }
            return -EBUSY;
        }
        check = safe_close(check);
        dev_backoff_jitter();
    }
}

int loop_device_refresh_size(const char *node, uint64_t *ret_size) {
    if (isempty(node))
        return -EINVAL;
    /* Read-only open: root may issue LOOP_SET_CAPACITY on it, and the
     * kernel sends the change uevent itself. */
    _cleanup_close_ int fd = loop_open(node, O_RDONLY);
    if (fd < 0)
        return fd;
    struct stat st;
    if (fstat(fd, &st) < 0)
        return negative_errno();
    if (!S_ISBLK(st.st_mode) || major(st.st_rdev) != LOOP_MAJOR)
        return -ENOTTY;
    if (ioctl(fd, LOOP_SET_CAPACITY, 0) < 0)
        return negative_errno();

    uint64_t size;
    _cleanup_free_ char *p = NULL;
    int r = dev_sysfs_path(st.st_rdev, "size", &p);
    if (r < 0)
        return r;
    if (dev_read_u64_file(p, &size) >= 0)
        size *= 512;
    else if (ioctl(fd, BLKGETSIZE64, &size) < 0)
        return negative_errno();
    if (ret_size)
        *ret_size = size;
    return 0;
}

/* Calls f for each bound loop device (those that have loop/backing_file
 * in sysfs), in directory order. f returns >0 to stop, <0 to fail. */
static int foreach_bound_loop(int (*f)(const char *name, const char *backing, void *userdata), void *userdata) {
    DIR *d = opendir("/sys/block");
    if (!d)
        return negative_errno();
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, "loop", 4) != 0 || !de->d_name[4])
            continue;
        _cleanup_free_ char *p = NULL, *backing = NULL;
        if (asprintf(&p, "/sys/block/%s/loop/backing_file", de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        if (read_one_line_file(p, &backing) < 0)
            continue; /* not bound (or went away meanwhile) */
        r = f(de->d_name, backing, userdata);
        if (r != 0)
            break;
    }
    closedir(d);
    return r < 0 ? r : 0;
}

typedef struct FindCtx {
    struct stat st;
    int best_nr;
    char *best_node;
} FindCtx;

static int find_cb(const char *name, const char *backing, void *userdata) {
    FindCtx *c = userdata;
    _cleanup_free_ char *node = NULL;
    if (asprintf(&node, "/dev/%s", name) < 0)
        return -ENOMEM;
    /* Compare inodes, not paths: the sysfs path is the name at attach
     * time, and says " (deleted)" or the old name after a rename. */
    _cleanup_close_ int fd = loop_open(node, O_RDONLY);
    if (fd < 0)
        return 0;
    struct loop_info64 li = {};
    if (ioctl(fd, LOOP_GET_STATUS64, &li) < 0)
        return 0;
    if (major((dev_t) li.lo_device) != major(c->st.st_dev) ||
        minor((dev_t) li.lo_device) != minor(c->st.st_dev) || li.lo_inode != c->st.st_ino)
        return 0;
    /* The same file may be attached twice: report the lowest number, so
     * repeated calls agree. */
    if (c->best_node && (int) li.lo_number >= c->best_nr)
        return 0;
    free(c->best_node);
    c->best_node = TAKE_PTR(node);
    c->best_nr = (int) li.lo_number;
    return 0;
}

int loop_device_find_by_backing_file(const char *path, LoopInfo *ret) {
    if (isempty(path) || !ret)
        return -EINVAL;
    FindCtx c = {};
    if (stat(path, &c.st) < 0)
        return negative_errno();
    int r = foreach_bound_loop(find_cb, &c);
    _cleanup_free_ char *node = c.best_node;
    if (r < 0)
        return r;
    if (!node)
        return -ENOENT;
    r = loop_device_get_info(node, ret);
    return r == -ENXIO ? -ENOENT : r; /* detached in between */
}

typedef struct BelowCtx {
    const char *dir;
    size_t len;
    char **list;
} BelowCtx;

static int below_cb(const char *name, const char *backing, void *userdata) {
    BelowCtx *c = userdata;
    if (strncmp(backing, c->dir, c->len) != 0 || backing[c->len] != '/')
        return 0;
    _cleanup_free_ char *node = NULL;
    if (asprintf(&node, "/dev/%s", name) < 0)
        return -ENOMEM;
    return strv_extend(&c->list, node);
}

int loop_device_list_below(const char *dir, char ***ret) {
    if (isempty(dir) || dir[0] != '/' || !ret)
        return -EINVAL;
    BelowCtx c = { .dir = dir, .len = strlen(dir) };
    while (c.len > 1 && dir[c.len - 1] == '/')
        c.len--;
    int r = foreach_bound_loop(below_cb, &c);
    if (r < 0) {
        strv_free(c.list);
        return r;
    }
    if (!c.list) {
        c.list = calloc(1, sizeof(char *));
        if (!c.list)
            return -ENOMEM;
    }
    *ret = c.list;
    return 0;
}
