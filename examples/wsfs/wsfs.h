/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * layoutd-wsfs: the reference workspace FUSE daemon. One header for the
 * parts of a small program, each in its own file, each only looking down:
 *   stats.c    counters (per FUSE opcode too), written as JSON
 *   handle.c   file handles (name_to_handle_at) and the mounts they need
 *   fdcache.c  the bounded LRU cache of O_PATH fds, and the fd budget
 *   inode.c    the inode table: FUSE node ids <-> backing inodes
 *   cas.c      the sharded content-addressed pool (SHA-256 objects)
 *   commit.c   group commit: records join a batch, a committer thread
 *              makes each batch durable (syncfs | fdatasync | none)
 *   stub.c     CAS transitions of a file: store, punch, copy-up
 *   ops.c      the FUSE low-level operations over the state directory
 *   gc.c       `layoutd-wsfs gc`: the content pool's sweeper
 * main.c parses the command line and runs the session (or gc).
 */

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"

#define WSFS_XATTR_CAS "user.wsfs.cas"
#define WSFS_XATTR_PREFIX "user.wsfs." /* our namespace: hidden from the mount */
#define WSFS_HEX_LEN 64                /* SHA-256 as lowercase hex */

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
    atomic_uint_fast64_t copy_ups;             /* CAS files copied back for writing */
    atomic_uint_fast64_t cas_errors;
    atomic_uint_fast64_t inodes;               /* inodes the kernel holds now */
    atomic_uint_fast64_t fd_cache_hits, fd_cache_misses, fd_cache_evictions, fd_cache_waits;
    atomic_uint_fast64_t fd_sheds;             /* EMFILE/ENFILE answered by closing cached fds */
    atomic_uint_fast64_t fds_cached;           /* O_PATH fds in the cache now */
    atomic_uint_fast64_t fds_handles;          /* fds held for open files and dirs now */
} Stats;

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
/* The inode of st/fh, added if new, with one more lookup.
 * Returns: <0 on error (-ENOMEM), 0 on success. */
int inode_table_get(InodeTable *t, const struct stat *st, const FileHandle *fh, Inode **ret);
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
} CasPool;

/* Opens (and creates <dir>/objects in) each content dir, in shard order.
 * Returns: <0 on error (*ret_bad = index of the failing dir), 0 on success. */
int cas_pool_open(CasPool *p, char **dirs, size_t n, size_t *ret_bad);
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
 * shared lock held, and keep it until the reference is made.
 * *ret_obj_fd (O_RDONLY) and *ret_dir_fd (the objects/xx dir) are for the
 * caller's durability bookkeeping.
 * Returns: <0 on error, 0 stored a new object, 1 object already existed. */
int cas_publish(CasPool *p, FdCache *fdc, int src_fd, char ret_hex[WSFS_HEX_LEN + 1],
                int *ret_obj_fd, int *ret_dir_fd, size_t *ret_shard);
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

typedef void (*CommitPunchFn)(void *userdata, const CasPunch *p);

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
} FsConfig;

typedef struct Fs {
    FsConfig cfg;
    MountTable mounts;
    FdCache fdc;
    InodeTable inodes;
    struct Handle *handles;  /* open at unmount: the kernel drops pending RELEASEs */
    pthread_mutex_t cas_lock;
    Committer *committer;
    uid_t euid;
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

int fs_new(const FsConfig *cfg, Fs **ret);
void fs_set_committer(Fs *fs, Committer *c);
/* The punch callback handed to the committer (userdata = Fs*). */
void fs_punch(void *userdata, const CasPunch *p);
void fs_free(Fs *fs);
extern const struct fuse_lowlevel_ops fs_ops;

/* stub.c, for ops.c. cas_lock held for the first three. */
int stub_copy_up(Fs *fs, Inode *i, int path_fd, const char *hex, uint64_t new_size);
int stub_truncate(Fs *fs, Inode *i, int path_fd, uint64_t size);
/* Opens the object of a stub for reading (restoring it from the trash, or
 * dropping a reference whose object never became durable when the stub
 * still holds its data). Returns: fd, -ENOENT (no longer a stub: use the
 * file), or another -errno. */
int stub_open_object(Fs *fs, int path_fd, const char *hex);
/* Makes a released, written file a stub if it is large enough. Runs with
 * no lock held (copying takes a while); gives up if a writer came. */
void stub_store(Fs *fs, Inode *i, uint64_t wgen);
/* Logs a failed pool operation, at most once per interval. */
void stub_log_cas_failure(Fs *fs, const char *what, int r);

/* ---- gc.c ---- */

/* `layoutd-wsfs gc ...`: argv[0] is "gc". Returns: the exit status. */
int gc_main(int argc, char **argv);
