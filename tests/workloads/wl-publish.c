/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * wl-publish: the writing half of a build's publish step, and the
 * checksums it must produce.
 *
 *   wl-publish write --dir STAGE --publish-to FINAL --files N --artifact-mib M [--seed S] [--write-size B]
 *   wl-publish manifest --files N --artifact-mib M [--seed S]
 *
 * write: N generated files STAGE/gen/NNN.dat (1-64 KiB each), then the
 * artifact as a build tool writes it: STAGE/artifact.bin.tmp in B-byte
 * write()s (default 1 KiB, so a FUSE mount without writeback cache sees
 * one WRITE per call), fsync, rename to STAGE/artifact.bin, fsync of
 * STAGE; then the atomic publish: rename STAGE to FINAL and fsync of
 * FINAL's parent. Prints one JSON object with the time of each step.
 *
 * manifest: the sha256 of every file write makes, computed in memory, as
 * `sha256sum` lines relative to FINAL, so `sha256sum -c` checks what the
 * filesystem gives back against what was meant to be written.
 *
 * Contents are a splitmix64 stream seeded by (seed, file index): the same
 * bytes every run, different in every file (no deduplication by accident).
 * Exit status: 0 done, 1 a system call failed (named on stderr), 2 usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "macro.h"

typedef struct {
    uint64_t s;
} Stream;

static uint64_t stream_next(Stream *st) {
    uint64_t z = (st->s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void stream_fill(Stream *st, unsigned char *buf, size_t n) {
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = stream_next(st);
        memcpy(buf + i, &v, MIN((size_t) 8, n - i));
    }
}

static Stream stream_for(uint64_t seed, uint64_t index) {
    Stream st = { seed * 1000003ULL + index };
    (void) stream_next(&st);
    return st;
}

/* Index N is the artifact; 0..N-1 the generated files. */
static size_t gen_size(uint64_t seed, unsigned i) {
    Stream st = stream_for(seed ^ 0x5bd1e995ULL, i);
    return 1024 + (stream_next(&st) % 64) * 1024 - (stream_next(&st) % 1024);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *op, const char *path) {
    fprintf(stderr, "wl-publish: %s %s: %s (%s)\n", op, path, strerror(errno), strerrorname_np(errno) ?: "?");
    return 1;
}

static int write_all(int fd, const unsigned char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0)
            return -errno;
        p += w;
        n -= w;
    }
    return 0;
}

static int fsync_path(const char *path) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || fsync(fd) < 0)
        return -errno;
    return 0;
}

static int do_write(const char *stage, const char *final, unsigned nfiles, unsigned mib, uint64_t seed,
                    size_t wsize) {
    char path[4096], tmp[4096];
    unsigned char buf[64 * 1024];
    double t0 = now_s();

    snprintf(path, sizeof path, "%s/gen", stage);
    if (mkdir(path, 0755) < 0 && errno != EEXIST)
        return die("mkdir", path);
    for (unsigned i = 0; i < nfiles; i++) {
        size_t size = gen_size(seed, i);
        Stream st = stream_for(seed, i);
        stream_fill(&st, buf, size);
        snprintf(path, sizeof path, "%s/gen/%03u.dat", stage, i);
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            return die("open", path);
        if ((errno = -write_all(fd, buf, size)) != 0)
            return die("write", path);
        if (close(TAKE_FD(fd)) < 0)
            return die("close", path);
    }
    double t1 = now_s();

    snprintf(tmp, sizeof tmp, "%s/artifact.bin.tmp", stage);
    snprintf(path, sizeof path, "%s/artifact.bin", stage);
    _cleanup_close_ int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return die("open", tmp);
    Stream st = stream_for(seed, nfiles);
    uint64_t total = (uint64_t) mib << 20, writes = 0;
    for (uint64_t done = 0; done < total;) {
        size_t chunk = MIN(sizeof buf, total - done);
        stream_fill(&st, buf, chunk);
        for (size_t off = 0; off < chunk; off += wsize, writes++) {
            size_t n = MIN(wsize, chunk - off);
            if ((errno = -write_all(fd, buf + off, n)) != 0)
                return die("write", tmp);
        }
        done += chunk;
    }
    double t2 = now_s();
    if (fsync(fd) < 0)
        return die("fsync", tmp);
    if (close(TAKE_FD(fd)) < 0)
        return die("close", tmp);
    double t3 = now_s();
    if (rename(tmp, path) < 0)
        return die("rename", tmp);
    if ((errno = -fsync_path(stage)) != 0)
        return die("fsync (directory)", stage);
    if (rename(stage, final) < 0)
        return die("rename", stage);
    char parent[4096];
    snprintf(parent, sizeof parent, "%s", final);
    if ((errno = -fsync_path(dirname(parent))) != 0)
        return die("fsync (directory)", final);
    double t4 = now_s();
    printf("{\"files\":%u,\"artifact_bytes\":%" PRIu64 ",\"artifact_writes\":%" PRIu64 ",\"write_size\":%zu,"
           "\"seconds\":{\"generated\":%.3f,\"artifact_write\":%.3f,\"fsync\":%.3f,\"rename_dirfsync\":%.3f}}\n",
           nfiles, total, writes, wsize, t1 - t0, t2 - t1, t3 - t2, t4 - t3);
    return 0;
}

static void print_digest(EVP_MD_CTX *ctx, const char *name) {
    unsigned char md[32];
    EVP_DigestFinal_ex(ctx, md, NULL);
    for (int i = 0; i < 32; i++)
        printf("%02x", md[i]);
    printf("  %s\n", name);
}

static int do_manifest(unsigned nfiles, unsigned mib, uint64_t seed) {
    unsigned char buf[64 * 1024];
    char name[64];
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (!ctx)
        return 1;
    for (unsigned i = 0; i < nfiles; i++) {
        size_t size = gen_size(seed, i);
        Stream st = stream_for(seed, i);
        stream_fill(&st, buf, size);
        EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
        EVP_DigestUpdate(ctx, buf, size);
        snprintf(name, sizeof name, "gen/%03u.dat", i);
        print_digest(ctx, name);
    }
    Stream st = stream_for(seed, nfiles);
    EVP_DigestInit_ex(ctx, EVP_sha256(), NULL);
    for (uint64_t done = 0, total = (uint64_t) mib << 20; done < total;) {
        size_t chunk = MIN(sizeof buf, total - done);
        stream_fill(&st, buf, chunk);
        EVP_DigestUpdate(ctx, buf, chunk);
        done += chunk;
    }
    print_digest(ctx, "artifact.bin");
    EVP_MD_CTX_free(ctx);
    return 0;
}

static int usage(void) {
    fprintf(stderr, "usage: wl-publish write --dir STAGE --publish-to FINAL --files N --artifact-mib M [--seed S] "
                    "[--write-size B]\n"
                    "       wl-publish manifest --files N --artifact-mib M [--seed S]\n");
    return 2;
}

int main(int argc, char **argv) {
    static const struct option opts[] = {
        { "dir", required_argument, NULL, 'd' },          { "publish-to", required_argument, NULL, 'p' },
        { "files", required_argument, NULL, 'n' },        { "artifact-mib", required_argument, NULL, 'm' },
        { "seed", required_argument, NULL, 's' },         { "write-size", required_argument, NULL, 'w' },
        { 0 },
    };
    const char *stage = NULL, *final = NULL;
    long nfiles = -1, mib = -1, wsize = 1024;
    uint64_t seed = 1;
    if (argc < 2)
        return usage();
    optind = 2;
    for (int c; (c = getopt_long(argc, argv, "", opts, NULL)) != -1;) {
        switch (c) {
        case 'd': stage = optarg; break;
        case 'p': final = optarg; break;
        case 'n': nfiles = strtol(optarg, NULL, 10); break;
        case 'm': mib = strtol(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'w': wsize = strtol(optarg, NULL, 10); break;
        default: return usage();
        }
    }
    if (optind != argc || nfiles < 0 || nfiles > 1000 || mib < 0 || wsize < 1 || wsize > 65536)
        return usage();
    if (streq(argv[1], "write")) {
        if (!stage || !final)
            return usage();
        return do_write(stage, final, nfiles, mib, seed, wsize);
    }
    if (streq(argv[1], "manifest"))
        return do_manifest(nfiles, mib, seed);
    return usage();
}
