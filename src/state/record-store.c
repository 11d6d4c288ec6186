/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "record-store.h"

static int file_store_save(RecordStore *store, StateRecord *record, const char *volume) {
    RecordFileStore *s = (RecordFileStore *) store;
    if (!s->path)
        return 0;
    return state_record_save(record, s->path);
}

void record_file_store_init(RecordFileStore *s, const char *path) {
    *s = (RecordFileStore) { .store = { .save = file_store_save }, .path = path };
}

int record_store_save(RecordStore *store, StateRecord *record, const char *volume) {
    if (!store || !store->save)
        return 0;
    return store->save(store, record, volume);
}
