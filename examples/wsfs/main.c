/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutd-wsfs: the reference workspace FUSE daemon (see README.md).
 *
 *   layoutd-wsfs [options] --state DIR [--content DIR[,DIR...]] MOUNTPOINT
 *   layoutd-wsfs gc --content DIR[,DIR...] --state-root DIR... [options]
 *
 * It never daemonizes: a supervisor runs it, and its pid is the process
 * that serves the mount. SIGTERM/SIGINT unmount cleanly; SIGUSR1 prints
 * the counters to stderr and writes the --stats-file.
 */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "wsfs.h"
#include "uring.h"

#define EXIT_USAGE 2

typedef struct Args {
    const char *state, *stats_file, *mountpoint;
    const char *store;             /* --store, or LAYOUTD_STORE_DIR; NULL: none */
    char **content;
    size_t n_content;
    CommitMode mode;
    uint64_t batch_records, batch_ms, threads, cas_threshold, fd_cache, pool_share;
    char *fuse_opts; /* comma-joined -o values, may be NULL */
    bool debug;
    const char *profile;
    int writeback, splice, xattrs; /* -1: the profile's */
    int negative, flush, cache_symlinks, parallel_dirops, keep_cache, cache_dirs, readdirplus; /* -1: profile's */
    int clone_fd;                  /* -1: the profile's */
    int io_uring;                  /* FUSE over io_uring: 0 off (default), 1 on */
    double timeout;                /* <0: the profile's */
} Args;

static atomic_bool stopping;

static void args_done(Args *a) {
    cli_free_list(a->content, a->n_content);
    a->content = NULL;
    a->n_content = 0;
    a->fuse_opts = mfree(a->fuse_opts);
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: layoutd-wsfs [options] --state DIR [--content DIR[,DIR...]] MOUNTPOINT\n"
            "  --state DIR              the workspace's state directory (served as the root)\n"
            "  --content DIR[,DIR...]   content pool dirs, in shard order (none: no pool, files stay whole)\n"
            "  --commit=MODE            syncfs (default) | fdatasync | none\n"
            "  --batch-records=N        close a batch at N records (default 512)\n"
            "  --batch-ms=N             ... or N ms after its first record (default 50)\n"
            "  --threads=N|auto         FUSE worker threads (default auto: one per CPU, at least 2;\n"
            "                           1: the single-threaded loop)\n"
            "  --clone-fd=on|off        one /dev/fuse fd per worker thread (default off; needs --threads > 1)\n"
            "  --io-uring=on|off        FUSE requests over per-CPU io_uring queues where the kernel allows it\n"
            "                           (fuse's enable_uring parameter); else /dev/fuse as usual (default off)\n"
            "  --fd-cache=N             fds held for files at most: cached + open (default 1024)\n"
            "  --profile=NAME           default | published (1 thread, no writeback cache, no splice,\n"
            "                           1 s timeouts: the published engine, for benchmarks)\n"
            "  --writeback-cache=on|off the kernel's writeback cache (default on)\n"
            "  --splice=on|off          splice reads and writes (default off)\n"
            "  --timeout=SEC            attribute and entry timeout (default 86400)\n"
            "  --xattrs                 pass extended attributes through (default: EOPNOTSUPP)\n"
            "  --negative-entries=on|off  cache a failed lookup for the timeout (default on)\n"
            "  --flush=on|off           answer FLUSH (default off: ENOSYS, the kernel stops sending it)\n"
            "  --cache-symlinks=on|off  the kernel caches symlink targets (default on)\n"
            "  --parallel-dirops=on|off lookups and readdirs of one dir in parallel (default on)\n"
            "  --keep-cache=on|off      opens keep the kernel's cached pages (default on)\n"
            "  --cache-dirs=on|off      the kernel keeps directory listings across opens (default on)\n"
            "  --readdirplus=auto|always|off  READDIRPLUS (default auto)\n"
            "  --cas-threshold=BYTES    files this large move to the pool (default 64KiB, 0 = off)\n"
            "  --pool-share=BYTES|unlimited  bytes of pool objects this workspace may reference\n"
            "                           (default unlimited; beyond it files stay in the state dir)\n"
            "  --stats-file=PATH        counters as JSON, after batches and on SIGUSR1\n"
            "  --store=DIR|off          a package store shared with the tenant's other workspaces, shown\n"
            "                           as MOUNTPOINT/" WSFS_STORE_NAME " (made if missing; default: LAYOUTD_STORE_DIR, else off)\n"
            "  --foreground, -f         accepted; it never daemonizes anyway\n"
            "  -o OPT[,OPT...]          FUSE mount options (default_permissions; allow_other as root)\n"
            "  -d                       FUSE debug output\n"
            "environment:\n"
            "  LAYOUTD_SHARDS=N              number of content shards (= number of content dirs)\n"
            "  LAYOUTD_CONTENT_UUIDS=U[,U]   the content volumes' uuids, in --content order\n"
            "  LAYOUTD_STATE_VOLUME=DIR      the state volume's root (--state must be below it)\n"
            "  LAYOUTD_STATE_VOLUME_UUID=U   its uuid (each volume's DIR/.layoutd-volume must match)\n"
            "  LAYOUTD_STORE_DIR=DIR         the package store, when --store is not given\n"
            "\n"
            "       layoutd-wsfs gc --help     the content pool's sweeper\n"
            "       layoutd-wsfs fsck --help   every stub without its object\n");
}

static int append_opt(char **opts, const char *o) {
    char *n;
    if (asprintf(&n, "%s%s%s", *opts ?: "", *opts ? "," : "", o) < 0)
        return -ENOMEM;
    free(*opts);
    *opts = n;
    return 0;
}

#define BAD(...) ({ fprintf(stderr, "layoutd-wsfs: " __VA_ARGS__); fputc('\n', stderr); EXIT_USAGE; })

static int parse_bool(const char *s) {
    if (streq(s, "on") || streq(s, "yes") || streq(s, "1") || streq(s, "true"))
        return 1;
    if (streq(s, "off") || streq(s, "no") || streq(s, "0") || streq(s, "false"))
        return 0;
    return -EINVAL;
}

static int parse_args(int argc, char **argv, Args *a) {
    enum { O_STATE = 256, O_CONTENT, O_COMMIT, O_BREC, O_BMS, O_THREADS, O_CAS, O_STATS, O_FG, O_HELP,
           O_FDCACHE, O_PROFILE, O_WB, O_SPLICE, O_TIMEOUT, O_XATTRS, O_SHARE, O_NEG, O_FLUSH, O_CSYM, O_PDIR,
           O_KEEP, O_CDIR, O_RDP, O_CLONEFD, O_URING, O_STORE };
    static const struct option opts[] = {
        { "state", required_argument, NULL, O_STATE },
        { "content", required_argument, NULL, O_CONTENT },
        { "commit", required_argument, NULL, O_COMMIT },
        { "batch-records", required_argument, NULL, O_BREC },
        { "batch-ms", required_argument, NULL, O_BMS },
        { "threads", required_argument, NULL, O_THREADS },
        { "cas-threshold", required_argument, NULL, O_CAS },
        { "stats-file", required_argument, NULL, O_STATS },
        { "foreground", no_argument, NULL, O_FG },
        { "fd-cache", required_argument, NULL, O_FDCACHE },
        { "profile", required_argument, NULL, O_PROFILE },
        { "writeback-cache", required_argument, NULL, O_WB },
        { "splice", required_argument, NULL, O_SPLICE },
        { "timeout", required_argument, NULL, O_TIMEOUT },
        { "xattrs", no_argument, NULL, O_XATTRS },
        { "pool-share", required_argument, NULL, O_SHARE },
        { "negative-entries", required_argument, NULL, O_NEG },
        { "flush", required_argument, NULL, O_FLUSH },
        { "cache-symlinks", required_argument, NULL, O_CSYM },
        { "parallel-dirops", required_argument, NULL, O_PDIR },
        { "keep-cache", required_argument, NULL, O_KEEP },
        { "cache-dirs", required_argument, NULL, O_CDIR },
        { "readdirplus", required_argument, NULL, O_RDP },
        { "clone-fd", required_argument, NULL, O_CLONEFD },
        { "io-uring", required_argument, NULL, O_URING },
        { "store", required_argument, NULL, O_STORE },
        { "help", no_argument, NULL, O_HELP },
        {},
    };
    int c;

    *a = (Args) { .mode = COMMIT_SYNCFS, .batch_records = 512, .batch_ms = 50, .threads = 0,
                  .cas_threshold = 64 * KIB, .fd_cache = 1024, .profile = "default",
                  .writeback = -1, .splice = -1, .xattrs = 0, .timeout = -1, .pool_share = UINT64_MAX,
                  .negative = -1, .flush = -1, .cache_symlinks = -1, .parallel_dirops = -1, .keep_cache = -1,
                  .cache_dirs = -1, .readdirplus = -1, .clone_fd = -1 };
    while ((c = getopt_long(argc, argv, "fdo:h", opts, NULL)) >= 0) {
        switch (c) {
        case O_STATE:
            a->state = optarg;
            break;
        case O_CONTENT:
            if (cli_split_list(&a->content, &a->n_content, optarg) < 0)
                return BAD("out of memory");
            break;
        case O_COMMIT:
            if ((a->mode = commit_mode_from_string(optarg)) < 0)
                return BAD("--commit: '%s' is not one of syncfs, fdatasync, none", optarg);
            break;
        case O_BREC:
            if (cli_parse_size(optarg, false, &a->batch_records) < 0 || a->batch_records < 1 || a->batch_records > 1000000)
                return BAD("--batch-records: '%s' is not a number in 1..1000000", optarg);
            break;
        case O_BMS:
            if (cli_parse_size(optarg, false, &a->batch_ms) < 0 || a->batch_ms > 3600 * 1000)
                return BAD("--batch-ms: '%s' is not a number of milliseconds (0..3600000)", optarg);
            break;
        case O_THREADS:
            if (streq(optarg, "auto"))
                a->threads = 0;
            else if (cli_parse_size(optarg, false, &a->threads) < 0 || a->threads < 1 || a->threads > 1024)
                return BAD("--threads: '%s' is not a number in 1..1024 or auto", optarg);
            break;
        case O_FDCACHE:
            if (cli_parse_size(optarg, false, &a->fd_cache) < 0 || a->fd_cache < 16 || a->fd_cache > 1000000)
                return BAD("--fd-cache: '%s' is not a number in 16..1000000", optarg);
            break;
        case O_PROFILE:
            if (!streq(optarg, "default") && !streq(optarg, "published"))
                return BAD("--profile: '%s' is not one of default, published", optarg);
            a->profile = optarg;
            break;
        case O_WB:
            if ((a->writeback = parse_bool(optarg)) < 0)
                return BAD("--writeback-cache: '%s' is not on or off", optarg);
            break;
        case O_SPLICE:
            if ((a->splice = parse_bool(optarg)) < 0)
                return BAD("--splice: '%s' is not on or off", optarg);
            break;
        case O_TIMEOUT: {
            char *end;
            errno = 0;
            a->timeout = strtod(optarg, &end);
            if (errno || end == optarg || *end || a->timeout < 0 || a->timeout > 1e7)
                return BAD("--timeout: '%s' is not a number of seconds (0..10000000)", optarg);
            break;
        }
        case O_XATTRS:
            a->xattrs = 1;
            break;
        case O_URING:
            if ((a->io_uring = parse_bool(optarg)) < 0)
                return BAD("--io-uring: '%s' is not on or off", optarg);
            break;
        case O_NEG:
        case O_FLUSH:
        case O_CSYM:
        case O_PDIR:
        case O_KEEP:
        case O_CDIR:
        case O_CLONEFD: {
            int *v = c == O_NEG ? &a->negative : c == O_FLUSH ? &a->flush : c == O_CSYM ? &a->cache_symlinks
                     : c == O_PDIR ? &a->parallel_dirops : c == O_KEEP ? &a->keep_cache
                     : c == O_CDIR ? &a->cache_dirs : &a->clone_fd;
            const char *name = c == O_NEG ? "negative-entries" : c == O_FLUSH ? "flush" : c == O_CSYM ? "cache-symlinks"
                               : c == O_PDIR ? "parallel-dirops" : c == O_KEEP ? "keep-cache"
                               : c == O_CDIR ? "cache-dirs" : "clone-fd";
            if ((*v = parse_bool(optarg)) < 0)
                return BAD("--%s: '%s' is not on or off", name, optarg);
            break;
        }
        case O_RDP:
            if (streq(optarg, "off"))
                a->readdirplus = 0;
            else if (streq(optarg, "always"))
                a->readdirplus = 1;
            else if (streq(optarg, "auto"))
                a->readdirplus = 2;
            else
                return BAD("--readdirplus: '%s' is not one of auto, always, off", optarg);
            break;
        case O_SHARE:
            if (streq(optarg, "unlimited"))
                a->pool_share = UINT64_MAX;
            else if (cli_parse_size(optarg, true, &a->pool_share) < 0 || a->pool_share == UINT64_MAX)
                return BAD("--pool-share: '%s' is not a size in bytes or unlimited", optarg);
            break;
        case O_CAS:
            if (cli_parse_size(optarg, true, &a->cas_threshold) < 0)
                return BAD("--cas-threshold: '%s' is not a size in bytes", optarg);
            break;
        case O_STATS:
            a->stats_file = optarg;
            break;
        case O_STORE:
            if (isempty(optarg))
                return BAD("--store: a directory or off");
            a->store = optarg;
            break;
        case 'o':
            if (append_opt(&a->fuse_opts, optarg) < 0)
                return BAD("out of memory");
            break;
        case 'd':
            a->debug = true;
            break;
        case 'f':
        case O_FG:
            break;
        case 'h':
        case O_HELP:
            usage(stdout);
            exit(EXIT_SUCCESS);
        default:
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (!a->state)
        return BAD("--state DIR is required");
    if (!a->store)
        a->store = isempty(getenv("LAYOUTD_STORE_DIR")) ? NULL : getenv("LAYOUTD_STORE_DIR");
    if (a->store && streq(a->store, "off"))
        a->store = NULL;
    /* No --content: a layout without a content pool. Files stay whole in
     * the state dir (no CAS); a stub left from a pool reads as EIO. */
    if (a->n_content == 0)
        a->cas_threshold = 0;
    if (optind != argc - 1)
        return BAD("%s", optind >= argc ? "MOUNTPOINT is required" : "exactly one MOUNTPOINT expected");
    a->mountpoint = argv[optind];

    /* Profiles give the defaults; explicit options win. "published" is the
     * engine as it was published: one thread, no writeback cache. */
    bool published = streq(a->profile, "published");
    if (a->threads == 0) {
        long n = published ? 1 : sysconf(_SC_NPROCESSORS_ONLN);
        a->threads = published ? 1 : (uint64_t) CLAMP(n, 2L, 16L);
    }
    if (a->writeback < 0)
        a->writeback = !published;
    if (a->splice < 0)
        a->splice = 0;
    if (a->timeout < 0)
        a->timeout = published ? 1.0 : 86400.0;
    /* The request cuts: what the published engine did (every failed
     * lookup asked again, FLUSH answered, symlinks read each time, pages
     * dropped at each open), and the kernel's defaults for the rest. */
    if (a->negative < 0)
        a->negative = !published;
    if (a->flush < 0)
        a->flush = published;
    if (a->cache_symlinks < 0)
        a->cache_symlinks = !published;
    if (a->keep_cache < 0)
        a->keep_cache = !published;
    if (a->cache_dirs < 0)
        a->cache_dirs = !published;
    if (a->parallel_dirops < 0)
        a->parallel_dirops = 1;
    if (a->readdirplus < 0)
        a->readdirplus = 2;
    /* One fd per thread lets each thread's reads of /dev/fuse wait on
     * their own queue instead of all of them on one; measured in
     * examples/wsfs/README.md ("Choices, measured") before any default
     * changes. The single-threaded loop has one fd anyway. */
    if (a->clone_fd < 0)
        a->clone_fd = 0;
    if (a->clone_fd && a->threads == 1)
        return BAD("--clone-fd=on needs more than one thread (--threads)");

    /* The agent says where it reads the counters (it cannot add options to
     * the layout's command); an explicit --stats-file wins. */
    const char *sf = getenv("LAYOUTD_STATS_FILE");
    if (!a->stats_file && !isempty(sf)) {
        if (sf[0] != '/')
            return BAD("LAYOUTD_STATS_FILE=%s: must be an absolute path", sf);
        a->stats_file = sf;
    }

    const char *e = getenv("LAYOUTD_SHARDS");
    uint64_t shards;
    if (!isempty(e) && (cli_parse_size(e, false, &shards) < 0 || shards != a->n_content))
        return BAD("LAYOUTD_SHARDS=%s does not match the %zu content dir(s) given with --content", e, a->n_content);
    return 0;
}

/* The state dir must take user xattrs: CAS stubs live on them. Probed by
 * reading one (ENODATA: supported), so that a full or read-only state
 * volume can still be served (and emptied). */
static int check_state_dir(const char *path, int *ret_path_fd, int *ret_sync_fd) {
    char v;
    _cleanup_close_ int pfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    _cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0 || dfd < 0)
        return BAD("--state %s: %m", path);
    if (faccessat(dfd, ".", W_OK | X_OK, AT_EACCESS) < 0) {
        if (errno != EROFS)
            return BAD("--state %s: not writable: %m", path);
        fprintf(stderr, "layoutd-wsfs: --state %s is on a read-only filesystem: serving it anyway\n", path);
    }
    if (fgetxattr(dfd, "user.wsfs.probe", &v, sizeof(v)) < 0 && errno != ENODATA && errno != ERANGE)
        return BAD("--state %s: the filesystem does not take user xattrs (%m); CAS stubs need them", path);
    *ret_path_fd = TAKE_FD(pfd);
    *ret_sync_fd = TAKE_FD(dfd);
    return 0;
}

/* The package store: made if missing, with the state dir's owner and
 * mode, so whoever may write the workspace may write the store (and its
 * parent too, root's, 0755: the agent names <volume>/stores/<tenant>;
 * the grandparent must exist). It must be on the state dir's filesystem (the clones
 * share extents, and its writes join the same flush), and neither dir may
 * hold the other (an inode would be both a store and a workspace file).
 * Returns: 0 (*ret_fd: O_PATH), or the exit status after a message. */
static int open_store(const char *path, const char *state, int state_fd, int *ret_fd) {
    struct stat sst, st;
    if (fstat(state_fd, &sst) < 0)
        return BAD("--state %s: %m", state);
    _cleanup_free_ char *parent = strdup(path);
    if (!parent)
        return BAD("out of memory");
    char *slash = strrchr(parent, '/');
    if (slash && slash != parent) {
        *slash = 0;
        if (mkdir(parent, 0755) < 0 && errno != EEXIST)
            return BAD("--store %s: cannot make %s: %m", path, parent);
    }
    if (mkdir(path, sst.st_mode & 07777) == 0) {
        if (chown(path, sst.st_uid, sst.st_gid) < 0 || chmod(path, sst.st_mode & 07777) < 0) {
            int err = errno;
            (void) rmdir(path);
            return BAD("--store %s: cannot give it the state dir's owner and mode: %s", path, strerror(err));
        }
    } else if (errno != EEXIST)
        return BAD("--store %s: cannot make it: %m", path);
    _cleanup_close_ int fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0)
        return BAD("--store %s: %m", path);
    if (st.st_dev != sst.st_dev)
        return BAD("--store %s: not on the filesystem of --state %s; a store elsewhere saves nothing", path, state);
    _cleanup_free_ char *rs = realpath(path, NULL), *rt = realpath(state, NULL);
    if (!rs || !rt)
        return BAD("--store %s: cannot resolve it or the state dir: %m", path);
    size_t ls = strlen(rs), lt = strlen(rt);
    if ((strncmp(rs, rt, lt) == 0 && (rs[lt] == '/' || rs[lt] == 0 || lt == 1)) ||
        (strncmp(rt, rs, ls) == 0 && (rt[ls] == '/' || rt[ls] == 0 || ls == 1)))
        return BAD("--store %s and --state %s: one holds the other; they must be apart", path, state);
    *ret_fd = TAKE_FD(fd);
    return 0;
}

typedef struct SigCtx {
    Stats *stats;
    Committer *committer;
    const char *mode;
    const CasPool *pool;
} SigCtx;

/* How often objects counted missing are looked for again. */
#define MISSING_RECHECK_SEC 10

static int pool_object_state(void *userdata, const char *hex) {
    return cas_object_state(userdata, hex);
}

/* SIGUSR1: the stats to stderr and the stats file. Between signals, every
 * MISSING_RECHECK_SEC while objects are counted missing: those put back
 * in the pool are counted no more, and the stats file says so (the agent's
 * health follows it). */
static void *sigusr1_thread(void *arg) {
    SigCtx *s = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    for (;;) {
        const struct timespec t = { .tv_sec = MISSING_RECHECK_SEC };
        int sig = sigtimedwait(&set, NULL, &t);
        if (atomic_load(&stopping))
            return NULL;
        if (sig < 0) {
            if (errno != EAGAIN && errno != EINTR)
                return NULL;
            if (atomic_load(&s->stats->objects_missing) == 0)
                continue;
            size_t back = stats_recheck_missing(s->stats, pool_object_state, (void *) s->pool);
            if (back > 0) {
                fprintf(stderr, "layoutd-wsfs: %zu missing object(s) are back in the content pool (%" PRIu64
                        " still missing)\n", back, (uint64_t) atomic_load(&s->stats->objects_missing));
                committer_write_stats(s->committer);
            }
            continue;
        }
        (void) stats_recheck_missing(s->stats, pool_object_state, (void *) s->pool);
        char buf[8192];
        stats_format(s->stats, s->mode, buf, sizeof(buf));
        fprintf(stderr, "layoutd-wsfs: stats %s\n", buf);
        committer_write_stats(s->committer);
    }
}

int main(int argc, char **argv) {
    _cleanup_(args_done) Args a = {};
    Stats stats;
    CasPool pool = {};
    Fs *fs = NULL;
    Committer *committer = NULL;
    int root_fd = -EBADF, sync_fd = -EBADF, r, ret = EXIT_FAILURE;
    size_t bad;
    struct stat st;

    if (argc > 1 && streq(argv[1], "gc"))
        return gc_main(argc - 1, argv + 1);
    if (argc > 1 && streq(argv[1], "fsck"))
        return fsck_main(argc - 1, argv + 1);
    r = parse_args(argc, argv, &a);
    if (r != 0)
        return r;
    /* Before anything is created or mounted: the volumes are the ones the
     * agent named (identity.c). A bare mount point dir is refused. */
    char why[1024];
    struct stat checked = {};
    _cleanup_free_ int *content_fds = calloc(MAX(a.n_content, (size_t) 1), sizeof(int));
    if (!content_fds)
        return BAD("out of memory");
    if (identity_check_state(a.state, &checked, why, sizeof(why)) < 0 ||
        identity_check_content(a.content, a.n_content, content_fds, why, sizeof(why)) < 0)
        return BAD("%s", why);
    r = check_state_dir(a.state, &root_fd, &sync_fd);
    if (r != 0)
        return r;
    if (checked.st_ino != 0 && (fstat(sync_fd, &st) < 0 || st.st_dev != checked.st_dev || st.st_ino != checked.st_ino))
        return BAD("--state %s: changed while it was being checked", a.state);
    if (a.n_content == 0)
        cas_pool_none(&pool);
    else if ((r = cas_pool_open(&pool, a.content, a.n_content, content_fds, &bad)) < 0)
        return BAD("--content %s: unusable as a content dir: %s", a.content[bad], strerror(-r));
    pool.no_sync = a.mode == COMMIT_NONE;
    int store_fd = -EBADF;
    if (a.store && (r = open_store(a.store, a.state, sync_fd, &store_fd)) != 0)
        return r;
    if (stat(a.mountpoint, &st) < 0)
        return BAD("MOUNTPOINT %s: %m", a.mountpoint);
    if (!S_ISDIR(st.st_mode))
        return BAD("MOUNTPOINT %s: not a directory", a.mountpoint);

    /* The kernel already applied the caller's umask. */
    umask(0);
    /* As passthrough_hp and virtiofsd do: the soft limit up to the hard
     * one. The fd cache is bounded anyway; the rest is for applications'
     * open files. A bound above the limit is lowered to fit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && a.fd_cache + 64 > rl.rlim_cur) {
        uint64_t fit = rl.rlim_cur > 128 ? rl.rlim_cur - 64 : 64;
        fprintf(stderr, "layoutd-wsfs: --fd-cache=%" PRIu64 " does not fit RLIMIT_NOFILE %" PRIu64 ", using %" PRIu64 "\n",
                a.fd_cache, (uint64_t) rl.rlim_cur, fit);
        a.fd_cache = fit;
    }

    /* Our own threads block every signal, so SIGTERM/SIGINT reach a FUSE
     * thread (interrupting its read of /dev/fuse) and SIGUSR1 reaches
     * only sigwait(). SIGUSR1 stays blocked everywhere. */
    sigset_t all, usr1, old;
    sigfillset(&all);
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &all, &old);

    stats_init(&stats);
    FsConfig fcfg = { .root_fd = root_fd, .pool = &pool, .cas_threshold = a.cas_threshold, .mode = a.mode,
                      .stats = &stats, .fd_cache = a.fd_cache, .threads = a.threads,
                      .writeback = a.writeback, .splice = a.splice, .xattrs = a.xattrs, .timeout = a.timeout,
                      .pool_share = a.pool_share, .negative_entries = a.negative, .flush = a.flush,
                      .cache_symlinks = a.cache_symlinks, .parallel_dirops = a.parallel_dirops,
                      .keep_cache = a.keep_cache, .cache_dirs = a.cache_dirs,
                      .readdirplus = a.readdirplus, .store_fd = store_fd };
    r = fs_new(&fcfg, &fs);
    if (r < 0) {
        /* open_by_handle_at needs CAP_DAC_READ_SEARCH; no handles: EOPNOTSUPP */
        fprintf(stderr, "layoutd-wsfs: --state %s: cannot use file handles there: %s\n", a.state, strerror(-r));
        return EXIT_USAGE;
    }
    root_fd = -EBADF; /* the inode table has it */
    store_fd = -EBADF; /* the Fs has it */
    int probe = file_handle_open(&fs->mounts, &fs->inodes.root.fh, O_PATH);
    if (probe < 0) {
        fprintf(stderr, "layoutd-wsfs: --state %s: open_by_handle_at: %s (needs CAP_DAC_READ_SEARCH)\n",
                a.state, strerror(-probe));
        fs_free(fs);
        return EXIT_USAGE;
    }
    safe_close(probe);
    CommitterConfig ccfg = {
        .mode = a.mode, .batch_records = a.batch_records, .batch_usec = a.batch_ms * USEC_PER_MSEC,
        .state_fd = sync_fd, .pool = &pool, .mounts = &fs->mounts, .fdc = &fs->fdc, .stats = &stats,
        .stats_path = a.stats_file, .punch = fs_punch, .batch_done = fs_batch_done, .userdata = fs,
    };
    r = committer_start(&ccfg, &committer);
    if (r < 0) {
        fprintf(stderr, "layoutd-wsfs: starting: %s\n", strerror(-r));
        return EXIT_FAILURE;
    }
    fs_set_committer(fs, committer);
    SigCtx sctx = { &stats, committer, commit_mode_to_string(a.mode), &pool };
    pthread_t sigthread;
    if ((r = pthread_create(&sigthread, NULL, sigusr1_thread, &sctx)) != 0) {
        fprintf(stderr, "layoutd-wsfs: starting: %s\n", strerror(r));
        return EXIT_FAILURE;
    }
    sigaddset(&old, SIGUSR1);
    pthread_sigmask(SIG_SETMASK, &old, NULL);

    /* Mount options: ours first, the caller's -o last so they can add. */
    _cleanup_free_ char *mopts = NULL;
    _cleanup_free_ char *fsname = NULL;
    if (asprintf(&fsname, "fsname=wsfs:%s", a.state) < 0)
        return EXIT_FAILURE;
    if (append_opt(&mopts, "default_permissions,subtype=layoutd-wsfs") < 0 ||
        (!strpbrk(a.state, ", \t\n\\") && append_opt(&mopts, fsname) < 0) ||
        (geteuid() == 0 && append_opt(&mopts, "allow_other") < 0) ||
        (a.fuse_opts && append_opt(&mopts, a.fuse_opts) < 0))
        return EXIT_FAILURE;
    char *fargv[] = { argv[0], "-o", mopts, a.debug ? "-d" : NULL, NULL };
    struct fuse_args fargs = FUSE_ARGS_INIT(a.debug ? 4 : 3, fargv);

    struct fuse_session *se = fuse_session_new(&fargs, &fs_ops, sizeof(fs_ops), fs);
    if (!se) {
        fprintf(stderr, "layoutd-wsfs: bad FUSE options '%s'\n", mopts);
        ret = EXIT_USAGE;
        goto stop;
    }
    fs_set_session(fs, se);
    if (fuse_set_signal_handlers(se) != 0)
        goto destroy;
    if (fuse_session_mount(se, a.mountpoint) != 0) {
        fprintf(stderr, "layoutd-wsfs: mounting %s failed\n", a.mountpoint);
        goto handlers;
    }
    /* Before the loop reads FUSE_INIT: the transport has to see it. Where
     * io_uring itself is missing or forbidden (no SQE128, a seccomp
     * filter, io_uring_disabled), the daemon serves over /dev/fuse. */
    if (a.io_uring) {
        int ur = uring_attach(se);
        if (ur != 0) {
            fprintf(stderr, "layoutd-wsfs: --io-uring=on: no io_uring here (%s); serving over /dev/fuse\n",
                    strerror(-ur));
            a.io_uring = 0;
        }
    }
    char share[32] = "unlimited";
    if (a.pool_share != UINT64_MAX)
        snprintf(share, sizeof(share), "%" PRIu64, a.pool_share);
    fprintf(stderr, "layoutd-wsfs: serving %s at %s (commit=%s batch=%" PRIu64 "/%" PRIu64 "ms threads=%" PRIu64
            " shards=%zu cas-threshold=%" PRIu64 " profile=%s fd-cache=%" PRIu64 " writeback-cache=%s splice=%s"
            " timeout=%g xattrs=%s pool-share=%s negative-entries=%s flush=%s cache-symlinks=%s"
            " parallel-dirops=%s keep-cache=%s cache-dirs=%s readdirplus=%s clone-fd=%s io-uring=%s store=%s)\n",
            a.state, a.mountpoint, commit_mode_to_string(a.mode), a.batch_records, a.batch_ms, a.threads,
            pool.n_shards, a.cas_threshold, a.profile, a.fd_cache, a.writeback ? "on" : "off",
            a.splice ? "on" : "off", a.timeout, a.xattrs ? "on" : "off", share,
            a.negative ? "on" : "off", a.flush ? "on" : "off", a.cache_symlinks ? "on" : "off",
            a.parallel_dirops ? "on" : "off", a.keep_cache ? "on" : "off", a.cache_dirs ? "on" : "off",
            a.readdirplus == 2 ? "auto" : a.readdirplus ? "always" : "off", a.clone_fd ? "on" : "off",
            a.io_uring ? "on" : "off", a.store ?: "off");

    if (a.threads == 1)
        r = fuse_session_loop(se);
    else {
        struct fuse_loop_config *lc = fuse_loop_cfg_create();
        fuse_loop_cfg_set_max_threads(lc, a.threads);
        fuse_loop_cfg_set_idle_threads(lc, a.threads);
        fuse_loop_cfg_set_clone_fd(lc, (unsigned) a.clone_fd);
        r = fuse_session_loop_mt(se, lc);
        fuse_loop_cfg_destroy(lc);
    }
    /* 0, or the number of the signal that ended the loop; <0 on error. */
    ret = r >= 0 ? EXIT_SUCCESS : EXIT_FAILURE;
    fuse_session_unmount(se);
    if (a.io_uring)
        uring_detach();
    fprintf(stderr, "layoutd-wsfs: unmounted %s\n", a.mountpoint);
handlers:
    fuse_remove_signal_handlers(se);
destroy:
    fuse_session_destroy(se);
stop:
    /* Commit what is pending before exiting: a clean stop loses nothing.
     * The walker first: it reports to the committer, which this frees. */
    fs_stop_walker(fs);
    committer_stop(committer);
    atomic_store(&stopping, true);
    pthread_kill(sigthread, SIGUSR1);
    pthread_join(sigthread, NULL);
    fs_free(fs);
    cas_pool_close(&pool);
    stats_done(&stats);
    safe_close(root_fd);
    safe_close(sync_fd);
    fuse_opt_free_args(&fargs);
    return ret;
}
