/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the files of src/place/ (place-internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "place-internal.h"
#include "quota.h"
#include "util.h"

void place_error_done(PlaceError *e) {
    if (!e)
        return;
    free(e->message);
    *e = (PlaceError) {};
}

int place_fail(PlaceError *error, int r, PlaceReason reason, const char *fmt, ...) {
    if (!error)
        return r;
    va_list ap;
    va_start(ap, fmt);
    char *m = NULL;
    if (vasprintf(&m, fmt, ap) < 0)
        m = NULL; /* the errno still says what happened */
    va_end(ap);
    free(error->message);
    error->message = m;
    error->reason = reason;
    return r;
}

int place_reason_to_errno(PlaceReason r) {
    switch (r) {
    case PLACE_REASON_NONE:
        return 0;
    case PLACE_REASON_POOL_FULL:
    case PLACE_REASON_TOO_BIG:
    case PLACE_REASON_HOST_FULL:
    case PLACE_REASON_NO_SPACE:
    case PLACE_REASON_NO_INODES:
        return -ENOSPC;
    case PLACE_REASON_READ_ONLY:
        return -EROFS;
    case PLACE_REASON_STICKY_MISSING:
        return -ENODEV;
    case PLACE_REASON_INVALID:
        return -EINVAL;
    default: /* at-bound, tenant, degraded, unavailable on a sticky volume */
        return -EBUSY;
    }
}

int place_volume_observe_default(const VolumeRecord *v, const char *mount_path,
                                 PlaceVolumeObservation *ret) {
    struct statvfs sv;
    struct stat st, parent;

    if (!v || !mount_path || !ret)
        return -EINVAL;
    PlaceVolumeObservation o = {};
    if (statvfs(mount_path, &sv) < 0) {
        if (errno != ENOENT && errno != ENOTDIR && errno != ENOTCONN && errno != EACCES)
            return -errno;
        /* ENOTCONN: a dead FUSE or a lost loop device under the mount. */
        o.flags |= PLACE_VOLUME_UNAVAILABLE;
        *ret = o;
        return 0;
    }
    if (v->backend != BACKEND_DIR) {
        _cleanup_free_ char *up = NULL;
        if (asprintf(&up, "%s/..", mount_path) < 0)
            return -ENOMEM;
        /* Same device as its parent: nothing is mounted there (a bind
         * mount of the same fs would also pass for unmounted, which errs
         * on the safe side). */
        if (stat(mount_path, &st) < 0 || stat(up, &parent) < 0 || st.st_dev == parent.st_dev)
            o.flags |= PLACE_VOLUME_UNAVAILABLE;
    }
    o.free_bytes = (uint64_t) sv.f_bavail * sv.f_frsize;
    o.free_inodes = sv.f_favail;
    o.size_bytes = (uint64_t) sv.f_blocks * sv.f_frsize;
    _cleanup_close_ int fd = open(mount_path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || quota_project_enforced(fd) <= 0)
        o.flags |= PLACE_VOLUME_NO_QUOTA;
    if (sv.f_flag & ST_RDONLY)
        o.flags |= PLACE_VOLUME_READ_ONLY;
    *ret = o;
    return 0;
}

int place_observe(PlaceContext *c, const VolumeRecord *v, PlaceVolumeObservation *ret) {
    _cleanup_free_ char *mount = NULL;
    int r = layout_mount_path(c->layout, v->name, &mount);
    if (r < 0)
        return r;
    if (c->observe)
        return c->observe(c->observe_userdata, v, mount, ret);
    return place_volume_observe_default(v, mount, ret);
}

typedef struct VolumeSlot {
    const VolumeRecord *v;
    size_t candidate;
} VolumeSlot;

static int slot_compare(const void *a, const void *b) {
    return strcmp(((const VolumeSlot *) a)->v->name, ((const VolumeSlot *) b)->v->name);
}

static int slot_key_compare(const void *key, const void *b) {
    return strcmp(key, ((const VolumeSlot *) b)->v->name);
}

int place_state_candidates(PlaceContext *c, PlaceCandidate **ret, size_t *ret_n) {
    const StateRecord *s = c->record;
    size_t n = 0;

    for (size_t i = 0; i < s->n_volumes; i++)
        if (s->volumes[i]->role == POOL_STATE && s->volumes[i]->name)
            n++;
    _cleanup_free_ PlaceCandidate *cands = calloc(n + c->n_extra ?: 1, sizeof(PlaceCandidate));
    _cleanup_free_ VolumeSlot *slots = calloc(n ?: 1, sizeof(VolumeSlot));
    if (!cands || !slots)
        return -ENOMEM;

    size_t k = 0;
    for (size_t i = 0; i < s->n_volumes; i++) {
        const VolumeRecord *v = s->volumes[i];
        if (v->role != POOL_STATE || !v->name)
            continue;
        cands[k] = (PlaceCandidate) { .name = v->name, .index = v->index };
        slots[k] = (VolumeSlot) { .v = v, .candidate = k };
        k++;
    }
    qsort(slots, n, sizeof(VolumeSlot), slot_compare);

    /* One pass over the workspaces instead of one per volume: with 300
     * volumes and 1,000 workspaces that is the difference between ~10k
     * and 300k string comparisons per decision.
     *
     * A create in flight (recorded as "creating": its directory is being
     * made in a worker) takes its slot as an active workspace does, as
     * state_record_count_workspaces() counts it when the intent is
     * recorded: a decision that left it out would pick a volume that the
     * intent then finds at its bound, and refuse a create while the pool
     * has room (50 concurrent creates got 17 spurious 409s so). */
    for (size_t i = 0; i < s->n_workspaces; i++) {
        const WorkspaceRecord *w = s->workspaces[i];
        if (!(w->active || w->creating) || !w->volume)
            continue;
        const VolumeSlot *slot = bsearch(w->volume, slots, n, sizeof(VolumeSlot), slot_key_compare);
        if (!slot)
            continue; /* placed on a volume the record lost: drift, reported elsewhere */
        PlaceCandidate *cand = &cands[slot->candidate];
        const char *t = w->tenant ?: "";
        if (cand->n_workspaces == 0)
            cand->tenant = t;
        else if (!streq(cand->tenant, t))
            cand->mixed_tenants = true;
        cand->n_workspaces++;
        cand->quota_sum += w->quota;
    }

    for (size_t i = 0; i < n; i++) {
        PlaceVolumeObservation o = {};
        int r = place_observe(c, slots[i].v, &o);
        if (r < 0)
            return r;
        PlaceCandidate *cand = &cands[slots[i].candidate];
        cand->free_bytes = o.free_bytes;
        cand->free_inodes = o.free_inodes;
        cand->size_bytes = o.size_bytes;
        cand->flags = o.flags;
        cand->flush_known = o.flush_known;
        cand->flush_usec = o.flush_usec;
    }

    /* The extras: a volume being carved replaces its (not yet mounted)
     * record entry, with the creates waiting for it counted; a refused one
     * only takes its index. */
    size_t total = n;
    for (size_t i = 0; i < c->n_extra; i++) {
        const PlaceCandidate *x = &c->extra[i];
        const VolumeSlot *slot = n > 0 ? bsearch(x->name, slots, n, sizeof(VolumeSlot), slot_key_compare) : NULL;
        if (slot) {
            PlaceCandidate *cand = &cands[slot->candidate];
            if (cand->n_workspaces == 0) {
                cand->tenant = x->tenant;
                cand->mixed_tenants = x->mixed_tenants;
            } else if (x->n_workspaces > 0 && !streq_ptr(cand->tenant, x->tenant))
                cand->mixed_tenants = true;
            cand->n_workspaces += x->n_workspaces;
            cand->free_bytes = x->free_bytes;
            cand->free_inodes = x->free_inodes;
            cand->flags = x->flags;
        } else
            cands[total++] = *x;
    }
    *ret = TAKE_PTR(cands);
    *ret_n = total;
    return 0;
}

int place_save(PlaceContext *c) {
    if (c->save)
        return c->save(c->save_userdata, c->record);
    if (!c->record_path)
        return 0;
    return state_record_save(c->record, c->record_path);
}

int place_open_workspaces_dir(const char *mount, bool create, int *ret_fd) {
    _cleanup_close_ int mfd = open(mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (mfd < 0)
        return -errno;
    if (create && mkdirat(mfd, "workspaces", 0755) < 0 && errno != EEXIST)
        return -errno;
    int fd = openat(mfd, "workspaces", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    *ret_fd = fd;
    return 0;
}
