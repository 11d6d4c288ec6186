/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* src/place/: workspace placement on the state pool (docs/placement.md)
 * and the content shard mapping (docs/content-shards.md). */

#include "place-id.h"
#include "place-policy.h"
#include "place-scope.h"
#include "place-shard.h"
#include "place-workspaces.h"
