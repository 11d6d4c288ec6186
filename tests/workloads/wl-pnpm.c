/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wl-pnpm: what pnpm does when it installs from its store in copy mode,
 * as the same system calls, and a verifier for the tree it makes.
 *
 *   wl-pnpm install --store DIR --lock FILE --dir DIR [--jobs N] [--ficlone first|every|never]
 *   wl-pnpm verify  --store DIR --lock FILE --dir DIR [--jobs N]
 *
 * The lock file (written by task_pkginstall.py) lists packages, their files
 * (sha256, mode, size, path), dependencies, bins and the direct
 * dependencies:
 *   P <index> <name> <version>
 *   F <sha256> <mode, octal> <size> <path in the package>
 *   D <index of a dependency>
 *   B <bin name> <path in the package>
 *   T <index of a direct dependency>
 * fields separated by one tab. The store is content addressed, as pnpm's:
 * <store>/files/<sha[0:2]>/<sha>, "-exec" appended for executables.
 *
 * install, per package (on --jobs threads, as libuv's thread pool of 4 does
 * pnpm's file work): mkdir of every directory of the package (recursive
 * on ENOENT, as node's mkdir does) below
 * node_modules/.pnpm/<name@version>/node_modules/pkg_tmp_<pid>_<n>/, one
 * copyfile per file, rename of the temporary directory to the package's
 * name. copyfile is libuv's uv_fs_copyfile: open the source, fstat, open
 * the destination with the source's mode, fchmod, then the data. pnpm's
 * "auto" import method tries a clone first and keeps to copying once the
 * clone is refused: --ficlone=first (the default) tries FICLONE on the
 * first file and copies from then on when it is refused cleanly (EXDEV,
 * EOPNOTSUPP, EINVAL, ENOTTY, ENOSYS, EPERM); any other errno is a failure.
 * The data goes by copy_file_range, tried for every file as libuv does
 * (only ENOSYS is remembered); on EXDEV, EOPNOTSUPP, ENOSYS or EINVAL
 * (EXDEV is what a FUSE mount fed from another filesystem answers) by
 * read/write in 64 KiB pieces (the size of the pipe libuv's sendfile fallback
 * splices through, so the FUSE WRITE pattern matches). Then the
 * dependency graph as relative symlinks (.pnpm/<pkg>/node_modules/<dep>,
 * node_modules/<direct dep>), chmod 0755 of every bin and a shell shim for
 * each direct dependency's bins in node_modules/.bin.
 *
 * verify walks node_modules and compares it with what the lock file says,
 * entry by entry: no entry missing, none extra (a leftover pkg_tmp_ dir is
 * an extra), file modes, sizes and the sha256 of every file read back,
 * symlink targets (and that each resolves to a directory), shim contents.
 *
 * Both print one JSON object on stdout. Exit status: 0 done and correct,
 * 1 failed (the first problems on stderr and in the JSON), 2 usage.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <getopt.h>
#include <linux/fs.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

#define COPY_BUF (64 * 1024)
#define MAX_PROBLEMS 20

typedef struct {
    char sha[65];
    mode_t mode;
    uint64_t size;
    char *rel;
} LockFile;

typedef struct {
    char *name;
    char *rel;
} LockBin;

typedef struct {
    char *name;    /* "foo" or "@scope/foo" */
    char *version;
    char *key;     /* the .pnpm directory: "foo@1.2.3", "@scope+foo@1.2.3" */
    size_t file_first, n_files;
    size_t dep_first, n_deps;
    size_t bin_first, n_bins;
} LockPkg;

typedef struct {
    char *text; /* the lock file, tokenised in place */
    LockPkg *pkgs;
    size_t n_pkgs;
    LockFile *files;
    size_t n_files;
    size_t *deps;
    size_t n_deps;
    LockBin *bins;
    size_t n_bins;
    size_t *tops;
    size_t n_tops;
} Lock;

typedef enum { FICLONE_FIRST, FICLONE_EVERY, FICLONE_NEVER } FicloneMode;

/* Options and the shared state of one run. Counters are atomics: the
 * worker threads add to them. */
typedef struct {
    const char *store, *lock_path, *dir;
    unsigned jobs;
    FicloneMode ficlone;
    Lock lock;

    atomic_size_t next;
    atomic_bool stop;
    atomic_int clone_state; /* 0 untried, 1 works, -1 refused */
    atomic_uint_fast64_t files, bytes, dirs, symlinks, bins, cfr_bytes, rw_bytes, ficlone_tries, ficlone_ok;
    atomic_int ficlone_errno, cfr_errno;
    atomic_bool cfr_nosys;
    atomic_uint_fast64_t cfr_refusals;

    pthread_mutex_t mu;
    char *problems[MAX_PROBLEMS];
    unsigned n_problems;
} Run;

/* ------------------------------------------------------------------ helpers */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

_printf_(2, 3) static void problem(Run *r, const char *fmt, ...) {
    va_list ap;
    char *s = NULL;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    pthread_mutex_lock(&r->mu);
    if (r->n_problems < MAX_PROBLEMS && s)
        r->problems[r->n_problems] = TAKE_PTR(s);
    r->n_problems++;
    pthread_mutex_unlock(&r->mu);
    free(s);
}

/* Records a failed system call and stops the run (pnpm stops at the first
 * error too). Returns -errno of that call. */
static int fail_errno(Run *r, const char *op, const char *path, int err) {
    problem(r, "%s %s: %s (%s)", op, path, strerror(err), strerrorname_np(err) ?: "?");
    atomic_store(&r->stop, true);
    return -err;
}

static char *path_join(const char *a, const char *b) {
    char *s;
    if (asprintf(&s, "%s/%s", a, b) < 0) {
        fprintf(stderr, "wl-pnpm: out of memory\n");
        exit(1);
    }
    return s;
}

/* mkdir as node's fs.mkdir(path, {recursive: true}) does it: try the path,
 * on ENOENT make the parent first and try again; EEXIST is fine when it
 * is a directory. Returns: <0 on error (-errno), 0 made, 1 existed. */
static int mkdir_recursive(const char *path, mode_t mode) {
    if (mkdir(path, mode) == 0)
        return 0;
    if (errno == EEXIST) {
        struct stat st;
        if (stat(path, &st) < 0)
            return -errno;
        return S_ISDIR(st.st_mode) ? 1 : -ENOTDIR;
    }
    if (errno != ENOENT)
        return -errno;
    _cleanup_free_ char *parent = strdup(path);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    if (!slash || slash == parent)
        return -ENOENT;
    *slash = '\0';
    int k = mkdir_recursive(parent, mode);
    if (k < 0)
        return k;
    if (mkdir(path, mode) < 0)
        return errno == EEXIST ? 1 : -errno;
    return 0;
}

static bool clone_refusal(int err) {
    return err == EXDEV || err == EOPNOTSUPP || err == EINVAL || err == ENOTTY || err == ENOSYS || err == EPERM;
}

static bool cfr_fallback(int err) {
    return err == EXDEV || err == EOPNOTSUPP || err == ENOSYS || err == EINVAL;
}

static char *store_path(Run *r, const LockFile *f) {
    char *s;
    if (asprintf(&s, "%s/files/%.2s/%s%s", r->store, f->sha, f->sha, (f->mode & 0111) ? "-exec" : "") < 0)
        return NULL;
    return s;
}

/* ------------------------------------------------------------------ lock file */

static int lock_parse(Lock *l, const char *path) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return -errno;
    l->text = malloc(st.st_size + 1);
    if (!l->text)
        return -ENOMEM;
    size_t got = 0;
    while (got < (size_t) st.st_size) {
        ssize_t n = read(fd, l->text + got, st.st_size - got);
        if (n < 0)
            return -errno;
        if (n == 0)
            break;
        got += n;
    }
    l->text[got] = '\0';

    /* Count first, then fill: sizes of the arrays. */
    size_t np = 0, nf = 0, nd = 0, nb = 0, nt = 0;
    for (char *p = l->text; *p; p = strchrnul(p, '\n'), p += !!*p) {
        switch (*p) {
        case 'P': np++; break;
        case 'F': nf++; break;
        case 'D': nd++; break;
        case 'B': nb++; break;
        case 'T': nt++; break;
        default: break;
        }
    }
    l->pkgs = calloc(np ?: 1, sizeof(LockPkg));
    l->files = calloc(nf ?: 1, sizeof(LockFile));
    l->deps = calloc(nd ?: 1, sizeof(size_t));
    l->bins = calloc(nb ?: 1, sizeof(LockBin));
    l->tops = calloc(nt ?: 1, sizeof(size_t));
    if (!l->pkgs || !l->files || !l->deps || !l->bins || !l->tops)
        return -ENOMEM;

    LockPkg *cur = NULL;
    char *save = NULL;
    for (char *line = strtok_r(l->text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        /* Tab-separated; the generator never puts a tab in a name or path. */
        char *f[6] = { 0 };
        size_t k = 0;
        for (char *q = line; q && k < ELEMENTSOF(f);)
            f[k++] = strsep(&q, "\t");
        switch (line[0]) {
        case '#':
            break;
        case 'P':
            if (k != 4 || strtoull(f[1], NULL, 10) != l->n_pkgs)
                return -EBADMSG;
            cur = &l->pkgs[l->n_pkgs++];
            cur->name = f[2];
            cur->version = f[3];
            if (asprintf(&cur->key, "%s@%s", f[2], f[3]) < 0)
                return -ENOMEM;
            for (char *c = cur->key; *c; c++)
                if (*c == '/')
                    *c = '+';
            cur->file_first = l->n_files;
            cur->dep_first = l->n_deps;
            cur->bin_first = l->n_bins;
            break;
        case 'F': {
            if (!cur || k != 5 || strlen(f[1]) != 64)
                return -EBADMSG;
            LockFile *x = &l->files[l->n_files++];
            memcpy(x->sha, f[1], 65);
            x->mode = strtoul(f[2], NULL, 8);
            x->size = strtoull(f[3], NULL, 10);
            x->rel = f[4];
            cur->n_files++;
            break;
        }
        case 'D':
            if (!cur || k != 2)
                return -EBADMSG;
            l->deps[l->n_deps++] = strtoull(f[1], NULL, 10);
            cur->n_deps++;
            break;
        case 'B':
            if (!cur || k != 3)
                return -EBADMSG;
            l->bins[l->n_bins].name = f[1];
            l->bins[l->n_bins++].rel = f[2];
            cur->n_bins++;
            break;
        case 'T':
            if (k != 2)
                return -EBADMSG;
            l->tops[l->n_tops++] = strtoull(f[1], NULL, 10);
            break;
        default:
            return -EBADMSG;
        }
    }
    for (size_t i = 0; i < l->n_deps; i++)
        if (l->deps[i] >= l->n_pkgs)
            return -EBADMSG;
    for (size_t i = 0; i < l->n_tops; i++)
        if (l->tops[i] >= l->n_pkgs)
            return -EBADMSG;
    return 0;
}

/* Where things go, relative to the install dir. */
static char *pkg_parent(const LockPkg *p) { /* the dir that holds the package dir */
    char *s;
    const char *slash = strchr(p->name, '/');
    if (asprintf(&s, "node_modules/.pnpm/%s/node_modules%s%.*s", p->key, slash ? "/" : "",
                 slash ? (int) (slash - p->name) : 0, p->name) < 0)
        return NULL;
    return s;
}
static char *pkg_dir(const LockPkg *p) {
    char *s;
    if (asprintf(&s, "node_modules/.pnpm/%s/node_modules/%s", p->key, p->name) < 0)
        return NULL;
    return s;
}
/* The symlink target for dependency d of a package, relative to the link's
 * directory (.pnpm/<key>/node_modules[/@scope]). */
static char *dep_target(const LockPkg *d) {
    char *s;
    bool scoped = strchr(d->name, '/') != NULL;
    if (asprintf(&s, "%s../../%s/node_modules/%s", scoped ? "../" : "", d->key, d->name) < 0)
        return NULL;
    return s;
}
/* A direct dependency's link, node_modules/<name>, points here. */
static char *top_target(const LockPkg *d) {
    char *s;
    bool scoped = strchr(d->name, '/') != NULL;
    if (asprintf(&s, "%s.pnpm/%s/node_modules/%s", scoped ? "../" : "", d->key, d->name) < 0)
        return NULL;
    return s;
}
static char *shim_text(const LockPkg *p, const LockBin *b) {
    char *s;
    if (asprintf(&s,
                 "#!/bin/sh\n"
                 "basedir=$(dirname \"$(echo \"$0\" | sed -e 's,\\\\,/,g')\")\n"
                 "exec node \"$basedir/../%s/%s\" \"$@\"\n",
                 p->name, b->rel) < 0)
        return NULL;
    return s;
}

/* ------------------------------------------------------------------ install */

/* libuv's uv_fs_copyfile, after pnpm's clone attempt. Returns: <0 on error
 * (-errno, recorded), 0 on success. */
static int copy_one(Run *r, const char *src, const char *dst) {
    _cleanup_close_ int in = open(src, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return fail_errno(r, "open", src, errno);
    struct stat st;
    if (fstat(in, &st) < 0)
        return fail_errno(r, "fstat", src, errno);
    int out = open(dst, O_WRONLY | O_CREAT | O_CLOEXEC, st.st_mode & 07777);
    if (out < 0)
        return fail_errno(r, "open", dst, errno);
    int ret = 0;
    struct stat dst_st;
    if (fstat(out, &dst_st) < 0) {
        ret = fail_errno(r, "fstat", dst, errno);
        goto done;
    }
    if (fchmod(out, st.st_mode & 07777) < 0) {
        ret = fail_errno(r, "fchmod", dst, errno);
        goto done;
    }

    int cs = atomic_load(&r->clone_state);
    if (r->ficlone == FICLONE_EVERY || (r->ficlone == FICLONE_FIRST && cs >= 0)) {
        atomic_fetch_add(&r->ficlone_tries, 1);
        if (ioctl(out, FICLONE, in) == 0) {
            atomic_fetch_add(&r->ficlone_ok, 1);
            atomic_store(&r->clone_state, 1);
            atomic_fetch_add(&r->bytes, st.st_size);
            goto done;
        }
        int e = errno;
        if (!clone_refusal(e)) {
            ret = fail_errno(r, "ioctl(FICLONE)", dst, e);
            goto done;
        }
        atomic_store(&r->ficlone_errno, e);
        if (r->ficlone == FICLONE_FIRST)
            atomic_store(&r->clone_state, -1);
    }

    /* As libuv: copy_file_range for every file, except after ENOSYS (the
     * only answer it remembers); any other refusal falls back for this
     * file only. */
    off_t left = st.st_size;
    bool use_cfr = !atomic_load(&r->cfr_nosys);
    while (left > 0 && use_cfr) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, left, 0);
        if (n < 0) {
            if (!cfr_fallback(errno)) {
                ret = fail_errno(r, "copy_file_range", dst, errno);
                goto done;
            }
            atomic_store(&r->cfr_errno, errno);
            atomic_fetch_add(&r->cfr_refusals, 1);
            if (errno == ENOSYS)
                atomic_store(&r->cfr_nosys, true);
            break;
        }
        if (n == 0)
            break;
        left -= n;
        atomic_fetch_add(&r->cfr_bytes, n);
    }
    if (left > 0) {
        char buf[COPY_BUF];
        off_t pos = st.st_size - left;
        while (left > 0) {
            ssize_t n = pread(in, buf, MIN((off_t) sizeof buf, left), pos);
            if (n < 0) {
                ret = fail_errno(r, "read", src, errno);
                goto done;
            }
            if (n == 0) {
                ret = fail_errno(r, "read (short)", src, EIO);
                goto done;
            }
            for (ssize_t w = 0; w < n;) {
                ssize_t m = pwrite(out, buf + w, n - w, pos + w);
                if (m < 0) {
                    ret = fail_errno(r, "write", dst, errno);
                    goto done;
                }
                w += m;
            }
            pos += n;
            left -= n;
            atomic_fetch_add(&r->rw_bytes, n);
        }
    }
    atomic_fetch_add(&r->bytes, st.st_size);
done:
    /* close() reports write-back errors (and, in the bug this suite was
     * built for, EBADF): it counts. */
    if (close(out) < 0 && ret == 0)
        ret = fail_errno(r, "close", dst, errno);
    if (ret == 0)
        atomic_fetch_add(&r->files, 1);
    return ret;
}

static int import_pkg(Run *r, size_t idx) {
    const LockPkg *p = &r->lock.pkgs[idx];
    _cleanup_free_ char *parent_rel = pkg_parent(p), *final_rel = pkg_dir(p);
    if (!parent_rel || !final_rel)
        return fail_errno(r, "asprintf", p->name, ENOMEM);
    _cleanup_free_ char *parent = path_join(r->dir, parent_rel), *final = path_join(r->dir, final_rel);
    _cleanup_free_ char *tmp = NULL;
    if (asprintf(&tmp, "%s/pkg_tmp_%d_%zu", parent, (int) getpid(), idx) < 0)
        return fail_errno(r, "asprintf", p->name, ENOMEM);

    int k = mkdir_recursive(tmp, 0755);
    if (k < 0)
        return fail_errno(r, "mkdir", tmp, -k);
    atomic_fetch_add(&r->dirs, 1);
    /* Every directory of the package, once, before the files (pnpm makes
     * the set of parent dirs first). The lock lists files sorted by path. */
    _cleanup_free_ char *last = NULL;
    for (size_t i = 0; i < p->n_files && !atomic_load(&r->stop); i++) {
        const LockFile *f = &r->lock.files[p->file_first + i];
        const char *slash = strrchr(f->rel, '/');
        if (!slash)
            continue;
        _cleanup_free_ char *d = strndup(f->rel, slash - f->rel);
        if (!d)
            return fail_errno(r, "strndup", f->rel, ENOMEM);
        if (last && streq(last, d))
            continue;
        _cleanup_free_ char *full = path_join(tmp, d);
        k = mkdir_recursive(full, 0755);
        if (k < 0)
            return fail_errno(r, "mkdir", full, -k);
        free(last);
        last = TAKE_PTR(d);
    }
    for (size_t i = 0; i < p->n_files && !atomic_load(&r->stop); i++) {
        const LockFile *f = &r->lock.files[p->file_first + i];
        _cleanup_free_ char *src = store_path(r, f), *dst = path_join(tmp, f->rel);
        if (!src)
            return fail_errno(r, "asprintf", f->rel, ENOMEM);
        k = copy_one(r, src, dst);
        if (k < 0)
            return k;
    }
    if (atomic_load(&r->stop))
        return -ECANCELED;
    if (rename(tmp, final) < 0)
        return fail_errno(r, "rename", tmp, errno);
    return 0;
}

static int link_pkg(Run *r, size_t idx) {
    const LockPkg *p = &r->lock.pkgs[idx];
    _cleanup_free_ char *nm = NULL;
    if (asprintf(&nm, "%s/node_modules/.pnpm/%s/node_modules", r->dir, p->key) < 0)
        return fail_errno(r, "asprintf", p->name, ENOMEM);
    for (size_t i = 0; i < p->n_deps && !atomic_load(&r->stop); i++) {
        const LockPkg *d = &r->lock.pkgs[r->lock.deps[p->dep_first + i]];
        _cleanup_free_ char *link = path_join(nm, d->name), *target = dep_target(d);
        if (!target)
            return fail_errno(r, "asprintf", d->name, ENOMEM);
        const char *slash = strchr(d->name, '/');
        if (slash) {
            _cleanup_free_ char *scope = strndup(link, strlen(nm) + 1 + (slash - d->name));
            int k = scope ? mkdir_recursive(scope, 0755) : -ENOMEM;
            if (k < 0)
                return fail_errno(r, "mkdir", link, -k);
            if (k == 0)
                atomic_fetch_add(&r->dirs, 1);
        }
        if (symlink(target, link) < 0)
            return fail_errno(r, "symlink", link, errno);
        atomic_fetch_add(&r->symlinks, 1);
    }
    for (size_t i = 0; i < p->n_bins && !atomic_load(&r->stop); i++) {
        const LockBin *b = &r->lock.bins[p->bin_first + i];
        _cleanup_free_ char *rel = pkg_dir(p);
        _cleanup_free_ char *dir = rel ? path_join(r->dir, rel) : NULL;
        _cleanup_free_ char *bin = dir ? path_join(dir, b->rel) : NULL;
        if (!bin)
            return fail_errno(r, "asprintf", b->rel, ENOMEM);
        if (chmod(bin, 0755) < 0)
            return fail_errno(r, "chmod", bin, errno);
        atomic_fetch_add(&r->bins, 1);
    }
    return 0;
}

typedef int (*PkgStep)(Run *r, size_t idx);
typedef struct {
    Run *run;
    PkgStep step;
} Worker;

static void *worker_main(void *arg) {
    Worker *w = arg;
    for (;;) {
        size_t i = atomic_fetch_add(&w->run->next, 1);
        if (i >= w->run->lock.n_pkgs || atomic_load(&w->run->stop))
            break;
        (void) w->step(w->run, i);
    }
    return NULL;
}

/* Runs step for every package on r->jobs threads. Returns: <0 when any
 * step failed, 0 on success. */
static int for_each_pkg(Run *r, PkgStep step) {
    pthread_t th[64];
    Worker w = { .run = r, .step = step };
    unsigned n = CLAMP(r->jobs, 1u, (unsigned) ELEMENTSOF(th)), started = 0;
    atomic_store(&r->next, 0);
    for (unsigned i = 0; i < n; i++) {
        int k = pthread_create(&th[i], NULL, worker_main, &w);
        if (k != 0) {
            fail_errno(r, "pthread_create", "worker", k);
            break;
        }
        started++;
    }
    for (unsigned i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    return atomic_load(&r->stop) ? -EIO : 0;
}

static int link_tops(Run *r) {
    _cleanup_free_ char *nm = path_join(r->dir, "node_modules");
    _cleanup_free_ char *bindir = path_join(nm, ".bin");
    if (r->lock.n_tops > 0) {
        int k = mkdir_recursive(bindir, 0755);
        if (k < 0)
            return fail_errno(r, "mkdir", bindir, -k);
        atomic_fetch_add(&r->dirs, 1);
    }
    for (size_t i = 0; i < r->lock.n_tops; i++) {
        const LockPkg *p = &r->lock.pkgs[r->lock.tops[i]];
        _cleanup_free_ char *link = path_join(nm, p->name), *target = top_target(p);
        if (!target)
            return fail_errno(r, "asprintf", p->name, ENOMEM);
        const char *slash = strchr(p->name, '/');
        if (slash) {
            _cleanup_free_ char *scope = strndup(link, strlen(nm) + 1 + (slash - p->name));
            int k = scope ? mkdir_recursive(scope, 0755) : -ENOMEM;
            if (k < 0)
                return fail_errno(r, "mkdir", link, -k);
            if (k == 0)
                atomic_fetch_add(&r->dirs, 1);
        }
        if (symlink(target, link) < 0)
            return fail_errno(r, "symlink", link, errno);
        atomic_fetch_add(&r->symlinks, 1);
        for (size_t b = 0; b < p->n_bins; b++) {
            const LockBin *bin = &r->lock.bins[p->bin_first + b];
            _cleanup_free_ char *shim = path_join(bindir, bin->name), *text = shim_text(p, bin);
            if (!text)
                return fail_errno(r, "asprintf", bin->name, ENOMEM);
            _cleanup_close_ int fd = open(shim, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0)
                return fail_errno(r, "open", shim, errno);
            size_t len = strlen(text);
            if (write(fd, text, len) != (ssize_t) len)
                return fail_errno(r, "write", shim, errno ?: EIO);
            if (fchmod(fd, 0755) < 0)
                return fail_errno(r, "fchmod", shim, errno);
            if (close(TAKE_FD(fd)) < 0)
                return fail_errno(r, "close", shim, errno);
            atomic_fetch_add(&r->files, 1);
        }
    }
    return 0;
}

static const char *errname(int e) {
    return e ? (strerrorname_np(e) ?: "?") : NULL;
}

static void print_json_str(const char *s) {
    putchar('"');
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            printf("\\%c", *s);
        else if ((unsigned char) *s < 0x20)
            printf("\\u%04x", *s);
        else
            putchar(*s);
    }
    putchar('"');
}

static void print_problems(Run *r) {
    printf("\"problems\":%u,\"first_problems\":[", r->n_problems);
    for (unsigned i = 0; i < MIN(r->n_problems, (unsigned) MAX_PROBLEMS); i++) {
        if (i)
            putchar(',');
        print_json_str(r->problems[i]);
        fprintf(stderr, "wl-pnpm: %s\n", r->problems[i]);
    }
    putchar(']');
}

static int do_install(Run *r) {
    _cleanup_free_ char *pnpm = path_join(r->dir, "node_modules/.pnpm");
    double t0 = now_s(), t1 = t0, t2 = t0, t3 = t0;
    int k = mkdir_recursive(pnpm, 0755);
    if (k < 0)
        fail_errno(r, "mkdir", pnpm, -k);
    else {
        for_each_pkg(r, import_pkg);
        t1 = now_s();
        if (!atomic_load(&r->stop))
            for_each_pkg(r, link_pkg);
        t2 = now_s();
        if (!atomic_load(&r->stop))
            link_tops(r);
        t3 = now_s();
    }
    int fe = atomic_load(&r->ficlone_errno), ce = atomic_load(&r->cfr_errno);
    printf("{\"op\":\"install\",\"ok\":%s,\"packages\":%zu,\"files\":%" PRIuFAST64 ",\"bytes\":%" PRIuFAST64
           ",\"dirs\":%" PRIuFAST64 ",\"symlinks\":%" PRIuFAST64 ",\"bins\":%" PRIuFAST64
           ",\"ficlone\":{\"tries\":%" PRIuFAST64 ",\"ok\":%" PRIuFAST64 ",\"refused_with\":",
           r->n_problems ? "false" : "true", r->lock.n_pkgs, atomic_load(&r->files), atomic_load(&r->bytes),
           atomic_load(&r->dirs), atomic_load(&r->symlinks), atomic_load(&r->bins), atomic_load(&r->ficlone_tries),
           atomic_load(&r->ficlone_ok));
    fe ? print_json_str(errname(fe)) : (void) printf("null");
    printf("},\"copy_file_range_bytes\":%" PRIuFAST64 ",\"read_write_bytes\":%" PRIuFAST64
           ",\"copy_file_range_refusals\":%" PRIuFAST64 ",\"copy_file_range_refused_with\":",
           atomic_load(&r->cfr_bytes), atomic_load(&r->rw_bytes), atomic_load(&r->cfr_refusals));
    ce ? print_json_str(errname(ce)) : (void) printf("null");
    printf(",\"seconds\":{\"import\":%.3f,\"link\":%.3f,\"bins\":%.3f},\"jobs\":%u,", t1 - t0, t2 - t1, t3 - t2,
           r->jobs);
    print_problems(r);
    printf("}\n");
    return r->n_problems ? 1 : 0;
}

/* ------------------------------------------------------------------ verify */

typedef struct {
    char *path; /* relative to the install dir */
    char type;  /* 'f', 'l', 'd' */
    mode_t mode;
    const LockFile *file; /* type 'f' from the store */
    char *text;           /* type 'l': target; shims: expected content */
} Entry;

typedef struct {
    Entry *v;
    size_t n, cap;
} Entries;

static void entries_add(Entries *e, char *path, char type, mode_t mode, const LockFile *f, char *text) {
    if (e->n == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 4096;
        e->v = realloc(e->v, e->cap * sizeof(Entry));
        if (!e->v) {
            fprintf(stderr, "wl-pnpm: out of memory\n");
            exit(1);
        }
    }
    if (!path) {
        fprintf(stderr, "wl-pnpm: out of memory\n");
        exit(1);
    }
    e->v[e->n++] = (Entry){ .path = path, .type = type, .mode = mode, .file = f, .text = text };
}

static void entries_free(Entries *e) {
    for (size_t i = 0; i < e->n; i++) {
        free(e->v[i].path);
        free(e->v[i].text);
    }
    e->v = mfree(e->v);
    e->n = e->cap = 0;
}

static char *fmt(const char *f, ...) _printf_(1, 2);
static char *fmt(const char *f, ...) {
    va_list ap;
    char *s = NULL;
    va_start(ap, f);
    if (vasprintf(&s, f, ap) < 0)
        s = NULL;
    va_end(ap);
    return s;
}

/* Adds "a/b/c" and its parents up to (not including) stop_at, as dirs. */
static void add_dirs(Entries *e, const char *path, size_t stop_at) {
    for (size_t i = strlen(path); i > stop_at; i--)
        if (i == strlen(path) || path[i] == '/')
            entries_add(e, strndup(path, i), 'd', 0755, NULL, NULL);
}

static int entry_cmp(const void *a, const void *b) {
    return strcmp(((const Entry *) a)->path, ((const Entry *) b)->path);
}

static void expected_entries(Run *r, Entries *e) {
    const Lock *l = &r->lock;
    entries_add(e, strdup("node_modules"), 'd', 0755, NULL, NULL);
    entries_add(e, strdup("node_modules/.pnpm"), 'd', 0755, NULL, NULL);
    bool bin_dir = false;
    for (size_t i = 0; i < l->n_pkgs; i++) {
        const LockPkg *p = &l->pkgs[i];
        _cleanup_free_ char *dir = pkg_dir(p);
        /* .pnpm/<key>, .pnpm/<key>/node_modules, [@scope], the package dir */
        add_dirs(e, dir, strlen("node_modules/.pnpm"));
        for (size_t j = 0; j < p->n_files; j++) {
            const LockFile *f = &l->files[p->file_first + j];
            _cleanup_free_ char *full = fmt("%s/%s", dir, f->rel);
            const char *slash = strrchr(full, '/');
            _cleanup_free_ char *parent = strndup(full, slash - full);
            if (parent && !streq(parent, dir))
                add_dirs(e, parent, strlen(dir));
            entries_add(e, TAKE_PTR(full), 'f', f->mode & 07777, f, NULL);
        }
        for (size_t j = 0; j < p->n_deps; j++) {
            const LockPkg *d = &l->pkgs[l->deps[p->dep_first + j]];
            char *link = fmt("node_modules/.pnpm/%s/node_modules/%s", p->key, d->name);
            const char *slash = strchr(d->name, '/');
            if (slash)
                entries_add(e, fmt("node_modules/.pnpm/%s/node_modules/%.*s", p->key, (int) (slash - d->name), d->name),
                            'd', 0755, NULL, NULL);
            entries_add(e, link, 'l', 0777, NULL, dep_target(d));
        }
    }
    for (size_t i = 0; i < l->n_tops; i++) {
        const LockPkg *p = &l->pkgs[l->tops[i]];
        const char *slash = strchr(p->name, '/');
        if (slash)
            entries_add(e, fmt("node_modules/%.*s", (int) (slash - p->name), p->name), 'd', 0755, NULL, NULL);
        entries_add(e, fmt("node_modules/%s", p->name), 'l', 0777, NULL, top_target(p));
        for (size_t b = 0; b < p->n_bins; b++) {
            const LockBin *bin = &l->bins[p->bin_first + b];
            bin_dir = true;
            entries_add(e, fmt("node_modules/.bin/%s", bin->name), 'f', 0755, NULL, shim_text(p, bin));
        }
    }
    if (bin_dir || l->n_tops > 0)
        entries_add(e, strdup("node_modules/.bin"), 'd', 0755, NULL, NULL);

    qsort(e->v, e->n, sizeof(Entry), entry_cmp);
    /* Drop duplicate dirs (shared parents, a scope dir of many deps). */
    size_t w = 0;
    for (size_t i = 0; i < e->n; i++) {
        if (w > 0 && streq(e->v[w - 1].path, e->v[i].path) && e->v[i].type == 'd' && e->v[w - 1].type == 'd') {
            free(e->v[i].path);
            continue;
        }
        e->v[w++] = e->v[i];
    }
    e->n = w;
    /* Bins are 0755 whatever the store said. */
    for (size_t i = 0; i < l->n_pkgs; i++) {
        const LockPkg *p = &l->pkgs[i];
        for (size_t b = 0; b < p->n_bins; b++) {
            _cleanup_free_ char *dir = pkg_dir(p);
            Entry key = { .path = fmt("%s/%s", dir, l->bins[p->bin_first + b].rel) };
            Entry *hit = bsearch(&key, e->v, e->n, sizeof(Entry), entry_cmp);
            if (hit)
                hit->mode = 0755;
            free(key.path);
        }
    }
}

static Entries walk_result;
static size_t walk_prefix;

static int walk_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    char type = S_ISDIR(st->st_mode) ? 'd' : S_ISLNK(st->st_mode) ? 'l' : S_ISREG(st->st_mode) ? 'f' : '?';
    if (flag == FTW_DNR || flag == FTW_NS)
        type = '!';
    entries_add(&walk_result, strdup(path + walk_prefix), type, st->st_mode & 07777, NULL, NULL);
    return 0;
}

typedef struct {
    Run *run;
    Entries *exp;
    atomic_size_t *next;
    atomic_uint_fast64_t *bytes;
} HashJob;

static int check_file(Run *r, const Entry *x, uint64_t *ret_bytes) {
    _cleanup_free_ char *path = path_join(r->dir, x->path);
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        problem(r, "open %s: %s", x->path, strerror(errno));
        return -errno;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
        EVP_MD_CTX_free(ctx);
        problem(r, "sha256 init failed");
        return -ENOMEM;
    }
    static _Thread_local char buf[256 * 1024];
    uint64_t total = 0;
    size_t tlen = x->text ? strlen(x->text) : 0;
    bool text_ok = true;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            int e = errno;
            EVP_MD_CTX_free(ctx);
            problem(r, "read %s: %s", x->path, strerror(e));
            return -e;
        }
        if (n == 0)
            break;
        if (x->text && (total + n > tlen || memcmp(buf, x->text + total, n) != 0))
            text_ok = false;
        EVP_DigestUpdate(ctx, buf, n);
        total += n;
    }
    unsigned char md[32];
    EVP_DigestFinal_ex(ctx, md, NULL);
    EVP_MD_CTX_free(ctx);
    if (close(TAKE_FD(fd)) < 0) {
        problem(r, "close %s: %s", x->path, strerror(errno));
        return -errno;
    }
    *ret_bytes = total;
    if (x->text) {
        if (!text_ok || total != tlen) {
            problem(r, "%s: content differs from the expected shim", x->path);
            return -EBADMSG;
        }
        return 0;
    }
    char hex[65];
    for (int i = 0; i < 32; i++)
        sprintf(hex + 2 * i, "%02x", md[i]);
    if (total != x->file->size || !streq(hex, x->file->sha)) {
        problem(r, "%s: %" PRIu64 " bytes, sha256 %s; expected %" PRIu64 " bytes, %s", x->path, total, hex,
                x->file->size, x->file->sha);
        return -EBADMSG;
    }
    return 0;
}

static void *hash_main(void *arg) {
    HashJob *j = arg;
    for (;;) {
        size_t i = atomic_fetch_add(j->next, 1);
        if (i >= j->exp->n)
            break;
        const Entry *x = &j->exp->v[i];
        uint64_t b = 0;
        if (x->type == 'f' && check_file(j->run, x, &b) == 0)
            atomic_fetch_add(j->bytes, b);
    }
    return NULL;
}

static int do_verify(Run *r) {
    double t0 = now_s();
    Entries exp = { 0 };
    expected_entries(r, &exp);

    _cleanup_free_ char *root = path_join(r->dir, "node_modules");
    walk_prefix = strlen(r->dir) + 1;
    if (nftw(root, walk_cb, 64, FTW_PHYS) < 0)
        problem(r, "walk %s: %s", root, strerror(errno));
    qsort(walk_result.v, walk_result.n, sizeof(Entry), entry_cmp);

    /* Merge: missing, extra, wrong type or mode, wrong link target. */
    size_t i = 0, j = 0, missing = 0, extra = 0, files = 0, links = 0;
    while (i < exp.n || j < walk_result.n) {
        int c = i >= exp.n ? 1 : j >= walk_result.n ? -1 : strcmp(exp.v[i].path, walk_result.v[j].path);
        if (c < 0) {
            problem(r, "missing: %s", exp.v[i].path);
            missing++;
            i++;
            continue;
        }
        if (c > 0) {
            problem(r, "extra: %s", walk_result.v[j].path);
            extra++;
            j++;
            continue;
        }
        const Entry *x = &exp.v[i], *a = &walk_result.v[j];
        if (x->type != a->type)
            problem(r, "%s: type %c, expected %c", x->path, a->type, x->type);
        else if (x->type == 'f' && a->mode != x->mode)
            problem(r, "%s: mode %04o, expected %04o", x->path, a->mode, x->mode);
        else if (x->type == 'l') {
            _cleanup_free_ char *p = path_join(r->dir, x->path);
            char target[4096];
            ssize_t n = readlink(p, target, sizeof target - 1);
            struct stat st;
            if (n < 0)
                problem(r, "readlink %s: %s", x->path, strerror(errno));
            else if ((target[n] = '\0', !streq(target, x->text)))
                problem(r, "%s -> %s, expected -> %s", x->path, target, x->text);
            else if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                problem(r, "%s -> %s does not resolve to a directory", x->path, target);
            links++;
        }
        files += x->type == 'f';
        i++, j++;
    }

    atomic_size_t next = 0;
    atomic_uint_fast64_t bytes = 0;
    HashJob job = { .run = r, .exp = &exp, .next = &next, .bytes = &bytes };
    pthread_t th[64];
    unsigned n = CLAMP(r->jobs, 1u, (unsigned) ELEMENTSOF(th)), started = 0;
    for (unsigned t = 0; t < n; t++)
        if (pthread_create(&th[t], NULL, hash_main, &job) == 0)
            started++;
    if (started == 0)
        hash_main(&job);
    for (unsigned t = 0; t < started; t++)
        pthread_join(th[t], NULL);

    printf("{\"op\":\"verify\",\"ok\":%s,\"entries\":%zu,\"found\":%zu,\"files\":%zu,\"symlinks\":%zu,"
           "\"bytes_hashed\":%" PRIuFAST64 ",\"missing\":%zu,\"extra\":%zu,\"seconds\":%.3f,",
           r->n_problems ? "false" : "true", exp.n, walk_result.n, files, links, atomic_load(&bytes), missing, extra,
           now_s() - t0);
    print_problems(r);
    printf("}\n");
    entries_free(&exp);
    entries_free(&walk_result);
    return r->n_problems ? 1 : 0;
}

static void lock_free(Lock *l) {
    for (size_t i = 0; i < l->n_pkgs; i++)
        free(l->pkgs[i].key);
    free(l->pkgs);
    free(l->files);
    free(l->deps);
    free(l->bins);
    free(l->tops);
    free(l->text);
}

static void run_free(Run *r) {
    lock_free(&r->lock);
    for (unsigned i = 0; i < MIN(r->n_problems, (unsigned) MAX_PROBLEMS); i++)
        free(r->problems[i]);
}

/* ------------------------------------------------------------------ main */

static int usage(void) {
    fprintf(stderr, "usage: wl-pnpm install|verify --store DIR --lock FILE --dir DIR [--jobs N] "
                    "[--ficlone first|every|never]\n");
    return 2;
}

int main(int argc, char **argv) {
    static Run r = { .jobs = 4, .ficlone = FICLONE_FIRST, .mu = PTHREAD_MUTEX_INITIALIZER };
    static const struct option opts[] = {
        { "store", required_argument, NULL, 's' }, { "lock", required_argument, NULL, 'l' },
        { "dir", required_argument, NULL, 'd' },   { "jobs", required_argument, NULL, 'j' },
        { "ficlone", required_argument, NULL, 'c' }, { 0 },
    };
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    optind = 2;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 's': r.store = optarg; break;
        case 'l': r.lock_path = optarg; break;
        case 'd': r.dir = optarg; break;
        case 'j': r.jobs = strtoul(optarg, NULL, 10); break;
        case 'c':
            if (streq(optarg, "first"))
                r.ficlone = FICLONE_FIRST;
            else if (streq(optarg, "every"))
                r.ficlone = FICLONE_EVERY;
            else if (streq(optarg, "never"))
                r.ficlone = FICLONE_NEVER;
            else
                return usage();
            break;
        default: return usage();
        }
    }
    if (!r.store || !r.lock_path || !r.dir || optind != argc || r.jobs == 0)
        return usage();
    int k = lock_parse(&r.lock, r.lock_path);
    if (k < 0) {
        fprintf(stderr, "wl-pnpm: %s: %s\n", r.lock_path, strerror(-k));
        return 2;
    }
    if (streq(cmd, "install"))
        k = do_install(&r);
    else if (streq(cmd, "verify"))
        k = do_verify(&r);
    else
        k = usage();
    run_free(&r);
    return k;
}
