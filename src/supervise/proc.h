/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Process identity, for re-adoption: a pid alone can be reused, so a
 * process is named by (pid, start time, boot). Library code, never logs.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The start time of pid: /proc/<pid>/stat field 22 (clock ticks since
 * boot). Returns: -ESRCH (no such process), -EBADMSG, -errno, 0. */
int proc_start_time(pid_t pid, uint64_t *ret);

/* Parses the start time out of the text of a /proc/<pid>/stat file (comm
 * may contain spaces and parentheses: fields are counted after the LAST
 * ')'). Returns: -EBADMSG, 0. */
int proc_parse_start_time(const char *stat_text, uint64_t *ret);

/* True if pid is gone or a zombie (state Z/X in /proc/<pid>/stat): a
 * daemon that died while no agent ran stays a zombie when its new parent
 * (an init that does not reap) never waits for it. */
bool proc_is_dead(pid_t pid);

/* This boot's id (sd_id128_get_boot(), the kernel's boot_id, which
 * `journalctl --list-boots` shows) as 32 lower-case hex digits in ret,
 * and in *ret_legacy_hash (may be NULL) the 64-bit FNV-1a hash of its
 * UUID form, never 0, that older records hold instead.
 * Returns: <0 on error, 0. */
int proc_boot_id(char ret[static 33], uint64_t *ret_legacy_hash);

/* The environment pid was started with (/proc/<pid>/environ: what execve
 * got, not later setenv()s) as a NULL-terminated strv. Reading it takes
 * the process's mmap lock, so callers do it once per process, not per
 * question. Returns: -ESRCH (gone; a zombie shows an empty one), -errno,
 * 0. */
int proc_environ(pid_t pid, char ***ret);

/* pidfd_open(2), O_CLOEXEC implied. Returns: -errno or the fd. */
int proc_pidfd_open(pid_t pid);

/* pidfd_send_signal(2). Returns: -errno, 0. */
int proc_pidfd_signal(int pidfd, int sig);
