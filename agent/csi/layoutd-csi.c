/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutd-csi: a CSI v1 node plugin that gives Kubernetes and Nomad their
 * workspaces from layoutd (csi-plugin.h has the map, docs/fleet.md the
 * deployment, man layoutd-csi the reference).
 */

#include <curl/curl.h>
#include <getopt.h>
#include <grpc/grpc.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>

#include "csi-plugin.h"
#include "csi.pb-c.h"
#include "layout.h"
#include "util.h"

#define CSI_TARGET_ROOT_DEFAULT "/var/lib/kubelet"

static const CsiMethod methods[] = {
    { "/csi.v1.Identity/GetPluginInfo", &csi__v1__get_plugin_info_request__descriptor, csi_identity_get_plugin_info },
    { "/csi.v1.Identity/GetPluginCapabilities", &csi__v1__get_plugin_capabilities_request__descriptor,
      csi_identity_get_plugin_capabilities },
    { "/csi.v1.Identity/Probe", &csi__v1__probe_request__descriptor, csi_identity_probe },
    { "/csi.v1.Node/NodePublishVolume", &csi__v1__node_publish_volume_request__descriptor, csi_node_publish_volume },
    { "/csi.v1.Node/NodeUnpublishVolume", &csi__v1__node_unpublish_volume_request__descriptor,
      csi_node_unpublish_volume },
    { "/csi.v1.Node/NodeGetVolumeStats", &csi__v1__node_get_volume_stats_request__descriptor,
      csi_node_get_volume_stats },
    { "/csi.v1.Node/NodeGetCapabilities", &csi__v1__node_get_capabilities_request__descriptor,
      csi_node_get_capabilities },
    { "/csi.v1.Node/NodeGetInfo", &csi__v1__node_get_info_request__descriptor, csi_node_get_info },
    {},
};

static void help(void) {
    printf("layoutd-csi [OPTIONS]\n\n"
           "The CSI node plugin of layoutd: ephemeral inline volumes, each a layoutd\n"
           "workspace made at NodePublishVolume and removed, with its data, at\n"
           "NodeUnpublishVolume, all through the layoutd API.\n\n"
           "Options:\n"
           "      --endpoint unix:///PATH   the plugin's gRPC socket (default: $CSI_ENDPOINT)\n"
           "      --node-id ID              this node's id (default: the host name)\n"
           "      --layoutd-socket PATH     layoutd's API socket (default: %s)\n"
           "      --target-root DIR         target paths must be below DIR (repeatable;\n"
           "                                default: %s)\n"
           "      --log-level LEVEL         err, warning, notice, info (default) or debug\n"
           "  -h, --help                    this help\n"
           "      --version                 the version\n\n"
           "Environment: CSI_ENDPOINT, as --endpoint. SIGTERM or SIGINT stops the plugin.\n"
           "Exit status: 0 stopped, 1 failed, 2 usage.\n",
           LAYOUT_API_SOCKET_DEFAULT, CSI_TARGET_ROOT_DEFAULT);
}

/* unix:///path or unix:/path (the forms COs and sidecars use). */
static int parse_endpoint(const char *e, const char **ret) {
    if (!e)
        return -EINVAL;
    const char *path = NULL;
    if (strncmp(e, "unix://", 7) == 0)
        path = e + 7;
    else if (strncmp(e, "unix:", 5) == 0)
        path = e + 5;
    if (!path || path[0] != '/' || strlen(path) >= 108)
        return -EINVAL;
    *ret = path;
    return 0;
}

static int log_level_from_string(const char *s) {
    static const char *const names[] = { [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
                                         [LOG_INFO] = "info", [LOG_DEBUG] = "debug" };
    for (int i = LOG_ERR; i <= LOG_DEBUG; i++)
        if (names[i] && streq(names[i], s))
            return i;
    return -EINVAL;
}

typedef struct Stopper {
    CsiServer *server;
    CsiApi *api;
    sigset_t signals;
} Stopper;

/* The signals are blocked in every thread and taken here, where stopping
 * the server is safe (it is not in a signal handler). */
static void *stopper_thread(void *userdata) {
    Stopper *s = userdata;
    int sig = 0;
    if (sigwait(&s->signals, &sig) == 0)
        log_info("%s: stopping", strsignal(sig));
    csi_api_cancel_all(s->api);
    csi_server_stop(s->server);
    return NULL;
}

int main(int argc, char **argv) {
    enum { ARG_ENDPOINT = 0x100, ARG_NODE_ID, ARG_SOCKET, ARG_TARGET_ROOT, ARG_LOG_LEVEL, ARG_VERSION };
    static const struct option options[] = {
        { "endpoint", required_argument, NULL, ARG_ENDPOINT },
        { "node-id", required_argument, NULL, ARG_NODE_ID },
        { "layoutd-socket", required_argument, NULL, ARG_SOCKET },
        { "target-root", required_argument, NULL, ARG_TARGET_ROOT },
        { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, ARG_VERSION },
        {},
    };
    const char *endpoint = getenv("CSI_ENDPOINT"), *node_id = NULL, *socket = LAYOUT_API_SOCKET_DEFAULT;
    _cleanup_strv_free_ char **roots = NULL;
    int c, r;

    while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
        switch (c) {
        case ARG_ENDPOINT:
            endpoint = optarg;
            break;
        case ARG_NODE_ID:
            node_id = optarg;
            break;
        case ARG_SOCKET:
            socket = optarg;
            break;
        case ARG_TARGET_ROOT:
            if (optarg[0] != '/') {
                fprintf(stderr, "layoutd-csi: --target-root must be an absolute path: %s\n", optarg);
                return 2;
            }
            if (strv_extend(&roots, optarg) < 0)
                return log_oom(), 1;
            break;
        case ARG_LOG_LEVEL:
            if ((r = log_level_from_string(optarg)) < 0) {
                fprintf(stderr, "layoutd-csi: unknown --log-level '%s'\n", optarg);
                return 2;
            }
            log_set_max_level(r);
            break;
        case 'h':
            help();
            return 0;
        case ARG_VERSION:
            printf("layoutd-csi %s\n", LAYOUTD_VERSION);
            return 0;
        default:
            return 2;
        }
    if (optind < argc) {
        fprintf(stderr, "layoutd-csi: unexpected argument '%s' (see --help)\n", argv[optind]);
        return 2;
    }
    const char *path = NULL;
    if (parse_endpoint(endpoint, &path) < 0) {
        fprintf(stderr, "layoutd-csi: %s: give --endpoint unix:///PATH (or $CSI_ENDPOINT)\n",
                endpoint ? "not a unix:// endpoint" : "no endpoint");
        return 2;
    }
    if (socket[0] != '/') {
        fprintf(stderr, "layoutd-csi: --layoutd-socket must be an absolute path: %s\n", socket);
        return 2;
    }
    char host[HOST_NAME_MAX + 1] = "";
    if (!node_id) {
        if (gethostname(host, sizeof host) < 0 || !host[0])
            return log_error_errno(errno ?: EINVAL, "Failed to read the host name (give --node-id): %m"), 1;
        node_id = host;
    }
    if (!roots && strv_extend(&roots, CSI_TARGET_ROOT_DEFAULT) < 0)
        return log_oom(), 1;

    /* Before any thread: every thread inherits the blocked set, and only
     * the stopper takes the signals. SIGPIPE: a CO that hangs up must not
     * kill us. */
    Stopper stopper = {};
    sigemptyset(&stopper.signals);
    sigaddset(&stopper.signals, SIGTERM);
    sigaddset(&stopper.signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stopper.signals, NULL);
    signal(SIGPIPE, SIG_IGN);

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
        return log_error("Failed to initialise libcurl"), 1;
    grpc_init();

    CsiPlugin plugin = { .node_id = node_id, .target_roots = roots };
    CsiServer *server = NULL;
    _cleanup_free_ char *dir = NULL;
    int ret = 1;
    r = csi_api_new(socket, &plugin.api);
    if (r >= 0)
        r = csi_inflight_new(&plugin.inflight);
    if (r < 0) {
        log_error_errno(r, "Failed to set up: %m");
        goto out;
    }
    dir = strdup(path);
    char *slash = dir ? strrchr(dir, '/') : NULL;
    if (slash && slash != dir) {
        *slash = 0;
        (void) mkdir_p(dir, 0750);
    }
    r = csi_server_new(path, methods, &plugin, &server);
    if (r < 0) {
        log_error_errno(r, "Failed to listen on %s: %m", path);
        goto out;
    }
    stopper.server = server;
    stopper.api = plugin.api;
    pthread_t st;
    if ((r = pthread_create(&st, NULL, stopper_thread, &stopper)) != 0) {
        log_error_errno(r, "Failed to start a thread: %m");
        goto out;
    }
    log_info("layoutd-csi %s (driver %s) listening on %s; node %s; layoutd at %s", LAYOUTD_VERSION,
             CSI_DRIVER_NAME, path, node_id, socket);
    r = csi_server_run(server);
    if (r < 0) {
        log_error_errno(r, "The gRPC server failed: %m");
        pthread_kill(st, SIGTERM);
    } else
        ret = 0;
    pthread_join(st, NULL);
    log_info("stopped");

out:
    server = csi_server_free(server);
    if (path)
        (void) unlink(path);
    csi_inflight_free(plugin.inflight);
    csi_api_free(plugin.api);
    grpc_shutdown_blocking();
    curl_global_cleanup();
    return ret;
}
