/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once
/*
 * Lists for a terminal, from a JSON array and a table of columns, printed
 * by libsmartcols as lsblk and findmnt print theirs: -o picks and orders
 * the columns (+COL adds to the default ones), -n drops the header, -r is
 * raw (one space between cells, blanks escaped), -P is KEY="value" pairs,
 * -J is JSON of the chosen columns, -b prints exact sizes, and long cells
 * are truncated to the terminal's width. A verb only declares its columns.
 * Every string is escaped on its way to the terminal (escape.h).
 */
#include <stdbool.h>
#include <stdio.h>

#include <json-c/json.h>

typedef enum ColumnKind {
    COLUMN_TEXT,         /* the string as is */
    COLUMN_COUNT,        /* an unsigned number */
    COLUMN_SIZE,         /* bytes: "1.5G" (or exact with -b) */
    COLUMN_SECONDS,      /* a duration in seconds: "4.2ms" (or seconds with -b) */
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
    bool trunc;          /* may be truncated to fit the terminal */
    const char *help;    /* one line for --help */
} Column;

typedef struct TableOptions {
    const char *columns; /* -o: "ID,VOLUME,DAEMON", "+MOUNTPOINT"; NULL: the default ones */
    const char *name;    /* the JSON's top-level key ("volumes") */
    bool noheadings;     /* -n */
    bool raw;            /* -r */
    bool pairs;          /* -P */
    bool json;           /* -J */
    bool bytes;          /* -b */
} TableOptions;

/* Checks -o against the columns. Returns -EINVAL (the line printed on
 * stderr names the unknown column, and the one that was meant), 0. */
int table_check_columns(const char *verb, const Column *cols, size_t n, const char *spec);

/* Prints rows (a JSON array of objects) on stdout. Returns -ENOMEM, -EIO, 0. */
int table_print(const Column *cols, size_t n, json_object *rows, const TableOptions *o);

/* The "-o COLUMNS" help lines, every column listed. */
void table_print_help(const Column *cols, size_t n, FILE *f);
