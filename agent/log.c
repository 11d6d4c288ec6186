/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static int max_level = LOG_INFO;
static int prefix = -1; /* -1: decide on first use */

void log_set_max_level(int level) {
    max_level = level;
}

int log_get_max_level(void) {
    return max_level;
}

void log_set_prefix(int on) {
    prefix = on;
}

void log_internal(int level, int error, const char *fmt, ...) {
    if (level > max_level)
        return;
    if (prefix < 0)
        prefix = !isatty(STDERR_FILENO);

    char line[2048];
    int saved = errno;
    errno = error; /* so %m prints the error we were given */
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    errno = saved;

    /* One write per line, so lines of concurrent writers (there are none
     * today, but children inherit nothing of ours) never interleave. */
    char out[2100];
    int n = prefix ? snprintf(out, sizeof out, "<%d>%s\n", level, line)
                   : snprintf(out, sizeof out, "%s\n", line);
    if (n > 0)
        (void) !write(STDERR_FILENO, out, (size_t) MIN(n, (int) sizeof out - 1));
}
