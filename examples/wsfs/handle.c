/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File handles, as virtiofsd's --inode-file-handles uses them: an inode is
 * remembered by name_to_handle_at()'s handle instead of an O_PATH fd held
 * for as long as the kernel remembers the inode (which, without memory
 * pressure, is forever: a node_modules tree then exhausts RLIMIT_NOFILE).
 * open_by_handle_at() turns it back into an fd when one is needed; it
 * needs CAP_DAC_READ_SEARCH (root) and an fd on the handle's mount.
 *
 * The mount table: mount id -> an O_RDONLY directory fd on that mount.
 * Mount ids are reused after an unmount; the fd we keep pins the mount,
 * so an id in the table names the same mount for the daemon's lifetime.
 * The table only grows (a few entries: the state dir's mount, and any
 * mount below it), so readers need no lock: entries are written before
 * the count that publishes them.
 */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>

#include "wsfs.h"

typedef struct {
    struct file_handle fh;
    unsigned char bytes[MAX_HANDLE_SZ];
} RawHandle;

void mount_table_init(MountTable *t) {
    pthread_mutex_init(&t->lock, NULL);
    atomic_store(&t->n, 0);
}

void mount_table_done(MountTable *t) {
    size_t n = atomic_load(&t->n);
    for (size_t i = 0; i < n; i++)
        safe_close(t->fds[i]);
    atomic_store(&t->n, 0);
    pthread_mutex_destroy(&t->lock);
}

static int mount_fd_of(MountTable *t, int mount_id) {
    size_t n = atomic_load_explicit(&t->n, memory_order_acquire);
    for (size_t i = 0; i < n; i++)
        if (t->ids[i] == mount_id)
            return t->fds[i];
    return -ENOENT;
}

static int raw_handle_of(int fd, RawHandle *h, int *ret_mount_id) {
    h->fh.handle_bytes = MAX_HANDLE_SZ;
    if (name_to_handle_at(fd, "", &h->fh, ret_mount_id, AT_EMPTY_PATH) < 0)
        return errno == EOVERFLOW ? -EOPNOTSUPP : negative_errno();
    return 0;
}

int mount_table_add(MountTable *t, int dir_fd) {
    RawHandle h;
    int id, r = raw_handle_of(dir_fd, &h, &id);
    if (r < 0)
        return r;
    pthread_mutex_lock(&t->lock);
    size_t n = atomic_load(&t->n);
    if (mount_fd_of(t, id) >= 0)
        r = 0;
    else if (n >= WSFS_MAX_MOUNTS)
        r = -E2BIG;
    else {
        int fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
            r = negative_errno();
        else {
            t->ids[n] = id;
            t->fds[n] = fd;
            atomic_store_explicit(&t->n, n + 1, memory_order_release);
        }
    }
    pthread_mutex_unlock(&t->lock);
    return r;
}

int file_handle_of_fd(MountTable *t, int fd, FileHandle *ret) {
    RawHandle h;
    int id, r = raw_handle_of(fd, &h, &id);
    if (r < 0)
        return r;
    if (h.fh.handle_bytes > WSFS_HANDLE_BYTES)
        return -EOPNOTSUPP;
    if (mount_fd_of(t, id) < 0) {
        /* A mount below the state dir: its root is a directory we can
         * open for the table (an fd on a mount that is a file is not
         * worth the trouble: the caller keeps an O_PATH fd instead). */
        char proc[32];
        struct stat st;
        if (fstat(fd, &st) < 0)
            return negative_errno();
        if (!S_ISDIR(st.st_mode))
            return -ENOENT;
        snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
        _cleanup_close_ int dfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            return negative_errno();
        if ((r = mount_table_add(t, dfd)) < 0)
            return r;
    }
    *ret = (FileHandle) { .mount_id = id, .type = h.fh.handle_type, .len = h.fh.handle_bytes };
    memcpy(ret->bytes, h.bytes, h.fh.handle_bytes);
    return 0;
}

int file_handle_open(MountTable *t, const FileHandle *fh, int flags) {
    RawHandle h;
    int mfd = mount_fd_of(t, fh->mount_id);
    if (mfd < 0 || fh->len == 0)
        return -ESTALE;
    h.fh.handle_bytes = fh->len;
    h.fh.handle_type = fh->type;
    memcpy(h.bytes, fh->bytes, fh->len);
    int fd = open_by_handle_at(mfd, &h.fh, flags | O_CLOEXEC);
    return fd < 0 ? negative_errno() : fd;
}

bool file_handle_equal(const FileHandle *a, const FileHandle *b) {
    return a->mount_id == b->mount_id && a->type == b->type && a->len == b->len &&
           memcmp(a->bytes, b->bytes, a->len) == 0;
}
