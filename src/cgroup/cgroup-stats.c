/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The figures of a cgroup v2, read from its files (Documentation/admin-
 * guide/cgroup-v2.rst). cgroupfs is kernfs: a read never waits on a
 * device, which is why the agent may do it on its loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-login.h>
#include <unistd.h>

#include "cgroup.h"
#include "util.h"

bool cgroup_unified(void) {
    return access(CGROUP_ROOT "/cgroup.controllers", F_OK) == 0;
}

int cgroup_of_pid(pid_t pid, char **ret) {
    _cleanup_free_ char *path = NULL;
    /* The unified hierarchy's path ("0::" of /proc/PID/cgroup). */
    int r = sd_pid_get_cgroup(pid, &path);
    if (r == -ESRCH || r == -ENOENT || r == -ENODATA)
        return -ENOENT;
    if (r < 0)
        return r;
    if (asprintf(ret, CGROUP_ROOT "%s", streq(path, "/") ? "" : path) < 0)
        return -ENOMEM;
    return 0;
}

/* One small file, whole. */
static int read_file(const char *dir, const char *name, char *buf, size_t size) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    _cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    ssize_t n = read(fd, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = 0;
    return 0;
}

/* "123\n" or "max\n". */
static void read_value(const char *dir, const char *name, uint64_t *ret) {
    char buf[64];
    if (read_file(dir, name, buf, sizeof buf) < 0)
        return;
    if (strncmp(buf, "max", 3) == 0)
        *ret = UINT64_MAX;
    else
        *ret = strtoull(buf, NULL, 10);
}

/* "key value" lines (cpu.stat, memory.events). */
static void read_keyed(const char *dir, const char *name, const char *key, uint64_t *ret) {
    char buf[4096];
    if (read_file(dir, name, buf, sizeof buf) < 0)
        return;
    size_t k = strlen(key);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (strncmp(l, key, k) == 0 && l[k] == ' ') {
            *ret = strtoull(l + k + 1, NULL, 10);
            return;
        }
}

/* PSI: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0". */
static void read_pressure(const char *dir, const char *name, double *ret_avg10, uint64_t *ret_total) {
    char buf[512];
    if (read_file(dir, name, buf, sizeof buf) < 0 || strncmp(buf, "some ", 5) != 0)
        return;
    char *a = strstr(buf, "avg10="), *t = strstr(buf, "total=");
    if (a)
        *ret_avg10 = strtod(a + 6, NULL);
    if (t)
        *ret_total = strtoull(t + 6, NULL, 10);
}

/* io.stat: "8:0 rbytes=1 wbytes=2 rios=3 ..." per device; summed. */
static void read_io(const char *dir, uint64_t *ret_read, uint64_t *ret_write) {
    char buf[16384];
    if (read_file(dir, "io.stat", buf, sizeof buf) < 0)
        return;
    for (char *w = strtok(buf, " \n"); w; w = strtok(NULL, " \n")) {
        if (strncmp(w, "rbytes=", 7) == 0)
            *ret_read += strtoull(w + 7, NULL, 10);
        else if (strncmp(w, "wbytes=", 7) == 0)
            *ret_write += strtoull(w + 7, NULL, 10);
    }
}

int cgroup_read_stats(const char *path, CgroupStats *ret) {
    *ret = (CgroupStats) {};
    if (access(path, F_OK) < 0)
        return -errno;
    read_keyed(path, "cpu.stat", "usage_usec", &ret->cpu_usec);
    read_value(path, "memory.current", &ret->memory_current);
    char p[4096];
    snprintf(p, sizeof p, "%s/memory.peak", path);
    if (access(p, F_OK) == 0) {
        ret->has_memory_peak = true;
        read_value(path, "memory.peak", &ret->memory_peak);
    }
    read_value(path, "memory.max", &ret->memory_max);
    read_value(path, "memory.high", &ret->memory_high);
    read_value(path, "pids.current", &ret->pids_current);
    read_value(path, "pids.max", &ret->pids_max);
    read_io(path, &ret->io_read_bytes, &ret->io_write_bytes);
    read_pressure(path, "cpu.pressure", &ret->cpu_pressure_avg10, &ret->cpu_pressure_usec);
    read_pressure(path, "memory.pressure", &ret->memory_pressure_avg10, &ret->memory_pressure_usec);
    read_pressure(path, "io.pressure", &ret->io_pressure_avg10, &ret->io_pressure_usec);
    read_keyed(path, "memory.events", "oom_kill", &ret->oom_kills);
    return 0;
}
