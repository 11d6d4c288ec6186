/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * vdo-xfs volumes in the agent (src/vdo does the device work):
 *
 *  - observation: the generic observer (src/observe) compares the mount at
 *    the volume's path with the LOOP device, but a vdo-xfs volume is mounted
 *    from /dev/mapper/layoutd-<volume>, which sits on the loop device. The
 *    fix-up here recognises the dm device (by its node's devno, no libdm
 *    call), so the API, the metrics, capacity and the flush probe see the
 *    volume as up, with its statvfs and its XFS signature;
 *  - the "vdo" object of GET /v1/volumes and the layoutd_vdo_* metrics, from
 *    vdo_volume_stats (one status ioctl and one "stats" message: fast, no
 *    I/O on the data path);
 *  - a monitor timer (every 30 s) that logs mode changes: read-only mode
 *    (possible data loss) marks the volume degraded, placement skips it
 *    (agent_vdo_place_observe) and the log says what to do;
 *  - the periodic fstrim at each pool's vdo.fstrim_interval, in a child
 *    process (an fstrim of a large XFS on VDO can take minutes): its exit is
 *    an event, logged with fstrim's own output. Online discard is refused
 *    for vdo-xfs (dm-vdo/vdo#57), so this is how freed space goes back.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>

#include "agent.h"
#include "log.h"
#include "place-workspaces.h"
#include "util.h"
#include "vdo-volume.h"

#define VDO_MONITOR_INTERVAL (30 * USEC_PER_SEC)

typedef struct AgentVdoVolume {
    char *volume;
    bool known;                  /* a mode was seen before */
    VdoMode mode;
    bool degraded;
    bool index_error;
    bool space_warned;           /* physical usage above 90 % was logged */

    /* fstrim */
    pid_t trim_pid;              /* running, or 0 */
    int trim_pipe;
    sd_event_source *trim_child;
    usec_t trim_started;         /* CLOCK_MONOTONIC */
    usec_t last_trim_at;         /* CLOCK_REALTIME of the last finish, 0: never */
    usec_t last_trim_took;
    int last_trim_status;        /* exit status, or -signal */
    char *last_trim_output;
    uint64_t trims, trim_failures;
} AgentVdoVolume;

struct AgentVdo {
    Agent *agent;
    sd_event_source *timer;
    usec_t next_trim[_POOL_ROLE_MAX];   /* CLOCK_MONOTONIC, 0: not scheduled */
    AgentVdoVolume *volumes;
    size_t n_volumes;
};

static bool layout_has_vdo(const Layout *l) {
    for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
        const Pool *p = layout_pool(l, role);
        if (p && p->backend == BACKEND_VDO_XFS)
            return true;
    }
    return false;
}

static AgentVdoVolume *vdo_volume_get(AgentVdo *vdo, const char *volume) {
    for (size_t i = 0; i < vdo->n_volumes; i++)
        if (streq(vdo->volumes[i].volume, volume))
            return &vdo->volumes[i];
    AgentVdoVolume *t = realloc(vdo->volumes, sizeof(*t) * (vdo->n_volumes + 1));
    if (!t)
        return NULL;
    vdo->volumes = t;
    AgentVdoVolume *v = &vdo->volumes[vdo->n_volumes];
    *v = (AgentVdoVolume) { .volume = strdup(volume), .trim_pipe = -EBADF };
    if (!v->volume)
        return NULL;
    vdo->n_volumes++;
    return v;
}

static AgentVdoVolume *vdo_volume_find(Agent *a, const char *volume) {
    for (size_t i = 0; a->vdo && i < a->vdo->n_volumes; i++)
        if (streq(a->vdo->volumes[i].volume, volume))
            return &a->vdo->volumes[i];
    return NULL;
}

/* The dm node of a vdo-xfs volume and its devno, when it exists. */
static bool vdo_dm_node(const char *volume, char **ret_node, dev_t *ret_devno) {
    _cleanup_free_ char *name = NULL, *node = NULL;
    struct stat st;
    if (vdo_volume_dm_name(volume, &name) < 0 || asprintf(&node, "/dev/mapper/%s", name) < 0)
        return false;
    if (stat(node, &st) < 0 || !S_ISBLK(st.st_mode))
        return false;
    if (ret_devno)
        *ret_devno = st.st_rdev;
    if (ret_node)
        *ret_node = TAKE_PTR(node);
    return true;
}

void agent_vdo_observe_fixup(Agent *a, Observation *obs) {
    for (size_t i = 0; obs && i < obs->n; i++) {
        VolumeObservation *v = &obs->volumes[i];
        _cleanup_free_ char *node = NULL;
        dev_t devno;
        if (v->backend != BACKEND_VDO_XFS || !vdo_dm_node(v->name, &node, &devno))
            continue;
        if (v->mounted && v->mount.devno == devno && !v->mounted_ours) {
            v->mounted_ours = true;
            struct statvfs sv;
            if (statvfs(v->mount_path, &sv) == 0) {
                v->has_statvfs = true;
                v->fs_size = (uint64_t) sv.f_blocks * sv.f_frsize;
                v->fs_used = (uint64_t) (sv.f_blocks - sv.f_bfree) * sv.f_frsize;
                v->fs_avail = (uint64_t) sv.f_bavail * sv.f_frsize;
                v->fs_inodes = sv.f_files;
                v->fs_inodes_free = sv.f_ffree;
            }
        }
        /* The loop device holds the VDO super block; the filesystem the
         * operator cares about is the XFS on the dm device. */
        ProbeResult pr = {};
        if (probe_path(node, &pr) >= 0) {
            if (v->probed)
                probe_result_done(&v->probe);
            v->probe = pr;
            v->probed = true;
            v->probe_error = 0;
        }
    }
}

/* Stats of a vdo-xfs volume whose dm device exists. */
static int vdo_stats_get(const char *volume, VdoStats *ret, char **ret_error) {
    if (!vdo_dm_node(volume, NULL, NULL))
        return -ENXIO;
    return vdo_volume_stats(volume, ret, ret_error);
}

static uint64_t block_size(const VdoStats *s) {
    return s->block_size ? s->block_size : 4096;
}

static const char *vdo_problem(const VdoStats *s) {
    if (s->mode == VDO_MODE_READ_ONLY)
        return "VDO is in read-only mode after an error (data loss is possible); no workspace is placed on it; "
               "take it offline and run vdoforcerebuild (docs/vdo.md)";
    if (s->index_state == VDO_INDEX_ERROR)
        return "the VDO deduplication index is in error: no deduplication until it is rebuilt";
    if (s->mode == VDO_MODE_RECOVERING || s->in_recovery)
        return "VDO is recovering after an unclean shutdown";
    return NULL;
}

void agent_vdo_volume_json(Agent *a, const VolumeObservation *v, json_object *o) {
    if (v->backend != BACKEND_VDO_XFS)
        return;
    json_object *j = json_object_new_object();
    _cleanup_free_ char *name = NULL, *err = NULL;
    if (vdo_volume_dm_name(v->name, &name) >= 0) {
        json_object_object_add(j, "dm_name", json_object_new_string(name));
        _cleanup_free_ char *node = NULL;
        if (vdo_dm_node(v->name, &node, NULL))
            json_object_object_add(j, "dm_node", json_object_new_string(node));
    }
    VdoStats s = {};
    int r = vdo_stats_get(v->name, &s, &err);
    if (r < 0) {
        json_object_object_add(j, "error", json_object_new_string(r == -ENXIO ? "the dm-vdo device is not up"
                                                                  : err ? err : strerror(-r)));
    } else {
        uint64_t bs = block_size(&s);
        json_object_object_add(j, "mode", json_object_new_string(vdo_mode_to_string(s.mode) ?: "unknown"));
        json_object_object_add(j, "recovery", json_object_new_boolean(s.in_recovery));
        if (s.in_recovery)
            json_object_object_add(j, "recovery_percent", json_object_new_int((int) s.recovery_percentage));
        json_object_object_add(j, "index_state",
                               json_object_new_string(vdo_index_state_to_string(s.index_state) ?: "unknown"));
        json_object_object_add(j, "compression_state",
                               json_object_new_string(s.compression_online ? "online" : "offline"));
        json_object_object_add(j, "physical_used_bytes", json_object_new_uint64(s.physical_used * bs));
        json_object_object_add(j, "physical_total_bytes", json_object_new_uint64(s.physical_total * bs));
        if (s.has_message) {
            json_object_object_add(j, "logical_used_bytes", json_object_new_uint64(s.logical_blocks_used * bs));
            json_object_object_add(j, "logical_size_bytes", json_object_new_uint64(s.logical_blocks * bs));
            json_object_object_add(j, "data_used_bytes", json_object_new_uint64(s.data_blocks_used * bs));
            json_object_object_add(j, "overhead_used_bytes", json_object_new_uint64(s.overhead_blocks_used * bs));
            json_object_object_add(j, "no_space_errors", json_object_new_uint64(s.no_space_errors));
            json_object_object_add(j, "read_only_errors", json_object_new_uint64(s.read_only_errors));
        } else
            json_object_object_add(j, "logical_used_bytes", NULL);
        json_object_object_add(j, "saving_percent", json_object_new_int(s.saving_percent));
        json_object_object_add(j, "degraded", json_object_new_boolean(s.degraded));
        const char *problem = vdo_problem(&s);
        json_object_object_add(j, "problem", problem ? json_object_new_string(problem) : NULL);
        /* In service but not as asked: the volume's health says so too. */
        json_object *h = NULL;
        if (s.degraded && json_object_object_get_ex(o, "health", &h) && streq(json_object_get_string(h), "ok"))
            json_object_object_add(o, "health", json_object_new_string("degraded"));
    }

    const Pool *p = layout_pool(a->layout, v->role);
    json_object *t = json_object_new_object();
    json_object_object_add(t, "interval_seconds",
                           json_object_new_int64(p && p->has_vdo ? (int64_t) (p->vdo.fstrim_interval / USEC_PER_SEC) : 0));
    AgentVdoVolume *av = vdo_volume_find(a, v->name);
    json_object_object_add(t, "running", json_object_new_boolean(av && av->trim_pid > 0));
    json_object_object_add(t, "runs", json_object_new_uint64(av ? av->trims : 0));
    json_object_object_add(t, "failures", json_object_new_uint64(av ? av->trim_failures : 0));
    if (av && av->last_trim_at) {
        json_object_object_add(t, "last_at", json_object_new_int64((int64_t) (av->last_trim_at / USEC_PER_SEC)));
        json_object_object_add(t, "last_seconds", json_object_new_double((double) av->last_trim_took / USEC_PER_SEC));
        json_object_object_add(t, "last_ok", json_object_new_boolean(av->last_trim_status == 0));
        json_object_object_add(t, "last_output", av->last_trim_output ? json_object_new_string(av->last_trim_output) : NULL);
    } else
        json_object_object_add(t, "last_at", NULL);
    json_object_object_add(j, "fstrim", t);
    json_object_object_add(o, "vdo", j);
}

void agent_vdo_metrics(Agent *a, const Observation *obs, MetricsWriter *w) {
    size_t n = 0;
    for (size_t i = 0; i < obs->n; i++)
        if (obs->volumes[i].backend == BACKEND_VDO_XFS)
            n++;
    if (n == 0)
        return;
    VdoStats *stats = calloc(n, sizeof(VdoStats));
    const char **names = calloc(n, sizeof(char *));
    if (!stats || !names) {
        free(stats);
        free(names);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < obs->n; i++) {
        const VolumeObservation *v = &obs->volumes[i];
        if (v->backend != BACKEND_VDO_XFS)
            continue;
        if (vdo_stats_get(v->name, &stats[m], NULL) >= 0)
            names[m++] = v->name;
    }

#define VDO_FAMILY(family, type, help, expr)                                                  \
    do {                                                                                    \
        (void) metrics_writer_family(w, family, type, help);                               \
        for (size_t i = 0; i < m; i++) {                                                    \
            const VdoStats *s = &stats[i];                                                  \
            const char *const labels[] = { "volume", names[i], NULL };                      \
            double value;                                                                   \
            if (!(expr))                                                                    \
                continue;                                                                   \
            (void) metrics_writer_sample(w, labels, value);                                 \
        }                                                                                   \
    } while (0)

    VDO_FAMILY("layoutd_vdo_physical_used_bytes", METRIC_GAUGE,
               "Physical bytes in use on the VDO volume (data and VDO metadata)",
               (value = (double) (s->physical_used * block_size(s)), true));
    VDO_FAMILY("layoutd_vdo_physical_total_bytes", METRIC_GAUGE, "Physical size of the VDO volume",
               (value = (double) (s->physical_total * block_size(s)), true));
    VDO_FAMILY("layoutd_vdo_logical_used_bytes", METRIC_GAUGE, "Logical bytes mapped on the VDO volume",
               s->has_message && (value = (double) (s->logical_blocks_used * block_size(s)), true));
    VDO_FAMILY("layoutd_vdo_saving_ratio", METRIC_GAUGE,
               "Space saved by deduplication and compression: (logical used - data used) / logical used",
               s->has_message && (value = s->logical_blocks_used == 0 || s->data_blocks_used >= s->logical_blocks_used
                                                  ? 0.0
                                                  : (double) (s->logical_blocks_used - s->data_blocks_used) /
                                                            (double) s->logical_blocks_used,
                                  true));
    VDO_FAMILY("layoutd_vdo_degraded", METRIC_GAUGE, "1 when the VDO volume is read-only or its index is in error",
               (value = s->degraded, true));
#undef VDO_FAMILY
    (void) metrics_writer_family(w, "layoutd_vdo_mode", METRIC_GAUGE,
                                 "1 for the VDO volume's current operating mode (normal, recovering, read-only)");
    for (size_t i = 0; i < m; i++)
        for (VdoMode mode = 0; mode < _VDO_MODE_MAX; mode++)
            (void) metrics_writer_sample(w, (const char *const[]) { "volume", names[i], "mode", vdo_mode_to_string(mode), NULL },
                                         stats[i].mode == mode);
    (void) metrics_writer_family(w, "layoutd_vdo_fstrim_runs_total", METRIC_COUNTER, "Periodic fstrim runs finished");
    for (size_t i = 0; i < m; i++) {
        AgentVdoVolume *av = vdo_volume_find(a, names[i]);
        (void) metrics_writer_sample(w, (const char *const[]) { "volume", names[i], NULL }, av ? (double) av->trims : 0);
    }
    free(stats);
    free(names);
}

int agent_vdo_place_observe(void *userdata, const VolumeRecord *v, const char *mount_path, PlaceVolumeObservation *ret) {
    int r = place_volume_observe_default(v, mount_path, ret);
    if (r < 0 || v->backend != BACKEND_VDO_XFS)
        return r;
    VdoStats s = {};
    if (vdo_stats_get(v->name, &s, NULL) < 0)
        return 0; /* not up: the default observation already says unavailable */
    if (s.mode == VDO_MODE_READ_ONLY)
        ret->flags |= PLACE_VOLUME_READ_ONLY | PLACE_VOLUME_DEGRADED;
    else if (s.degraded || s.mode == VDO_MODE_RECOVERING)
        ret->flags |= PLACE_VOLUME_DEGRADED;
    return 0;
}

/* ---- the monitor: mode changes ----------------------------------------- */

static void monitor_volume(AgentVdo *vdo, const VolumeObservation *v) {
    AgentVdoVolume *av = vdo_volume_get(vdo, v->name);
    VdoStats s = {};
    _cleanup_free_ char *err = NULL;
    if (!av || vdo_stats_get(v->name, &s, &err) < 0)
        return;
    const char *mode = vdo_mode_to_string(s.mode) ?: "unknown";
    if (!av->known || av->mode != s.mode) {
        if (s.mode == VDO_MODE_READ_ONLY)
            log_error("volume %s: VDO entered read-only mode (data loss is possible): marked degraded, no new "
                      "workspace is placed on it; stop its workspaces, take it offline and run vdoforcerebuild "
                      "(docs/vdo.md)", v->name);
        else if (s.mode == VDO_MODE_RECOVERING)
            log_warning("volume %s: VDO is recovering after an unclean shutdown (%u%%)", v->name,
                        s.recovery_percentage);
        else if (av->known)
            log_notice("volume %s: VDO mode is %s again", v->name, mode);
        else
            log_info("volume %s: VDO mode %s, index %s, %" PRIu64 "/%" PRIu64 " physical blocks used, saving %d%%",
                     v->name, mode, vdo_index_state_to_string(s.index_state) ?: "unknown", s.physical_used,
                     s.physical_total, s.saving_percent);
    }
    bool index_error = s.index_state == VDO_INDEX_ERROR;
    if (index_error && !av->index_error)
        log_warning("volume %s: the VDO deduplication index is in error: marked degraded (no deduplication)", v->name);
    av->index_error = index_error;
    /* Running out of physical space is what VDO operators fear most
     * (vdo#22): say it once when crossing 90 %, again after it fell. */
    bool high = s.physical_total > 0 && s.physical_used * 10 >= s.physical_total * 9;
    if (high && !av->space_warned)
        log_warning("volume %s: VDO physical space %" PRIu64 "%% used (%" PRIu64 "/%" PRIu64 " blocks): grow it "
                    "or free space and let fstrim return it", v->name, s.physical_used * 100 / s.physical_total,
                    s.physical_used, s.physical_total);
    av->space_warned = high;
    av->known = true;
    av->mode = s.mode;
    av->degraded = s.degraded;
}

/* ---- fstrim in a child ------------------------------------------------- */

static void trim_reset(AgentVdoVolume *av) {
    av->trim_child = sd_event_source_disable_unref(av->trim_child);
    av->trim_pipe = safe_close(av->trim_pipe);
    av->trim_pid = 0;
}

static int on_trim_exit(sd_event_source *s, const siginfo_t *si, void *userdata) {
    Agent *a = userdata;
    AgentVdoVolume *av = NULL;
    for (size_t i = 0; a->vdo && i < a->vdo->n_volumes; i++)
        if (a->vdo->volumes[i].trim_child == s)
            av = &a->vdo->volumes[i];
    if (!av)
        return 0;
    char buf[4096];
    ssize_t n = read(av->trim_pipe, buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    /* One line per mount point: "<path>: 1.2 GiB (1288490188 bytes) trimmed". */
    size_t len = strlen(buf);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
        buf[--len] = 0;
    av->last_trim_at = now_usec(CLOCK_REALTIME);
    av->last_trim_took = now_usec(CLOCK_MONOTONIC) - av->trim_started;
    av->last_trim_status = si->si_code == CLD_EXITED ? si->si_status : -si->si_status;
    free(av->last_trim_output);
    av->last_trim_output = strdup(buf);
    av->trims++;
    if (av->last_trim_status == 0)
        log_info("volume %s: fstrim done in %.1fs: %s", av->volume, (double) av->last_trim_took / USEC_PER_SEC,
                 buf[0] ? buf : "(no output)");
    else {
        av->trim_failures++;
        log_warning("volume %s: fstrim failed (%s %d) after %.1fs: %s", av->volume,
                    si->si_code == CLD_EXITED ? "exit status" : "signal", si->si_status,
                    (double) av->last_trim_took / USEC_PER_SEC, buf[0] ? buf : "(no output)");
    }
    trim_reset(av);
    return 0;
}

static int trim_start(Agent *a, const VolumeObservation *v) {
    AgentVdoVolume *av = vdo_volume_get(a->vdo, v->name);
    _cleanup_strv_free_ char **argv = NULL;
    _cleanup_free_ char *exe = NULL;
    int pipefd[2], r;

    if (!av)
        return -ENOMEM;
    if (av->trim_pid > 0) {
        log_notice("volume %s: the previous fstrim is still running, skipping this one", v->name);
        return 0;
    }
    r = vdo_fstrim_argv(v->mount_path, &argv);
    if (r < 0)
        return r;
    r = apply_find_program(argv[0], &exe);
    if (r < 0)
        return log_warning_errno(r, "volume %s: fstrim not found (util-linux), cannot trim: %m", v->name);
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
        if (dup2(pipefd[1], STDOUT_FILENO) < 0 || dup2(pipefd[1], STDERR_FILENO) < 0)
            _exit(127);
        execv(exe, argv);
        _exit(127);
    }
    safe_close(pipefd[1]);
    (void) fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    av->trim_pipe = pipefd[0];
    av->trim_pid = pid;
    av->trim_started = now_usec(CLOCK_MONOTONIC);
    r = sd_event_add_child(a->event, &av->trim_child, pid, WEXITED, on_trim_exit, a);
    if (r < 0) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
        trim_reset(av);
        return r;
    }
    log_info("volume %s: periodic fstrim of %s started (pid %d)", v->name, v->mount_path, (int) pid);
    return 0;
}

static int on_monitor_timer(sd_event_source *s, uint64_t usec, void *userdata) {
    Agent *a = userdata;
    AgentVdo *vdo = a->vdo;
    _cleanup_(observation_freep) Observation *obs = NULL;
    usec_t now = now_usec(CLOCK_MONOTONIC);

    if (agent_volumes_observe(a, &obs) >= 0) {
        bool due[_POOL_ROLE_MAX] = {};
        for (PoolRole role = 0; role < _POOL_ROLE_MAX; role++) {
            const Pool *p = layout_pool(a->layout, role);
            if (!p || p->backend != BACKEND_VDO_XFS || !p->has_vdo || p->vdo.fstrim_interval == 0) {
                vdo->next_trim[role] = 0;
                continue;
            }
            if (vdo->next_trim[role] == 0)
                vdo->next_trim[role] = now + p->vdo.fstrim_interval;
            else if (now >= vdo->next_trim[role]) {
                due[role] = true;
                vdo->next_trim[role] = now + p->vdo.fstrim_interval;
            }
        }
        for (size_t i = 0; i < obs->n; i++) {
            const VolumeObservation *v = &obs->volumes[i];
            if (v->backend != BACKEND_VDO_XFS || !v->mounted_ours)
                continue;
            monitor_volume(vdo, v);
            if (due[v->role]) {
                int r = trim_start(a, v);
                if (r < 0)
                    log_warning_errno(r, "volume %s: cannot start fstrim, ignoring: %m", v->name);
            }
        }
    }
    (void) sd_event_source_set_time_relative(s, VDO_MONITOR_INTERVAL);
    (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
    return 0;
}

int agent_vdo_start(Agent *a) {
    if (!a->event || a->stopping || !layout_has_vdo(a->layout))
        return 0;
    if (!a->vdo) {
        a->vdo = calloc(1, sizeof(AgentVdo));
        if (!a->vdo)
            return -ENOMEM;
        a->vdo->agent = a;
    }
    if (a->vdo->timer)
        return 0;
    /* The first look soon after start (mode and usage in the log), then
     * every VDO_MONITOR_INTERVAL; fstrim becomes due one interval after
     * the agent started (not at every start: restarts are frequent). */
    return sd_event_add_time_relative(a->event, &a->vdo->timer, CLOCK_MONOTONIC, 2 * USEC_PER_SEC, 0,
                                      on_monitor_timer, a);
}

void agent_vdo_stop(Agent *a) {
    AgentVdo *vdo = a->vdo;
    if (!vdo)
        return;
    vdo->timer = sd_event_source_disable_unref(vdo->timer);
    memset(vdo->next_trim, 0, sizeof vdo->next_trim);
    /* A reload stops and starts the periodic jobs while the loop runs: a
     * running fstrim is left to finish and be logged. Once the loop is
     * over (agent_free), everything goes; an fstrim still running is left
     * to finish on its own. */
    int state = a->event ? sd_event_get_state(a->event) : SD_EVENT_FINISHED;
    if (state == SD_EVENT_RUNNING || state == SD_EVENT_EXITING || state == SD_EVENT_PENDING ||
        state == SD_EVENT_ARMED || state == SD_EVENT_PREPARING)
        return;
    for (size_t i = 0; i < vdo->n_volumes; i++) {
        trim_reset(&vdo->volumes[i]);
        free(vdo->volumes[i].volume);
        free(vdo->volumes[i].last_trim_output);
    }
    free(vdo->volumes);
    a->vdo = mfree(vdo);
}
