/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A tiny FUSE daemon for the supervisor's tests: passes every file through
 * to --state DIR (so files written through the mount land there), and can
 * misbehave on request:
 *
 *   testfs [--exit-now | --never-mount | --hang] [--content DIRS]
 *          --state DIR MOUNTPOINT
 *
 *   --exit-now     exit with status 3 at once (a crashing daemon)
 *   --never-mount  never mount, just wait for a signal (a stuck start)
 *   --hang         mount, then block every request forever (a hung daemon)
 *   --ignore-term  ignore SIGTERM (with --never-mount: only SIGKILL ends it)
 *
 * Like a real daemon it stays in the foreground and unmounts on SIGTERM.
 */
#define FUSE_USE_VERSION 35
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int root = -1;
static int hang;

static const char *rel(const char *path) {
    if (hang)
        for (;;)
            pause(); /* a hung daemon: the request never completes */
    return path[1] ? path + 1 : ".";
}

#define ERR(x) ((x) < 0 ? -errno : 0)

static int t_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    if (fi)
        return ERR(fstat((int) fi->fh, st));
    return ERR(fstatat(root, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int t_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                     struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    int fd = openat(root, rel(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -ENOMEM;
    }
    for (struct dirent *e; (e = readdir(d));)
        fill(buf, e->d_name, NULL, 0, 0);
    closedir(d);
    return 0;
}

static int t_open(const char *path, struct fuse_file_info *fi) {
    int fd = openat(root, rel(path), fi->flags | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t) fd;
    return 0;
}

static int t_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    int fd = openat(root, rel(path), fi->flags | O_CREAT | O_CLOEXEC, mode);
    if (fd < 0)
        return -errno;
    fi->fh = (uint64_t) fd;
    return 0;
}

static int t_read(const char *path, char *buf, size_t n, off_t off, struct fuse_file_info *fi) {
    ssize_t r = pread((int) fi->fh, buf, n, off);
    return r < 0 ? -errno : (int) r;
}

static int t_write(const char *path, const char *buf, size_t n, off_t off,
                   struct fuse_file_info *fi) {
    ssize_t r = pwrite((int) fi->fh, buf, n, off);
    return r < 0 ? -errno : (int) r;
}

static int t_release(const char *path, struct fuse_file_info *fi) {
    close((int) fi->fh);
    return 0;
}

static int t_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    return ERR(datasync ? fdatasync((int) fi->fh) : fsync((int) fi->fh));
}

static int t_unlink(const char *path) { return ERR(unlinkat(root, rel(path), 0)); }
static int t_rmdir(const char *path) { return ERR(unlinkat(root, rel(path), AT_REMOVEDIR)); }
static int t_mkdir(const char *path, mode_t mode) { return ERR(mkdirat(root, rel(path), mode)); }

static int t_rename(const char *from, const char *to, unsigned flags) {
    return ERR(renameat2(root, rel(from), root, rel(to), flags));
}

static int t_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    if (fi)
        return ERR(ftruncate((int) fi->fh, size));
    int fd = openat(root, rel(path), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    int r = ERR(ftruncate(fd, size));
    close(fd);
    return r;
}

static int t_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    if (fi)
        return ERR(futimens((int) fi->fh, tv));
    return ERR(utimensat(root, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

static int t_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    return ERR(fchmodat(root, rel(path), mode, 0));
}

static int t_statfs(const char *path, struct statvfs *st) {
    rel(path);
    return ERR(fstatvfs(root, st));
}

static const struct fuse_operations ops = {
    .getattr = t_getattr, .readdir = t_readdir, .open = t_open,     .create = t_create,
    .read = t_read,       .write = t_write,     .release = t_release, .fsync = t_fsync,
    .unlink = t_unlink,   .rmdir = t_rmdir,     .mkdir = t_mkdir,   .rename = t_rename,
    .truncate = t_truncate, .utimens = t_utimens, .chmod = t_chmod, .statfs = t_statfs,
};

int main(int argc, char **argv) {
    const char *state = NULL, *mnt = NULL;
    int exit_now = 0, never_mount = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--exit-now"))
            exit_now = 1;
        else if (!strcmp(argv[i], "--never-mount"))
            never_mount = 1;
        else if (!strcmp(argv[i], "--ignore-term"))
            signal(SIGTERM, SIG_IGN); /* with --never-mount: needs SIGKILL */
        else if (!strcmp(argv[i], "--hang"))
            hang = 1;
        else if (!strcmp(argv[i], "--state") && i + 1 < argc)
            state = argv[++i];
        else if (!strcmp(argv[i], "--content") && i + 1 < argc)
            i++; /* accepted for command-line compatibility with wsfs */
        else if (argv[i][0] != '-' && !mnt)
            mnt = argv[i];
        else {
            fprintf(stderr, "testfs: bad argument '%s'\n", argv[i]);
            return 2;
        }
    }
    fprintf(stderr, "testfs: workspace=%s pid=%d\n", getenv("LAYOUTD_WORKSPACE") ?: "?", (int) getpid());
    if (exit_now)
        return 3;
    if (never_mount) {
        for (;;)
            pause();
    }
    if (!state || !mnt) {
        fprintf(stderr, "usage: testfs [--exit-now|--never-mount|--hang] --state DIR MOUNTPOINT\n");
        return 2;
    }
    root = open(state, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        perror("testfs: state dir");
        return 1;
    }
    char *fargv[] = { argv[0], "-f", "-o", "fsname=testfs,subtype=testfs", (char *) mnt, NULL };
    fprintf(stderr, "testfs: serving %s at %s\n", state, mnt);
    return fuse_main(5, fargv, &ops, NULL);
}
