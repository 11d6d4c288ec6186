/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>

#include "result.h"
#include "string-table.h"
#include "util.h"

static const char *const apply_outcome_table[_APPLY_OUTCOME_MAX] = {
    [APPLY_OUTCOME_UNCHANGED] = "unchanged",
    [APPLY_OUTCOME_CHANGED] = "changed",
    [APPLY_OUTCOME_REFUSED] = "refused",
    [APPLY_OUTCOME_FAILED] = "failed",
};

DEFINE_STRING_TABLE_LOOKUP(apply_outcome, ApplyOutcome);

static void volume_result_done(ApplyVolumeResult *v);

ApplyResult *apply_result_free(ApplyResult *r) {
    if (!r)
        return NULL;
    for (size_t i = 0; i < r->n_volumes; i++)
        volume_result_done(&r->volumes[i]);
    free(r->volumes);
    free(r);
    return NULL;
}

bool apply_result_ok(const ApplyResult *r) {
    for (size_t i = 0; r && i < r->n_volumes; i++)
        if (r->volumes[i].outcome == APPLY_OUTCOME_FAILED || r->volumes[i].outcome == APPLY_OUTCOME_REFUSED)
            return false;
    /* A step that failed on a volume left in service (a grow). */
    for (size_t i = 0; r && i < r->n_volumes; i++)
        for (size_t k = 0; k < r->volumes[i].n_steps; k++)
            if (r->volumes[i].steps[k].error < 0)
                return false;
    return true;
}

int apply_result_new(ApplyResult **ret) {
    ApplyResult *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    *ret = r;
    return 0;
}

const ApplyVolumeResult *apply_result_find(const ApplyResult *r, const char *volume) {
    for (size_t i = 0; r && volume && i < r->n_volumes; i++)
        if (streq(r->volumes[i].volume, volume))
            return &r->volumes[i];
    return NULL;
}

static void volume_result_done(ApplyVolumeResult *v) {
    free(v->volume);
    free(v->message);
    free(v->reason);
    strv_free(v->notes);
    for (size_t j = 0; j < v->n_steps; j++) {
        free(v->steps[j].description);
        free(v->steps[j].message);
    }
    free(v->steps);
    *v = (ApplyVolumeResult) {};
}

int apply_result_merge(ApplyResult *r, ApplyResult **from) {
    ApplyResult *f = *from;
    if (!f)
        return 0;
    for (size_t i = 0; i < f->n_volumes; i++) {
        ApplyVolumeResult *v = &f->volumes[i];
        size_t j;
        for (j = 0; j < r->n_volumes; j++)
            if (streq(r->volumes[j].volume, v->volume))
                break;
        if (j == r->n_volumes) {
            ApplyVolumeResult *t = realloc(r->volumes, sizeof(*t) * (r->n_volumes + 1));
            if (!t)
                return -ENOMEM;
            r->volumes = t;
            r->n_volumes++;
        } else
            volume_result_done(&r->volumes[j]);
        r->volumes[j] = *v;
        *v = (ApplyVolumeResult) {};
    }
    *from = apply_result_free(f);
    return 0;
}

ApplyVolumeResult *apply_result_add_volume(ApplyResult *r, const char *name) {
    ApplyVolumeResult *t = realloc(r->volumes, sizeof(ApplyVolumeResult) * (r->n_volumes + 1));
    if (!t)
        return NULL;
    r->volumes = t;
    ApplyVolumeResult *v = &t[r->n_volumes];
    *v = (ApplyVolumeResult) { .outcome = APPLY_OUTCOME_UNCHANGED };
    v->volume = strdup(name);
    if (!v->volume)
        return NULL;
    r->n_volumes++;
    return v;
}

ApplyStepResult *apply_volume_result_add_step(ApplyVolumeResult *v, PlanStepKind kind, const char *description) {
    ApplyStepResult *t = realloc(v->steps, sizeof(ApplyStepResult) * (v->n_steps + 1));
    if (!t)
        return NULL;
    v->steps = t;
    ApplyStepResult *s = &t[v->n_steps];
    *s = (ApplyStepResult) { .kind = kind };
    s->description = strdup(description ?: "");
    if (!s->description)
        return NULL;
    v->n_steps++;
    return s;
}

void apply_volume_result_fail(ApplyVolumeResult *v, ApplyOutcome outcome, int error, const char *fmt, ...) {
    if (v->outcome == APPLY_OUTCOME_FAILED || v->outcome == APPLY_OUTCOME_REFUSED)
        return; /* keep the first: later ones are consequences */
    v->outcome = outcome;
    v->error = error;
    va_list ap;
    va_start(ap, fmt);
    free(v->message);
    if (vasprintf(&v->message, fmt, ap) < 0)
        v->message = NULL;
    va_end(ap);
}

void apply_volume_result_note(ApplyVolumeResult *v, const char *fmt, ...) {
    _cleanup_free_ char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (s)
        (void) strv_extend(&v->notes, s);
}

void apply_step_result_message(ApplyStepResult *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    free(s->message);
    if (vasprintf(&s->message, fmt, ap) < 0)
        s->message = NULL;
    va_end(ap);
}

int apply_result_to_json(const ApplyResult *r, json_object **ret) {
    if (!r || !ret)
        return -EINVAL;
    json_object *root = json_object_new_object(), *arr = json_object_new_array();
    if (!root || !arr) {
        json_object_put(root);
        json_object_put(arr);
        return -ENOMEM;
    }
    for (size_t i = 0; i < r->n_volumes; i++) {
        const ApplyVolumeResult *v = &r->volumes[i];
        json_object *o = json_object_new_object(), *steps = json_object_new_array(), *notes = json_object_new_array();
        json_object_object_add(o, "volume", json_object_new_string(v->volume));
        json_object_object_add(o, "outcome", json_object_new_string(apply_outcome_to_string(v->outcome)));
        json_object_object_add(o, "error", json_object_new_int(v->error));
        json_object_object_add(o, "message", v->message ? json_object_new_string(v->message) : NULL);
        json_object_object_add(o, "reason", v->reason ? json_object_new_string(v->reason) : NULL);
        json_object_object_add(o, "rolled_back", json_object_new_boolean(v->rolled_back));
        for (char **n = v->notes; n && *n; n++)
            json_object_array_add(notes, json_object_new_string(*n));
        json_object_object_add(o, "notes", notes);
        for (size_t j = 0; j < v->n_steps; j++) {
            const ApplyStepResult *s = &v->steps[j];
            json_object *so = json_object_new_object();
            json_object_object_add(so, "kind", json_object_new_string(plan_step_kind_to_string(s->kind) ?: "?"));
            json_object_object_add(so, "description", json_object_new_string(s->description));
            json_object_object_add(so, "changed", json_object_new_boolean(s->changed));
            json_object_object_add(so, "error", json_object_new_int(s->error));
            json_object_object_add(so, "message", s->message ? json_object_new_string(s->message) : NULL);
            json_object_array_add(steps, so);
        }
        json_object_object_add(o, "steps", steps);
        json_object_array_add(arr, o);
    }
    json_object_object_add(root, "ok", json_object_new_boolean(apply_result_ok(r)));
    json_object_object_add(root, "volumes", arr);
    *ret = root;
    return 0;
}

static const char *jget_str(json_object *o, const char *k) {
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_string) ? json_object_get_string(v)
                                                                                            : NULL;
}

static int jget_int(json_object *o, const char *k) {
    json_object *v;
    return json_object_object_get_ex(o, k, &v) ? json_object_get_int(v) : 0;
}

static bool jget_bool(json_object *o, const char *k) {
    json_object *v;
    return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

static int dup_opt(const char *s, char **ret) {
    *ret = NULL;
    if (s && !(*ret = strdup(s)))
        return -ENOMEM;
    return 0;
}

int apply_result_from_json(json_object *j, ApplyResult **ret) {
    json_object *arr;
    if (!j || !json_object_object_get_ex(j, "volumes", &arr) || !json_object_is_type(arr, json_type_array))
        return -EBADMSG;
    _cleanup_(apply_result_freep) ApplyResult *r = NULL;
    int k = apply_result_new(&r);
    if (k < 0)
        return k;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *o = json_object_array_get_idx(arr, i), *steps, *notes;
        const char *name = jget_str(o, "volume");
        ApplyOutcome outcome = apply_outcome_from_string(jget_str(o, "outcome"));
        if (!name || outcome < 0)
            return -EBADMSG;
        ApplyVolumeResult *v = apply_result_add_volume(r, name);
        if (!v)
            return -ENOMEM;
        v->outcome = outcome;
        v->error = jget_int(o, "error");
        v->rolled_back = jget_bool(o, "rolled_back");
        if (dup_opt(jget_str(o, "message"), &v->message) < 0 || dup_opt(jget_str(o, "reason"), &v->reason) < 0)
            return -ENOMEM;
        if (json_object_object_get_ex(o, "notes", &notes) && json_object_is_type(notes, json_type_array))
            for (size_t n = 0; n < json_object_array_length(notes); n++) {
                const char *t = json_object_get_string(json_object_array_get_idx(notes, n));
                if (t && strv_extend(&v->notes, t) < 0)
                    return -ENOMEM;
            }
        if (!json_object_object_get_ex(o, "steps", &steps) || !json_object_is_type(steps, json_type_array))
            continue;
        for (size_t n = 0; n < json_object_array_length(steps); n++) {
            json_object *so = json_object_array_get_idx(steps, n);
            PlanStepKind kind = plan_step_kind_from_string(jget_str(so, "kind"));
            if (kind < 0)
                return -EBADMSG;
            ApplyStepResult *s = apply_volume_result_add_step(v, kind, jget_str(so, "description"));
            if (!s)
                return -ENOMEM;
            s->changed = jget_bool(so, "changed");
            s->error = jget_int(so, "error");
            if (dup_opt(jget_str(so, "message"), &s->message) < 0)
                return -ENOMEM;
        }
    }
    *ret = TAKE_PTR(r);
    return 0;
}

int apply_result_to_json_string(const ApplyResult *r, char **ret) {
    json_object *root = NULL;
    int k = apply_result_to_json(r, &root);
    if (k < 0)
        return k;
    const char *t = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                              JSON_C_TO_STRING_NOSLASHESCAPE);
    char *c = t ? strdup(t) : NULL;
    json_object_put(root);
    if (!c)
        return -ENOMEM;
    *ret = c;
    return 0;
}

int apply_result_to_text(const ApplyResult *r, char **ret) {
    if (!r || !ret)
        return -EINVAL;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return -ENOMEM;
    for (size_t i = 0; i < r->n_volumes; i++) {
        const ApplyVolumeResult *v = &r->volumes[i];
        fprintf(f, "%-11s %s%s\n", v->volume, apply_outcome_to_string(v->outcome),
                v->rolled_back ? " (rolled back)" : "");
        for (size_t j = 0; j < v->n_steps; j++) {
            const ApplyStepResult *s = &v->steps[j];
            const char *state = s->error < 0 ? "FAILED" : s->changed ? "changed" : "unchanged";
            if (!plan_step_kind_is_action(s->kind))
                state = s->kind == PLAN_STEP_DRIFT ? "drift" : "refused";
            fprintf(f, "    %-9s %s: %s\n", state, plan_step_kind_to_string(s->kind) ?: "?", s->description);
            if (s->message)
                fprintf(f, "              %s\n", s->message);
        }
        /* A refusal that came from the plan is already shown as its step. */
        if (v->message && (v->outcome == APPLY_OUTCOME_FAILED || (v->outcome == APPLY_OUTCOME_REFUSED && v->n_steps == 0)))
            fprintf(f, "    error: %s\n", v->message);
        for (char **n = v->notes; n && *n; n++)
            fprintf(f, "    note: %s\n", *n);
    }
    if (r->n_volumes == 0)
        fputs("No volumes.\n", f);
    if (fclose(f) != 0) {
        free(buf);
        return -ENOMEM;
    }
    *ret = buf;
    return 0;
}
