/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl export ID -o FILE: GET /v1/workspaces/{id}/export into FILE.
 * layoutctl import FILE [--id ID] [--tenant T]: the other half, done by
 * the client: it reads the archive's metadata, creates the workspace
 * through the normal create call, extracts into the workspace's mount (so
 * that every file goes through its daemon: large ones land in the content
 * pool and are deduplicated), and checks every entry against the
 * archive's manifest. A failure removes the workspace it created, data
 * and all, so nothing half-imported is left.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "layoutctl-http.h"
#include "util.h"
#include "ws-archive.h"

/* ---- export ----------------------------------------------------------------- */

typedef struct Download {
    CURL *curl;
    FILE *out;
    long status;
    char *error;                 /* a non-200 answer's body */
    size_t error_len;
    uint64_t bytes;
    bool write_failed;
} Download;

static size_t on_data(char *p, size_t size, size_t n, void *userdata) {
    Download *d = userdata;
    size_t len = size * n;
    if (d->status == 0)
        curl_easy_getinfo(d->curl, CURLINFO_RESPONSE_CODE, &d->status);
    if (d->status != 200) {
        /* The API's JSON error: small, kept whole up to 64 KiB. */
        if (d->error_len + len > 64 * 1024)
            return len;
        char *t = realloc(d->error, d->error_len + len + 1);
        if (!t)
            return 0;
        memcpy(t + d->error_len, p, len);
        d->error = t;
        d->error_len += len;
        d->error[d->error_len] = 0;
        return len;
    }
    if (fwrite(p, 1, len, d->out) != len) {
        d->write_failed = true;
        return 0;
    }
    d->bytes += len;
    return len;
}

static int set_output(const char *arg, void *userdata) {
    *(const char **) userdata = arg;
    return 0;
}

int layoutctl_export(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl export ID -o FILE [--socket PATH]\n"
        "\n"
        "Writes workspace ID as a tar archive compressed with zstd (pax headers: modes,\n"
        "owners, times, symlinks, hard links, xattrs; the workspace's metadata first,\n"
        "a manifest with every file's sha256 last). FILE - is standard output. The\n"
        "files are read through the workspace's mount after a syncfs of it; writers\n"
        "are not held, so stop them first for a consistent copy.\n"
        "\n"
        "  -o, --output FILE  where to write the archive (- for standard output)\n" CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = { { { "output", required_argument, NULL, 0 }, set_output } };
    const char *output = NULL;
    ClientOptions o;
    /* -o as the short form of --output (client_parse knows -o only for lists). */
    for (int i = 1; i < argc; i++)
        if (streq(argv[i], "-o"))
            argv[i] = (char *) "--output";
    int ec = client_parse(argc, argv, g, 0, extra, ELEMENTSOF(extra), &output, 1, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *id = argv[optind];
    if (!layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX))
        return layoutctl_usage_error("export", "invalid workspace ID '%s'", client_safe(0, id));
    if (!output)
        return layoutctl_usage_error("export", "-o FILE is required (- for standard output)");
    bool to_stdout = streq(output, "-");
    if (to_stdout && isatty(STDOUT_FILENO))
        return layoutctl_usage_error("export", "standard output is a terminal: give -o FILE or redirect it");

    /* Into FILE.partial, renamed once the stream ended whole: a failed
     * export never leaves a FILE that looks like an archive. */
    _cleanup_free_ char *tmp = NULL;
    Download d = {};
    if (to_stdout)
        d.out = stdout;
    else {
        if (asprintf(&tmp, "%s.partial", output) < 0)
            return LAYOUTCTL_EXIT_FAILURE;
        d.out = fopen(tmp, "we");
        if (!d.out) {
            fprintf(stderr, "layoutctl export: cannot create %s: %m\n", tmp);
            return LAYOUTCTL_EXIT_FAILURE;
        }
    }
    char url[256], errbuf[CURL_ERROR_SIZE] = "";
    snprintf(url, sizeof url, "http://localhost/v1/workspaces/%s/export", id);
    d.curl = curl_easy_init();
    if (!d.curl)
        return LAYOUTCTL_EXIT_FAILURE;
    curl_easy_setopt(d.curl, CURLOPT_UNIX_SOCKET_PATH, o.args.socket_path);
    curl_easy_setopt(d.curl, CURLOPT_URL, url);
    curl_easy_setopt(d.curl, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(d.curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(d.curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(d.curl, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(d.curl, CURLOPT_WRITEDATA, &d);
    CURLcode cc = curl_easy_perform(d.curl);
    if (d.status == 0)
        curl_easy_getinfo(d.curl, CURLINFO_RESPONSE_CODE, &d.status);
    curl_easy_cleanup(d.curl);
    bool closed_ok = to_stdout ? fflush(stdout) == 0 : fclose(d.out) == 0;

    ec = LAYOUTCTL_EXIT_OK;
    if (cc != CURLE_OK && d.status == 0) {
        fprintf(stderr, "layoutctl export: cannot reach layoutd at %s: %s\n", o.args.socket_path,
                errbuf[0] ? errbuf : curl_easy_strerror(cc));
        ec = LAYOUTCTL_EXIT_UNREACHABLE;
    } else if (d.status != 200) {
        Reply r = { .status = d.status, .raw = d.error ?: strdup("") };
        if (r.raw && r.raw[0])
            r.json = json_tokener_parse(r.raw);
        d.error = NULL;
        ec = client_report_error("export", &o.args, &r);
        reply_done(&r);
    } else if (d.write_failed || !closed_ok) {
        fprintf(stderr, "layoutctl export: cannot write %s: %m\n", to_stdout ? "standard output" : tmp);
        ec = LAYOUTCTL_EXIT_FAILURE;
    } else if (cc != CURLE_OK) {
        /* The agent cut the stream: the export failed on its side (its
         * log and the workspace.export_failed event say why). */
        fprintf(stderr, "layoutctl export: the export of %s failed after %" PRIu64 " bytes: %s (see the agent's log)\n",
                client_safe(0, id), d.bytes, errbuf[0] ? errbuf : curl_easy_strerror(cc));
        ec = LAYOUTCTL_EXIT_FAILURE;
    } else if (!to_stdout && rename(tmp, output) < 0) {
        fprintf(stderr, "layoutctl export: cannot rename %s to %s: %m\n", tmp, output);
        ec = LAYOUTCTL_EXIT_FAILURE;
    }
    free(d.error);
    if (ec != LAYOUTCTL_EXIT_OK && tmp)
        (void) unlink(tmp);
    if (ec == LAYOUTCTL_EXIT_OK && !to_stdout)
        fprintf(stderr, "Exported workspace %s to %s (%" PRIu64 " bytes)\n", client_safe(0, id),
                client_safe(1, output), d.bytes);
    return ec;
}

/* ---- import ------------------------------------------------------------------ */

typedef struct ImportArgs {
    const char *id;
    const char *tenant;
} ImportArgs;

static int import_id(const char *arg, void *userdata) {
    ImportArgs *a = userdata;
    if (!layout_name_is_valid(arg, LAYOUT_WORKSPACE_ID_MAX)) {
        layoutctl_usage_error("import", "invalid workspace ID '%s'", client_safe(0, arg));
        return -EINVAL;
    }
    a->id = arg;
    return 0;
}

static int import_tenant(const char *arg, void *userdata) {
    ImportArgs *a = userdata;
    if (!layout_name_is_valid(arg, LAYOUT_NAME_MAX)) {
        layoutctl_usage_error("import", "invalid tenant '%s'", client_safe(0, arg));
        return -EINVAL;
    }
    a->tenant = arg;
    return 0;
}

/* True when dir has no entries (a fresh workspace's mount). */
/* Whether dir holds nothing but, when given, the mount point `except`
 * (the new workspace's cache). */
static bool dir_is_empty(const char *dir, const char *except) {
    DIR *d = opendir(dir);
    if (!d)
        return false;
    struct dirent *de;
    bool empty = true;
    while (empty && (de = readdir(d)))
        if (!streq(de->d_name, ".") && !streq(de->d_name, "..") && !streq_ptr(de->d_name, except))
            empty = false;
    closedir(d);
    return empty;
}

/* Removes what the import created (its data too). Returns an exit code. */
static int import_undo(const ClientArgs *a, const char *id, bool destroy) {
    char path[128];
    snprintf(path, sizeof path, "/v1/workspaces/%s%s", id, destroy ? "?destroy_data=true" : "");
    Reply r = {};
    int ec = client_call_operation("import", a, "DELETE", path, NULL, false, true, &r);
    if (ec == 0 && r.status != 200)
        ec = client_report_error("import", a, &r);
    if (ec == 0)
        fprintf(stderr, "layoutctl import: removed workspace %s again%s\n", client_safe(0, id),
                destroy ? ", with what was written of it" : " (its earlier data kept)");
    else
        fprintf(stderr, "layoutctl import: could not remove workspace %s: remove it with `layoutctl rm %s%s`\n",
                client_safe(0, id), client_safe(1, id), destroy ? " --destroy-data" : "");
    reply_done(&r);
    return ec;
}

int layoutctl_import(int argc, char **argv, const LayoutctlGlobals *g) {
    static const char usage[] =
        "Usage: layoutctl import FILE [--id ID] [--tenant T] [--wait SEC] [--json] [--socket PATH]\n"
        "\n"
        "Creates a workspace from an archive made by `layoutctl export` (FILE - is\n"
        "standard input): the ID, tenant and labels are the archive's unless given\n"
        "here. The files are written through the new workspace's mount (large files\n"
        "go to the content pool and are deduplicated), then every one is checked\n"
        "against the archive's manifest (sha256, size, mode, link targets, hard links).\n"
        "Any failure, a damaged or cut archive included, removes the new workspace\n"
        "and what was written of it. Must run on the agent's host, as root.\n"
        "\n"
        "  --id ID       the new workspace's ID (default: the archive's)\n"
        "  --tenant T    its tenant (default: the archive's)\n" CLIENT_COMMON_HELP;
    static const ClientExtraOption extra[] = {
        { { "id", required_argument, NULL, 0 }, import_id },
        { { "tenant", required_argument, NULL, 0 }, import_tenant },
    };
    ImportArgs ia = {};
    ClientOptions o;
    int ec = client_parse(argc, argv, g, CLIENT_OPT_CHANGES, extra, ELEMENTSOF(extra), &ia, 1, usage, &o);
    if (ec != 0)
        return ec < 0 ? LAYOUTCTL_EXIT_OK : ec;
    const char *file = argv[optind];

    _cleanup_(ws_archive_reader_freep) WsArchiveReader *rd = NULL;
    json_object *meta = NULL, *manifest = NULL, *body = NULL, *v;
    _cleanup_free_ char *msg = NULL;
    _cleanup_free_ char *id = NULL, *mountpoint = NULL;
    Reply r = {};
    int k = ws_archive_reader_open(file, &rd, &meta, &msg);
    if (k < 0) {
        fprintf(stderr, "layoutctl import: %s: %s\n", client_safe(0, file), client_safe(1, msg ?: strerror(-k)));
        return LAYOUTCTL_EXIT_FAILURE;
    }
    const char *mid = json_object_object_get_ex(meta, "id", &v) ? json_object_get_string(v) : NULL;
    id = strdup(ia.id ?: mid ?: "");
    if (!id || !layout_name_is_valid(id, LAYOUT_WORKSPACE_ID_MAX)) {
        fprintf(stderr, "layoutctl import: the archive's workspace ID '%s' is not valid: give --id\n",
                client_safe(0, id ?: ""));
        ec = LAYOUTCTL_EXIT_FAILURE;
        goto out;
    }

    body = json_object_new_object();
    json_object_object_add(body, "id", json_object_new_string(id));
    if (ia.tenant)
        json_object_object_add(body, "tenant", json_object_new_string(ia.tenant));
    else if (json_object_object_get_ex(meta, "tenant", &v) && json_object_is_type(v, json_type_string))
        json_object_object_add(body, "tenant", json_object_get(v));
    if (json_object_object_get_ex(meta, "labels", &v) && json_object_is_type(v, json_type_object) &&
        json_object_object_length(v) > 0)
        json_object_object_add(body, "labels", json_object_get(v));
    /* A quota is carried when there was one; an agent that cannot enforce
     * it refuses the create, which is the truth. */
    if (json_object_object_get_ex(meta, "quota_bytes", &v) && json_object_get_uint64(v) > 0)
        json_object_object_add(body, "quota", json_object_get(v));

    /* An existing workspace is never imported over; an inactive one (data
     * kept) would come back with its old files by a create, so it is
     * refused as well. */
    char path[128];
    snprintf(path, sizeof path, "/v1/workspaces/%s", id);
    ec = client_call("import", &o.args, "GET", path, NULL, &r);
    if (ec != 0)
        goto out;
    if (r.status != 404) {
        if (r.status == 200)
            fprintf(stderr, "layoutctl import: workspace %s exists already on this agent%s: give another --id\n",
                    client_safe(0, id), json_path_bool(r.json, "active") ? "" : " (removed, data kept)");
        else
            (void) client_report_error("import", &o.args, &r);
        ec = LAYOUTCTL_EXIT_FAILURE;
        goto out;
    }
    reply_done(&r);
    r = (Reply) {};

    ec = client_call_operation("import", &o.args, "POST", "/v1/workspaces", body, false, o.args.json, &r);
    if (ec != 0)
        goto out;
    if (r.status != 201) {
        ec = client_report_error("import", &o.args, &r);
        goto out;
    }
    const char *mp = json_path_str(r.json, "mountpoint");
    mountpoint = mp ? strdup(mp) : NULL;
    /* Its cache, if it has one, is mounted there already (and empty: the
     * archive holds no cache). */
    json_object *cache = NULL;
    const char *cache_path = json_object_object_get_ex(r.json, "cache", &cache) && cache ? json_path_str(cache, "path") : NULL;
    const char *cache_name = cache_path && strrchr(cache_path, '/') ? strrchr(cache_path, '/') + 1 : NULL;
    if (!mountpoint || !dir_is_empty(mountpoint, cache_name)) {
        fprintf(stderr, "layoutctl import: the new workspace's mount %s is %s\n", client_safe(0, mp ?: "(none)"),
                mountpoint ? "not empty" : "unknown");
        ec = LAYOUTCTL_EXIT_FAILURE;
        (void) import_undo(&o.args, id, false);
        goto out;
    }
    if (!o.args.json)
        fprintf(stderr, "Created workspace %s, writing the archive's files into %s\n", client_safe(0, id),
                client_safe(1, mountpoint));

    WsArchiveStats st = {};
    msg = mfree(msg);
    k = ws_archive_extract(rd, mountpoint, &manifest, &st, &msg);
    if (k < 0) {
        fprintf(stderr, "layoutctl import: %s: %s\n", client_safe(0, file), client_safe(1, msg ?: strerror(-k)));
        ec = LAYOUTCTL_EXIT_FAILURE;
        (void) import_undo(&o.args, id, true);
        goto out;
    }
    uint64_t checked = 0;
    msg = mfree(msg);
    k = ws_archive_verify(mountpoint, manifest, &checked, &msg);
    if (k < 0) {
        fprintf(stderr, "layoutctl import: MISMATCH against the archive's manifest: %s\n",
                client_safe(0, msg ?: strerror(-k)));
        ec = LAYOUTCTL_EXIT_FAILURE;
        (void) import_undo(&o.args, id, true);
        goto out;
    }
    if (o.args.json) {
        json_object *res = json_object_new_object();
        json_object_object_add(res, "workspace", json_object_get(r.json));
        json_object_object_add(res, "entries", json_object_new_uint64(st.entries));
        json_object_object_add(res, "files", json_object_new_uint64(st.files));
        json_object_object_add(res, "bytes", json_object_new_uint64(st.bytes));
        json_object_object_add(res, "verified", json_object_new_uint64(checked));
        printf("%s\n", json_object_to_json_string_ext(res, JSON_C_TO_STRING_PLAIN));
        json_object_put(res);
    } else
        printf("Imported workspace %s%s%s: %" PRIu64 " entries, %" PRIu64 " files, %" PRIu64
               " bytes; all %" PRIu64 " verified against the manifest\n",
               C_BOLD, client_safe(0, id), C_RESET, st.entries, st.files, st.bytes, checked);
    ec = LAYOUTCTL_EXIT_OK;
out:
    reply_done(&r);
    json_object_put(meta);
    json_object_put(manifest);
    json_object_put(body);
    return ec;
}
