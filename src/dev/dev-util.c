/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "dev-util.h"
#include "macro.h"
#include "util.h"

void dev_backoff_jitter(void) {
    uint64_t usec = 10 * USEC_PER_MSEC + random_u64() % (240 * USEC_PER_MSEC + 1);
    struct timespec ts = {
        .tv_sec = (time_t) (usec / USEC_PER_SEC),
        .tv_nsec = (long) ((usec % USEC_PER_SEC) * NSEC_PER_USEC),
    };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int dev_parse_u64(const char *s, uint64_t *ret) {
    if (!s)
        return -EINVAL;
    while (isspace((unsigned char) *s))
        s++;
    if (!isdigit((unsigned char) *s))
        return -EINVAL; /* also refuses "-1", which strtoull would wrap */
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    while (isspace((unsigned char) *end))
        end++;
    if (*end)
        return -EINVAL;
    *ret = (uint64_t) v;
    return 0;
}

int dev_read_u64_file(const char *path, uint64_t *ret) {
    _cleanup_free_ char *s = NULL;
    int r = read_one_line_file(path, &s);
    if (r < 0)
        return r;
    return dev_parse_u64(s, ret);
}

int dev_sysfs_path(dev_t devno, const char *attr, char **ret) {
    char *p;
    if (asprintf(&p, "/sys/dev/block/%u:%u%s%s", major(devno), minor(devno),
                 isempty(attr) ? "" : "/", isempty(attr) ? "" : attr) < 0)
        return -ENOMEM;
    *ret = p;
    return 0;
}

#define DEFAULT_PATH "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

/* mkfs and the grow tools are looked up in the caller's PATH (not the
 * runner's fixed one) so that an operator, or a test, can choose them. */
int dev_find_program(const char *name, char **ret) {
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

