/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Every error the API answers with, in one table (api-code.c): the HTTP
 * status, the stable machine-readable code and what it means. Clients
 * (layoutctl, the CSI driver, scripts) branch on the code string, so a
 * string never changes once it shipped; the table is what docs/api.md's
 * "Errors" section lists, and a unit test (tests/api/test-api-code.c)
 * keeps the two in step.
 *
 * Adding a code: one value here and one row in api_codes[], then a row in
 * docs/api.md. A code string belongs to exactly one status: a failure that
 * needs another status is another code.
 */

/* In the order of docs/api.md's table: by status, then as listed there. */
typedef enum ApiCode {
    API_CODE_BAD_REQUEST,
    API_CODE_INVALID_JSON,
    API_CODE_INVALID_LAYOUT,
    API_CODE_FORBIDDEN,
    API_CODE_NOT_FOUND,
    API_CODE_METHOD_NOT_ALLOWED,
    API_CODE_EXISTS,
    API_CODE_CONFLICT,
    API_CODE_REMOVED,
    API_CODE_BLOCKED,
    API_CODE_GC_UNSAFE,
    API_CODE_CHECK_UNSAFE,
    API_CODE_NO_GC,
    API_CODE_NO_POOL,
    API_CODE_PACKAGE_STORE,
    API_CODE_QUOTA_CHANGING,
    API_CODE_BODY_TOO_LARGE,
    API_CODE_INTERNAL,
    API_CODE_DAEMON_FAILED,
    API_CODE_CARVE_FAILED,
    API_CODE_SPAWN_FAILED,
    API_CODE_APPLY_FAILED,
    API_CODE_REMOVE_FAILED,
    API_CODE_GC_FAILED,
    API_CODE_CHECK_FAILED,
    API_CODE_RECORD_UNSAVED,
    API_CODE_NOT_SUPPORTED,
    API_CODE_NOT_READY,
    API_CODE_SHUTTING_DOWN,
    API_CODE_NOT_SUPERVISING,
    API_CODE_VOLUME_UNAVAILABLE,
    API_CODE_UNAVAILABLE,
    API_CODE_TIMEOUT,
    API_CODE_POOL_FULL,
    API_CODE_HOST_FULL,
    _API_CODE_MAX,
} ApiCode;

typedef struct ApiCodeSpec {
    unsigned status;     /* the HTTP status, 400..599 */
    const char *code;    /* "not_found", ...: what clients branch on */
    const char *meaning; /* one line: when the API answers with it */
} ApiCodeSpec;

/* The table, indexed by ApiCode. */
extern const ApiCodeSpec api_codes[_API_CODE_MAX];

/* The row of c. Never NULL: a value outside the enum (a bug) gets
 * API_CODE_INTERNAL's row, so an answer is still a well-formed 500. */
const ApiCodeSpec *api_code_spec(ApiCode c);
