/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A call failed for an API request that did not get the answer it needed,
 * in the CSI spec's codes (the tables: csi-error.c). */
#include <string.h>

#include "csi-plugin.h"
#include "util.h"

void csi_fail_api(CsiCall *c, const CsiPlugin *p, int r, const CsiApiReply *reply, const char *what) {
    const char *sock = csi_api_socket(p->api);
    if (r == -ECONNREFUSED)
        csi_call_fail(c, GRPC_STATUS_UNAVAILABLE, "%s: layoutd is not running (nothing listens on %s)", what, sock);
    else if (r == -ENOENT)
        csi_call_fail(c, GRPC_STATUS_UNAVAILABLE, "%s: layoutd is not running (no socket at %s)", what, sock);
    else if (r == -ECANCELED)
        csi_call_fail(c, GRPC_STATUS_UNAVAILABLE, "%s: layoutd-csi is stopping", what);
    else if (r == -ETIMEDOUT)
        csi_call_fail(c, GRPC_STATUS_UNAVAILABLE, "%s: layoutd did not answer in time on %s", what, sock);
    else if (r < 0)
        csi_call_fail(c, csi_error_code_for_errno(r), "%s: %s", what, strerror(-r));
    else if (reply->status == 403)
        csi_call_fail(c, GRPC_STATUS_PERMISSION_DENIED,
                      "%s: layoutd refused the change (403): layoutd-csi must run as root or in the API "
                      "socket's group, on the read-write socket (not api.readonly_socket)", what);
    else {
        const char *code = csi_api_reply_error_code(reply), *msg = csi_api_reply_error_message(reply);
        csi_call_fail(c, csi_error_code_for_reply(reply->status, code), "%s: layoutd answered %ld %s: %s", what,
                      reply->status, code ?: "", msg ?: "(no message)");
    }
}
