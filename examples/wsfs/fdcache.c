/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The fd cache: a bounded LRU of O_PATH fds, one per inode at most, opened
 * from the inode's file handle when an operation needs one.
 *
 * The bound (cap) covers what the daemon holds per file: the cached fds
 * plus the fds of open files and directories ("held", charged by ops.c).
 * Open files are the application's to close, so they cannot be made to
 * wait; the cache gives way instead: it keeps at most cap - held fds, but
 * never fewer than floor, which is larger than what all FUSE threads can
 * pin at once (each operation pins at most a few inodes). So a pin can
 * always make progress: it evicts the least recently used idle fd, or
 * waits for an operation in flight to unpin one. An fd is only closed
 * when no operation uses it (pins == 0): a cache that is too small costs
 * open_by_handle_at() calls, never EBADF.
 *
 * EMFILE/ENFILE from any open in the daemon (the limit may be lower than
 * the bound, e.g. lowered by prlimit while running) sheds idle cached fds
 * and retries (FD_RETRY); only when nothing can be shed does the error
 * reach the application, and then only the operation that needed the fd.
 */
#include <fcntl.h>
#include <stdio.h>

#include "wsfs.h"

void fdcache_init(FdCache *c, size_t cap, size_t floor, Stats *stats, FdSlotReleaseFn release) {
    *c = (FdCache) { .cap = MAX(cap, floor), .floor = floor, .stats = stats, .release = release };
    c->idle.prev = c->idle.next = &c->idle;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
}

void fdcache_done(FdCache *c) {
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
}

static void idle_unlink(FdSlot *s) {
    s->prev->next = s->next;
    s->next->prev = s->prev;
    s->prev = s->next = NULL;
}

static void idle_append(FdCache *c, FdSlot *s) {
    s->prev = c->idle.prev;
    s->next = &c->idle;
    c->idle.prev->next = s;
    c->idle.prev = s;
}

static size_t limit(FdCache *c) {
    return c->cap > c->held + c->floor ? c->cap - c->held : c->floor;
}

/* Closes the least recently used idle fd. lock held. Returns: false if
 * there is none. */
static bool evict_one(FdCache *c) {
    FdSlot *s = c->idle.next;
    if (s == &c->idle)
        return false;
    idle_unlink(s);
    s->fd = safe_close(s->fd);
    c->cached--;
    atomic_fetch_sub(&c->stats->fds_cached, 1);
    atomic_fetch_add(&c->stats->fd_cache_evictions, 1);
    return true;
}

static void wake(FdCache *c) {
    if (c->waiters > 0)
        pthread_cond_broadcast(&c->changed);
}

int fdcache_pin(FdCache *c, MountTable *mt, FdSlot *s, const FileHandle *fh) {
    if (s->immortal)
        return s->fd;

    pthread_mutex_lock(&c->lock);
    if (s->permanent) { /* counted, so that a FORGET meanwhile waits for us */
        s->pins++;
        pthread_mutex_unlock(&c->lock);
        return s->fd;
    }
    for (;;) {
        if (s->fd >= 0) {
            if (s->pins++ == 0)
                idle_unlink(s);
            pthread_mutex_unlock(&c->lock);
            atomic_fetch_add(&c->stats->fd_cache_hits, 1);
            return s->fd;
        }
        if (s->opening) { /* another thread opens it: use that one */
            c->waiters++;
            pthread_cond_wait(&c->changed, &c->lock);
            c->waiters--;
            continue;
        }
        if (c->cached < limit(c) || evict_one(c))
            break;
        /* Every cached fd is in use by an operation in flight: one of
         * them is about to unpin (the floor guarantees it). */
        atomic_fetch_add(&c->stats->fd_cache_waits, 1);
        c->waiters++;
        pthread_cond_wait(&c->changed, &c->lock);
        c->waiters--;
    }
    s->opening = true;
    c->cached++;
    pthread_mutex_unlock(&c->lock);

    atomic_fetch_add(&c->stats->fd_cache_misses, 1);
    int fd;
    while ((fd = file_handle_open(mt, fh, O_PATH | O_NOFOLLOW)) < 0 && fdcache_shed(c, -fd))
        ;

    pthread_mutex_lock(&c->lock);
    s->opening = false;
    bool release = false;
    if (fd < 0) {
        c->cached--;
        release = s->doomed && s->pins == 0;
    } else if (s->doomed) {
        /* Forgotten while we opened: only pinners may still use it. */
        c->cached--;
        s->fd = fd;
        s->pins++;
    } else {
        s->fd = fd;
        s->pins++;
        atomic_fetch_add(&c->stats->fds_cached, 1);
    }
    wake(c);
    pthread_mutex_unlock(&c->lock);
    if (release)
        c->release(s);
    return fd;
}

void fdcache_unpin(FdCache *c, FdSlot *s) {
    if (s->immortal)
        return;
    pthread_mutex_lock(&c->lock);
    if (s->doomed) {
        bool last = --s->pins == 0 && !s->opening;
        if (last)
            s->fd = safe_close(s->fd);
        pthread_mutex_unlock(&c->lock);
        if (last)
            c->release(s);
        return;
    }
    if (--s->pins == 0 && !s->permanent) {
        /* Over the bound (open files took fds meanwhile): close it now. */
        if (c->cached > limit(c)) {
            s->fd = safe_close(s->fd);
            c->cached--;
            atomic_fetch_sub(&c->stats->fds_cached, 1);
            atomic_fetch_add(&c->stats->fd_cache_evictions, 1);
        } else
            idle_append(c, s);
        wake(c);
    }
    pthread_mutex_unlock(&c->lock);
}

void fdcache_offer(FdCache *c, FdSlot *s, int fd) {
    if (s->permanent) {
        safe_close(fd);
        return;
    }
    pthread_mutex_lock(&c->lock);
    if (s->fd < 0 && !s->opening && !s->doomed && (c->cached < limit(c) || evict_one(c))) {
        s->fd = TAKE_FD(fd);
        c->cached++;
        atomic_fetch_add(&c->stats->fds_cached, 1);
        if (s->pins == 0)
            idle_append(c, s);
        wake(c);
    }
    pthread_mutex_unlock(&c->lock);
    safe_close(fd);
}

bool fdcache_forget(FdCache *c, FdSlot *s) {
    if (s->immortal)
        return false;
    pthread_mutex_lock(&c->lock);
    bool now = s->pins == 0 && !s->opening;
    if (!now)
        s->doomed = true;
    if (s->fd >= 0 && !s->permanent) {
        if (s->pins == 0)
            idle_unlink(s);
        else
            s->doomed = true;
        /* Out of the cache's count now; a pinner's fd stays open. */
        c->cached--;
        atomic_fetch_sub(&c->stats->fds_cached, 1);
        if (s->pins == 0)
            s->fd = safe_close(s->fd);
        wake(c);
    } else if (s->fd >= 0 && now)
        s->fd = safe_close(s->fd);
    pthread_mutex_unlock(&c->lock);
    return now;
}

void fdcache_charge(FdCache *c, int n) {
    pthread_mutex_lock(&c->lock);
    c->held = n < 0 && (size_t) -n > c->held ? 0 : c->held + n;
    atomic_store(&c->stats->fds_handles, c->held);
    /* Make room at once, so the daemon's total stays under the bound. */
    while (n > 0 && c->cached > limit(c) && evict_one(c))
        ;
    if (n < 0)
        wake(c);
    pthread_mutex_unlock(&c->lock);
}

bool fdcache_shed(FdCache *c, int err) {
    int saved = errno;
    size_t shed = 0;
    if (err != EMFILE && err != ENFILE)
        return false;
    pthread_mutex_lock(&c->lock);
    /* Half of what is idle (at least one): the limit is lower than we
     * thought; later misses will shed again if it stays so. */
    size_t want = MAX((size_t) 1, c->cached / 2);
    while (shed < want && evict_one(c))
        shed++;
    pthread_mutex_unlock(&c->lock);
    if (shed > 0) {
        atomic_fetch_add(&c->stats->fd_sheds, 1);
        if (!atomic_exchange(&c->shed_logged, true))
            fprintf(stderr, "layoutd-wsfs: out of file descriptors (%s): closing cached fds and retrying "
                    "(logged once; see fd_sheds in the stats)\n", strerror(err));
    }
    errno = saved;
    return shed > 0;
}
