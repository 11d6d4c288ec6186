# Helpers for the in-guest tests (sourced). Each test runs as root in the
# VM, with udevd and systemd running, and tears down what it made.
set -euo pipefail
B=$LAYOUTD_VM_HOME/bin
log() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*"; }
fail() { log "FAIL: $*"; exit 1; }
skip() { log "SKIP: $*"; exit 77; }

# cmd | has [GREP-OPTIONS] PATTERN: cmd printed a line that matches. It
# reads all of cmd's output before it looks: `cmd | grep -q` under
# pipefail fails at random when grep quits at the first match and cmd,
# still writing, dies of SIGPIPE (a large /metrics or journal does).
has() { local text; text=$(cat); grep -q "$@" <<<"$text"; }
# kv FILE KEY: the value of KEY=... in FILE
kv() { sed -n "s/^$2=//p" "$1" | head -n1; }
_cleanups=()
on_exit() { _cleanups=("$1" "${_cleanups[@]}"); }
_run_cleanups() { set +e; for c in "${_cleanups[@]}"; do eval "$c"; done; }
trap _run_cleanups EXIT
cd "$(mktemp -d /tmp/layoutd-vm-test.XXXXXX)"
# The data disk (second virtio drive), one ext4 for all tests' files.
data_mount() {
    if ! findmnt -n /srv/data >/dev/null; then
        mkdir -p /srv/data
        blkid -p /dev/vdb >/dev/null 2>&1 || mkfs.ext4 -q /dev/vdb
        mount /dev/vdb /srv/data
    fi
}
