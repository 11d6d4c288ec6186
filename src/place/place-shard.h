/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Content shard mapping (docs/content-shards.md): the object whose lowercase
 * hex SHA-256 digest is H lives in shard
 *
 *     strtoul(first 4 hex digits of H, 16) % nshards
 *
 * i.e. the first two bytes of the digest as a big-endian 16-bit integer,
 * modulo the number of shards. Shard i is the i-th entry of the ordered,
 * comma-joined content directory list a workspace daemon is given
 * ({content_dirs}, with LAYOUTD_SHARDS=n). Every daemon and the agent must
 * agree on this exactly, or objects are looked for in the wrong shard.
 */

#include <stdbool.h>

#include "layout.h"

#define PLACE_DIGEST_HEX_LEN 64
#define PLACE_SHARDS_MAX 65536U /* more shards than 16-bit prefixes are useless */

/*
 * Maps a digest to its shard. hex must be exactly 64 lowercase hex digits.
 * Returns: -EINVAL (bad digest, nshards == 0), -ERANGE (nshards >
 * PLACE_SHARDS_MAX), 0 with *ret in [0, nshards).
 */
int place_shard_for_digest(const char *hex, unsigned nshards, unsigned *ret);

/*
 * The content directories in shard order (the mount points of content-0 ..
 * content-<shards-1>) as a strv, and joined with ',' as the {content_dirs}
 * placeholder wants it. Returns: -ENOENT (no content pool), -ENOMEM, 0.
 */
int place_content_dirs(const Layout *l, char ***ret);
int place_content_dirs_joined(const Layout *l, char **ret);
