/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A child process as an event on the agent's sd-event loop: fork + exec
 * (never fork without exec), stdin and stdout on one socket pair (so the
 * agent can answer what the child asks), stderr captured, and the exit an
 * event. Everything slow that the agent starts runs this way: the volume
 * workers (worker.h), the flush probe, fstrim, the content GC.
 *
 * Output is read as lines, without blocking; input is buffered and written
 * as the socket takes it. On exit the child's stdout is drained before
 * on_exit runs, so no line it wrote is lost.
 */

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "macro.h"

typedef struct Child Child;

typedef struct ChildCallbacks {
    /* A line the child wrote on stdout (without the newline). May be NULL. */
    void (*on_line)(Child *c, const char *line, void *userdata);
    /* The child exited; status is its exit code, or -signal. stderr_text is
     * what it wrote on stderr (bounded, may be ""). The Child stays valid
     * until child_free. */
    void (*on_exit)(Child *c, int status, const char *stderr_text, void *userdata);
} ChildCallbacks;

/*
 * Starts argv (argv[0] absolute, or /proc/self/exe). The child inherits
 * the environment, gets the socket as stdin and stdout, a pipe as stderr,
 * and no other fd.
 * Returns: -errno of socketpair/fork/sd-event, 0 with *ret.
 */
int child_spawn(sd_event *e, char *const *argv, const ChildCallbacks *cb, void *userdata, Child **ret);

/* As child_spawn, and the child gets fd (the caller's, not taken) as its
 * fd 3: the write end of a pipe for a child whose output is a byte stream
 * rather than lines (an export's archive). */
int child_spawn_with_fd(sd_event *e, char *const *argv, const ChildCallbacks *cb, void *userdata, int fd,
                        Child **ret);

/* Queues data for the child's stdin. Returns -ENOMEM, -EPIPE (exited), 0. */
int child_write(Child *c, const char *data, size_t len);
/* No more input: the child reads EOF once the queue is written. */
void child_close_input(Child *c);

/* Finds a program in $PATH (the tools a child runs: fstrim, a GC
 * command). Returns: -ENOENT, -ENOMEM, 0 with *ret absolute. */
int child_find_program(const char *name, char **ret);

pid_t child_pid(const Child *c);
bool child_running(const Child *c);
/* Signals the child (if still running). */
void child_kill(Child *c, int sig);

/* Frees the child: one still running is killed (SIGKILL) and reaped by
 * the loop later, without waiting here (it calls nothing back after
 * this). Safe from inside the child's own callbacks. Accepts NULL;
 * returns NULL. */
Child *child_free(Child *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(Child *, child_free)

/* Children freed while running and not reaped yet. */
size_t child_orphans_count(void);
/* At exit, after the loop's last iteration: frees what is left of them
 * (each was killed; a zombie left is init's). */
void child_orphans_free(void);
