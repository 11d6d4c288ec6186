/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Shared, dependency-free utilities: string vectors, time, atomic file
 * writes, human sizes. Library code: returns 0 or -errno, never logs.
 */

#include <stdio.h>
#include <sys/types.h>

#include "macro.h"

/* NULL-terminated string vectors (char **). */
char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_free_ _cleanup_(strv_freep)
size_t strv_length(const char *const *l);
/* Appends a copy of s. Returns: <0 on error (l unchanged), 0 on success. */
int strv_extend(char ***l, const char *s);
/* Deep copy; *ret is set only on success. Returns -ENOMEM or 0. */
int strv_copy(const char *const *l, char ***ret);
bool strv_equal(const char *const *a, const char *const *b);

/* CLOCK_MONOTONIC / CLOCK_REALTIME in microseconds. */
usec_t now_usec(clockid_t clock);

/*
 * Writes data to path atomically and durably: a temporary file in the same
 * directory, fsync, rename over path, fsync of the directory. A crash leaves
 * either the old or the new content, never a torn file.
 * Returns: <0 on error (path untouched), 0 on success.
 */
int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

/*
 * Reads a whole (small) file. *ret is NUL-terminated; *ret_len may be NULL.
 * Returns: <0 on error, 0 on success.
 */
int read_full_file(const char *path, char **ret, size_t *ret_len);

/* Reads one line of a sysfs/proc file, without the trailing newline. */
int read_one_line_file(const char *path, char **ret);
/* Writes s (a newline is added) to an existing sysfs/proc file. */
int write_string_file(const char *path, const char *s);

/* Formats bytes as "1.5G" style into buf (at least 16 bytes). Returns buf. */
const char *format_bytes(char *buf, size_t n, uint64_t bytes);

/* mkdir -p with mode for every created component. Returns 0 or -errno. */
int mkdir_p(const char *path, mode_t mode);

/* A random (version 4) UUID, lower case. Returns 0 or -ENOMEM. */
int uuid_generate_v4_string(char **ret);

/* Random 64-bit value from getrandom(2), for jitter. Never fails. */
uint64_t random_u64(void);
