/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A CSI volume in layoutd's terms (csi-volume.h). Pure. */

#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/mount.h>

#include "csi-api.h"
#include "csi-volume.h"
#include "layout.h"
#include "macro.h"

int csi_volume_workspace_id(const char *volume_id, char ret[static CSI_WORKSPACE_ID_SIZE]) {
    if (isempty(volume_id) || strlen(volume_id) > CSI_VOLUME_ID_MAX)
        return -EINVAL;
    for (const char *p = volume_id; *p; p++)
        if ((unsigned char) *p < 0x20 || *p == 0x7f)
            return -EINVAL;
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned len = 0;
    if (EVP_Digest(volume_id, strlen(volume_id), md, &len, EVP_sha256(), NULL) != 1 || len < 16)
        return -EIO;
    char *p = stpcpy(ret, CSI_WORKSPACE_ID_PREFIX);
    for (unsigned i = 0; i < 16; i++)
        p += sprintf(p, "%02x", md[i]);
    return 0;
}

static const CsiAttribute *find(const CsiAttribute *attrs, size_t n, const char *key) {
    for (size_t i = 0; i < n; i++)
        if (attrs[i].key && streq(attrs[i].key, key))
            return &attrs[i];
    return NULL;
}

_printf_(2, 3) static int fail(char **ret_error, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (ret_error && vasprintf(ret_error, fmt, ap) < 0)
        *ret_error = NULL;
    va_end(ap);
    return -EINVAL;
}

int csi_volume_create_body(const char *volume_id, const CsiAttribute *attrs, size_t n, json_object **ret,
                           char **ret_error) {
    char id[CSI_WORKSPACE_ID_SIZE];
    if (csi_volume_workspace_id(volume_id, id) < 0)
        return fail(ret_error, "volume_id must be 1 to 255 characters without control characters");

    /* The tenant: the attribute wins over the namespace. */
    const CsiAttribute *t = find(attrs, n, CSI_ATTR_TENANT);
    const char *origin = "the volume attribute 'tenant'";
    if (!t || isempty(t->value)) {
        t = find(attrs, n, CSI_POD_NAMESPACE);
        origin = "the pod's namespace";
    }
    const char *tenant = t && !isempty(t->value) ? t->value : NULL;
    if (tenant && !layout_name_is_valid(tenant, LAYOUT_NAME_MAX))
        return fail(ret_error,
                    "tenant '%s' (from %s) is not a layoutd tenant: [a-z0-9][a-z0-9-]*, at most 32 "
                    "characters; set the volume attribute 'tenant' to one",
                    tenant, origin);

    _cleanup_json_ json_object *body = json_object_new_object();
    json_object *labels = json_object_new_object();
    if (!body || !labels || json_object_object_add(body, "labels", labels) < 0) {
        json_object_put(labels);
        return -ENOMEM;
    }
    if (json_object_object_add(body, "id", json_object_new_string(id)) < 0 ||
        (tenant && json_object_object_add(body, "tenant", json_object_new_string(tenant)) < 0) ||
        json_object_object_add(labels, CSI_LABEL_VOLUME_ID, json_object_new_string(volume_id)) < 0)
        return -ENOMEM;

    for (size_t i = 0; i < n; i++) {
        const char *k = attrs[i].key, *v = attrs[i].value ?: "";
        if (!k)
            continue;
        if (streq(k, CSI_ATTR_TENANT))
            continue;
        if (streq(k, CSI_LABEL_VOLUME_ID))
            return fail(ret_error, "the volume attribute '%s' is the plugin's own label", k);
        /* Of kubelet's own keys only the pod's identity is a label; the
         * rest (ephemeral, serviceAccount.name, tokens) is not for it. */
        if (strncmp(k, "csi.storage.k8s.io/", strlen("csi.storage.k8s.io/")) == 0 &&
            !STR_IN_SET(k, CSI_POD_NAME, CSI_POD_NAMESPACE, CSI_POD_UID))
            continue;
        if (json_object_object_add(labels, k, json_object_new_string(v)) < 0)
            return -ENOMEM;
    }
    *ret = TAKE_PTR(body);
    return 0;
}

static bool json_str_eq(json_object *a, json_object *b) {
    bool an = !a || json_object_is_type(a, json_type_null), bn = !b || json_object_is_type(b, json_type_null);
    if (an || bn)
        return an && bn;
    return json_object_is_type(a, json_type_string) && json_object_is_type(b, json_type_string) &&
           streq(json_object_get_string(a), json_object_get_string(b));
}

bool csi_volume_is_ours(json_object *workspace, const char *volume_id) {
    json_object *labels, *mark;
    return volume_id && json_object_object_get_ex(workspace, "labels", &labels) &&
           json_object_object_get_ex(labels, CSI_LABEL_VOLUME_ID, &mark) &&
           json_object_is_type(mark, json_type_string) && streq(json_object_get_string(mark), volume_id);
}

_printf_(2, 3) static bool why(char **ret_why, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    if (ret_why && vasprintf(ret_why, fmt, ap) < 0)
        *ret_why = NULL;
    va_end(ap);
    return false;
}

bool csi_volume_matches(json_object *workspace, json_object *body, char **ret_why) {
    json_object *wid = NULL, *bid = NULL, *wt = NULL, *bt = NULL, *wl = NULL, *bl = NULL, *mark = NULL;
    (void) json_object_object_get_ex(workspace, "id", &wid);
    (void) json_object_object_get_ex(body, "id", &bid);
    if (!json_str_eq(wid, bid))
        return why(ret_why, "another workspace id (%s)", wid ? json_object_get_string(wid) : "none");
    (void) json_object_object_get_ex(body, "labels", &bl);
    (void) json_object_object_get_ex(bl, CSI_LABEL_VOLUME_ID, &mark);
    if (!csi_volume_is_ours(workspace, mark ? json_object_get_string(mark) : NULL))
        return why(ret_why, "workspace %s was not made for this volume (no matching " CSI_LABEL_VOLUME_ID
                   " label)", bid ? json_object_get_string(bid) : "?");
    (void) json_object_object_get_ex(workspace, "tenant", &wt);
    (void) json_object_object_get_ex(body, "tenant", &bt);
    if (!json_str_eq(wt, bt))
        return why(ret_why, "another tenant (%s)", wt && !json_object_is_type(wt, json_type_null)
                                                          ? json_object_get_string(wt) : "none");
    (void) json_object_object_get_ex(workspace, "labels", &wl);
    if (json_object_object_length(wl) != json_object_object_length(bl))
        return why(ret_why, "other labels (%s)", json_object_to_json_string_ext(wl, JSON_C_TO_STRING_PLAIN));
    json_object_object_foreach(bl, k, v) {
        json_object *o = NULL;
        if (!json_object_object_get_ex(wl, k, &o) || !json_str_eq(o, v))
            return why(ret_why, "other labels (%s)", json_object_to_json_string_ext(wl, JSON_C_TO_STRING_PLAIN));
    }
    return true;
}

int csi_volume_mount_flags(char *const *flags, size_t n, bool readonly, unsigned long *ret, char **ret_bad) {
    static const struct {
        const char *name;
        unsigned long flag;
    } table[] = {
        { "ro", MS_RDONLY },     { "nosuid", MS_NOSUID }, { "nodev", MS_NODEV }, { "noexec", MS_NOEXEC },
        { "noatime", MS_NOATIME }, { "rw", 0 },         { "relatime", 0 },     { "defaults", 0 },
    };
    unsigned long f = readonly ? MS_RDONLY : 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < ELEMENTSOF(table) && !streq(table[k].name, flags[i] ?: ""))
            k++;
        if (k == ELEMENTSOF(table)) {
            if (ret_bad)
                *ret_bad = strdup(flags[i] ?: "");
            return -EINVAL;
        }
        f |= table[k].flag;
    }
    *ret = f;
    return 0;
}
