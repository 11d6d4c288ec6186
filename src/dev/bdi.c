/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "bdi.h"
#include "dev-util.h"
#include "util.h"

static int bdi_path(dev_t devno, const char *attr, char **ret) {
    char *p;
    if (asprintf(&p, "/sys/class/bdi/%u:%u/%s", major(devno), minor(devno), attr) < 0)
        return -ENOMEM;
    *ret = p;
    return 0;
}

static int bdi_read(dev_t devno, const char *attr, uint64_t *ret) {
    _cleanup_free_ char *p = NULL;
    int r = bdi_path(devno, attr, &p);
    if (r < 0)
        return r;
    return dev_read_u64_file(p, ret);
}

static int bdi_write(dev_t devno, const char *attr, uint64_t v) {
    _cleanup_free_ char *p = NULL;
    char buf[32];
    int r = bdi_path(devno, attr, &p);
    if (r < 0)
        return r;
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return write_string_file(p, buf);
}

int bdi_read_limits(dev_t devno, BdiLimits *ret) {
    if (!ret)
        return -EINVAL;
    uint64_t v;
    int r = bdi_read(devno, "max_ratio", &v);
    if (r < 0)
        return r; /* -ENOENT: no bdi for this device */
    BdiLimits l = { .max_ratio = (int) MIN(v, 100u), .strict_limit = -1 };

    /* max_bytes and strict_limit appeared in Linux 6.2. */
    if (bdi_read(devno, "max_bytes", &v) >= 0) {
        l.max_bytes = v;
        l.has_max_bytes = true;
    }
    if (bdi_read(devno, "strict_limit", &v) >= 0) {
        l.strict_limit = v ? 1 : 0;
        l.has_strict_limit = true;
    }
    *ret = l;
    return 0;
}

/* The kernel keeps max_bytes as a fraction of the global dirty limit (in
 * units of 1/1,000,000, BDI_RATIO_SCALE) and reports it back recomputed
 * from the current dirty limit, so what we read differs from what we wrote
 * by the rounding of that fraction: allow 1% + 1 MiB. */
static bool max_bytes_close(uint64_t want, uint64_t got) {
    uint64_t diff = want > got ? want - got : got - want;
    return diff <= want / 100 + MIB;
}

int bdi_apply_limits(dev_t devno, const WritebackLimits *want) {
    if (!want)
        return -EINVAL;
    if (want->max_ratio > 100 || want->strict_limit > 1)
        return -EINVAL;

    BdiLimits cur;
    int r = bdi_read_limits(devno, &cur);
    if (r < 0)
        return r;

    /* Check every knob before writing any, so a kernel lacking one does
     * not leave the device half-configured. */
    if (want->max_bytes > 0 && !cur.has_max_bytes)
        return -EOPNOTSUPP;
    if (want->strict_limit >= 0 && !cur.has_strict_limit)
        return -EOPNOTSUPP;

    /* max_ratio and max_bytes are one setting in the kernel (writing one
     * recomputes the other). When both are given, max_bytes is written
     * last and wins: it is the more specific request. */
    if (want->max_ratio >= 0) {
        r = bdi_write(devno, "max_ratio", (uint64_t) want->max_ratio);
        if (r < 0)
            return r;
    }
    if (want->max_bytes > 0) {
        r = bdi_write(devno, "max_bytes", want->max_bytes);
        if (r < 0)
            return r; /* -EINVAL: more than the global dirty limit */
    }
    if (want->strict_limit >= 0) {
        r = bdi_write(devno, "strict_limit", (uint64_t) want->strict_limit);
        if (r < 0)
            return r;
    }

    /* Read back: a write that the kernel accepted but did not apply is a
     * failure, not a success. */
    BdiLimits got;
    r = bdi_read_limits(devno, &got);
    if (r < 0)
        return r;
    if (want->max_bytes > 0) {
        if (!max_bytes_close(want->max_bytes, got.max_bytes))
            return -EIO;
    } else if (want->max_ratio >= 0 && got.max_ratio != want->max_ratio)
        return -EIO;
    if (want->strict_limit >= 0 && got.strict_limit != want->strict_limit)
        return -EIO;
    return 0;
}
