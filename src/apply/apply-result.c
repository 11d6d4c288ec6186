/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <json-c/json.h>
#include <stdarg.h>
#include <stdio.h>

#include "apply-internal.h"
#include "string-table.h"
#include "util.h"

static const char *const apply_outcome_table[_APPLY_OUTCOME_MAX] = {
    [APPLY_OUTCOME_UNCHANGED] = "unchanged",
    [APPLY_OUTCOME_CHANGED] = "changed",
    [APPLY_OUTCOME_REFUSED] = "refused",
    [APPLY_OUTCOME_FAILED] = "failed",
};

DEFINE_STRING_TABLE_LOOKUP(apply_outcome, ApplyOutcome);

ApplyResult *apply_result_free(ApplyResult *r) {
    if (!r)
        return NULL;
    for (size_t i = 0; i < r->n_volumes; i++) {
        ApplyVolumeResult *v = &r->volumes[i];
        free(v->volume);
        free(v->message);
        strv_free(v->notes);
        for (size_t j = 0; j < v->n_steps; j++) {
            free(v->steps[j].description);
            free(v->steps[j].message);
        }
        free(v->steps);
    }
    free(r->volumes);
    free(r);
    return NULL;
}

bool apply_result_ok(const ApplyResult *r) {
    for (size_t i = 0; r && i < r->n_volumes; i++)
        if (r->volumes[i].outcome == APPLY_OUTCOME_FAILED || r->volumes[i].outcome == APPLY_OUTCOME_REFUSED)
            return false;
    return true;
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

int apply_save_record(StateRecord *record, const char *record_path) {
    if (!record_path)
        return 0; /* tests may run without persistence */
    return state_record_save(record, record_path);
}

int apply_result_to_json_string(const ApplyResult *r, char **ret) {
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
