/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The group commit of layoutd-wsfs --commit=syncfs, done in-process by the
 * flush-scope workload (mode "syncfs", the benchmark's *-nofuse arms): the
 * same batch rules without the FUSE hop, so that an arm measures the
 * flush-scope effect alone. See groupcommit.c for where the rules come from.
 */

#include <stdint.h>

typedef struct GroupCommit GroupCommit;

typedef struct GroupCommitStats {
    uint64_t records, records_committed, batches, flushes, flush_errors;
    uint64_t flush_ns;       /* total time inside syncfs(2) */
    uint64_t last_commit_ns; /* CLOCK_MONOTONIC when the last batch became durable, 0 = none */
} GroupCommitStats;

/*
 * Starts the committer thread. fd: any fd on the filesystem to flush (it is
 * borrowed, not closed). A batch closes at batch_records records or
 * batch_usec after its first record, whichever comes first.
 *
 * Returns: <0 on error (-errno), 0 on success (*ret set).
 */
int group_commit_start(int fd, uint64_t batch_records, uint64_t batch_usec, GroupCommit **ret);

/*
 * Adds one record to the open batch; waits while that batch is full (the
 * committer takes it). Returns: the id of the batch the record joined.
 */
uint64_t group_commit_add(GroupCommit *g);

/* Returns: the id of the batch that is open now (records join it). */
uint64_t group_commit_current(GroupCommit *g);

/*
 * Waits until every record added so far is committed, at most timeout_ns.
 * The open batch keeps its own deadline (it is not hurried).
 *
 * Returns: -ETIMEDOUT, -EIO if a flush failed, 0 on success
 * (*ret_durable_ns = CLOCK_MONOTONIC of the commit that made it so).
 */
int group_commit_wait(GroupCommit *g, uint64_t timeout_ns, uint64_t *ret_durable_ns);

/* A consistent copy of the counters. */
void group_commit_get_stats(GroupCommit *g, GroupCommitStats *ret);

/* Commits what is open, stops the thread, frees g. Accepts NULL. Returns: NULL. */
GroupCommit *group_commit_stop(GroupCommit *g);
