/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The inode table. A FUSE node id is the address of an Inode; the kernel
 * keeps it alive with its lookup count (nlookup) until FORGET. An Inode
 * holds no fd of its own: it holds the backing inode's file handle, and a
 * slot in the fd cache (fdcache.c) that may or may not have an fd now.
 *
 * Inodes are found again by (st_dev, st_ino) *and* handle: hard links
 * share one Inode, and an inode number that the backing filesystem reused
 * for a new file (the old one deleted while the kernel still remembers
 * it) gets a new Inode, since its handle (generation) differs.
 *
 * A filesystem without file handles (none under the state dir so far;
 * ext4, XFS, btrfs and tmpfs all have them) still works: such an inode
 * keeps its O_PATH fd for life (slot.permanent), as passthrough_ll does.
 */
#include <fcntl.h>
#include <stdio.h>

#include "wsfs.h"

static size_t hash_of(dev_t dev, ino_t ino, size_t n_buckets) {
    uint64_t h = (uint64_t) ino * UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t) dev;
    return (h ^ (h >> 29)) & (n_buckets - 1);
}

int inode_table_init(InodeTable *t, MountTable *mt, int root_fd, Stats *stats) {
    struct stat st;
    char proc[32];
    int r;

    *t = (InodeTable) { .stats = stats };
    if (fstatat(root_fd, "", &st, AT_EMPTY_PATH) < 0)
        return negative_errno();
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", root_fd);
    _cleanup_close_ int dfd = open(proc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return negative_errno();
    if ((r = mount_table_add(mt, dfd)) < 0)
        return r;
    t->root = (Inode) { .dev = st.st_dev, .ino = st.st_ino, .type = S_IFDIR, .nlookup = 2,
                        .slot = { .fd = root_fd, .permanent = true, .immortal = true }, .backing_id = -1 };
    if ((r = file_handle_of_fd(mt, root_fd, &t->root.fh)) < 0)
        return r;
    t->n_buckets = 1024;
    t->buckets = calloc(t->n_buckets, sizeof(Inode *));
    if (!t->buckets)
        return -ENOMEM;
    pthread_mutex_init(&t->lock, NULL);
    return 0;
}

void inode_table_done(InodeTable *t, FdCache *c) {
    for (size_t b = 0; b < t->n_buckets; b++)
        for (Inode *i = t->buckets[b], *n; i; i = n) {
            n = i->hnext;
            (void) fdcache_forget(c, &i->slot);
            free(i);
        }
    free(t->buckets);
    t->buckets = NULL;
    safe_close(t->root.slot.fd);
    pthread_mutex_destroy(&t->lock);
}

/* lock held */
static void grow(InodeTable *t) {
    size_t n = t->n_buckets * 2;
    Inode **b = calloc(n, sizeof(Inode *));
    if (!b)
        return; /* longer chains, still correct */
    for (size_t k = 0; k < t->n_buckets; k++)
        for (Inode *i = t->buckets[k], *next; i; i = next) {
            next = i->hnext;
            size_t h = hash_of(i->dev, i->ino, n);
            i->hnext = b[h];
            b[h] = i;
        }
    free(t->buckets);
    t->buckets = b;
    t->n_buckets = n;
}

int inode_table_get(InodeTable *t, const struct stat *st, const FileHandle *fh, bool in_store, Inode **ret) {
    if (st->st_dev == t->root.dev && st->st_ino == t->root.ino) {
        *ret = &t->root; /* its nlookup is never counted down to zero */
        return 0;
    }
    pthread_mutex_lock(&t->lock);
    size_t h = hash_of(st->st_dev, st->st_ino, t->n_buckets);
    Inode *i = t->buckets[h];
    while (i && !(i->dev == st->st_dev && i->ino == st->st_ino && file_handle_equal(&i->fh, fh)))
        i = i->hnext;
    if (!i) {
        i = calloc(1, sizeof(Inode));
        if (!i) {
            pthread_mutex_unlock(&t->lock);
            return -ENOMEM;
        }
        *i = (Inode) { .dev = st->st_dev, .ino = st->st_ino, .type = st->st_mode & S_IFMT, .fh = *fh,
                       .slot = { .fd = -EBADF }, .backing_id = -1, .in_store = in_store };
        i->hnext = t->buckets[h];
        t->buckets[h] = i;
        atomic_fetch_add(&t->stats->inodes, 1);
        if (++t->n > t->n_buckets)
            grow(t);
    }
    i->nlookup++;
    pthread_mutex_unlock(&t->lock);
    *ret = i;
    return 0;
}

unsigned inode_table_opens(InodeTable *t, dev_t dev, ino_t ino) {
    unsigned opens = 0;
    pthread_mutex_lock(&t->lock);
    for (Inode *i = t->buckets[hash_of(dev, ino, t->n_buckets)]; i; i = i->hnext)
        if (i->dev == dev && i->ino == ino)
            opens += i->opens;
    pthread_mutex_unlock(&t->lock);
    return opens;
}

void inode_ref(InodeTable *t, Inode *i) {
    if (i == &t->root)
        return;
    pthread_mutex_lock(&t->lock);
    i->nlookup++;
    pthread_mutex_unlock(&t->lock);
}

void inode_unref(InodeTable *t, FdCache *c, Inode *i, uint64_t n) {
    if (i == &t->root)
        return;
    pthread_mutex_lock(&t->lock);
    i->nlookup -= MIN(n, i->nlookup);
    bool gone = i->nlookup == 0;
    if (gone) {
        Inode **p = &t->buckets[hash_of(i->dev, i->ino, t->n_buckets)];
        while (*p && *p != i)
            p = &(*p)->hnext;
        if (*p)
            *p = i->hnext;
        t->n--;
        atomic_fetch_sub(&t->stats->inodes, 1);
    }
    pthread_mutex_unlock(&t->lock);
    /* The kernel forgot it; an operation that replied may still unpin it
     * (then the cache frees it at that unpin, inode_release). */
    if (gone && fdcache_forget(c, &i->slot))
        free(i);
}

void inode_release(FdSlot *s) {
    free((Inode *) ((char *) s - offsetof(Inode, slot)));
}
