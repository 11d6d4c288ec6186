/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The agent's lifecycle: load the layout, bring volumes up, re-adopt or start
 * workspaces, then READY=1; SIGHUP reloads (a bad layout is refused and the
 * old one keeps running); SIGTERM stops every workspace gracefully and exits;
 * SIGUSR2 exits and leaves the workspaces serving (for upgrades: the next
 * agent re-adopts them).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include "agent.h"
#include "log.h"
#include "util.h"
#include "vdo-apply.h"

/* Formats a layout's errors as "file:line:col: message" lines. */
static char *format_layout_errors(const LayoutErrors *errors, int r) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f)
        return NULL;
    for (size_t i = 0; i < errors->n; i++) {
        const LayoutError *e = &errors->items[i];
        if (e->line > 0)
            fprintf(f, "%s%s:%u:%u: %s", i ? "\n" : "", e->file, e->line, e->column, e->message);
        else
            fprintf(f, "%s%s: %s", i ? "\n" : "", e->file ? e->file : "layout", e->message);
    }
    if (errors->n == 0)
        fprintf(f, "cannot load layout: %s", strerror(-r));
    fclose(f);
    return text;
}

/* Loads the layout named by options (a file, or a directory holding one),
 * with the root override applied. On failure *ret_error says why. */
static int load_layout(const AgentOptions *o, Layout **ret, char **ret_path, char **ret_error) {
    LayoutErrors errors = {};
    _cleanup_free_ char *path = NULL;
    _cleanup_(layout_freep) Layout *l = NULL;
    struct stat st;
    int r;

    if (stat(o->layout, &st) < 0) {
        r = -errno;
        if (asprintf(ret_error, "%s: %s", o->layout, strerror(errno)) < 0)
            *ret_error = NULL;
        return r;
    }
    if (S_ISDIR(st.st_mode)) {
        r = layout_find_in_dir(o->layout, &path, &errors);
        if (r < 0)
            goto fail;
    } else if (!(path = strdup(o->layout)))
        return -ENOMEM;

    r = layout_parse_file(path, &l, &errors);
    if (r < 0)
        goto fail;
    if (o->root) {
        r = layout_set_root(l, o->root);
        if (r < 0) {
            if (asprintf(ret_error, "--root %s: %s", o->root, strerror(-r)) < 0)
                *ret_error = NULL;
            return r;
        }
    }
    *ret = TAKE_PTR(l);
    *ret_path = TAKE_PTR(path);
    return 0;
fail:
    *ret_error = format_layout_errors(&errors, r);
    layout_errors_clear(&errors);
    return r < 0 ? r : -EINVAL;
}

int agent_new(const AgentOptions *o, Agent **ret) {
    _cleanup_(agent_freep) Agent *a = calloc(1, sizeof(Agent));
    _cleanup_free_ char *error = NULL;
    int r;

    if (!a)
        return log_error_errno(ENOMEM, "Out of memory");
    a->options = *o;
    a->probe_pipe = -EBADF;
    a->lock_fd = -EBADF;
    a->started_mono = now_usec(CLOCK_MONOTONIC);

    r = load_layout(o, &a->layout, &a->layout_path, &error);
    if (r < 0)
        return log_error_errno(r, "Invalid layout, not starting:\n%s", error ? error : "(out of memory)");
    r = layout_hash(a->layout, &a->layout_hash);
    if (r < 0)
        return log_error_errno(r, "Failed to hash the layout: %m");
    a->generation = 1;

    r = mkdir_p(a->layout->root, 0755);
    if (r < 0)
        return log_error_errno(r, "Failed to create root %s: %m", a->layout->root);
    r = layout_record_path(a->layout, &a->record_path);
    if (r < 0)
        return log_error_errno(r, "Out of memory");
    /* The same lock layoutctl's plan/apply/teardown take: while the agent
     * runs it owns the volumes, and a second agent on this root (or a
     * layoutctl apply racing us) is refused instead of fighting over them. */
    _cleanup_free_ char *lock = NULL;
    if (asprintf(&lock, "%s/layoutd-state.lock", streq(a->layout->root, "/") ? "" : a->layout->root) < 0)
        return log_error_errno(ENOMEM, "Out of memory");
    a->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (a->lock_fd < 0)
        return log_error_errno(errno, "Failed to open %s: %m", lock);
    if (flock(a->lock_fd, LOCK_EX | LOCK_NB) < 0)
        return log_error_errno(errno, "%s is locked: another layoutd or a layoutctl apply/teardown works on %s",
                               lock, a->layout->root);
    /* A record we cannot read is never overwritten: refuse to start and
     * let the operator look (docs/operations.md). */
    r = state_record_load(a->record_path, &a->record);
    if (r < 0)
        return log_error_errno(r, "Failed to load the record %s, not starting: %m", a->record_path);

    /* vdo-xfs volumes are carried out by src/vdo through apply's hook. */
    vdo_apply_register();

    r = sd_event_default(&a->event);
    if (r < 0)
        return log_error_errno(r, "Failed to allocate the event loop: %m");

    *ret = TAKE_PTR(a);
    return 0;
}

Agent *agent_free(Agent *a) {
    if (!a)
        return NULL;
    agent_flush_probe_stop(a);
    for (size_t i = 0; i < a->n_probes; i++)
        free(a->probes[i].volume);
    free(a->probes);
    a->probe_timer = sd_event_source_disable_unref(a->probe_timer);
    a->api = api_free(a->api);
    /* Leaves daemons running: a stop was done by SIGTERM before, and a
     * detach (SIGUSR2) or crash wants them kept for re-adoption. */
    a->supervisor = supervisor_free(a->supervisor);
    apply_result_free(a->last_apply);
    state_record_free(a->record);
    layout_free(a->layout);
    free(a->layout_path);
    free(a->layout_hash);
    free(a->last_reload_error);
    free(a->record_path);
    safe_close(a->lock_fd);
    free(a->socket_path);
    sd_event_unref(a->event);
    free(a);
    return NULL;
}

void agent_update_status(Agent *a) {
    size_t up = agent_volumes_up(a), total = a->last_apply ? a->last_apply->n_volumes : 0;
    size_t n = a->supervisor ? supervisor_count(a->supervisor) : 0, running = 0;
    for (size_t i = 0; i < n; i++) {
        WorkspaceStatus st;
        if (supervisor_get_status_by_index(a->supervisor, i, &st) >= 0 && st.state == SUPERVISOR_RUNNING)
            running++;
    }
    (void) sd_notifyf(false, "STATUS=%s: %zu/%zu volumes up, %zu/%zu workspaces running%s",
                      a->stopping ? "Stopping" : a->ready ? "Ready" : "Starting", up, total, running, n,
                      a->last_reload_error ? " (last reload failed)" : "");
}

int agent_reload(Agent *a, char **ret_error) {
    _cleanup_(layout_freep) Layout *l = NULL;
    _cleanup_free_ char *path = NULL, *error = NULL, *hash = NULL;
    int r;

    a->last_reload_at = now_usec(CLOCK_REALTIME);
    (void) sd_notifyf(false, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, now_usec(CLOCK_MONOTONIC));
    r = load_layout(&a->options, &l, &path, &error);
    if (r >= 0 && !streq(l->root, a->layout->root)) {
        /* Moving the root would orphan every volume: refuse it. */
        free(error);
        error = NULL;
        if (asprintf(&error, "%s: root changed from %s to %s; a running agent cannot move its volumes", path,
                     a->layout->root, l->root) < 0)
            error = NULL;
        r = -EINVAL;
    }
    if (r < 0) {
        free(a->last_reload_error);
        a->last_reload_error = strdup(error ? error : "invalid layout");
        log_error("Reload refused, the old layout keeps running:\n%s", error ? error : "(out of memory)");
        (void) sd_notify(false, "READY=1");
        agent_update_status(a);
        if (ret_error)
            *ret_error = TAKE_PTR(error);
        return r;
    }
    r = layout_hash(l, &hash);
    if (r < 0)
        return r;

    /* Workspace specs are copied by the supervisor, the engine reads the
     * layout afresh on every call: swapping it is all a reload needs. */
    layout_free(a->layout);
    a->layout = TAKE_PTR(l);
    free(a->layout_path);
    a->layout_path = TAKE_PTR(path);
    bool changed = !streq(hash, a->layout_hash);
    free(a->layout_hash);
    a->layout_hash = TAKE_PTR(hash);
    a->last_reload_error = mfree(a->last_reload_error);
    if (changed)
        a->generation++;
    log_info("Reloaded layout %s (generation %" PRIu64 ", %s)", a->layout_path, a->generation,
             changed ? "changed: applying the difference" : "unchanged");
    if (changed) {
        (void) agent_volumes_apply(a);
        (void) agent_workspaces_start(a);
        agent_flush_probe_stop(a);
        (void) agent_flush_probe_start(a);
    }
    (void) sd_notify(false, "READY=1");
    agent_update_status(a);
    return 0;
}

static void on_all_stopped(Supervisor *s, void *userdata) {
    Agent *a = userdata;
    log_info("All workspaces stopped");
    (void) sd_event_exit(a->event, 0);
}

/* `touch /run/layoutd/restart && systemctl restart layoutd` (or
 * LAYOUTD_KEEP_DAEMONS=1 in the environment) turns the next SIGTERM into a
 * detach: with KillMode=process, systemd only signals us, so the FUSE daemons
 * keep serving and the restarted agent re-adopts them. docs/supervision.md. */
#define RESTART_FLAG "/run/layoutd/restart"

static bool keep_daemons_on_stop(void) {
    const char *e = getenv("LAYOUTD_KEEP_DAEMONS");
    return (e && streq(e, "1")) || access(RESTART_FLAG, F_OK) == 0;
}

static int on_detach_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata);

static int on_stop_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Agent *a = userdata;
    if (keep_daemons_on_stop()) {
        (void) unlink(RESTART_FLAG);
        return on_detach_signal(s, si, userdata);
    }
    if (a->stopping) {
        log_notice("Stop already in progress");
        return 0;
    }
    a->stopping = true;
    log_info("Received %s: stopping every workspace", strsignal((int) si->ssi_signo));
    (void) sd_notify(false, "STOPPING=1");
    if (a->api)
        api_set_state(a->api, API_STATE_STOPPING);
    agent_flush_probe_stop(a);
    if (!a->supervisor || supervisor_count(a->supervisor) == 0)
        return sd_event_exit(a->event, 0);
    /* Daemons stop in parallel; each gets its stop_timeout, the whole stop
     * a little more before stragglers get SIGKILL. */
    usec_t total = a->layout->workspace.stop_timeout + 5 * USEC_PER_SEC;
    int r = supervisor_stop_all(a->supervisor, total, on_all_stopped, a);
    if (r < 0) {
        log_error_errno(r, "Failed to stop workspaces: %m");
        return sd_event_exit(a->event, 1);
    }
    return 0;
}

static int on_detach_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Agent *a = userdata;
    log_notice("Received %s: exiting and leaving workspaces serving for the next agent to re-adopt",
               strsignal((int) si->ssi_signo));
    (void) sd_notify(false, "STOPPING=1");
    return sd_event_exit(a->event, 0);
}

static int on_reload_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
    Agent *a = userdata;
    if (a->stopping)
        return 0;
    log_info("Received SIGHUP: reloading the layout");
    (void) agent_reload(a, NULL);
    return 0;
}

int agent_run(Agent *a) {
    sigset_t mask;
    int r;

    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigaddset(&mask, SIGUSR2);
    sigaddset(&mask, SIGCHLD);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
        return log_error_errno(errno, "Failed to block signals: %m");
    /* A daemon closing its end of a log FIFO must not kill us. */
    signal(SIGPIPE, SIG_IGN);

    if ((r = sd_event_add_signal(a->event, NULL, SIGTERM, on_stop_signal, a)) < 0 ||
        (r = sd_event_add_signal(a->event, NULL, SIGINT, on_stop_signal, a)) < 0 ||
        (r = sd_event_add_signal(a->event, NULL, SIGHUP, on_reload_signal, a)) < 0 ||
        (r = sd_event_add_signal(a->event, NULL, SIGUSR2, on_detach_signal, a)) < 0)
        return log_error_errno(r, "Failed to watch signals: %m");
    /* Pings WATCHDOG=1 from the loop itself, so a hung loop stops pinging. */
    r = sd_event_set_watchdog(a->event, true);
    if (r < 0)
        log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");

    /* A restart flag is for the agent that was running when it was set:
     * left over, it would make our next stop leave the workspaces up. */
    (void) unlink(RESTART_FLAG);

    r = agent_api_start(a);
    if (r < 0)
        return r;

    log_info("layoutd %s: layout %s (root %s, generation %" PRIu64 ")", LAYOUTD_VERSION, a->layout_path,
             a->layout->root, a->generation);
    (void) sd_notify(false, "STATUS=Bringing volumes up");
    (void) agent_volumes_apply(a);

    if (!a->options.no_workspaces) {
        _cleanup_free_ char *runtime = NULL;
        if (asprintf(&runtime, "%s/run", a->layout->root) < 0)
            return log_error_errno(ENOMEM, "Out of memory");
        r = mkdir_p(runtime, 0700);
        if (r < 0)
            return log_error_errno(r, "Failed to create %s: %m", runtime);
        r = supervisor_new(a->event, &agent_supervisor_callbacks, a, runtime, &a->supervisor);
        if (r < 0)
            return log_error_errno(r, "Failed to set up supervision: %m");
        (void) agent_workspaces_start(a);
    }
    (void) agent_flush_probe_start(a);

    a->ready = true;
    if (a->api)
        api_set_state(a->api, API_STATE_READY);
    (void) sd_notify(false, "READY=1");
    agent_update_status(a);
    log_info("Ready: %zu volume(s) up, %zu workspace(s)", agent_volumes_up(a),
             a->supervisor ? supervisor_count(a->supervisor) : 0);

    r = sd_event_loop(a->event);
    if (r < 0)
        return log_error_errno(r, "Event loop failed: %m");
    return r;
}
