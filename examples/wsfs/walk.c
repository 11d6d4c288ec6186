/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A walk of the regular files below a directory, for the daemon's count
 * of its pool use (share.c) and for fsck, while others change the tree.
 *
 * Why not nftw(): glibc's aborts the whole walk when a directory vanishes
 * between its stat and its opendir (ENOENT is fatal there), which is
 * routine while a workload runs (rm -rf, a package manager's renames).
 * Here what vanishes is skipped, what cannot be read is counted, and one
 * directory fd is open at a time (the daemon's fds are bounded): the
 * directories still to read are kept as paths relative to the root, and
 * each is opened beneath the root without following symlinks (a directory
 * swapped for a symlink meanwhile cannot lead the walk elsewhere).
 */
#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "wsfs.h"

static int open_beneath(int root_fd, const char *rel) {
    struct open_how how = {
        .flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
    };
    int fd = (int) syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
    if (fd < 0 && errno == ENOSYS) /* before Linux 5.6: only the last component is checked */
        fd = openat(root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return fd;
}

static void walk_error(Walker *w, const char *rel, const char *name, int err) {
    w->errors++;
    if (!w->first_error[0])
        snprintf(w->first_error, sizeof(w->first_error), "%s%s%s: %s", rel, rel[0] && name ? "/" : "",
                 name ?: rel[0] ? "" : ".", strerror(err));
}

/* Skipped silently: it went away, or was replaced by something else. */
static bool vanished(int err) {
    return err == ENOENT || err == ENOTDIR || err == ELOOP || err == ESTALE;
}

int walk_files(Walker *w, int root_fd) {
    char **stack = NULL;
    size_t n = 0, cap = 0;
    int r = 0;

    if (!(stack = malloc(16 * sizeof(char *))) || !(stack[0] = strdup(""))) {
        free(stack);
        return -ENOMEM;
    }
    cap = 16;
    n = 1;
    while (n > 0 && r >= 0) {
        _cleanup_free_ char *rel = stack[--n];
        if (w->stop && atomic_load_explicit(w->stop, memory_order_relaxed))
            break;
        int fd = rel[0] ? open_beneath(root_fd, rel) : openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            if (!rel[0])
                r = negative_errno(); /* the root itself */
            else if (!vanished(errno))
                walk_error(w, rel, NULL, errno);
            continue;
        }
        DIR *d = fdopendir(fd);
        if (!d) {
            walk_error(w, rel, NULL, errno);
            safe_close(fd);
            continue;
        }
        w->dirs++;
        for (struct dirent *e; (errno = 0, e = readdir(d));) {
            struct stat st;
            if (streq(e->d_name, ".") || streq(e->d_name, ".."))
                continue;
            unsigned char type = e->d_type;
            bool have_st = false;
            if (type == DT_UNKNOWN || type == DT_REG) {
                if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                    if (!vanished(errno))
                        walk_error(w, rel, e->d_name, errno);
                    continue;
                }
                have_st = true;
                type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
            }
            if (type == DT_DIR) {
                if (n == cap) {
                    char **ns = reallocarray(stack, cap * 2, sizeof(char *));
                    if (!ns) {
                        r = -ENOMEM;
                        break;
                    }
                    stack = ns;
                    cap *= 2;
                }
                if (asprintf(&stack[n], "%s%s%s", rel, rel[0] ? "/" : "", e->d_name) < 0) {
                    r = -ENOMEM;
                    break;
                }
                n++;
            } else if (type == DT_REG && have_st && (r = w->file(w, dirfd(d), rel, e->d_name, &st)) < 0)
                break;
        }
        if (r >= 0 && errno != 0)
            walk_error(w, rel, NULL, errno);
        closedir(d);
    }
    while (n > 0)
        free(stack[--n]);
    free(stack);
    return r;
}
