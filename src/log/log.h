/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The agent's log. Under systemd (stderr is the journal stream that
 * $JOURNAL_STREAM names) entries go to journald natively, with fields:
 * LAYOUTD_WORKSPACE=, LAYOUTD_VOLUME=, MESSAGE_ID= for the events
 * operators alert on (log-messages.h), and the daemons' own lines under
 * their SYSLOG_IDENTIFIER and pid. Elsewhere, one line per entry on
 * stderr, with a "<N>" priority prefix when stderr is not a terminal.
 * Only agent/ logs; the engine library returns errors and the agent
 * words them.
 */

#include <errno.h>
#include <sys/types.h>
#include <syslog.h>

#include "log-messages.h"
#include "macro.h"

/* LOG_ERR .. LOG_DEBUG; lines above this level are dropped. */
void log_set_max_level(int level);
int log_get_max_level(void);
/* Prefix with "<N>" (journald) or not (a terminal). Default: not a TTY. */
void log_set_prefix(int on);

/* Where a structured entry is about; every member may be NULL / 0. */
typedef struct LogContext {
    const char *workspace;       /* LAYOUTD_WORKSPACE= */
    const char *volume;          /* LAYOUTD_VOLUME= */
    const char *message_id;      /* MESSAGE_ID= (32 hex digits) */
    const char *identifier;      /* SYSLOG_IDENTIFIER= (a daemon's name) */
    pid_t pid;                   /* SYSLOG_PID= (a daemon's pid) */
} LogContext;

void log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);
void log_context(int level, int error, const LogContext *c, const char *fmt, ...) _printf_(4, 5);

#define log_full_errno(level, error, ...)                                   \
    ({                                                                      \
        int _e = (error) < 0 ? -(error) : (error);                          \
        log_internal((level), _e, __VA_ARGS__);                             \
        -_e;                                                                \
    })
/* Log with %m expanding to strerror(r); return -|r| for `return log_..`. */
#define log_error_errno(r, ...) log_full_errno(LOG_ERR, (r), __VA_ARGS__)
#define log_warning_errno(r, ...) log_full_errno(LOG_WARNING, (r), __VA_ARGS__)
#define log_error(...) log_internal(LOG_ERR, 0, __VA_ARGS__)
#define log_warning(...) log_internal(LOG_WARNING, 0, __VA_ARGS__)
#define log_notice(...) log_internal(LOG_NOTICE, 0, __VA_ARGS__)
#define log_info(...) log_internal(LOG_INFO, 0, __VA_ARGS__)
#define log_debug(...) log_internal(LOG_DEBUG, 0, __VA_ARGS__)
#define log_oom() log_full_errno(LOG_ERR, ENOMEM, "Out of memory")

/* An entry about a volume or a workspace, with its field (and a
 * MESSAGE_ID, or NULL). */
#define log_volume(level, vol, msgid, ...) \
    log_context((level), 0, &(const LogContext) { .volume = (vol), .message_id = (msgid) }, __VA_ARGS__)
#define log_workspace(level, ws, msgid, ...) \
    log_context((level), 0, &(const LogContext) { .workspace = (ws), .message_id = (msgid) }, __VA_ARGS__)
