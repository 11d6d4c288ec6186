/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * RecordSaver: writes the state record file off the event loop.
 *
 * A durable save is write + fsync + rename + a directory fsync. While
 * mkfs runs on loop devices backed by the same host filesystem, one such
 * fsync takes 3-24 ms (a journal commit behind the carves' writes), and
 * a loop iteration may save several times: every API request waited
 * behind them. Here the loop only serialises the record (a consistent
 * snapshot) and hands the text to one thread, which writes it.
 *
 * Order: one thread writes the snapshots in the order they were
 * submitted, and a snapshot still waiting when a newer one comes is
 * dropped for it (each is the whole record, so the newer one holds every
 * change of the older). An older snapshot can therefore never land after
 * a newer one.
 *
 * The snapshot is taken in a later dispatch of the loop than the submit
 * (a defer source): the saves of one callback cost one serialisation of
 * the record.
 *
 * A failed write keeps the changes in memory; the record is submitted
 * again after 1 s, doubling up to 30 s, until a write lands. At free, a
 * failed last write is tried once more, synchronously, and logged.
 *
 * Durability is asked for with record_saver_wait(): the callback runs on
 * the loop once everything submitted before the call is on disk (or a
 * write covering it failed). Whoever must not go on before a change is
 * durable (a worker about to format, an API answer that promises the
 * change) waits; the rest only submit.
 */

#include <stdbool.h>
#include <stdint.h>
#include <systemd/sd-event.h>

#include "state.h"

typedef struct RecordSaver RecordSaver;
typedef struct RecordSaverWaiter RecordSaverWaiter;

/* error: 0 when the changes waited for are durable, <0 (-errno of the
 * write) when they are not (they stay in memory and are saved again),
 * -ECANCELED from record_saver_free(): no answer is coming, free what
 * is held and do nothing else. The waiter is freed after the call. */
typedef void (*RecordSaverDone)(int error, void *userdata);

/* Starts the writer thread for the record file at path, and its
 * completion source on e. Returns 0 or -errno. */
int record_saver_new(sd_event *e, const char *path, RecordSaver **ret);

/* Writes what is still pending (blocking), stops the thread, and frees.
 * A submit not yet snapshotted is taken first, and a failed last write
 * is tried once more (the last record submitted must still be alive).
 * Waiters still queued are called with -ECANCELED. */
RecordSaver *record_saver_free(RecordSaver *s);

/* Queues record for writing: its snapshot (bumping record->generation,
 * as state_record_save does) is taken in the next loop iteration, or by
 * record_saver_free(), and holds every change made until then. record is
 * borrowed: it must live until then. A snapshot that cannot be made
 * fails its waiters as a write would. Returns 0 or -errno. */
int record_saver_submit(RecordSaver *s, StateRecord *record);

/* Calls done from the loop once everything submitted so far is durable;
 * at once (from the loop, never from inside this call) when it is
 * already. *ret (may be NULL) is the handle for
 * record_saver_waiter_cancel(), valid until done has run. */
int record_saver_wait(RecordSaver *s, RecordSaverDone done, void *userdata, RecordSaverWaiter **ret);

/* Drops a waiter before its callback ran. NULL is a no-op. */
void record_saver_waiter_cancel(RecordSaverWaiter *w);

/* true when every submitted snapshot has been written (or failed), as
 * the loop last learned it, and no waiter is left to be called. */
bool record_saver_idle(const RecordSaver *s);

/* The error of the last write (0: it succeeded); the loop's view. */
int record_saver_last_error(const RecordSaver *s);

/* Counters for /metrics: writes done, writes failed, snapshots dropped
 * for a newer one, and the longest write in microseconds. */
typedef struct RecordSaverStats {
    uint64_t writes;
    uint64_t failures;
    uint64_t coalesced;
    uint64_t max_write_usec;
    uint64_t last_write_usec;
} RecordSaverStats;
void record_saver_stats(const RecordSaver *s, RecordSaverStats *ret);
