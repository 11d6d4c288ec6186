/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the verbs (`gc`, `fsck`) and the daemon's command line share:
 * comma lists, durations, sizes, JSON strings, and taking the pool lock
 * with a timeout.
 */
#include <stdio.h>
#include <sys/file.h>
#include <time.h>

#include "wsfs.h"

int cli_split_list(char ***list, size_t *n, const char *arg) {
    _cleanup_free_ char *copy = strdup(arg);
    char *save = NULL;
    if (!copy)
        return -ENOMEM;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        char **l = reallocarray(*list, *n + 2, sizeof(char *));
        if (!l)
            return -ENOMEM;
        *list = l;
        if (!(l[*n] = strdup(t)))
            return -ENOMEM;
        l[++*n] = NULL;
    }
    return 0;
}

void cli_free_list(char **list, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(list[i]);
    free(list);
}

int cli_parse_duration(const char *s, uint64_t *ret) {
    char *end;
    if (isempty(s) || *s == '-')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -EINVAL;
    uint64_t mult = streq(end, "") || streq(end, "s") ? 1 : streq(end, "m") ? 60 : streq(end, "h") ? 3600
                    : streq(end, "d") ? 86400 : streq(end, "w") ? 7 * 86400 : 0;
    if (!mult || v > UINT64_MAX / mult)
        return -EINVAL;
    *ret = v * mult;
    return 0;
}

int cli_parse_size(const char *s, bool suffixes, uint64_t *ret) {
    char *end;
    if (isempty(s) || *s == '-')
        return -EINVAL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -EINVAL;
    uint64_t mult = 1;
    if (suffixes && *end) {
        mult = strchr("kK", *end) ? KIB : strchr("mM", *end) ? MIB : strchr("gG", *end) ? GIB
             : strchr("tT", *end) ? TIB : 0;
        if (!mult)
            return -EINVAL;
        end++;
        if (*end == 'i' && end[1] == 'B')
            end += 2;
    }
    if (*end || v > UINT64_MAX / mult)
        return -EINVAL;
    *ret = v * mult;
    return 0;
}

/* The length of the valid UTF-8 sequence at s (at most n bytes), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
    size_t len = s[0] < 0x80 ? 1 : (s[0] & 0xe0) == 0xc0 ? 2 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    /* overlong forms and surrogates are not UTF-8 either */
    if ((len == 2 && s[0] < 0xc2) || (len == 3 && s[0] == 0xe0 && s[1] < 0xa0) ||
        (len == 3 && s[0] == 0xed && s[1] >= 0xa0) || (len == 4 && s[0] == 0xf0 && s[1] < 0x90) ||
        (len == 4 && (s[0] > 0xf4 || (s[0] == 0xf4 && s[1] >= 0x90))))
        return 0;
    return len;
}

void cli_json_string(FILE *f, const char *s) {
    const unsigned char *p = (const unsigned char *) s;
    size_t n = strlen(s);
    fputc('"', f);
    for (size_t i = 0; i < n;) {
        unsigned char c = p[i];
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(f, "\\u%04x", c);
            i++;
        } else {
            /* File names are bytes; JSON is UTF-8. A byte that is not
             * part of valid UTF-8 is shown as U+FFFD. */
            size_t len = utf8_len(p + i, n - i);
            if (len == 0) {
                fputs("\\ufffd", f);
                i++;
            } else {
                fwrite(p + i, 1, len, f);
                i += len;
            }
        }
    }
    fputc('"', f);
}

static int64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t) t.tv_sec * 1000000000LL + t.tv_nsec;
}

int cli_flock_timeout(int fd, int op, uint64_t timeout_s, uint64_t *ret_wait_ms) {
    int64_t t0 = mono_ns(), end = t0 + (int64_t) MIN(timeout_s, (uint64_t) INT32_MAX) * 1000000000LL;
    for (;;) {
        if (flock(fd, op | LOCK_NB) == 0)
            break;
        if (errno != EWOULDBLOCK && errno != EINTR)
            return negative_errno();
        if (mono_ns() >= end)
            return -ETIMEDOUT;
        /* Holders keep it for one file's copy (publishers) or one
         * quarantine (the sweeper): poll. */
        nanosleep(&(struct timespec) { 0, 5 * 1000 * 1000 }, NULL);
    }
    if (ret_wait_ms)
        *ret_wait_ms += (uint64_t) (mono_ns() - t0) / 1000000;
    return 0;
}
