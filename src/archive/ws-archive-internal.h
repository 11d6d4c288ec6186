/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* n bytes as 2n lowercase hex digits and a NUL. */
void ws_archive_hex(const unsigned char *b, size_t n, char *out);
