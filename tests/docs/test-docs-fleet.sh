#!/usr/bin/env bash
# docs/fleet.md quotes the files in docs/fleet/ and must quote them exactly
# (a fix to one and not the other fails here; the dashboard and the rules'
# tests are too long to quote and are named instead); the systemd units
# pass `systemd-analyze verify` without a diagnostic; the scripts parse;
# the Kubernetes manifests are valid YAML with the kinds the page
# describes; the alert rules pass `promtool check rules` and their tests
# `promtool test rules`; the dashboard is Grafana JSON; and every metric
# the rules and the dashboard use is one the agent exports; the CSI
# deployment (CSIDriver, DaemonSet, pod, Nomad plugin, volume and job)
# has the fields it must have and names the plugin, its socket, its
# flags and its paths the way layoutd-csi does. Needs no root.
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
for k in ("DaemonSet", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Pod", "CSIDriver"):
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

# 7. The CSI deployment agrees with the plugin: its driver name (from its
# source), the options it takes (its --help), the socket the registrar
# and the kubelet use, the propagation the binds need.
: "${LAYOUTD_CSI:=$LAYOUTD_BUILD_DIR/agent/csi/layoutd-csi}"
if [ -x "$LAYOUTD_CSI" ] && "$PY" -c 'import yaml' 2>/dev/null; then
    "$PY" - "$DOCS/fleet" "$LAYOUTD_SOURCE_DIR/agent/csi/csi-plugin.h" "$("$LAYOUTD_CSI" --help)" <<'PYEOF' || errors=$((errors + 1))
import os, re, sys, yaml
fleet, header, help_text = sys.argv[1:4]
driver = re.search(r'#define CSI_DRIVER_NAME "([^"]+)"', open(header).read()).group(1)
topology = re.search(r'#define CSI_TOPOLOGY_KEY "([^"]+)"', open(header).read()).group(1)
options = set(re.findall(r"--[a-z][a-z-]*[a-z]", help_text))
problems = []
def check(cond, what):
    if not cond:
        problems.append(what)
def docs(name):
    return [d for d in yaml.safe_load_all(open(os.path.join(fleet, name))) if d]

(drv,) = [d for d in docs("layoutd-k8s-csi-driver.yaml") if d["kind"] == "CSIDriver"]
check(drv["metadata"]["name"] == driver, f"CSIDriver is named {drv['metadata']['name']}, the plugin {driver}")
check(drv["spec"].get("podInfoOnMount") is True, "CSIDriver: podInfoOnMount must be true (tenant, labels)")
check(drv["spec"].get("attachRequired") is False, "CSIDriver: attachRequired must be false (no controller)")
check(drv["spec"].get("volumeLifecycleModes") == ["Ephemeral"], "CSIDriver: volumeLifecycleModes must be [Ephemeral]")

(ds,) = [d for d in docs("layoutd-k8s-csi-node.yaml") if d["kind"] == "DaemonSet"]
pod = ds["spec"]["template"]["spec"]
vols = {v["name"]: v for v in pod["volumes"]}
cs = {c["name"]: c for c in pod["containers"]}
check(set(cs) >= {"layoutd-csi", "node-driver-registrar"}, f"DaemonSet containers: {sorted(cs)}")
plugin, reg = cs.get("layoutd-csi", {}), cs.get("node-driver-registrar", {})
args = dict(a.split("=", 1) for a in plugin.get("args", []))
for a in args:
    check(a in options, f"layoutd-csi is given {a}, which its --help does not list")
check(plugin.get("securityContext", {}).get("privileged") is True, "layoutd-csi must be privileged (mounts)")
def mount_of(c, path):
    return next((m for m in c.get("volumeMounts", []) if m["mountPath"] == path), None)
def host_of(m):
    return vols[m["name"]]["hostPath"]["path"] if m else None
# The endpoint: the plugin's socket, the registrar's --csi-address, the
# same host file that kubelet is told about.
ep = args.get("--endpoint", "")
check(ep.startswith("unix:///"), f"--endpoint {ep} is not unix:///PATH")
sock = ep[len("unix://"):]
rargs = dict(a.split("=", 1) for a in reg.get("args", []))
check(rargs.get("--csi-address") == sock, f"registrar --csi-address {rargs.get('--csi-address')} is not the plugin's {sock}")
pdir = os.path.dirname(sock)
check(host_of(mount_of(plugin, pdir)) == host_of(mount_of(reg, pdir)), "plugin and registrar see different socket dirs")
check(rargs.get("--kubelet-registration-path") == os.path.join(host_of(mount_of(plugin, pdir)) or "?", os.path.basename(sock)),
      "--kubelet-registration-path is not the host path of the plugin's socket")
check(host_of(mount_of(plugin, pdir)) == f"/var/lib/kubelet/plugins/{driver}", "the plugin dir is not /var/lib/kubelet/plugins/<driver>")
check(host_of(mount_of(reg, "/registration")) == "/var/lib/kubelet/plugins_registry", "registration dir")
kub = mount_of(plugin, "/var/lib/kubelet")
check(kub is not None and kub.get("mountPropagation") == "Bidirectional", "the kubelet dir needs mountPropagation: Bidirectional")
check(args.get("--target-root") == "/var/lib/kubelet", "--target-root is not the kubelet dir")
lsock = args.get("--layoutd-socket", "/run/layoutd/api.sock")
check(host_of(mount_of(plugin, os.path.dirname(lsock))) == "/run/layoutd", "the host's /run/layoutd is not mounted where --layoutd-socket points")
check("api-ro" not in lsock, "the plugin needs the read-write socket")
ws = mount_of(plugin, "/var/lib/layoutd/workspaces")
check(ws is not None and ws.get("mountPropagation") in ("HostToContainer", "Bidirectional"), "the workspaces' FUSE mounts must propagate into the plugin")

(p,) = [d for d in docs("layoutd-k8s-csi-pod.yaml") if d["kind"] == "Pod"]
inline = [v for v in p["spec"]["volumes"] if "csi" in v]
check(inline and all(v["csi"]["driver"] == driver for v in inline), "the example pod has no inline csi volume of the driver")
mounted = {m["name"] for c in p["spec"]["containers"] for m in c.get("volumeMounts", [])}
check(all(v["name"] in mounted for v in inline), "the example pod does not mount its csi volume")

# Nomad: HCL has no parser in Debian here; its blocks and keys are checked by pattern.
plug = open(os.path.join(fleet, "layoutd-nomad-csi-plugin.hcl")).read()
vol = open(os.path.join(fleet, "layoutd-nomad-csi-volume.hcl")).read()
job = open(os.path.join(fleet, "layoutd-nomad-csi-job.hcl")).read()
for name, text in (("plugin", plug), ("volume", vol), ("job", job)):
    check(text.count("{") == text.count("}"), f"Nomad {name} file: unbalanced braces")
check(re.search(r'^\s*type\s*=\s*"system"', plug, re.M), "Nomad plugin job: type = \"system\"")
m = re.search(r"csi_plugin\s*\{(.*?)\}", plug, re.S)
check(m is not None, "Nomad plugin job: no csi_plugin block")
if m:
    check(re.search(rf'id\s*=\s*"{re.escape(driver)}"', m.group(1)), "csi_plugin id is not the driver name")
    check(re.search(r'type\s*=\s*"node"', m.group(1)), "csi_plugin type is not \"node\"")
    md = re.search(r'mount_dir\s*=\s*"([^"]+)"', m.group(1))
    base = re.search(r'stage_publish_base_dir\s*=\s*"([^"]+)"', m.group(1))
    nargs = dict(re.findall(r'"(--[a-z-]+)=([^"]*)"', plug))
    for a in nargs:
        check(a in options, f"the Nomad plugin job gives {a}, which --help does not list")
    check(md and nargs.get("--endpoint", "").startswith(f"unix://{md.group(1)}/"), "--endpoint is not below mount_dir")
    check(nargs.get("--target-root") == (base.group(1) if base else md and md.group(1)), "--target-root is not stage_publish_base_dir")
check(re.search(rf'plugin_id\s*=\s*"{re.escape(driver)}"', vol), "the Nomad volume's plugin_id is not the driver name")
vid = re.search(r'^id\s*=\s*"([^"]+)"', vol, re.M)
check(vid and re.search(rf'source\s*=\s*"{re.escape(vid.group(1))}"', job), "the Nomad job does not claim the registered volume")
check(re.search(r'type\s*=\s*"csi"', job) and "volume_mount" in job, "the Nomad job has no csi volume and volume_mount")
check(topology == "topology.layoutd.io/node", f"topology key {topology}")
for pr in problems:
    print(f"[docs-fleet] FAIL: CSI deployment: {pr}", file=sys.stderr)
sys.exit(1 if problems else 0)
PYEOF
else
    bad "layoutd-csi not built or python3-yaml missing: the CSI deployment is not checked"
fi
tr '\n' ' ' <"$DOCS/fleet.md" | grep -q "No kubelet and no Nomad agent runs" || bad "fleet.md does not say what was not run here"
awk '/^## /{print; exit}' "$DOCS/fleet.md" | grep -q CSI || bad "fleet.md does not lead with the CSI route"

[ $errors -eq 0 ] || fail "$errors problem(s)"
log "OK: ${#files[@]} fleet files quoted, verified and parsed; the CSI deployment agrees with layoutd-csi"
