/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Filesystem error counters (fs-errors.h), interpreted from the FsErrors
 * data of each FsType row, so that a new filesystem brings its counter as
 * a path and a format, not as code here.
 */
#include <errno.h>
#include <stdbool.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dev-util.h"
#include "fs-errors.h"
#include "util.h"

/* The kernel's name of a block device ("loop3"), from /sys/dev/block/M:m. */
static int device_kernel_name(dev_t devno, char **ret) {
    _cleanup_free_ char *link = NULL;
    char target[PATH_MAX];
    int r = dev_sysfs_path(devno, NULL, &link);
    if (r < 0)
        return r;
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n < 0)
        return negative_errno();
    if (n == 0)
        return -EINVAL;
    target[n] = 0;
    char *s = strdup(basename(target));
    if (!s)
        return -ENOMEM;
    *ret = s;
    return 0;
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The row's path with {dev} and {uuid} filled in. */
static int expand_path(const char *tmpl, dev_t devno, const char *uuid, char **ret) {
    _cleanup_free_ char *dev = NULL, *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f)
        return -ENOMEM;
    int r = 0;
    for (const char *c = tmpl; *c && r >= 0;) {
        if (starts_with(c, "{dev}")) {
            if (!dev)
                r = device_kernel_name(devno, &dev);
            if (r >= 0)
                fputs(dev, f);
            c += strlen("{dev}");
        } else if (starts_with(c, "{uuid}")) {
            /* A UUID goes into a path: nothing but hex digits and dashes. */
            if (isempty(uuid) || uuid[strspn(uuid, "0123456789abcdefABCDEF-")] != 0)
                r = -EINVAL;
            else
                fputs(uuid, f);
            c += strlen("{uuid}");
        } else
            fputc(*c++, f);
    }
    if (fclose(f) != 0 && r >= 0)
        r = -ENOMEM;
    if (r < 0)
        return r;
    *ret = TAKE_PTR(out);
    return 0;
}

int fs_errors_parse_sum(const char *text, uint64_t *ret) {
    uint64_t sum = 0;
    for (const char *l = text; l && *l;) {
        const char *e = strchrnul(l, '\n');
        const char *sp = memchr(l, ' ', (size_t) (e - l));
        if (e > l) {
            char num[32];
            uint64_t v;
            size_t n = sp ? (size_t) (e - sp - 1) : 0;
            if (!sp || n == 0 || n >= sizeof num)
                return -EINVAL;
            memcpy(num, sp + 1, n);
            num[n] = 0;
            if (dev_parse_u64(num, &v) < 0)
                return -EINVAL;
            sum = v > UINT64_MAX - sum ? UINT64_MAX : sum + v;
        }
        l = *e ? e + 1 : e;
    }
    *ret = sum;
    return 0;
}

int fs_errors_read(const FsType *fs, dev_t devno, const char *uuid, uint64_t *ret) {
    if (!fs || !ret)
        return -EINVAL;
    if (fs->errors.format == FS_ERRORS_NONE || !fs->errors.path)
        return -EOPNOTSUPP;
    _cleanup_free_ char *path = NULL, *text = NULL;
    int r = expand_path(fs->errors.path, devno, uuid, &path);
    if (r < 0)
        return r;
    uint64_t v;
    if (fs->errors.format == FS_ERRORS_NUMBER)
        r = dev_read_u64_file(path, &v);
    else {
        r = read_full_file(path, &text, NULL);
        if (r >= 0)
            r = fs_errors_parse_sum(text, &v);
    }
    if (r < 0)
        return r;
    *ret = v;
    return 0;
}
