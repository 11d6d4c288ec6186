#!/usr/bin/env bash
# docs/fleet.md quotes the files in docs/fleet/ and must quote them exactly
# (a fix to one and not the other fails here); the systemd units pass
# `systemd-analyze verify` without a diagnostic; the scripts parse; the
# Kubernetes manifests are valid YAML with the kinds the page describes.
# Needs no root.
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
    "$PY" - "$DOCS"/fleet/*.yaml <<'PYEOF' || errors=$((errors + 1))
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

[ $errors -eq 0 ] || fail "$errors problem(s)"
log "OK: ${#files[@]} fleet files quoted, verified and parsed"
