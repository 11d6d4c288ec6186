/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs-type.h"
#include "mkfs.h"
#include "util.h"

/* The only environment a child gets: no inherited LD_PRELOAD, IFS, locale
 * surprises. LC_ALL=C so error text is stable for the operator and logs. */
#define DEV_CHILD_PATH "/usr/sbin:/usr/bin:/sbin:/bin"
/* Captured output cap: mkfs prints a few KiB at most; a runaway child must
 * not grow our memory. The excess is read and dropped so it never blocks. */
#define DEV_OUTPUT_MAX (64 * 1024)
#define DEV_TRUNCATED "\n[output truncated]\n"

const char *mkfs_program(const char *fstype) {
    const FsType *f = fs_type_find(fstype);
    return f ? f->mkfs.program : NULL;
}

/* 8-4-4-4-12 hex digits. */
static bool uuid_is_valid(const char *s) {
    if (strlen(s) != 36)
        return false;
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            if (s[i] != '-')
                return false;
        } else if (!isxdigit((unsigned char) s[i]))
            return false;
    }
    return true;
}

/* "--fo" reaches "--force" through getopt_long's unambiguous prefixes, and
 * "--force=x" is it too. */
static bool is_long_force(const FsMkfs *m, const char *name) {
    size_t n = strcspn(name, "=");
    return n > 0 && strncmp(name, m->force_long, n) == 0;
}

/* Walks extra options the way getopt would and refuses the force flag,
 * also inside a cluster ("-qF"), but not inside an option's argument
 * ("-L", "-F" is the label "-F"). A long option is refused unless the tool
 * has long options and it is not the force one; its argument, if any, is
 * checked as if it were an option (refusing too much, never too little). */
static int check_extra_options(const FsMkfs *m, char *const *extra) {
    bool want_arg = false;
    for (size_t i = 0; extra && extra[i]; i++) {
        const char *a = extra[i];
        if (want_arg) {
            want_arg = false;
            continue;
        }
        if (a[0] != '-' || a[1] == 0)
            continue; /* positional */
        if (a[1] == '-') {
            if (!m->force_long || a[2] == 0 || is_long_force(m, a + 2))
                return -EINVAL;
            continue;
        }
        for (const char *c = a + 1; *c; c++) {
            if (*c == m->force)
                return -EINVAL;
            if (strchr(m->arg_options, *c)) {
                want_arg = c[1] == 0; /* "-Lname" carries its argument */
                break;
            }
        }
    }
    return 0;
}

static int build_argv(const char *fstype, const char *device, const char *label, const char *uuid,
                      char *const *extra_options, bool prezeroed, char ***ret_argv) {
    const FsType *f = fs_type_find(fstype);
    if (!f || isempty(device) || !ret_argv)
        return -EINVAL;
    const FsMkfs *m = &f->mkfs;
    if (label && (strlen(label) > f->label_max || !*label))
        return -EINVAL;
    if (uuid && !uuid_is_valid(uuid))
        return -EINVAL;
    int r = check_extra_options(m, extra_options);
    if (r < 0)
        return r;

    _cleanup_strv_free_ char **argv = NULL;
    _cleanup_free_ char *muuid = NULL;
#define ADD(s)                            \
    do {                                  \
        if (strv_extend(&argv, (s)) < 0)  \
            return -ENOMEM;               \
    } while (0)

    ADD(m->program);
    /* The row's defaults for a loop-backed volume (fs-type.c says why). */
    for (const char *const *a = prezeroed && m->args_prezeroed ? m->args_prezeroed : m->args; a && *a; a++)
        ADD(*a);
    if (label) {
        ADD(m->label_option);
        ADD(label);
    }
    if (uuid) {
        if (asprintf(&muuid, "%s%s", m->uuid_prefix ?: "", uuid) < 0)
            return -ENOMEM;
        ADD(m->uuid_option);
        ADD(muuid);
    }
    for (size_t i = 0; extra_options && extra_options[i]; i++)
        ADD(extra_options[i]);
    ADD(device);
#undef ADD

    *ret_argv = TAKE_PTR(argv);
    return 0;
}

int mkfs_build_argv(const char *fstype, const char *device, const char *label, const char *uuid,
                    char *const *extra_options, char ***ret_argv) {
    return build_argv(fstype, device, label, uuid, extra_options, false, ret_argv);
}

int mkfs_build_argv_prezeroed(const char *fstype, const char *device, const char *label, const char *uuid,
                              char *const *extra_options, char ***ret_argv) {
    return build_argv(fstype, device, label, uuid, extra_options, true, ret_argv);
}

int mkfs_grow_argv(const char *fstype, const char *device, const char *mountpoint, char ***ret_argv) {
    const FsType *f = fs_type_find(fstype);
    if (!f || !f->grow.argv || !ret_argv)
        return -EINVAL;
    /* resize2fs is addressed by the device; xfs_growfs and btrfs by the
     * mount point, never the device. */
    const char *target = f->grow.target == FS_GROW_DEVICE ? device : mountpoint;
    if (isempty(target))
        return -EINVAL;
    _cleanup_strv_free_ char **argv = NULL;
    for (const char *const *a = f->grow.argv; *a; a++)
        if (strv_extend(&argv, *a) < 0)
            return -ENOMEM;
    if (strv_extend(&argv, target) < 0)
        return -ENOMEM;
    *ret_argv = TAKE_PTR(argv);
    return 0;
}

/* Finds name in DEV_CHILD_PATH (not in our own PATH: the child's search
 * path is fixed, ours may be anything). */
static int find_program(const char *name, char **ret) {
    if (strchr(name, '/')) {
        if (access(name, X_OK) < 0)
            return negative_errno();
        char *s = strdup(name);
        if (!s)
            return -ENOMEM;
        *ret = s;
        return 0;
    }
    _cleanup_free_ char *dirs = strdup(DEV_CHILD_PATH);
    if (!dirs)
        return -ENOMEM;
    char *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        char *p;
        if (asprintf(&p, "%s/%s", d, name) < 0)
            return -ENOMEM;
        if (access(p, X_OK) >= 0) {
            *ret = p;
            return 0;
        }
        free(p);
    }
    return -ENOENT;
}

/* In the child, between fork and exec: only async-signal-safe calls. On
 * failure, writes errno to err_fd and exits. */
_Noreturn static void child(const char *path, char *const *argv, char *const *envp, int out_fd, int err_fd,
                            pid_t parent) {
    int e;
    sigset_t all;

    /* A tool dies with whoever runs it (a worker killed with the agent,
     * a killed layoutctl): an mkfs or a resize must not go on beside the
     * next agent's attempt on the same device. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
        _exit(127);

    /* The parent (an sd-event loop) may block or catch signals; the
     * program must start with the defaults. */
    sigemptyset(&all);
    for (int sig = 1; sig < _NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            (void) signal(sig, SIG_DFL);
    (void) sigprocmask(SIG_SETMASK, &all, NULL);

    int null_fd = open("/dev/null", O_RDONLY | O_NOCTTY);
    if (null_fd < 0)
        goto fail;
    if (dup2(null_fd, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0)
        goto fail;
    /* Keep err_fd (it is O_CLOEXEC and closes itself on exec success);
     * close every other inherited fd. */
    if (err_fd > 3 && close_range(3, (unsigned) err_fd - 1, 0) < 0)
        goto fail;
    if (close_range((unsigned) err_fd + 1, ~0U, 0) < 0)
        goto fail;
    execve(path, argv, envp);
fail:
    e = errno;
    (void) !write(err_fd, &e, sizeof e);
    _exit(127);
}

int dev_run_program(char *const *argv, char **ret_output, int *ret_status) {
    if (!argv || isempty(argv[0]))
        return -EINVAL;

    _cleanup_free_ char *path = NULL;
    int r = find_program(argv[0], &path);
    if (r < 0)
        return r;

    char *const envp[] = { "PATH=" DEV_CHILD_PATH, "LC_ALL=C", NULL };

    _cleanup_close_ int out_r = -EBADF, out_w = -EBADF, err_r = -EBADF, err_w = -EBADF;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return negative_errno();
    out_r = p[0], out_w = p[1];
    if (pipe2(p, O_CLOEXEC) < 0)
        return negative_errno();
    err_r = p[0], err_w = p[1];
    /* err_w must not be a standard fd (the child dups over 0-2). */
    if (err_w < 3 || out_w < 3)
        return -EBADF;

    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0)
        return negative_errno();
    if (pid == 0)
        child(path, argv, envp, out_w, err_w, parent);

    out_w = safe_close(out_w);
    err_w = safe_close(err_w);

    /* Read the output to EOF (the child and everything it spawned closed
     * it), keeping at most DEV_OUTPUT_MAX bytes. */
    size_t len = 0;
    bool truncated = false;
    _cleanup_free_ char *buf = malloc(DEV_OUTPUT_MAX + sizeof(DEV_TRUNCATED));
    r = buf ? 0 : -ENOMEM;
    for (;;) {
        char chunk[4096];
        ssize_t k = read(out_r, chunk, sizeof chunk);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            r = r < 0 ? r : negative_errno();
            break;
        }
        if (k == 0)
            break;
        if (!buf)
            continue; /* keep draining so the child never blocks */
        size_t take = MIN((size_t) k, (size_t) DEV_OUTPUT_MAX - len);
        memcpy(buf + len, chunk, take);
        len += take;
        if (take < (size_t) k)
            truncated = true;
    }

    int exec_errno = 0;
    ssize_t k;
    do
        k = read(err_r, &exec_errno, sizeof exec_errno);
    while (k < 0 && errno == EINTR);

    int status = 0;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return negative_errno();

    if (r < 0)
        return r;
    if (k == (ssize_t) sizeof exec_errno && exec_errno > 0)
        return -exec_errno; /* exec (or the setup before it) failed */

    if (buf) {
        if (truncated) {
            memcpy(buf + len, DEV_TRUNCATED, sizeof(DEV_TRUNCATED) - 1);
            len += sizeof(DEV_TRUNCATED) - 1;
        }
        buf[len] = 0;
    }

    if (ret_status)
        *ret_status = status;
    if (ret_output)
        *ret_output = TAKE_PTR(buf);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return -EPROTO;
    return 0;
}
