/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Starting a daemon: fork + exec, with the process identity held by a pidfd
 * from the start (no pid-reuse races). The child gets its own session (so
 * it survives the agent and kill(-pid) reaches its whole group), no
 * supplementary groups, the layout's uid/gid, a clean environment, stdin
 * from /dev/null, stdout+stderr into the caller's log fd, no other fd.
 * No PR_SET_PDEATHSIG: daemons must outlive the agent.
 * Library code: 0 / -errno, never logs.
 */

#include <stdbool.h>
#include <sys/types.h>

typedef struct SpawnCredentials {
    uid_t uid;
    gid_t gid;
    char *home;     /* the user's home directory (owned) */
} SpawnCredentials;

/* Resolves user (NULL = "root") and group (NULL = the user's primary
 * group) with getpwnam_r/getgrnam_r; numeric ids are accepted. Done before
 * fork, since NSS is not async-signal-safe.
 * Returns: -ESRCH (no such user/group), -errno, 0 with *ret filled. */
int spawn_resolve_credentials(const char *user, const char *group, SpawnCredentials *ret);
void spawn_credentials_done(SpawnCredentials *c);

/* The daemon's environment: PATH, HOME, then `extra` ("KEY=VALUE", later
 * entries replace earlier ones with the same key), then
 * LAYOUTD_WORKSPACE=<id> and LAYOUTD_SHARDS=<shards>.
 * Returns: -EINVAL (an entry without '='), -ENOMEM, 0 with *ret (strv). */
int spawn_build_environment(const char *const *extra, const char *home, const char *id,
                            unsigned shards, char ***ret);

typedef struct SpawnParams {
    char *const *argv;        /* argv[0] is an absolute path */
    char *const *envp;
    const SpawnCredentials *creds;
    int output_fd;            /* stdout+stderr; -EBADF: /dev/null */
    /* The agent runs with a low OOM score (the unit's OOMScoreAdjust=),
     * which children inherit: the daemon gets its own. */
    bool set_oom_score_adjust;
    int oom_score_adjust;     /* -1000..1000 */
} SpawnParams;

/*
 * Forks and execs. Exec errors are reported synchronously through a
 * close-on-exec pipe (the child writes its errno there; EOF means exec
 * succeeded), so a missing binary is an error here, not a death later.
 * The caller must not have SIGCHLD set to SIG_IGN (children would be
 * reaped behind its back) and reaps the child with waitid(P_PIDFD).
 * Returns: -errno of fork/pidfd_open, or of the child's setup/exec step;
 * 0 with *ret_pid and *ret_pidfd (O_CLOEXEC) set.
 */
int spawn_daemon(const SpawnParams *p, pid_t *ret_pid, int *ret_pidfd);
