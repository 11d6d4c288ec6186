/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* FUSE over io_uring beside libfuse 3.14's session loop (uring.c). */
#pragma once
struct fuse_session;

/* Call after fuse_session_mount() and before the session loop: takes over
 * the session's I/O so that the FUSE_INIT reply asks the kernel for
 * io_uring, and starts one pinned thread and ring per CPU once the kernel
 * has the reply. A kernel that does not offer it keeps every request on
 * /dev/fuse (one line on stderr says so). 0, or -errno when the rings
 * cannot be set up (nothing is changed then). */
int uring_attach(struct fuse_session *se);

/* Call after the loop and the unmount: stops the ring threads, and says on
 * stderr how many requests came through the rings. */
void uring_detach(void);
