/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A workspace's cache: a directory of its state volume for derived data
 * (node_modules' store, target/, tool caches), mounted inside the
 * workspace by the supervisor (src/supervise/cache-bind.h) when the layout
 * has workspace.cache on. It lives beside, never inside, the workspace's
 * state dir: the daemon, gc, fsck and export never walk it.
 */

#include "layout.h"

/* <volume>/derived: the caches' directory on a state volume. */
#define PLACE_CACHE_DIR "derived"

/* <mount of volume>/derived. Returns: -errno, 0 with *ret. */
int place_cache_parent(const Layout *l, const char *volume, char **ret);

/* <mount of volume>/derived/<id>. Returns: -errno, 0 with *ret. */
int place_cache_source(const Layout *l, const char *volume, const char *id, char **ret);

/*
 * The environment a process in the workspace gets so that its tools put
 * their derived data in the cache mounted at cache_path (as the workspace
 * sees it): "KEY=VALUE" strings, docs/api.md names each.
 * Returns: -errno, 0 with *ret (a strv).
 */
int place_cache_environment(const char *cache_path, char ***ret);
