#!/usr/bin/env bash
# docs/fleet.md quotes the files in docs/fleet/ and must quote them exactly
# (a fix to one and not the other fails here; the dashboard and the rules'
# tests are too long to quote and are named instead); the systemd units
# pass `systemd-analyze verify` without a diagnostic; the scripts parse;
# the Kubernetes manifests are valid YAML with the kinds the page
# describes; the alert rules pass `promtool check rules` and their tests
# `promtool test rules`; the dashboard is Grafana JSON; and every metric
# the rules and the dashboard use is one the agent exports. Needs no root.
TEST_NAME=docs-fleet
. "$LAYOUTD_TESTS/lib/common.sh"

DOCS=$LAYOUTD_SOURCE_DIR/docs
PY=/usr/bin/python3
errors=0
bad() { log "FAIL: $*"; errors=$((errors + 1)); }

shopt -s nullglob
files=("$DOCS"/fleet/*)
[ ${#files[@]} -ge 5 ] || fail "expected the fleet files in $DOCS/fleet, found ${#files[@]}"

# 1. Quoted verbatim: each file is the body of one fenced block.
"$PY" - "$DOCS/fleet.md" "${files[@]}" <<'PYEOF' || errors=$((errors + 1))
import re, sys
page = open(sys.argv[1]).read()
blocks = re.findall(r"^```[a-z]*\n(.*?)^```$", page, re.S | re.M)
ok = True
for f in sys.argv[2:]:
    if f.endswith(".json") or f.endswith(".test.yaml"):
        if f.rsplit("/", 1)[1] not in page:
            print(f"[docs-fleet] FAIL: {f} is not named in fleet.md", file=sys.stderr)
            ok = False
        continue
    if open(f).read() not in blocks:
        print(f"[docs-fleet] FAIL: {f} is not quoted verbatim in fleet.md", file=sys.stderr)
        ok = False
sys.exit(0 if ok else 1)
PYEOF

# 2. The units.
if command -v systemd-analyze >/dev/null 2>&1; then
    units=("$DOCS"/fleet/*.service "$DOCS"/fleet/*.timer)
    cp "${units[@]}" "$WORK/"
    out=$(cd "$WORK" && SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "${units[@]##*/}" 2>&1) ||
        bad "systemd-analyze verify failed: $out"
    [ -z "$out" ] || bad "systemd-analyze verify printed: $out"
else
    log "no systemd-analyze: units not verified"
fi

# 3. Scripts parse.
for s in "$DOCS"/fleet/*.sh; do
    sh -n "$s" || bad "$s does not parse"
done

# 4. Manifests.
if [ -x "$PY" ] && "$PY" -c 'import yaml' 2>/dev/null; then
    "$PY" - "$DOCS"/fleet/layoutd-k8s-*.yaml <<'PYEOF' || errors=$((errors + 1))
import sys, yaml
kinds = []
for f in sys.argv[1:]:
    for d in yaml.safe_load_all(open(f)):
        if d:
            assert "apiVersion" in d and "kind" in d, f"{f}: a document without apiVersion/kind"
            kinds.append(d["kind"])
            if d["kind"] == "Pod":
                for c in d["spec"]["containers"]:
                    r = c.get("resources", {})
                    if "layoutd.io/workspaces" in r.get("requests", {}):
                        assert r["requests"]["layoutd.io/workspaces"] == r.get("limits", {}).get("layoutd.io/workspaces"), \
                            "extended resources need requests == limits"
for k in ("DaemonSet", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Pod"):
    assert k in kinds, f"no {k} in the manifests"
PYEOF
else
    log "no python3-yaml: manifests not parsed"
fi

# 5. Alerts: promtool checks the rules and runs their tests.
if command -v promtool >/dev/null 2>&1; then
    out=$(cd "$DOCS/fleet" && promtool check rules layoutd.rules.yaml 2>&1) || bad "promtool check rules: $out"
    out=$(cd "$DOCS/fleet" && promtool test rules layoutd.rules.test.yaml 2>&1) || bad "promtool test rules: $out"
else
    bad "promtool is missing (Debian package prometheus, in .ci/debian-packages)"
fi

# 6. The dashboard parses, and every metric the rules and the dashboard
# name is a family the agent (or its API) writes.
"$PY" - "$DOCS/fleet/layoutd-dashboard.json" "$DOCS/fleet/layoutd.rules.yaml" "$LAYOUTD_SOURCE_DIR" <<'PYEOF' || errors=$((errors + 1))
import json, os, re, sys
dash = json.load(open(sys.argv[1]))
assert dash.get("panels"), "the dashboard has no panels"
exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
exprs.append(open(sys.argv[2]).read())
families = set()
for d in ("agent", "src"):
    for root, _, files in os.walk(os.path.join(sys.argv[3], d)):
        for f in files:
            if f.endswith(".c"):
                families |= set(re.findall(r'"(layoutd_[a-z0-9_]+)"', open(os.path.join(root, f)).read()))
used = set()
for e in exprs:
    used |= set(re.findall(r"\b(layoutd_[a-z0-9_]+)", e))
missing = sorted(u for u in used if re.sub(r"_(bucket|sum|count)$", "", u) not in families)
if missing:
    print(f"[docs-fleet] FAIL: the rules or the dashboard use metrics the agent does not export: {missing}", file=sys.stderr)
    sys.exit(1)
PYEOF

[ $errors -eq 0 ] || fail "$errors problem(s)"
log "OK: ${#files[@]} fleet files quoted, verified and parsed"
