/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * layoutd-wsfs: the reference workspace FUSE daemon. One header for the
 * parts of a small program, each in its own file, each only looking down:
 *   stats.c    counters (per FUSE opcode too), written as JSON
 *   handle.c   file handles (name_to_handle_at) and the mounts they need
 *   fdcache.c  the bounded LRU cache of O_PATH fds, and the fd budget
 *   inode.c    the inode table: FUSE node ids <-> backing inodes
 *   digest.c   SHA-256 digests and sets of them
 *   cli.c      what the verbs and the command line share (lists, sizes, JSON)
 *   identity.c the volumes' identity files (.layoutd-volume), checked at start
 *   cas.c      the sharded content-addressed pool (SHA-256 objects)
 *   share.c    this workspace's use of the pool (--pool-share), and the
 *              walk of the state dir that counts it and finds lost objects
 *   commit.c   group commit: records join a batch, a committer thread
 *              makes each batch durable (syncfs | fdatasync | none)
 *   stub.c     CAS transitions of a file: store, punch, copy-up
 *   ops.c      the FUSE low-level operations over the state directory
 *   gc.c       `layoutd-wsfs gc`: the content pool's sweeper
 *   fsck.c     `layoutd-wsfs fsck`: every stub without its object
 * main.c parses the command line and runs the session (or a verb).
 */

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"

#define WSFS_XATTR_CAS "user.wsfs.cas"
/* Set (before user.wsfs.cas) when a stub is made, while the file still
 * holds its whole data; removed before the stub is punched. A stub without
 * it is never served from its own blocks (stub.c). */
#define WSFS_XATTR_WHOLE "user.wsfs.whole"
#define WSFS_XATTR_PREFIX "user.wsfs." /* our namespace: hidden from the mount */
#define WSFS_HEX_LEN 64                /* SHA-256 as lowercase hex */
/* The package store's name in the mount's root (--store; README, "The
 * package store"). Not listed by readdir; reserved: nothing else can be
 * made, renamed or removed under this name there. */
#define WSFS_STORE_NAME ".layoutd-store"
/* Entry and attribute timeout of the store's inodes, s: other daemons
 * (the tenant's other workspaces) add to and rename in the store, so the
 * kernel must not keep its view of it for the day-long default. */
#define WSFS_STORE_TIMEOUT 1.0

/* ---- digest.c ---- */

typedef struct Digest {
    unsigned char b[32];
} Digest;

/* An open-addressing set of digests. Zero-initialised is empty. */
typedef struct DigestSet {
    Digest *slots;
    bool *used;
    size_t cap, n;
} DigestSet;

/* Returns: false if s is not 64 lowercase hex digits. */
bool digest_from_hex(const char *s, Digest *ret);
void digest_to_hex(const Digest *d, char out[WSFS_HEX_LEN + 1]);
/* Returns: 1 added, 0 already there, -ENOMEM. */
int digest_set_add(DigestSet *s, const Digest *d);
bool digest_set_has(const DigestSet *s, const Digest *d);
void digest_set_done(DigestSet *s);

/* ---- cli.c ---- */

/* Appends the comma-separated items of arg to a NULL-terminated list.
 * Returns: <0 on error (-ENOMEM), 0 on success. */
int cli_split_list(char ***list, size_t *n, const char *arg);
void cli_free_list(char **list, size_t n);
/* "90", "90s", "30m", "2h", "1d", "2w" in seconds. Returns: <0 if invalid. */
int cli_parse_duration(const char *s, uint64_t *ret);
/* A non-negative integer; with suffixes, K/M/G/T (binary, "KiB" too).
 * Returns: <0 if invalid. */
int cli_parse_size(const char *s, bool suffixes, uint64_t *ret);
/* Writes s as a JSON string (quoted, escaped; bytes that are not UTF-8
 * become U+FFFD). */
void cli_json_string(FILE *f, const char *s);
/* flock(fd, op) (LOCK_SH or LOCK_EX), polling for at most timeout_s;
 * adds the time waited to *ret_wait_ms (may be NULL).
 * Returns: <0 on error (-ETIMEDOUT), 0 on success. */
int cli_flock_timeout(int fd, int op, uint64_t timeout_s, uint64_t *ret_wait_ms);

/* ---- walk.c ---- */

/* A walk of the regular files below a directory (embed it first in the
 * caller's own struct). */
typedef struct Walker {
    /* Called for each regular file: dir_fd is its directory (open for the
     * call), rel that directory's path below the root ("" for the root).
     * Returns: <0 to stop the walk (returned by walk_files), 0 to go on. */
    int (*file)(struct Walker *w, int dir_fd, const char *rel, const char *name, const struct stat *st);
    const atomic_bool *stop;  /* may be NULL: when true, the walk ends early */
    uint64_t errors, dirs;    /* entries that could not be read; directories read */
    char first_error[512];
} Walker;

/* Walks root_fd's tree: entries that vanish meanwhile are skipped, those
 * that cannot be read are counted (w->errors); symlinks are not followed.
 * Returns: <0 on error (the root unreadable, -ENOMEM, or file's), 0 on
 * success. */
int walk_files(Walker *w, int root_fd);

/* ---- stats.c ---- */

/* The FUSE requests counted one by one (the stats file's "ops" object). */
typedef enum WsfsOp {
    OP_INIT, OP_LOOKUP, OP_FORGET, OP_GETATTR, OP_SETATTR, OP_READLINK, OP_MKNOD, OP_MKDIR,
    OP_SYMLINK, OP_LINK, OP_UNLINK, OP_RMDIR, OP_RENAME, OP_CREATE, OP_OPEN, OP_READ, OP_WRITE,
    OP_FLUSH, OP_RELEASE, OP_FSYNC, OP_OPENDIR, OP_READDIR, OP_READDIRPLUS, OP_RELEASEDIR,
    OP_FSYNCDIR, OP_STATFS, OP_ACCESS, OP_GETXATTR, OP_SETXATTR, OP_LISTXATTR, OP_REMOVEXATTR,
    OP_COPY_FILE_RANGE, OP_FALLOCATE,
    _OP_MAX,
} WsfsOp;

const char *wsfs_op_to_string(WsfsOp op);

typedef struct Stats {
    atomic_uint_fast64_t operations;           /* FUSE requests served */
    atomic_uint_fast64_t ops[_OP_MAX];         /* ... by opcode */
    atomic_uint_fast64_t records;              /* records submitted to batches */
    atomic_uint_fast64_t records_committed;    /* records whose batch is durable */
    atomic_uint_fast64_t batches;              /* batches committed */
    atomic_uint_fast64_t flushes;              /* syncfs/fdatasync/fsync calls by the committer */
    atomic_uint_fast64_t flush_us;             /* time spent in them, total */
    atomic_uint_fast64_t flush_errors;
    atomic_uint_fast64_t app_fsyncs;           /* fsync(2)/fsyncdir from applications */
    atomic_uint_fast64_t objects_stored;       /* new objects published to the pool */
    atomic_uint_fast64_t objects_deduplicated; /* files whose object already existed */
    atomic_uint_fast64_t objects_restored;     /* objects found in the gc trash and put back */
    atomic_uint_fast64_t stubs_punched;        /* stubs whose data was released */
    atomic_uint_fast64_t punches_pending;      /* stubs whole while their object is durable, to punch */
    atomic_uint_fast64_t stubs_found_whole;    /* such stubs found by a pool-share walk */
    atomic_uint_fast64_t copy_ups;             /* CAS files copied back for writing */
    atomic_uint_fast64_t cas_errors;
    atomic_uint_fast64_t inodes;               /* inodes the kernel holds now */
    atomic_uint_fast64_t fd_cache_hits, fd_cache_misses, fd_cache_evictions, fd_cache_waits;
    atomic_uint_fast64_t fd_sheds;             /* EMFILE/ENFILE answered by closing cached fds */
    atomic_uint_fast64_t fds_cached;           /* O_PATH fds in the cache now */
    atomic_uint_fast64_t fds_handles;          /* fds held for open files and dirs now */
    /* Integrity and the pool's bounds (README "Counters"). */
    atomic_uint_fast64_t objects_missing;      /* distinct objects referenced but not in the pool */
    atomic_uint_fast64_t missing_eio;          /* opens answered EIO because of one */
    atomic_uint_fast64_t stubs_recovered;      /* object missing, own data verified whole: made ordinary */
    atomic_uint_fast64_t sparse_kept;          /* files kept out of the pool: they have holes */
    atomic_uint_fast64_t copies_abandoned;     /* copies into the pool stopped early */
    atomic_uint_fast64_t share_kept;           /* files kept out of the pool by --pool-share */
    atomic_uint_fast64_t store_clones;         /* links from the package store answered with a copy */
    atomic_uint_fast64_t pool_share;           /* the bound, bytes; UINT64_MAX: unlimited */
    atomic_uint_fast64_t pool_bytes;           /* this workspace's use of the pool, as counted */
    atomic_uint_fast64_t pool_objects;         /* distinct objects it references, as counted */
    atomic_bool pool_counted;                  /* a walk has counted them since the start */
    atomic_uint_fast64_t scans;                /* walks of the state dir completed */
    atomic_uint_fast64_t scan_ms;              /* the last one's duration */
    atomic_uint_fast64_t scan_errors;          /* entries a walk could not read */
    /* The missing objects, by digest: all of them (distinct), and the
     * first WSFS_MISSING_LISTED in the order found, for the stats file. */
    pthread_mutex_t missing_lock;
    DigestSet missing;
    char missing_listed[16][WSFS_HEX_LEN + 1];
    size_t n_missing_listed;
    uint64_t missing_unnamed;  /* found since the last summary line, not named in the log */
    usec_t missing_log_next;   /* CLOCK_MONOTONIC: the next summary line, at the earliest */
} Stats;

#define WSFS_MISSING_LISTED 16 /* digests in the stats file */
#define WSFS_MISSING_LOGGED 64 /* digests named in the log; later ones are counted there */

void stats_init(Stats *s);
void stats_done(Stats *s);
/* Counts an object found missing (once per digest). The first
 * WSFS_MISSING_LOGGED distinct ones are for the caller to log by name;
 * later ones are summed up by stats_log_missing() (a lost pool must not
 * become a log line per file; fsck lists them all).
 * Returns: 0 seen before, 1 new (log it), 2 new, not to be named. */
int stats_note_missing(Stats *s, const char *hex);
/* Logs how many were not named since the last such line: at once when
 * now_or_never (a walk ended), else at most once a minute. */
void stats_log_missing(Stats *s, bool now_or_never);
/* Looks again at each object counted missing (object_state: >0 it is in
 * the pool now, as cas_object_state() answers) and stops counting those
 * that are back, so a workspace's missing count follows the pool instead
 * of sticking until the daemon restarts. A file whose object is back reads
 * its data again at its next open.
 * Returns: how many came back. */
size_t stats_recheck_missing(Stats *s, int (*object_state)(void *userdata, const char *hex), void *userdata);

/* Formats the counters as one line of JSON (no newline) into buf.
 * Returns: the length that was needed (like snprintf). */
int stats_format(Stats *s, const char *commit_mode, char *buf, size_t size);
/* Writes the counters to path atomically (temp file + rename, no fsync:
 * the stats are advisory and must not add flushes of their own).
 * Returns: <0 on error, 0 on success. */
int stats_write(Stats *s, const char *commit_mode, const char *path);

/* ---- handle.c ---- */

#define WSFS_HANDLE_BYTES 64 /* ext4: 8, XFS: 8-24, btrfs: up to 40 */
#define WSFS_MAX_MOUNTS 16

/* An inode named by the kernel's file handle: valid across our closing
 * every fd of it, and never naming another file (a handle carries the
 * inode's generation; a reused inode number gives ESTALE, not a stranger). */
typedef struct FileHandle {
    int mount_id;
    int type;
    uint32_t len; /* 0: none (the filesystem has no handles) */
    unsigned char bytes[WSFS_HANDLE_BYTES];
} FileHandle;

/* open_by_handle_at() needs a (non-O_PATH) fd on the handle's mount. We
 * keep one per mount met; holding it pins the mount, so its id cannot be
 * reused by another mount while a handle refers to it. */
typedef struct MountTable {
    pthread_mutex_t lock;            /* writers only; readers use n */
    atomic_size_t n;
    int ids[WSFS_MAX_MOUNTS];
    int fds[WSFS_MAX_MOUNTS];
} MountTable;

void mount_table_init(MountTable *t);
void mount_table_done(MountTable *t);
/* Adds dir_fd's mount (dir_fd: an O_RDONLY directory on it; dup'ed).
 * Returns: <0 on error, 0 on success. */
int mount_table_add(MountTable *t, int dir_fd);
/* The handle of fd (any kind, O_PATH too). When fd's mount is new to the
 * table and fd is a directory, the mount is added.
 * Returns: <0 on error (-EOPNOTSUPP: no handles here, -ENOENT: mount not
 * known and fd no directory), 0 on success. */
int file_handle_of_fd(MountTable *t, int fd, FileHandle *ret);
/* Opens the inode a handle names (O_CLOEXEC added).
 * Returns: fd, or <0 (-ESTALE: the inode is gone). */
int file_handle_open(MountTable *t, const FileHandle *fh, int flags);
bool file_handle_equal(const FileHandle *a, const FileHandle *b);

/* ---- fdcache.c ---- */

/* One inode's place in the fd cache (embedded in the Inode). */
typedef struct FdSlot {
    int fd;                     /* O_PATH, or -EBADF */
    unsigned pins;              /* operations using fd now */
    bool opening;               /* a thread is opening fd */
    bool permanent;             /* never evicted (root, or no handle) */
    bool immortal;              /* never freed (root): pins not counted */
    bool doomed;                /* forgotten while pinned: the last unpin frees it */
    struct FdSlot *prev, *next; /* the idle list: fd >= 0, pins == 0 */
} FdSlot;

/* Frees the object a doomed slot is embedded in (called unlocked). */
typedef void (*FdSlotReleaseFn)(FdSlot *s);

typedef struct FdCache {
    pthread_mutex_t lock;
    pthread_cond_t changed;     /* an fd was unpinned, closed or opened */
    size_t cap;                 /* fds the cache and open files may hold together */
    size_t floor;               /* cached fds always allowed (> threads x pins per op) */
    size_t cached;              /* slots holding an fd (or being opened) */
    size_t held;                /* fds of open files and dirs (charged) */
    unsigned waiters;
    FdSlot idle;                /* list head: least recently used first */
    Stats *stats;
    FdSlotReleaseFn release;
    atomic_bool shed_logged;
} FdCache;

void fdcache_init(FdCache *c, size_t cap, size_t floor, Stats *stats, FdSlotReleaseFn release);
void fdcache_done(FdCache *c);
/* The slot's O_PATH fd, opened from fh if not cached, pinned until
 * fdcache_unpin(). Waits while the cache is full of pinned fds; evicts
 * idle ones; never hands out an fd that another thread may close.
 * Returns: fd, or <0 on error (-ESTALE, -EMFILE if nothing can be shed). */
int fdcache_pin(FdCache *c, MountTable *mt, FdSlot *s, const FileHandle *fh);
void fdcache_unpin(FdCache *c, FdSlot *s);
/* Gives the cache an O_PATH fd of the slot's inode (from a lookup). It is
 * kept when the slot has none and room can be made without waiting, and
 * closed otherwise. Takes ownership of fd. */
void fdcache_offer(FdCache *c, FdSlot *s, int fd);
/* The slot's owner is forgotten: closes its fd. An operation may still
 * hold a pin (the kernel may FORGET as soon as it has our reply, before
 * that operation unpinned): then the last unpin calls the release
 * function instead.
 * Returns: true if the caller may free the owner now. */
bool fdcache_forget(FdCache *c, FdSlot *s);
/* An open file or dir took (+n) or gave back (-n) fds: the cache shrinks
 * to keep the sum under the bound. */
void fdcache_charge(FdCache *c, int n);
/* After an open failed with err: if it is EMFILE/ENFILE, closes idle
 * cached fds. errno is preserved.
 * Returns: true if the caller should retry. */
bool fdcache_shed(FdCache *c, int err);

/* Evaluates an fd-returning expression, shedding cached fds and retrying
 * while it fails with EMFILE/ENFILE and something could be shed. */
#define FD_RETRY(c, expr)                                     \
    ({                                                        \
        int _fd_;                                             \
        while ((_fd_ = (expr)) < 0 && fdcache_shed((c), errno)) \
            ;                                                 \
        _fd_;                                                 \
    })

/* ---- inode.c ---- */

typedef struct Inode {
    struct Inode *hnext;          /* hash chain, table lock */
    dev_t dev;
    ino_t ino;
    mode_t type;                  /* S_IFMT bits */
    FileHandle fh;
    uint64_t nlookup;             /* table lock */
    FdSlot slot;                  /* fd cache */
    unsigned opens, writers;      /* cas_lock (ops.c) */
    uint64_t wgen;                /* cas_lock: bumped by opens for writing, truncates */
    atomic_bool dirty;            /* written since the last CAS attempt */
    atomic_uint_fast64_t copyups; /* bumped by each copy-up */
    uint8_t stub;                 /* cas_lock: STUB_UNKNOWN | STUB_NO | STUB_YES */
    bool own_data_bad;            /* cas_lock: its object is missing and its own data is not it */
    bool in_store;                /* below the package store (set when made; never changes) */
    /* FUSE passthrough (libfuse 3.17, not in Debian 12's 3.14): the
     * backing id registered for this inode's open fd, shared by its
     * handles, and how many use it. Unused here; see README "Design". */
    int backing_id;
    unsigned backing_refs;
} Inode;

enum { STUB_UNKNOWN, STUB_NO, STUB_YES };

typedef struct InodeTable {
    pthread_mutex_t lock;
    Inode **buckets;
    size_t n_buckets, n;
    Inode root;
    Stats *stats;
} InodeTable;

/* root_fd: O_PATH of the state dir (the table keeps it). */
int inode_table_init(InodeTable *t, MountTable *mt, int root_fd, Stats *stats);
/* Frees every inode (closing cached fds through c). */
void inode_table_done(InodeTable *t, FdCache *c);
/* The inode of st/fh, added if new (in_store: below the package store),
 * with one more lookup.
 * Returns: <0 on error (-ENOMEM), 0 on success. */
int inode_table_get(InodeTable *t, const struct stat *st, const FileHandle *fh, bool in_store, Inode **ret);
void inode_ref(InodeTable *t, Inode *i);
/* Drops n lookups; at zero the inode is freed (its cached fd closed), or
 * at its last unpin if an operation still holds it pinned. */
void inode_unref(InodeTable *t, FdCache *c, Inode *i, uint64_t n);
/* The fd cache's release function for inodes (FdSlotReleaseFn). */
void inode_release(FdSlot *s);
/* How many handles the inode with this (dev, ino) has open (0 if the
 * table has no such inode). Call with ops.c's cas_lock held. */
unsigned inode_table_opens(InodeTable *t, dev_t dev, ino_t ino);

/* ---- cas.c ---- */

typedef struct CasPool {
    int *objects_fds;   /* O_DIRECTORY fd of <content dir>/objects, per shard */
    int *dir_fds;       /* O_DIRECTORY fd of the content dir, per shard (its trash/) */
    dev_t *devs;        /* each shard's filesystem */
    char **dirs;        /* the content dirs, in shard order */
    size_t n_shards;
    int lock_fd;        /* <dir[0]>/gc.lock: flock()ed shared by publishers */
    pthread_mutex_t lock_mutex;
    unsigned lock_users; /* threads holding the shared lock (lock_mutex) */
    bool no_pool;       /* cas_pool_none(): the daemon runs without a pool */
    unsigned test_copy_delay_ms; /* LAYOUTD_WSFS_TEST_COPY_DELAY_MS: a pause per chunk copied (tests) */
    bool no_sync;       /* --commit=none: objects are not made durable (comparison runs only) */
} CasPool;

/* Asked between the chunks of a copy into the pool. Returns: true to stop. */
typedef bool (*CasCancelFn)(void *userdata);

/* Opens (and creates <dir>/objects in) each content dir, in shard order.
 * dir_fds: O_RDONLY directory fds already opened (and checked) for the
 * dirs, taken over (each set to -EBADF), or NULL to open the paths.
 * Returns: <0 on error (*ret_bad = index of the failing dir), 0 on success. */
int cas_pool_open(CasPool *p, char **dirs, size_t n, int *dir_fds, size_t *ret_bad);
/* No pool (no --content): nothing is published, a stub reads as EIO. */
void cas_pool_none(CasPool *p);
void cas_pool_close(CasPool *p);
/* The shard of a digest: first 4 hex digits as a 16-bit number, mod n. */
size_t cas_shard_of(const char *hex, size_t n_shards);
/* The pool's shared lock (see gc.c): held while publishing, referencing
 * (setting a stub's xattr) and moving stubs (rename, link), so that the
 * sweeper, holding it exclusively, sees a namespace nobody adds to.
 * Reference counted: one flock per process, however many threads. */
void cas_lock_shared(CasPool *p);
void cas_unlock_shared(CasPool *p);
/* Copies src (from offset 0 to EOF) into a new object while hashing it
 * (one pass), and publishes it unless it already exists; an existing
 * object's mtime is freshened (the sweeper's grace period). Call with the
 * shared lock held, and keep it until the reference is made. cancel (may
 * be NULL) is asked between chunks and once more before the object is
 * published; when it says stop, the copy is removed.
 * A new object's data is durable before it gets its name (fdatasync;
 * not with p->no_sync, --commit=none, which promises nothing), so
 * a named object is always whole; making the name durable is the
 * caller's (*ret_dir_fd, the objects/xx dir, fsynced in its batch).
 * *ret_obj_fd is O_RDONLY.
 * Returns: <0 on error (-ECANCELED: stopped; no temporary file is left on
 * any error), 0 stored a new object, 1 object already existed. */
int cas_publish(CasPool *p, FdCache *fdc, int src_fd, CasCancelFn cancel, void *userdata,
                char ret_hex[WSFS_HEX_LEN + 1], int *ret_obj_fd, int *ret_dir_fd, size_t *ret_shard);
/* The SHA-256 of fd's content (from offset 0 to EOF), as lowercase hex.
 * Returns: <0 on error, 0 on success. */
int cas_hash_fd(int fd, char ret_hex[WSFS_HEX_LEN + 1]);
/* Whether an object is in the pool (objects/, or the sweeper's trash).
 * Returns: 1 in objects/, 2 in the trash, 0 in neither, <0 on error. */
int cas_object_state(const CasPool *p, const char *hex);
/* Opens an object read-only; one that sits in the gc trash is put back
 * first (*ret_restored = true).
 * Returns: fd, or <0 (-ENOENT if missing). */
int cas_open_object(CasPool *p, FdCache *fdc, const char *hex, bool *ret_restored);
/* Copies len bytes from in to out, both from offset 0.
 * Returns: <0 on error, 0 on success. */
int cas_copy(int in_fd, int out_fd, uint64_t len);
/* Reads the CAS digest of a backing file (fd may be O_PATH).
 * Returns: 1 (and ret_hex) if it is a stub, 0 if not, <0 on error. */
int cas_stub_digest(int fd, char ret_hex[WSFS_HEX_LEN + 1]);
bool cas_is_hex(const char *s);

/* ---- share.c ---- */

/* An object stored while a walk was counting (it may not have seen it). */
typedef struct ShareStored {
    Digest d;
    uint64_t size;
} ShareStored;

/* This workspace's use of the content pool: the distinct objects its stubs
 * reference and their bytes. Counted by a walk of the state dir at start
 * (in its own thread, while the mount serves), then kept up to date by
 * adding what this daemon stores. What stops referencing an object (an
 * unlink, a rename over a stub, a copy-up) only sets a flag: the hot path
 * does not look at what it removes. When a store would go over the bound
 * and something may have been removed since, the walk counts again. */
typedef struct PoolShare {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    uint64_t limit;           /* bytes; UINT64_MAX: unlimited */
    uint64_t used;            /* bytes of the distinct objects in refs */
    uint64_t reserved;        /* copies in flight, each at its file's size */
    DigestSet refs;
    bool counted;             /* a walk has completed: used is known */
    bool walking, want_walk;
    atomic_bool stop;         /* share_done(): the walker ends, a walk is abandoned */
    ShareStored *since;       /* stored during the walk in progress */
    size_t n_since, cap_since;
    bool since_lost;          /* out of memory for since: that walk's count is not taken */
    usec_t last_walk;         /* CLOCK_MONOTONIC of the last walk's start */
    atomic_bool removed;      /* a reference may have gone since that walk began */
    bool started, go;
    void (*notify)(void *userdata); /* a walk counted, or found objects missing */
    void *userdata;
    /* A stub whole while its object is in the pool (share_on_whole) */
    void (*whole)(void *ctx, int dir_fd, const char *name, const char *hex);
    void *whole_ctx;
    pthread_t thread;
    int root_fd;              /* O_RDONLY of the state dir */
    char *root_path;          /* its path, for messages */
    const CasPool *pool;
    Stats *stats;
} PoolShare;

/* Starts the walker thread (call with every signal blocked: it inherits
 * the mask); it waits for share_start(). No pool: nothing is started, and
 * every reservation fails. state_fd: any fd of the state dir (O_PATH too).
 * Returns: <0 on error, 0 on success. */
int share_init(PoolShare *s, const CasPool *pool, int state_fd, uint64_t limit, Stats *stats);
/* Before share_start(): the walk calls whole(ctx, dir_fd, name, hex) for
 * every stub that still holds its whole data (user.wsfs.whole, fully
 * allocated) while its object is in the pool: a punch that never came. */
void share_on_whole(PoolShare *s, void (*whole)(void *ctx, int dir_fd, const char *name, const char *hex), void *ctx);
/* The first walk begins; notify(userdata) is called (unlocked, from the
 * walker) after each walk, so that the stats file says what it found. */
void share_start(PoolShare *s, void (*notify)(void *userdata), void *userdata);
/* May size more bytes go to the pool? If so they are reserved until
 * share_commit(). Over the bound: false, and a recount is asked for when
 * something may have been removed since the last one. With a bound, false
 * until the first walk has counted. */
bool share_reserve(PoolShare *s, uint64_t size);
/* A reserved copy is over: hex is the object it now references, or NULL
 * (it did not, or failed). */
void share_commit(PoolShare *s, uint64_t size, const char *hex);
/* A reference may have gone (unlink, rename, copy-up): one relaxed store. */
static inline void share_note_removed(PoolShare *s) {
    atomic_store_explicit(&s->removed, true, memory_order_relaxed);
}
/* Stops the walker (an unfinished walk is abandoned) and waits for it.
 * Idempotent. After it nothing of the walker calls back (notify,
 * on_whole), so what those use may be freed. */
void share_stop(PoolShare *s);
/* share_stop(), then frees. */
void share_done(PoolShare *s);

/* ---- identity.c ---- */

/* The identity file a volume carries at its root (written by the agent
 * when it carves it): lines key=value, '#' comments; uuid= at least. */
#define WSFS_IDENTITY_FILE ".layoutd-volume"

typedef struct VolumeIdentity {
    char uuid[64], name[128], role[32]; /* "" when absent */
} VolumeIdentity;

/* When LAYOUTD_CONTENT_UUIDS is set: each of the n --content dirs must
 * carry an identity file with its uuid (in shard order). ret_fds[n]: the
 * dirs as opened and checked, for cas_pool_open() (all -EBADF when the
 * variable is unset).
 * Returns: 0 on success, <0 with a one-line reason in why. */
int identity_check_content(char **dirs, size_t n, int *ret_fds, char *why, size_t why_size);
/* When LAYOUTD_STATE_VOLUME and LAYOUTD_STATE_VOLUME_UUID are set: that
 * dir's identity file has that uuid, and the --state dir is below it
 * (resolved paths) on the same filesystem. *ret_st: the state dir as
 * checked (unset when the variables are), for the caller to compare with
 * what it opens.
 * Returns: 0 on success, <0 with a one-line reason in why. */
int identity_check_state(const char *state, struct stat *ret_st, char *why, size_t why_size);

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
 * inode (directories, and CAS stubs whose xattr must reach the disk).
 * Named by handle: a batch holds no fds. */
typedef struct CommitItem {
    FileHandle fh;
    bool full;  /* fsync instead of fdatasync */
} CommitItem;

/* A CAS stub whose local data may be released once its object is durable. */
typedef struct CasPunch {
    FileHandle fh;
    dev_t dev;
    ino_t ino;
    char hex[WSFS_HEX_LEN + 1];
} CasPunch;

/* durable: the punch's batch was committed (its object and the stub's
 * xattrs are durable); false: the batch failed, the punch must wait. */
typedef void (*CommitPunchFn)(void *userdata, const CasPunch *p, bool durable);

typedef struct Committer Committer;

typedef struct CommitterConfig {
    CommitMode mode;
    size_t batch_records;
    usec_t batch_usec;
    int state_fd;              /* O_RDONLY dir on the state filesystem */
    const CasPool *pool;
    MountTable *mounts;
    FdCache *fdc;
    Stats *stats;
    const char *stats_path;    /* NULL: no stats file */
    CommitPunchFn punch;
    void (*batch_done)(void *userdata); /* after each batch and its punches, or NULL */
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
/* Asks for a stats file write now (e.g. on SIGUSR1). */
void committer_write_stats(Committer *c);
/* Asks for a stats file write within the usual interval (~100 ms); never
 * waits (may be called with cas_lock held). */
void committer_stats_changed(Committer *c);
/* Commits what is pending, stops and frees the committer. */
void committer_stop(Committer *c);

/* ---- ops.c and stub.c ---- */

typedef struct FsConfig {
    int root_fd;             /* O_PATH fd of the state dir (the Fs keeps it) */
    CasPool *pool;
    uint64_t cas_threshold;  /* 0 = no CAS */
    CommitMode mode;
    Stats *stats;
    size_t fd_cache;         /* the fd bound (cache + open files) */
    unsigned threads;        /* FUSE worker threads (sizes the cache's floor) */
    bool writeback;          /* FUSE_CAP_WRITEBACK_CACHE */
    bool splice;             /* splice reads and writes */
    bool xattrs;             /* extended attributes through the mount */
    double timeout;          /* attribute and entry timeout, s */
    /* Fewer FUSE requests per file (README, "Choices, measured"); each can
     * be turned off for the ablation. */
    bool negative_entries;   /* a failed LOOKUP is a cached negative entry */
    bool flush;              /* answer FLUSH (off: ENOSYS once, the kernel stops) */
    bool cache_symlinks;     /* FUSE_CAP_CACHE_SYMLINKS */
    bool parallel_dirops;    /* FUSE_CAP_PARALLEL_DIROPS */
    bool keep_cache;         /* open files keep the kernel's pages */
    bool cache_dirs;         /* directory listings cached by the kernel, kept across opens */
    int readdirplus;         /* 0 off, 1 always, 2 auto */
    uint64_t pool_share;     /* --pool-share, bytes; UINT64_MAX: unlimited */
    int store_fd;            /* O_PATH fd of the package store (--store; the Fs keeps it), or -EBADF */
} FsConfig;

typedef struct Fs {
    FsConfig cfg;
    MountTable mounts;
    FdCache fdc;
    InodeTable inodes;
    struct Handle *handles;  /* open at unmount: the kernel drops pending RELEASEs */
    struct DirHandle *dirs;  /* the same for RELEASEDIRs (ops.c), dirs_lock */
    pthread_mutex_t dirs_lock;
    pthread_mutex_t cas_lock;
    Committer *committer;
    uid_t euid;
    PoolShare share;
    /* stub.c: punches not done when their batch ended (open handles, a
     * failed batch, a stub found whole at start), retried; cas_lock */
    struct PunchLater *later;
    size_t n_later, cap_later;
    struct fuse_session *se; /* a copy into the pool stops when it has exited */
    /* stub.c: CAS failures are logged once per interval, not per file */
    pthread_mutex_t log_lock;
    usec_t cas_log_next;
    uint64_t cas_log_suppressed;
} Fs;

/* An open file: the backing file's fd, and the object serving reads. */
typedef struct Handle {
    struct Handle *prev, *next;    /* Fs.handles, cas_lock */
    int fd;                        /* the backing file */
    int obj_fd;                    /* the CAS object serving reads, or -EBADF */
    uint64_t copyups;              /* Inode.copyups when obj_fd was opened */
    bool writable;
    atomic_uint_fast64_t recorded; /* the batch this handle's writes last joined */
} Handle;

/* Starts the pool-share walker too: call with every signal blocked. */
int fs_new(const FsConfig *cfg, Fs **ret);
void fs_set_committer(Fs *fs, Committer *c);
void fs_set_session(Fs *fs, struct fuse_session *se);
/* The punch callback handed to the committer (userdata = Fs*): punches a
 * stub whose object is durable, or keeps the punch for later (open
 * handles, a failed batch). */
void fs_punch(void *userdata, const CasPunch *p, bool durable);
/* The committer's batch_done (userdata = Fs*): the punches kept for later
 * are tried again (stub_punch_later_retry). */
void fs_batch_done(void *userdata);
/* Stops the background walker, which calls into the committer (its stats,
 * the punches it finds due): call before committer_stop() frees that. */
void fs_stop_walker(Fs *fs);
void fs_free(Fs *fs);
extern const struct fuse_lowlevel_ops fs_ops;

/* stub.c, for ops.c. cas_lock held for the first three. */
int stub_copy_up(Fs *fs, Inode *i, int path_fd, const char *hex, uint64_t new_size);
int stub_truncate(Fs *fs, Inode *i, int path_fd, uint64_t size);
/* Opens the object of a stub for reading (restoring it from the trash).
 * When the object is missing, the stub's own data is used only if it
 * carries user.wsfs.whole and hashes to the digest (a crash before the
 * object became durable): the stub then becomes an ordinary file.
 * Otherwise the answer is EIO and the reference stays, counted and
 * logged once per object. cas_lock held.
 * Returns: fd, -ENOENT (no longer a stub: use the file), or another -errno
 * (-EIO: the object is missing). */
int stub_open_object(Fs *fs, Inode *i, int path_fd, const char *hex);
/* Makes a released, written file a stub if it is large enough. Runs with
 * no lock held (copying takes a while); gives up if a writer came. */
void stub_store(Fs *fs, Inode *i, uint64_t wgen);
/* Logs a failed pool operation, at most once per interval. */
void stub_log_cas_failure(Fs *fs, const char *what, int r);
/* Tries again the punches kept for later: each stub's object is opened
 * (restored from the trash if need be) and made durable with the stub's
 * xattrs, then the stub is punched if nothing holds it open. One that is
 * still held stays; one whose object is gone or that is no longer a
 * stub of it is dropped (it keeps its own data). only: the inode whose
 * last handle closed, or NULL for all. Never with cas_lock held. */
void stub_punch_later_retry(Fs *fs, const struct stat *only);
/* A stub found whole (user.wsfs.whole) while it names an object, at
 * dir_fd/name (by a pool-share walk: at start and at each recount):
 * punched as a kept punch is. Never with cas_lock held. */
void stub_punch_found_whole(Fs *fs, int dir_fd, const char *name, const char *hex);

/* ---- gc.c, fsck.c ---- */

/* `layoutd-wsfs gc ...`: argv[0] is "gc". Returns: the exit status. */
int gc_main(int argc, char **argv);
/* `layoutd-wsfs fsck ...`: argv[0] is "fsck". Returns: the exit status. */
int fsck_main(int argc, char **argv);
