/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What a CSI volume is in layoutd's terms (pure: no I/O, unit-tested in
 * tests/csi/test-csi-volume.c):
 *   - its workspace id, derived from volume_id: "csi-" and the first 32
 *     hex digits of sha256(volume_id). kubelet's ephemeral volume ids are
 *     "csi-" + 64 hex digits, longer than a workspace id may be (64), and
 *     a CO may use any characters; a hash fits every id, and it never
 *     lands on a workspace someone made by hand;
 *   - the workspace's create request: the tenant from the volume attribute
 *     `tenant`, else the pod's namespace (csi.storage.k8s.io/pod.namespace);
 *     the labels from the other attributes, the pod's name, namespace and
 *     uid, and CSI_LABEL_VOLUME_ID = volume_id, the mark that says the
 *     workspace is this volume's (the plugin removes no other);
 *   - the mount flags it honours.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#define CSI_WORKSPACE_ID_PREFIX "csi-"
#define CSI_WORKSPACE_ID_SIZE (sizeof(CSI_WORKSPACE_ID_PREFIX) - 1 + 32 + 1)
#define CSI_LABEL_VOLUME_ID "csi.layoutd.io/volume-id"
#define CSI_ATTR_TENANT "tenant"
#define CSI_POD_NAME "csi.storage.k8s.io/pod.name"
#define CSI_POD_NAMESPACE "csi.storage.k8s.io/pod.namespace"
#define CSI_POD_UID "csi.storage.k8s.io/pod.uid"
/* volume_id longer than this is refused: the CSI spec's general size
 * limit is 128 bytes, and a label value holds at most 255. */
#define CSI_VOLUME_ID_MAX 255

/* Writes the workspace id of volume_id into ret. Returns: -EINVAL (empty,
 * too long, or a control character), 0. */
int csi_volume_workspace_id(const char *volume_id, char ret[static CSI_WORKSPACE_ID_SIZE]);

/* One key and value of a volume context. */
typedef struct CsiAttribute {
    const char *key;
    const char *value;
} CsiAttribute;

/*
 * The body of POST /v1/workspaces for volume_id with the volume context
 * attrs[n]: {"id", "tenant" (when there is one), "labels"}.
 * Returns: -EINVAL with *ret_error (what is wrong, for the CO's user),
 * -ENOMEM, 0 with *ret.
 */
int csi_volume_create_body(const char *volume_id, const CsiAttribute *attrs, size_t n, json_object **ret,
                           char **ret_error);

/* Whether workspace (the API's JSON of one) is the one body would create:
 * the same id, volume mark, tenant and labels. On false, *ret_why (may be
 * NULL) says what differs. */
bool csi_volume_matches(json_object *workspace, json_object *body, char **ret_why);

/* Whether workspace carries the mark of volume_id. */
bool csi_volume_is_ours(json_object *workspace, const char *volume_id);

/*
 * The MS_* flags for the bind mount: MS_RDONLY when readonly, and the
 * CO's mount_flags among ro, nosuid, nodev, noexec, noatime (rw,
 * relatime, defaults are accepted and change nothing).
 * Returns: -EINVAL with *ret_bad (the first flag refused, strdup'ed), 0.
 */
int csi_volume_mount_flags(char *const *flags, size_t n, bool readonly, unsigned long *ret, char **ret_bad);
