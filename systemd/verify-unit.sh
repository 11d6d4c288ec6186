#!/usr/bin/env bash
# Verifies the units offline with `systemd-analyze verify` (no running
# systemd needed, and PID 1 need not be systemd): the service and its
# socket, together. verify insists that ExecStart= and ExecReload= exist,
# so it checks copies that point at the built agent and layoutctl (or
# /bin/true when they are not built). Any diagnostic ("Unknown key ...,
# ignoring" exits 0!) fails the test.
set -euo pipefail
unit=$1
socket=${2:-$(dirname "$unit")/layoutd.socket}
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d /tmp/layoutd-unit-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bin=/bin/true ctl=/bin/true
[ -x "${LAYOUTD_BUILD_DIR:-}/agent/layoutd" ] && bin=$LAYOUTD_BUILD_DIR/agent/layoutd
[ -x "${LAYOUTD_BUILD_DIR:-}/agent/layoutctl" ] && ctl=$LAYOUTD_BUILD_DIR/agent/layoutctl
sed -e "s|^ExecStart=/usr/bin/layoutd|ExecStart=$bin|" -e "s|^ExecReload=/usr/bin/layoutctl|ExecReload=$ctl|" \
    "$unit" >"$tmp/layoutd.service"
grep -q "^ExecStart=$bin" "$tmp/layoutd.service" || { echo "ExecStart= line not found in $unit"; exit 1; }
grep -q "^ExecReload=$ctl reload" "$tmp/layoutd.service" || { echo "ExecReload= line not found in $unit"; exit 1; }
cp "$socket" "$tmp/layoutd.socket"
cd "$tmp"
out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$tmp/layoutd.service" "$tmp/layoutd.socket" 2>&1) || {
    echo "$out"; echo "FAIL: systemd-analyze verify failed"; exit 1; }
if [ -n "$out" ]; then
    echo "$out"
    echo "FAIL: systemd-analyze verify printed diagnostics"
    exit 1
fi
# The promises the unit makes, checked so a later edit cannot drop them.
for want in '^Type=notify$' '^NotifyAccess=main$' '^WatchdogSec=' '^KillMode=process$' \
            '^RuntimeDirectoryPreserve=yes$' '^ProtectKernelModules=no$' '^ProtectKernelLogs=no$' '^DevicePolicy=closed$' '^DeviceAllow=/dev/fuse rw$' \
            '^ExecReload=/usr/bin/layoutctl reload$' '^ProtectKernelTunables=no$' \
            '^Wants=layoutd.socket$' '^After=layoutd.socket$'; do
    grep -Eq "$want" "$unit" || { echo "FAIL: $unit lacks $want"; exit 1; }
done
for banned in ProtectSystem PrivateMounts PrivateTmp ProtectHome PrivateDevices ReadOnlyPaths \
              TemporaryFileSystem ReadWritePaths InaccessiblePaths BindPaths MountFlags; do
    grep -Eq "^$banned=" "$unit" && { echo "FAIL: $banned= would hide the agent's mounts from the host"; exit 1; }
done
# The socket is the one the agent serves by default, for its group.
for want in '^ListenStream=/run/layoutd/api.sock$' '^SocketGroup=layoutd$' '^SocketMode=0660$' '^Accept=no$' \
            '^WantedBy=sockets.target$'; do
    grep -Eq "$want" "$socket" || { echo "FAIL: $socket lacks $want"; exit 1; }
done
echo "verified $unit and $socket (ExecStart=$bin, ExecReload=$ctl)"
