/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>

#include "plan.h"
#include "util.h"
#include "string-table.h"

static const char *const plan_step_kind_table[_PLAN_STEP_KIND_MAX] = {
    [PLAN_STEP_CREATE_FILE] = "create-file",
    [PLAN_STEP_CREATE_DIR] = "create-dir",
    [PLAN_STEP_DETACH] = "detach",
    [PLAN_STEP_ATTACH] = "attach",
    [PLAN_STEP_FORMAT] = "format",
    [PLAN_STEP_ADOPT] = "adopt",
    [PLAN_STEP_MOUNT] = "mount",
    [PLAN_STEP_GROW] = "grow",
    [PLAN_STEP_SET_LIMITS] = "set-limits",
    [PLAN_STEP_VDO] = "vdo",
    [PLAN_STEP_REFUSE] = "refuse",
    [PLAN_STEP_DRIFT] = "drift",
};

DEFINE_STRING_TABLE_LOOKUP(plan_step_kind, PlanStepKind);

bool plan_step_kind_is_action(PlanStepKind k) {
    return (int) k >= 0 && k < _PLAN_STEP_KIND_MAX && k != PLAN_STEP_REFUSE && k != PLAN_STEP_DRIFT;
}

static void plan_step_done(PlanStep *s) {
    free(s->volume);
    free(s->description);
    free(s->path);
    free(s->mount_path);
    free(s->fs_type);
    free(s->fs_uuid);
    free(s->reason);
}

Plan *plan_free(Plan *p) {
    if (!p)
        return NULL;
    for (size_t i = 0; i < p->n_steps; i++)
        plan_step_done(&p->steps[i]);
    free(p->steps);
    free(p);
    return NULL;
}

size_t plan_count_actions(const Plan *p) {
    size_t n = 0;
    for (size_t i = 0; p && i < p->n_steps; i++)
        if (plan_step_kind_is_action(p->steps[i].kind))
            n++;
    return n;
}

bool plan_has_problems(const Plan *p) {
    for (size_t i = 0; p && i < p->n_steps; i++)
        if (!plan_step_kind_is_action(p->steps[i].kind))
            return true;
    return false;
}

int plan_volume_label(const char *fs_type, PoolRole role, unsigned index, const char *volume, char **ret) {
    if (!fs_type || !volume || !ret)
        return -EINVAL;
    size_t max = streq(fs_type, "xfs") ? 12 : 16;
    char *s;
    if (asprintf(&s, "ld-%s", volume) < 0)
        return -ENOMEM;
    if (strlen(s) > max) {
        free(s);
        const char *r = pool_role_to_string(role);
        if (!r || asprintf(&s, "ld-%c%u", r[0], index) < 0)
            return -ENOMEM;
        if (strlen(s) > max) {
            free(s);
            return -EINVAL;
        }
    }
    *ret = s;
    return 0;
}

/* ---- building ---------------------------------------------------------- */

typedef struct Builder {
    Plan *plan;
    int error;
} Builder;

static int dup_or_null(const char *s, char **ret) {
    *ret = NULL;
    if (s && !(*ret = strdup(s)))
        return -ENOMEM;
    return 0;
}

/* Appends a step; the description is a format string. Errors stick in b->error. */
_printf_(4, 5) static PlanStep *emit(Builder *b, const VolumeObservation *v, PlanStepKind kind, const char *fmt, ...) {
    if (b->error < 0)
        return NULL;
    PlanStep *t = realloc(b->plan->steps, sizeof(PlanStep) * (b->plan->n_steps + 1));
    if (!t) {
        b->error = -ENOMEM;
        return NULL;
    }
    b->plan->steps = t;
    PlanStep *s = &t[b->plan->n_steps];
    *s = (PlanStep) { .kind = kind, .role = v->role, .index = v->index, .backend = v->backend };
    va_list ap;
    va_start(ap, fmt);
    int k = vasprintf(&s->description, fmt, ap);
    va_end(ap);
    if (k < 0) {
        s->description = NULL;
        b->error = -ENOMEM;
        return NULL;
    }
    if (dup_or_null(v->name, &s->volume) < 0) {
        free(s->description);
        b->error = -ENOMEM;
        return NULL;
    }
    b->plan->n_steps++;
    return s;
}

static void set_str(Builder *b, char **field, const char *value) {
    if (b->error < 0)
        return;
    if (dup_or_null(value, field) < 0)
        b->error = -ENOMEM;
}

/* Which problems leave the volume out of service: all but the notes. */
static void finish_blocks(Plan *p) {
    for (size_t i = 0; i < p->n_steps; i++) {
        PlanStep *s = &p->steps[i];
        if (plan_step_kind_is_action(s->kind))
            continue;
        s->blocks = !(s->reason && STR_IN_SET(s->reason, "shrink", "buffered", "not-declared"));
    }
}

static PlanStep *refuse(Builder *b, const VolumeObservation *v, PlanStepKind kind, const char *reason, const char *desc) {
    PlanStep *s = emit(b, v, kind, "%s", desc);
    if (s)
        set_str(b, &s->reason, reason);
    return s;
}

/* Human size ("256MiB") into a fixed buffer. */
static const char *fmt_size(char buf[static 32], uint64_t bytes) {
    _cleanup_free_ char *s = NULL;
    if (layout_format_size(bytes, &s) >= 0 && s)
        snprintf(buf, 32, "%s", s);
    else
        snprintf(buf, 32, "%" PRIu64 "B", bytes);
    return buf;
}

static bool limits_wanted(const WritebackLimits *w) {
    return w->max_ratio >= 0 || w->max_bytes > 0 || w->strict_limit >= 0;
}

/* Does the observed bdi already carry the wanted limits? max_bytes is
 * rounded by the kernel (it is stored as a ratio of the dirty limit), so it
 * compares within 1% or 1 MiB. */
static bool limits_match(const VolumeObservation *v, const WritebackLimits *w) {
    if (!v->has_bdi)
        return false;
    if (w->max_ratio >= 0 && v->bdi.max_ratio != w->max_ratio)
        return false;
    if (w->strict_limit >= 0 && v->bdi.has_strict_limit && v->bdi.strict_limit != w->strict_limit)
        return false;
    if (w->max_bytes > 0 && v->bdi.has_max_bytes) {
        uint64_t d = v->bdi.max_bytes > w->max_bytes ? v->bdi.max_bytes - w->max_bytes : w->max_bytes - v->bdi.max_bytes;
        if (d > MAX(w->max_bytes / 100, MIB))
            return false;
    }
    return true;
}

static void describe_limits(char *buf, size_t n, const WritebackLimits *w) {
    char ratio[32] = "", bytes[64] = "", strict[32] = "";
    if (w->max_ratio >= 0)
        snprintf(ratio, sizeof(ratio), " max_ratio=%d", w->max_ratio);
    if (w->max_bytes > 0)
        snprintf(bytes, sizeof(bytes), " max_bytes=%" PRIu64, w->max_bytes);
    if (w->strict_limit >= 0)
        snprintf(strict, sizeof(strict), " strict_limit=%d", w->strict_limit);
    snprintf(buf, n, "%s%s%s", ratio, bytes, strict);
}

static void plan_dir(Builder *b, const Pool *p, const VolumeRecord *rec, const VolumeObservation *v) {
    if (v->mounted) {
        /* Something is mounted on our directory: not ours to reuse. */
        PlanStep *s = emit(b, v, PLAN_STEP_REFUSE, "refuse %s: %s is a mount point of %s, not a plain directory",
                           v->name, v->mount_path, v->mount.source ?: "?");
        if (s)
            set_str(b, &s->reason, "mount-path-busy");
        return;
    }
    if (!v->dir_exists) {
        PlanStep *s = emit(b, v, PLAN_STEP_CREATE_DIR, "create directory %s (backend dir: no isolation)", v->mount_path);
        if (s)
            set_str(b, &s->path, v->mount_path);
    } else if (!rec) {
        PlanStep *s = emit(b, v, PLAN_STEP_ADOPT, "record existing directory %s as volume %s", v->mount_path, v->name);
        if (s)
            set_str(b, &s->path, v->mount_path);
    }
}

static void plan_vdo(Builder *b, const Pool *p, const VolumeRecord *rec, const VolumeObservation *v) {
    if (v->mounted && rec && rec->formatted)
        return;
    PlanStep *s = emit(b, v, PLAN_STEP_VDO, "set up vdo-xfs volume %s (backing %s, mounted on %s; handled by src/vdo)",
                       v->name, v->backing_path ?: "?", v->mount_path);
    if (s) {
        set_str(b, &s->path, v->backing_path);
        set_str(b, &s->mount_path, v->mount_path);
        set_str(b, &s->fs_type, "xfs");
        s->size = p->volume_size;
    }
}

static void plan_loop(Builder *b, const Pool *p, const VolumeRecord *rec, const VolumeObservation *v) {
    const char *fs = backend_fs_type(v->backend);
    uint64_t want = p->volume_size;
    char sz[32], sz2[32];
    _cleanup_free_ char *label = NULL;
    PlanStep *s;
    bool need_format = false;

    if (plan_volume_label(fs, v->role, v->index, v->name, &label) < 0) {
        b->error = -ENOMEM;
        return;
    }

    if (v->file_error) {
        s = emit(b, v, PLAN_STEP_REFUSE, "refuse %s: cannot stat backing file %s: %s", v->name, v->backing_path,
                 strerror(v->file_error));
        if (s)
            set_str(b, &s->reason, "backing-unreadable");
        return;
    }

    /* Mount path taken by something that is not this volume's loop device. */
    if (v->mounted && !v->mounted_ours) {
        s = emit(b, v, PLAN_STEP_REFUSE, "refuse %s: %s already has %s mounted on it (not this volume): left alone",
                 v->name, v->mount_path, v->mount.source ?: "something");
        if (s)
            set_str(b, &s->reason, "mount-path-busy");
        return;
    }

    if (!v->file_exists) {
        if (rec && rec->formatted) {
            /* Re-creating it would hide that its data is gone. */
            s = emit(b, v, PLAN_STEP_DRIFT,
                     "drift %s: the record says %s was formatted (%s UUID %s) but the backing file is missing; "
                     "not re-creating it (`layoutctl repair --forget-missing` forgets it)",
                     v->name, v->backing_path, rec->fs_type, rec->fs_uuid);
            if (s)
                set_str(b, &s->reason, "backing-deleted");
            return;
        }
        /* Never formatted (or never made): nothing can be lost. */
        s = emit(b, v, PLAN_STEP_CREATE_FILE, "create sparse backing file %s (%s)", v->backing_path, fmt_size(sz, want));
        if (s) {
            set_str(b, &s->path, v->backing_path);
            s->size = want;
        }
        s = emit(b, v, PLAN_STEP_ATTACH, "attach %s to a loop device %s", v->backing_path,
                 p->direct_io ? "with direct I/O" : "buffered (direct_io: false)");
        if (s) {
            set_str(b, &s->path, v->backing_path);
            s->direct_io = p->direct_io;
        }
        s = emit(b, v, PLAN_STEP_FORMAT, "format %s as %s (new UUID, label %s)", v->name, fs, label);
        if (s) {
            set_str(b, &s->path, v->backing_path);
            set_str(b, &s->fs_type, fs);
        }
        s = emit(b, v, PLAN_STEP_MOUNT, "mount %s (%s) on %s", v->name, fs, v->mount_path);
        if (s) {
            set_str(b, &s->mount_path, v->mount_path);
            set_str(b, &s->fs_type, fs);
        }
        if (limits_wanted(&p->writeback)) {
            char lim[160];
            describe_limits(lim, sizeof(lim), &p->writeback);
            s = emit(b, v, PLAN_STEP_SET_LIMITS, "set writeback limits of %s:%s", v->name, lim);
        }
        return;
    }

    if (!v->file_is_regular) {
        s = emit(b, v, PLAN_STEP_REFUSE, "refuse %s: %s is not a regular file", v->name, v->backing_path);
        if (s)
            set_str(b, &s->reason, "not-regular");
        return;
    }

    if (!v->probed) {
        s = emit(b, v, PLAN_STEP_REFUSE, "refuse %s: cannot probe %s for signatures: %s", v->name,
                 v->attached ? v->loop.node : v->backing_path, strerror(v->probe_error ?: EIO));
        if (s)
            set_str(b, &s->reason, "probe-failed");
        return;
    }
    const char *otype = v->probe.type ?: "unknown signature";
    const char *ouuid = v->probe.uuid ?: "none";

    if (!rec || (!rec->created_file && !rec->formatted)) {
        if (v->probe.blank)
            s = emit(b, v, PLAN_STEP_REFUSE,
                     "refuse %s: %s exists but layoutd did not create it (not in the record); will not format it",
                     v->name, v->backing_path);
        else
            s = emit(b, v, PLAN_STEP_REFUSE,
                     "refuse %s: %s holds %s (UUID %s) that layoutd did not create; left untouched",
                     v->name, v->backing_path, otype, ouuid);
        if (s)
            set_str(b, &s->reason, "not-ours");
        return;
    }

    if (rec->formatted) {
        if (v->probe.blank) {
            s = emit(b, v, PLAN_STEP_REFUSE,
                     "refuse %s: the record says it was formatted (%s UUID %s) but it is blank now; not re-formatting",
                     v->name, rec->fs_type, rec->fs_uuid);
            if (s)
                set_str(b, &s->reason, "signature-lost");
            return;
        }
        if (!streq_ptr(v->probe.type, rec->fs_type) || !v->probe.uuid || !rec->fs_uuid ||
            strcasecmp(v->probe.uuid, rec->fs_uuid) != 0) {
            s = emit(b, v, PLAN_STEP_REFUSE,
                     "refuse %s: it holds %s UUID %s but the record says %s UUID %s; left untouched", v->name, otype,
                     ouuid, rec->fs_type, rec->fs_uuid);
            if (s)
                set_str(b, &s->reason, "uuid-changed");
            return;
        }
    } else if (v->probe.blank) {
        need_format = true;
    } else if (rec->fs_uuid && v->probe.uuid && strcasecmp(v->probe.uuid, rec->fs_uuid) == 0 &&
               streq_ptr(v->probe.type, rec->fs_type)) {
        /* mkfs finished but the agent died before recording it: the UUID
         * we chose (saved before mkfs) proves the filesystem is ours. */
        s = emit(b, v, PLAN_STEP_ADOPT, "adopt %s: %s UUID %s is the one layoutd chose before mkfs; record it",
                 v->name, otype, ouuid);
        if (s) {
            set_str(b, &s->fs_type, v->probe.type);
            set_str(b, &s->fs_uuid, v->probe.uuid);
        }
    } else {
        s = emit(b, v, PLAN_STEP_REFUSE, "refuse %s: it holds %s (UUID %s) that layoutd did not make; left untouched",
                 v->name, otype, ouuid);
        if (s)
            set_str(b, &s->reason, "foreign-signature");
        return;
    }

    /* A grown backing file must not be reported as something to shrink. */
    if (v->file_size > want) {
        s = emit(b, v, PLAN_STEP_REFUSE, "refuse to shrink %s from %s to %s: volumes only grow; kept at %s", v->name,
                 fmt_size(sz, v->file_size), fmt_size(sz2, want), fmt_size(sz, v->file_size));
        if (s)
            set_str(b, &s->reason, "shrink");
    }

    bool mounted_elsewhere = v->loop_mounted_elsewhere && !v->mounted_ours;
    if (v->attached) {
        if (p->direct_io && !v->loop.direct_io) {
            if (!v->mounted_ours && !mounted_elsewhere) {
                s = emit(b, v, PLAN_STEP_DETACH, "detach %s from %s: attached without direct I/O, re-attaching with it",
                         v->backing_path, v->loop.node);
                if (s)
                    set_str(b, &s->path, v->loop.node);
                s = emit(b, v, PLAN_STEP_ATTACH, "attach %s to a loop device with direct I/O", v->backing_path);
                if (s) {
                    set_str(b, &s->path, v->backing_path);
                    s->direct_io = true;
                }
            } else {
                s = emit(b, v, PLAN_STEP_DRIFT,
                         "drift %s: %s is attached without direct I/O and mounted; re-attaching needs an unmount "
                         "(`layoutctl teardown` then `apply`)",
                         v->name, v->loop.node);
                if (s)
                    set_str(b, &s->reason, "buffered");
            }
        }
    } else {
        s = emit(b, v, PLAN_STEP_ATTACH, "attach %s to a loop device %s", v->backing_path,
                 p->direct_io ? "with direct I/O" : "buffered (direct_io: false)");
        if (s) {
            set_str(b, &s->path, v->backing_path);
            s->direct_io = p->direct_io;
        }
    }

    if (need_format) {
        s = emit(b, v, PLAN_STEP_FORMAT, "format %s as %s (blank, created by layoutd; new UUID, label %s)", v->name,
                 fs, label);
        if (s) {
            set_str(b, &s->path, v->backing_path);
            set_str(b, &s->fs_type, fs);
        }
    }

    if (mounted_elsewhere) {
        s = emit(b, v, PLAN_STEP_DRIFT, "drift %s: %s is mounted by hand on %s, not on %s; not mounting it twice",
                 v->name, v->loop.node, v->loop_mount.target, v->mount_path);
        if (s)
            set_str(b, &s->reason, "mounted-elsewhere");
        return;
    }
    if (!v->mounted_ours) {
        s = emit(b, v, PLAN_STEP_MOUNT, "mount %s (%s) on %s", v->name, fs, v->mount_path);
        if (s) {
            set_str(b, &s->mount_path, v->mount_path);
            set_str(b, &s->fs_type, fs);
        }
    }

    /* rec->size moves only after the filesystem grew: a grow that failed
     * half-way (file extended, fs not) is retried. */
    uint64_t have = v->file_size;
    if (rec->formatted && rec->size && rec->size < have)
        have = rec->size;
    if (have < want) {
        s = emit(b, v, PLAN_STEP_GROW, "grow %s from %s to %s online (extend %s, refresh the loop size, %s)", v->name,
                 fmt_size(sz, have), fmt_size(sz2, want), v->backing_path,
                 streq(fs, "xfs") ? "xfs_growfs" : "resize2fs");
        if (s) {
            set_str(b, &s->path, v->backing_path);
            set_str(b, &s->mount_path, v->mount_path);
            set_str(b, &s->fs_type, fs);
            s->size = want;
            s->old_size = have;
        }
    }

    if (limits_wanted(&p->writeback) && (!v->attached || (p->direct_io && !v->loop.direct_io) ||
                                         !limits_match(v, &p->writeback))) {
        char lim[160];
        describe_limits(lim, sizeof(lim), &p->writeback);
        emit(b, v, PLAN_STEP_SET_LIMITS, "set writeback limits of %s:%s", v->name, lim);
    }
}

int plan_compute(const Layout *l, const StateRecord *record, const Observation *obs, Plan **ret) {
    if (!l || !obs || !ret)
        return -EINVAL;
    Builder b = { .plan = calloc(1, sizeof(Plan)) };
    if (!b.plan)
        return -ENOMEM;

    for (size_t i = 0; i < obs->n && b.error >= 0; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        const VolumeRecord *rec = record ? state_record_find_volume(record, v->name) : NULL;
        const Pool *p = layout_pool(l, v->role);

        if (!v->declared || !p) {
            if (rec)
                refuse(&b, v, PLAN_STEP_DRIFT, "not-declared",
                       "drift: volume is in the record but the layout does not declare it; left as is "
                       "(`layoutctl teardown` removes it)");
            continue;
        }
        if (rec && rec->backend != p->backend) {
            PlanStep *s = emit(&b, v, PLAN_STEP_REFUSE,
                               "refuse %s: it was made as %s, the layout now says %s; backends are never converted "
                               "(tear it down with --destroy-data first)",
                               v->name, backend_to_string(rec->backend), backend_to_string(p->backend));
            if (s)
                set_str(&b, &s->reason, "backend-changed");
            continue;
        }
        switch (p->backend) {
        case BACKEND_DIR:
            plan_dir(&b, p, rec, v);
            break;
        case BACKEND_VDO_XFS:
            plan_vdo(&b, p, rec, v);
            break;
        case BACKEND_LOOP_EXT4:
        case BACKEND_LOOP_XFS:
            plan_loop(&b, p, rec, v);
            break;
        default:
            b.error = -EINVAL;
        }
    }
    if (b.error < 0) {
        plan_free(b.plan);
        return b.error;
    }
    finish_blocks(b.plan);
    *ret = b.plan;
    return 0;
}

/* ---- rendering --------------------------------------------------------- */

int plan_to_json_string(const Plan *p, char **ret) {
    if (!p || !ret)
        return -EINVAL;
    json_object *root = json_object_new_object(), *arr = json_object_new_array();
    if (!root || !arr) {
        json_object_put(root);
        json_object_put(arr);
        return -ENOMEM;
    }
    for (size_t i = 0; i < p->n_steps; i++) {
        const PlanStep *s = &p->steps[i];
        json_object *o = json_object_new_object();
        json_object_object_add(o, "volume", json_object_new_string(s->volume));
        json_object_object_add(o, "kind", json_object_new_string(plan_step_kind_to_string(s->kind)));
        json_object_object_add(o, "action", json_object_new_boolean(plan_step_kind_is_action(s->kind)));
        json_object_object_add(o, "description", json_object_new_string(s->description));
        if (s->reason) {
            json_object_object_add(o, "reason", json_object_new_string(s->reason));
            json_object_object_add(o, "blocks", json_object_new_boolean(s->blocks));
        }
        if (s->path)
            json_object_object_add(o, "path", json_object_new_string(s->path));
        if (s->mount_path)
            json_object_object_add(o, "mount_path", json_object_new_string(s->mount_path));
        if (s->fs_type)
            json_object_object_add(o, "fs_type", json_object_new_string(s->fs_type));
        if (s->size)
            json_object_object_add(o, "size", json_object_new_uint64(s->size));
        if (s->kind == PLAN_STEP_GROW)
            json_object_object_add(o, "old_size", json_object_new_uint64(s->old_size));
        if (s->kind == PLAN_STEP_ATTACH)
            json_object_object_add(o, "direct_io", json_object_new_boolean(s->direct_io));
        json_object_array_add(arr, o);
    }
    json_object_object_add(root, "steps", arr);
    json_object_object_add(root, "actions", json_object_new_uint64(plan_count_actions(p)));
    const char *t = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
    char *c = t ? strdup(t) : NULL;
    json_object_put(root);
    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}

static char step_symbol(PlanStepKind k) {
    switch (k) {
    case PLAN_STEP_GROW:
    case PLAN_STEP_SET_LIMITS:
    case PLAN_STEP_ADOPT:
        return '~';
    case PLAN_STEP_DETACH:
        return '-';
    case PLAN_STEP_REFUSE:
        return '!';
    case PLAN_STEP_DRIFT:
        return '?';
    default:
        return '+';
    }
}

int plan_to_text(const Plan *p, char **ret) {
    if (!p || !ret)
        return -EINVAL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return -ENOMEM;
    if (p->n_steps == 0)
        fputs("No changes.\n", f);
    for (size_t i = 0; i < p->n_steps; i++)
        fprintf(f, "%c %-11s %s\n", step_symbol(p->steps[i].kind), p->steps[i].volume, p->steps[i].description);
    if (p->n_steps > 0) {
        size_t a = plan_count_actions(p);
        fprintf(f, "%zu change%s, %zu not done.\n", a, a == 1 ? "" : "s", p->n_steps - a);
    }
    if (fclose(f) != 0) {
        free(buf);
        return -ENOMEM;
    }
    *ret = buf;
    return 0;
}
