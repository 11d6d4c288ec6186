/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/close_range.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "proc.h"
#include "spawn.h"
#include "util.h"

void spawn_credentials_done(SpawnCredentials *c) {
    free(c->home);
    c->home = NULL;
}

static bool parse_id(const char *s, unsigned *ret) {
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || end == s || *end || v >= (unsigned long) UINT32_MAX)
        return false;
    *ret = (unsigned) v;
    return true;
}

int spawn_resolve_credentials(const char *user, const char *group, SpawnCredentials *ret) {
    struct passwd pw, *pwp = NULL;
    struct group gr, *grp = NULL;
    size_t bufsize = 16384;
    _cleanup_free_ char *buf = malloc(bufsize);
    if (!buf)
        return -ENOMEM;
    unsigned id;
    int r;

    user = user ?: "root";
    if (parse_id(user, &id))
        r = getpwuid_r(id, &pw, buf, bufsize, &pwp);
    else
        r = getpwnam_r(user, &pw, buf, bufsize, &pwp);
    if (r != 0)
        return -r;
    if (!pwp)
        return -ESRCH;
    uid_t uid = pw.pw_uid;
    gid_t gid = pw.pw_gid;
    _cleanup_free_ char *home = strdup(pw.pw_dir && *pw.pw_dir ? pw.pw_dir : "/");
    if (!home)
        return -ENOMEM;

    if (group) {
        if (parse_id(group, &id))
            r = getgrgid_r(id, &gr, buf, bufsize, &grp);
        else
            r = getgrnam_r(group, &gr, buf, bufsize, &grp);
        if (r != 0)
            return -r;
        if (!grp)
            return -ESRCH;
        gid = gr.gr_gid;
    }
    *ret = (SpawnCredentials) { .uid = uid, .gid = gid, .home = TAKE_PTR(home) };
    return 0;
}

/* Sets KEY=... in env (replacing an existing KEY). */
static int env_set(char ***env, const char *kv) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv)
        return -EINVAL;
    size_t klen = eq - kv + 1;
    for (char **e = *env; e && *e; e++)
        if (strncmp(*e, kv, klen) == 0) {
            char *c = strdup(kv);
            if (!c)
                return -ENOMEM;
            free(*e);
            *e = c;
            return 0;
        }
    return strv_extend(env, kv);
}

int spawn_build_environment(const char *const *extra, const char *home, const char *id,
                            unsigned shards, char ***ret) {
    _cleanup_strv_free_ char **env = NULL;
    char buf[PATH_MAX + 64];
    int r = env_set(&env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    if (r < 0)
        return r;
    snprintf(buf, sizeof buf, "HOME=%s", home ?: "/");
    if ((r = env_set(&env, buf)) < 0)
        return r;
    for (size_t i = 0; extra && extra[i]; i++)
        if ((r = env_set(&env, extra[i])) < 0)
            return r;
    if (id) {
        snprintf(buf, sizeof buf, "LAYOUTD_WORKSPACE=%s", id);
        if ((r = env_set(&env, buf)) < 0)
            return r;
    }
    snprintf(buf, sizeof buf, "LAYOUTD_SHARDS=%u", shards);
    if ((r = env_set(&env, buf)) < 0)
        return r;
    *ret = TAKE_PTR(env);
    return 0;
}

/* Child side, between fork and exec: async-signal-safe calls only. */
_Noreturn static void child(const SpawnParams *p, int errfd) {
    int e;
    sigset_t all;

    /* The agent blocks the signals sd-event handles, and maybe ignores
     * some; both survive exec. Give the daemon a pristine set, except
     * SIGPIPE: ignored, so that the daemon is not killed by a write to its
     * log pipe while the agent is restarting (libfuse ignores it anyway). */
    sigemptyset(&all);
    (void) sigprocmask(SIG_SETMASK, &all, NULL);
    for (int s = 1; s < _NSIG; s++)
        if (s != SIGKILL && s != SIGSTOP)
            (void) signal(s, s == SIGPIPE ? SIG_IGN : SIG_DFL);

    /* Own session and process group: the daemon survives the agent's
     * session going away, and kill(-pid) reaches everything it forked. */
    if (setsid() < 0)
        goto fail;

    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null < 0)
        goto fail;
    int out = p->output_fd >= 0 ? p->output_fd : null;
    /* The agent's end may be non-blocking (a FIFO opened O_NONBLOCK); the
     * daemon expects ordinary blocking stdio. */
    (void) fcntl(out, F_SETFL, fcntl(out, F_GETFL) & ~O_NONBLOCK);
    if (dup2(null, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
        goto fail;

    /* Every other fd closes at exec (the error pipe is CLOEXEC too, so it
     * stays usable until then). */
    if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) < 0)
        goto fail;

    /* Before dropping privileges: lowering a score needs CAP_SYS_RESOURCE.
     * A kernel that refuses is no reason not to run. */
    if (p->set_oom_score_adjust) {
        char num[16];
        int n = 0, v = p->oom_score_adjust < 0 ? -p->oom_score_adjust : p->oom_score_adjust;
        char tmp[16];
        do
            tmp[n++] = (char) ('0' + v % 10);
        while ((v /= 10) > 0 && n < 10);
        int k = 0;
        if (p->oom_score_adjust < 0)
            num[k++] = '-';
        while (n > 0)
            num[k++] = tmp[--n];
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            (void) !write(fd, num, (size_t) k);
            close(fd);
        }
    }

    if (setgroups(0, NULL) < 0 || setresgid(p->creds->gid, p->creds->gid, p->creds->gid) < 0 ||
        setresuid(p->creds->uid, p->creds->uid, p->creds->uid) < 0)
        goto fail;
    if (chdir("/") < 0)
        goto fail;

    execve(p->argv[0], p->argv, p->envp);
fail:
    e = errno;
    (void) !write(errfd, &e, sizeof e);
    _exit(127);
}

int spawn_daemon(const SpawnParams *p, pid_t *ret_pid, int *ret_pidfd) {
    if (!p || !p->argv || !p->argv[0] || p->argv[0][0] != '/' || !p->creds)
        return -EINVAL;

    int errpipe[2];
    if (pipe2(errpipe, O_CLOEXEC) < 0)
        return negative_errno();
    _cleanup_close_ int err_r = errpipe[0], err_w = errpipe[1];

    pid_t pid = fork();
    if (pid < 0)
        return negative_errno();
    if (pid == 0)
        child(p, err_w);

    err_w = safe_close(err_w);

    /* The child is ours and unreaped, so its pid cannot be reused before
     * pidfd_open: this is race-free without clone3(CLONE_PIDFD). */
    _cleanup_close_ int pidfd = proc_pidfd_open(pid);

    int child_errno = 0;
    ssize_t n;
    do
        n = read(err_r, &child_errno, sizeof child_errno);
    while (n < 0 && errno == EINTR);

    if (n != 0 || pidfd < 0) {
        /* exec failed (or we cannot hold the child): reap it now. */
        (void) kill(pid, SIGKILL); /* ours and unreaped: the pid is still its */
        siginfo_t si;
        (void) waitid(P_PID, pid, &si, WEXITED);
        if (pidfd < 0)
            return pidfd;
        return n == sizeof child_errno && child_errno > 0 ? -child_errno : -EIO;
    }

    *ret_pid = pid;
    *ret_pidfd = TAKE_FD(pidfd);
    return 0;
}
