/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The agent's log: one line per event on stderr, with a syslog priority
 * prefix ("<3>") that journald turns into the record's priority. Only agent/
 * logs; the engine library returns errors and the agent words them.
 */

#include <errno.h>
#include <syslog.h>

#include "macro.h"

/* LOG_ERR .. LOG_DEBUG; lines above this level are dropped. */
void log_set_max_level(int level);
int log_get_max_level(void);
/* Prefix with "<N>" (journald) or not (a terminal). Default: not a TTY. */
void log_set_prefix(int on);

void log_internal(int level, int error, const char *fmt, ...) _printf_(3, 4);

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
