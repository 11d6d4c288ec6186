/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "backoff.h"

usec_t backoff_delay(const BackoffParams *p, unsigned n, uint64_t rnd) {
    usec_t floor = MAX(p->initial, BACKOFF_MIN_DELAY);
    usec_t cap = MAX(p->max, floor);
    if (n == 0)
        n = 1;

    /* initial * 2^(n-1), saturating at cap without overflowing. */
    usec_t d = MAX(p->initial, (usec_t) 1);
    for (unsigned i = 1; i < n && d < cap; i++)
        d = d > cap / 2 ? cap : d * 2;
    d = MIN(d, cap);

    /* Jitter in [-20%, +20%): factor = 0.8 + 0.4 * rnd / 2^64, computed in
     * integers (per-mille) so that it is exact and portable. */
    uint64_t permille = 800 + (uint64_t) ((rnd >> 32) * 400 / (UINT64_C(1) << 32));
    usec_t j = d / 1000 * permille + (d % 1000) * permille / 1000;
    return CLAMP(j, floor, cap);
}

unsigned backoff_next_attempt(const BackoffParams *p, unsigned previous, usec_t ran_for) {
    if (p->reset_after > 0 && ran_for >= p->reset_after)
        return 1;
    return previous < 1000000 ? previous + 1 : previous;
}

bool backoff_tally_would_trip(const BackoffTally *t, const BackoffParams *p, usec_t now) {
    unsigned limit = MIN(p->crashloop_deaths, (unsigned) BACKOFF_TALLY_MAX);
    if (limit == 0)
        return false;
    unsigned within = 1; /* the death being considered */
    for (unsigned i = 0; i < t->n; i++)
        if (now - t->deaths[i] < p->crashloop_interval)
            within++;
    return within >= limit;
}

void backoff_tally_record(BackoffTally *t, usec_t now) {
    if (t->n == BACKOFF_TALLY_MAX) {
        memmove(t->deaths, t->deaths + 1, sizeof(t->deaths[0]) * (BACKOFF_TALLY_MAX - 1));
        t->n--;
    }
    t->deaths[t->n++] = now;
}

void backoff_tally_reset(BackoffTally *t) {
    t->n = 0;
}
