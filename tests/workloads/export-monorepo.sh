#!/usr/bin/env bash
# A workspace moved with its real dependencies (issue 23's last check):
# a git checkout of the real monorepo of tests/workloads/pnpm-project (804
# packages, ~88,000 files, ~1 GB) installed with `pnpm install --offline`
# and pnpm's defaults into a workspace of agent A, exported with `layoutctl
# export`, imported into agent B with `layoutctl import` (which verifies
# every file against the archive's manifest), then compared independently:
# sha256 of every regular file, every symlink's target, and `git status`
# clean in B. Needs tests/workloads/pnpm-warm to have run (network once);
# skips otherwise. Not in CI (minutes, 3 GB of host space); run it by hand:
#   tests/workloads/export-monorepo.sh
TEST_NAME=export-monorepo
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.xfs; require_cmd git; require_cmd zstd
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"
cache=${LAYOUTD_WORKLOADS_CACHE:-/var/tmp/layoutd-workloads}/pnpm
pnpm=$cache/node_modules/.bin/pnpm
[ -x "$pnpm" ] && [ -d "$cache/store" ] && [ -f "$cache/project/pnpm-lock.yaml" ] ||
    skip "run tests/workloads/pnpm-warm first (pnpm and a warm store in $cache)"
avail=$(df -B1 --output=avail "$WORK" | tail -n1)
[ "$avail" -gt $((12 << 30)) ] || skip "needs 12 GiB free below $WORK"

layout() {
    mkdir -p "$WORK/$2"
    cat >"$1" <<YAML
version: 1
root: $WORK/$2/root
pools:
  state:
    backend: loop-xfs
    volume_size: 4GiB
    workspaces_per_volume: 2
  content:
    backend: loop-xfs
    volume_size: 4GiB
workspace:
  mount_root: $WORK/$2/mnt
  command: [$WSFS, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  ready_timeout: 10s
api:
  socket: $WORK/$2/api.sock
  group: layoutd-no-such-group
YAML
}
ctl_a() { "$LAYOUTCTL" --socket "$WORK/a/api.sock" "$@"; }
ctl_b() { "$LAYOUTCTL" --socket "$WORK/b/api.sock" "$@"; }
layout "$WORK/a.yaml" a
layout "$WORK/b.yaml" b
SOCK=$WORK/a/api.sock start_agent "$WORK/a.yaml"; PID_A=$AGENT_PID
SOCK=$WORK/b/api.sock start_agent "$WORK/b.yaml"; PID_B=$AGENT_PID
on_cleanup "kill -INT $PID_A $PID_B 2>/dev/null; for i in \$(seq 1 300); do kill -0 $PID_A 2>/dev/null || kill -0 $PID_B 2>/dev/null || break; sleep 0.1; done"

ctl_a add mono --tenant acme --label kind=monorepo >/dev/null || fail "add on A"
m=$WORK/a/mnt/mono
t0=$SECONDS
cp "$cache/project/package.json" "$cache/project/pnpm-lock.yaml" "$m/"
(cd "$m" && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm "the monorepo") ||
    fail "git in the workspace"
printf 'node_modules\n' >"$m/.gitignore"
(cd "$m" && git add .gitignore && git -c user.name=t -c user.email=t@t commit -qm ignore) || fail "git commit"
(cd "$m" && "$pnpm" install --offline --frozen-lockfile --store-dir "$cache/store" --reporter=silent) ||
    fail "pnpm install in the workspace"
files=$(find "$m" -xdev | wc -l)
log "installed: $files entries, $(du -sm --apparent-size "$m" | cut -f1) MB in $((SECONDS - t0)) s"
[ "$files" -ge 60000 ] || fail "expected 60,000+ entries, got $files"

t1=$SECONDS
ctl_a export mono -o "$WORK/mono.tar.zst" || fail "export"
log "export: $(( $(stat -c %s "$WORK/mono.tar.zst") >> 20 )) MiB in $((SECONDS - t1)) s"
t2=$SECONDS
ctl_b import "$WORK/mono.tar.zst" >"$WORK/import.out" 2>&1 || { tail -20 "$WORK/import.out"; fail "import"; }
log "import (with its verification): $((SECONDS - t2)) s: $(tail -n1 "$WORK/import.out")"

n=$WORK/b/mnt/mono
sums() { (cd "$1" && find . -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum); }
links() { (cd "$1" && find . -xdev -type l -printf '%p -> %l\n' | LC_ALL=C sort); }
sums "$m" >"$WORK/a.sums"; sums "$n" >"$WORK/b.sums"
links "$m" >"$WORK/a.links"; links "$n" >"$WORK/b.links"
cmp -s "$WORK/a.sums" "$WORK/b.sums" || { diff "$WORK/a.sums" "$WORK/b.sums" | head; fail "file contents differ"; }
cmp -s "$WORK/a.links" "$WORK/b.links" || { diff "$WORK/a.links" "$WORK/b.links" | head; fail "symlinks differ"; }
[ -z "$(cd "$n" && git status --porcelain)" ] || fail "git status in B is not clean"
(cd "$n" && git fsck --no-progress >/dev/null) || fail "git fsck in B"
[ "$(jget "$(SOCK=$WORK/b/api.sock api GET /v1/workspaces/mono)" "d['tenant']")" = acme ] || fail "tenant lost"
log "OK: $(wc -l <"$WORK/a.sums") files and $(wc -l <"$WORK/a.links") symlinks identical; pool of B: $(du -sm "$WORK/b/root/volumes/content-0/objects" | cut -f1) MB"
