#!/usr/bin/env bash
# A real container runtime on a layoutd-csi volume: the agent and the
# plugin for real, the volume published as kubelet would (the gRPC client
# of csi-call.py), then Debian's podman runs a container from an image
# built here (tests/csi/build-image: mmdebstrap bookworm with git and npm,
# `podman import`) with target_path mounted at /workspace. Inside: a git
# clone and an npm install (offline, from package tarballs made here).
# Both are verified from the host, through target_path and through the
# workspace's own mount; then the volume is unpublished and its workspace
# and data are gone.
#
# The OCI runtime is runc: crun (podman's default) refuses this machine's
# hybrid cgroup hierarchy ("cgroups in hybrid mode not supported, drop all
# controllers from cgroupv2"); runc runs on it. The ulimits are given
# because podman's defaults (nofile 1048576) are above what a process here
# may set (no CAP_SYS_RESOURCE).
TEST_NAME=csi-podman
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
. "$LAYOUTD_TESTS/csi/lib-csi.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4; require_cmd findmnt
require_cmd podman; require_cmd runc; require_cmd mmdebstrap; require_cmd git
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"
require_csi

image=$("$LAYOUTD_TESTS/csi/build-image") || fail "could not build the test image"
log "image $image"

# --- what the container installs, made on the host ----------------------
SRC=$WORK/src
mkdir -p "$SRC/pkgs" "$SRC/app"
git init -q -b main "$SRC/work"
for i in $(seq 1 40); do
    mkdir -p "$SRC/work/src/mod$((i % 5))"
    seq 1 $((i * 50)) | sed "s/^/line $i: /" >"$SRC/work/src/mod$((i % 5))/file$i.txt"
done
git -C "$SRC/work" add -A
git -C "$SRC/work" -c user.name=t -c user.email=t@localhost commit -q -m first
git -C "$SRC/work" tag v1
echo more >>"$SRC/work/src/mod1/file1.txt"
git -C "$SRC/work" -c user.name=t -c user.email=t@localhost commit -q -am second
git clone -q --bare "$SRC/work" "$SRC/repo.git"
HEAD=$(git -C "$SRC/repo.git" rev-parse HEAD)
NFILES=$(git -C "$SRC/work" ls-files | wc -l)

# Twelve npm packages as tarballs (package/ inside, as npm pack makes them),
# the first with a bin; the app depends on all of them by file: path.
deps=
for i in $(seq -w 1 12); do
    p=$SRC/pkgs/p$i/package
    mkdir -p "$p/lib"
    bin=
    if [ "$i" = 01 ]; then
        mkdir -p "$p/bin"
        printf '#!/usr/bin/env node\nconsole.log("hello from " + require("../index.js"));\n' >"$p/bin/hello.js"
        chmod 0755 "$p/bin/hello.js"
        bin=', "bin": {"wl-hello": "bin/hello.js"}'
    fi
    printf '{"name": "wl-pkg-%s", "version": "1.%d.0", "main": "index.js"%s}\n' "$i" "$((10#$i))" "$bin" >"$p/package.json"
    printf 'module.exports = "wl-pkg-%s";\n' "$i" >"$p/index.js"
    for f in $(seq 1 30); do seq 1 $((f * 20)) | sed "s/^/exports.v$f = /" >"$p/lib/f$f.js"; done
    tar -C "$SRC/pkgs/p$i" -czf "$SRC/pkgs/wl-pkg-$i-1.$((10#$i)).0.tgz" package
    deps="$deps${deps:+, }\"wl-pkg-$i\": \"file:/src/pkgs/wl-pkg-$i-1.$((10#$i)).0.tgz\""
done
printf '{"name": "app", "version": "1.0.0", "private": true, "dependencies": {%s}}\n' "$deps" >"$SRC/app/package.json"

# --- the volume, as kubelet publishes it --------------------------------
L=$WORK/layout.yaml
write_layout "$L" 1 2 3
start_agent "$L"
start_csi
on_cleanup 'podman rm -f -t 0 "layoutd-csi-test-$$" >/dev/null 2>&1 || true; [ -n "${CSI_PID:-}" ] && kill -TERM "$CSI_PID" 2>/dev/null || true'
POD=5e1b7c1e-0000-4000-8000-0000000000aa
VOL=$(kubelet_volume_id "$POD" workspace); T=$(kubelet_target "$POD" workspace)
out=$(csi Node/NodePublishVolume "$(publish_request "$VOL" "$T" "$POD")")
[ "$(csi_code)" = OK ] || fail "publish: $out"
WS=$(jget "$(api GET /v1/workspaces)" "d['workspaces'][0]['id']")
MP=$(jget "$(api GET "/v1/workspaces/$WS")" "d['mountpoint']")

# --- the container --------------------------------------------------------
log "podman run: git clone + npm install in /workspace ($T)"
podman --runtime runc run --rm --name "layoutd-csi-test-$$" --network=none \
    --ulimit nofile=4096:4096 --ulimit nproc=4096:4096 \
    -v "$T:/workspace" -v "$SRC:/src:ro" "$image" sh -euc '
        git clone -q file:///src/repo.git /workspace/repo
        git -C /workspace/repo log --format=%H -1 v1 > /workspace/v1.head
        mkdir /workspace/app
        cp /src/app/package.json /workspace/app/
        cd /workspace/app
        npm install --offline --no-audit --no-fund --ignore-scripts --loglevel=error
        ./node_modules/.bin/wl-hello > hello.out
        sync' >"$WORK/podman.log" 2>&1 || { cat "$WORK/podman.log"; fail "the container's clone or install failed"; }

# --- verified from the host, through target_path and the workspace ------
for root in "$T" "$MP"; do
    assert_eq "$HEAD" "$(git -C "$root/repo" rev-parse HEAD)" "HEAD of the clone in $root"
    assert_eq "$(git -C "$SRC/repo.git" rev-parse v1)" "$(cat "$root/v1.head")" "tag v1 as the container saw it, in $root"
done
git -C "$T/repo" fsck --full --strict >/dev/null 2>&1 || fail "git fsck of the clone failed"
[ -z "$(git -C "$T/repo" status --porcelain)" ] || fail "the clone is not clean: $(git -C "$T/repo" status --porcelain | head)"
assert_eq "$NFILES" "$(git -C "$T/repo" ls-files | wc -l)" "files checked out"
# Every checked-out file's content against the index.
bad=$(cd "$T/repo" && git ls-files -s | while read -r _ sha _ path; do
          [ "$(git hash-object "$path")" = "$sha" ] || echo "$path"; done)
[ -z "$bad" ] || fail "files that differ from the index: $bad"

for i in $(seq -w 1 12); do
    diff -r "$SRC/pkgs/p$i/package" "$T/app/node_modules/wl-pkg-$i" >/dev/null ||
        fail "node_modules/wl-pkg-$i differs from its tarball"
done
assert_eq ../wl-pkg-01/bin/hello.js "$(readlink "$T/app/node_modules/.bin/wl-hello")" "the bin link"
[ -x "$T/app/node_modules/wl-pkg-01/bin/hello.js" ] || fail "the bin is not executable"
assert_eq "hello from wl-pkg-01" "$(cat "$MP/app/hello.out")" "the bin ran in the container"
"$PY" - "$T/app/package-lock.json" <<'PYEOF' || fail "package-lock.json does not list the twelve packages"
import json, sys
lock = json.load(open(sys.argv[1]))
pk = {k: v for k, v in lock["packages"].items() if k.startswith("node_modules/")}
assert len(pk) == 12, sorted(pk)
assert all(v["resolved"].startswith("file:") for v in pk.values()), pk
PYEOF
used=$(du -sk "$T/app/node_modules" | cut -f1)
log "verified: clone of $NFILES files at $HEAD, 12 packages (${used} KiB) installed by npm in the container"

# --- gone after unpublish -------------------------------------------------
sd=$(jget "$(api GET "/v1/workspaces/$WS")" "d['state_dir']")
out=$(csi Node/NodeUnpublishVolume "{\"volume_id\": \"$VOL\", \"target_path\": \"$T\"}")
[ "$(csi_code)" = OK ] || fail "unpublish: $out"
if findmnt -rn --mountpoint "$T" >/dev/null; then fail "$T still mounted"; fi
api GET "/v1/workspaces/$WS" >/dev/null; assert_eq 404 "$(st)" "the workspace is gone"
[ ! -e "$sd" ] || fail "the workspace's data is still there: $sd"
stop_csi
stop_agent
log "OK: podman ran git and npm on a layoutd-csi volume; verified from the host; gone after unpublish"
