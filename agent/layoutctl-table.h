/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Lists for a terminal, from a JSON array and a table of columns (the way
 * lsblk and incus list do it): -o picks and orders the columns,
 * --no-legend drops the header, --bytes prints exact sizes. A verb only
 * declares its columns.
 */
#include <stdbool.h>

#include <json-c/json.h>

typedef enum ColumnKind {
    COLUMN_TEXT,         /* the string as is */
    COLUMN_COUNT,        /* an unsigned number */
    COLUMN_SIZE,         /* bytes: "1.5G" (or exact with --bytes) */
    COLUMN_YES_NO,       /* a boolean: yes / NO (NO in red) */
    COLUMN_LABELS,       /* an object of strings: k=v,k=v */
    COLUMN_LIST,         /* an array of strings: a,b,c */
    COLUMN_HEALTH,       /* a state word, coloured by client_health_color */
} ColumnKind;

typedef struct Column {
    const char *name;    /* header and -o name: "VOLUME" (matched case-insensitively) */
    const char *key;     /* JSON path in a row: "daemon.state" */
    ColumnKind kind;
    bool hidden;         /* only shown when -o names it */
    const char *help;    /* one line for --help */
} Column;

typedef struct TableOptions {
    const char *columns; /* -o: "ID,VOLUME,DAEMON"; NULL: the default ones */
    bool no_legend;
    bool bytes;
} TableOptions;

/* Checks -o against the columns. Returns -EINVAL (the message printed on
 * stderr names the unknown column and the known ones), 0. */
int table_check_columns(const char *verb, const Column *cols, size_t n, const char *spec);

/* Prints rows (a JSON array of objects) with the columns. */
void table_print_json(const Column *cols, size_t n, json_object *rows, const TableOptions *o);

/* The "  -o COLUMNS ..." help lines listing every column. */
void table_print_help(const Column *cols, size_t n, FILE *f);
