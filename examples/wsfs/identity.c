/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The daemon refuses a --content or --state dir that is not the
 * filesystem it was told about. The agent writes an identity file at the
 * root of every volume it carves (<volume dir>/.layoutd-volume: lines
 * key=value, '#' comments; uuid= at least, also name= and role=; unknown
 * keys are ignored) and passes what it expects in the environment:
 *
 *   LAYOUTD_STATE_VOLUME=DIR        the state volume's root
 *   LAYOUTD_STATE_VOLUME_UUID=UUID  its identity
 *   LAYOUTD_CONTENT_UUIDS=U[,U...]  one per --content dir, in shard order
 *
 * Without them the daemon runs standalone, as before. With them, a volume
 * that is not mounted (its mount point is then a bare directory on the
 * filesystem below, with no identity file) or another volume mounted in
 * its place is refused before anything is created or mounted: objects
 * written to the bare directory would land outside every volume, its
 * growth and its gc, and be hidden once the real volume is mounted over.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "wsfs.h"

#define IDENTITY_MAX (64 * 1024)

_printf_(3, 4) static int say(char *why, size_t size, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, size, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

static char *strip(char *s) {
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

static bool set_field(char *dst, size_t size, const char *v) {
    if (strlen(v) >= size)
        return false;
    strcpy(dst, v);
    return true;
}

/* Reads dir_fd's identity file. Returns: 0, -ENOENT (none), or another
 * -errno with why filled (what was found instead). */
static int identity_read(int dir_fd, VolumeIdentity *ret, char *why, size_t why_size) {
    struct stat st, dst;
    _cleanup_free_ char *buf = NULL;
    VolumeIdentity id = {};

    /* O_NOFOLLOW: a symlink could name any other filesystem's file. */
    _cleanup_close_ int fd = openat(dir_fd, WSFS_IDENTITY_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT)
            return -ENOENT;
        int r = negative_errno();
        say(why, why_size, "%s that cannot be opened (%s%s)", WSFS_IDENTITY_FILE, strerror(-r),
            r == -ELOOP ? ": a symlink" : "");
        return r;
    }
    if (fstat(fd, &st) < 0 || fstat(dir_fd, &dst) < 0)
        return say(why, why_size, "%s that cannot be read (%m)", WSFS_IDENTITY_FILE);
    if (!S_ISREG(st.st_mode) || st.st_dev != dst.st_dev || st.st_size > IDENTITY_MAX)
        return say(why, why_size, "a %s that is not a regular file of that filesystem of at most %d bytes",
                   WSFS_IDENTITY_FILE, IDENTITY_MAX);
    if (!(buf = malloc(st.st_size + 1)))
        return say(why, why_size, "out of memory");
    ssize_t n = pread(fd, buf, st.st_size, 0);
    if (n < 0)
        return say(why, why_size, "%s that cannot be read (%m)", WSFS_IDENTITY_FILE);
    buf[n] = 0;

    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *l = strip(line), *eq;
        if (*l == 0 || *l == '#' || !(eq = strchr(l, '=')))
            continue;
        *eq = 0;
        char *key = strip(l), *val = strip(eq + 1);
        char *dst_field = streq(key, "uuid") ? id.uuid : streq(key, "name") ? id.name
                          : streq(key, "role") ? id.role : NULL;
        size_t dst_size = streq(key, "uuid") ? sizeof(id.uuid) : streq(key, "name") ? sizeof(id.name)
                          : sizeof(id.role);
        if (!dst_field)
            continue; /* unknown keys are for others */
        if (dst_field == id.uuid && id.uuid[0] && strcasecmp(id.uuid, val) != 0)
            return say(why, why_size, "a %s with two different uuid= lines (%s, %s)", WSFS_IDENTITY_FILE,
                       id.uuid, val);
        if (!set_field(dst_field, dst_size, val))
            return say(why, why_size, "a %s whose %s= is too long", WSFS_IDENTITY_FILE, key);
    }
    if (!id.uuid[0])
        return say(why, why_size, "a %s without a uuid= line", WSFS_IDENTITY_FILE);
    *ret = id;
    return 0;
}

/* Whether dir_fd is the root of a mount (its parent is on another one). */
static bool is_mount_point(int dir_fd) {
    struct statx a, b;
    if (statx(dir_fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &a) < 0 || statx(dir_fd, "..", 0, STATX_MNT_ID, &b) < 0)
        return true; /* cannot tell: do not claim it is not mounted */
    if (a.stx_dev_major != b.stx_dev_major || a.stx_dev_minor != b.stx_dev_minor)
        return true;
    return (a.stx_mask & b.stx_mask & STATX_MNT_ID) && a.stx_mnt_id != b.stx_mnt_id;
}

/* Checks dir (opened as dir_fd) against the uuid expected. opt names it
 * in messages ("--content", "LAYOUTD_STATE_VOLUME"). */
static int identity_expect(int dir_fd, const char *opt, const char *dir, const char *uuid, char *why,
                           size_t why_size) {
    VolumeIdentity id;
    char found[512];
    int r = identity_read(dir_fd, &id, found, sizeof(found));
    if (r == -ENOENT) {
        if (!is_mount_point(dir_fd))
            return say(why, why_size, "%s %s: no %s there, and it is not a mount point: the volume (expected "
                       "uuid=%s) is almost certainly not mounted; refusing the bare directory", opt, dir,
                       WSFS_IDENTITY_FILE, uuid);
        return say(why, why_size, "%s %s: the filesystem mounted there has no %s: expected the volume uuid=%s, "
                   "found none", opt, dir, WSFS_IDENTITY_FILE, uuid);
    }
    if (r < 0)
        return say(why, why_size, "%s %s: expected the volume uuid=%s, found %s", opt, dir, uuid, found);
    if (strcasecmp(id.uuid, uuid) != 0)
        return say(why, why_size, "%s %s: expected the volume uuid=%s, found uuid=%s%s%s%s%s in %s: "
                   "not the volume it was told about", opt, dir, uuid, id.uuid,
                   id.name[0] ? " name=" : "", id.name, id.role[0] ? " role=" : "", id.role, WSFS_IDENTITY_FILE);
    return 0;
}

int identity_check_content(char **dirs, size_t n, int *ret_fds, char *why, size_t why_size) {
    _cleanup_free_ char *copy = NULL;
    char *uuids[256];
    size_t k = 0;
    char *save = NULL;

    for (size_t i = 0; i < n; i++)
        ret_fds[i] = -EBADF;
    const char *e = getenv("LAYOUTD_CONTENT_UUIDS");
    if (isempty(e))
        return 0;
    if (!(copy = strdup(e)))
        return say(why, why_size, "out of memory");
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        t = strip(t);
        if (*t == 0)
            continue;
        if (k == ELEMENTSOF(uuids))
            return say(why, why_size, "LAYOUTD_CONTENT_UUIDS: too many uuids");
        uuids[k++] = t;
    }
    if (k != n)
        return say(why, why_size, "LAYOUTD_CONTENT_UUIDS names %zu volume(s) for the %zu --content dir(s)", k, n);
    for (size_t i = 0; i < n; i++) {
        int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int r = fd < 0 ? say(why, why_size, "--content %s: %m", dirs[i])
                       : identity_expect(fd, "--content", dirs[i], uuids[i], why, why_size);
        if (r < 0) {
            safe_close(fd);
            for (size_t j = 0; j < i; j++)
                ret_fds[j] = safe_close(ret_fds[j]);
            return r;
        }
        ret_fds[i] = fd;
    }
    return 0;
}

/* Whether path is strictly below dir (both resolved, no trailing slash). */
static bool path_below(const char *path, const char *dir) {
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/' && path[1] != 0;
    return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != 0;
}

int identity_check_state(const char *state, struct stat *ret_st, char *why, size_t why_size) {
    char proc[32], resolved[PATH_MAX], vresolved[PATH_MAX];
    struct stat st, vst;

    const char *vol = getenv("LAYOUTD_STATE_VOLUME"), *uuid = getenv("LAYOUTD_STATE_VOLUME_UUID");
    if (isempty(vol) && isempty(uuid))
        return 0;
    if (isempty(vol) || isempty(uuid))
        return say(why, why_size, "LAYOUTD_STATE_VOLUME and LAYOUTD_STATE_VOLUME_UUID go together (only %s is set)",
                   isempty(vol) ? "LAYOUTD_STATE_VOLUME_UUID" : "LAYOUTD_STATE_VOLUME");
    _cleanup_close_ int vfd = open(vol, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (vfd < 0)
        return say(why, why_size, "LAYOUTD_STATE_VOLUME=%s: %m", vol);
    int r = identity_expect(vfd, "LAYOUTD_STATE_VOLUME", vol, uuid, why, why_size);
    if (r < 0)
        return r;
    _cleanup_close_ int sfd = open(state, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sfd < 0)
        return say(why, why_size, "--state %s: %m", state);
    /* Resolved paths (what was opened, symlinks followed), and the same
     * filesystem: a state dir outside the volume, or below it but on
     * something mounted in between, is not on the state volume. */
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", sfd);
    ssize_t n = readlink(proc, resolved, sizeof(resolved) - 1);
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", vfd);
    ssize_t m = readlink(proc, vresolved, sizeof(vresolved) - 1);
    if (n < 0 || m < 0)
        return say(why, why_size, "--state %s: resolving it: %m", state);
    resolved[n] = vresolved[m] = 0;
    if (!path_below(resolved, vresolved))
        return say(why, why_size, "--state %s: expected a directory below the state volume %s (%s), found %s",
                   state, vol, vresolved, resolved);
    if (fstat(sfd, &st) < 0 || fstat(vfd, &vst) < 0)
        return say(why, why_size, "--state %s: %m", state);
    if (st.st_dev != vst.st_dev)
        return say(why, why_size, "--state %s: expected the filesystem of the state volume %s (device %u:%u), "
                   "found device %u:%u (something else is mounted below the volume)", state, vol,
                   major(vst.st_dev), minor(vst.st_dev), major(st.st_dev), minor(st.st_dev));
    *ret_st = st;
    return 0;
}
