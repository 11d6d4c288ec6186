/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "util.h"

bool strv_contains(const char *const *l, const char *s) {
    if (!l || !s)
        return false;
    for (; *l; l++)
        if (streq(*l, s))
            return true;
    return false;
}

char **strv_free(char **l) {
    if (!l)
        return NULL;
    for (char **i = l; *i; i++)
        free(*i);
    free(l);
    return NULL;
}

size_t strv_length(const char *const *l) {
    size_t n = 0;
    if (l)
        while (l[n])
            n++;
    return n;
}

int strv_extend(char ***l, const char *s) {
    size_t n = strv_length((const char *const *) *l);
    char *c = strdup(s);
    if (!c)
        return -ENOMEM;
    char **t = realloc(*l, sizeof(char *) * (n + 2));
    if (!t) {
        free(c);
        return -ENOMEM;
    }
    t[n] = c;
    t[n + 1] = NULL;
    *l = t;
    return 0;
}

int strv_copy(const char *const *l, char ***ret) {
    size_t n = strv_length(l);
    char **c = calloc(n + 1, sizeof(char *));
    if (!c)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        c[i] = strdup(l[i]);
        if (!c[i]) {
            strv_free(c);
            return -ENOMEM;
        }
    }
    *ret = c;
    return 0;
}

bool strv_equal(const char *const *a, const char *const *b) {
    size_t na = strv_length(a), nb = strv_length(b);
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (!streq(a[i], b[i]))
            return false;
    return true;
}

usec_t now_usec(clockid_t clock) {
    struct timespec ts;
    if (clock_gettime(clock, &ts) < 0)
        abort(); /* cannot fail for the clocks we use */
    return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / NSEC_PER_USEC;
}

static int fsync_parent_dir(const char *path) {
    _cleanup_free_ char *copy = strdup(path);
    if (!copy)
        return -ENOMEM;
    _cleanup_close_ int dfd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return negative_errno();
    if (fsync(dfd) < 0)
        return negative_errno();
    return 0;
}

int write_file_atomic(const char *path, const void *data, size_t len, mode_t mode) {
    _cleanup_free_ char *tmp = NULL;
    _cleanup_close_ int fd = -EBADF;
    int r;

    if (asprintf(&tmp, "%s.tmp.%" PRIu64, path, random_u64()) < 0)
        return -ENOMEM;
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0)
        return negative_errno();
    const char *p = data;
    while (len > 0) {
        ssize_t k = write(fd, p, len);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            r = negative_errno();
            goto fail;
        }
        p += k;
        len -= (size_t) k;
    }
    if (fsync(fd) < 0) {
        r = negative_errno();
        goto fail;
    }
    fd = safe_close(fd);
    if (rename(tmp, path) < 0) {
        r = negative_errno();
        goto fail;
    }
    return fsync_parent_dir(path);
fail:
    (void) unlink(tmp);
    return r;
}

int read_full_file(const char *path, char **ret, size_t *ret_len) {
    _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return negative_errno();
    size_t cap = 4096, len = 0;
    _cleanup_free_ char *buf = malloc(cap);
    if (!buf)
        return -ENOMEM;
    for (;;) {
        if (cap - len < 2) {
            if (cap > SIZE_MAX / 2)
                return -EFBIG;
            char *t = realloc(buf, cap * 2);
            if (!t)
                return -ENOMEM;
            buf = t;
            cap *= 2;
        }
        ssize_t k = read(fd, buf + len, cap - len - 1);
        if (k < 0) {
            if (errno == EINTR)
                continue;
            return negative_errno();
        }
        if (k == 0)
            break;
        len += (size_t) k;
    }
    buf[len] = 0;
    if (ret_len)
        *ret_len = len;
    *ret = TAKE_PTR(buf);
    return 0;
}

int read_one_line_file(const char *path, char **ret) {
    char *s;
    int r = read_full_file(path, &s, NULL);
    if (r < 0)
        return r;
    s[strcspn(s, "\n")] = 0;
    *ret = s;
    return 0;
}

int write_string_file(const char *path, const char *s) {
    _cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return negative_errno();
    _cleanup_free_ char *line = NULL;
    if (asprintf(&line, "%s\n", s) < 0)
        return -ENOMEM;
    ssize_t k = write(fd, line, strlen(line));
    if (k < 0)
        return negative_errno();
    if ((size_t) k != strlen(line))
        return -EIO;
    return 0;
}

const char *format_bytes(char *buf, size_t n, uint64_t bytes) {
    static const char suffix[] = "BKMGTPE";
    double v = (double) bytes;
    size_t i = 0;
    while (v >= 1024.0 && i < sizeof(suffix) - 2) {
        v /= 1024.0;
        i++;
    }
    if (i == 0)
        snprintf(buf, n, "%" PRIu64 "B", bytes);
    else
        snprintf(buf, n, "%.1f%c", v, suffix[i]);
    return buf;
}

int mkdir_p(const char *path, mode_t mode) {
    _cleanup_free_ char *p = strdup(path);
    if (!p)
        return -ENOMEM;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(p, mode) < 0 && errno != EEXIST)
            return negative_errno();
        *s = '/';
    }
    if (mkdir(p, mode) < 0 && errno != EEXIST)
        return negative_errno();
    struct stat st;
    if (stat(p, &st) < 0)
        return negative_errno();
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

uint64_t random_u64(void) {
    uint64_t v;
    if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t) sizeof v)
        return v;
    /* The entropy pool is not ready (early boot): jitter does not need
     * cryptographic quality. */
    return now_usec(CLOCK_MONOTONIC) * 6364136223846793005ULL + (uint64_t) getpid();
}

int uuid_generate_v4_string(char **ret) {
    uint8_t b[16];
    uint64_t x = random_u64(), y = random_u64();
    memcpy(b, &x, 8);
    memcpy(b + 8, &y, 8);
    b[6] = (b[6] & 0x0f) | 0x40; /* version 4 */
    b[8] = (b[8] & 0x3f) | 0x80; /* RFC 4122 variant */
    char *s;
    if (asprintf(&s, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
                 b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]) < 0)
        return -ENOMEM;
    *ret = s;
    return 0;
}

