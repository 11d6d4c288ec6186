/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "place-shard.h"
#include "util.h"

static int hexval(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1; /* uppercase is refused: the digest's spelling is part of
                  the contract, and two spellings would mean two names */
}

int place_shard_for_digest(const char *hex, unsigned nshards, unsigned *ret) {
    if (!hex || !ret || nshards == 0)
        return -EINVAL;
    if (nshards > PLACE_SHARDS_MAX)
        return -ERANGE;
    unsigned prefix = 0;
    size_t i;
    for (i = 0; hex[i]; i++) {
        int v = hexval(hex[i]);
        if (v < 0 || i >= PLACE_DIGEST_HEX_LEN)
            return -EINVAL;
        if (i < 4)
            prefix = (prefix << 4) | (unsigned) v;
    }
    if (i != PLACE_DIGEST_HEX_LEN)
        return -EINVAL;
    *ret = prefix % nshards;
    return 0;
}

int place_content_dirs(const Layout *l, char ***ret) {
    const Pool *p = layout_pool(l, POOL_CONTENT);
    if (!ret)
        return -EINVAL;
    if (!p)
        return -ENOENT;
    _cleanup_strv_free_ char **dirs = NULL;
    unsigned n = p->shards ?: 1;
    for (unsigned i = 0; i < n; i++) {
        _cleanup_free_ char *name = NULL, *path = NULL;
        int r = layout_volume_name(POOL_CONTENT, i, &name);
        if (r < 0)
            return r;
        r = layout_mount_path(l, name, &path);
        if (r < 0)
            return r;
        r = strv_extend(&dirs, path);
        if (r < 0)
            return r;
    }
    *ret = TAKE_PTR(dirs);
    return 0;
}

int place_content_dirs_joined(const Layout *l, char **ret) {
    _cleanup_strv_free_ char **dirs = NULL;
    if (!ret)
        return -EINVAL;
    int r = place_content_dirs(l, &dirs);
    if (r < 0)
        return r;
    size_t len = 1;
    for (char **d = dirs; *d; d++)
        len += strlen(*d) + 1;
    char *s = malloc(len), *p = s;
    if (!s)
        return -ENOMEM;
    *s = 0;
    for (char **d = dirs; *d; d++)
        p = stpcpy(stpcpy(p, d == dirs ? "" : ","), *d);
    *ret = s;
    return 0;
}
