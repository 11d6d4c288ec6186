/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl why ID [--tenant T] [--layout FILE] [--root DIR] [--json]
 * Explains where a workspace would be placed now, and why: the placement
 * policy's ranking of every state volume with the reason each was passed
 * over. The running agent answers it (GET /v1/workspaces/ID/placement):
 * its layout, its observation, the creates and carves in flight, as its
 * next create would see them. Without an agent, or with --layout or --root
 * (a question about files, not the agent), it is predicted here from the
 * layout and the record on disk (read without the root's lock), the
 * agent's flush figures weighed when one answers.
 */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "layoutctl.h"
#include "layoutctl-http.h"
#include "engine.h"
#include "place-id.h"
#include "place-workspaces.h"
#include "util.h"

static void why_usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl why ID [--tenant T] [--layout FILE] [--root DIR] [--socket PATH] [--json]\n"
            "\n"
            "Shows where workspace ID would be placed now and why: every state volume\n"
            "ranked, or the reason it was passed over (bound, tenant, space, slow flush...).\n"
            "Changes nothing; no volume is carved. The running agent answers (--socket,\n"
            "else the default one), as its next create would decide. Without an agent,\n"
            "or with --layout or --root, it is predicted from the files on disk (said on\n"
            "stderr); then the flush figures still come from the agent when one answers\n"
            "(the layout's socket), and with --root and no --socket slow-flush is not\n"
            "weighed.\n"
            "\n"
            "Exit status: 0 it can be placed, 6 it would be refused (the answer, printed\n"
            "like any other), 1 an error (no answer), 2 usage.\n");
}

/* The statvfs observation plus the flush figure the running agent's probe
 * published (GET /v1/volumes: flush_probe.recent_seconds): the policy
 * weighs it (slow_flush_factor), so without it the prediction could
 * differ from what the agent decides. userdata: the "volumes" array. */
static int observe_with_flush(void *userdata, const VolumeRecord *v, const char *mount, PlaceVolumeObservation *ret) {
    json_object *volumes = userdata;
    int r = place_volume_observe_default(v, mount, ret);
    if (r < 0)
        return r;
    for (size_t i = 0; i < json_object_array_length(volumes); i++) {
        json_object *o = json_object_array_get_idx(volumes, i), *n, *f, *sec;
        if (!json_object_object_get_ex(o, "name", &n) || !streq_ptr(json_object_get_string(n), v->name))
            continue;
        if (json_object_object_get_ex(o, "flush_probe", &f) && json_object_object_get_ex(f, "recent_seconds", &sec) &&
            (json_object_is_type(sec, json_type_double) || json_object_is_type(sec, json_type_int)) &&
            json_object_get_double(sec) >= 0) {
            ret->flush_known = true;
            ret->flush_usec = (uint64_t) (json_object_get_double(sec) * USEC_PER_SEC + 0.5);
        }
        break;
    }
    return 0;
}

/* Carving is only decided here, never done. */
static int no_carve(void *userdata, PoolRole role, unsigned index, char **ret) {
    return -EPERM;
}

/* The answer, as the agent's JSON or its text; the exit code. */
static int print_answer(json_object *o, bool json) {
    json_object *action = NULL, *why = NULL;
    json_object_object_get_ex(o, "action", &action);
    json_object_object_get_ex(o, "why", &why);
    if (json)
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY));
    else
        fputs(json_object_get_string(why) ?: "", stdout);
    /* A refusal is an answer, not a failure: scripts tell them apart. */
    return streq_ptr(json_object_get_string(action), "refuse") ? LAYOUTCTL_EXIT_REFUSED : LAYOUTCTL_EXIT_OK;
}

/* Asks the agent at socket_path (NULL: the one the globals name, else the
 * default). Returns an exit code, or -1 when there is no agent to answer
 * (nothing listens, said on stderr; or one too old for the route):
 * predict here. Any other failure (the socket refuses us, a timeout) is
 * the answer: a prediction would pass for the agent's. */
static int ask_agent(const LayoutctlGlobals *g, const char *socket_path, const char *id, const char *tenant,
                     bool json) {
    ClientArgs ca = {};
    client_init(&ca, g);
    if (socket_path)
        ca.socket_path = socket_path;
    ca.json = false;
    _cleanup_free_ char *path = NULL;
    if (asprintf(&path, "/v1/workspaces/%s/placement%s%s", id, tenant ? "?tenant=" : "", tenant ?: "") < 0)
        return LAYOUTCTL_EXIT_FAILURE;
    Reply reply = {};
    int ec = client_call("why", &ca, "GET", path, NULL, &reply);
    if (ec != 0)
        return ec == LAYOUTCTL_EXIT_UNREACHABLE ? -1 : ec;
    json_object *code = NULL, *err = NULL;
    if (reply.status == 200 && reply.json)
        ec = print_answer(reply.json, json);
    else if (reply.status == 404 && reply.json && json_object_object_get_ex(reply.json, "error", &err) &&
             json_object_object_get_ex(err, "code", &code) && streq_ptr(json_object_get_string(code), "not_found"))
        ec = -1; /* an agent from before the route */
    else {
        ca.json = json;
        ec = client_report_error("why", &ca, &reply);
    }
    reply_done(&reply);
    return ec;
}

int layoutctl_why(int argc, char **argv, const LayoutctlGlobals *g) {
    enum { OPT_JSON = 0x100, OPT_LAYOUT, OPT_ROOT, OPT_TENANT, OPT_SOCKET };
    static const struct option options[] = {
        { "layout", required_argument, NULL, OPT_LAYOUT },
        { "socket", required_argument, NULL, OPT_SOCKET }, /* after the verb too, as every client verb */
        { "root", required_argument, NULL, OPT_ROOT },
        { "tenant", required_argument, NULL, OPT_TENANT },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        {},
    };
    const char *layout_path = NULL, *root = NULL, *tenant = NULL, *socket_path = NULL;
    bool json = g->json;
    int c, r;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
        switch (c) {
        case OPT_LAYOUT:
            layout_path = optarg;
            break;
        case OPT_ROOT:
            root = optarg;
            break;
        case OPT_TENANT:
            tenant = optarg;
            break;
        case OPT_SOCKET:
            socket_path = optarg;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            why_usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            return layoutctl_option_error("why", argv, options, c);
        }
    if (optind + 1 != argc)
        return optind >= argc ? layoutctl_usage_error("why", "expected a workspace ID")
                              : layoutctl_usage_error("why", "unexpected argument '%s'", argv[optind + 1]);
    const char *id = argv[optind];
    if (root && root[0] != '/')
        return layoutctl_usage_error("why", "bad --root %s (it must be absolute)", root);
    if (!place_workspace_id_is_valid(id))
        return layoutctl_usage_error("why", "bad workspace ID '%s'", id);
    if (tenant && !layout_name_is_valid(tenant, LAYOUT_NAME_MAX))
        return layoutctl_usage_error("why", "bad --tenant '%s' ([a-z0-9][a-z0-9-]*, at most %d characters)", tenant,
                                     LAYOUT_NAME_MAX);

    /* The agent's own answer, unless the question is about files. */
    bool asked = false;
    const char *asked_socket = socket_path ?: g->socket_path ?: LAYOUT_API_SOCKET_DEFAULT;
    if (!layout_path && !root) {
        r = ask_agent(g, socket_path, id, tenant, json);
        if (r >= 0)
            return r;
        asked = true;
    }

    _cleanup_(engine_freep) Engine *e = NULL;
    _cleanup_free_ char *error = NULL;
    EngineOptions eo = { .layout_path = layout_path, .root = root };
    r = engine_open(&eo, &e, &error);
    if (r < 0) {
        fprintf(stderr, "layoutctl why: %s\n", error ?: strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    const Layout *l = e->layout;
    StateRecord *record = e->record;
    /* The layout names another socket than the one asked: its agent's
     * answer, if it has one. */
    if (asked && !socket_path && !g->socket_given && l->api.socket_path &&
        !streq(l->api.socket_path, asked_socket)) {
        r = ask_agent(g, l->api.socket_path, id, tenant, json);
        if (r >= 0)
            return r;
    }
    if (asked)
        fprintf(stderr, "layoutctl why: no agent answered; predicted from the layout and the record on disk\n");

    PlaceContext ctx = { .layout = l, .record = record, .carve = no_carve };
    /* The agent, when it answers (quietly: why works without it, from the
     * record alone, only without flush figures). Its socket: --socket, else
     * the layout's, else the default. With --root and no --socket, not at
     * all: the agent serves the layout's root, and its figures would be
     * read as those of another root's volumes of the same names. */
    ClientArgs ca = {};
    client_init(&ca, g);
    bool socket_given = g->socket_given || socket_path;
    if (socket_path)
        ca.socket_path = socket_path;
    else if (!g->socket_given && l->api.socket_path)
        ca.socket_path = l->api.socket_path;
    ca.json = false;
    ca.quiet = true;
    Reply volumes_reply = {};
    json_object *volumes = NULL;
    bool ask_agent = socket_given || !root;
    if (ask_agent && client_call("why", &ca, "GET", "/v1/volumes", NULL, &volumes_reply) == 0 &&
        volumes_reply.status == 200 &&
        json_object_object_get_ex(volumes_reply.json, "volumes", &volumes) &&
        json_object_is_type(volumes, json_type_array)) {
        ctx.observe = observe_with_flush;
        ctx.observe_userdata = volumes;
    }
    json_object *answer = NULL;
    r = place_workspace_why(&ctx, id, tenant, &answer);
    reply_done(&volumes_reply);
    if (r < 0) {
        fprintf(stderr, "layoutctl: cannot explain a placement for '%s': %s\n", id, strerror(-r));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    int exit_code = print_answer(answer, json);
    json_object_put(answer);
    return exit_code;
}
