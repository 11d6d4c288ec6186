/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What the volume verbs (plan, apply, teardown, repair) share: finding and
 * loading the layout, taking the root's lock, loading the record and
 * observing. These verbs work directly on the engine, as root, without the
 * agent; the agent does the same through its API.
 */
#include <stdbool.h>

#include "layout.h"
#include "observe.h"
#include "state.h"

#define LAYOUTCTL_DEFAULT_LAYOUT_DIR "/etc/layoutd/layouts.d"

typedef struct EngineContext {
    Layout *layout;
    char *record_path;
    StateRecord *record;
    Observation *obs;
    int lock_fd;
} EngineContext;

/* Parses --layout FILE / --root DIR (already extracted by the verb), loads,
 * locks (<root>/layoutd-state.lock, exclusive, non-blocking) and observes.
 * Logs its own errors. Returns the layoutctl exit code (0 = ready). */
int engine_context_open(EngineContext *c, const char *layout_path, const char *root);
/* Observes again (after apply changed things). Returns <0 on error. */
int engine_context_reobserve(EngineContext *c);
void engine_context_close(EngineContext *c);
