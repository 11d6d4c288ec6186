/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What an operator sees of a volume: the API's volume object (docs/api.md,
 * GET /v1/volumes) and the layoutd_volume_* metric families, made from an
 * observation alone (no device is touched: the agent serves these from
 * its cached observation). The backend adds its own fields and families
 * (VolumeBackend.to_json / .metrics); the agent adds what only it knows
 * (the workspaces on the volume, the flush probe, the last apply).
 */

#include <json-c/json.h>

#include "metrics.h"
#include "observation.h"

/* The volume's object: name, role, backend, device, direct_io (read back
 * from the kernel), filesystem, mount, sizes, writeback, I/O counters, and
 * the backend's own fields. Returns 0, -ENOMEM. */
int volume_report_json(const Layout *l, const VolumeObservation *v, const VolumeRecord *rec, json_object **ret);

/* The generic layoutd_volume_* families for every volume of obs (the
 * workspaces family is the agent's), then each backend's own families. */
void volume_report_metrics(const Observation *obs, MetricsWriter *w);
