/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test driver for placement on real volumes: loads a layout and the
 * record, and runs one placement operation, carving new state volumes
 * through the volumes engine (observe -> plan -> apply, cut down to the one
 * new volume, as the agent does). A test program, so it prints.
 *
 *   place-driver LAYOUT apply                 carve the pool minimums
 *   place-driver LAYOUT create ID [TENANT] [--reclaim]
 *                                             prints the volume; a refusal
 *                                             prints the explanation on
 *                                             stderr and exits 2
 *   place-driver LAYOUT remove ID [--destroy]
 *   place-driver LAYOUT scope                 "<volume> <n> <ids...>" lines
 *   place-driver LAYOUT why ID [TENANT]       the ranking of the volumes
 *   place-driver LAYOUT reconcile             "<kind> <volume> <name>" lines
 *   place-driver LAYOUT teardown              unmount, detach, delete data
 */
#include <stdio.h>

#include "apply.h"
#include "observe.h"
#include "place.h"
#include "plan.h"
#include "util.h"

typedef struct Driver {
    Layout *layout;
    StateRecord *record;
    char *record_path;
} Driver;

/* Applies the plan of `l` (only the steps of `only`, if set). */
static int apply_layout(Driver *d, const Layout *l, const char *only) {
    _cleanup_(observation_freep) Observation *obs = NULL;
    _cleanup_(plan_freep) Plan *plan = NULL;
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    int r = observe_volumes(l, d->record, &obs);
    if (r < 0)
        return r;
    r = plan_compute(l, d->record, obs, &plan);
    if (r < 0)
        return r;
    size_t all = plan->n_steps, k = 0;
    if (only) {
        for (size_t i = 0; i < plan->n_steps; i++)
            if (streq(plan->steps[i].volume, only)) {
                PlanStep t = plan->steps[k];
                plan->steps[k++] = plan->steps[i];
                plan->steps[i] = t;
            }
        plan->n_steps = k;
    }
    r = apply_plan(l, plan, only ? NULL : obs, d->record, d->record_path, &res);
    plan->n_steps = all;
    if (r < 0)
        return r;
    if (!apply_result_ok(res)) {
        _cleanup_free_ char *text = NULL;
        if (apply_result_to_text(res, &text) >= 0)
            fprintf(stderr, "%s", text);
        return -EIO;
    }
    return 0;
}

static int carve(void *userdata, PoolRole role, unsigned index, char **ret) {
    Driver *d = userdata;
    _cleanup_free_ char *name = NULL;
    if (role != POOL_STATE)
        return -EOPNOTSUPP;
    Layout variant = *d->layout;
    variant.pools[role].min_volumes = MAX(variant.pools[role].min_volumes, index + 1);
    int r = layout_volume_name(role, index, &name);
    if (r < 0)
        return r;
    fprintf(stderr, "place-driver: carving %s\n", name);
    r = apply_layout(d, &variant, name);
    if (r < 0)
        return r;
    *ret = TAKE_PTR(name);
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: place-driver LAYOUT apply|create ID [TENANT] [--reclaim]|remove ID "
                    "[--destroy]|scope|why ID [TENANT]|reconcile|teardown\n");
    return 64;
}

int main(int argc, char **argv) {
    Driver d = {};
    LayoutErrors errors = {};
    int r;

    if (argc < 3)
        return usage();
    r = layout_parse_file(argv[1], &d.layout, &errors);
    if (r < 0) {
        for (size_t i = 0; i < errors.n; i++)
            fprintf(stderr, "%s:%u:%u: %s\n", errors.items[i].file, errors.items[i].line,
                    errors.items[i].column, errors.items[i].message);
        layout_errors_clear(&errors);
        return 1;
    }
    r = layout_record_path(d.layout, &d.record_path);
    if (r >= 0)
        r = mkdir_p(d.layout->root, 0755);
    if (r >= 0)
        r = state_record_load(d.record_path, &d.record);
    if (r < 0) {
        fprintf(stderr, "place-driver: loading the record: %s\n", strerror(-r));
        return 1;
    }
    PlaceContext ctx = {
        .layout = d.layout,
        .record = d.record,
        .record_path = d.record_path,
        .carve = carve,
        .carve_userdata = &d,
    };
    const char *cmd = argv[2];
    int ret = 0;

    if (streq(cmd, "apply")) {
        r = apply_layout(&d, d.layout, NULL);
        if (r < 0) {
            fprintf(stderr, "place-driver: apply: %s\n", strerror(-r));
            ret = 1;
        }
    } else if (streq(cmd, "create") && argc >= 4) {
        PlaceCreateRequest req = { .id = argv[3] };
        for (int i = 4; i < argc; i++) {
            if (streq(argv[i], "--reclaim"))
                req.reclaim = true;
            else
                req.tenant = argv[i];
        }
        PlaceError e = {};
        WorkspaceRecord *w = NULL;
        r = place_workspace_create(&ctx, &req, &w, &e);
        if (r < 0) {
            fprintf(stderr, "place-driver: create %s: %s [%s, %s]\n", req.id,
                    e.message ?: strerror(-r), place_reason_to_string(e.reason), strerror(-r));
            ret = e.reason != PLACE_REASON_NONE ? 2 : 1;
        } else
            printf("%s\n", w->volume);
        place_error_done(&e);
    } else if (streq(cmd, "remove") && argc >= 4) {
        PlaceError e = {};
        unsigned flags = argc >= 5 && streq(argv[4], "--destroy") ? PLACE_REMOVE_DESTROY : 0;
        r = place_workspace_remove(&ctx, argv[3], flags, &e);
        if (r < 0) {
            fprintf(stderr, "place-driver: remove %s: %s\n", argv[3], e.message ?: strerror(-r));
            ret = 1;
        }
        place_error_done(&e);
    } else if (streq(cmd, "scope")) {
        PlaceFlushScope fs = {};
        const Pool *p = layout_pool(d.layout, POOL_STATE);
        r = place_flush_scope(d.record, p ? p->workspaces_per_volume : 0, &fs);
        if (r < 0) {
            fprintf(stderr, "place-driver: scope: %s\n", strerror(-r));
            ret = 1;
        }
        for (size_t i = 0; r >= 0 && i < fs.n_volumes; i++) {
            printf("%s %zu", fs.volumes[i].volume, fs.volumes[i].n_workspaces);
            for (char **w = fs.volumes[i].workspaces; *w; w++)
                printf(" %s", *w);
            printf("\n");
        }
        place_flush_scope_done(&fs);
    } else if (streq(cmd, "why") && argc >= 4) {
        PlaceCreateRequest req = { .id = argv[3], .tenant = argc >= 5 ? argv[4] : NULL };
        PlaceDecision dec = {};
        PlaceCandidate *cands = NULL;
        size_t n = 0;
        PlacePoolConfig cfg;
        r = place_workspace_explain(&ctx, &req, &dec, &cands, &n, &cfg);
        if (r >= 0) {
            _cleanup_free_ char *why = NULL;
            PlaceRequest preq = { .id = req.id, .tenant = req.tenant };
            r = place_decision_format_why(&dec, cands, n, &preq, &cfg, &why);
            if (r >= 0)
                printf("%s", why);
        }
        if (r < 0) {
            fprintf(stderr, "place-driver: why: %s\n", strerror(-r));
            ret = 1;
        }
        free(cands);
        place_decision_done(&dec);
    } else if (streq(cmd, "reconcile")) {
        PlaceReconcileReport rep = {};
        r = place_reconcile(&ctx, &rep);
        if (r < 0) {
            fprintf(stderr, "place-driver: reconcile: %s\n", strerror(-r));
            ret = 1;
        }
        for (size_t i = 0; r >= 0 && i < rep.n_items; i++)
            printf("%s %s %s\n", place_reconcile_kind_to_string(rep.items[i].kind),
                   rep.items[i].volume ?: "-", rep.items[i].name ?: "-");
        place_reconcile_report_done(&rep);
    } else if (streq(cmd, "teardown")) {
        _cleanup_(observation_freep) Observation *obs = NULL;
        _cleanup_(apply_result_freep) ApplyResult *res = NULL;
        TeardownOptions opts = { .destroy_data = true, .lazy = true };
        /* The volumes engine refuses to tear down volumes that hold
         * workspaces: destroy them first. */
        while (d.record->n_workspaces > 0) {
            _cleanup_free_ char *id = strdup(d.record->workspaces[0]->id);
            PlaceError e = {};
            r = id ? place_workspace_remove(&ctx, id, PLACE_REMOVE_DESTROY, &e) : -ENOMEM;
            if (r < 0) {
                fprintf(stderr, "place-driver: destroy %s: %s\n", id ?: "?", e.message ?: strerror(-r));
                place_error_done(&e);
                break;
            }
        }
        if (r >= 0)
            r = observe_volumes(d.layout, d.record, &obs);
        if (r >= 0)
            r = apply_teardown(d.layout, obs, d.record, d.record_path, &opts, &res);
        if (r >= 0 && !apply_result_ok(res)) {
            _cleanup_free_ char *text = NULL;
            if (apply_result_to_text(res, &text) >= 0)
                fprintf(stderr, "%s", text);
        }
        if (r < 0 || !apply_result_ok(res)) {
            fprintf(stderr, "place-driver: teardown failed: %s\n", r < 0 ? strerror(-r) : "see above");
            ret = 1;
        }
    } else
        ret = usage();

    state_record_free(d.record);
    layout_free(d.layout);
    free(d.record_path);
    return ret;
}
