/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>

#include <systemd/sd-id128.h>

#include "proc.h"
#include "util.h"

int proc_parse_start_time(const char *text, uint64_t *ret) {
    const char *p = strrchr(text, ')');
    if (!p)
        return -EBADMSG;
    p++;
    /* After ')' comes field 3 (state); field 22 is the 20th from here. */
    for (int field = 3; field < 22; field++) {
        while (*p == ' ')
            p++;
        if (!*p)
            return -EBADMSG;
        p += strcspn(p, " ");
    }
    while (*p == ' ')
        p++;
    uint64_t v;
    if (sscanf(p, "%" SCNu64, &v) != 1)
        return -EBADMSG;
    *ret = v;
    return 0;
}

int proc_start_time(pid_t pid, uint64_t *ret) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    _cleanup_free_ char *text = NULL;
    int r = read_full_file(path, &text, NULL);
    if (r == -ENOENT)
        return -ESRCH;
    if (r < 0)
        return r;
    return proc_parse_start_time(text, ret);
}

int proc_environ(pid_t pid, char ***ret) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/environ", (int) pid);
    _cleanup_free_ char *text = NULL;
    size_t n = 0;
    int r = read_full_file(path, &text, &n);
    if (r == -ENOENT || r == -ESRCH)
        return -ESRCH;
    if (r < 0)
        return r;
    if (n == 0)
        return -ESRCH;
    _cleanup_strv_free_ char **env = calloc(1, sizeof(char *));
    if (!env)
        return -ENOMEM;
    /* NUL-separated; read_full_file ends the text with one more NUL, so
     * a last entry cut short still ends. */
    for (size_t i = 0; i < n; i += strlen(text + i) + 1)
        if (text[i] && strv_extend(&env, text + i) < 0)
            return -ENOMEM;
    *ret = TAKE_PTR(env);
    return 0;
}

bool proc_is_dead(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", (int) pid);
    _cleanup_free_ char *text = NULL;
    if (read_full_file(path, &text, NULL) < 0)
        return true;
    const char *p = strrchr(text, ')');
    if (!p || p[1] != ' ')
        return true;
    return p[2] == 'Z' || p[2] == 'X';
}

int proc_boot_id(char ret[static 33], uint64_t *ret_legacy_hash) {
    sd_id128_t id;
    int r = sd_id128_get_boot(&id);
    if (r < 0)
        return r;
    char s[SD_ID128_STRING_MAX], uuid[SD_ID128_UUID_STRING_MAX];
    sd_id128_to_string(id, s);
    /* Older records hold an FNV-1a hash of the id as the kernel prints it
     * (/proc/sys/kernel/random/boot_id: the UUID form, lower case). */
    snprintf(uuid, sizeof uuid, SD_ID128_UUID_FORMAT_STR, SD_ID128_FORMAT_VAL(id));
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (const char *c = uuid; *c; c++) {
        h ^= (unsigned char) *c;
        h *= UINT64_C(0x100000001b3);
    }
    memcpy(ret, s, 33);
    if (ret_legacy_hash)
        *ret_legacy_hash = h ?: 1;
    return 0;
}

int proc_pidfd_open(pid_t pid) {
    long fd = syscall(SYS_pidfd_open, pid, 0);
    return fd < 0 ? negative_errno() : (int) fd;
}

int proc_pidfd_signal(int pidfd, int sig) {
    if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0)
        return negative_errno();
    return 0;
}
