/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* FUSE over io_uring for libfuse 3.14 (--io-uring=on; issue 20, direction 6).
 *
 * Why: each FUSE request over /dev/fuse wakes a daemon thread wherever the
 * scheduler puts it, and the reply wakes the caller back; on a VM whose
 * other vCPU is halted that wake-up is most of a metadata request's cost
 * (docs/benchmarks.md, "An install's file-system work"). The kernel's
 * io_uring transport (6.14+) keeps one queue per CPU and hands a request to
 * the queue of the CPU that made it, whose thread here is pinned to it.
 *
 * libfuse 3.14 has no io_uring transport. This adds one beside its session
 * loop through the custom-I/O hook:
 *  - read(): /dev/fuse as before; it notes the FUSE_INIT request;
 *  - writev(): the INIT reply gets FUSE_OVER_IO_URING (flags2 bit 9) and,
 *    once the kernel took it, one thread per possible CPU starts, pinned,
 *    each with its own ring of D entries (REGISTER); a reply whose unique
 *    belongs to a ring entry is copied into that entry and committed
 *    (COMMIT_AND_FETCH); everything else (INIT, FORGET-less replies from
 *    before the ring is ready, notifications, INTERRUPT) goes to /dev/fuse.
 * A request from the ring is reassembled into /dev/fuse's wire format
 * (in header, the op's own header, the payload) and handed to
 * fuse_session_process_buf(), so every handler runs unchanged.
 *
 * Needs /sys/module/fuse/parameters/enable_uring = 1; without it the kernel
 * ignores the flag and everything stays on /dev/fuse. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <liburing.h>

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>

#include "uring.h"

/* The kernel's ABI (include/uapi/linux/fuse.h, 7.42): Debian's headers are
 * older, so the parts used here are spelled out. */
#define K_FUSE_INIT 26
#define K_FUSE_OVER_IO_URING_HI (1u << 9) /* bit 41 of the 64-bit flags: flags2 bit 9 */
#define K_FUSE_INIT_EXT (1u << 30)
#define K_CMD_REGISTER 1
#define K_CMD_COMMIT_AND_FETCH 2

struct k_in_header {
    uint32_t len, opcode;
    uint64_t unique, nodeid;
    uint32_t uid, gid, pid;
    uint16_t total_extlen, padding;
};
struct k_out_header {
    uint32_t len;
    int32_t error;
    uint64_t unique;
};
struct k_init_out { /* up to flags2 */
    uint32_t major, minor, max_readahead, flags;
    uint16_t max_background, congestion_threshold;
    uint32_t max_write, time_gran;
    uint16_t max_pages, map_alignment;
    uint32_t flags2;
};
struct k_ent_in_out {
    uint64_t flags, commit_id;
    uint32_t payload_sz, padding;
    uint64_t reserved;
};
struct k_req_header {
    char in_out[128];
    char op_in[128];
    struct k_ent_in_out ent;
};
struct k_cmd_req {
    uint64_t flags, commit_id;
    uint16_t qid;
    uint8_t padding[6];
};

/* Entries per queue: requests a CPU's queue holds at once. */
#define DEPTH 4
/* The kernel wants room for its largest request or reply: max_write and
 * max_pages are 1 MiB under libfuse 3.14's defaults; the rest is slack.
 * The buffers are not populated up front, so an entry costs what its
 * largest request touched. */
#define PAYLOAD ((size_t) (1u << 20) + 65536)

struct uq;
struct ent {
    struct uq *q;
    struct k_req_header *hdr;
    char *payload;
    char *wire; /* the request in /dev/fuse's format */
    struct iovec iov[2];
    uint64_t commit_id;
    uint32_t last_op;        /* the command last submitted for it (resubmitted on EAGAIN/EINTR) */
    _Atomic uint64_t unique; /* the request it holds, 0 when none */
};
struct uq {
    int qid;
    bool running; /* its thread was created */
    pthread_t tid;
    struct io_uring ring;
    pthread_mutex_t lock; /* the SQ: repliers on other threads submit too */
    struct ent ent[DEPTH];
};

static struct {
    struct fuse_session *se;
    int devfd; /* a dup of the session's /dev/fuse fd: the unmount closes the session's */
    int nq;
    struct uq *q;
    _Atomic uint64_t init_unique;
    _Atomic int started;
    _Atomic uint64_t served; /* requests that came through a ring */
} U;

/* A ring that cannot go on would leave its CPU's callers waiting forever:
 * the kernel keeps handing that CPU's requests to its queue. End the
 * daemon instead (libfuse's SIGTERM handler stops the loop and unmounts);
 * the agent restarts it. */
static void fatal(int qid, const char *what, int err) {
    fprintf(stderr, "layoutd-wsfs: io_uring: queue %d: %s: %s; stopping the daemon\n", qid, what, strerror(err));
    kill(getpid(), SIGTERM);
}

static ssize_t dev_read(int fd, void *buf, size_t len, void *ud) {
    (void) ud;
    ssize_t n = read(fd, buf, len);
    if (n >= (ssize_t) sizeof(struct k_in_header)) {
        const struct k_in_header *in = buf;
        if (in->opcode == K_FUSE_INIT)
            atomic_store(&U.init_unique, in->unique);
    }
    return n;
}

static struct ent *ent_of(uint64_t unique) {
    for (int i = 0; i < U.nq; i++)
        for (int k = 0; k < DEPTH; k++)
            if (atomic_load(&U.q[i].ent[k].unique) == unique)
                return &U.q[i].ent[k];
    return NULL;
}

static void sqe_cmd(struct io_uring_sqe *sqe, struct ent *e, uint32_t op, uint64_t commit_id) {
    e->last_op = op;
    memset(sqe, 0, 128);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = U.devfd;
    sqe->cmd_op = op;
    sqe->user_data = (uint64_t) (uintptr_t) e;
    struct k_cmd_req *c = (struct k_cmd_req *) sqe->cmd;
    c->qid = (uint16_t) e->q->qid;
    c->commit_id = commit_id;
    if (op == K_CMD_REGISTER) {
        sqe->addr = (uint64_t) (uintptr_t) e->iov;
        sqe->len = 2;
    }
}

/* Submits the entry's command again (a completion said EAGAIN or EINTR). */
static void resubmit(struct ent *e) {
    pthread_mutex_lock(&e->q->lock);
    struct io_uring_sqe *sqe = io_uring_get_sqe(&e->q->ring);
    int r = -EBUSY;
    if (sqe) {
        sqe_cmd(sqe, e, e->last_op, e->last_op == K_CMD_REGISTER ? 0 : e->commit_id);
        r = io_uring_submit(&e->q->ring);
    }
    pthread_mutex_unlock(&e->q->lock);
    if (r < 0)
        fatal(e->q->qid, "resubmit", -r);
}

/* Puts a reply into its entry and commits it. Every request taken from a
 * ring gets a commit, or its caller would wait forever: a reply that does
 * not fit goes back as EIO. Returns the reply's length, as writev would. */
static ssize_t commit(struct ent *e, const struct iovec *iov, int count) {
    const struct k_out_header *oh = iov[0].iov_base;
    struct k_out_header *out = (struct k_out_header *) e->hdr->in_out;
    size_t len = 0;
    out->error = oh->error;
    for (int i = 1; i < count; i++) {
        if (len + iov[i].iov_len > PAYLOAD) {
            len = 0;
            out->error = -EIO;
            break;
        }
        memcpy(e->payload + len, iov[i].iov_base, iov[i].iov_len);
        len += iov[i].iov_len;
    }
    out->len = (uint32_t) len;
    out->unique = oh->unique;
    e->hdr->ent.payload_sz = (uint32_t) len;
    atomic_store(&e->unique, 0);
    pthread_mutex_lock(&e->q->lock);
    /* The SQ has room: it holds 2 * DEPTH, and an entry has at most one
     * command in flight (plus the stop's NOP). */
    struct io_uring_sqe *sqe = io_uring_get_sqe(&e->q->ring);
    int r = -EBUSY;
    if (sqe) {
        sqe_cmd(sqe, e, K_CMD_COMMIT_AND_FETCH, e->commit_id);
        r = io_uring_submit(&e->q->ring);
    }
    pthread_mutex_unlock(&e->q->lock);
    if (r < 0) {
        fatal(e->q->qid, "commit", -r);
        errno = -r;
        return -1;
    }
    return (ssize_t) (iov[0].iov_len + len);
}

static void *queue_main(void *arg);

static ssize_t dev_writev(int fd, struct iovec *iov, int count, void *ud) {
    (void) ud;
    struct k_out_header *oh = iov[0].iov_base;
    if (oh->unique != 0) {
        struct ent *e = ent_of(oh->unique);
        if (e)
            return commit(e, iov, count);
    }
    bool init = oh->unique != 0 && oh->unique == atomic_load(&U.init_unique) && oh->error == 0 && count >= 2 &&
                iov[1].iov_len >= sizeof(struct k_init_out);
    if (init) {
        struct k_init_out *o = iov[1].iov_base;
        if (o->flags & K_FUSE_INIT_EXT)
            o->flags2 |= K_FUSE_OVER_IO_URING_HI;
        else
            init = false;
    }
    ssize_t r = writev(fd, iov, count);
    if (init && r >= 0 && !atomic_exchange(&U.started, 1)) {
        /* The kernel now holds every new request until each queue has an
         * entry, so a queue without its thread would hang the mount. The
         * threads take no signals: SIGTERM must reach the loop's thread. */
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        for (int i = 0; i < U.nq; i++) {
            int err = pthread_create(&U.q[i].tid, NULL, queue_main, &U.q[i]);
            if (err != 0) {
                fatal(i, "thread", err);
                break;
            }
            U.q[i].running = true;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    return r;
}

static void handle(struct ent *e) {
    const struct k_in_header *in = (const struct k_in_header *) e->hdr->in_out;
    e->commit_id = e->hdr->ent.commit_id;
    size_t pay = e->hdr->ent.payload_sz;
    size_t opsz = in->len >= sizeof(*in) + pay ? in->len - sizeof(*in) - pay : SIZE_MAX;
    if (opsz > sizeof(e->hdr->op_in) || pay > PAYLOAD) {
        struct k_out_header oh = { .len = sizeof(oh), .error = -EIO, .unique = in->unique };
        struct iovec v = { &oh, sizeof(oh) };
        atomic_store(&e->unique, in->unique);
        commit(e, &v, 1);
        return;
    }
    memcpy(e->wire, in, sizeof(*in));
    memcpy(e->wire + sizeof(*in), e->hdr->op_in, opsz);
    memcpy(e->wire + sizeof(*in) + opsz, e->payload, pay);
    atomic_store(&e->unique, in->unique);
    atomic_fetch_add(&U.served, 1);
    struct fuse_buf b = { .mem = e->wire, .size = in->len };
    fuse_session_process_buf(U.se, &b);
}

static void *queue_main(void *arg) {
    struct uq *q = arg;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(q->qid, &set);
    sched_setaffinity(0, sizeof(set), &set);
    pthread_mutex_lock(&q->lock);
    for (int k = 0; k < DEPTH; k++) {
        struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
        if (!sqe)
            break;
        sqe_cmd(sqe, &q->ent[k], K_CMD_REGISTER, 0);
    }
    int r = io_uring_submit(&q->ring);
    pthread_mutex_unlock(&q->lock);
    if (r < 0) {
        fatal(q->qid, "register", -r);
        return NULL;
    }
    for (;;) {
        struct io_uring_cqe *cqe;
        r = io_uring_wait_cqe(&q->ring, &cqe);
        if (r == -EINTR)
            continue;
        if (r < 0)
            break;
        struct ent *e = io_uring_cqe_get_data(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&q->ring, cqe);
        if (!e) /* the stop's wake-up */
            break;
        if (res == -EAGAIN || res == -EINTR) {
            resubmit(e);
            continue;
        }
        if (res < 0) {
            /* EOPNOTSUPP at REGISTER: the kernel does not offer it
             * (enable_uring off) and every request stays on /dev/fuse.
             * ENOTCONN, ECONNABORTED: unmounted or aborted. Anything else
             * leaves this CPU's queue short of an entry for good. */
            if (res == -EOPNOTSUPP && e->last_op == K_CMD_REGISTER) {
                if (q->qid == 0 && e == &q->ent[0])
                    fprintf(stderr, "layoutd-wsfs: io_uring: the kernel refused the queues (is "
                                    "/sys/module/fuse/parameters/enable_uring Y?); serving over /dev/fuse\n");
                continue; /* the other entries' refusals */
            }
            if (res != -ENOTCONN && res != -ECONNABORTED)
                fatal(q->qid, e->last_op == K_CMD_REGISTER ? "register" : "commit and fetch", -res);
            break;
        }
        handle(e);
    }
    return NULL;
}

/* The kernel keeps one queue per possible CPU (nr_cpu_ids), and all of
 * them must be registered: count them as it does, from the possible mask
 * ("0-3", "0,2-5"), not from the CPUs online or configured. */
static int possible_cpus(void) {
    FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
    char line[256];
    int max = -1;
    if (f && fgets(line, sizeof(line), f))
        for (char *t = strtok(line, ",\n"); t; t = strtok(NULL, ",\n")) {
            char *dash = strchr(t, '-');
            int hi = atoi(dash ? dash + 1 : t);
            max = hi > max ? hi : max;
        }
    if (f)
        fclose(f);
    return max >= 0 ? max + 1 : (int) sysconf(_SC_NPROCESSORS_CONF);
}

static void free_all(void) {
    for (int i = 0; U.q && i < U.nq; i++) {
        struct uq *q = &U.q[i];
        if (q->ring.ring_fd > 0)
            io_uring_queue_exit(&q->ring);
        for (int k = 0; k < DEPTH; k++) {
            struct ent *e = &q->ent[k];
            if (e->hdr && e->hdr != MAP_FAILED)
                munmap(e->hdr, 4096);
            if (e->payload && e->payload != MAP_FAILED)
                munmap(e->payload, PAYLOAD);
            free(e->wire);
        }
        pthread_mutex_destroy(&q->lock);
    }
    U.nq = 0; /* ent_of() finds nothing from now on */
    free(U.q);
    U.q = NULL;
    if (U.devfd >= 0)
        close(U.devfd);
    U.devfd = -1;
}

int uring_attach(struct fuse_session *se) {
    U.se = se;
    U.nq = possible_cpus();
    U.devfd = fcntl(fuse_session_fd(se), F_DUPFD_CLOEXEC, 3);
    U.q = calloc((size_t) U.nq, sizeof(*U.q));
    int r = U.devfd < 0 ? -errno : !U.q ? -ENOMEM : 0;
    for (int i = 0; r == 0 && i < U.nq; i++) {
        struct uq *q = &U.q[i];
        q->qid = i;
        q->ring.ring_fd = -1;
        pthread_mutex_init(&q->lock, NULL);
        struct io_uring_params p = { .flags = IORING_SETUP_SQE128 | IORING_SETUP_CQSIZE, .cq_entries = 4 * DEPTH };
        r = io_uring_queue_init_params(2 * DEPTH, &q->ring, &p);
        if (r < 0) {
            q->ring.ring_fd = -1;
            break;
        }
        for (int k = 0; r == 0 && k < DEPTH; k++) {
            struct ent *e = &q->ent[k];
            e->q = q;
            e->hdr = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            e->payload = mmap(NULL, PAYLOAD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            e->wire = malloc(PAYLOAD + 512);
            if (e->hdr == MAP_FAILED || e->payload == MAP_FAILED || !e->wire)
                r = -ENOMEM;
            e->iov[0] = (struct iovec) { e->hdr, sizeof(*e->hdr) };
            e->iov[1] = (struct iovec) { e->payload, PAYLOAD };
        }
    }
    const struct fuse_custom_io io = { .read = dev_read, .writev = dev_writev };
    if (r == 0)
        r = fuse_session_custom_io(se, &io, fuse_session_fd(se));
    if (r != 0)
        free_all(); /* nothing changed: the session stays on /dev/fuse */
    return r;
}

void uring_detach(void) {
    if (!U.q)
        return;
    for (int i = 0; i < U.nq; i++) {
        struct uq *q = &U.q[i];
        if (!q->running)
            continue;
        pthread_mutex_lock(&q->lock);
        struct io_uring_sqe *sqe = io_uring_get_sqe(&q->ring);
        if (sqe) {
            io_uring_prep_nop(sqe);
            io_uring_sqe_set_data(sqe, NULL);
            io_uring_submit(&q->ring);
        }
        pthread_mutex_unlock(&q->lock);
        pthread_join(q->tid, NULL);
    }
    fprintf(stderr, "layoutd-wsfs: io_uring: %" PRIu64 " requests came through the rings\n", atomic_load(&U.served));
    free_all();
}
