/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * MESSAGE_IDs of the agent's journal entries that operators alert on
 * (`journalctl MESSAGE_ID=...`, docs/operations.md "Logs"). Fixed for
 * good: a changed id breaks someone's alert.
 */

/* A workspace's daemon hit its crash-loop limit (state failed). */
#define LAYOUTD_MESSAGE_CRASH_LOOP "afbc69a07e05420484bd9e6d3b7cea50"
/* A volume's health turned degraded or failed. */
#define LAYOUTD_MESSAGE_VOLUME_DEGRADED "0b62af66f452441d8d35e4476082f4d2"
/* A volume past growth.threshold cannot grow. */
#define LAYOUTD_MESSAGE_GROWTH_REFUSED "9980b2d54eab4c93a01054325d3bb35d"
/* A reload was refused; the previous layout keeps running. */
#define LAYOUTD_MESSAGE_RELOAD_REFUSED "fe7ea5016b2e46ab901613e57f5d2835"
/* A volume grew online. */
#define LAYOUTD_MESSAGE_VOLUME_GROWN "3305b7022543406fba9daa7870db75d5"
/* The state record could not be written (changes in memory only). */
#define LAYOUTD_MESSAGE_RECORD_UNSAVED "e7f8afe30b8d320f0c3a3ed30658c1fa"
/* The content pool's sweep failed. */
#define LAYOUTD_MESSAGE_GC_FAILED "f01d8b6106b2463181009c7baa36a2fd"
/* Files reference content objects the pool does not have (they read as
 * I/O errors): found by a check, or reported by a workspace's daemon. */
#define LAYOUTD_MESSAGE_OBJECTS_MISSING "f1916b0f49c9477f8df66069c211b4b2"
