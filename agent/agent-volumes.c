/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Volumes in the agent: observe -> plan -> apply at start and on reload
 * (only the difference: an unchanged volume plans no step), carving one more
 * state volume when placement asks for it, and the flush probe.
 *
 * The flush probe writes and fsyncs 4 KiB on every mounted volume at the
 * layout's interval and times it: the volume's current flush cost, the very
 * thing layoutd exists to bound. It runs in a child process (this binary,
 * `--flush-probe DIR...`), because an fsync on a busy volume can take
 * seconds and the event loop must not wait for it.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "agent.h"
#include "log.h"
#include "util.h"

static void log_apply_result(const ApplyResult *res) {
    for (size_t i = 0; i < res->n_volumes; i++) {
        const ApplyVolumeResult *v = &res->volumes[i];
        for (size_t j = 0; j < v->n_steps; j++) {
            const ApplyStepResult *s = &v->steps[j];
            if (s->error < 0)
                log_error("volume %s: %s: failed: %s", v->volume, s->description,
                          s->message ? s->message : strerror(-s->error));
            else if (s->changed)
                log_info("volume %s: %s%s%s", v->volume, s->description, s->message ? ": " : "",
                         s->message ? s->message : "");
        }
        for (char **n = v->notes; n && *n; n++)
            log_warning("volume %s: %s", v->volume, *n);
        switch (v->outcome) {
        case APPLY_OUTCOME_FAILED:
            log_error("volume %s: failed%s: %s", v->volume, v->rolled_back ? " (rolled back)" : "",
                      v->message ? v->message : strerror(-v->error));
            break;
        case APPLY_OUTCOME_REFUSED:
            log_error("volume %s: refused, left untouched: %s", v->volume, v->message ? v->message : "");
            break;
        case APPLY_OUTCOME_CHANGED:
            log_info("volume %s: up (changed)", v->volume);
            break;
        default:
            log_debug("volume %s: up (unchanged)", v->volume);
        }
    }
}

int agent_volumes_observe(Agent *a, Observation **ret) {
    int r = observe_volumes(a->layout, a->record, ret);
    if (r >= 0)
        agent_vdo_observe_fixup(a, *ret); /* vdo-xfs mounts are of the dm device */
    return r;
}

/* Observes, plans and applies the layout `l` (the agent's, or a variant of
 * it); only steps of `only` when it is not NULL. */
static int volumes_apply(Agent *a, const Layout *l, const char *only, ApplyResult **ret) {
    _cleanup_(observation_freep) Observation *obs = NULL;
    _cleanup_(plan_freep) Plan *plan = NULL;
    int r;

    r = observe_volumes(l, a->record, &obs);
    if (r < 0)
        return r;
    r = plan_compute(l, a->record, obs, &plan);
    if (r < 0)
        return r;
    if (only) {
        /* Keep the steps of one volume: move them to the front, and hide
         * the rest from apply (plan_free still frees every step). */
        size_t k = 0;
        for (size_t i = 0; i < plan->n_steps; i++)
            if (streq(plan->steps[i].volume, only)) {
                PlanStep t = plan->steps[k];
                plan->steps[k++] = plan->steps[i];
                plan->steps[i] = t;
            }
        size_t all = plan->n_steps;
        plan->n_steps = k;
        r = apply_plan(l, plan, NULL, a->record, a->record_path, ret);
        plan->n_steps = all;
        return r;
    }
    return apply_plan(l, plan, obs, a->record, a->record_path, ret);
}

int agent_volumes_apply(Agent *a) {
    _cleanup_(apply_result_freep) ApplyResult *res = NULL;
    int r = volumes_apply(a, a->layout, NULL, &res);
    if (r < 0)
        return log_error_errno(r, "Failed to apply the layout's volumes: %m");
    log_apply_result(res);
    apply_result_free(a->last_apply);
    a->last_apply = TAKE_PTR(res);
    return 0;
}

static bool outcome_is_up(ApplyOutcome o) {
    return o == APPLY_OUTCOME_CHANGED || o == APPLY_OUTCOME_UNCHANGED;
}

size_t agent_volumes_up(Agent *a) {
    size_t n = 0;
    for (size_t i = 0; a->last_apply && i < a->last_apply->n_volumes; i++)
        if (outcome_is_up(a->last_apply->volumes[i].outcome))
            n++;
    return n;
}

/* Replaces (or adds) the entry of one volume in last_apply. */
static int merge_apply_result(Agent *a, ApplyResult *res) {
    if (!a->last_apply) {
        a->last_apply = res;
        return 0;
    }
    for (size_t i = 0; i < res->n_volumes; i++) {
        ApplyVolumeResult *v = &res->volumes[i];
        size_t j;
        for (j = 0; j < a->last_apply->n_volumes; j++)
            if (streq(a->last_apply->volumes[j].volume, v->volume))
                break;
        if (j == a->last_apply->n_volumes) {
            ApplyVolumeResult *t = realloc(a->last_apply->volumes, sizeof(*t) * (j + 1));
            if (!t)
                return -ENOMEM;
            a->last_apply->volumes = t;
            a->last_apply->n_volumes++;
        } else {
            /* Free the old entry by handing it to a one-volume result. */
            ApplyResult old = { .volumes = malloc(sizeof(ApplyVolumeResult)), .n_volumes = 1 };
            if (!old.volumes)
                return -ENOMEM;
            old.volumes[0] = a->last_apply->volumes[j];
            ApplyResult *p = malloc(sizeof(ApplyResult));
            if (!p) {
                free(old.volumes);
                return -ENOMEM;
            }
            *p = old;
            apply_result_free(p);
        }
        a->last_apply->volumes[j] = *v;
    }
    res->n_volumes = 0;
    apply_result_free(res);
    return 0;
}

/*
 * PlaceCarveFunc: carves state volume `index` when every existing one is at
 * its bound. The variant layout declares one more volume; its plan is cut
 * down to that volume's steps, so nothing else is touched.
 *
 * This runs synchronously on the event loop: a carve takes about a second
 * for small volumes (mkfs is a child process, but we wait for it). Making
 * it asynchronous needs the API to suspend the request until the volume is
 * up; until then a create that carves holds the loop for that long.
 */
int agent_carve(void *userdata, PoolRole role, unsigned index, char **ret_volume_name) {
    Agent *a = userdata;
    _cleanup_free_ char *name = NULL;
    ApplyResult *res = NULL;
    int r;

    if (role != POOL_STATE)
        return -EOPNOTSUPP;
    Layout variant = *a->layout;
    if (index >= variant.pools[role].max_volumes)
        return -ENOSPC;
    variant.pools[role].min_volumes = MAX(variant.pools[role].min_volumes, index + 1);
    r = layout_volume_name(role, index, &name);
    if (r < 0)
        return r;

    log_info("volume %s: carving a new flush domain (every state volume is at its bound)", name);
    usec_t t0 = now_usec(CLOCK_MONOTONIC);
    r = volumes_apply(a, &variant, name, &res);
    usec_t took = now_usec(CLOCK_MONOTONIC) - t0;
    if (r < 0)
        return log_error_errno(r, "volume %s: carve failed: %m", name);
    log_apply_result(res);
    bool ok = apply_result_ok(res);
    int err = res->n_volumes > 0 ? res->volumes[0].error : 0;
    r = merge_apply_result(a, res);
    if (r < 0)
        return r;
    if (!ok)
        return err < 0 ? err : -EIO;
    /* Said out loud, since the event loop waited this long (see above). */
    log_info("volume %s: carved in %" PRIu64 " ms", name, took / USEC_PER_MSEC);
    (void) agent_flush_probe_start(a); /* the new volume gets probed too */
    *ret_volume_name = TAKE_PTR(name);
    return 0;
}

/* ---- the flush probe ---------------------------------------------------- */

#define PROBE_FILE ".layoutd-flush-probe"

int agent_flush_probe_child(int argc, char **argv) {
    static char block[4096];
    memset(block, 0xa5, sizeof block);
    for (int i = 0; i < argc; i++) {
        _cleanup_free_ char *p = NULL;
        if (asprintf(&p, "%s/%s", argv[i], PROBE_FILE) < 0)
            return 1;
        usec_t t0 = now_usec(CLOCK_MONOTONIC);
        int err = 0;
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
            err = errno;
        else {
            if (write(fd, block, sizeof block) != (ssize_t) sizeof block)
                err = errno ? errno : EIO;
            else if (fsync(fd) < 0)
                err = errno;
            close(fd);
        }
        printf("%" PRIu64 " %d\n", now_usec(CLOCK_MONOTONIC) - t0, err);
        fflush(stdout);
    }
    return 0;
}

FlushProbe *agent_flush_probe_find(Agent *a, const char *volume) {
    for (size_t i = 0; i < a->n_probes; i++)
        if (streq(a->probes[i].volume, volume))
            return &a->probes[i];
    return NULL;
}

static FlushProbe *probe_get(Agent *a, const char *volume) {
    FlushProbe *p = agent_flush_probe_find(a, volume);
    if (p)
        return p;
    /* Buckets from 100 us to 30 s: a healthy probe takes a millisecond or
     * two, a shared journal under load tens of seconds. */
    static const double bounds[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
                                     0.05,   0.1,     0.25,   0.5,   1,      2.5,   5,    10, 30 };
    FlushProbe *t = realloc(a->probes, sizeof(FlushProbe) * (a->n_probes + 1));
    if (!t)
        return NULL;
    a->probes = t;
    p = &a->probes[a->n_probes];
    *p = (FlushProbe) { .volume = strdup(volume) };
    if (!p->volume)
        return NULL;
    (void) metrics_histogram_init(&p->histogram, bounds, ELEMENTSOF(bounds));
    a->n_probes++;
    return p;
}

static void probe_reset_child(Agent *a) {
    a->probe_child = sd_event_source_disable_unref(a->probe_child);
    a->probe_pipe = safe_close(a->probe_pipe);
    a->probe_volumes = strv_free(a->probe_volumes);
    a->probe_pid = 0;
}

static int on_probe_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
    Agent *a = userdata;
    char buf[16384];
    ssize_t n = read(a->probe_pipe, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    char *line = buf;
    for (char **v = a->probe_volumes; v && *v; v++) {
        uint64_t usec;
        int err;
        if (!line || sscanf(line, "%" SCNu64 " %d", &usec, &err) != 2)
            break;
        line = strchr(line, '\n');
        if (line)
            line++;
        FlushProbe *p = probe_get(a, *v);
        if (!p)
            continue;
        p->at = now_usec(CLOCK_REALTIME);
        p->last_error = err;
        if (err) {
            log_warning("volume %s: flush probe failed: %s", *v, strerror(err));
            continue;
        }
        p->has_last = true;
        p->last = usec;
        metrics_histogram_observe(&p->histogram, (double) usec / USEC_PER_SEC);
    }
    probe_reset_child(a);
    return 0;
}

static int probe_run(Agent *a) {
    _cleanup_(observation_freep) Observation *obs = NULL;
    _cleanup_strv_free_ char **args = NULL, **vols = NULL;
    int pipefd[2], r;

    if (a->probe_pid > 0)
        return 0; /* the previous probe is still stuck in fsync: that is the news */
    r = agent_volumes_observe(a, &obs);
    if (r < 0)
        return r;
    if ((r = strv_extend(&args, "/proc/self/exe")) < 0 || (r = strv_extend(&args, "--flush-probe")) < 0)
        return r;
    for (size_t i = 0; i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        bool up = v->backend == BACKEND_DIR ? v->dir_exists : v->mounted_ours;
        if (!up || !v->mount_path)
            continue;
        if ((r = strv_extend(&args, v->mount_path)) < 0 || (r = strv_extend(&vols, v->name)) < 0)
            return r;
    }
    if (!vols)
        return 0;
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return -errno;
    pid_t pid = fork();
    if (pid < 0) {
        r = -errno;
        safe_close(pipefd[0]);
        safe_close(pipefd[1]);
        return r;
    }
    if (pid == 0) {
        /* The child only execs: no allocation, no locks after fork. */
        if (dup2(pipefd[1], STDOUT_FILENO) < 0)
            _exit(127);
        execv("/proc/self/exe", args);
        _exit(127);
    }
    safe_close(pipefd[1]);
    a->probe_pipe = pipefd[0];
    a->probe_pid = pid;
    a->probe_volumes = TAKE_PTR(vols);
    r = sd_event_add_child(a->event, &a->probe_child, pid, WEXITED, on_probe_exit, a);
    if (r < 0) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        probe_reset_child(a);
        return r;
    }
    return 0;
}

static int on_probe_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    int r = probe_run(a);
    if (r < 0)
        log_warning_errno(r, "Flush probe could not run, ignoring: %m");
    (void) sd_event_source_set_time_relative(s, a->layout->api.flush_probe_interval);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

int agent_flush_probe_start(Agent *a) {
    /* The VDO monitor and fstrim are periodic volume jobs too: they start
     * and stop with the probe (start, reload, carve, stop, free). */
    (void) agent_vdo_start(a);
    if (a->layout->api.flush_probe_interval == 0 || a->stopping)
        return 0;
    if (a->probe_timer) {
        /* Probe soon, so a new volume gets its first sample. */
        (void) sd_event_source_set_time_relative(a->probe_timer, USEC_PER_SEC);
        return sd_event_source_set_enabled(a->probe_timer, SD_EVENT_ONESHOT);
    }
    /* The first probe one second after start, then at the interval. */
    return sd_event_add_time_relative(a->event, &a->probe_timer, CLOCK_MONOTONIC, USEC_PER_SEC, 0,
                                      on_probe_timer, a);
}

void agent_flush_probe_stop(Agent *a) {
    agent_vdo_stop(a);
    a->probe_timer = sd_event_source_disable_unref(a->probe_timer);
    if (a->probe_pid > 0) {
        (void) kill(a->probe_pid, SIGKILL);
        (void) waitpid(a->probe_pid, NULL, 0);
    }
    probe_reset_child(a);
}
