#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shape of the agent's answers, with what varies between runs masked.

    api-shape.py SOCKET WORK   prints it (test-agent-api-shape.sh)

For each request below: the request, the HTTP status, and the body. A JSON
body is printed with its keys in the agent's own order (the order is part
of the answer); /metrics line by line. Masked, so that two runs on any
machine print the same: every number (a value, or a digit run inside a
string: sizes, times, pids, device numbers), UUIDs and boot ids, and the
test's work directory. Kept: every key, every string's words, every code,
true/false/null, the number of elements of every array, the HTTP status.
What depends on the host rather than on layoutd is masked whole, JSON
keys and /metrics families alike: whether it has a unified cgroup
hierarchy to put daemons in (the cgroup objects, and the per-workspace
families read from cgroups), and the kernel's writeback knobs (max_bytes
and strict_limit exist from Linux 6.2). The fixture must hold on any
machine README command 2 runs on.
"""
import json
import re
import socket
import sys

SOCK, WORK = sys.argv[1], sys.argv[2]

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
HEX = re.compile(r"\b[0-9a-f]{32,64}\b")
DIGITS = re.compile(r"[0-9]+")
HOST_KEYS = {"cgroups", "cgroup", "writeback"}
# /metrics families: a family whose HELP names one of these words, or
# whose name has one, is the host's.
HOST_WORDS = ("cgroup", "writeback")


def mask_str(s):
    s = s.replace(WORK, "<work>")
    s = UUID.sub("<uuid>", s)
    s = HEX.sub("<hex>", s)
    return DIGITS.sub("#", s)


def mask(v):
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return "<n>"
    if isinstance(v, str):
        return mask_str(v)
    if isinstance(v, list):
        return [mask(x) for x in v]
    return {mask_str(k): "<host>" if k in HOST_KEYS else mask(x) for k, x in v.items()}


def request(method, path, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else b"")
    head = f"{method} {path} HTTP/1.1\r\nHost: layoutd\r\nConnection: close\r\n"
    if data:
        head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect(SOCK)
    s.sendall(head.encode() + b"\r\n" + data)
    out = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            break  # a refused body: the agent answers, then closes
        if not chunk:
            break
        out += chunk
    s.close()
    header, _, payload = out.partition(b"\r\n\r\n")
    lines = header.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    if headers.get("transfer-encoding") == "chunked":
        body_bytes, rest = b"", payload
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            n = int(size_line.split(b";")[0], 16)
            if n == 0:
                break
            body_bytes += rest[:n]
            rest = rest[n + 2:]
        payload = body_bytes
    return status, headers, payload


def show(method, path, body=None, raw=None):
    status, headers, payload = request(method, path, body, raw)
    label = path if raw is None or len(raw) < 200 else f"{path} (a {len(raw)}-byte body)"
    print(f"### {method} {label} -> {status} {headers.get('content-type', '')}")
    text = payload.decode(errors="replace")
    if headers.get("content-type", "").startswith("application/json"):
        doc = json.loads(text, object_pairs_hook=dict)
        print(json.dumps(mask(doc), indent=1))
    else:
        host_families = set()
        for line in text.splitlines():
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                family = line.split()[2]
                if any(w in line for w in HOST_WORDS):
                    host_families.add(family)
            else:
                family = re.split(r"[{ ]", line, 1)[0]
            if any(family == f or family.startswith(f + "_") for f in host_families) or \
                    any(w in family for w in HOST_WORDS):
                continue  # the host's (HOST_WORDS)
            if line.startswith("#"):
                print(mask_str(line))
            else:
                # name{labels} value: the value masked, the labels' digits too
                print(mask_str(line.rsplit(" ", 1)[0]) + " <n>")


show("GET", "/v1/status")
show("GET", "/v1/health")
show("GET", "/v1/volumes")
show("GET", "/v1/volumes/state-0")
show("GET", "/v1/workspaces")
show("GET", "/v1/workspaces/shape-1")
show("GET", "/v1/capacity")
show("GET", "/metrics")
# Errors: one of each kind a client meets.
show("GET", "/v1/workspaces/no-such")
show("GET", "/v1/volumes/state-9")
show("GET", "/v1/nothing")
show("DELETE", "/v1/status")
show("POST", "/v1/workspaces", raw=b'{"id":')
show("POST", "/v1/workspaces", {"id": "shape-1"})
show("POST", "/v1/workspaces", {"id": "state-1"})
show("POST", "/v1/workspaces", {"id": "Bad Id"})
show("POST", "/v1/workspaces", {"id": "shape-9", "labels": {"k": 7}})
show("PUT", "/v1/workspaces/no-such/quota", {"quota": "1G"})
show("POST", "/v1/workspaces/no-such/restart")
show("DELETE", "/v1/workspaces/no-such")
show("GET", "/v1/operations/op-no-such")
