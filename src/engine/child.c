/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "child.h"
#include "dev-util.h"
#include "util.h"

/* A line longer than this is cut (the child's protocol never needs it:
 * an observation of hundreds of volumes is a few hundred KiB). */
#define CHILD_LINE_MAX (16 * MIB)
#define CHILD_STDERR_MAX (64 * KIB)
#define CHILD_NICE 10

struct Child {
    sd_event *event;
    ChildCallbacks cb;
    void *userdata;
    pid_t pid;
    bool exited;
    int status;
    int sock;                    /* our end: child's stdin+stdout */
    int err;                     /* read end of the child's stderr */
    sd_event_source *sock_source, *err_source, *exit_source;
    char *in;                    /* what we read, not yet a whole line */
    size_t in_len, in_size;
    char *out;                   /* what we still have to write */
    size_t out_len, out_off;
    bool close_input;
    char *errbuf;
    size_t err_len;
    unsigned busy;               /* calls into the owner's callbacks now */
    bool freed;                  /* the owner let go of it */
    bool orphaned;               /* freed while running: on `orphans` */
    Child *orphan_next;
};

/* Children freed while they still ran: killed, and kept (nothing but
 * their exit source matters then) until the loop reaps them, or until
 * child_orphans_free(). Their owner is gone, so this list is the only
 * thing that knows them. Everything here runs on the loop's thread. */
static Child *orphans;

static void child_release(Child *c);

/* Calls the owner, who may free c from inside (child_free then only
 * marks it). Returns: false when it did; the caller stops touching c's
 * owner-facing state and releases it once back at the top. */
static bool call_line(Child *c, const char *line) {
    if (!c->cb.on_line)
        return true;
    c->busy++;
    c->cb.on_line(c, line, c->userdata);
    c->busy--;
    return !c->freed;
}

static void deliver_lines(Child *c) {
    size_t start = 0;
    for (size_t i = 0; i < c->in_len; i++) {
        if (c->in[i] != '\n')
            continue;
        c->in[i] = 0;
        bool go_on = call_line(c, c->in + start);
        start = i + 1;
        if (!go_on)
            break;
    }
    memmove(c->in, c->in + start, c->in_len - start);
    c->in_len -= start;
}

/* Reads what is there; returns true at EOF (or on an error). */
static bool read_sock(Child *c) {
    for (;;) {
        if (c->in_size - c->in_len < 65536) {
            size_t want = MAX(c->in_size * 2, c->in_len + 65536);
            if (want > CHILD_LINE_MAX + 65536) {
                /* An endless line: drop what we have, the protocol is broken. */
                c->in_len = 0;
                want = c->in_size;
            }
            char *t = realloc(c->in, want);
            if (!t)
                return true;
            c->in = t;
            c->in_size = want;
        }
        ssize_t n = read(c->sock, c->in + c->in_len, c->in_size - c->in_len);
        if (n > 0) {
            c->in_len += (size_t) n;
            deliver_lines(c);
            if (c->freed)
                return false;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return false;
        return true;
    }
}

static void read_err(Child *c) {
    char buf[4096];
    for (;;) {
        ssize_t n = read(c->err, buf, sizeof buf);
        if (n <= 0)
            return;
        size_t room = CHILD_STDERR_MAX - c->err_len;
        size_t take = MIN((size_t) n, room);
        if (take > 0) {
            char *t = realloc(c->errbuf, c->err_len + take + 1);
            if (!t)
                return;
            c->errbuf = t;
            memcpy(c->errbuf + c->err_len, buf, take);
            c->err_len += take;
            c->errbuf[c->err_len] = 0;
        }
    }
}

static void update_events(Child *c) {
    if (!c->sock_source)
        return;
    uint32_t ev = EPOLLIN | EPOLLRDHUP;
    if (c->out_off < c->out_len)
        ev |= EPOLLOUT;
    (void) sd_event_source_set_io_events(c->sock_source, ev);
}

static void flush_out(Child *c) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->sock, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                c->out_off = c->out_len; /* the child is gone: drop it */
            break;
        }
        c->out_off += (size_t) n;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
        if (c->close_input)
            (void) shutdown(c->sock, SHUT_WR);
    }
    update_events(c);
}

static int on_sock(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    Child *c = userdata;
    if (revents & EPOLLOUT)
        flush_out(c);
    if (revents & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR))
        if (read_sock(c))
            c->sock_source = sd_event_source_disable_unref(c->sock_source);
    if (c->freed)
        child_release(c);
    return 0;
}

static int on_err(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
    Child *c = userdata;
    read_err(c);
    if (revents & (EPOLLHUP | EPOLLERR))
        c->err_source = sd_event_source_disable_unref(c->err_source);
    return 0;
}

static int on_child_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
    Child *c = userdata;
    c->exited = true;
    c->status = si->si_code == CLD_EXITED ? si->si_status : -si->si_status;
    /* Reaped by sd-event. Our own source may be freed from its callback:
     * sd-event keeps it until the dispatch returns. */
    c->exit_source = sd_event_source_disable_unref(c->exit_source);
    if (c->freed) { /* an orphan: nobody waits for what it said */
        child_release(c);
        return 0;
    }
    /* Everything it wrote before exiting is in the socket and the pipe. */
    (void) read_sock(c);
    if (!c->freed && c->in_len > 0) {
        /* A last line without its newline. */
        char *t = realloc(c->in, c->in_len + 1);
        if (t) {
            c->in = t;
            c->in[c->in_len] = 0;
            c->in_len = 0;
            (void) call_line(c, c->in);
        }
    }
    if (c->freed) {
        child_release(c);
        return 0;
    }
    read_err(c);
    c->sock_source = sd_event_source_disable_unref(c->sock_source);
    c->err_source = sd_event_source_disable_unref(c->err_source);
    if (c->cb.on_exit) {
        c->busy++;
        c->cb.on_exit(c, c->status, c->errbuf ?: "", c->userdata);
        c->busy--;
    }
    if (c->freed)
        child_release(c);
    return 0;
}

static int spawn(sd_event *e, char *const *argv, const ChildCallbacks *cb, void *userdata, int pass_fd,
                 Child **ret) {
    int sv[2] = { -EBADF, -EBADF }, ep[2] = { -EBADF, -EBADF }, r;
    if (!e || !argv || !argv[0] || !ret)
        return -EINVAL;
    Child *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->sock = c->err = -EBADF;
    c->event = sd_event_ref(e);
    if (cb)
        c->cb = *cb;
    c->userdata = userdata;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 || pipe2(ep, O_CLOEXEC) < 0) {
        r = -errno;
        goto fail;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        r = -errno;
        goto fail;
    }
    if (pid == 0) {
        /* The child only execs: no allocation, no locks after fork.
         * It dies with the agent: a worker, a sweep or a probe must never
         * outlive it as a zombie of PID 1 that the next agent cannot see
         * (a sweep still running beside the next agent's). The tools a
         * worker runs are tied to the worker the same way (src/dev). The
         * check after prctl closes the race with an agent that died
         * before it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
            _exit(127);
        if (dup2(sv[1], STDIN_FILENO) < 0 || dup2(sv[1], STDOUT_FILENO) < 0 || dup2(ep[1], STDERR_FILENO) < 0)
            _exit(127);
        /* The caller's fd as 3 (dup2 clears O_CLOEXEC; fcntl when it is
         * 3 already). */
        if (pass_fd >= 0 && (pass_fd == 3 ? fcntl(3, F_SETFD, 0) : dup2(pass_fd, 3)) < 0)
            _exit(127);
        (void) syscall(SYS_close_range, pass_fd >= 0 ? 4U : 3U, ~0U, 0U);
        /* Its own process group, so that a kill reaches the tools it runs
         * (mkfs, resize2fs, xfs_growfs) too, never only the worker. */
        (void) setpgid(0, 0);
        sigset_t all;
        sigemptyset(&all);
        (void) sigprocmask(SIG_SETMASK, &all, NULL);
        /* Nothing of the agent's own setup: ignored signals stay ignored
         * across exec, and the unit's low OOM score (which protects the
         * agent) must not shield a large sweep or a tool. Raising the
         * score needs no privilege. */
        (void) signal(SIGPIPE, SIG_DFL);
        int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (oom >= 0) {
            (void) !write(oom, "0", 1);
            (void) close(oom);
        }
        /* Background work (mkfs, a sweep, fstrim): niced, so that the loop
         * that answers the API wins the CPU whenever it wakes. Eight
         * parallel carves on two CPUs otherwise delayed a status answer by
         * up to 80 ms. The tools it runs inherit it. */
        (void) setpriority(PRIO_PROCESS, 0, CHILD_NICE);
        execv(argv[0], argv);
        _exit(127);
    }
    c->pid = pid;
    (void) setpgid(pid, pid); /* also here: no kill may race the child's own setpgid */
    c->sock = TAKE_FD(sv[0]);
    c->err = TAKE_FD(ep[0]);
    sv[1] = safe_close(sv[1]);
    ep[1] = safe_close(ep[1]);
    (void) fcntl(c->sock, F_SETFL, O_NONBLOCK);
    (void) fcntl(c->err, F_SETFL, O_NONBLOCK);
    if ((r = sd_event_add_child(e, &c->exit_source, pid, WEXITED, on_child_exit, c)) < 0 ||
        (r = sd_event_add_io(e, &c->sock_source, c->sock, EPOLLIN | EPOLLRDHUP, on_sock, c)) < 0 ||
        (r = sd_event_add_io(e, &c->err_source, c->err, EPOLLIN, on_err, c)) < 0)
        goto fail;
    *ret = c;
    return 0;
fail:
    safe_close(sv[0]);
    safe_close(sv[1]);
    safe_close(ep[0]);
    safe_close(ep[1]);
    child_free(c);
    return r;
}

int child_spawn(sd_event *e, char *const *argv, const ChildCallbacks *cb, void *userdata, Child **ret) {
    return spawn(e, argv, cb, userdata, -EBADF, ret);
}

int child_spawn_with_fd(sd_event *e, char *const *argv, const ChildCallbacks *cb, void *userdata, int fd,
                        Child **ret) {
    if (fd < 0)
        return -EBADF;
    return spawn(e, argv, cb, userdata, fd, ret);
}

int child_write(Child *c, const char *data, size_t len) {
    if (c->exited || c->close_input)
        return -EPIPE;
    char *t = realloc(c->out, c->out_len + len);
    if (!t)
        return -ENOMEM;
    c->out = t;
    memcpy(c->out + c->out_len, data, len);
    c->out_len += len;
    flush_out(c);
    return 0;
}

void child_close_input(Child *c) {
    c->close_input = true;
    flush_out(c);
}

int child_find_program(const char *name, char **ret) {
    return dev_find_program(name, ret);
}

pid_t child_pid(const Child *c) {
    return c ? c->pid : 0;
}

bool child_running(const Child *c) {
    return c && c->pid > 0 && !c->exited;
}

void child_kill(Child *c, int sig) {
    if (child_running(c) && kill(-c->pid, sig) < 0)
        (void) kill(c->pid, sig);
}

static void orphan_unlink(Child *c) {
    if (!c->orphaned)
        return;
    for (Child **p = &orphans; *p; p = &(*p)->orphan_next)
        if (*p == c) {
            *p = c->orphan_next;
            return;
        }
}

static void child_destroy(Child *c) {
    orphan_unlink(c);
    c->exit_source = sd_event_source_disable_unref(c->exit_source);
    c->sock_source = sd_event_source_disable_unref(c->sock_source);
    c->err_source = sd_event_source_disable_unref(c->err_source);
    safe_close(c->sock);
    safe_close(c->err);
    free(c->in);
    free(c->out);
    free(c->errbuf);
    sd_event_unref(c->event);
    free(c);
}

/* The owner let go of c (c->freed) and no callback of it runs now. */
static void child_release(Child *c) {
    if (child_running(c) && c->exit_source) {
        /* Killed, and reaped later by its own exit source: waiting here
         * would freeze the loop for as long as a child in D state (I/O on
         * a failing disk) takes to die. Until then it calls no one back.
         * (A floating reaper source freed from its own callback once
         * aborted the agent: sd_event_source_set_floating(s, 0) dropped
         * the last reference, and the unref after it touched a
         * disconnected source.) */
        if (c->orphaned)
            return;
        c->sock_source = sd_event_source_disable_unref(c->sock_source);
        c->err_source = sd_event_source_disable_unref(c->err_source);
        c->sock = safe_close(c->sock);
        c->err = safe_close(c->err);
        c->in = mfree(c->in);
        c->out = mfree(c->out);
        c->errbuf = mfree(c->errbuf);
        c->in_len = c->in_size = c->out_len = c->out_off = c->err_len = 0;
        c->orphaned = true;
        c->orphan_next = orphans;
        orphans = c;
        return;
    }
    /* Exited (or no source left to reap it: then init does, at our exit). */
    child_destroy(c);
}

Child *child_free(Child *c) {
    if (!c)
        return NULL;
    child_kill(c, SIGKILL);
    c->freed = true;
    c->cb = (ChildCallbacks) {};
    c->userdata = NULL;
    /* From inside one of its callbacks: released once it returns. */
    if (c->busy == 0)
        child_release(c);
    return NULL;
}

size_t child_orphans_count(void) {
    size_t n = 0;
    for (Child *c = orphans; c; c = c->orphan_next)
        n++;
    return n;
}

void child_orphans_free(void) {
    while (orphans) {
        Child *c = orphans;
        /* Killed already: reap it if it is gone, else init will. */
        (void) waitpid(c->pid, NULL, WNOHANG);
        child_destroy(c);
    }
}
