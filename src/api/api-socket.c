/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The listening Unix socket: stale-socket removal, bind, mode, group; or
 * the one systemd passed (socket activation). */

#include <fcntl.h>
#include <grp.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>

#include "api.h"

/* A group name, or a numeric gid ("2345"), which needs no group entry. */
static int lookup_group(const char *name, gid_t *ret) {
    if (name[0] >= '0' && name[0] <= '9') {
        char *end;
        errno = 0;
        unsigned long v = strtoul(name, &end, 10);
        if (errno != 0 || *end != 0 || v >= (unsigned long) GID_INVALID)
            return -EINVAL;
        *ret = (gid_t) v;
        return 0;
    }
    char buf[4096];
    struct group grp, *result = NULL;
    int r = getgrnam_r(name, &grp, buf, sizeof(buf), &result);
    if (r != 0)
        return -r;
    if (!result)
        return -ENOENT;
    *ret = result->gr_gid;
    return 0;
}

int api_socket_set_access(const char *path, const char *group, mode_t mode, gid_t *ret_gid) {
    gid_t gid = GID_INVALID;
    if (group && lookup_group(group, &gid) < 0)
        gid = GID_INVALID;
    /* A group that does not exist: root's, so that nobody gains changes
     * by the name of a group someone creates later. */
    if (chown(path, 0, gid == GID_INVALID ? 0 : gid) < 0)
        return negative_errno();
    if (chmod(path, mode) < 0)
        return negative_errno();
    if (ret_gid)
        *ret_gid = gid;
    return 0;
}

int api_socket_from_systemd(const char *path, const char *group, mode_t mode, int *ret_fd, gid_t *ret_gid) {
    /* unset: the workers and daemons the agent spawns must not think the
     * sockets are theirs. */
    int n = sd_listen_fds(1);
    if (n <= 0)
        return n;
    int found = -EBADF, r = 0;
    for (int fd = SD_LISTEN_FDS_START; fd < SD_LISTEN_FDS_START + n; fd++) {
        if (found < 0 && sd_is_socket_unix(fd, SOCK_STREAM, 1, path, 0) > 0) {
            found = fd;
            continue;
        }
        /* Not ours (a socket unit for another path): closed, so that
         * nothing waits on it for an answer that never comes. */
        (void) close(fd);
    }
    if (found < 0)
        return -EADDRNOTAVAIL;
    _cleanup_close_ int fd = found;
    /* systemd passes it without O_CLOEXEC, and may pass it blocking. */
    int fl = fcntl(fd, F_GETFD);
    if (fl < 0 || fcntl(fd, F_SETFD, fl | FD_CLOEXEC) < 0)
        return negative_errno();
    fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return negative_errno();
    /* The layout says who may connect, here as when the agent binds. */
    r = api_socket_set_access(path, group, mode, ret_gid);
    if (r < 0)
        return r;
    *ret_fd = TAKE_FD(fd);
    return 1;
}

int api_socket_open(const char *path, const char *group, mode_t mode, int *ret_fd, gid_t *ret_gid) {
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    struct stat st;
    int r;

    if (isempty(path) || path[0] != '/' || !ret_fd)
        return -EINVAL;
    if (strlen(path) >= sizeof(sa.sun_path))
        return -ENAMETOOLONG;
    strcpy(sa.sun_path, path);

    /* A socket left by a crashed agent blocks bind(); remove it, but never
     * anything else an operator may have put there. */
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return -EEXIST;
        if (unlink(path) < 0 && errno != ENOENT)
            return negative_errno();
    } else if (errno != ENOENT)
        return negative_errno();

    _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return negative_errno();

    /* Bind under a restrictive umask so that no one can connect in the
     * window before chmod/chown below narrow or widen it on purpose. */
    mode_t old = umask(0177);
    r = bind(fd, (struct sockaddr *) &sa, sizeof(sa));
    umask(old);
    if (r < 0)
        return negative_errno();

    gid_t gid = GID_INVALID;
    if ((r = api_socket_set_access(path, group, mode, &gid)) < 0)
        goto fail;
    if (listen(fd, SOMAXCONN) < 0) {
        r = negative_errno();
        goto fail;
    }
    if (ret_gid)
        *ret_gid = gid;
    *ret_fd = TAKE_FD(fd);
    return 0;

fail:
    (void) unlink(path);
    return r;
}
