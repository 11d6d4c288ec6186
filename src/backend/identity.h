/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A volume's identity file, <volume root>/.layoutd-volume. The engine
 * writes it when it first puts a volume in service (PLAN_STEP_IDENTIFY)
 * and records its UUID (VolumeRecord.identity); the observation reads it
 * back; the workspace daemons get the UUIDs from the agent
 * (LAYOUTD_STATE_VOLUME_UUID, LAYOUTD_CONTENT_UUIDS) and refuse a --state
 * or --content directory that does not carry them. That is what keeps a
 * daemon off the bare directory an unmounted volume leaves behind (it has
 * no identity file), and off another volume mounted in its place.
 *
 * The format, text, one key=value per line ('#' starts a comment; unknown
 * keys are ignored, so it can grow):
 *
 *   # layoutd volume identity: written by layoutd; do not edit or copy
 *   uuid=0b7a6d1c-...
 *   name=content-0
 *   role=content
 */

#include "layout.h"

#define VOLUME_IDENTITY_FILE ".layoutd-volume"
#define VOLUME_IDENTITY_MAX 4096

/* The uuid= of an identity file's text (pure).
 * Returns: -EBADMSG (no uuid, or one that is not a UUID), -ENOMEM, 0. */
int volume_identity_parse(const char *text, char **ret_uuid);

/* Reads dir's identity file (never following a symlink).
 * Returns: -ENOENT (none), -EBADMSG, -errno, 0 with *ret_uuid. */
int volume_identity_read(const char *dir, char **ret_uuid);

/* Writes dir's identity file atomically and durably (mode 0444).
 * Returns: <0 on error, 0. */
int volume_identity_write(const char *dir, const char *uuid, const char *name, PoolRole role);
