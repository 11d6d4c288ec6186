/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Reconciling the record with the workspace directories that exist (see
 * place-workspaces.h). Nothing is ever deleted here: a directory without a
 * record is adopted as kept data, so an operator sees it (and can reclaim
 * or destroy it) instead of it silently filling a volume.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "place-cache.h"
#include "place-id.h"
#include "place-internal.h"
#include "util.h"
#include "string-table.h"

static const char *const place_reconcile_kind_table[_PLACE_RECONCILE_KIND_MAX] = {
    [PLACE_RECONCILE_ADOPTED] = "adopted",
    [PLACE_RECONCILE_MISSING] = "missing",
    [PLACE_RECONCILE_CONFLICT] = "conflict",
    [PLACE_RECONCILE_IGNORED] = "ignored",
    [PLACE_RECONCILE_UNAVAILABLE] = "unavailable",
    [PLACE_RECONCILE_STRAY_CACHE] = "stray-cache",
};

DEFINE_STRING_TABLE_LOOKUP(place_reconcile_kind, PlaceReconcileKind);

void place_reconcile_report_done(PlaceReconcileReport *r) {
    if (!r)
        return;
    for (size_t i = 0; i < r->n_items; i++) {
        free(r->items[i].volume);
        free(r->items[i].name);
        free(r->items[i].path);
    }
    free(r->items);
    *r = (PlaceReconcileReport) {};
}

static int report_add(PlaceReconcileReport *rep, PlaceReconcileKind kind, const char *volume,
                      const char *name, const char *path) {
    PlaceReconcileItem it = { .kind = kind };
    if ((volume && !(it.volume = strdup(volume))) || (name && !(it.name = strdup(name))) ||
        (path && !(it.path = strdup(path)))) {
        free(it.volume);
        free(it.name);
        free(it.path);
        return -ENOMEM;
    }
    PlaceReconcileItem *t = realloc(rep->items, sizeof(PlaceReconcileItem) * (rep->n_items + 1));
    if (!t) {
        free(it.volume);
        free(it.name);
        free(it.path);
        return -ENOMEM;
    }
    t[rep->n_items++] = it;
    rep->items = t;
    return 0;
}

static int scan_volume(PlaceContext *c, const VolumeRecord *v, const char *mount,
                       PlaceReconcileReport *rep) {
    _cleanup_close_ int wfd = -EBADF;
    int r = place_open_workspaces_dir(mount, false, &wfd);
    if (r == -ENOENT)
        goto missing; /* no workspaces/ yet: every record on it is missing */
    if (r < 0)
        return r;

    DIR *d = fdopendir(wfd);
    if (!d)
        return -errno;
    TAKE_FD(wfd);
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            r = errno != 0 ? -errno : 0;
            break;
        }
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/workspaces/%s", mount, de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        struct stat st;
        bool is_dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 &&
                      S_ISDIR(st.st_mode);
        if (!is_dir || !place_workspace_id_is_valid(de->d_name)) {
            r = report_add(rep, PLACE_RECONCILE_IGNORED, v->name, de->d_name, path);
            if (r < 0)
                break;
            continue;
        }
        WorkspaceRecord *w = state_record_find_workspace(c->record, de->d_name);
        if (w) {
            if (!streq_ptr(w->volume, v->name)) {
                /* The same id on two volumes: the record names one of them.
                 * Adopting the other would need a second record for the
                 * id; the operator has to decide. */
                r = report_add(rep, PLACE_RECONCILE_CONFLICT, v->name, de->d_name, path);
                if (r < 0)
                    break;
            }
            continue;
        }
        WorkspaceRecord nw = {
            .id = de->d_name,
            .volume = v->name,
            .state_dir = path,
            .active = false, /* kept data: counted towards no bound */
            .created_at = now_usec(CLOCK_REALTIME),
        };
        _cleanup_free_ char *mp = NULL;
        if (c->layout->workspace.mount_root &&
            asprintf(&mp, "%s/%s", c->layout->workspace.mount_root, de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        nw.mountpoint = mp;
        r = state_record_add_workspace(c->record, &nw, NULL);
        if (r < 0)
            break;
        rep->changed = true;
        rep->n_adopted++;
        r = report_add(rep, PLACE_RECONCILE_ADOPTED, v->name, de->d_name, path);
        if (r < 0)
            break;
    }
    closedir(d);
    if (r < 0)
        return r;

missing:
    for (size_t i = 0; i < c->record->n_workspaces; i++) {
        const WorkspaceRecord *w = c->record->workspaces[i];
        if (!streq_ptr(w->volume, v->name) || w->creating)
            continue; /* (being created: its directory comes with the create) */
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/workspaces/%s", mount, w->id) < 0)
            return -ENOMEM;
        struct stat st;
        if (lstat(path, &st) >= 0 && S_ISDIR(st.st_mode))
            continue;
        r = report_add(rep, PLACE_RECONCILE_MISSING, v->name, w->id, path);
        if (r < 0)
            return r;
    }
    return 0;
}

/* The caches (place-cache.h) on a volume that belong to no workspace of
 * it: a destroy that an older agent left half done, a record edited by
 * hand. Derived data, but still data: said, never deleted here. A cache
 * beside an adopted directory is that workspace's (scan_volume ran
 * first). Report only: a derived/ that cannot be read is an item too,
 * never a failure of the reconcile (whose adoptions matter more).
 * Returns: -ENOMEM, 0. */
static int scan_caches(PlaceContext *c, const VolumeRecord *v, const char *mount, PlaceReconcileReport *rep) {
    _cleanup_free_ char *dir = NULL;
    if (asprintf(&dir, "%s/" PLACE_CACHE_DIR, mount) < 0)
        return -ENOMEM;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT ? 0 : report_add(rep, PLACE_RECONCILE_IGNORED, v->name, PLACE_CACHE_DIR, dir);
    DIR *d = fdopendir(fd);
    if (!d) {
        safe_close(fd);
        return -ENOMEM;
    }
    int r = 0;
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno != 0) /* what was read is reported; the rest next time */
                r = report_add(rep, PLACE_RECONCILE_IGNORED, v->name, PLACE_CACHE_DIR, dir);
            break;
        }
        if (streq(de->d_name, ".") || streq(de->d_name, ".."))
            continue;
        _cleanup_free_ char *path = NULL;
        if (asprintf(&path, "%s/%s", dir, de->d_name) < 0) {
            r = -ENOMEM;
            break;
        }
        struct stat st;
        bool is_dir = fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) >= 0 && S_ISDIR(st.st_mode);
        const WorkspaceRecord *w = state_record_find_workspace(c->record, de->d_name);
        if (is_dir && w && streq_ptr(w->volume, v->name))
            continue;
        /* Not a cache at all (a file, a name no workspace can have):
         * ignored, as in workspaces/. */
        bool cache = is_dir && place_workspace_id_is_valid(de->d_name);
        r = report_add(rep, cache ? PLACE_RECONCILE_STRAY_CACHE : PLACE_RECONCILE_IGNORED, v->name, de->d_name,
                       path);
        if (r < 0)
            break;
    }
    closedir(d);
    return r;
}

int place_reconcile(PlaceContext *c, PlaceReconcileReport *ret) {
    if (!c || !c->layout || !c->record || !ret)
        return -EINVAL;
    PlaceReconcileReport rep = {};
    int r = 0;

    for (size_t i = 0; i < c->record->n_volumes; i++) {
        const VolumeRecord *v = c->record->volumes[i];
        if (v->role != POOL_STATE || !v->name)
            continue;
        _cleanup_free_ char *mount = NULL;
        r = layout_mount_path(c->layout, v->name, &mount);
        if (r < 0)
            goto fail;
        PlaceVolumeObservation o = {};
        r = place_observe(c, v, &o);
        if (r < 0)
            goto fail;
        if (o.flags & PLACE_VOLUME_UNAVAILABLE) {
            /* Scanning an unmounted mount point would report every
             * workspace missing and adopt whatever lies on the host fs. */
            r = report_add(&rep, PLACE_RECONCILE_UNAVAILABLE, v->name, NULL, mount);
            if (r < 0)
                goto fail;
            continue;
        }
        r = scan_volume(c, v, mount, &rep);
        if (r < 0)
            goto fail;
        r = scan_caches(c, v, mount, &rep);
        if (r < 0)
            goto fail;
    }
    if (rep.changed) {
        r = place_save(c);
        if (r < 0)
            goto fail;
    }
    *ret = rep;
    return 0;

fail:
    /* Adopted entries stay in the in-memory record; they are true, and
     * the next successful save persists them. */
    place_reconcile_report_done(&rep);
    return r;
}
