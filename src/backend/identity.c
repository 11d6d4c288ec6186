/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "identity.h"
#include "util.h"

static bool is_uuid(const char *s, size_t n) {
    if (n != 36)
        return false;
    for (size_t i = 0; i < n; i++) {
        bool dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !strchr("0123456789abcdefABCDEF", s[i]))
            return false;
    }
    return true;
}

int volume_identity_parse(const char *text, char **ret_uuid) {
    if (!text || !ret_uuid)
        return -EINVAL;
    for (const char *l = text; *l;) {
        const char *e = strchrnul(l, '\n');
        if (strncmp(l, "uuid=", 5) == 0) {
            const char *v = l + 5;
            size_t n = (size_t) (e - v);
            if (!is_uuid(v, n))
                return -EBADMSG;
            char *u = strndup(v, n);
            if (!u)
                return -ENOMEM;
            *ret_uuid = u;
            return 0;
        }
        l = *e ? e + 1 : e;
    }
    return -EBADMSG;
}

int volume_identity_read(const char *dir, char **ret_uuid) {
    _cleanup_free_ char *path = NULL;
    char buf[VOLUME_IDENTITY_MAX + 1];
    if (!dir || !ret_uuid)
        return -EINVAL;
    if (asprintf(&path, "%s/%s", dir, VOLUME_IDENTITY_FILE) < 0)
        return -ENOMEM;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ELOOP ? -EBADMSG : negative_errno();
    ssize_t n = read(fd, buf, VOLUME_IDENTITY_MAX);
    if (n < 0)
        return negative_errno();
    buf[n] = 0;
    if (memchr(buf, 0, (size_t) n))
        return -EBADMSG;
    return volume_identity_parse(buf, ret_uuid);
}

int volume_identity_write(const char *dir, const char *uuid, const char *name, PoolRole role) {
    _cleanup_free_ char *path = NULL, *text = NULL;
    if (!dir || !uuid || !is_uuid(uuid, strlen(uuid)) || !name)
        return -EINVAL;
    if (asprintf(&path, "%s/%s", dir, VOLUME_IDENTITY_FILE) < 0 ||
        asprintf(&text, "# layoutd volume identity: written by layoutd; do not edit or copy\n"
                        "uuid=%s\nname=%s\nrole=%s\n",
                 uuid, name, pool_role_to_string(role) ?: "?") < 0)
        return -ENOMEM;
    return write_file_atomic(path, text, strlen(text), 0444);
}
