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
    [PLAN_STEP_VDO_FORMAT] = "vdo-format",
    [PLAN_STEP_DM_CREATE] = "dm-create",
    [PLAN_STEP_FORMAT] = "format",
    [PLAN_STEP_ADOPT] = "adopt",
    [PLAN_STEP_MOUNT] = "mount",
    [PLAN_STEP_GROW] = "grow",
    [PLAN_STEP_SET_LIMITS] = "set-limits",
    [PLAN_STEP_IDENTIFY] = "identify",
    [PLAN_STEP_UNMOUNT] = "unmount",
    [PLAN_STEP_DM_REMOVE] = "dm-remove",
    [PLAN_STEP_DELETE] = "delete",
    [PLAN_STEP_FORGET] = "forget",
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
    const FsType *fs = fs_type_find(fs_type);
    if (!fs || !volume || !ret)
        return -EINVAL;
    size_t max = fs->label_max;
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

int plan_builder_init(PlanBuilder *b) {
    *b = (PlanBuilder) { .plan = calloc(1, sizeof(Plan)) };
    if (!b->plan) {
        b->error = -ENOMEM;
        return -ENOMEM;
    }
    return 0;
}

_printf_(4, 0) static PlanStep *emitv(PlanBuilder *b, const PlanSubject *subj, PlanStepKind kind, const char *fmt,
                                       va_list ap) {
    if (b->error < 0)
        return NULL;
    PlanStep *t = realloc(b->plan->steps, sizeof(PlanStep) * (b->plan->n_steps + 1));
    if (!t) {
        b->error = -ENOMEM;
        return NULL;
    }
    b->plan->steps = t;
    PlanStep *s = &t[b->plan->n_steps];
    *s = (PlanStep) { .kind = kind, .role = subj->role, .index = subj->index, .backend = subj->backend };
    if (vasprintf(&s->description, fmt, ap) < 0) {
        s->description = NULL;
        b->error = -ENOMEM;
        return NULL;
    }
    s->volume = strdup(subj->volume ?: "");
    if (!s->volume) {
        free(s->description);
        b->error = -ENOMEM;
        return NULL;
    }
    b->plan->n_steps++;
    return s;
}

PlanStep *plan_builder_emit(PlanBuilder *b, const PlanSubject *s, PlanStepKind kind, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PlanStep *step = emitv(b, s, kind, fmt, ap);
    va_end(ap);
    return step;
}

PlanStep *plan_builder_refuse(PlanBuilder *b, const PlanSubject *s, PlanStepKind kind, const char *reason,
                              bool blocks, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    PlanStep *step = emitv(b, s, kind, fmt, ap);
    va_end(ap);
    if (!step)
        return NULL;
    step->blocks = blocks;
    plan_builder_set(b, &step->reason, reason);
    return step;
}

void plan_builder_set(PlanBuilder *b, char **field, const char *value) {
    if (b->error < 0)
        return;
    free(*field);
    *field = NULL;
    if (value && !(*field = strdup(value)))
        b->error = -ENOMEM;
}

int plan_builder_finish(PlanBuilder *b, Plan **ret) {
    if (b->error < 0) {
        b->plan = plan_free(b->plan);
        return b->error;
    }
    *ret = TAKE_PTR(b->plan);
    return 0;
}

const char *plan_format_size(char buf[static 32], uint64_t bytes) {
    _cleanup_free_ char *s = NULL;
    if (layout_format_size(bytes, &s) >= 0 && s)
        snprintf(buf, 32, "%s", s);
    else
        snprintf(buf, 32, "%" PRIu64 "B", bytes);
    return buf;
}

bool plan_has_reason(const Plan *p, const char *volume, const char *reason) {
    for (size_t i = 0; p && i < p->n_steps; i++)
        if (streq_ptr(p->steps[i].reason, reason) && (!volume || streq(p->steps[i].volume, volume)))
            return true;
    return false;
}

void plan_keep_volume(Plan *p, const char *volume) {
    size_t k = 0;
    for (size_t i = 0; i < p->n_steps; i++) {
        if (streq(p->steps[i].volume, volume))
            p->steps[k++] = p->steps[i];
        else
            plan_step_done(&p->steps[i]);
    }
    p->n_steps = k;
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
    case PLAN_STEP_UNMOUNT:
    case PLAN_STEP_DM_REMOVE:
    case PLAN_STEP_DELETE:
    case PLAN_STEP_FORGET:
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
