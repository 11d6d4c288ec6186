/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Integration tests of the device layer on real loop devices, file systems
 * and mounts (root). Everything lives below a private /tmp/layoutd-dev-XXXXXX
 * directory; an atexit handler (also run on a failed check and on
 * SIGINT/SIGTERM) unmounts only mounts below it and detaches only loop
 * devices whose backing file is below it, so other tests running on the
 * same machine are never touched.
 *
 *   test-dev-integration <case>     case: loop race probe mkfs mount fallback udev
 * Exit 77: the machine lacks a feature (not root, no loop driver).
 */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libmount.h>
#include <linux/loop.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bdi.h"
#include "loop.h"
#include "mkfs.h"
#include "mount.h"
#include "probe.h"
#include "udev.h"
#include "util.h"

static char workdir[] = "/tmp/layoutd-dev-XXXXXX";
static bool have_workdir;
static pid_t main_pid;
static const char *test_name = "?";

#define CHECK(cond, ...)                                                                  \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "[%s] FAIL %s:%d: %s: ", test_name, __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                                 \
            fputc('\n', stderr);                                                          \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)
#define CHECK_R(expr)                                                                     \
    do {                                                                                  \
        int _r = (expr);                                                                  \
        CHECK(_r >= 0, "%s", strerror(-_r));                                              \
    } while (0)

_printf_(1, 2) static void note(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "[%s] ", test_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static char *wpath(const char *name) {
    char *p;
    if (asprintf(&p, "%s/%s", workdir, name) < 0)
        abort();
    return p;
}

/* Teardown: only what lives below workdir. Mounts deepest first (the
 * table lists children after parents, so walk it backwards). */
static void cleanup(void) {
    if (!have_workdir || getpid() != main_pid)
        return;
    size_t len = strlen(workdir);
    for (int pass = 0; pass < 3; pass++) {
        struct libmnt_table *tb = mnt_new_table_from_file("/proc/self/mountinfo");
        struct libmnt_iter *it = mnt_new_iter(MNT_ITER_BACKWARD);
        struct libmnt_fs *fs;
        bool any = false;
        while (tb && it && mnt_table_next_fs(tb, it, &fs) == 0) {
            const char *t = mnt_fs_get_target(fs);
            if (t && strncmp(t, workdir, len) == 0 && (t[len] == '/' || t[len] == 0)) {
                any = true;
                if (umount2(t, UMOUNT_NOFOLLOW) < 0)
                    (void) umount2(t, MNT_DETACH | UMOUNT_NOFOLLOW);
            }
        }
        mnt_free_iter(it);
        mnt_unref_table(tb);
        if (!any)
            break;
    }
    for (int pass = 0; pass < 2; pass++) {
        char **l = NULL;
        if (loop_device_list_below(workdir, &l) < 0)
            break;
        for (char **n = l; *n; n++) {
            int fd = open(*n, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                (void) ioctl(fd, LOOP_CLR_FD);
                close(fd);
            }
        }
        strv_free(l);
    }
    char *cmd;
    if (asprintf(&cmd, "rm -rf --one-file-system '%s'", workdir) >= 0) {
        (void) !system(cmd);
        free(cmd);
    }
}

static void on_signal(int sig) {
    (void) sig;
    exit(130); /* runs cleanup() */
}

static void make_file(const char *path, uint64_t size) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    CHECK(fd >= 0, "%s: %m", path);
    CHECK(ftruncate(fd, (off_t) size) >= 0, "%m");
    close(fd);
}

static uint64_t sysfs_u64(dev_t devno, const char *attr) {
    char p[256];
    char *s = NULL;
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/%s", major(devno), minor(devno), attr);
    CHECK(read_one_line_file(p, &s) >= 0, "read %s", p);
    uint64_t v = strtoull(s, NULL, 10);
    free(s);
    return v;
}

static int run(char *const *argv, char **out) {
    int status = 0;
    char *o = NULL;
    int r = dev_run_program(argv, &o, &status);
    if (r == -EPROTO)
        note("%s failed (status %d): %s", argv[0], status, o ? o : "");
    if (out)
        *out = o;
    else
        free(o);
    return r;
}

static void mkfs(const char *fstype, const char *dev, const char *label, const char *uuid) {
    char **argv = NULL;
    CHECK_R(mkfs_build_argv(fstype, dev, label, uuid, NULL, &argv));
    int r = run(argv, NULL);
    CHECK(r >= 0, "%s on %s: %s", argv[0], dev, strerror(-r));
    strv_free(argv);
}

/* ---- loop: attach with DIO, read back, find, grow, bdi, busy detach ---- */
static void test_loop(void) {
    char *img = wpath("loop.img"), *moved = wpath("loop-renamed.img");
    make_file(img, 64 * MIB);

    LoopAttachOptions o = { .direct_io = true };
    LoopInfo li = {};
    bool fallback = true;
    CHECK_R(loop_device_attach(img, &o, &li, &fallback));
    note("attached %s (nr %d) dio=%d lbs=%u size=%" PRIu64, li.node, li.nr, li.direct_io, li.logical_block_size, li.size);
    CHECK(!fallback, "dio fell back on %s", img);
    CHECK(li.direct_io, "LoopInfo.direct_io");
    CHECK(sysfs_u64(li.devno, "loop/dio") == 1, "sysfs loop/dio");
    CHECK(major(li.devno) == 7, "major");
    CHECK(li.size == 64 * MIB, "size %" PRIu64, li.size);
    CHECK(streq(li.backing_file, img), "backing %s", li.backing_file);
    CHECK(!li.autoclear && !li.read_only, "flags");
    unsigned want_bs;
    CHECK_R(loop_choose_block_size(img, true, &want_bs));
    CHECK(li.logical_block_size == want_bs && want_bs >= 512, "lbs %u want %u", li.logical_block_size, want_bs);
    CHECK(sysfs_u64(li.devno, "queue/logical_block_size") == li.logical_block_size, "queue lbs");

    LoopInfo f = {};
    CHECK_R(loop_device_find_by_backing_file(img, &f));
    CHECK(streq(f.node, li.node) && f.devno == li.devno, "find: %s", f.node);
    loop_info_done(&f);

    /* Renamed backing file: sysfs still shows the old name, the inode
     * comparison finds it anyway. */
    CHECK(rename(img, moved) >= 0, "%m");
    CHECK_R(loop_device_find_by_backing_file(moved, &f));
    CHECK(streq(f.node, li.node), "find after rename: %s", f.node);
    loop_info_done(&f);
    char *other = wpath("other.img");
    make_file(other, MIB);
    CHECK(loop_device_find_by_backing_file(other, &f) == -ENOENT, "unattached file found");

    /* Grow the backing file, then the device. */
    CHECK(truncate(moved, (off_t) (128 * MIB)) >= 0, "%m");
    uint64_t size = 0;
    CHECK_R(loop_device_refresh_size(li.node, &size));
    CHECK(size == 128 * MIB, "refreshed size %" PRIu64, size);
    CHECK(sysfs_u64(li.devno, "size") * 512 == 128 * MIB, "sysfs size");

    /* The node is there (no udevd here: the kernel path). */
    CHECK_R(udev_wait_for_device(li.devno, li.node, 5 * USEC_PER_SEC));

    /* bdi limits: apply and read back. */
    BdiLimits b;
    CHECK_R(bdi_read_limits(li.devno, &b));
    note("bdi before: max_ratio=%d max_bytes=%" PRIu64 " strict=%d", b.max_ratio, b.max_bytes, b.strict_limit);
    WritebackLimits w = { .max_ratio = 7, .max_bytes = 0, .strict_limit = 1 };
    int r = bdi_apply_limits(li.devno, &w);
    if (r == -EOPNOTSUPP) {
        note("strict_limit not supported by this kernel, applying max_ratio alone");
        w.strict_limit = -1;
        r = bdi_apply_limits(li.devno, &w);
    }
    CHECK_R(r);
    CHECK_R(bdi_read_limits(li.devno, &b));
    CHECK(b.max_ratio == 7, "max_ratio %d", b.max_ratio);
    if (b.has_strict_limit)
        CHECK(b.strict_limit == 1, "strict_limit %d", b.strict_limit);
    if (b.has_max_bytes) {
        w = (WritebackLimits) { .max_ratio = -1, .max_bytes = 256 * MIB, .strict_limit = -1 };
        CHECK_R(bdi_apply_limits(li.devno, &w));
        CHECK_R(bdi_read_limits(li.devno, &b));
        note("bdi max_bytes asked 256MiB, kernel reports %" PRIu64, b.max_bytes);
        CHECK(b.max_bytes > 250 * MIB && b.max_bytes < 262 * MIB, "max_bytes %" PRIu64, b.max_bytes);
    }
    w = (WritebackLimits) { .max_ratio = 101, .max_bytes = 0, .strict_limit = -1 };
    CHECK(bdi_apply_limits(li.devno, &w) == -EINVAL, "max_ratio 101 accepted");
    /* The bdi belongs to the loop gendisk and outlives the attachment: put
     * the defaults back, or the next user of this loop device inherits our
     * limits (see docs/volumes-devices.md). */
    w = (WritebackLimits) { .max_ratio = 100, .max_bytes = 0, .strict_limit = b.has_strict_limit ? 0 : -1 };
    CHECK_R(bdi_apply_limits(li.devno, &w));

    /* Busy detach: someone holds the device open. LOOP_CLR_FD would just
     * arm autoclear; detach must say EBUSY and leave it as it was. */
    int hold = open(li.node, O_RDONLY | O_CLOEXEC);
    CHECK(hold >= 0, "%m");
    r = loop_device_detach(li.node);
    CHECK(r == -EBUSY, "detach while open: %d", r);
    CHECK_R(loop_device_get_info(li.node, &f));
    CHECK(!f.autoclear, "autoclear left armed");
    loop_info_done(&f);
    close(hold);

    CHECK_R(loop_device_detach(li.node));
    CHECK(loop_device_find_by_backing_file(moved, &f) == -ENOENT, "still found after detach");
    r = loop_device_get_info(li.node, &f);
    CHECK(r == -ENXIO || r == -ENOENT, "get_info after detach: %d", r);
    r = loop_device_detach(li.node);
    CHECK(r == -ENXIO || r == -ENOENT, "second detach: %d", r);
    loop_info_done(&li);
    free(img);
    free(moved);
    free(other);
}

/* ---- race: 2 processes x 8 threads attach at once ---- */
#define RACE_PROCS 2
#define RACE_THREADS 8

typedef struct RaceArg {
    char path[400];
    int gate;      /* read end: all threads start when it closes */
    int out;       /* write end: "devno path\n" lines */
    int r;
} RaceArg;

static void *race_thread(void *p) {
    RaceArg *a = p;
    char c;
    (void) !read(a->gate, &c, 1); /* blocks until the parent closes the gate */
    LoopAttachOptions o = { .direct_io = true };
    LoopInfo li = {};
    bool fb = false;
    a->r = loop_device_attach(a->path, &o, &li, &fb);
    if (a->r >= 0) {
        char line[512];
        int n = snprintf(line, sizeof line, "%u:%u %s %s\n", major(li.devno), minor(li.devno), li.node, a->path);
        (void) !write(a->out, line, (size_t) n); /* < PIPE_BUF: atomic */
        loop_info_done(&li);
    }
    return NULL;
}

static void test_race(void) {
    int gate[2], out[2];
    CHECK(pipe2(gate, O_CLOEXEC) >= 0 && pipe2(out, O_CLOEXEC) >= 0, "%m");
    pid_t pids[RACE_PROCS];
    for (int p = 0; p < RACE_PROCS; p++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/race%d", workdir, p);
        CHECK(mkdir(dir, 0700) >= 0, "%m");
        for (int t = 0; t < RACE_THREADS; t++) {
            char f[400];
            snprintf(f, sizeof f, "%s/%d.img", dir, t);
            make_file(f, 8 * MIB);
        }
        pids[p] = fork();
        CHECK(pids[p] >= 0, "%m");
        if (pids[p] == 0) {
            close(gate[1]);
            close(out[0]);
            RaceArg args[RACE_THREADS];
            pthread_t th[RACE_THREADS];
            for (int t = 0; t < RACE_THREADS; t++) {
                args[t] = (RaceArg) { .gate = gate[0], .out = out[1] };
                snprintf(args[t].path, sizeof args[t].path, "%s/%d.img", dir, t);
                if (pthread_create(&th[t], NULL, race_thread, &args[t]) != 0)
                    _exit(2);
            }
            int failed = 0;
            for (int t = 0; t < RACE_THREADS; t++) {
                pthread_join(th[t], NULL);
                if (args[t].r < 0) {
                    fprintf(stderr, "[race] attach %s: %s\n", args[t].path, strerror(-args[t].r));
                    failed++;
                }
            }
            _exit(failed ? 1 : 0);
        }
    }
    close(gate[0]);
    close(out[1]);
    close(gate[1]); /* go */

    char buf[16384];
    size_t len = 0;
    ssize_t k;
    while ((k = read(out[0], buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t) k;
    buf[len] = 0;
    close(out[0]);
    for (int p = 0; p < RACE_PROCS; p++) {
        int st;
        CHECK(waitpid(pids[p], &st, 0) == pids[p], "%m");
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "race process %d failed", p);
    }

    /* 16 lines, 16 distinct devices, each backed by the file it claims. */
    char *devs[RACE_PROCS * RACE_THREADS];
    int n = 0;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
        char dev[32], node[64], path[400];
        CHECK(sscanf(line, "%31s %63s %399s", dev, node, path) == 3, "line %s", line);
        for (int i = 0; i < n; i++)
            CHECK(!streq(devs[i], dev), "device %s handed out twice", dev);
        CHECK(n < RACE_PROCS * RACE_THREADS, "too many lines");
        devs[n++] = strdup(dev);
        LoopInfo f = {};
        CHECK_R(loop_device_find_by_backing_file(path, &f));
        CHECK(streq(f.node, node), "%s is on %s, not %s", path, f.node, node);
        CHECK(f.direct_io, "%s not dio", node);
        loop_info_done(&f);
    }
    CHECK(n == RACE_PROCS * RACE_THREADS, "%d attaches reported", n);
    note("%d concurrent attaches got %d distinct devices", n, n);
    for (int i = 0; i < n; i++)
        free(devs[i]);

    char **l = NULL;
    CHECK_R(loop_device_list_below(workdir, &l));
    CHECK(strv_length((const char *const *) l) == (size_t) n, "list_below %zu", strv_length((const char *const *) l));
    for (char **x = l; *x; x++)
        CHECK_R(loop_device_detach(*x));
    strv_free(l);
}

/* ---- probe: what counts as blank ---- */
static void expect_probe(const char *path, bool blank, const char *type) {
    ProbeResult p = {};
    CHECK_R(probe_path(path, &p));
    note("probe %s: blank=%d type=%s usage=%s uuid=%s label=%s", strrchr(path, '/') + 1, p.blank,
         p.type ?: "-", p.usage ?: "-", p.uuid ?: "-", p.label ?: "-");
    CHECK(p.blank == blank, "%s: blank=%d", path, p.blank);
    if (type)
        CHECK(p.type && streq(p.type, type), "%s: type %s, want %s", path, p.type ?: "(null)", type);
    probe_result_done(&p);
}

static void write_at(const char *path, off_t off, const void *data, size_t n) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    CHECK(fd >= 0 && pwrite(fd, data, n, off) == (ssize_t) n, "%m");
    close(fd);
}

static void test_probe(void) {
    char *blank = wpath("blank.img");
    make_file(blank, 64 * MIB);
    expect_probe(blank, true, NULL);

    /* Random data without a known signature: blank as far as blkid can see. */
    char *noise = wpath("noise.img");
    make_file(noise, 4 * MIB);
    unsigned char junk[65536];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = (unsigned char) (i * 7 + 13);
    write_at(noise, 8192, junk, sizeof junk);
    expect_probe(noise, true, NULL);

    char *ext4 = wpath("ext4.img");
    make_file(ext4, 64 * MIB);
    mkfs("ext4", ext4, "probe-ext4", "0b6c3a52-1b8e-4f6a-9d8e-8d1f0e2a7c11");
    expect_probe(ext4, false, "ext4");

    /* A damaged ext4 (superblock checksum wrong) is still someone's data. */
    char *bad = wpath("ext4-badcsum.img");
    char *cp[] = { "cp", "--sparse=always", ext4, bad, NULL };
    CHECK_R(run(cp, NULL));
    unsigned char x = 0x5a;
    write_at(bad, 1024 + 0x78, &x, 1); /* inside s_volume_name: csum now wrong */
    expect_probe(bad, false, NULL);

    if (access("/usr/sbin/mkfs.xfs", X_OK) >= 0 || access("/sbin/mkfs.xfs", X_OK) >= 0) {
        char *xfs = wpath("xfs.img");
        make_file(xfs, 320 * MIB);
        mkfs("xfs", xfs, "probe-xfs", "6f1d2a1c-7a53-4c2b-8f0e-3c9b2d4e5f60");
        expect_probe(xfs, false, "xfs");
        free(xfs);
    } else
        note("mkfs.xfs missing: xfs probe not run");

    /* A DOS partition table, written by hand (sfdisk is not installed on
     * the CI image): one Linux partition at LBA 2048, 0x55AA. */
    char *dos = wpath("dos.img");
    make_file(dos, 16 * MIB);
    unsigned char mbr[512] = {};
    unsigned char *e = mbr + 446;
    e[0] = 0x00;                                    /* not bootable */
    e[1] = 0xfe, e[2] = 0xff, e[3] = 0xff;          /* CHS: use LBA */
    e[4] = 0x83;                                    /* Linux */
    e[5] = 0xfe, e[6] = 0xff, e[7] = 0xff;
    uint32_t start = 2048, count = 16 * 2048 - 2048;
    memcpy(e + 8, &start, 4);
    memcpy(e + 12, &count, 4);
    uint32_t disk_id = 0x1234abcd;
    memcpy(mbr + 440, &disk_id, 4);
    mbr[510] = 0x55, mbr[511] = 0xaa;
    write_at(dos, 0, mbr, sizeof mbr);
    expect_probe(dos, false, "dos");

    char *swap = wpath("swap.img");
    make_file(swap, 16 * MIB);
    char *mkswap[] = { "mkswap", "-L", "probe-swap", swap, NULL };
    CHECK_R(run(mkswap, NULL));
    expect_probe(swap, false, "swap");

    /* Two contradicting signatures (ext4 + a swap signature at the end of
     * the first page): ambivalent or not, it must not be blank. */
    char *both = wpath("ambivalent.img");
    char *cp2[] = { "cp", "--sparse=always", ext4, both, NULL };
    CHECK_R(run(cp2, NULL));
    long pg = sysconf(_SC_PAGESIZE);
    write_at(both, pg - 10, "SWAPSPACE2", 10);
    expect_probe(both, false, NULL);

    if (access("/usr/sbin/cryptsetup", X_OK) >= 0 || access("/sbin/cryptsetup", X_OK) >= 0) {
        char *luks = wpath("luks.img");
        make_file(luks, 32 * MIB);
        char *pf = wpath("pass");
        int fd = open(pf, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        CHECK(fd >= 0 && write(fd, "pw", 2) == 2, "%m");
        close(fd);
        char *fmt[] = { "cryptsetup", "luksFormat", "-q", "--type", "luks2", "--pbkdf", "pbkdf2",
                        "--pbkdf-force-iterations", "1000", "--key-file", pf, luks, NULL };
        CHECK_R(run(fmt, NULL));
        expect_probe(luks, false, "crypto_LUKS");
        free(luks);
        free(pf);
    } else
        note("cryptsetup not installed: LUKS case not run (optional)");

    ProbeResult p = {};
    CHECK(probe_path("/nonexistent/x", &p) == -ENOENT, "probe of a missing file");
    free(blank);
    free(noise);
    free(ext4);
    free(bad);
    free(dos);
    free(swap);
    free(both);
}

/* ---- mkfs via the runner on a loop device; probe sees uuid/label ---- */
static void mkfs_on_loop(const char *fstype, uint64_t size, const char *label, const char *uuid) {
    char name[64];
    snprintf(name, sizeof name, "mkfs-%s.img", fstype);
    char *img = wpath(name);
    make_file(img, size);
    LoopAttachOptions o = { .direct_io = true };
    LoopInfo li = {};
    bool fb = false;
    CHECK_R(loop_device_attach(img, &o, &li, &fb));
    CHECK(!fb && li.direct_io, "dio");
    CHECK_R(udev_wait_for_device(li.devno, li.node, 5 * USEC_PER_SEC));
    ProbeResult p = {};
    CHECK_R(probe_path(li.node, &p));
    CHECK(p.blank, "fresh loop not blank");
    probe_result_done(&p);

    mkfs(fstype, li.node, label, uuid);
    CHECK_R(probe_path(li.node, &p));
    note("%s on %s: type=%s uuid=%s label=%s", fstype, li.node, p.type, p.uuid, p.label);
    CHECK(!p.blank && streq_ptr(p.type, fstype), "type %s", p.type);
    CHECK(streq_ptr(p.uuid, uuid), "uuid %s", p.uuid);
    CHECK(streq_ptr(p.label, label), "label %s", p.label);
    probe_result_done(&p);

    /* Never forced: mkfs.xfs refuses an existing signature without -f. */
    if (streq(fstype, "xfs")) {
        char **argv = NULL;
        char *out = NULL;
        CHECK_R(mkfs_build_argv("xfs", li.node, NULL, NULL, NULL, &argv));
        int r = run(argv, &out);
        CHECK(r == -EPROTO, "mkfs.xfs over xfs without -f: %d", r);
        CHECK(out && strstr(out, "existing filesystem"), "output: %s", out ?: "");
        free(out);
        strv_free(argv);
    }
    CHECK_R(loop_device_detach(li.node));
    loop_info_done(&li);
    free(img);
}

/* assume_storage_prezeroed on a fresh sparse file: the filesystem checks
 * clean (the contract that makes the option safe there), and the backing
 * file stays sparse. */
static void mkfs_prezeroed(void) {
    char *img = wpath("prezeroed.img");
    make_file(img, 1 * GIB);
    LoopInfo li = {};
    CHECK_R(loop_device_attach(img, &(LoopAttachOptions) { .direct_io = true }, &li, NULL));
    char **argv = NULL;
    CHECK_R(mkfs_build_argv_prezeroed("ext4", li.node, "pz", NULL, NULL, &argv));
    CHECK_R(run(argv, NULL));
    strv_free(argv);
    char *fsck[] = { "e2fsck", "-fn", li.node, NULL };
    CHECK_R(run(fsck, NULL));
    struct stat st;
    CHECK(stat(img, &st) >= 0, "%m");
    note("prezeroed ext4 on 1 GiB: %lld KiB allocated", (long long) st.st_blocks / 2);
    CHECK((uint64_t) st.st_blocks * 512 < 16 * MIB, "backing file no longer sparse");
    CHECK_R(loop_device_detach(li.node));
    loop_info_done(&li);
    free(img);
}

static void test_mkfs(void) {
    mkfs_prezeroed();
    mkfs_on_loop("ext4", 256 * MIB, "vol-ext4", "3f2a1b4c-5d6e-4f70-8a9b-0c1d2e3f4a5b");
    if (access("/usr/sbin/mkfs.xfs", X_OK) >= 0 || access("/sbin/mkfs.xfs", X_OK) >= 0)
        mkfs_on_loop("xfs", 512 * MIB, "vol-xfs", "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d");
    else
        note("mkfs.xfs missing: the XFS case was not run");
}

/* ---- mount, find, busy unmount with holders ---- */
static void test_mount(void) {
    char *img = wpath("mnt.img"), *target = wpath("mnt/vol");
    make_file(img, 128 * MIB);
    LoopAttachOptions o = { .direct_io = true };
    LoopInfo li = {};
    CHECK_R(loop_device_attach(img, &o, &li, NULL));
    mkfs("ext4", li.node, "mnt", NULL);

    CHECK_R(mount_volume(li.node, target, "ext4", "noatime"));
    MountInfo m = {};
    CHECK_R(mount_find_by_target(target, &m));
    CHECK(m.devno == li.devno && streq_ptr(m.fstype, "ext4") && m.id > 0, "mountinfo %s", m.fstype);
    CHECK(m.options && strstr(m.options, "noatime"), "options %s", m.options);
    CHECK(streq_ptr(m.source, li.node), "source %s", m.source);
    mount_info_done(&m);
    CHECK_R(mount_find_by_devno(li.devno, &m));
    CHECK(streq(m.target, target), "by devno: %s", m.target);
    mount_info_done(&m);

    /* Mounted: the loop device cannot be detached, the mount not doubled. */
    CHECK(loop_device_detach(li.node) == -EBUSY, "detach of a mounted loop");
    LoopInfo again = {};
    CHECK_R(loop_device_get_info(li.node, &again));
    CHECK(!again.autoclear && again.devno == li.devno, "autoclear armed by a failed detach");
    loop_info_done(&again);
    CHECK(mount_volume(li.node, target, "ext4", NULL) == -EBUSY, "double mount");

    /* Busy: hold a file open below the target. */
    char *file = wpath("mnt/vol/held");
    int fd = open(file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    CHECK(fd >= 0, "%m");
    char **holders = NULL;
    int r = mount_unmount(target, false, &holders);
    CHECK(r == -EBUSY, "unmount while held: %d", r);
    CHECK(holders, "no holders list");
    char me[32];
    snprintf(me, sizeof me, "%d ", (int) getpid());
    bool found = false;
    for (char **h = holders; *h; h++) {
        note("holder: %s", *h);
        if (strncmp(*h, me, strlen(me)) == 0)
            found = true;
    }
    CHECK(found, "our pid %d not among the holders", (int) getpid());
    strv_free(holders);
    CHECK_R(mount_find_by_target(target, &m)); /* still mounted, not lazily gone */
    mount_info_done(&m);

    close(fd);
    CHECK_R(mount_unmount(target, false, NULL));
    CHECK(mount_find_by_target(target, &m) == -ENOENT, "still mounted");
    CHECK(mount_unmount(target, false, NULL) == -ENOENT, "unmount of a non-mount");
    CHECK(mount_find_by_devno(li.devno, &m) == -ENOENT, "devno still mounted");

    /* A bad fstype is an error with an errno, and leaves nothing. */
    r = mount_volume(li.node, target, "xfs", NULL);
    CHECK(r < 0, "ext4 mounted as xfs");
    note("mount as wrong fstype: %s", strerror(-r));
    CHECK(mount_find_by_target(target, &m) == -ENOENT, "wrong mount left behind");

    CHECK_R(loop_device_detach(li.node));
    loop_info_done(&li);
    free(img);
    free(target);
    free(file);
}

/* ---- DIO fallback, both ways the kernel can refuse ---- */
static void test_fallback(void) {
    /* 1. A filesystem that refuses O_DIRECT outright: ramfs has no
     *    direct_IO (tmpfs gained O_DIRECT in 6.6, so it is no good here). */
    char *rdir = wpath("ramfs");
    CHECK(mkdir(rdir, 0700) >= 0, "%m");
    if (mount("layoutd-test", rdir, "ramfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0) {
        note("cannot mount ramfs (%m): case 1 not run");
    } else {
        char *img = wpath("ramfs/r.img");
        make_file(img, 8 * MIB);
        int t = open(img, O_RDWR | O_DIRECT | O_CLOEXEC);
        CHECK(t < 0 && errno == EINVAL, "ramfs accepted O_DIRECT: the premise of this case is gone");
        LoopAttachOptions o = { .direct_io = true };
        LoopInfo li = {};
        bool fb = false;
        CHECK_R(loop_device_attach(img, &o, &li, &fb));
        note("ramfs: %s dio=%d fallback=%d", li.node, li.direct_io, fb);
        CHECK(fb, "fallback not reported");
        CHECK(!li.direct_io && sysfs_u64(li.devno, "loop/dio") == 0, "dio claimed on ramfs");
        CHECK_R(loop_device_detach(li.node));
        loop_info_done(&li);
        free(img);
    }

    /* 2. O_DIRECT works, but the kernel drops DIO silently because the
     *    loop's sector (512, forced) is below the backing filesystem's
     *    direct-I/O alignment (4096: an ext4 on a 4K-sector loop device).
     *    Only reading the flag back catches this. */
    char *base = wpath("base.img"), *bmnt = wpath("base");
    make_file(base, 256 * MIB);
    LoopAttachOptions o4k = { .direct_io = true, .block_size = 4096 };
    LoopInfo lb = {};
    CHECK_R(loop_device_attach(base, &o4k, &lb, NULL));
    CHECK(lb.logical_block_size == 4096, "base lbs %u", lb.logical_block_size);
    mkfs("ext4", lb.node, NULL, NULL);
    CHECK_R(mount_volume(lb.node, bmnt, "ext4", NULL));
    char *inner = wpath("base/inner.img");
    make_file(inner, 32 * MIB);

    LoopAttachOptions o512 = { .direct_io = true, .block_size = 512 };
    LoopInfo li = {};
    bool fb = false;
    CHECK_R(loop_device_attach(inner, &o512, &li, &fb));
    note("512 on 4K: %s dio=%d fallback=%d lbs=%u", li.node, li.direct_io, fb, li.logical_block_size);
    CHECK(fb == !li.direct_io, "fallback flag disagrees with the kernel");
    CHECK(sysfs_u64(li.devno, "loop/dio") == (li.direct_io ? 1u : 0u), "sysfs dio disagrees");
    if (li.direct_io)
        note("this kernel does DIO with a 512 sector on a 4K-aligned fs: silent-drop path not reachable");
    else
        CHECK(fb, "silently buffered");
    CHECK_R(loop_device_detach(li.node));
    loop_info_done(&li);

    /* The chooser picks a block size at which DIO does take. */
    LoopAttachOptions oauto = { .direct_io = true };
    CHECK_R(loop_device_attach(inner, &oauto, &li, &fb));
    note("auto on 4K: %s dio=%d fallback=%d lbs=%u", li.node, li.direct_io, fb, li.logical_block_size);
    CHECK(!fb && li.direct_io && li.logical_block_size == 4096, "auto block size");
    CHECK_R(loop_device_detach(li.node));
    loop_info_done(&li);

    CHECK_R(mount_unmount(bmnt, false, NULL));
    CHECK_R(loop_device_detach(lb.node));
    loop_info_done(&lb);
    free(rdir);
    free(base);
    free(bmnt);
    free(inner);
}

/* ---- udev: the path this machine has (no udevd) ---- */
static void test_udev(void) {
    bool running = udev_is_running();
    note("udevd running: %s", running ? "yes" : "no");
    char *img = wpath("udev.img");
    make_file(img, 8 * MIB);
    LoopInfo li = {};
    CHECK_R(loop_device_attach(img, &(LoopAttachOptions) { .direct_io = true }, &li, NULL));
    CHECK_R(udev_wait_for_device(li.devno, li.node, 5 * USEC_PER_SEC));
    CHECK_R(udev_wait_for_device(li.devno, NULL, 5 * USEC_PER_SEC));
    /* A devnode with the wrong rdev never becomes ready. */
    char *fake = wpath("fake-node");
    CHECK(mknod(fake, S_IFBLK | 0600, makedev(7, 1000000)) >= 0, "%m");
    if (!running)
        CHECK(udev_wait_for_device(li.devno, fake, 200 * USEC_PER_MSEC) == -ETIMEDOUT, "wrong rdev accepted");
    CHECK(udev_wait_for_device(makedev(7, 999999), NULL, 100 * USEC_PER_MSEC) == -ETIMEDOUT,
          "missing device accepted");
    CHECK_R(loop_device_detach(li.node));
    loop_info_done(&li);
    free(img);
    free(fake);
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    { "loop", test_loop }, { "race", test_race }, { "probe", test_probe }, { "mkfs", test_mkfs },
    { "mount", test_mount }, { "fallback", test_fallback }, { "udev", test_udev },
};

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s <case>\n", argv[0]);
        return 2;
    }
    test_name = argv[1];
    if (geteuid() != 0) {
        note("SKIP: needs root");
        return 77;
    }
    if (access("/dev/loop-control", F_OK) < 0) {
        note("SKIP: no /dev/loop-control");
        return 77;
    }
    main_pid = getpid();
    CHECK(mkdtemp(workdir), "mkdtemp: %m");
    have_workdir = true;
    atexit(cleanup);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    for (size_t i = 0; i < ELEMENTSOF(cases); i++)
        if (streq(cases[i].name, argv[1])) {
            cases[i].fn();
            note("PASS");
            return 0;
        }
    fprintf(stderr, "unknown case %s\n", argv[1]);
    return 2;
}
