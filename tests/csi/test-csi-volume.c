/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* agent/csi/csi-volume.c: volume ids, create requests, mount flags. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mount.h>

#include <cmocka.h>

#include "csi-volume.h"
#include "layout.h"
#include "macro.h"

static void test_workspace_id(void **state) {
    char a[CSI_WORKSPACE_ID_SIZE], b[CSI_WORKSPACE_ID_SIZE];
    /* kubelet's ephemeral id: "csi-" + 64 hex, longer than an id may be */
    const char *kubelet = "csi-9b1e2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9";
    assert_int_equal(csi_volume_workspace_id(kubelet, a), 0);
    assert_int_equal(strlen(a), 36);
    assert_true(layout_name_is_valid(a, LAYOUT_WORKSPACE_ID_MAX));
    assert_int_equal(strncmp(a, "csi-", 4), 0);
    /* deterministic, and different ids differ */
    assert_int_equal(csi_volume_workspace_id(kubelet, b), 0);
    assert_string_equal(a, b);
    assert_int_equal(csi_volume_workspace_id("Nomad Volume[0]", b), 0);
    assert_string_not_equal(a, b);
    assert_true(layout_name_is_valid(b, LAYOUT_WORKSPACE_ID_MAX));
    /* sha256("abc") = ba7816bf8f01cfea414140de5dae2223... */
    assert_int_equal(csi_volume_workspace_id("abc", a), 0);
    assert_string_equal(a, "csi-ba7816bf8f01cfea414140de5dae2223");

    assert_int_equal(csi_volume_workspace_id("", a), -EINVAL);
    assert_int_equal(csi_volume_workspace_id("a\nb", a), -EINVAL);
    char long_id[300];
    memset(long_id, 'x', sizeof long_id - 1);
    long_id[sizeof long_id - 1] = 0;
    assert_int_equal(csi_volume_workspace_id(long_id, a), -EINVAL);
}

static const char *label(json_object *body, const char *key) {
    json_object *labels, *v;
    if (!json_object_object_get_ex(body, "labels", &labels) || !json_object_object_get_ex(labels, key, &v))
        return NULL;
    return json_object_get_string(v);
}

static const char *field(json_object *body, const char *key) {
    json_object *v;
    return json_object_object_get_ex(body, key, &v) ? json_object_get_string(v) : NULL;
}

static void test_create_body(void **state) {
    const CsiAttribute attrs[] = {
        { CSI_POD_NAME, "agent-1" },
        { CSI_POD_NAMESPACE, "team-a" },
        { CSI_POD_UID, "5e1b7c1e-0000-4000-8000-000000000001" },
        { "csi.storage.k8s.io/ephemeral", "true" },
        { "csi.storage.k8s.io/serviceAccount.name", "default" },
        { "team", "red" },
    };
    json_object *body = NULL;
    char *err = NULL;
    assert_int_equal(csi_volume_create_body("vol-1", attrs, ELEMENTSOF(attrs), &body, &err), 0);
    char id[CSI_WORKSPACE_ID_SIZE];
    assert_int_equal(csi_volume_workspace_id("vol-1", id), 0);
    assert_string_equal(field(body, "id"), id);
    assert_string_equal(field(body, "tenant"), "team-a");
    assert_string_equal(label(body, CSI_LABEL_VOLUME_ID), "vol-1");
    assert_string_equal(label(body, CSI_POD_NAME), "agent-1");
    assert_string_equal(label(body, CSI_POD_UID), "5e1b7c1e-0000-4000-8000-000000000001");
    assert_string_equal(label(body, "team"), "red");
    assert_null(label(body, "csi.storage.k8s.io/ephemeral"));
    assert_null(label(body, "csi.storage.k8s.io/serviceAccount.name"));

    /* the workspace the API would answer matches; another tenant does not */
    assert_true(csi_volume_matches(body, body, NULL));
    json_object *other = NULL;
    const CsiAttribute attrs2[] = { { CSI_POD_NAMESPACE, "team-b" }, { "team", "red" } };
    assert_int_equal(csi_volume_create_body("vol-1", attrs2, ELEMENTSOF(attrs2), &other, &err), 0);
    char *why = NULL;
    assert_false(csi_volume_matches(other, body, &why));
    assert_non_null(why);
    free(why);
    json_object_put(other);
    /* a workspace without the mark is never this volume's */
    json_object *foreign = json_object_new_object();
    json_object_object_add(foreign, "id", json_object_new_string(id));
    assert_false(csi_volume_is_ours(foreign, "vol-1"));
    assert_false(csi_volume_matches(foreign, body, NULL));
    assert_true(csi_volume_is_ours(body, "vol-1"));
    assert_false(csi_volume_is_ours(body, "vol-2"));
    json_object_put(foreign);
    json_object_put(body);
}

static void test_tenant(void **state) {
    json_object *body = NULL;
    char *err = NULL;
    /* the attribute wins over the namespace */
    const CsiAttribute a[] = { { CSI_POD_NAMESPACE, "team-a" }, { CSI_ATTR_TENANT, "acme" } };
    assert_int_equal(csi_volume_create_body("v", a, ELEMENTSOF(a), &body, &err), 0);
    assert_string_equal(field(body, "tenant"), "acme");
    assert_null(label(body, CSI_ATTR_TENANT));
    json_object_put(body);
    /* no namespace (Nomad): no tenant */
    assert_int_equal(csi_volume_create_body("v", NULL, 0, &body, &err), 0);
    assert_null(field(body, "tenant"));
    json_object_put(body);
    /* a namespace that is no tenant name: refused, saying where it came from */
    const CsiAttribute b[] = { { CSI_POD_NAMESPACE, "a-namespace-name-longer-than-32-chars" } };
    assert_int_equal(csi_volume_create_body("v", b, ELEMENTSOF(b), &body, &err), -EINVAL);
    assert_non_null(strstr(err, "namespace"));
    free(err);
    err = NULL;
    const CsiAttribute c[] = { { CSI_ATTR_TENANT, "Acme" } };
    assert_int_equal(csi_volume_create_body("v", c, ELEMENTSOF(c), &body, &err), -EINVAL);
    assert_non_null(strstr(err, "attribute"));
    free(err);
    err = NULL;
    /* the plugin's own mark cannot be set from outside */
    const CsiAttribute d[] = { { CSI_LABEL_VOLUME_ID, "other" } };
    assert_int_equal(csi_volume_create_body("v", d, ELEMENTSOF(d), &body, &err), -EINVAL);
    free(err);
    err = NULL;
    assert_int_equal(csi_volume_create_body("", NULL, 0, &body, &err), -EINVAL);
    free(err);
}

static void test_mount_flags(void **state) {
    unsigned long f = 0;
    char *bad = NULL;
    assert_int_equal(csi_volume_mount_flags(NULL, 0, false, &f, &bad), 0);
    assert_int_equal(f, 0);
    assert_int_equal(csi_volume_mount_flags(NULL, 0, true, &f, &bad), 0);
    assert_int_equal(f, MS_RDONLY);
    char *flags[] = { "nosuid", "nodev", "noexec", "noatime", "rw" };
    assert_int_equal(csi_volume_mount_flags(flags, ELEMENTSOF(flags), false, &f, &bad), 0);
    assert_int_equal(f, MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME);
    char *ro[] = { "ro" };
    assert_int_equal(csi_volume_mount_flags(ro, 1, false, &f, &bad), 0);
    assert_int_equal(f, MS_RDONLY);
    char *refused[] = { "nosuid", "uid=1000" };
    assert_int_equal(csi_volume_mount_flags(refused, 2, false, &f, &bad), -EINVAL);
    assert_string_equal(bad, "uid=1000");
    free(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workspace_id),
        cmocka_unit_test(test_create_body),
        cmocka_unit_test(test_tenant),
        cmocka_unit_test(test_mount_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
