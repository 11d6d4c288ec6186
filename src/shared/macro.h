/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Small helpers every layer uses: cleanup attributes in the style of
 * systemd, explicit hand-over of ownership, and a few arithmetic helpers.
 * Nothing here does I/O or logs.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _likely_(x) __builtin_expect(!!(x), 1)
#define _unlikely_(x) __builtin_expect(!!(x), 0)

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) (MIN(MAX((x), (lo)), (hi)))
#define DIV_ROUND_UP(x, y) (((x) + (y) - 1) / (y))
#define ROUND_UP(x, y) (DIV_ROUND_UP((x), (y)) * (y))

#define STR_IN_SET(s, ...) strv_contains((const char *const[]){ __VA_ARGS__, NULL }, (s))
#define streq(a, b) (strcmp((a), (b)) == 0)
#define streq_ptr(a, b) (((a) == NULL && (b) == NULL) || ((a) && (b) && strcmp((a), (b)) == 0))
#define isempty(s) (!(s) || !*(s))

/* Ownership hand-over: returns the value and clears the variable so that
 * its cleanup attribute does nothing. */
#define TAKE_PTR(p)                      \
    ({                                   \
        __typeof__(p) _take_ptr_ = (p);  \
        (p) = NULL;                      \
        _take_ptr_;                      \
    })
#define TAKE_FD(fd)                      \
    ({                                   \
        int _take_fd_ = (fd);            \
        (fd) = -EBADF;                   \
        _take_fd_;                       \
    })

static inline void freep(void *p) {
    free(*(void **)p);
}
/* free() that returns NULL, for p = mfree(p). */
static inline void *mfree(void *p) {
    free(p);
    return NULL;
}
#define _cleanup_(f) __attribute__((cleanup(f)))
#define _cleanup_free_ _cleanup_(freep)

/* Closes fd if valid; returns -EBADF so callers can write fd = safe_close(fd). */
static inline int safe_close(int fd) {
    if (fd >= 0) {
        int saved = errno;
        (void) close(fd);
        errno = saved;
    }
    return -EBADF;
}
static inline void closep(int *fd) {
    safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* DEFINE_TRIVIAL_CLEANUP_FUNC(Foo*, foo_free) defines foo_freep(). */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)  \
    static inline void func##p(type *p) {        \
        if (*p)                                  \
            func(*p);                            \
    }

/* Returns -errno for the last failed libc call, never 0 (EIO if errno is 0). */
static inline int negative_errno(void) {
    return errno > 0 ? -errno : -EIO;
}

/* Microseconds, as sd-event counts them. */
typedef uint64_t usec_t;
#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)

/* Size units, in bytes. */
#define KIB ((uint64_t) 1024ULL)
#define MIB (KIB * 1024ULL)
#define GIB (MIB * 1024ULL)
#define TIB (GIB * 1024ULL)

bool strv_contains(const char *const *l, const char *s);
