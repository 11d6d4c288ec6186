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

#include "engine.h"
#include "place.h"
#include "util.h"

typedef struct Driver {
    Engine *engine;
    Layout *layout;        /* the engine's */
    StateRecord *record;   /* the engine's */
} Driver;

static int report(int r, ApplyResult *res) {
    if (r >= 0 && !apply_result_ok(res)) {
        _cleanup_free_ char *text = NULL;
        if (apply_result_to_text(res, &text) >= 0)
            fprintf(stderr, "%s", text);
        r = -EIO;
    }
    apply_result_free(res);
    return r;
}

/* The engine's carve, as the agent's worker runs it. */
static int carve(void *userdata, PoolRole role, unsigned index, char **ret) {
    Driver *d = userdata;
    ApplyResult *res = NULL;
    fprintf(stderr, "place-driver: carving %s-%u\n", pool_role_to_string(role), index);
    int r = engine_carve(d->engine, role, index, &res, ret);
    return report(r, res);
}

static int usage(void) {
    fprintf(stderr, "usage: place-driver LAYOUT apply|create ID [TENANT] [--reclaim]|remove ID "
                    "[--destroy]|scope|why ID [TENANT]|reconcile|teardown\n");
    return 64;
}

int main(int argc, char **argv) {
    Driver d = {};
    int r;

    if (argc < 3)
        return usage();
    EngineOptions eo = { .layout_path = argv[1], .lock = true, .create_root = true };
    _cleanup_free_ char *error = NULL;
    r = engine_open(&eo, &d.engine, &error);
    if (r < 0) {
        fprintf(stderr, "place-driver: %s\n", error ?: strerror(-r));
        return 1;
    }
    d.layout = d.engine->layout;
    d.record = d.engine->record;
    PlaceContext ctx = {
        .layout = d.layout,
        .record = d.record,
        .record_path = d.engine->record_path,
        .carve = carve,
        .carve_userdata = &d,
    };
    const char *cmd = argv[2];
    int ret = 0;

    if (streq(cmd, "apply")) {
        ApplyResult *res = NULL;
        r = report(engine_apply(d.engine, NULL, &res), res);
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
            r = engine_teardown(d.engine, &opts, &res);
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

    engine_free(d.engine);
    return ret;
}
