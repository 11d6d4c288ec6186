#!/usr/bin/env bash
# Verifies the unit offline with `systemd-analyze verify` (no running
# systemd needed, and PID 1 need not be systemd). verify insists that
# ExecStart= exists, so it checks a copy whose ExecStart points at the
# built agent (or /bin/true when the agent is not built). Any diagnostic
# ("Unknown key ..., ignoring" exits 0!) fails the test.
set -euo pipefail
unit=$1
command -v systemd-analyze >/dev/null || { echo "SKIP: no systemd-analyze"; exit 77; }
tmp=$(mktemp -d /tmp/layoutd-unit-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bin=/bin/true
[ -x "${LAYOUTD_BUILD_DIR:-}/agent/layoutd" ] && bin=$LAYOUTD_BUILD_DIR/agent/layoutd
sed "s|^ExecStart=/usr/bin/layoutd|ExecStart=$bin|" "$unit" >"$tmp/layoutd.service"
grep -q "^ExecStart=$bin" "$tmp/layoutd.service" || { echo "ExecStart= line not found in $unit"; exit 1; }
cd "$tmp"
out=$(SYSTEMD_LOG_LEVEL=notice systemd-analyze verify --man=no "$tmp/layoutd.service" 2>&1) || {
    echo "$out"; echo "FAIL: systemd-analyze verify failed"; exit 1; }
if [ -n "$out" ]; then
    echo "$out"
    echo "FAIL: systemd-analyze verify printed diagnostics"
    exit 1
fi
# The promises the unit makes, checked so a later edit cannot drop them.
for want in '^Type=notify$' '^NotifyAccess=main$' '^WatchdogSec=' '^KillMode=process$' \
            '^RuntimeDirectoryPreserve=yes$' '^ProtectKernelModules=no$' '^ProtectKernelLogs=no$' '^DevicePolicy=closed$' '^DeviceAllow=/dev/fuse rw$' \
            '^ExecReload=/bin/kill -HUP \$MAINPID$' '^ProtectKernelTunables=no$'; do
    grep -Eq "$want" "$unit" || { echo "FAIL: $unit lacks $want"; exit 1; }
done
for banned in ProtectSystem PrivateMounts PrivateTmp ProtectHome PrivateDevices ReadOnlyPaths \
              TemporaryFileSystem ReadWritePaths InaccessiblePaths BindPaths MountFlags; do
    grep -Eq "^$banned=" "$unit" && { echo "FAIL: $banned= would hide the agent's mounts from the host"; exit 1; }
done
echo "verified $unit (ExecStart=$bin)"
