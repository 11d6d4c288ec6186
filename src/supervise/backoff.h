/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Restart backoff and the crash-loop tally. Pure maths: the caller passes
 * the clock and the random value, so tests are deterministic.
 *
 * delay(n) = min(max, initial * 2^(n-1)), n = 1 for the first restart after
 * a stable run, then jitter of +-20% (so that many workspaces that died
 * together do not restart in lockstep), then clamped to
 * [max(initial, BACKOFF_MIN_DELAY), max]: a crashing daemon never restarts
 * faster than the floor (s6 waits at least 1 s; we allow 100 ms for tests).
 */

#include <stdbool.h>

#include "macro.h"

#define BACKOFF_MIN_DELAY (100 * USEC_PER_MSEC)
#define BACKOFF_TALLY_MAX 64 /* crash-loop limits above this are clamped */

typedef struct BackoffParams {
    usec_t initial;
    usec_t max;
    usec_t reset_after;        /* a run this long resets the attempt count */
    unsigned crashloop_deaths; /* N deaths within ... (0 = never give up) */
    usec_t crashloop_interval; /* ... this long -> give up */
} BackoffParams;

/* Delay before restart attempt n (n >= 1; 0 is treated as 1); rnd is any
 * 64-bit random value (random_u64()). Returns the delay in usec. */
usec_t backoff_delay(const BackoffParams *p, unsigned n, uint64_t rnd);

/* The attempt number for the next restart: 1 if the daemon that just died
 * had run at least reset_after (it was stable, so start over), else
 * previous + 1 (saturating). */
unsigned backoff_next_attempt(const BackoffParams *p, unsigned previous, usec_t ran_for);

/* Death timestamps (CLOCK_MONOTONIC usec), newest last, at most
 * BACKOFF_TALLY_MAX; zero-initialise. */
typedef struct BackoffTally {
    usec_t deaths[BACKOFF_TALLY_MAX];
    unsigned n;
} BackoffTally;

/* Would one more death at `now` make crashloop_deaths deaths within
 * crashloop_interval? (Pure: does not record it.) */
bool backoff_tally_would_trip(const BackoffTally *t, const BackoffParams *p, usec_t now);
/* Records a death at now (dropping the oldest when full). */
void backoff_tally_record(BackoffTally *t, usec_t now);
/* Forgets every death (an explicit restart of a FAILED workspace). */
void backoff_tally_reset(BackoffTally *t);
