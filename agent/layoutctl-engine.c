/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>

#include "layoutctl-engine.h"
#include "layoutctl.h"
#include "util.h"
#include "vdo-apply.h"

static void print_layout_errors(const LayoutErrors *e) {
    for (size_t i = 0; i < e->n; i++)
        fprintf(stderr, "%s:%u:%u: error: %s\n", e->items[i].file ?: "?", e->items[i].line, e->items[i].column,
                e->items[i].message);
}

int engine_context_open(EngineContext *c, const char *layout_path, const char *root) {
    LayoutErrors errors = {};
    _cleanup_free_ char *found = NULL;
    int r;

    *c = (EngineContext) { .lock_fd = -EBADF };
    /* vdo-xfs volumes are set up by src/vdo, through apply's hook. */
    vdo_apply_register();
    if (!layout_path) {
        r = layout_find_in_dir(LAYOUTCTL_DEFAULT_LAYOUT_DIR, &found, &errors);
        if (r < 0) {
            print_layout_errors(&errors);
            layout_errors_clear(&errors);
            fprintf(stderr, "layoutctl: no layout in %s: %s (use --layout FILE)\n", LAYOUTCTL_DEFAULT_LAYOUT_DIR,
                    strerror(-r));
            return LAYOUTCTL_EXIT_FAILURE;
        }
        layout_path = found;
    }
    r = layout_parse_file(layout_path, &c->layout, &errors);
    if (r < 0) {
        print_layout_errors(&errors);
        layout_errors_clear(&errors);
        fprintf(stderr, "layoutctl: %s is not a valid layout: %s\n", layout_path, strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    layout_errors_clear(&errors);
    if (root) {
        r = layout_set_root(c->layout, root);
        if (r < 0) {
            fprintf(stderr, "layoutctl: bad --root %s: %s (must be absolute)\n", root, strerror(-r));
            return LAYOUTCTL_EXIT_USAGE;
        }
    }
    r = mkdir_p(c->layout->root, 0755);
    if (r < 0) {
        fprintf(stderr, "layoutctl: cannot create root %s: %s\n", c->layout->root, strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }

    /* One engine per root at a time: layoutctl and the agent take the same
     * lock, so two applies never race on one volume. */
    _cleanup_free_ char *lock = NULL;
    if (asprintf(&lock, "%s/layoutd-state.lock", streq(c->layout->root, "/") ? "" : c->layout->root) < 0)
        return LAYOUTCTL_EXIT_FAILURE;
    c->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (c->lock_fd < 0) {
        fprintf(stderr, "layoutctl: cannot open %s: %m\n", lock);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0) {
        fprintf(stderr, "layoutctl: %s is locked: another layoutctl or the agent is working on %s\n", lock,
                c->layout->root);
        return LAYOUTCTL_EXIT_FAILURE;
    }

    r = layout_record_path(c->layout, &c->record_path);
    if (r < 0)
        return LAYOUTCTL_EXIT_FAILURE;
    r = state_record_load(c->record_path, &c->record);
    if (r == -EBADMSG) {
        fprintf(stderr, "layoutctl: the record %s is corrupt; refusing to work on it (nothing changed)\n",
                c->record_path);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (r == -EPROTONOSUPPORT) {
        fprintf(stderr, "layoutctl: the record %s was written by a newer layoutd; refusing to touch it\n",
                c->record_path);
        return LAYOUTCTL_EXIT_FAILURE;
    }
    if (r < 0) {
        fprintf(stderr, "layoutctl: cannot load %s: %s\n", c->record_path, strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    r = observe_volumes(c->layout, c->record, &c->obs);
    if (r < 0) {
        fprintf(stderr, "layoutctl: cannot observe the volumes: %s\n", strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    return LAYOUTCTL_EXIT_OK;
}

int engine_context_reobserve(EngineContext *c) {
    observation_free(c->obs);
    c->obs = NULL;
    return observe_volumes(c->layout, c->record, &c->obs);
}

void engine_context_close(EngineContext *c) {
    observation_free(c->obs);
    state_record_free(c->record);
    layout_free(c->layout);
    free(c->record_path);
    safe_close(c->lock_fd);
    *c = (EngineContext) { .lock_fd = -EBADF };
}
