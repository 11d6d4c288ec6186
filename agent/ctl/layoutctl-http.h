/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * What the client verbs share: HTTP to the agent's API socket (libcurl),
 * the parsed answer, its error reporting (a line on stderr, or with --json
 * the API's error object on stdout), following an operation until it
 * ends, and reading the event stream.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>

#include <json-c/json.h>

#include "layout.h"
#include "layoutctl-cols.h"
#include "layoutctl.h"
#include "macro.h"

typedef struct Reply {
    long status;
    json_object *json;   /* parsed body (NULL if not JSON) */
    char *raw;           /* body as received */
    char *location;      /* the Location header, or NULL */
} Reply;

void reply_done(Reply *r);

/* The options every client verb has. */
typedef struct ClientArgs {
    bool json;
    const char *socket_path;
    const char *verb;            /* for messages: "add" */
    usec_t wait;                 /* --wait: how long to wait for the agent */
    bool wait_given;             /* --wait was on the command line: also wait
                                    for an agent that is not there yet */
    bool changes;                /* the verb changes something: wait for a
                                    starting agent to be ready (503 not_ready) */
    bool quiet;                  /* print nothing on a transport failure */
} ClientArgs;

void client_init(ClientArgs *a, const LayoutctlGlobals *g);
/* Colour on a terminal unless NO_COLOR: the escape or "". */
const char *client_color(const char *code);
bool client_use_color(void);
#define C_BOLD client_color("\033[1m")
#define C_GREEN client_color("\033[32m")
#define C_RED client_color("\033[31m")
#define C_YELLOW client_color("\033[33m")
#define C_RESET client_color("\033[0m")
/* The colour of a health or state word: its escape, or (for libsmartcols)
 * its name. */
const char *client_health_color(const char *s);
const char *client_health_color_name(const char *s);

/* s escaped for the terminal (escape.h) in a buffer that lives until the
 * next call with the same slot (0..3): for printf of API strings. NULL
 * stays NULL. */
const char *client_safe(unsigned slot, const char *s);

/*
 * One request. On a transport failure prints the reason and returns the
 * exit code (3: layoutd not reachable, 1: other); on any HTTP answer
 * returns 0 with *ret filled (the caller looks at the status). Waits, up
 * to a->wait, for a starting agent (a change answered 503 not_ready) and,
 * when --wait was given, for one that does not answer yet.
 */
int client_call(const char *verb, const ClientArgs *a, const char *method, const char *path, json_object *body,
                Reply *ret);

/* GET path that must answer 200 with JSON. Returns 0 (go on), or the exit
 * code after printing what went wrong. */
int client_get(const char *verb, const ClientArgs *a, const char *path, Reply *ret);

/* Reports an API error answer (stderr; with --json the API's JSON on
 * stdout too), with what to do for the errors that have an answer (403:
 * the socket's group). Returns the exit code (1; 4 for not_found). */
int client_report_error(const char *verb, const ClientArgs *a, const Reply *r);

/* --json: the API's answer, as is but for control and bidi characters
 * in its strings, which are \u-escaped (the same JSON). */
void client_print_raw(const Reply *r);

/*
 * A request that may answer with an operation (202): without no_wait,
 * waits for it (GET /v1/operations/{id}?wait=...), printing each step on
 * stderr as it starts and ends (quiet: not), and leaves in *ret the final
 * answer: the operation's result, or its error as an error answer. With
 * no_wait, *ret is the 202 itself.
 * Returns: 0 with *ret, or an exit code (transport failure).
 */
int client_call_operation(const char *verb, const ClientArgs *a, const char *method, const char *path,
                          json_object *body, bool no_wait, bool quiet, Reply *ret);

/*
 * GET path as a stream: calls on_line for every line as it arrives, until
 * the server ends the stream or on_line returns false. Returns an exit code.
 */
int client_stream(const char *verb, const ClientArgs *a, const char *path, bool (*on_line)(const char *line, void *ud),
                  void *userdata);

/*
 * GET /v1/status for a reading verb. With --wait, waits (up to a->wait, the
 * socket's wait included) until the agent says it is ready: follows the
 * event stream for agent.ready rather than polling, and looks again when
 * the stream ends (an agent that stops and comes back). When the time is
 * up, says on stderr in which state the agent still is (unless quiet or
 * --wait 0). Without --wait, one look.
 * Returns: 0 with *ret the last status (200, JSON; ready unless the time
 * ran out), or the exit code after printing what went wrong.
 */
int client_wait_ready(const char *verb, const ClientArgs *a, Reply *ret);

/* JSON helpers: a member (dotted path "daemon.state" allowed), NULL-safe. */
json_object *json_path_get(json_object *o, const char *path);
const char *json_path_str(json_object *o, const char *path);
int64_t json_path_int(json_object *o, const char *path);
uint64_t json_path_uint(json_object *o, const char *path);
bool json_path_bool(json_object *o, const char *path);

/* ---- the client verbs' command line ------------------------------------ */

typedef enum ClientOptionSet {
    CLIENT_OPT_LIST = 1u << 0,      /* -o, -n, -r, -P, -J, -b */
    CLIENT_OPT_OPERATION = 1u << 1, /* --no-wait */
    CLIENT_OPT_CHANGES = 1u << 2,   /* a change: --wait defaults to CLIENT_READY_WAIT_SEC */
} ClientOptionSet;

/* How long a change waits for a starting agent by default. */
#define CLIENT_READY_WAIT_SEC 60

typedef struct ClientOptions {
    ClientArgs args;
    TableOptions table;          /* CLIENT_OPT_LIST */
    bool no_wait;
} ClientOptions;

/* A verb's own option: getopt's struct option, and what to do with it
 * (return <0 for a usage error; it prints why). */
typedef struct ClientExtraOption {
    struct option opt;
    int (*handle)(const char *arg, void *userdata);
} ClientExtraOption;

/*
 * Parses a client verb's command line: --json, --socket, --wait and --help
 * always, the sets the verb takes, its own options, then exactly n_args
 * arguments (positional, left at argv[optind...]). Returns 0 (go on), -1
 * (--help was printed: exit 0), or LAYOUTCTL_EXIT_USAGE.
 */
int client_parse(int argc, char **argv, const LayoutctlGlobals *g, unsigned sets, const ClientExtraOption *extra,
                 size_t n_extra, void *userdata, int n_args, const char *usage, ClientOptions *ret);

#define CLIENT_COMMON_HELP                                                                   \
    "  --json          print the API's JSON answer as is (errors too, on stdout)\n"         \
    "  --socket PATH   the agent's API socket (default " LAYOUT_API_SOCKET_DEFAULT ")\n"     \
    "  --wait SEC      wait up to SEC seconds for the agent: for a change, while it\n"      \
    "                  starts (default 60); when given, also while it is not running\n"   \
    "                  yet (no socket, nothing listens); status and is-healthy wait\n"    \
    "                  until it is ready\n"                                                \
    "  -h, --help\n"                                                                       \
    "\n"                                                                                   \
    "Exit status: 0 ok, 1 request failed, 2 usage, 3 layoutd not reachable,\n"             \
    "4 no such workspace or volume, 8 --wait ran out while the operation ran.\n"
#define CLIENT_WAIT_HELP                                                                     \
    "  --no-wait       do not wait for the operation: print it and exit\n"                  \
    "  --wait SEC      (given) wait at most SEC seconds in all, the operation's run too;\n"  \
    "                  then print its id and exit 8 (it goes on in the agent)\n"
