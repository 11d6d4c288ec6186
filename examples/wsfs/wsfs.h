/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * layoutd-wsfs: the reference workspace FUSE daemon. One header for the
 * four parts of a small program:
 *   stats.c   counters, written as JSON
 *   cas.c     the sharded content-addressed pool (SHA-256 objects)
 *   commit.c  group commit: records join a batch, a committer thread
 *             makes each batch durable (syncfs | fdatasync | none)
 *   fs.c      the FUSE low-level operations over the state directory
 * main.c parses the command line and runs the session.
 */

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

#define WSFS_XATTR_CAS "user.wsfs.cas"
#define WSFS_HEX_LEN 64 /* SHA-256 as lowercase hex */

/* ---- stats.c ---- */

typedef struct Stats {
    atomic_uint_fast64_t operations;           /* FUSE requests served */
    atomic_uint_fast64_t records;              /* records submitted to batches */
    atomic_uint_fast64_t records_committed;    /* records whose batch is durable */
    atomic_uint_fast64_t batches;              /* batches committed */
    atomic_uint_fast64_t flushes;              /* syncfs/fdatasync/fsync calls by the committer */
    atomic_uint_fast64_t flush_us;             /* time spent in them, total */
    atomic_uint_fast64_t flush_errors;
    atomic_uint_fast64_t app_fsyncs;           /* fsync(2)/fsyncdir from applications */
    atomic_uint_fast64_t objects_stored;       /* new objects published to the pool */
    atomic_uint_fast64_t objects_deduplicated; /* files whose object already existed */
    atomic_uint_fast64_t stubs_punched;        /* stubs whose data was released */
    atomic_uint_fast64_t copy_ups;             /* CAS files copied back for writing */
    atomic_uint_fast64_t cas_errors;
} Stats;

/* Formats the counters as one line of JSON (no newline) into buf.
 * Returns: the length that was needed (like snprintf). */
int stats_format(Stats *s, const char *commit_mode, char *buf, size_t size);
/* Writes the counters to path atomically (temp file + rename, no fsync:
 * the stats are advisory and must not add flushes of their own).
 * Returns: <0 on error, 0 on success. */
int stats_write(Stats *s, const char *commit_mode, const char *path);

/* ---- cas.c ---- */

typedef struct CasPool {
    int *objects_fds;   /* O_DIRECTORY fd of <content dir>/objects, per shard */
    char **dirs;        /* the content dirs, in shard order */
    size_t n_shards;
} CasPool;

/* Opens (and creates <dir>/objects in) each content dir, in shard order.
 * Returns: <0 on error (*ret_bad = index of the failing dir), 0 on success. */
int cas_pool_open(CasPool *p, char **dirs, size_t n, size_t *ret_bad);
void cas_pool_close(CasPool *p);
/* The shard of a digest: first 4 hex digits as a 16-bit number, mod n. */
size_t cas_shard_of(const char *hex, size_t n_shards);
/* Hashes src (from offset 0 to EOF) and publishes it as an object unless
 * it already exists. *ret_obj_fd (O_RDONLY) and *ret_dir_fd (the
 * objects/xx dir) are returned for the caller's durability bookkeeping.
 * Returns: <0 on error, 0 stored a new object, 1 object already existed. */
int cas_publish(CasPool *p, int src_fd, char ret_hex[WSFS_HEX_LEN + 1],
                int *ret_obj_fd, int *ret_dir_fd, size_t *ret_shard);
/* Opens an object read-only. Returns: fd, or <0 (-ENOENT if missing). */
int cas_open_object(CasPool *p, const char *hex);
/* Copies len bytes from in to out, both from offset 0.
 * Returns: <0 on error, 0 on success. */
int cas_copy(int in_fd, int out_fd, uint64_t len);
/* Reads the CAS digest of a backing file (fd may be O_PATH).
 * Returns: 1 (and ret_hex) if it is a stub, 0 if not, <0 on error. */
int cas_stub_digest(int fd, char ret_hex[WSFS_HEX_LEN + 1]);

/* ---- commit.c ---- */

typedef enum CommitMode {
    COMMIT_SYNCFS,
    COMMIT_FDATASYNC,
    COMMIT_NONE,
    _COMMIT_MODE_MAX,
    _COMMIT_MODE_INVALID = -EINVAL,
} CommitMode;

const char *commit_mode_to_string(CommitMode m);
CommitMode commit_mode_from_string(const char *s);

/* What fdatasync mode must sync for a record: a file's data, or a whole
 * inode (directories, and CAS stubs whose xattr must reach the disk). */
typedef struct CommitItem {
    dev_t dev;
    ino_t ino;
    int fd;     /* the caller keeps ownership; O_PATH is fine */
    bool full;  /* fsync instead of fdatasync */
} CommitItem;

/* A CAS stub whose local data may be released once its object is durable. */
typedef struct CasPunch {
    dev_t dev;
    ino_t ino;
    int fd;     /* owned by the committer once queued */
    char hex[WSFS_HEX_LEN + 1];
} CasPunch;

typedef void (*CommitPunchFn)(void *userdata, const CasPunch *p);

typedef struct Committer Committer;

typedef struct CommitterConfig {
    CommitMode mode;
    size_t batch_records;
    usec_t batch_usec;
    int state_fd;              /* O_RDONLY dir on the state filesystem */
    const CasPool *pool;
    Stats *stats;
    const char *stats_path;    /* NULL: no stats file */
    CommitPunchFn punch;
    void *userdata;
} CommitterConfig;

/* Starts the committer thread. Returns: <0 on error, 0 on success. */
int committer_start(const CommitterConfig *cfg, Committer **ret);
/* Adds one record (with the inodes fdatasync mode has to sync, a content
 * shard that got an object or -1, and an optional stub to punch after the
 * commit). Blocks while the open batch is full and not yet taken by the
 * committer (back-pressure). Never call it with the CAS lock held:
 * the committer takes that lock to punch stubs.
 * Returns: the id of the batch the record joined. */
uint64_t committer_add(Committer *c, const CommitItem *items, size_t n_items,
                       ssize_t shard, const CasPunch *punch);
/* The id of the batch that is open now. */
uint64_t committer_current(Committer *c);
/* Asks for a stats file write soon (e.g. on SIGUSR1). */
void committer_write_stats(Committer *c);
/* Commits what is pending, stops and frees the committer. */
void committer_stop(Committer *c);

/* ---- fs.c ---- */

typedef struct Fs Fs;

typedef struct FsConfig {
    int root_fd;             /* O_PATH fd of the state dir */
    CasPool *pool;
    uint64_t cas_threshold;  /* 0 = no CAS */
    CommitMode mode;
    Stats *stats;
} FsConfig;

int fs_new(const FsConfig *cfg, Fs **ret);
void fs_set_committer(Fs *fs, Committer *c);
/* The punch callback handed to the committer (userdata = Fs*). */
void fs_punch(void *userdata, const CasPunch *p);
void fs_free(Fs *fs);
extern const struct fuse_lowlevel_ops fs_ops;
