/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "wsfs.h"

int gc_main(int argc, char **argv) {
    fprintf(stderr, "layoutd-wsfs gc: not built yet\n");
    return 2;
}
