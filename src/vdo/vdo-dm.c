/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <libdevmapper.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "mkfs.h"
#include "udev.h"
#include "util.h"
#include "vdo-dm.h"

#define UDEV_TIMEOUT_USEC (30 * USEC_PER_SEC)

/* libdm reports errors through a log function; the default prints to
 * stderr, which library code must not do. Keep the last error instead. */
static _Thread_local char last_error[512];

_printf_(5, 6) static void capture_log(int level, const char *file, int line, int dm_errno_or_class, const char *f, ...) {
    /* _LOG_ERR is 3 in libdm's numbering; warnings and debug are dropped. */
    if ((level & 7) > 3)
        return;
    va_list ap;
    va_start(ap, f);
    vsnprintf(last_error, sizeof(last_error), f, ap);
    va_end(ap);
}

static void dm_setup(void) {
    static bool done = false;
    if (!done) {
        dm_log_with_errno_init(capture_log);
        done = true;
    }
    last_error[0] = 0;
    /* Decided per call: udevd may start or stop while we run. */
    dm_udev_set_sync_support(udev_is_running());
}

static int fail(int r, const char *what, char **ret_error) {
    if (ret_error) {
        char *s = NULL;
        if (asprintf(&s, "%s: %s", what, last_error[0] ? last_error : strerror(-r)) >= 0)
            *ret_error = s;
    }
    return r;
}

/* libdm says 0 = failure; the ioctl's errno is kept in the task. */
static int task_errno(struct dm_task *t) {
    int e = t ? dm_task_get_errno(t) : 0;
    return e > 0 ? -e : -EIO;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct dm_task *, dm_task_destroy)
#define _cleanup_dm_task_ _cleanup_(dm_task_destroyp)

bool vdo_dm_name_is_valid(const char *name) {
    if (isempty(name) || strlen(name) >= 128 /* DM_NAME_LEN, linux/dm-ioctl.h */ || streq(name, ".") || streq(name, ".."))
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("_.+-", *p)))
            return false;
    return true;
}

static bool kernel_has_device_mapper(void) {
    if (access("/dev/mapper/control", F_OK) == 0)
        return true;
    _cleanup_free_ char *misc = NULL;
    if (read_full_file("/proc/misc", &misc, NULL) < 0)
        return false;
    return strstr(misc, " device-mapper\n") != NULL;
}

/* The start of every call on a named device: the name checked, the
 * kernel asked (never libdm first: it would try to mknod the control
 * node), libdm set up. Returns: -EINVAL, -ENXIO (no device-mapper), 0. */
static int dm_begin(const char *name) {
    if (!vdo_dm_name_is_valid(name))
        return -EINVAL;
    if (!kernel_has_device_mapper())
        return -ENXIO;
    dm_setup();
    return 0;
}

/* A task of `type` on the device `name` (valid: dm_begin()), or NULL when
 * out of memory. */
static struct dm_task *named_task(int type, const char *name) {
    struct dm_task *t = dm_task_create(type);
    if (t && !dm_task_set_name(t, name)) {
        dm_task_destroy(t);
        return NULL;
    }
    return t;
}

static int find_vdo_target(unsigned ret_version[3]) {
    _cleanup_dm_task_ struct dm_task *t = dm_task_create(DM_DEVICE_LIST_VERSIONS);
    if (!t)
        return -ENOMEM;
    if (!dm_task_run(t))
        return task_errno(t);
    struct dm_versions *v = dm_task_get_versions(t), *last;
    if (!v)
        return -ENOENT;
    do {
        last = v;
        if (streq(v->name, "vdo")) {
            if (ret_version)
                memcpy(ret_version, v->version, sizeof(v->version));
            return 0;
        }
        v = (struct dm_versions *) ((char *) v + v->next);
    } while (last != v);
    return -ENOENT;
}

int vdo_dm_check_support(unsigned ret_version[3], char **ret_error) {
    last_error[0] = 0;
    if (!kernel_has_device_mapper()) {
        /* Do not even call libdm: it would try to mknod the control node. */
        if (ret_error)
            *ret_error = strdup(VDO_DM_UNSUPPORTED_MESSAGE " (this kernel has no device-mapper: no "
                                "/dev/mapper/control, none in /proc/misc)");
        return -EOPNOTSUPP;
    }
    dm_setup();
    int r = find_vdo_target(ret_version);
    if (r == -ENOENT) {
        /* Not loaded yet (dm-vdo is a module on distribution kernels).
         * modprobe may be missing or fail: then it is still "unsupported". */
        char *const argv[] = { (char *) "modprobe", (char *) "dm-vdo", NULL };
        (void) dev_run_program(argv, NULL, NULL);
        r = find_vdo_target(ret_version);
    }
    if (r == -ENOENT) {
        if (ret_error)
            *ret_error = strdup(VDO_DM_UNSUPPORTED_MESSAGE " (device-mapper has no vdo target, "
                                "and modprobe dm-vdo did not add it)");
        return -EOPNOTSUPP;
    }
    if (r < 0)
        return fail(r, "cannot list device-mapper targets", ret_error);
    return 0;
}

/* Runs a node-changing task, with a udev cookie when udevd runs. */
static int run_with_udev(struct dm_task *t) {
    uint32_t cookie = 0;
    bool sync = dm_udev_get_sync_support();
    if (sync && !dm_task_set_cookie(t, &cookie, 0))
        return -ENOMEM;
    int ok = dm_task_run(t);
    int r = ok ? 0 : task_errno(t);
    if (sync) {
        /* The cookie is a semaphore: it must be waited on (which also
         * releases it) even after a failure. */
        (void) dm_udev_wait(cookie);
    } else
        /* No udevd: libdm makes /dev/mapper/<name> itself, here. */
        dm_task_update_nodes();
    return r;
}

static int get_info(const char *name, struct dm_info *ret) {
    _cleanup_dm_task_ struct dm_task *t = named_task(DM_DEVICE_INFO, name);
    if (!t)
        return -ENOMEM;
    if (!dm_task_run(t))
        return task_errno(t);
    struct dm_info info;
    if (!dm_task_get_info(t, &info))
        return -EIO;
    if (!info.exists)
        return -ENXIO;
    *ret = info;
    return 0;
}

int vdo_dm_get_devno(const char *name, dev_t *ret_devno) {
    int r = dm_begin(name);
    if (r < 0)
        return r;
    struct dm_info info;
    r = get_info(name, &info);
    if (r < 0)
        return r;
    if (ret_devno)
        *ret_devno = makedev(info.major, info.minor);
    return 0;
}

static int check_node(const char *node, dev_t devno) {
    struct stat st;
    if (stat(node, &st) < 0)
        return negative_errno();
    if (!S_ISBLK(st.st_mode) || st.st_rdev != devno)
        return -ENODEV;
    return 0;
}

int vdo_dm_create(const char *name, const VdoTable *tbl, char **ret_node, dev_t *ret_devno, char **ret_error) {
    _cleanup_free_ char *params = NULL;
    int r = vdo_table_params(tbl, &params);
    if (r < 0)
        return r;
    r = dm_begin(name);
    if (r == -ENXIO)
        return fail(-EOPNOTSUPP, VDO_DM_UNSUPPORTED_MESSAGE, ret_error);
    if (r < 0)
        return r;

    struct dm_info info;
    if (get_info(name, &info) == 0)
        return fail(-EEXIST, "a device-mapper device of that name exists", ret_error);

    _cleanup_dm_task_ struct dm_task *t = named_task(DM_DEVICE_CREATE, name);
    if (!t || !dm_task_add_target(t, 0, vdo_table_logical_sectors(tbl), "vdo", params))
        return -ENOMEM;
    r = run_with_udev(t);
    if (r < 0)
        return fail(r, "cannot create the vdo target", ret_error);
    if (!dm_task_get_info(t, &info) || !info.exists)
        return fail(-EIO, "vdo target created but not found", ret_error);

    dev_t devno = makedev(info.major, info.minor);
    _cleanup_free_ char *node = NULL;
    if (asprintf(&node, "/dev/mapper/%s", name) < 0)
        return -ENOMEM;
    /* With udevd the cookie wait covered the rules; without it, libdm made
     * the node above. Check it either way, and let the dev layer wait for
     * udev's "initialized" mark (symlinks, blkid) when udevd runs. */
    r = udev_wait_for_device(devno, node, UDEV_TIMEOUT_USEC);
    if (r >= 0)
        r = check_node(node, devno);
    if (r < 0) {
        _cleanup_free_ char *ignored = NULL;
        (void) vdo_dm_remove(name, &ignored);
        return fail(r, "the vdo device node did not appear", ret_error);
    }
    if (ret_devno)
        *ret_devno = devno;
    if (ret_node)
        *ret_node = TAKE_PTR(node);
    return 0;
}

int vdo_dm_remove(const char *name, char **ret_error) {
    int r = dm_begin(name);
    if (r < 0)
        return r;
    struct dm_info info;
    r = get_info(name, &info);
    if (r < 0)
        return r;
    if (info.open_count > 0)
        return fail(-EBUSY, "the vdo device is open (mounted?)", ret_error);

    _cleanup_dm_task_ struct dm_task *t = named_task(DM_DEVICE_REMOVE, name);
    if (!t)
        return -ENOMEM;
    /* A udev probe may hold the device open for a moment after an unmount:
     * libdm retries the remove a bounded number of times. */
    (void) dm_task_retry_remove(t);
    r = run_with_udev(t);
    if (r < 0)
        return fail(r, "cannot remove the vdo target", ret_error);
    return 0;
}

int vdo_dm_get_status(const char *name, VdoStatus *ret, char **ret_error) {
    if (!ret)
        return -EINVAL;
    int r = dm_begin(name);
    if (r < 0)
        return r;
    _cleanup_dm_task_ struct dm_task *t = named_task(DM_DEVICE_STATUS, name);
    if (!t)
        return -ENOMEM;
    if (!dm_task_run(t))
        return fail(task_errno(t), "cannot read the vdo status", ret_error);
    struct dm_info info;
    if (!dm_task_get_info(t, &info) || !info.exists)
        return -ENXIO;

    uint64_t start, length;
    char *type = NULL, *params = NULL;
    void *next = dm_get_next_target(t, NULL, &start, &length, &type, &params);
    if (next != NULL || !type || !streq(type, "vdo") || !params)
        return fail(-EMEDIUMTYPE, "not a single vdo target", ret_error);
    r = vdo_status_parse(params, ret);
    if (r < 0)
        return fail(r, "unexpected vdo status line", ret_error);
    return 0;
}

int vdo_dm_message(const char *name, const char *message, char **ret_reply, char **ret_error) {
    if (isempty(message))
        return -EINVAL;
    int r = dm_begin(name);
    if (r < 0)
        return r;
    _cleanup_dm_task_ struct dm_task *t = named_task(DM_DEVICE_TARGET_MSG, name);
    if (!t || !dm_task_set_sector(t, 0) || !dm_task_set_message(t, message))
        return -ENOMEM;
    if (!dm_task_run(t))
        return fail(task_errno(t), "vdo target message failed", ret_error);
    if (ret_reply) {
        const char *reply = dm_task_get_message_response(t);
        char *s = strdup(reply ?: "");
        if (!s)
            return -ENOMEM;
        *ret_reply = s;
    }
    return 0;
}

int vdo_dm_get_stats(const char *name, VdoStats *ret, char **ret_error) {
    VdoStatus status;
    int r = vdo_dm_get_status(name, &status, ret_error);
    if (r < 0)
        return r;
    VdoStats st = {};
    _cleanup_free_ char *reply = NULL, *ignored = NULL;
    if (vdo_dm_message(name, "stats", &reply, &ignored) >= 0)
        (void) vdo_stats_parse_message(reply, &st);
    vdo_stats_apply_status(&st, &status);
    *ret = st;
    return 0;
}

int vdo_dm_reload(const char *name, const VdoTable *tbl, char **ret_error) {
    _cleanup_free_ char *params = NULL;
    int r = vdo_table_params(tbl, &params);
    if (r < 0)
        return r;
    r = dm_begin(name);
    if (r < 0)
        return r;

    _cleanup_dm_task_ struct dm_task *t = named_task(DM_DEVICE_RELOAD, name);
    if (!t || !dm_task_add_target(t, 0, vdo_table_logical_sectors(tbl), "vdo", params))
        return -ENOMEM;
    if (!dm_task_run(t))
        return fail(task_errno(t), "cannot load the new vdo table", ret_error);

    /* The new table takes effect on resume (dm-vdo suspends and resumes
     * internally around the growth). */
    _cleanup_dm_task_ struct dm_task *res = named_task(DM_DEVICE_RESUME, name);
    if (!res)
        return -ENOMEM;
    r = run_with_udev(res);
    if (r < 0) {
        /* Drop the inactive table so the next resume does not pick it up. */
        _cleanup_dm_task_ struct dm_task *clr = named_task(DM_DEVICE_CLEAR, name);
        if (clr)
            (void) dm_task_run(clr);
        return fail(r, "cannot resume with the new vdo table", ret_error);
    }
    return 0;
}
