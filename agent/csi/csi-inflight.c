/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One operation per volume at a time. A CO serialises the calls for one
 * volume, but a retry after its deadline may arrive while the first call
 * still waits for the agent; the spec's answer for that is ABORTED
 * ("operation pending for volume"), and the CO tries again later.
 */

#include <pthread.h>

#include "csi-plugin.h"
#include "util.h"

struct CsiInflight {
    pthread_mutex_t lock;
    char **busy; /* strv of volume ids */
};

int csi_inflight_new(CsiInflight **ret) {
    CsiInflight *f = calloc(1, sizeof *f);
    if (!f || !(f->busy = calloc(1, sizeof(char *)))) {
        free(f);
        return -ENOMEM;
    }
    pthread_mutex_init(&f->lock, NULL);
    *ret = f;
    return 0;
}

CsiInflight *csi_inflight_free(CsiInflight *f) {
    if (!f)
        return NULL;
    strv_free(f->busy);
    pthread_mutex_destroy(&f->lock);
    free(f);
    return NULL;
}

int csi_inflight_take(CsiInflight *f, const char *volume_id) {
    pthread_mutex_lock(&f->lock);
    int r = strv_contains((const char *const *) f->busy, volume_id) ? -EBUSY : strv_extend(&f->busy, volume_id);
    pthread_mutex_unlock(&f->lock);
    return r;
}

void csi_inflight_release(CsiInflight *f, const char *volume_id) {
    pthread_mutex_lock(&f->lock);
    size_t j = 0;
    for (size_t i = 0; f->busy[i]; i++) {
        if (streq(f->busy[i], volume_id))
            free(f->busy[i]);
        else
            f->busy[j++] = f->busy[i];
    }
    f->busy[j] = NULL;
    pthread_mutex_unlock(&f->lock);
}
