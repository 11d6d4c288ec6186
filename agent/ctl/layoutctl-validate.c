/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layoutctl validate [--show] [--json] FILE...
 * Checks layouts with the same library the agent uses, so "validate says
 * yes" means "the agent will load it".
 */
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <sys/stat.h>

#include "host-check.h"
#include "layout.h"
#include "layoutctl.h"

static void validate_usage(FILE *f) {
    fprintf(f,
            "Usage: layoutctl validate [--show] [--json] FILE|DIR...\n"
            "\n"
            "Checks each layout file (for a directory such as /etc/layoutd/layouts.d: the one\n"
            "*.yaml in it; more than one is an error). Errors go to stderr as FILE:LINE:COLUMN: error: MESSAGE,\n"
            "every error of every file, not only the first.\n"
            "\n"
            "  --show   print the normalised effective layout (defaults filled in) as YAML\n"
            "  --json   print [{file, valid, errors: [{line, column, message}], layout}] on stdout\n"
            "  -h, --help\n"
            "\n"
            "Exit status: 0 every file is valid, 1 a file is invalid or unreadable, 2 usage error.\n");
}

static int add_file_json(json_object *array, const char *file, const Layout *l, const LayoutErrors *e) {
    json_object *o = json_object_new_object(), *errs = json_object_new_array(), *lj = NULL;
    if (!o || !errs)
        goto oom;
    json_object_object_add(o, "file", json_object_new_string(file));
    json_object_object_add(o, "valid", json_object_new_boolean(l != NULL));
    for (size_t i = 0; i < e->n; i++) {
        json_object *x = json_object_new_object();
        if (!x)
            goto oom;
        json_object_object_add(x, "line", json_object_new_int((int) e->items[i].line));
        json_object_object_add(x, "column", json_object_new_int((int) e->items[i].column));
        json_object_object_add(x, "message", json_object_new_string(e->items[i].message));
        json_object_array_add(errs, x);
    }
    json_object_object_add(o, "errors", TAKE_PTR(errs));
    if (l && layout_to_json(l, &lj) < 0)
        goto oom;
    json_object_object_add(o, "layout", lj);
    json_object_array_add(array, o);
    return 0;
oom:
    json_object_put(o);
    json_object_put(errs);
    return -ENOMEM;
}

int layoutctl_validate(int argc, char **argv, const LayoutctlGlobals *g) {
    enum { OPT_JSON = 0x100 };
    static const struct option options[] = {
        { "show", no_argument, NULL, 's' },
        { "json", no_argument, NULL, OPT_JSON },
        { "help", no_argument, NULL, 'h' },
        {},
    };
    bool show = false, json = g->json;
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", options, NULL)) >= 0)
        switch (c) {
        case 's':
            show = true;
            break;
        case OPT_JSON:
            json = true;
            break;
        case 'h':
            validate_usage(stdout);
            return LAYOUTCTL_EXIT_OK;
        default:
            return layoutctl_option_error("validate", argv, options, c);
        }
    if (optind >= argc)
        return layoutctl_usage_error("validate", "no layout file given");

    json_object *array = json ? json_object_new_array() : NULL;
    if (json && !array) {
        fprintf(stderr, "layoutctl validate: out of memory\n");
        return LAYOUTCTL_EXIT_FAILURE;
    }
    int ret = LAYOUTCTL_EXIT_OK;
    for (int i = optind; i < argc; i++) {
        const char *file = argv[i];
        LayoutErrors errors = {};
        _cleanup_(layout_freep) Layout *l = NULL;
        _cleanup_free_ char *found = NULL;
        struct stat st;
        int r = 0;
        /* A layout directory (layouts.d): check what the agent would load. */
        if (stat(file, &st) == 0 && S_ISDIR(st.st_mode)) {
            r = layout_find_in_dir(file, &found, &errors);
            if (r >= 0)
                file = found;
        }
        if (r >= 0)
            r = layout_parse_file(file, &l, &errors);
        /* What the agent checks on this host when it loads the layout. */
        if (r >= 0 && (r = engine_check_host(l, file, &errors)) > 0) {
            l = layout_free(l);
            r = -EINVAL;
        }
        if (r == -ENOMEM) {
            fprintf(stderr, "layoutctl validate: out of memory\n");
            layout_errors_clear(&errors);
            json_object_put(array);
            return LAYOUTCTL_EXIT_FAILURE;
        }
        if (r < 0)
            ret = LAYOUTCTL_EXIT_FAILURE;

        if (!json)
            for (size_t k = 0; k < errors.n; k++) {
                const LayoutError *e = &errors.items[k];
                if (e->line > 0)
                    fprintf(stderr, "%s:%u:%u: error: %s\n", e->file, e->line, e->column, e->message);
                else
                    fprintf(stderr, "%s: error: %s\n", e->file, e->message);
            }
        if (json) {
            if (add_file_json(array, file, l, &errors) < 0) {
                fprintf(stderr, "layoutctl validate: out of memory\n");
                layout_errors_clear(&errors);
                json_object_put(array);
                return LAYOUTCTL_EXIT_FAILURE;
            }
        } else if (l && show) {
            _cleanup_free_ char *y = NULL;
            if (layout_to_yaml_string(l, &y) < 0) {
                fprintf(stderr, "layoutctl validate: out of memory\n");
                ret = LAYOUTCTL_EXIT_FAILURE;
            } else
                printf("# %s\n%s", file, y);
        } else if (l)
            printf("%s: valid\n", file);
        else
            fprintf(stderr, "%s: invalid (%zu error%s)\n", file, errors.n, errors.n == 1 ? "" : "s");
        layout_errors_clear(&errors);
    }
    if (json) {
        puts(json_object_to_json_string_ext(array, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(array);
    }
    return ret;
}
