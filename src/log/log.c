/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;
static int prefix = -1;  /* -1: decide on first use */
static int journal = -1; /* -1: decide on first use */

void log_set_max_level(int level) {
    max_level = level;
}

int log_get_max_level(void) {
    return max_level;
}

void log_set_prefix(int on) {
    prefix = on;
}

/* systemd sets $JOURNAL_STREAM to the device and inode of the stream it
 * connected our stderr to: if stderr is still that stream, journald is
 * listening and native entries (with fields) reach it. */
static bool use_journal(void) {
    if (journal >= 0)
        return journal;
    journal = 0;
    const char *e = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (e && sscanf(e, "%llu:%llu", &dev, &ino) == 2 && fstat(STDERR_FILENO, &st) == 0 &&
        (unsigned long long) st.st_dev == dev && (unsigned long long) st.st_ino == ino &&
        access("/run/systemd/journal/socket", W_OK) == 0)
        journal = 1;
    return journal;
}

static void emit(int level, int error, const LogContext *c, const char *text) {
    if (use_journal()) {
        char prio[16], pid[32], errno_field[32], f[5][300];
        struct iovec iov[9];
        size_t n = 0;
        _cleanup_free_ char *msg = NULL;
        if (asprintf(&msg, "MESSAGE=%s", text) < 0)
            goto stderr_line;
        snprintf(prio, sizeof prio, "PRIORITY=%d", level);
        iov[n++] = (struct iovec) { msg, strlen(msg) };
        iov[n++] = (struct iovec) { prio, strlen(prio) };
#define FIELD(i, fmt, v)                                                    \
        if (v) {                                                            \
            snprintf(f[i], sizeof f[i], fmt, v);                            \
            iov[n++] = (struct iovec) { f[i], strlen(f[i]) };               \
        }
        FIELD(0, "LAYOUTD_WORKSPACE=%s", c ? c->workspace : NULL);
        FIELD(1, "LAYOUTD_VOLUME=%s", c ? c->volume : NULL);
        FIELD(2, "MESSAGE_ID=%s", c ? c->message_id : NULL);
        FIELD(3, "SYSLOG_IDENTIFIER=%s", c ? c->identifier : NULL);
#undef FIELD
        if (c && c->pid > 0) {
            snprintf(pid, sizeof pid, "SYSLOG_PID=%d", (int) c->pid);
            iov[n++] = (struct iovec) { pid, strlen(pid) };
        }
        /* The error as a number, as systemd's own entries carry it:
         * `journalctl ERRNO=28` finds every ENOSPC. */
        if (error > 0) {
            snprintf(errno_field, sizeof errno_field, "ERRNO=%d", error);
            iov[n++] = (struct iovec) { errno_field, strlen(errno_field) };
        }
        if (sd_journal_sendv(iov, (int) n) >= 0)
            return;
    }
stderr_line:
    if (prefix < 0)
        prefix = !isatty(STDERR_FILENO);
    /* One write per line, so lines of concurrent writers (there are none
     * today, but children inherit nothing of ours) never interleave. */
    char out[2100];
    int k = prefix ? snprintf(out, sizeof out, "<%d>%s\n", level, text) : snprintf(out, sizeof out, "%s\n", text);
    if (k > 0)
        (void) !write(STDERR_FILENO, out, (size_t) MIN(k, (int) sizeof out - 1));
}

_printf_(4, 0) static void vlog(int level, int error, const LogContext *c, const char *fmt, va_list ap) {
    if (level > max_level)
        return;
    char line[2048];
    int saved = errno;
    errno = error; /* so %m prints the error we were given */
    vsnprintf(line, sizeof line, fmt, ap);
    errno = saved;
    emit(level, error, c, line);
}

void log_internal(int level, int error, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(level, error, NULL, fmt, ap);
    va_end(ap);
}

void log_context(int level, int error, const LogContext *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vlog(level, error, c, fmt, ap);
    va_end(ap);
}
