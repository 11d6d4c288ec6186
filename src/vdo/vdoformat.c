/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "mkfs.h"
#include "probe.h"
#include "util.h"
#include "vdoformat.h"

unsigned vdoformat_choose_slab_bits(uint64_t device_size) {
    if (device_size < 16 * GIB)
        return 17;
    if (device_size < 256 * GIB)
        return 18;
    return 19;
}

int vdoformat_build_argv(const char *device, uint64_t device_size, const VdoFormatOptions *opts, char ***ret) {
    if (isempty(device) || !opts || !ret)
        return -EINVAL;
    if (opts->logical_size == 0 || opts->logical_size % 4096 != 0)
        return -EINVAL;
    unsigned bits = opts->slab_bits ?: vdoformat_choose_slab_bits(device_size);
    if (bits < 4 || bits > 23)
        return -EINVAL;

    _cleanup_strv_free_ char **argv = NULL;
    char size_arg[64], slab_arg[32];
    /* Kilobytes: exact for any multiple of 4096 (vdoformat's default unit
     * is megabytes, which would round). */
    snprintf(size_arg, sizeof(size_arg), "--logical-size=%" PRIu64 "K", opts->logical_size / 1024);
    snprintf(slab_arg, sizeof(slab_arg), "--slab-bits=%u", bits);
    if (strv_extend(&argv, "vdoformat") < 0 || strv_extend(&argv, size_arg) < 0 ||
        strv_extend(&argv, slab_arg) < 0 || strv_extend(&argv, device) < 0)
        return -ENOMEM;
    *ret = TAKE_PTR(argv);
    return 0;
}

int vdoformat_parse_version(const char *output, unsigned ret[4]) {
    if (!output)
        return -EINVAL;
    const char *p = strstr(output, "version is:");
    if (!p)
        return -EINVAL;
    p += strlen("version is:");
    while (*p == ' ')
        p++;
    unsigned v[4] = {};
    for (int i = 0; i < 4; i++) {
        if (*p < '0' || *p > '9') {
            if (i == 0)
                return -EINVAL;
            break;
        }
        char *end;
        unsigned long n = strtoul(p, &end, 10);
        if (n > 100000)
            return -EINVAL;
        v[i] = (unsigned) n;
        p = end;
        if (*p != '.')
            break;
        p++;
    }
    memcpy(ret, v, sizeof(v));
    return 0;
}

/* "4.00 GB" -> bytes; vdoformat prints binary units with two decimals. */
static int parse_size(const char *num, const char *unit, uint64_t *ret) {
    char *end;
    errno = 0;
    double d = strtod(num, &end);
    if (errno != 0 || end == num || d < 0)
        return -EINVAL;
    uint64_t mult;
    switch (unit[0]) {
    case 'B': mult = 1; break;
    case 'K': mult = KIB; break;
    case 'M': mult = MIB; break;
    case 'G': mult = GIB; break;
    case 'T': mult = TIB; break;
    case 'P': mult = TIB * 1024; break;
    default: return -EINVAL;
    }
    *ret = (uint64_t) (d * (double) mult + 0.5);
    return 0;
}

int vdoformat_parse_output(const char *output, VdoFormatResult *ret) {
    if (!output || !ret)
        return -EINVAL;
    const char *p = strstr(output, "can address ");
    if (!p)
        return -EINVAL;
    char num1[32], unit1[8], num2[32], unit2[8];
    unsigned slabs;
    if (sscanf(p, "can address %31s %7s in %u data slab%*[s], each %31s %7[A-Za-z]", num1, unit1, &slabs, num2, unit2) != 5 &&
        sscanf(p, "can address %31s %7s in %u data slab, each %31s %7[A-Za-z]", num1, unit1, &slabs, num2, unit2) != 5)
        return -EINVAL;
    VdoFormatResult r = { .slabs = slabs };
    if (parse_size(num1, unit1, &r.addressable) < 0 || parse_size(num2, unit2, &r.slab_size) < 0)
        return -EINVAL;
    *ret = r;
    return 0;
}

static int device_size(const char *device, uint64_t *ret) {
    _cleanup_close_ int fd = open(device, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return negative_errno();
    struct stat st;
    if (fstat(fd, &st) < 0)
        return negative_errno();
    if (S_ISREG(st.st_mode)) {
        *ret = (uint64_t) st.st_size;
        return 0;
    }
    if (!S_ISBLK(st.st_mode))
        return -ENOTBLK;
    uint64_t sz;
    if (ioctl(fd, BLKGETSIZE64, &sz) < 0)
        return negative_errno();
    *ret = sz;
    return 0;
}

int vdoformat_run(const char *device, const VdoFormatOptions *opts, VdoFormatResult *ret, char **ret_output) {
    if (isempty(device) || !opts)
        return -EINVAL;

    /* The tool first: a missing vdoformat is the common failure, and the
     * caller can say "install the vdo package" before anything is probed. */
    _cleanup_free_ char *vout = NULL;
    char *const vargv[] = { (char *) "vdoformat", (char *) "--version", NULL };
    int r = dev_run_program(vargv, &vout, NULL);
    if (r == -ENOENT)
        return -ENOENT;
    if (r < 0)
        return -EPROTONOSUPPORT;
    unsigned v[4];
    if (vdoformat_parse_version(vout, v) < 0 || v[0] < 8)
        /* 6.x (kvdo era) formats a layout the upstream dm-vdo target
         * cannot load. */
        return -EPROTONOSUPPORT;

    ProbeResult pr = {};
    r = probe_path(device, &pr);
    if (r < 0)
        return r;
    bool blank = pr.blank;
    probe_result_done(&pr);
    if (!blank)
        return -EEXIST;

    uint64_t size;
    r = device_size(device, &size);
    if (r < 0)
        return r;

    _cleanup_strv_free_ char **argv = NULL;
    r = vdoformat_build_argv(device, size, opts, &argv);
    if (r < 0)
        return r;
    _cleanup_free_ char *out = NULL;
    r = dev_run_program(argv, &out, NULL);
    if (r < 0) {
        if (ret_output)
            *ret_output = TAKE_PTR(out);
        return r;
    }
    VdoFormatResult res = {};
    (void) vdoformat_parse_output(out, &res); /* informative only */
    if (ret)
        *ret = res;
    if (ret_output)
        *ret_output = TAKE_PTR(out);
    return 0;
}
