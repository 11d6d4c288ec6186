/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/* dir: the table entry (backends.c) of backend-dir.c. */

#include "backend.h"

extern const VolumeBackend dir_backend;
