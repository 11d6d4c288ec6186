/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The process_* families every Prometheus exporter has (the client
 * libraries' "process collector"): resident and virtual memory, CPU time,
 * open and allowed file descriptors, start time. Read from /proc/self, so
 * they describe the process that serves the scrape.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "metrics.h"
#include "util.h"

/* Fields 14, 15 (utime, stime), 22 (starttime, in ticks since boot) and
 * 23, 24 (vsize, rss) of /proc/self/stat: after the command's closing
 * parenthesis, which may itself hold spaces and parentheses. */
static int read_stat(double *ret_cpu_ticks, double *ret_start_ticks, double *ret_vsize, double *ret_rss_pages) {
    _cleanup_free_ char *line = NULL;
    int r = read_one_line_file("/proc/self/stat", &line);
    if (r < 0)
        return r;
    const char *p = strrchr(line, ')');
    if (!p)
        return -EIO;
    unsigned long long utime, stime, start, vsize;
    long long rss;
    /* state ppid pgrp session tty tpgid flags minflt cminflt majflt
     * cmajflt utime stime cutime cstime priority nice threads itreal
     * starttime vsize rss */
    if (sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
               &utime, &stime, &start, &vsize, &rss) != 5)
        return -EIO;
    *ret_cpu_ticks = (double) utime + (double) stime;
    *ret_start_ticks = (double) start;
    *ret_vsize = (double) vsize;
    *ret_rss_pages = (double) rss;
    return 0;
}

/* The boot time (btime of /proc/stat), in seconds since the epoch. */
static int read_boot_time(double *ret) {
    FILE *f = fopen("/proc/stat", "re");
    if (!f)
        return -errno;
    char buf[256];
    int r = -ENOENT;
    while (r < 0 && fgets(buf, sizeof buf, f)) {
        unsigned long long b;
        if (sscanf(buf, "btime %llu", &b) == 1) {
            *ret = (double) b;
            r = 0;
        }
    }
    fclose(f);
    return r;
}

static int count_fds(double *ret) {
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -errno;
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (de->d_name[0] != '.')
            n++;
    closedir(d);
    *ret = (double) (n > 0 ? n - 1 : 0); /* less the directory's own fd */
    return 0;
}

int metrics_write_process(MetricsWriter *w) {
    double cpu, start, vsize, rss, boot = 0, fds = 0;
    long tick = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    int r = read_stat(&cpu, &start, &vsize, &rss);
    if (r < 0)
        return r;
    if (tick <= 0 || page <= 0)
        return -EIO;
    (void) metrics_writer_family(w, "process_cpu_seconds_total", METRIC_COUNTER,
                                 "Total user and system CPU time spent in seconds");
    (void) metrics_writer_sample(w, NULL, cpu / (double) tick);
    (void) metrics_writer_family(w, "process_resident_memory_bytes", METRIC_GAUGE, "Resident memory size in bytes");
    (void) metrics_writer_sample(w, NULL, rss * (double) page);
    (void) metrics_writer_family(w, "process_virtual_memory_bytes", METRIC_GAUGE, "Virtual memory size in bytes");
    (void) metrics_writer_sample(w, NULL, vsize);
    if (read_boot_time(&boot) >= 0) {
        (void) metrics_writer_family(w, "process_start_time_seconds", METRIC_GAUGE,
                                     "Start time of the process since unix epoch in seconds");
        (void) metrics_writer_sample(w, NULL, boot + start / (double) tick);
    }
    if (count_fds(&fds) >= 0) {
        (void) metrics_writer_family(w, "process_open_fds", METRIC_GAUGE, "Number of open file descriptors");
        (void) metrics_writer_sample(w, NULL, fds);
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur != RLIM_INFINITY) {
        (void) metrics_writer_family(w, "process_max_fds", METRIC_GAUGE, "Maximum number of open file descriptors");
        (void) metrics_writer_sample(w, NULL, (double) rl.rlim_cur);
    }
    return 0;
}
