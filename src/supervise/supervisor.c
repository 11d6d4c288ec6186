/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor (see supervisor.h and docs/supervision.md). This file owns
 * processes, fds, timers and mounts; every decision about what happens next
 * is fsm_transition()'s. The flow is always:
 *
 *   kernel/timer event -> workspace_dispatch(event) -> fsm_transition()
 *     -> carry out the actions -> on_state_change -> (nested SPAWN_FAILED)
 *
 * Callbacks that may free things (remove, stop-all completion) run from a
 * deferred event source, never from inside a dispatch.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <syslog.h>

#include "argv.h"
#include "backoff.h"
#include "fuse-cleanup.h"
#include "linebuf.h"
#include "mount-monitor.h"
#include "cache-bind.h"
#include "proc.h"
#include "spawn.h"
#include "supervisor.h"
#include "util.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

#define LOG_READ_CHUNK 16384
#define LOG_READS_PER_WAKEUP 4   /* a chatty daemon yields to the others */
#define HANG_SAMPLES 4           /* samples of "waiting" per hang_timeout */
#define TIMER_ACCURACY (1 * USEC_PER_MSEC)
/* No process and nothing pending: what remove and stop-all wait for. */
#define IN_SET_STOPPED(st) ((st) == SUPERVISOR_STOPPED || (st) == SUPERVISOR_FAILED || (st) == SUPERVISOR_BLOCKED)

/* A cache mount's configuration (WorkspaceSpec.cache_*); all NULL: none. */
typedef struct CacheConfig {
    char *source, *name, *owner_dir;
} CacheConfig;

static void cache_config_done(CacheConfig *c) {
    c->source = mfree(c->source);
    c->name = mfree(c->name);
    c->owner_dir = mfree(c->owner_dir);
}

/* dst = a copy of src (dst's old strings freed). Returns 0, -ENOMEM. */
static int cache_config_copy(CacheConfig *dst, const CacheConfig *src) {
    CacheConfig c = {};
    if (src->source && (!(c.source = strdup(src->source)) || !(c.name = strdup(src->name)) ||
                        !(c.owner_dir = strdup(src->owner_dir)))) {
        cache_config_done(&c);
        return -ENOMEM;
    }
    cache_config_done(dst);
    *dst = c;
    return 0;
}

typedef struct Workspace {
    Supervisor *sup;
    char *id;
    char **argv;
    char **env;
    char *mountpoint;
    char *fifo_path;               /* NULL without runtime_dir */
    SpawnCredentials creds;
    BackoffParams bp;
    RestartPolicy restart;
    usec_t ready_timeout, stop_timeout, hang_timeout;
    bool restart_on_hang;
    int oom_score_adjust;

    SupervisorState state;
    SupervisorIntent intent;

    pid_t pid;
    int pidfd;
    sd_event_source *pid_source;
    bool adopted;
    /* The environment the running daemon was started with: env as it was
     * at the spawn (a later supervisor_update changes env, not the
     * daemon). NULL until known: a re-adopted daemon's is read from /proc
     * when first asked for. */
    char **running_env;

    sd_event_source *timer;        /* ready / stop / backoff, by state */
    sd_event_source *hang_timer;
    usec_t waiting_since;
    unsigned last_waiting;
    unsigned hangs;

    int log_fd;
    sd_event_source *log_source;
    LineBuffer lb;

    DaemonRecord rec;
    bool ever_ran;                 /* the next spawn is a restart */
    BackoffTally tally;
    unsigned attempt;
    usec_t delays[SUPERVISOR_DELAY_HISTORY];
    unsigned n_delays;             /* total recorded (ring index) */
    usec_t next_delay;

    bool exited, exit_failed;
    int exit_status, exit_signal;
    bool spawn_failed;

    usec_t spawned_at, running_since, since, ready_latency;

    /* The cache mount: what the next start binds (the layout's, as of the
     * last configure), what the running daemon's mount got (a reload
     * changes it at the next start, as it does the daemon's environment),
     * and the child at work. */
    CacheConfig cache_next, cache;
    SupervisorCacheState cache_state;
    char cache_message[512];
    pid_t bind_pid;
    dev_t bind_dev;                /* the FUSE mount the child works on */
    int bind_pidfd, bind_msgfd;
    sd_event_source *bind_source, *bind_timer;

    bool removing;
    SupervisorRemovedCallback remove_cb;
    void *remove_userdata;
} Workspace;

struct Supervisor {
    sd_event *event;
    SupervisorCallbacks cb;
    void *userdata;
    char *runtime_dir;
    char boot_id[33];            /* this boot's (proc_boot_id) */
    uint64_t boot_id_hash;       /* and its hash, as older records hold it */

    Workspace **ws;
    size_t n_ws, cap_ws;

    MountMonitor *mount_monitor;
    sd_event_source *post_source;

    bool stop_all_active;
    SupervisorDoneCallback stop_all_cb;
    void *stop_all_userdata;
    sd_event_source *stop_all_timer;
};

static void workspace_dispatch(Workspace *w, SupervisorEvent ev);
static void mountinfo_check(Supervisor *s);
static void cache_child_abandon(Workspace *w);
static void cache_child_timeout(Workspace *w);
static void cache_instance_begin(Workspace *w);

/* ---- small helpers ----------------------------------------------------- */

_printf_(3, 4) static void ws_log(Workspace *w, int level, const char *fmt, ...) {
    Supervisor *s = w->sup;
    if (!s->cb.on_log)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    s->cb.on_log(w->id, level, buf, s->userdata);
}

static void ws_persist(Workspace *w) {
    if (w->sup->cb.on_persist)
        w->sup->cb.on_persist(w->id, &w->rec, w->sup->userdata);
}

static usec_t now_mono(void) {
    return now_usec(CLOCK_MONOTONIC);
}

static void schedule_post(Supervisor *s) {
    (void) sd_event_source_set_enabled(s->post_source, SD_EVENT_ONESHOT);
}

static int arm_timer(Workspace *w, sd_event_source **src, usec_t delay,
                     sd_event_time_handler_t handler) {
    int r;
    if (!*src) {
        r = sd_event_add_time_relative(w->sup->event, src, CLOCK_MONOTONIC, delay, TIMER_ACCURACY,
                                       handler, w);
        if (r < 0)
            return r;
        return 0;
    }
    r = sd_event_source_set_time_relative(*src, delay);
    if (r < 0)
        return r;
    return sd_event_source_set_enabled(*src, SD_EVENT_ONESHOT);
}

static void disarm(sd_event_source *src) {
    if (src)
        (void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
}

/* The mount monitor stays enabled: the kernel reports a change once per
 * poll of mountinfo (mounts_poll() updates its "seen" counter while
 * polling), so toggling the registration can swallow a change. An idle
 * host mounts rarely; each change costs one read of the table. */
/* ---- daemon output ----------------------------------------------------- */

static void on_line(const char *line, bool truncated, void *userdata) {
    Workspace *w = userdata;
    if (!w->sup->cb.on_log)
        return;
    if (truncated) {
        char buf[LINEBUF_MAX + 32];
        snprintf(buf, sizeof buf, "%s [truncated]", line);
        w->sup->cb.on_log(w->id, LOG_INFO, buf, w->sup->userdata);
    } else
        w->sup->cb.on_log(w->id, LOG_INFO, line, w->sup->userdata);
}

static void log_close(Workspace *w) {
    linebuf_flush(&w->lb, on_line, w);
    w->log_source = sd_event_source_disable_unref(w->log_source);
    w->log_fd = safe_close(w->log_fd);
}

/* Returns true at EOF or error. */
static bool log_drain(Workspace *w, int max_reads) {
    char buf[LOG_READ_CHUNK];
    for (int i = 0; i < max_reads; i++) {
        ssize_t n = read(w->log_fd, buf, sizeof buf);
        if (n < 0)
            return !(errno == EAGAIN || errno == EINTR);
        if (n == 0)
            return true;
        linebuf_feed(&w->lb, buf, (size_t) n, on_line, w);
    }
    return false;
}

static int log_handler(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
    Workspace *w = userdata;
    if (log_drain(w, LOG_READS_PER_WAKEUP))
        log_close(w);
    return 0;
}

static int log_watch(Workspace *w, int fd) {
    w->log_fd = fd;
    int r = sd_event_add_io(w->sup->event, &w->log_source, fd, EPOLLIN, log_handler, w);
    if (r < 0)
        return r;
    /* Daemon chatter must never delay exits, timers or readiness. */
    return sd_event_source_set_priority(w->log_source, SD_EVENT_PRIORITY_IDLE);
}

/* Makes the output channel for a new daemon; returns the write end. */
static int log_open_for_spawn(Workspace *w, int *ret_write) {
    if (w->log_fd >= 0) {
        (void) log_drain(w, 64);
        log_close(w);
    }
    _cleanup_close_ int rd = -EBADF, wr = -EBADF;
    if (w->fifo_path) {
        /* A fresh FIFO per daemon; the read end first, so that opening
         * the write end does not block. */
        if (unlink(w->fifo_path) < 0 && errno != ENOENT)
            return negative_errno();
        if (mkfifo(w->fifo_path, 0600) < 0)
            return negative_errno();
        rd = open(w->fifo_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        if (rd < 0)
            return negative_errno();
        wr = open(w->fifo_path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
        if (wr < 0)
            return negative_errno();
    } else {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0)
            return negative_errno();
        rd = p[0];
        wr = p[1];
        if (fcntl(rd, F_SETFL, O_NONBLOCK) < 0)
            return negative_errno();
    }
    int r = log_watch(w, rd);
    TAKE_FD(rd); /* owned by w->log_fd now, even on error */
    if (r < 0) {
        log_close(w);
        return r;
    }
    *ret_write = TAKE_FD(wr);
    return 0;
}

/* ---- process events ---------------------------------------------------- */

static void release_process(Workspace *w) {
    w->pid_source = sd_event_source_disable_unref(w->pid_source);
    w->pidfd = safe_close(w->pidfd);
    w->pid = 0;
    w->running_env = strv_free(w->running_env);
}

static int pid_handler(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
    Workspace *w = userdata;
    siginfo_t si = {};

    if (waitid(P_PIDFD, (id_t) w->pidfd, &si, WEXITED | WNOHANG) < 0) {
        if (errno != ECHILD)
            return 0; /* try again on the next wakeup */
        /* Adopted: not our child, somebody else reaps it; the status is
         * lost. It died unexpectedly, so it counts as a failure. */
        w->exit_status = -1;
        w->exit_signal = 0;
        w->exit_failed = true;
        ws_log(w, LOG_WARNING, "daemon (pid %d, adopted) exited, status unknown", (int) w->pid);
    } else if (si.si_pid == 0) {
        return 0; /* not exited yet (spurious wakeup) */
    } else if (si.si_code == CLD_EXITED) {
        w->exit_status = si.si_status;
        w->exit_signal = 0;
        w->exit_failed = si.si_status != 0;
        ws_log(w, si.si_status == 0 ? LOG_NOTICE : LOG_WARNING,
               "daemon (pid %d) exited with status %d", (int) w->pid, si.si_status);
    } else {
        w->exit_status = -1;
        w->exit_signal = si.si_status;
        w->exit_failed = true;
        ws_log(w, LOG_WARNING, "daemon (pid %d) killed by signal %s%s", (int) w->pid,
               sigabbrev_np(si.si_status) ?: "?", si.si_code == CLD_DUMPED ? " (core dumped)" : "");
    }
    w->exited = true;
    release_process(w);
    w->rec.pid = 0;
    w->rec.start_time = 0;
    ws_persist(w);
    workspace_dispatch(w, SUPERVISOR_EVENT_EXITED);
    return 0;
}

static int watch_process(Workspace *w, pid_t pid, int pidfd) {
    w->pid = pid;
    w->pidfd = pidfd;
    return sd_event_add_io(w->sup->event, &w->pid_source, pidfd, EPOLLIN, pid_handler, w);
}

/* ---- timers ------------------------------------------------------------ */

static int timer_handler(sd_event_source *src, uint64_t usec, void *userdata) {
    Workspace *w = userdata;
    switch (w->state) {
    case SUPERVISOR_STARTING:
        /* The mount is there, its cache is not (yet): the daemon is
         * ready, the cache given up on. */
        if (w->bind_pid != 0 && w->rec.mount_dev != 0) {
            cache_child_timeout(w);
            break;
        }
        /* Last look before giving up, in case a mount change was missed. */
        mountinfo_check(w->sup);
        if (w->state != SUPERVISOR_STARTING)
            break;
        ws_log(w, LOG_WARNING, "no FUSE mount at %s after %" PRIu64 " ms, killing the daemon",
               w->mountpoint, w->ready_timeout / USEC_PER_MSEC);
        workspace_dispatch(w, SUPERVISOR_EVENT_READY_TIMEOUT);
        break;
    case SUPERVISOR_STOPPING:
        ws_log(w, LOG_WARNING, "daemon (pid %d) still running after SIGTERM, sending SIGKILL",
               (int) w->pid);
        workspace_dispatch(w, SUPERVISOR_EVENT_STOP_TIMEOUT);
        break;
    case SUPERVISOR_BACKOFF:
        workspace_dispatch(w, SUPERVISOR_EVENT_BACKOFF_ELAPSED);
        break;
    default:
        break;
    }
    return 0;
}

static usec_t hang_period(Workspace *w) {
    return MAX(w->hang_timeout / HANG_SAMPLES, 50 * USEC_PER_MSEC);
}

/* A connection is hung when requests are waiting and their number never
 * goes down for hang_timeout. (fusectl has no "completed" counter; a
 * drop in "waiting" is the only sign of progress it gives.) */
static int hang_handler(sd_event_source *src, uint64_t usec, void *userdata) {
    Workspace *w = userdata;
    if (w->state != SUPERVISOR_RUNNING || w->rec.mount_dev == 0)
        return 0;
    unsigned waiting = 0;
    usec_t now = now_mono();
    if (fuse_cleanup_waiting(w->rec.mount_dev, &waiting) < 0 || waiting == 0)
        w->waiting_since = 0;
    else if (w->waiting_since == 0 || waiting < w->last_waiting)
        w->waiting_since = now;
    else if (now - w->waiting_since >= w->hang_timeout) {
        w->hangs++;
        w->waiting_since = 0; /* report again only after another full period */
        w->last_waiting = waiting;
        ws_log(w, LOG_ERR, "FUSE connection hung: %u requests waiting for %" PRIu64 " ms",
               waiting, w->hang_timeout / USEC_PER_MSEC);
        workspace_dispatch(w, SUPERVISOR_EVENT_HANG_DETECTED);
        if (w->state != SUPERVISOR_RUNNING)
            return 0;
    }
    w->last_waiting = waiting;
    (void) arm_timer(w, &w->hang_timer, hang_period(w), hang_handler);
    return 0;
}

static void hang_watch_start(Workspace *w) {
    if (w->hang_timeout == 0)
        return;
    int r = fuse_cleanup_ensure_fusectl();
    if (r < 0) {
        ws_log(w, LOG_WARNING, "cannot mount fusectl (%s), no hang watch", strerror(-r));
        return;
    }
    w->waiting_since = 0;
    w->last_waiting = 0;
    r = arm_timer(w, &w->hang_timer, hang_period(w), hang_handler);
    if (r < 0)
        ws_log(w, LOG_WARNING, "cannot arm the hang watch: %s", strerror(-r));
}

/* ---- actions ----------------------------------------------------------- */

static void action_cleanup_mount(Workspace *w) {
    int r = fuse_cleanup_mountpoint(w->mountpoint);
    if (r > 0)
        ws_log(w, LOG_NOTICE, "removed %d stale FUSE mount(s) at %s", r, w->mountpoint);
    else if (r < 0)
        ws_log(w, LOG_WARNING, "cannot clean up the mount at %s: %s", w->mountpoint, strerror(-r));
    if (w->rec.mount_dev != 0) {
        w->rec.mount_dev = 0;
        ws_persist(w);
    }
    /* The detach took the cache's bind with the FUSE mount, and a child
     * still at work on that mount has nothing left to do. */
    cache_child_abandon(w);
    if (w->cache_state == SUPERVISOR_CACHE_MOUNTED)
        w->cache_state = SUPERVISOR_CACHE_PENDING;
}

static void action_arm_backoff(Workspace *w) {
    usec_t d = backoff_delay(&w->bp, w->attempt, random_u64());
    w->delays[w->n_delays % SUPERVISOR_DELAY_HISTORY] = d;
    w->n_delays++;
    w->next_delay = d;
    ws_log(w, LOG_NOTICE, "restarting in %" PRIu64 " ms (attempt %u)", d / USEC_PER_MSEC, w->attempt);
    int r = arm_timer(w, &w->timer, d, timer_handler);
    if (r < 0)
        ws_log(w, LOG_ERR, "cannot arm the backoff timer: %s", strerror(-r));
}

static void action_signal(Workspace *w, int sig) {
    if (w->pidfd < 0)
        return;
    if (sig == SIGKILL)
        /* The daemon leads its own process group (setsid): take its helpers
         * down with it. */
        (void) kill(-w->pid, SIGKILL);
    int r = proc_pidfd_signal(w->pidfd, sig);
    if (r < 0 && r != -ESRCH)
        ws_log(w, LOG_WARNING, "cannot send %s to pid %d: %s", sigabbrev_np(sig) ?: "?",
               (int) w->pid, strerror(-r));
}

/* The mount point, made (parents 0755) or found, and closed to everyone
 * but its daemon while nothing is mounted on it: while a workspace is
 * blocked, stopped or between restarts its mount point is a bare
 * directory on the host, and a process that wrote there would write to the
 * host's filesystem, not the workspace. A daemon running as root needs no
 * permission on it (mode 0000); any other needs write access to mount
 * (fusermount3 checks it), so it owns it with mode 0700. Whatever is
 * mounted there has its own root's mode, so users of the mounted
 * workspace see no difference. Returns: <0 on error, 0. */
static int mountpoint_prepare(Workspace *w) {
    _cleanup_free_ char *parent = strdup(w->mountpoint);
    if (!parent)
        return -ENOMEM;
    char *slash = strrchr(parent, '/');
    if (!slash || !slash[1])
        return -EINVAL;
    const char *name = w->mountpoint + (slash - parent) + 1;
    if (slash == parent)
        slash[1] = 0;
    else
        *slash = 0;
    int r = mkdir_p(parent, 0755);
    if (r < 0)
        return r;
    _cleanup_close_ int pfd = open(parent, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0)
        return -errno;
    if (mkdirat(pfd, name, 0) < 0 && errno != EEXIST)
        return -errno;
    struct stat pst, st;
    if (fstat(pfd, &pst) < 0 || fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if (!S_ISDIR(st.st_mode))
        return -ENOTDIR;
    if (st.st_dev != pst.st_dev)
        return 0; /* something is mounted there: its root is not ours to change */
    bool as_root = w->creds.uid == 0;
    if ((st.st_uid != w->creds.uid || st.st_gid != w->creds.gid) &&
        fchownat(pfd, name, w->creds.uid, w->creds.gid, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    if ((st.st_mode & 07777) != (as_root ? 0000 : 0700) && fchmodat(pfd, name, as_root ? 0000 : 0700, 0) < 0)
        return -errno;
    return 0;
}

/* A removed workspace's mount point goes with it: rmdir only, so that a
 * mount still there (EBUSY) or anything a process wrote into the bare
 * directory (ENOTEMPTY) stays, and is logged. */
static void mountpoint_remove(Workspace *w) {
    if (rmdir(w->mountpoint) < 0 && errno != ENOENT)
        ws_log(w, LOG_WARNING, "removed, but its mount point %s stays: %s", w->mountpoint, strerror(errno));
}

static int action_spawn(Workspace *w) {
    Supervisor *s = w->sup;
    int r = mountpoint_prepare(w);
    if (r < 0) {
        ws_log(w, LOG_ERR, "cannot create mount point %s: %s", w->mountpoint, strerror(-r));
        return r;
    }
    _cleanup_close_ int out = -EBADF;
    r = log_open_for_spawn(w, &out);
    if (r < 0)
        ws_log(w, LOG_WARNING, "no output capture (%s), daemon output goes to /dev/null",
               strerror(-r));

    SpawnParams p = { .argv = w->argv, .envp = w->env, .creds = &w->creds, .output_fd = out,
                      .oom_score_adjust = w->oom_score_adjust, .set_oom_score_adjust = true };
    pid_t pid;
    int pidfd;
    usec_t t0 = now_mono();
    r = spawn_daemon(&p, &pid, &pidfd);
    out = safe_close(out);
    if (r < 0) {
        ws_log(w, LOG_ERR, "cannot start %s: %s", w->argv[0], strerror(-r));
        return r;
    }
    r = watch_process(w, pid, pidfd);
    if (r < 0) {
        /* Cannot watch it: do not leave an unsupervised daemon behind. */
        (void) kill(-pid, SIGKILL);
        (void) proc_pidfd_signal(pidfd, SIGKILL);
        siginfo_t si;
        (void) waitid(P_PIDFD, (id_t) pidfd, &si, WEXITED);
        release_process(w);
        return r;
    }

    uint64_t st = 0;
    (void) proc_start_time(pid, &st);
    if (w->ever_ran)
        w->rec.restarts++;
    w->ever_ran = true;
    w->rec.pid = pid;
    w->rec.start_time = st;
    memcpy(w->rec.boot_id, s->boot_id, sizeof w->rec.boot_id);
    w->rec.boot_id_hash = s->boot_id_hash;
    w->rec.mount_dev = 0;
    w->adopted = false;
    cache_instance_begin(w);
    /* Unknown if the copy fails: then it is read from /proc when asked. */
    w->running_env = strv_free(w->running_env);
    (void) strv_copy((const char *const *) w->env, &w->running_env);
    w->exited = false;
    w->spawned_at = t0;
    w->running_since = 0;
    ws_log(w, LOG_NOTICE, "started %s (pid %d)", w->argv[0], (int) pid);
    ws_persist(w);

    r = arm_timer(w, &w->timer, w->ready_timeout, timer_handler);
    if (r < 0)
        ws_log(w, LOG_ERR, "cannot arm the ready timer: %s", strerror(-r));
    return 0;
}

/* ---- the dispatcher ---------------------------------------------------- */

static void workspace_dispatch(Workspace *w, SupervisorEvent ev) {
    Supervisor *s = w->sup;
    usec_t now = now_mono();
    FsmInput in = {
        .state = w->state,
        .intent = w->intent,
        .policy = w->restart,
        .exit_failed = w->exit_failed,
        .crashloop = backoff_tally_would_trip(&w->tally, &w->bp, now),
        .restart_on_hang = w->restart_on_hang,
        .blocked = s->cb.may_start && !s->cb.may_start(w->id, s->userdata),
    };
    FsmOutput o;
    if (fsm_transition(&in, ev, &o) < 0)
        return;

    SupervisorState old = w->state;
    w->state = o.state;
    w->intent = o.intent;
    unsigned a = o.actions;

    if (a & SUPERVISOR_ACTION_CANCEL_TIMER)
        disarm(w->timer);
    if (a & SUPERVISOR_ACTION_RECORD_DEATH) {
        usec_t ran = w->running_since ? now - w->running_since : 0;
        w->attempt = backoff_next_attempt(&w->bp, w->attempt, ran);
        backoff_tally_record(&w->tally, now);
    }
    if (a & SUPERVISOR_ACTION_CLEANUP_MOUNT)
        action_cleanup_mount(w);
    /* Blocked, the mount point stays bare for as long as the volume is
     * out of service: closed now, not only at the next spawn. */
    if (w->state == SUPERVISOR_BLOCKED && old != SUPERVISOR_BLOCKED) {
        int k = mountpoint_prepare(w);
        if (k < 0)
            ws_log(w, LOG_WARNING, "cannot close the bare mount point %s: %s", w->mountpoint, strerror(-k));
    }
    if (a & SUPERVISOR_ACTION_RESET_TALLY) {
        backoff_tally_reset(&w->tally);
        w->attempt = 0;
    }
    if ((a & SUPERVISOR_ACTION_NOTIFY_HANG) && s->cb.on_hang)
        s->cb.on_hang(w->id, w->last_waiting, s->userdata);
    if ((a & SUPERVISOR_ACTION_ABORT_CONN) && w->rec.mount_dev != 0)
        (void) fuse_cleanup_abort(w->rec.mount_dev);
    if (a & SUPERVISOR_ACTION_TERM) {
        action_signal(w, SIGTERM);
        (void) arm_timer(w, &w->timer, w->stop_timeout, timer_handler);
    }
    if (a & SUPERVISOR_ACTION_KILL)
        action_signal(w, SIGKILL);
    if (a & SUPERVISOR_ACTION_ARM_BACKOFF)
        action_arm_backoff(w);
    w->spawn_failed = false;
    if (a & SUPERVISOR_ACTION_SPAWN) {
        if (action_spawn(w) < 0) {
            w->spawn_failed = true;
            w->exited = true;
            w->exit_status = -1;
            w->exit_signal = 0;
            w->exit_failed = true;
        }
    }

    if (old != w->state) {
        w->since = now;
        if (w->state == SUPERVISOR_RUNNING) {
            w->running_since = now;
            hang_watch_start(w);
        } else if (old == SUPERVISOR_RUNNING)
            disarm(w->hang_timer);
        if (w->state == SUPERVISOR_FAILED) {
            if (w->exit_signal > 0)
                ws_log(w, LOG_ERR, "failed: last daemon killed by signal %s",
                       sigabbrev_np(w->exit_signal) ?: "?");
            else
                ws_log(w, LOG_ERR, "failed: last daemon exit status %d%s", w->exit_status,
                       in.crashloop ? " (crash loop: too many deaths)" : "");
        }
        if (s->cb.on_state_change)
            s->cb.on_state_change(w->id, old, w->state, s->userdata);
        if (IN_SET_STOPPED(w->state))
            schedule_post(s);
    }

    if (w->spawn_failed) {
        w->spawn_failed = false;
        workspace_dispatch(w, SUPERVISOR_EVENT_SPAWN_FAILED);
    }
}

/* ---- the cache mount --------------------------------------------------- */

static const char *const cache_state_table[_SUPERVISOR_CACHE_STATE_MAX] = {
    [SUPERVISOR_CACHE_NONE] = "none",
    [SUPERVISOR_CACHE_PENDING] = "pending",
    [SUPERVISOR_CACHE_MOUNTED] = "mounted",
    [SUPERVISOR_CACHE_FAILED] = "failed",
};

const char *supervisor_cache_state_to_string(SupervisorCacheState st) {
    return st >= 0 && st < _SUPERVISOR_CACHE_STATE_MAX ? cache_state_table[st] : NULL;
}

/* The daemon starting (or adopted) now gets the cache the layout says. */
static void cache_instance_begin(Workspace *w) {
    if (cache_config_copy(&w->cache, &w->cache_next) < 0) {
        cache_config_done(&w->cache);
        ws_log(w, LOG_WARNING, "out of memory: no cache for this start");
    }
    w->cache_state = w->cache.source ? SUPERVISOR_CACHE_PENDING : SUPERVISOR_CACHE_NONE;
    w->cache_message[0] = '\0';
}

/* Reaps a killed child whenever it dies, without waiting for it here (a
 * child in an uninterruptible wait on a stuck volume dies only when the
 * wait ends). The source is the event loop's: it closes the pidfd. */
static int reap_handler(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
    siginfo_t si = {};
    (void) waitid(P_PIDFD, (id_t) fd, &si, WEXITED | WNOHANG);
    (void) sd_event_source_set_enabled(src, SD_EVENT_OFF);
    (void) sd_event_source_set_floating(src, false);
    return 0;
}

/* The child is of no more use (its mount is gone, it took too long, its
 * workspace goes): killed, its result dropped, reaped later. */
static void cache_child_abandon(Workspace *w) {
    if (w->bind_pid == 0)
        return;
    (void) proc_pidfd_signal(w->bind_pidfd, SIGKILL);
    w->bind_source = sd_event_source_disable_unref(w->bind_source);
    w->bind_timer = sd_event_source_disable_unref(w->bind_timer);
    w->bind_msgfd = safe_close(w->bind_msgfd);
    sd_event_source *reaper = NULL;
    if (sd_event_add_io(w->sup->event, &reaper, w->bind_pidfd, EPOLLIN, reap_handler, NULL) >= 0) {
        (void) sd_event_source_set_io_fd_own(reaper, true);
        (void) sd_event_source_set_floating(reaper, true);
        sd_event_source_unref(reaper);
    } else
        safe_close(w->bind_pidfd); /* a zombie until the agent exits */
    w->bind_pidfd = -EBADF;
    w->bind_pid = 0;
}

/* The end of a mount attempt: the state, said; a STARTING daemon that
 * waited for its cache is ready now, with or without it (a failure is
 * reported, not a reason to refuse the workspace). */
static void cache_mount_end(Workspace *w, int outcome) {
    if (outcome == CACHE_BIND_BOUND || outcome == CACHE_BIND_ALREADY) {
        if (outcome == CACHE_BIND_BOUND)
            ws_log(w, LOG_NOTICE, "cache %s mounted at %s/%s", w->cache.source, w->mountpoint, w->cache.name);
        w->cache_state = SUPERVISOR_CACHE_MOUNTED;
        w->cache_message[0] = '\0';
    } else {
        ws_log(w, LOG_WARNING, "cache not mounted at %s/%s: %s; the workspace runs without it", w->mountpoint,
               w->cache.name, w->cache_message);
        w->cache_state = SUPERVISOR_CACHE_FAILED;
    }
    if (w->state == SUPERVISOR_STARTING && w->pid != 0 && w->rec.mount_dev != 0)
        workspace_dispatch(w, SUPERVISOR_EVENT_READY);
}

static int cache_child_handler(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
    Workspace *w = userdata;
    dev_t dev = w->bind_dev;
    char msg[sizeof w->cache_message];
    int r = cache_bind_finish(w->bind_pidfd, w->bind_msgfd, msg, sizeof msg);
    w->bind_source = sd_event_source_disable_unref(w->bind_source);
    w->bind_timer = sd_event_source_disable_unref(w->bind_timer);
    w->bind_pidfd = safe_close(w->bind_pidfd);
    w->bind_msgfd = safe_close(w->bind_msgfd);
    w->bind_pid = 0;
    if (dev != w->rec.mount_dev) {
        /* About a mount that is gone: a daemon starting now gets a child
         * of its own. */
        if (w->state == SUPERVISOR_STARTING && w->pid != 0)
            mountinfo_check(w->sup);
        return 0;
    }
    memcpy(w->cache_message, msg, sizeof msg);
    if (r < 0 && w->cache_message[0] == '\0')
        snprintf(w->cache_message, sizeof w->cache_message, "cannot reap the child: %s", strerror(-r));
    cache_mount_end(w, r < 0 ? CACHE_BIND_FAILED : r);
    return 0;
}

/* A child that did not end in ready_timeout (a hung daemon, a stuck
 * volume): given up, the workspace runs without its cache. */
static void cache_child_timeout(Workspace *w) {
    cache_child_abandon(w);
    snprintf(w->cache_message, sizeof w->cache_message,
             "not mounted within %" PRIu64 " ms (the daemon or the state volume does not answer)",
             w->ready_timeout / USEC_PER_MSEC);
    cache_mount_end(w, CACHE_BIND_FAILED);
}

static int cache_timer_handler(sd_event_source *src, uint64_t usec, void *userdata) {
    cache_child_timeout(userdata);
    return 0;
}

/* Starts the child that mounts the cache on the daemon's mount (or finds
 * it mounted). Returns 1 when a child is at work (its handler or its
 * timeout follows), 0 when there is nothing to do: no cache, or the child
 * could not start (said, and the cache marked failed). */
static int cache_mount_begin(Workspace *w) {
    if (!w->cache.source)
        return 0;
    if (w->bind_pid != 0)
        return 1;
    CacheBindSpec spec = {
        .source = w->cache.source,
        .owner_dir = w->cache.owner_dir,
        .mountpoint = w->mountpoint,
        .name = w->cache.name,
        .mount_dev = w->rec.mount_dev,
    };
    w->bind_dev = w->rec.mount_dev;
    int r = cache_bind_start(&spec, &w->bind_pid, &w->bind_pidfd, &w->bind_msgfd);
    if (r >= 0)
        r = sd_event_add_io(w->sup->event, &w->bind_source, w->bind_pidfd, EPOLLIN, cache_child_handler, w);
    if (r >= 0)
        r = arm_timer(w, &w->bind_timer, w->ready_timeout, cache_timer_handler);
    if (r < 0) {
        cache_child_abandon(w);
        snprintf(w->cache_message, sizeof w->cache_message, "cannot start the child that mounts it: %s",
                 strerror(-r));
        ws_log(w, LOG_WARNING, "cache not mounted: %s", w->cache_message);
        w->cache_state = SUPERVISOR_CACHE_FAILED;
        return 0;
    }
    w->cache_state = SUPERVISOR_CACHE_PENDING;
    return 1;
}

/* ---- supervisor-wide sources ------------------------------------------- */

static void mountinfo_check(Supervisor *s) {
    FuseMount *m = NULL;
    size_t n = 0;
    if (fuse_cleanup_read_mounts(NULL, &m, &n) < 0)
        return;
    usec_t now = now_mono();
    for (size_t i = 0; i < s->n_ws; i++) {
        Workspace *w = s->ws[i];
        /* With a child mounting its cache, READY comes from the child. */
        if (w->state != SUPERVISOR_STARTING || w->pid == 0 || w->bind_pid != 0)
            continue;
        const FuseMount *fm = fuse_cleanup_find(m, n, w->mountpoint);
        if (!fm)
            continue;
        w->rec.mount_dev = fm->devno;
        w->ready_latency = now - w->spawned_at;
        ws_persist(w);
        ws_log(w, LOG_NOTICE, "ready: %s mounted at %s (dev %u:%u) after %" PRIu64 " ms",
               fm->fstype, w->mountpoint, major(fm->devno), minor(fm->devno),
               w->ready_latency / USEC_PER_MSEC);
        /* Its cache is mounted before it is RUNNING: tools that are handed
         * the cache's path must never write into the FUSE mount's own
         * directory of that name instead. */
        if (cache_mount_begin(w) > 0)
            continue;
        workspace_dispatch(w, SUPERVISOR_EVENT_READY);
    }
    fuse_cleanup_mounts_free(m, n);
}

/* A cache that was unmounted behind the supervisor's back (an operator's
 * umount, a pod's lazy unmount of a shared copy) is mounted again, so that
 * "mounted" in the status stays true. Only while some cache is mounted:
 * one more read of the mount table per change then. */
static void cache_mounts_check(Supervisor *s) {
    _cleanup_free_ char **paths = NULL;
    _cleanup_free_ bool *found = NULL;
    _cleanup_free_ Workspace **ws = NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->n_ws; i++) {
        Workspace *w = s->ws[i];
        if (w->state != SUPERVISOR_RUNNING || w->cache_state != SUPERVISOR_CACHE_MOUNTED || w->bind_pid != 0)
            continue;
        if (!paths && (!(paths = calloc(s->n_ws, sizeof(char *))) || !(found = calloc(s->n_ws, sizeof(bool))) ||
                       !(ws = calloc(s->n_ws, sizeof(Workspace *)))))
            goto out;
        if (asprintf(&paths[n], "%s/%s", w->mountpoint, w->cache.name) < 0) {
            paths[n] = NULL;
            goto out;
        }
        ws[n++] = w;
    }
    if (n == 0 || cache_bind_mounted(paths, n, found) < 0)
        goto out;
    for (size_t i = 0; i < n; i++)
        if (!found[i]) {
            ws_log(ws[i], LOG_WARNING, "its cache at %s was unmounted: mounting it again", paths[i]);
            (void) cache_mount_begin(ws[i]);
        }
out:
    for (size_t i = 0; i < n; i++)
        free(paths[i]);
}

static void on_mounts_changed(void *userdata) {
    mountinfo_check(userdata);
    cache_mounts_check(userdata);
}

static Workspace *workspace_free(Workspace *w) {
    if (!w)
        return NULL;
    /* Only our handles: the daemon, its mount and its FIFO stay. */
    w->pid_source = sd_event_source_disable_unref(w->pid_source);
    w->pidfd = safe_close(w->pidfd);
    w->timer = sd_event_source_disable_unref(w->timer);
    w->hang_timer = sd_event_source_disable_unref(w->hang_timer);
    w->log_source = sd_event_source_disable_unref(w->log_source);
    w->log_fd = safe_close(w->log_fd);
    cache_child_abandon(w);
    cache_config_done(&w->cache_next);
    cache_config_done(&w->cache);
    free(w->id);
    strv_free(w->argv);
    strv_free(w->env);
    strv_free(w->running_env);
    free(w->mountpoint);
    free(w->fifo_path);
    spawn_credentials_done(&w->creds);
    free(w);
    return NULL;
}

static void stop_all_check(Supervisor *s) {
    if (!s->stop_all_active)
        return;
    for (size_t i = 0; i < s->n_ws; i++)
        if (!IN_SET_STOPPED(s->ws[i]->state))
            return;
    s->stop_all_active = false;
    disarm(s->stop_all_timer);
    SupervisorDoneCallback cb = s->stop_all_cb;
    s->stop_all_cb = NULL;
    if (cb)
        cb(s, s->stop_all_userdata);
}

static int post_handler(sd_event_source *src, void *userdata) {
    Supervisor *s = userdata;
    for (size_t i = 0; i < s->n_ws;) {
        Workspace *w = s->ws[i];
        if (!w->removing || !IN_SET_STOPPED(w->state)) {
            i++;
            continue;
        }
        memmove(s->ws + i, s->ws + i + 1, (s->n_ws - i - 1) * sizeof(Workspace *));
        s->n_ws--;
        if (w->fifo_path)
            (void) unlink(w->fifo_path);
        mountpoint_remove(w);
        if (w->remove_cb)
            w->remove_cb(s, w->id, w->remove_userdata);
        workspace_free(w);
    }
    stop_all_check(s);
    return 0;
}

static int stop_all_timer_handler(sd_event_source *src, uint64_t usec, void *userdata) {
    Supervisor *s = userdata;
    for (size_t i = 0; i < s->n_ws; i++)
        if (s->ws[i]->state == SUPERVISOR_STOPPING) {
            ws_log(s->ws[i], LOG_WARNING, "stop-all timeout: sending SIGKILL");
            workspace_dispatch(s->ws[i], SUPERVISOR_EVENT_STOP_TIMEOUT);
        }
    return 0;
}

/* ---- public API -------------------------------------------------------- */

void supervisor_spec_from_config(WorkspaceSpec *spec, const WorkspaceConfig *c) {
    spec->user = c->user;
    spec->group = c->group;
    spec->environment = c->environment;
    spec->restart = c->restart;
    spec->backoff_initial = c->backoff_initial;
    spec->backoff_max = c->backoff_max;
    spec->backoff_reset_after = c->backoff_reset_after;
    spec->crashloop_deaths = c->crashloop_deaths;
    spec->crashloop_interval = c->crashloop_interval;
    spec->ready_timeout = c->ready_timeout;
    spec->stop_timeout = c->stop_timeout;
    spec->hang_timeout = c->hang_timeout;
    spec->restart_on_hang = c->restart_on_hang;
    spec->oom_score_adjust = c->oom_score_adjust;
}

int supervisor_new(sd_event *e, const SupervisorCallbacks *cb, void *userdata,
                   const char *runtime_dir, Supervisor **ret) {
    if (!e || !ret)
        return -EINVAL;
    Supervisor *s = calloc(1, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->event = sd_event_ref(e);
    if (cb)
        s->cb = *cb;
    s->userdata = userdata;
    int r = proc_boot_id(s->boot_id, &s->boot_id_hash);
    if (r < 0)
        goto fail;
    if (runtime_dir) {
        r = mkdir_p(runtime_dir, 0700);
        if (r < 0)
            goto fail;
        s->runtime_dir = strdup(runtime_dir);
        if (!s->runtime_dir) {
            r = -ENOMEM;
            goto fail;
        }
    }
    /* A daemon is ready when its mount appears: libmount's monitor says
     * when the table changed, mountinfo_check() looks. */
    r = mount_monitor_new(e, on_mounts_changed, s, &s->mount_monitor);
    if (r < 0)
        goto fail;
    r = sd_event_add_defer(e, &s->post_source, post_handler, s);
    if (r < 0)
        goto fail;
    (void) sd_event_source_set_enabled(s->post_source, SD_EVENT_OFF);
    *ret = s;
    return 0;
fail:
    supervisor_free(s);
    return r;
}

Supervisor *supervisor_free(Supervisor *s) {
    if (!s)
        return NULL;
    for (size_t i = 0; i < s->n_ws; i++)
        workspace_free(s->ws[i]);
    free(s->ws);
    s->mount_monitor = mount_monitor_free(s->mount_monitor);
    s->post_source = sd_event_source_disable_unref(s->post_source);
    s->stop_all_timer = sd_event_source_disable_unref(s->stop_all_timer);
    free(s->runtime_dir);
    sd_event_unref(s->event);
    free(s);
    return NULL;
}

static Workspace *find_ws(Supervisor *s, const char *id) {
    for (size_t i = 0; s && id && i < s->n_ws; i++)
        if (streq(s->ws[i]->id, id))
            return s->ws[i];
    return NULL;
}

/* Re-adoption. Returns 1 when the recorded daemon is alive and ours (held
 * by a pidfd now), 0 when it is gone. */
static int try_adopt(Workspace *w, const DaemonRecord *rec) {
    Supervisor *s = w->sup;
    uint64_t st;

    /* The id itself where the record has it (an operator matches it with
     * `journalctl -b`); a record of an older layoutd has only its hash. */
    bool same_boot = rec->boot_id[0] ? streq(rec->boot_id, s->boot_id) : rec->boot_id_hash == s->boot_id_hash;
    if (!same_boot) {
        ws_log(w, LOG_NOTICE, "recorded daemon is from another boot");
        return 0;
    }
    if (proc_start_time(rec->pid, &st) < 0 || st != rec->start_time || proc_is_dead(rec->pid)) {
        ws_log(w, LOG_NOTICE, "recorded daemon (pid %d) is gone", (int) rec->pid);
        return 0;
    }
    _cleanup_close_ int pidfd = proc_pidfd_open(rec->pid);
    if (pidfd < 0)
        return 0;
    /* The pid could have died and been reused between the check above and
     * pidfd_open; now that the pidfd pins the process, look again. */
    if (proc_start_time(rec->pid, &st) < 0 || st != rec->start_time)
        return 0;
    int r = watch_process(w, rec->pid, pidfd);
    if (r < 0) {
        w->pid = 0;
        w->pidfd = -EBADF;
        return r;
    }
    TAKE_FD(pidfd);
    w->adopted = true;
    return 1;
}

static bool spec_is_valid(const WorkspaceSpec *spec) {
    return spec && spec->id && spec->argv && spec->argv[0] && spec->argv[0][0] == '/' && spec->mountpoint &&
           spec->mountpoint[0] == '/';
}

/* What the next spawn runs, and how: all or nothing (w keeps what it had
 * when any part fails). */
static int workspace_configure(Workspace *w, const WorkspaceSpec *spec) {
    _cleanup_strv_free_ char **argv = NULL, **env = NULL;
    _cleanup_(cache_config_done) CacheConfig cache = {};
    SpawnCredentials creds = {};
    if (spec->cache_source) {
        if (spec->cache_source[0] != '/' || !cache_bind_name_is_valid(spec->cache_name) || !spec->cache_owner_dir)
            return -EINVAL;
        CacheConfig given = { (char *) spec->cache_source, (char *) spec->cache_name, (char *) spec->cache_owner_dir };
        if (cache_config_copy(&cache, &given) < 0)
            return -ENOMEM;
    }
    int r = strv_copy((const char *const *) spec->argv, &argv);
    if (r < 0)
        return r;
    r = spawn_resolve_credentials(spec->user, spec->group, &creds);
    if (r < 0)
        return r;
    r = spawn_build_environment((const char *const *) spec->environment, creds.home, spec->id, spec->shards, &env);
    if (r < 0) {
        spawn_credentials_done(&creds);
        return r;
    }
    strv_free(w->argv);
    w->argv = TAKE_PTR(argv);
    strv_free(w->env);
    w->env = TAKE_PTR(env);
    spawn_credentials_done(&w->creds);
    w->creds = creds;
    w->bp = (BackoffParams) {
        .initial = spec->backoff_initial,
        .max = spec->backoff_max,
        .reset_after = spec->backoff_reset_after,
        .crashloop_deaths = spec->crashloop_deaths,
        .crashloop_interval = spec->crashloop_interval,
    };
    w->restart = spec->restart;
    w->ready_timeout = spec->ready_timeout ?: 10 * USEC_PER_SEC;
    w->stop_timeout = spec->stop_timeout ?: 10 * USEC_PER_SEC;
    w->hang_timeout = spec->hang_timeout;
    w->restart_on_hang = spec->restart_on_hang;
    w->oom_score_adjust = spec->oom_score_adjust;
    cache_config_done(&w->cache_next);
    w->cache_next = cache;
    cache = (CacheConfig) {};
    return 0;
}

int supervisor_update(Supervisor *s, const WorkspaceSpec *spec) {
    if (!s || !spec_is_valid(spec))
        return -EINVAL;
    Workspace *w = find_ws(s, spec->id);
    if (!w)
        return -ENOENT;
    if (!streq(w->mountpoint, spec->mountpoint))
        return -EINVAL; /* the mount point names the workspace's mount */
    return workspace_configure(w, spec);
}

int supervisor_add(Supervisor *s, const WorkspaceSpec *spec, const DaemonRecord *adopt) {
    if (!s || !spec_is_valid(spec))
        return -EINVAL;
    if (find_ws(s, spec->id))
        return -EEXIST;

    Workspace *w = calloc(1, sizeof *w);
    if (!w)
        return -ENOMEM;
    w->sup = s;
    w->pidfd = w->log_fd = w->bind_pidfd = w->bind_msgfd = -EBADF;
    int r = -ENOMEM;
    w->id = strdup(spec->id);
    w->mountpoint = strdup(spec->mountpoint);
    if (!w->id || !w->mountpoint)
        goto fail;
    r = workspace_configure(w, spec);
    if (r < 0)
        goto fail;
    if (s->runtime_dir && asprintf(&w->fifo_path, "%s/%s.log", s->runtime_dir, spec->id) < 0) {
        w->fifo_path = NULL;
        r = -ENOMEM;
        goto fail;
    }
    w->state = SUPERVISOR_STOPPED;
    w->since = now_mono();

    if (s->n_ws == s->cap_ws) {
        size_t cap = MAX(s->cap_ws * 2, (size_t) 16);
        Workspace **t = realloc(s->ws, cap * sizeof(Workspace *));
        if (!t) {
            r = -ENOMEM;
            goto fail;
        }
        s->ws = t;
        s->cap_ws = cap;
    }
    s->ws[s->n_ws++] = w;

    if (adopt) {
        w->rec.restarts = adopt->restarts;
        w->ever_ran = adopt->pid != 0;
    }
    if (adopt && adopt->pid > 0 && try_adopt(w, adopt) > 0) {
        w->rec = *adopt;
        FuseMount *m = NULL;
        size_t n = 0;
        const FuseMount *fm = NULL;
        if (fuse_cleanup_read_mounts(NULL, &m, &n) >= 0)
            fm = fuse_cleanup_find(m, n, w->mountpoint);
        bool healthy = fm && (adopt->mount_dev == 0 || fm->devno == adopt->mount_dev);
        if (fm)
            w->rec.mount_dev = fm->devno;
        fuse_cleanup_mounts_free(m, n);

        /* Pick its output up again where the FIFO is. */
        struct stat st;
        if (w->fifo_path && lstat(w->fifo_path, &st) == 0 && S_ISFIFO(st.st_mode)) {
            int fd = open(w->fifo_path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
            if (fd >= 0 && log_watch(w, fd) < 0)
                log_close(w);
        }
        ws_log(w, LOG_NOTICE, "re-adopted daemon pid %d%s", (int) w->pid,
               healthy ? "" : ", but its mount is missing or foreign: restarting it");
        cache_instance_begin(w);
        ws_persist(w);
        workspace_dispatch(w, SUPERVISOR_EVENT_ADOPTED);
        /* A hung connection is left to the hang watch: one sample of
         * "waiting" cannot tell stuck from busy. */
        if (!healthy)
            workspace_dispatch(w, SUPERVISOR_EVENT_RESTART_REQUESTED);
        else
            /* Its cache may have been unmounted while no agent watched (or
             * this agent is the first with a cache): found or mounted
             * again, the daemon serving on meanwhile. */
            (void) cache_mount_begin(w);
        return 0;
    }
    if (adopt && adopt->pid > 0) {
        w->rec.pid = 0;
        w->rec.start_time = 0;
    }
    workspace_dispatch(w, SUPERVISOR_EVENT_START);
    return 0;

fail:
    workspace_free(w);
    return r;
}

int supervisor_remove(Supervisor *s, const char *id, SupervisorRemovedCallback cb, void *userdata) {
    Workspace *w = find_ws(s, id);
    if (!w)
        return -ENOENT;
    if (w->removing)
        return -EALREADY;
    w->removing = true;
    w->remove_cb = cb;
    w->remove_userdata = userdata;
    workspace_dispatch(w, SUPERVISOR_EVENT_STOP_REQUESTED);
    schedule_post(s);
    return 0;
}

int supervisor_restart(Supervisor *s, const char *id) {
    Workspace *w = find_ws(s, id);
    if (!w)
        return -ENOENT;
    if (w->removing || s->stop_all_active)
        return -EBUSY;
    workspace_dispatch(w, SUPERVISOR_EVENT_RESTART_REQUESTED);
    return 0;
}

size_t supervisor_unblock(Supervisor *s) {
    size_t n = 0;
    if (!s || s->stop_all_active)
        return 0;
    /* Workspaces are freed only from the post source, never from a
     * dispatch: the array stays as it is during this loop. */
    for (size_t i = 0; i < s->n_ws; i++) {
        Workspace *w = s->ws[i];
        if (w->state != SUPERVISOR_BLOCKED || w->removing)
            continue;
        workspace_dispatch(w, SUPERVISOR_EVENT_UNBLOCKED);
        if (w->state != SUPERVISOR_BLOCKED)
            n++;
    }
    return n;
}

int supervisor_stop_all(Supervisor *s, usec_t total_timeout, SupervisorDoneCallback cb,
                        void *userdata) {
    if (!s)
        return -EINVAL;
    if (s->stop_all_active)
        return -EALREADY;
    s->stop_all_active = true;
    s->stop_all_cb = cb;
    s->stop_all_userdata = userdata;
    for (size_t i = 0; i < s->n_ws; i++) {
        Workspace *w = s->ws[i];
        if (w->state == SUPERVISOR_STOPPING || w->state == SUPERVISOR_RUNNING ||
            w->state == SUPERVISOR_STARTING) {
            /* Bound the per-workspace grace by the total. */
            if (w->stop_timeout > total_timeout)
                w->stop_timeout = total_timeout;
        }
        workspace_dispatch(w, SUPERVISOR_EVENT_STOP_REQUESTED);
    }
    int r = 0;
    if (total_timeout != USEC_INFINITY) {
        if (!s->stop_all_timer)
            r = sd_event_add_time_relative(s->event, &s->stop_all_timer, CLOCK_MONOTONIC,
                                           total_timeout, TIMER_ACCURACY, stop_all_timer_handler, s);
        else {
            r = sd_event_source_set_time_relative(s->stop_all_timer, total_timeout);
            if (r >= 0)
                r = sd_event_source_set_enabled(s->stop_all_timer, SD_EVENT_ONESHOT);
        }
    }
    schedule_post(s);
    return r < 0 ? r : 0;
}

int supervisor_sweep_stale(Supervisor *s, const char *mount_root) {
    if (!s || !mount_root || mount_root[0] != '/')
        return -EINVAL;
    FuseMount *m = NULL;
    size_t n = 0;
    int r = fuse_cleanup_read_mounts(NULL, &m, &n);
    if (r < 0)
        return r;
    size_t rl = strlen(mount_root);
    while (rl > 1 && mount_root[rl - 1] == '/')
        rl--;
    int cleaned = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = m[i].target;
        if (strncmp(t, mount_root, rl) != 0 || t[rl] != '/')
            continue;
        /* A supervised workspace's own mount point is the supervisor's
         * business (cleaned before each spawn and after each exit); a
         * daemon that is starting may be mounting there right now. */
        bool owned = false;
        for (size_t j = 0; j < s->n_ws && !owned; j++)
            owned = streq(s->ws[j]->mountpoint, t) && !IN_SET_STOPPED(s->ws[j]->state);
        if (owned)
            continue;
        int k = fuse_cleanup_mountpoint(t);
        if (s->cb.on_log) {
            char buf[PATH_MAX + 128];
            if (k < 0)
                snprintf(buf, sizeof buf, "cannot remove stale FUSE mount %s: %s", t, strerror(-k));
            else
                snprintf(buf, sizeof buf, "removed stale FUSE mount %s", t);
            s->cb.on_log(NULL, k < 0 ? LOG_WARNING : LOG_NOTICE, buf, s->userdata);
        }
        if (k > 0)
            cleaned += k;
    }
    fuse_cleanup_mounts_free(m, n);
    return cleaned;
}

static void fill_status(Workspace *w, WorkspaceStatus *ret) {
    *ret = (WorkspaceStatus) {
        .id = w->id,
        .state = w->state,
        .pid = w->pid,
        .adopted = w->adopted,
        .restarts = w->rec.restarts,
        .exited = w->exited,
        .exit_status = w->exit_status,
        .exit_signal = w->exit_signal,
        .since = w->since,
        .running_since = w->state == SUPERVISOR_RUNNING ? w->running_since : 0,
        .ready_latency = w->ready_latency,
        .next_delay = w->state == SUPERVISOR_BACKOFF ? w->next_delay : 0,
        .mount_dev = w->rec.mount_dev,
        .hangs = w->hangs,
        .cache_state = w->cache_state,
        .cache_message = w->cache_state == SUPERVISOR_CACHE_FAILED ? w->cache_message : NULL,
    };
    unsigned k = MIN(w->n_delays, (unsigned) SUPERVISOR_DELAY_HISTORY);
    for (unsigned i = 0; i < k; i++)
        ret->delays[i] = w->delays[(w->n_delays - k + i) % SUPERVISOR_DELAY_HISTORY];
    ret->n_delays = k;
}

int supervisor_daemon_getenv(Supervisor *s, const char *id, const char *key, char **ret) {
    Workspace *w = find_ws(s, id);
    if (!w || !key || !ret)
        return -ENOENT;
    if (w->pid <= 0)
        return -ESRCH;
    if (!w->running_env) {
        int r = proc_environ(w->pid, &w->running_env);
        if (r < 0)
            return r;
    }
    size_t k = strlen(key);
    for (char **e = w->running_env; *e; e++)
        if (strncmp(*e, key, k) == 0 && (*e)[k] == '=') {
            if (!(*ret = strdup(*e + k + 1)))
                return -ENOMEM;
            return 1;
        }
    *ret = NULL;
    return 0;
}

int supervisor_get_status(Supervisor *s, const char *id, WorkspaceStatus *ret) {
    Workspace *w = find_ws(s, id);
    if (!w || !ret)
        return -ENOENT;
    fill_status(w, ret);
    return 0;
}

size_t supervisor_count(Supervisor *s) {
    return s ? s->n_ws : 0;
}

int supervisor_get_status_by_index(Supervisor *s, size_t i, WorkspaceStatus *ret) {
    if (!s || i >= s->n_ws || !ret)
        return -ENOENT;
    fill_status(s->ws[i], ret);
    return 0;
}
