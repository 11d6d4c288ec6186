/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Where a changed record goes. Whoever changes a volume's entry in the
 * record (the backends' steps, at the points where a crash must find the
 * change on disk: the intent before a backing file is created, the UUID
 * before mkfs, "formatted" after it) calls record_store_save() and only
 * goes on when it succeeded.
 *
 * One writer per record file: in layoutctl (no agent) the store writes the
 * file itself; in the agent's workers the store hands the volume's entry
 * to the agent, which owns the record, saves it, and only then answers
 * (src/engine/worker-child.c). The steps cannot tell the difference.
 */

#include "state.h"

typedef struct RecordStore RecordStore;

struct RecordStore {
    /* Makes `record` durable after the entry of `volume` changed in it
     * (added, updated, or removed when the record no longer has it).
     * Returns: <0 on error (nothing may be assumed saved), 0. */
    int (*save)(RecordStore *store, StateRecord *record, const char *volume);
};

/* A store that writes the whole record atomically to a file. */
typedef struct RecordFileStore {
    RecordStore store;
    const char *path;        /* NULL: keep the record in memory only (tests) */
} RecordFileStore;

/* Initialises *s to save to path (borrowed). */
void record_file_store_init(RecordFileStore *s, const char *path);

/* store->save(store, record, volume); a NULL store saves nothing. */
int record_store_save(RecordStore *store, StateRecord *record, const char *volume);
