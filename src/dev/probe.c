/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "probe.h"

void probe_result_done(ProbeResult *p) {
    if (!p)
        return;
    free(p->type);
    free(p->uuid);
    free(p->label);
    free(p->usage);
    *p = (ProbeResult) {};
}

static void probe_result_donep(ProbeResult *p) {
    probe_result_done(p);
}

static void blkid_free_probep(blkid_probe *pr) {
    if (*pr)
        blkid_free_probe(*pr);
}

/* Copies a probe value if present. */
static int lookup(blkid_probe pr, const char *name, char **ret) {
    const char *v = NULL;
    if (blkid_probe_lookup_value(pr, name, &v, NULL) < 0 || !v)
        return 0;
    char *s = strdup(v);
    if (!s)
        return -ENOMEM;
    free(*ret);
    *ret = s;
    return 1;
}

int probe_path(const char *path, ProbeResult *ret) {
    if (isempty(path) || !ret)
        return -EINVAL;

    /* Open it ourselves (read-only, O_CLOEXEC) so errors are real errnos
     * and no write-close makes udev re-probe a device. */
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return negative_errno();

    _cleanup_(blkid_free_probep) blkid_probe pr = blkid_new_probe();
    if (!pr)
        return -ENOMEM;
    errno = 0;
    if (blkid_probe_set_device(pr, fd, 0, 0) < 0)
        return errno > 0 ? -errno : -EIO;

    /* Everything that counts as "someone's data": filesystems, RAID
     * members, LUKS, swap (superblocks) and partition tables. */
    if (blkid_probe_enable_superblocks(pr, 1) < 0 ||
        /* BADCSUM: a superblock with a bad checksum is still a signature;
         * without the flag libblkid ignores it and a damaged filesystem
         * would look blank, i.e. formattable. */
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_UUID | BLKID_SUBLKS_LABEL |
                                                  BLKID_SUBLKS_USAGE | BLKID_SUBLKS_BADCSUM) < 0 ||
        blkid_probe_enable_partitions(pr, 1) < 0 ||
        /* FORCE_GPT: see a GPT even when its protective MBR is gone. */
        blkid_probe_set_partitions_flags(pr, BLKID_PARTS_FORCE_GPT) < 0)
        return -EIO;

    _cleanup_(probe_result_donep) ProbeResult res = {};
    errno = 0;
    int r = blkid_do_safeprobe(pr);
    if (r == 1) {
        /* Nothing libblkid knows. (Arbitrary data without a known
         * signature is "blank" too: that is as far as probing can see.) */
        res.blank = true;
        *ret = res;
        res = (ProbeResult) {};
        return 0;
    }
    if (r == -2) {
        /* Ambivalent: several signatures that contradict each other. That
         * is certainly not blank; it needs a human (wipefs). */
        res.type = strdup("ambivalent");
        res.usage = strdup("ambivalent");
        if (!res.type || !res.usage)
            return -ENOMEM;
        *ret = res;
        res = (ProbeResult) {};
        return 0;
    }
    if (r < 0)
        return errno > 0 ? -errno : -EIO;

    /* r == 0: exactly one result. A filesystem reports TYPE, a partition
     * table PTTYPE. */
    if ((r = lookup(pr, "TYPE", &res.type)) < 0)
        return r;
    if (r == 0) {
        if ((r = lookup(pr, "PTTYPE", &res.type)) < 0)
            return r;
        if (r > 0) {
            if (lookup(pr, "PTUUID", &res.uuid) < 0)
                return -ENOMEM;
            res.usage = strdup("partition table");
            if (!res.usage)
                return -ENOMEM;
        }
    }
    if (lookup(pr, "UUID", &res.uuid) < 0 || lookup(pr, "LABEL", &res.label) < 0 ||
        (!res.usage && lookup(pr, "USAGE", &res.usage) < 0))
        return -ENOMEM;
    if (!res.type) {
        /* blkid said "found" but named nothing: still not blank. */
        res.type = strdup("unknown");
        if (!res.type)
            return -ENOMEM;
    }
    res.blank = false;
    *ret = res;
    res = (ProbeResult) {};
    return 0;
}
