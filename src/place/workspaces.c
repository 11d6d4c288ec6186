/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Workspace create / remove / list / get on the state pool.
 *
 * Crash safety of create (docs/placement.md): the record learns about a
 * workspace before its directory exists, and only calls it active after
 * the directory is complete:
 *
 *   1. record the workspace as kept data (active = false), save
 *   2. mkdir <volume>/workspaces/<id>, chown, chmod
 *   3. mark it active, save
 *
 * A crash after 1 leaves an inactive entry (no directory, or an empty one
 * after 2): it counts towards no bound, the id stays reserved, and
 * reclaiming it (or destroying it) finishes the job. A crash after 3 is a
 * complete workspace. A directory never exists without a record except
 * when something outside this code made it; place_reconcile() adopts those.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "place-cache.h"
#include "place-id.h"
#include "place-internal.h"
#include "quota.h"
#include "util.h"

void (*place_test_hook)(const char *point) = NULL;

static void test_point(const char *point) {
    if (place_test_hook)
        place_test_hook(point);
}

static int parse_id_number(const char *s, unsigned long *ret) {
    char *end;
    if (isempty(s) || s[0] < '0' || s[0] > '9')
        return -EINVAL;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno != 0 || *end || v >= (unsigned long) (uid_t) -1)
        return -EINVAL;
    *ret = v;
    return 0;
}

/* The workspace user and group: names or numbers; group defaults to the
 * user's primary group. */
static int resolve_owner(const WorkspaceConfig *wc, uid_t *ret_uid, gid_t *ret_gid, PlaceError *error) {
    const char *user = wc->user ?: "root";
    char buf[16384];
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    unsigned long num;
    uid_t uid;
    gid_t gid;

    int r = getpwnam_r(user, &pw, buf, sizeof(buf), &pwp);
    if (r == 0 && pwp) {
        uid = pwp->pw_uid;
        gid = pwp->pw_gid;
    } else if (parse_id_number(user, &num) >= 0) {
        uid = (uid_t) num;
        gid = (gid_t) num;
    } else
        return place_fail(error, -ESRCH, PLACE_REASON_NONE,
                          "workspace user '%s' (workspace.user) does not exist", user);

    if (wc->group) {
        r = getgrnam_r(wc->group, &gr, buf, sizeof(buf), &grp);
        if (r == 0 && grp)
            gid = grp->gr_gid;
        else if (parse_id_number(wc->group, &num) >= 0)
            gid = (gid_t) num;
        else
            return place_fail(error, -ESRCH, PLACE_REASON_NONE,
                              "workspace group '%s' (workspace.group) does not exist", wc->group);
    }
    *ret_uid = uid;
    *ret_gid = gid;
    return 0;
}

static bool tenant_is_valid(const char *t) {
    if (!t)
        return true;
    if (!*t || strlen(t) > LAYOUT_NAME_MAX)
        return false;
    for (size_t i = 0; t[i]; i++) {
        char ch = t[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || (i > 0 && ch == '-')))
            return false;
    }
    return true;
}

int place_quota_support(const Layout *l, const char **ret_reason) {
    const Pool *pool = l ? layout_pool(l, POOL_STATE) : NULL;
    const BackendTraits *t = pool ? backend_traits(pool->backend) : NULL;
    if (!ret_reason)
        return -EINVAL;
    if (!t || !t->fs) {
        *ret_reason = "the state pool's backend (dir) has no filesystem of its own to enforce quotas on";
        return 0;
    }
    int r = quota_kernel_support(t->fs->name, ret_reason);
    /* Not known yet (no XFS volume mounted so far): the volumes tell, as
     * candidates that do not enforce them (PLACE_VOLUME_NO_QUOTA). */
    return r == -ENOENT ? 1 : r;
}

/* Checks that do not need the policy. Sets *ret_kept to the kept record
 * being reclaimed, if any. */
static int check_request(PlaceContext *c, const PlaceCreateRequest *req,
                         WorkspaceRecord **ret_kept, PlaceError *error) {
    /* Too long is a bad request like any other: -EINVAL for the caller
     * (the message says why), so the API answers 400 either way. */
    int r = place_workspace_id_check(req->id);
    if (r < 0)
        return place_fail(error, -EINVAL, PLACE_REASON_INVALID,
                          "invalid workspace id '%s': it must match [a-z0-9][a-z0-9-]* and be at "
                          "most %d characters", req->id ?: "", LAYOUT_WORKSPACE_ID_MAX);
    if (layout_name_is_volume(req->id))
        return place_fail(error, -EINVAL, PLACE_REASON_INVALID,
                          "invalid workspace id '%s': it is of the form volumes are named (state-N, content-N), "
                          "which no workspace may take", req->id);
    if (!tenant_is_valid(req->tenant))
        return place_fail(error, -EINVAL, PLACE_REASON_INVALID,
                          "invalid tenant '%s': it must match [a-z0-9][a-z0-9-]* and be at most %d "
                          "characters", req->tenant, LAYOUT_NAME_MAX);
    if (!layout_pool(c->layout, POOL_STATE))
        return place_fail(error, -ENOENT, PLACE_REASON_INVALID,
                          "the layout has no state pool (pools.state): workspaces cannot be placed");
    const char *why = NULL;
    if (req->quota != 0 && place_quota_support(c->layout, &why) == 0)
        return place_fail(error, -EOPNOTSUPP, PLACE_REASON_NO_QUOTA,
                          "workspace '%s' asked for a quota, which cannot be enforced here: %s; "
                          "leave the quota out", req->id, why);

    WorkspaceRecord *w = state_record_find_workspace(c->record, req->id);
    if (w && w->active)
        return place_fail(error, -EEXIST, PLACE_REASON_NONE,
                          "workspace '%s' already exists (on %s)", req->id, w->volume ?: "?");
    if (w && w->creating)
        return place_fail(error, -EEXIST, PLACE_REASON_NONE, "workspace '%s' is being created (on %s)", req->id,
                          w->volume ?: "?");
    if (w && !req->reclaim)
        return place_fail(error, -EEXIST, PLACE_REASON_NONE,
                          "workspace '%s' was removed with its data kept on %s; ask to reclaim it "
                          "to get that data back, or remove it with its data destroyed first",
                          req->id, w->volume ?: "?");
    if (w && !streq(w->tenant ?: "", req->tenant ?: ""))
        return place_fail(error, -EACCES, PLACE_REASON_TENANT,
                          "workspace '%s' has kept data of tenant '%s'; tenant '%s' cannot reclaim it",
                          req->id, w->tenant ?: "", req->tenant ?: "");
    *ret_kept = w;
    return 0;
}

int place_workspace_explain(PlaceContext *c, const PlaceCreateRequest *req,
                            PlaceDecision *ret, PlaceCandidate **ret_candidates,
                            size_t *ret_n_candidates, PlacePoolConfig *ret_config) {
    if (!c || !c->layout || !c->record || !req || !ret)
        return -EINVAL;
    const Pool *pool = layout_pool(c->layout, POOL_STATE);
    if (!pool)
        return -ENOENT;

    PlacePoolConfig cfg;
    place_pool_config_from_pool(pool, &cfg);
    cfg.host_checked = c->host_checked;
    cfg.host_carvable = c->host_carvable;
    WorkspaceRecord *kept = state_record_find_workspace(c->record, req->id);
    PlaceRequest preq = {
        .id = req->id,
        .tenant = req->tenant,
        .quota = req->quota,
        .sticky_volume = kept && !kept->active && req->reclaim ? kept->volume : NULL,
    };
    _cleanup_free_ PlaceCandidate *cands = NULL;
    size_t n = 0;
    int r = place_state_candidates(c, &cands, &n);
    if (r < 0)
        return r;
    r = place_policy_decide(cands, n, &preq, &cfg, ret);
    if (r < 0)
        return r;
    if (ret_candidates)
        *ret_candidates = TAKE_PTR(cands);
    if (ret_n_candidates)
        *ret_n_candidates = n;
    if (ret_config)
        *ret_config = cfg;
    return 0;
}

/* Carves the volume the decision asks for and checks it is usable. */
static int carve_volume(PlaceContext *c, unsigned index, VolumeRecord **ret, PlaceError *error) {
    _cleanup_free_ char *name = NULL;
    if (!c->carve)
        return place_fail(error, -ENOSPC, PLACE_REASON_POOL_FULL,
                          "every volume of pool 'state' is at its bound and a new volume (state-%u) "
                          "is needed, but carving is not available here", index);
    int r = c->carve(c->carve_userdata, POOL_STATE, index, &name);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE,
                          "carving volume state-%u failed: %s", index, strerror(-r));
    VolumeRecord *v = state_record_find_volume(c->record, name);
    if (!v || v->role != POOL_STATE)
        return place_fail(error, -EIO, PLACE_REASON_NONE,
                          "carving volume state-%u reported '%s', which the record does not hold "
                          "as a state volume", index, name ?: "");
    PlaceVolumeObservation o = {};
    r = place_observe(c, v, &o);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE, "observing new volume %s failed: %s",
                          v->name, strerror(-r));
    /* Not enforcing quotas is not a fault of the volume (the policy
     * weighs it per request). */
    if (o.flags & ~PLACE_VOLUME_NO_QUOTA)
        return place_fail(error, -EIO, PLACE_REASON_UNAVAILABLE,
                          "new volume %s is not usable after carving (%s)", v->name,
                          (o.flags & PLACE_VOLUME_UNAVAILABLE) ? "not mounted" :
                          (o.flags & PLACE_VOLUME_READ_ONLY) ? "read-only" : "degraded");
    /* The policy only knows volume_size; the filesystem's own overhead
     * can leave a fresh volume short of the reserve. Refuse clearly rather
     * than place a workspace where the rules say it does not fit. */
    const Pool *pool = layout_pool(c->layout, POOL_STATE);
    if (pool && (o.free_bytes < pool->workspace_reserve ||
                 o.free_inodes < pool->workspace_reserve_inodes)) {
        char have[32], need[32];
        return place_fail(error, -ENOSPC, PLACE_REASON_TOO_BIG,
                          "new volume %s has %s and %" PRIu64 " inodes free, less than a workspace "
                          "needs (%s workspace_reserve, %" PRIu64 " workspace_reserve_inodes); raise "
                          "pools.state.volume_size or lower the reserve", v->name,
                          format_bytes(have, sizeof(have), o.free_bytes), o.free_inodes,
                          format_bytes(need, sizeof(need), pool->workspace_reserve),
                          pool->workspace_reserve_inodes);
    }
    *ret = v;
    return 0;
}

/* An existing mount point for the id that is not an empty directory
 * belongs to someone else. An empty directory is what a destroyed
 * workspace leaves behind and holds nothing. */
static int check_mountpoint_free(const char *path) {
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    if (!S_ISDIR(st.st_mode))
        return -EEXIST;
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    DIR *d = fdopendir(fd);
    if (!d)
        return -errno;
    TAKE_FD(fd);
    int r = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (!streq(de->d_name, ".") && !streq(de->d_name, "..")) {
            r = -EEXIST;
            break;
        }
    closedir(d);
    return r;
}

/* Labels the directory with its project (inherited below it) and sets
 * the quota's limit. Without a quota a filesystem that has no project ids
 * (ext4 without the feature) is fine: the label only serves a quota. */
static int apply_project(const char *mount, int fd, const PlaceQuota *q) {
    int r = quota_dir_set_project(fd, q->project_id);
    if (r < 0)
        return q->limit_bytes > 0 ? r : 0;
    if (q->limit_bytes == 0 && !q->clear_limit)
        return 0;
    _cleanup_close_ int mfd = open(mount, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (mfd < 0)
        return q->limit_bytes > 0 ? -errno : 0;
    r = quota_set_limit(mfd, q->project_id, q->limit_bytes, 0);
    /* Clearing an old limit where quotas are off now (a reclaim on a
     * volume mounted without them) leaves nothing to clear. */
    return q->limit_bytes > 0 ? r : 0;
}

/* Makes the state directory (or, when reclaiming, makes sure it is there)
 * with the owner and mode the layout asks for, and its project quota. */
static int make_state_dir(const char *mount, const char *id, bool may_exist, uid_t uid, gid_t gid,
                          mode_t mode, const PlaceQuota *quota, bool *ret_created) {
    _cleanup_close_ int wfd = -EBADF, fd = -EBADF;
    bool created = true;

    int r = place_open_workspaces_dir(mount, true, &wfd);
    if (r < 0)
        return r;
    if (mkdirat(wfd, id, 0700) < 0) {
        if (errno != EEXIST || !may_exist)
            return -errno;
        created = false;
    }
    fd = openat(wfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    /* chown before chmod: chown clears set-id bits. mkdir's mode was
     * narrowed by the umask, so the mode is set explicitly. */
    if (fchown(fd, uid, gid) < 0 || fchmod(fd, mode & 07777) < 0) {
        r = -errno;
        if (created)
            (void) unlinkat(wfd, id, AT_REMOVEDIR);
        return r;
    }
    if (quota && quota->project_id > 0 && (r = apply_project(mount, fd, quota)) < 0) {
        if (created)
            (void) unlinkat(wfd, id, AT_REMOVEDIR);
        return r;
    }
    *ret_created = created;
    return 0;
}

int place_workspace_decide(PlaceContext *c, const PlaceCreateRequest *req, PlaceAction *ret_action,
                           char **ret_volume, unsigned *ret_carve_index, bool *ret_carving, char **ret_explanation,
                           PlaceError *error) {
    WorkspaceRecord *kept = NULL;
    int r;

    if (!c || !c->layout || !c->record || !req || !ret_action)
        return -EINVAL;
    r = check_request(c, req, &kept, error);
    if (r < 0)
        return r;
    uid_t uid;
    gid_t gid;
    r = resolve_owner(&c->layout->workspace, &uid, &gid, error);
    if (r < 0)
        return r;

    _cleanup_(place_decision_done) PlaceDecision d = {};
    _cleanup_free_ PlaceCandidate *cands = NULL;
    size_t n = 0;
    r = place_workspace_explain(c, req, &d, &cands, &n, NULL);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE, "placing workspace '%s' failed: %s", req->id, strerror(-r));
    switch (d.action) {
    case PLACE_ACTION_REFUSE:
        return place_fail(error, place_reason_to_errno(d.reason), d.reason, "%s", d.explanation);
    case PLACE_ACTION_USE:
        if (ret_volume && !(*ret_volume = strdup(cands[d.candidate].name)))
            return -ENOMEM;
        if (ret_carving)
            *ret_carving = cands[d.candidate].flags & PLACE_VOLUME_CARVING;
        break;
    case PLACE_ACTION_CARVE:
        if (ret_carve_index)
            *ret_carve_index = d.carve_index;
        if (ret_carving)
            *ret_carving = false;
        break;
    default:
        return -EINVAL;
    }
    if (ret_explanation)
        *ret_explanation = TAKE_PTR(d.explanation);
    *ret_action = d.action;
    return 0;
}

int place_workspace_create(PlaceContext *c, const PlaceCreateRequest *req,
                           WorkspaceRecord **ret, PlaceError *error) {
    _cleanup_free_ char *volume = NULL;
    PlaceAction action;
    unsigned index = 0;
    int r = place_workspace_decide(c, req, &action, &volume, &index, NULL, NULL, error);
    if (r < 0)
        return r;
    if (action == PLACE_ACTION_CARVE) {
        VolumeRecord *v = NULL;
        r = carve_volume(c, index, &v, error);
        if (r < 0)
            return r;
        if (!(volume = strdup(v->name)))
            return -ENOMEM;
    }
    return place_workspace_create_on(c, req, volume, ret, error);
}

/* The paths of a workspace on a state volume: its state directory and
 * its mount point (NULL without a mount_root). */
static int workspace_paths(const Layout *l, const char *volume, const char *id, char **ret_mount, char **ret_state_dir,
                           char **ret_mountpoint) {
    _cleanup_free_ char *mount = NULL, *state_dir = NULL, *mountpoint = NULL;
    int r = layout_mount_path(l, volume, &mount);
    if (r < 0)
        return r;
    if (asprintf(&state_dir, "%s/workspaces/%s", mount, id) < 0)
        return -ENOMEM;
    const char *mroot = l->workspace.mount_root;
    if (mroot && asprintf(&mountpoint, "%s/%s", mroot, id) < 0)
        return -ENOMEM;
    if (ret_mount)
        *ret_mount = TAKE_PTR(mount);
    *ret_state_dir = TAKE_PTR(state_dir);
    *ret_mountpoint = TAKE_PTR(mountpoint);
    return 0;
}

/* A project id no workspace of the record has: one past the highest.
 * Every workspace gets one, with or without a quota, so that a quota set
 * later (layoutctl quota) covers everything it wrote, and its usage can be
 * read either way. */
static uint32_t next_project_id(const StateRecord *s) {
    uint32_t max = 0;
    for (size_t i = 0; i < s->n_workspaces; i++)
        max = MAX(max, s->workspaces[i]->project_id);
    return max + 1;
}

int place_workspace_intent(PlaceContext *c, const PlaceCreateRequest *req, const char *volume,
                           WorkspaceRecord **ret, PlaceError *error) {
    WorkspaceRecord *kept = NULL;
    int r;

    if (!c || !c->layout || !c->record || !req || !volume)
        return -EINVAL;
    r = check_request(c, req, &kept, error);
    if (r < 0)
        return r;
    VolumeRecord *v = state_record_find_volume(c->record, volume);
    if (!v || v->role != POOL_STATE)
        return place_fail(error, -ENOENT, PLACE_REASON_NONE, "volume %s is not a state volume of the record", volume);
    const Pool *pool = layout_pool(c->layout, POOL_STATE);
    size_t n_on = state_record_count_workspaces(c->record, v->name);
    if (pool && n_on >= pool->workspaces_per_volume)
        return place_fail(error, -EBUSY, PLACE_REASON_AT_BOUND,
                          "volume %s holds %zu workspaces already (workspaces_per_volume=%u)", v->name, n_on,
                          pool->workspaces_per_volume);
    if (kept && !streq_ptr(kept->volume, v->name))
        return place_fail(error, -EBUSY, PLACE_REASON_NOT_STICKY,
                          "workspace '%s' has kept data on %s, not on %s", req->id, kept->volume ?: "?", v->name);
    PlaceVolumeObservation o = {};
    r = place_observe(c, v, &o);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE, "observing volume %s failed: %s", v->name, strerror(-r));
    if (o.flags & (PLACE_VOLUME_UNAVAILABLE | PLACE_VOLUME_READ_ONLY))
        return place_fail(error, (o.flags & PLACE_VOLUME_READ_ONLY) ? -EROFS : -EBUSY,
                          (o.flags & PLACE_VOLUME_READ_ONLY) ? PLACE_REASON_READ_ONLY : PLACE_REASON_UNAVAILABLE,
                          "volume %s cannot take workspace '%s' now: it is %s", v->name, req->id,
                          (o.flags & PLACE_VOLUME_READ_ONLY) ? "read-only" : "not mounted");

    _cleanup_free_ char *state_dir = NULL, *mountpoint = NULL;
    r = workspace_paths(c->layout, v->name, req->id, NULL, &state_dir, &mountpoint);
    if (r < 0)
        return r;
    if (!kept) {
        WorkspaceRecord w = {
            .id = (char *) req->id,
            .tenant = (char *) req->tenant,
            .quota = req->quota,
            .project_id = next_project_id(c->record),
            .labels = req->labels,
            .volume = v->name,
            .state_dir = state_dir,
            .mountpoint = mountpoint,
            .creating = true,
            .created_at = now_usec(CLOCK_REALTIME),
        };
        r = state_record_add_workspace(c->record, &w, &kept);
        if (r < 0)
            return r;
    } else {
        /* A reclaim: the kept entry is being created again. */
        if (req->labels) {
            _cleanup_strv_free_ char **l = NULL;
            r = strv_copy((const char *const *) req->labels, &l);
            if (r < 0)
                return r;
            strv_free(kept->labels);
            kept->labels = TAKE_PTR(l);
        }
        if (!streq_ptr(kept->state_dir, state_dir)) {
            free(kept->state_dir);
            kept->state_dir = TAKE_PTR(state_dir);
        }
        kept->quota = req->quota;
        /* A change an agent died in belongs to the workspace as it was:
         * brought back, it gets the quota it is created with. */
        kept->quota_changing = false;
        kept->quota_pending = 0;
        if (kept->project_id == 0)
            kept->project_id = next_project_id(c->record);
        kept->creating = true;
    }
    r = place_save(c);
    if (r < 0) {
        place_workspace_abandon(c, req->id, !req->reclaim);
        return place_fail(error, r, PLACE_REASON_NONE, "saving the record failed: %s", strerror(-r));
    }
    test_point("after-intent");
    if (ret)
        *ret = kept;
    return 0;
}

int place_workspace_make_dir(const Layout *l, const char *volume, const char *id, bool reclaim,
                             const PlaceQuota *quota, bool *ret_created, PlaceError *error) {
    _cleanup_free_ char *mount = NULL, *state_dir = NULL, *mountpoint = NULL;
    uid_t uid;
    gid_t gid;
    int r;
    if (!l || !volume || !place_workspace_id_is_valid(id))
        return -EINVAL;
    r = resolve_owner(&l->workspace, &uid, &gid, error);
    if (r < 0)
        return r;
    r = workspace_paths(l, volume, id, &mount, &state_dir, &mountpoint);
    if (r < 0)
        return r;
    if (!reclaim) {
        struct stat st;
        if (lstat(state_dir, &st) >= 0)
            return place_fail(error, -EEXIST, PLACE_REASON_NONE,
                              "%s already exists but the record had no workspace '%s'; run a "
                              "reconcile (it is adopted as kept data) and reclaim it, or remove it",
                              state_dir, id);
        if (errno != ENOENT)
            return place_fail(error, -errno, PLACE_REASON_NONE, "cannot check %s: %m", state_dir);
        if (mountpoint && (r = check_mountpoint_free(mountpoint)) < 0)
            return place_fail(error, r, PLACE_REASON_NONE,
                              "mount point %s already exists and is not an empty directory; "
                              "choose another id or remove it", mountpoint);
    }
    bool created = false;
    r = make_state_dir(mount, id, reclaim, uid, gid, l->workspace.dir_mode ?: 0750, quota, &created);
    if (r < 0 && quota && quota->limit_bytes > 0 && r != -EEXIST)
        return place_fail(error, r, PLACE_REASON_NONE, "creating %s with its quota (project %u) failed: %s",
                          state_dir, quota->project_id, strerror(-r));
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE, "creating %s failed: %s", state_dir, strerror(-r));
    if (ret_created)
        *ret_created = created;
    return 0;
}

int place_workspace_activate(PlaceContext *c, const char *id, PlaceError *error) {
    WorkspaceRecord *w = c && id ? state_record_find_workspace(c->record, id) : NULL;
    if (!w || !w->creating)
        return place_fail(error, -ENOENT, PLACE_REASON_NONE, "no workspace '%s' is being created", id ?: "");
    w->creating = false;
    w->active = true;
    int r = place_save(c);
    if (r < 0) {
        w->active = false;
        w->creating = true;
        return place_fail(error, r, PLACE_REASON_NONE, "saving the record failed: %s", strerror(-r));
    }
    return 0;
}

void place_workspace_abandon(PlaceContext *c, const char *id, bool was_new) {
    WorkspaceRecord *w = c && id ? state_record_find_workspace(c->record, id) : NULL;
    if (!w || !w->creating)
        return;
    if (was_new)
        (void) state_record_remove_workspace(c->record, id);
    else
        w->creating = false; /* kept data, as it was */
    (void) place_save(c);
}

int place_workspace_resume(PlaceContext *c, const char *id, PlaceError *error) {
    WorkspaceRecord *w = c && id ? state_record_find_workspace(c->record, id) : NULL;
    if (!w || !w->creating || !w->volume)
        return place_fail(error, -ENOENT, PLACE_REASON_NONE, "no workspace '%s' is being created", id ?: "");
    /* Its directory may be there already (the crash came after it). */
    PlaceQuota q = { .project_id = w->project_id, .limit_bytes = w->quota, .clear_limit = true };
    int r = place_workspace_make_dir(c->layout, w->volume, id, true, &q, NULL, error);
    if (r < 0)
        return r;
    return place_workspace_activate(c, id, error);
}

int place_workspace_create_on(PlaceContext *c, const PlaceCreateRequest *req, const char *volume,
                              WorkspaceRecord **ret, PlaceError *error) {
    /* The order every crash relies on: the intent is on disk before the
     * directory exists, and "active" only once it does. */
    WorkspaceRecord *w = NULL;
    int r = place_workspace_intent(c, req, volume, &w, error);
    if (r < 0)
        return r;
    bool created = false;
    PlaceQuota q = { .project_id = w->project_id, .limit_bytes = w->quota, .clear_limit = true };
    r = place_workspace_make_dir(c->layout, volume, req->id, req->reclaim, &q, &created, error);
    if (r < 0) {
        place_workspace_abandon(c, req->id, !req->reclaim);
        return r;
    }
    test_point("after-mkdir");
    r = place_workspace_activate(c, req->id, error);
    if (r < 0) {
        if (created) {
            _cleanup_free_ char *mount = NULL;
            _cleanup_close_ int wfd = -EBADF;
            if (layout_mount_path(c->layout, volume, &mount) >= 0 && place_open_workspaces_dir(mount, false, &wfd) >= 0)
                (void) unlinkat(wfd, req->id, AT_REMOVEDIR);
        }
        place_workspace_abandon(c, req->id, !req->reclaim);
        return r;
    }
    if (ret)
        *ret = state_record_find_workspace(c->record, req->id);
    return 0;
}

int place_workspace_remove(PlaceContext *c, const char *id, unsigned flags, PlaceError *error) {
    if (!c || !c->layout || !c->record || !id)
        return -EINVAL;
    WorkspaceRecord *w = state_record_find_workspace(c->record, id);
    if (!w)
        return place_fail(error, -ENOENT, PLACE_REASON_NONE, "no workspace '%s'", id);

    bool was_active = w->active;
    w->active = false;
    w->daemon.pid = 0;
    int r = place_save(c);
    if (r < 0) {
        w->active = was_active;
        return place_fail(error, r, PLACE_REASON_NONE, "saving the record failed: %s", strerror(-r));
    }
    if (!(flags & PLACE_REMOVE_DESTROY))
        return 0;

    /* Destroy: the record already says "inactive", so a crash half-way
     * through the deletion leaves kept (partial) data that a second
     * destroy finishes, never an active workspace with missing files. */
    VolumeRecord *v = w->volume ? state_record_find_volume(c->record, w->volume) : NULL;
    if (v) {
        PlaceVolumeObservation o = {};
        r = place_observe(c, v, &o);
        if (r < 0)
            return place_fail(error, r, PLACE_REASON_NONE, "observing %s failed: %s", v->name,
                              strerror(-r));
        if (o.flags & PLACE_VOLUME_UNAVAILABLE)
            return place_fail(error, -EBUSY, PLACE_REASON_UNAVAILABLE,
                              "volume %s of workspace '%s' is not mounted: its data cannot be "
                              "destroyed now (the record is kept)", v->name, id);
        _cleanup_free_ char *mount = NULL;
        r = layout_mount_path(c->layout, v->name, &mount);
        if (r < 0)
            return r;
        _cleanup_close_ int wfd = -EBADF;
        r = place_open_workspaces_dir(mount, false, &wfd);
        if (r < 0 && r != -ENOENT)
            return place_fail(error, r, PLACE_REASON_NONE, "opening %s/workspaces failed: %s",
                              mount, strerror(-r));
        if (r >= 0) {
            r = place_rmtree_at(wfd, id);
            if (r < 0)
                return place_fail(error, r, PLACE_REASON_NONE,
                                  "deleting %s/workspaces/%s failed: %s%s", mount, id, strerror(-r),
                                  r == -EXDEV ? " (something is mounted inside it; unmount it first)" : "");
        }
        /* Its cache (place-cache.h) goes with it. */
        _cleanup_free_ char *derived = NULL;
        if (asprintf(&derived, "%s/" PLACE_CACHE_DIR, mount) < 0)
            return -ENOMEM;
        _cleanup_close_ int dfd = open(derived, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0 && errno != ENOENT)
            return place_fail(error, -errno, PLACE_REASON_NONE, "opening %s failed: %m", derived);
        if (dfd >= 0 && (r = place_rmtree_at(dfd, id)) < 0)
            return place_fail(error, r, PLACE_REASON_NONE, "deleting %s/%s failed: %s", derived, id, strerror(-r));
    }
    /* A workspace whose volume the record lost has no data we can reach;
     * dropping the record is all a destroy can do. */
    r = state_record_remove_workspace(c->record, id);
    if (r < 0)
        return r;
    r = place_save(c);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE,
                          "the data of '%s' is deleted but saving the record failed: %s", id,
                          strerror(-r));
    return 0;
}

int place_workspace_data_dir(PlaceContext *c, const char *id, char **ret_dir, PlaceError *error) {
    WorkspaceRecord *w = c && id ? state_record_find_workspace(c->record, id) : NULL;
    if (!w)
        return place_fail(error, -ENOENT, PLACE_REASON_NONE, "no workspace '%s'", id ?: "");
    VolumeRecord *v = w->volume ? state_record_find_volume(c->record, w->volume) : NULL;
    if (!v) {
        *ret_dir = NULL;
        return 0;
    }
    PlaceVolumeObservation o = {};
    int r = place_observe(c, v, &o);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE, "observing %s failed: %s", v->name, strerror(-r));
    if (o.flags & PLACE_VOLUME_UNAVAILABLE)
        return place_fail(error, -EBUSY, PLACE_REASON_UNAVAILABLE,
                          "volume %s of workspace '%s' is not mounted: its data cannot be destroyed now (the "
                          "record is kept)",
                          v->name, id);
    _cleanup_free_ char *mount = NULL;
    r = layout_mount_path(c->layout, v->name, &mount);
    if (r < 0)
        return r;
    if (asprintf(ret_dir, "%s/workspaces", mount) < 0)
        return -ENOMEM;
    return 0;
}

int place_workspace_forget(PlaceContext *c, const char *id, PlaceError *error) {
    int r = state_record_remove_workspace(c->record, id);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE, "no workspace '%s'", id);
    r = place_save(c);
    if (r < 0)
        return place_fail(error, r, PLACE_REASON_NONE,
                          "the data of '%s' is deleted but saving the record failed: %s", id, strerror(-r));
    return 0;
}

WorkspaceRecord *place_workspace_get(const StateRecord *s, const char *id) {
    return state_record_find_workspace(s, id);
}

static int workspace_ptr_compare(const void *a, const void *b) {
    const WorkspaceRecord *x = *(WorkspaceRecord *const *) a, *y = *(WorkspaceRecord *const *) b;
    return strcmp(x->id ?: "", y->id ?: "");
}

int place_workspace_list(const StateRecord *s, const char *volume, bool include_inactive,
                         WorkspaceRecord ***ret, size_t *ret_n) {
    if (!s || !ret || !ret_n)
        return -EINVAL;
    WorkspaceRecord **l = calloc(s->n_workspaces ?: 1, sizeof(WorkspaceRecord *));
    if (!l)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < s->n_workspaces; i++) {
        WorkspaceRecord *w = s->workspaces[i];
        if (!include_inactive && !w->active)
            continue;
        if (volume && !streq_ptr(w->volume, volume))
            continue;
        l[n++] = w;
    }
    qsort(l, n, sizeof(WorkspaceRecord *), workspace_ptr_compare);
    *ret = l;
    *ret_n = n;
    return 0;
}
