#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The names operators and scripts use, checked between the code and the
docs, both ways: every one the code has is documented, and every one the
docs name exists.

  routes       api_routes[] in src/api/api-route.c      docs/api.md "Routes"
  events       the type argument of every agent_event() and api_event_emit()
                                                         docs/api.md "GET /v1/events"
  states       supervisor_state_table (src/supervise/fsm.c) and the agent's
               own ("unsupervised", "removed")           docs/api.md daemon.state
  error codes  api_codes[] in src/api/api-code.c (status and code), each
               used by some failure                      docs/api.md "Errors"
  metrics      every "layoutd_*" family the agent and the API write
                                                         docs/api.md "GET /metrics";
               and every metric the fleet rules, the dashboard, operations.md
               and the man pages name must exist
  layout keys  the key tables of src/layout/ (pool_keys, workspace_keys, ...),
               layout_placeholders                       docs/layout.md tables

Reads the sources as text: a table or call renamed without this script
learning it fails loudly (a name class that finds too few names).
Usage: docs-names.py SOURCE_DIR
"""
import glob
import os
import re
import sys

src = sys.argv[1]
problems = []


def read(*parts):
    with open(os.path.join(src, *parts), encoding="utf-8") as f:
        return f.read()


def c_sources(*dirs):
    out = {}
    for d in dirs:
        for p in sorted(glob.glob(os.path.join(src, d, "**", "*.c"), recursive=True)):
            with open(p, encoding="utf-8") as f:
                out[os.path.relpath(p, src)] = f.read()
    return out


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def literals(text):
    return re.findall(r'"((?:[^"\\]|\\.)*)"', text)


def call_args(text, name):
    """The argument lists of every call of name(...), split at top-level commas."""
    for m in re.finditer(r"\b%s\s*\(" % re.escape(name), text):
        i, depth, args, cur, in_str = m.end(), 1, [], "", False
        while i < len(text) and depth:
            c = text[i]
            if in_str:
                cur += c
                if c == "\\":
                    cur += text[i + 1]
                    i += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
                cur += c
            elif c in "([{":
                depth += 1
                cur += c
            elif c in ")]}":
                depth -= 1
                if depth:
                    cur += c
            elif c == "," and depth == 1:
                args.append(cur.strip())
                cur = ""
            else:
                cur += c
            i += 1
        args.append(cur.strip())
        yield args


def section(md, heading_re):
    """The text of the markdown section whose heading matches, up to the
    next heading of the same or a higher level."""
    lines = md.split("\n")
    out, level = None, None
    for line in lines:
        m = re.match(r"^(#+)\s+(.*)$", line)
        if m:
            if out is not None and len(m.group(1)) <= level:
                break
            if out is None and re.search(heading_re, m.group(2)):
                out, level = [], len(m.group(1))
                continue
        if out is not None:
            out.append(line)
    if out is None:
        problems.append("docs: no section matching %r" % heading_re)
        return ""
    return "\n".join(out)


def table_rows(text):
    """The body rows of every table (not the header: the row above |---|)."""
    lines = text.split("\n")
    return [l for i, l in enumerate(lines)
            if l.startswith("| ") and not (i + 1 < len(lines) and re.match(r"^\|\s*-", lines[i + 1]))
            and not re.match(r"^\|\s*-", l)]


def first_cells(text):
    """The backticked names in the first cell of each table row."""
    names = []
    for line in table_rows(text):
        names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def compare(what, code, docs, where, at_least):
    if len(code) < at_least:
        problems.append("%s: found only %d in the code (expected at least %d): did a table or call move?"
                        % (what, len(code), at_least))
    for n in sorted(code - docs):
        problems.append("%s: '%s' is in the code but not in %s" % (what, n, where))
    for n in sorted(docs - code):
        problems.append("%s: '%s' is in %s but not in the code" % (what, n, where))
    return len(code)


api_md = read("docs", "api.md")
layout_md = read("docs", "layout.md")
counts = {}

# ---- routes ---------------------------------------------------------------
route_c = strip_comments(read("src", "api", "api-route.c"))
table = route_c[route_c.index("api_routes[_API_ROUTE_MAX]"):]
table = table[:table.index("};")]
code_routes = {"%s %s" % m for m in re.findall(r'\{\s*API_ROUTE_\w+,\s*"([A-Z]+)",\s*"([^"]+)"', table)}
docs_routes = set()
for line in section(api_md, r"^Routes$").split("\n"):
    m = re.match(r"^\| (GET|POST|DELETE|PUT|PATCH) \| `([^`]+)`", line)
    if m:
        docs_routes.add("%s %s" % (m.group(1), re.sub(r"\[.*$", "", m.group(2))))
counts["routes"] = compare("route", code_routes, docs_routes, "docs/api.md's route table", 15)

# ---- events ---------------------------------------------------------------
agent = {k: strip_comments(v) for k, v in c_sources("agent", "src").items()}
code_events = set()
for path, text in agent.items():
    for fn in ("agent_event", "api_event_emit"):
        for args in call_args(text, fn):
            if len(args) >= 2 and not re.match(r"^(const\s+)?char\s*\*", args[1]):
                code_events.update(literals(args[1]))
events_md = section(api_md, r"^GET /v1/events")
docs_events = set()
for name in first_cells(events_md):
    docs_events.update(n.strip() for n in name.split("/"))
counts["events"] = compare("event", code_events, docs_events, "docs/api.md's event table", 12)

# ---- workspace (daemon) states ----------------------------------------------
fsm = strip_comments(read("src", "supervise", "fsm.c"))
t = fsm[fsm.index("supervisor_state_table"):]
code_states = set(re.findall(r'\[SUPERVISOR_\w+\]\s*=\s*"([a-z-]+)"', t[:t.index("};")]))
for text in agent.values():
    for m in re.finditer(r'"state",\s*JSTR\(([^;]*?)\)\);', text):
        code_states.update(literals(m.group(1)))
m = re.search(r"`daemon\.state`:\s*(.*?);\s*`last_exit`", section(api_md, r"^GET /v1/workspaces"), re.S)
docs_states = set(re.findall(r"`([a-z-]+)`", m.group(1))) if m else set()
if not m:
    problems.append("docs/api.md: no \"`daemon.state`: ...\" list under GET /v1/workspaces")
counts["states"] = compare("workspace state", code_states, docs_states, "docs/api.md's daemon.state list", 8)

# ---- error codes ------------------------------------------------------------
# One table holds them all (api_codes[] in src/api/api-code.c), and it is
# the code's side. Compared as "STATUS code", since a client reads both.
code_c = strip_comments(read("src", "api", "api-code.c"))
t = code_c[code_c.index("api_codes["):]
rows = re.findall(r'\[(API_CODE_\w+)\]\s*=\s*\{\s*(\d+),\s*"([a-z_]+)"', t[:t.index("};")])
code_errors = {"%s %s" % (status, code) for _, status, code in rows}
docs_errors = set()
for line in table_rows(section(api_md, r"^Errors$")):
    cells = line.split("|")
    if len(cells) > 3:
        docs_errors.update("%s %s" % (cells[1].strip(), c) for c in re.findall(r"`([a-z_]+)`", cells[2]))
counts["error codes"] = compare("error code", code_errors, docs_errors, "docs/api.md's error table", 25)
# A row nothing answers with would be documented for nothing.
for name, status, code in rows:
    if not any(re.search(r"\b%s\b" % name, text) for path, text in agent.items() if path != "src/api/api-code.c"):
        problems.append("error code: '%s %s' (%s) is in the table but no failure uses it" % (status, code, name))

# ---- metrics ----------------------------------------------------------------
code_metrics = set()
for text in agent.values():
    code_metrics.update(re.findall(r'"(layoutd_[a-z0-9_]+)"', text))
metrics_md = section(api_md, r"^GET /metrics$")
docs_metrics = set(re.findall(r"\blayoutd_[a-z0-9_]+\b", metrics_md))
counts["metrics"] = compare("metric", code_metrics, docs_metrics, "docs/api.md's GET /metrics", 60)
# Whatever else names a metric (alerts, the dashboard, the guides, the man
# pages) names one that exists: a histogram's _bucket/_sum/_count, or a
# prefix ending in '_' that some family has ("layoutd_gc_*").
users = ["docs/operations.md", "docs/fleet.md", "README.md"] + \
        [os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "fleet", "*"))] + \
        [os.path.relpath(p, src) for p in glob.glob(os.path.join(src, "docs", "man", "*.scd"))]
# Names in those files that are not metrics: an Ansible variable, Nomad
# client meta attributes.
not_metrics = {"layoutd_layout", "layoutd_accepting", "layoutd_workspaces_available", "layoutd_agent"}
for u in users:
    for n in set(re.findall(r"\blayoutd_[a-z][a-z0-9_]*", read(u))):
        base = re.sub(r"_(bucket|sum|count)$", "", n)
        if n in not_metrics or base in code_metrics or (n.endswith("_") and any(c.startswith(n) for c in code_metrics)):
            continue
        problems.append("metric: %s names '%s', which no code writes" % (u, n))

# ---- layout keys ------------------------------------------------------------
parse = strip_comments("\n".join(read("src", "layout", f) for f in sorted(os.listdir(os.path.join(src, "src", "layout")))
                                 if f.endswith(".c")))
arrays = {}
func = None
for line in parse.split("\n"):
    m = re.match(r"^(?:static\s+)?\w[\w\s\*]*\b(\w+)\s*\([^;]*$", line)
    if m and not line.startswith(" "):
        func = m.group(1)
for m in re.finditer(r"(?:static\s+)?const\s+char\s*\*\s*const\s+(\w+)\[\w*\]\s*=\s*\{(.*?)\};", parse, re.S):
    name = m.group(1)
    if name == "keys":
        # a function's own table: name it after the function it is in
        before = parse[:m.start()]
        f = re.findall(r"\n(?:static\s+)?[\w\s\*]+?\b(\w+)\s*\([^;{]*\)\s*\{", before)
        name = "%s:keys" % (f[-1] if f else "?")
    arrays[name] = [x for x in literals(m.group(2))]
qualify = [  # (table, layout.md section, prefix of its keys there); a table may serve several
    ("parse_top:keys", "top", ""),
    ("pool_keys", "pools", ""),
    ("writeback_keys", "pools", "writeback."),
    ("capacity_keys", "pools", "capacity."),
    ("growth_keys", "pools", "growth."),
    ("gc_keys", "pools", "gc."),
    ("vdo_keys", "vdo", ""),
    ("workspace_keys", "workspace", ""),
    ("backoff_keys", "workspace", "backoff."),
    ("crash_keys", "workspace", "crash_loop."),
    ("resources_keys", "workspace", "resources."),
    ("parse_api:keys", "api", ""),
    ("layout_placeholders", "placeholders", ""),
]
sections = {
    "top": r"^Top level$",
    "pools": r"^Pools: ",
    "vdo": r"^`vdo:`",
    "workspace": r"^`workspace`$",
    "placeholders": r"^`command` placeholders$",
    "api": r"^`api`$",
}
code_keys = {s: set() for s in sections}
for table_name, sec, prefix in qualify:
    if table_name not in arrays:
        problems.append("layout key: table %s not found in src/layout (renamed?)" % table_name)
        continue
    for k in arrays[table_name]:
        code_keys[sec].add(prefix + (k if sec != "placeholders" else "{%s}" % k))
n_keys = 0
for sec, heading in sections.items():
    text = section(layout_md, heading)
    if sec in ("workspace", "pools"):  # their subsections are other tables
        text = text.split("\n### ")[0]
    docs_keys = set(first_cells(text))
    code = code_keys[sec]
    # A parent key is documented by its own row or by rows of its sub-keys.
    covered = {k for k in code if k in docs_keys or any(d.startswith(k + ".") for d in docs_keys)}
    parents = {d.split(".")[0] for d in docs_keys if "." in d}
    n_keys += compare("layout key (%s)" % sec, code, docs_keys | (code & parents) | (covered - docs_keys),
                      "docs/layout.md, section %s" % sec, 1)
counts["layout keys"] = n_keys

if problems:
    for p in problems:
        print("FAIL: " + p)
    sys.exit(1)
print("OK: " + ", ".join("%d %s" % (v, k) for k, v in counts.items()) + ", both ways")
