/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Who is on the other end of the socket, and what may they do. */

#include <stdio.h>
#include <sys/socket.h>

#include "api.h"
#include "util.h"

bool api_peer_may(uid_t uid, gid_t gid, const gid_t *groups, size_t n_groups,
                  gid_t group, bool mutating) {
    /* Reads: the socket's file mode decided already, at connect(). */
    if (!mutating)
        return true;
    if (uid == 0)
        return true;
    if (group == GID_INVALID)
        return false;
    if (gid == group)
        return true;
    for (size_t i = 0; i < n_groups; i++)
        if (groups[i] == group)
            return true;
    return false;
}

/* The Groups: line of /proc/<pid>/status. Racy (the pid may exit and be
 * reused), hence only a fallback for kernels older than 4.13. */
static int proc_groups(pid_t pid, gid_t **ret, size_t *ret_n) {
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
    _cleanup_free_ char *s = NULL;
    int r = read_full_file(path, &s, NULL);
    if (r < 0)
        return r;
    char *line = strstr(s, "\nGroups:");
    if (!line)
        return -EIO;
    line += strlen("\nGroups:");
    size_t cap = 0, n = 0;
    _cleanup_free_ gid_t *g = NULL;
    for (;;) {
        while (*line == ' ' || *line == '\t')
            line++;
        if (*line < '0' || *line > '9')
            break;
        char *end;
        unsigned long v = strtoul(line, &end, 10);
        if (n == cap) {
            cap = MAX(cap * 2, (size_t) 16);
            gid_t *p = realloc(g, cap * sizeof(gid_t));
            if (!p)
                return -ENOMEM;
            g = p;
        }
        g[n++] = (gid_t) v;
        line = end;
    }
    *ret = TAKE_PTR(g);
    *ret_n = n;
    return 0;
}

int api_peer_credentials(int fd, uid_t *ret_uid, gid_t *ret_gid, pid_t *ret_pid,
                         gid_t **ret_groups, size_t *ret_n_groups) {
    struct ucred cred = {};
    socklen_t l = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &l) < 0)
        return negative_errno();
    if (l != sizeof(cred))
        return -EIO;

    _cleanup_free_ gid_t *groups = NULL;
    size_t n = 0;
    socklen_t len = 64 * sizeof(gid_t);
    for (int attempt = 0; attempt < 4; attempt++) {
        free(groups);
        groups = malloc(len ?: sizeof(gid_t));
        if (!groups)
            return -ENOMEM;
        socklen_t got = len;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &got) == 0) {
            n = got / sizeof(gid_t);
            goto done;
        }
        if (errno == ERANGE) { /* the kernel told us the size it needs */
            len = got;
            continue;
        }
        if (errno != ENOPROTOOPT)
            return negative_errno();
        break;
    }
    free(TAKE_PTR(groups));
    int r = proc_groups(cred.pid, &groups, &n);
    if (r < 0)
        return r;
done:
    if (ret_uid)
        *ret_uid = cred.uid;
    if (ret_gid)
        *ret_gid = cred.gid;
    if (ret_pid)
        *ret_pid = cred.pid;
    if (ret_groups)
        *ret_groups = TAKE_PTR(groups);
    if (ret_n_groups)
        *ret_n_groups = n;
    return 0;
}
