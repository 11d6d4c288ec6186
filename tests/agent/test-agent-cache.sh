#!/usr/bin/env bash
# The cache (workspace.cache: true): a directory of the workspace's state
# volume, <volume>/derived/<id>, mounted at <mountpoint>/.layoutd-cache
# before the workspace is running, so that derived data never goes through
# the FUSE daemon. Checked: the mount and its source, the API's cache object
# and `layoutctl env`; files land natively (none in the state dir) and hard
# links work inside it; workspaces do not share it, git at the root does
# not see it (its .gitignore); the mount point cannot
# be removed or renamed, rm -rf empties it; a daemon killed -9, an agent
# killed -9 and a cache unmounted while no agent ran or behind a running
# one's back: mounted again, nothing lost; a symlink planted at the mount
# point, or files in it: refused, nothing mounted through it or over them,
# a cache of no workspace: reported at the start, kept;
# the workspace runs and says why; an export leaves the cache out, an import gets an empty one
# (its .gitignore only); a
# destroy removes the cache with the data.
TEST_NAME=agent-cache
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd findmnt
[ -x "$PY" ] || skip "needs /usr/bin/python3"

L=$WORK/layout.yaml
write_layout "$L" 1 4 3
sed -i 's/^  package_store: true$/  package_store: true\n  cache: true/' "$L"
grep -q '^  cache: true$' "$L" || fail "test setup: cache not turned on"
start_agent "$L"
for w in w1 w2; do api POST /v1/workspaces "{\"id\":\"$w\"}" >/dev/null; assert_eq 201 "$(st)" "create $w"; done
state_of() { jget "$(api GET "/v1/workspaces/$1")" "d['daemon']['state']"; }
cache_of() { jget "$(api GET "/v1/workspaces/$1")" "(d['cache'] or {}).get('$2')"; }
running() { [ "$(state_of "$1")" = running ]; }
for w in w1 w2; do wait_for 60 running "$w" || fail "$w not running"; done

log "the cache is mounted before the workspace runs, from the state volume"
m1=$WORK/mnt/w1/.layoutd-cache
assert_eq mounted "$(cache_of w1 state)" "w1's cache state"
assert_eq "$m1" "$(cache_of w1 path)" "w1's cache path"
src1=$(cache_of w1 source)
vol1=$(jget "$(api GET /v1/workspaces/w1)" "d['volume']")
assert_eq "$WORK/root/volumes/$vol1/derived/w1" "$src1" "w1's cache source"
assert_eq "$m1" "$(findmnt -rn -M "$m1" -o TARGET)" "a mount at $m1"
# The supervisor logs "cache ... mounted" before the state change to running.
mline=$(grep -n "w1: cache $src1 mounted" "$AGENT_LOG" | head -1 | cut -d: -f1)
rline=$(grep -n "workspace w1: starting -> running" "$AGENT_LOG" | head -1 | cut -d: -f1)
[ -n "$mline" ] || fail "no log line for w1's cache mount"
[ -n "$rline" ] || fail "no log line for w1's state change to running"
[ "$mline" -lt "$rline" ] || fail "w1 was running (log line $rline) before its cache was mounted (line $mline)"
[ "$(stat -c %d "$m1")" = "$(stat -c %d "$WORK/root/volumes/$vol1")" ] || fail "the cache is not on the state volume"
[ "$(stat -c %d "$m1")" != "$(stat -c %d "$WORK/mnt/w1")" ] || fail "the cache is on the FUSE mount"

log "the API names the environment, layoutctl env prints it"
env_json=$(jget "$(api GET /v1/workspaces/w1)" "json.dumps(d['cache']['environment'])")
assert_eq "$m1/pnpm-store" "$(jget "$env_json" "d['npm_config_store_dir']")" "pnpm's store"
assert_eq "$m1/cargo-target" "$(jget "$env_json" "d['CARGO_TARGET_DIR']")" "cargo's target dir"
assert_eq hardlink "$(jget "$env_json" "d['npm_config_package_import_method']")" "pnpm's import method"
"$LAYOUTCTL" --socket "$SOCK" env w1 >"$WORK/env.sh" || fail "layoutctl env failed"
got=$(bash -c ". '$WORK/env.sh' && echo \"\$npm_config_virtual_store_dir|\$XDG_CACHE_HOME\"")
assert_eq "$m1/pnpm-virtual-store|$m1/xdg" "$got" "the exports, sourced"
rc=0; "$LAYOUTCTL" --socket "$SOCK" env nosuch >/dev/null 2>&1 || rc=$?
assert_eq 4 "$rc" "layoutctl env of a missing workspace (exit status)"

log "files land natively; hard links work inside the cache; the state dir holds only the mount point"
mkdir -p "$m1/tree"
for i in $(seq 1 500); do echo "$i" >"$m1/tree/f$i"; done
ln "$m1/tree/f1" "$m1/tree/link1" || fail "link(2) inside the cache failed"
assert_eq 2 "$(stat -c %h "$m1/tree/f1")" "f1's link count"
[ -f "$src1/tree/f500" ] || fail "the cache's files are not in its source"
sd1=$(jget "$(api GET /v1/workspaces/w1)" "d['state_dir']")
assert_eq ".layoutd-cache" "$(ls -A "$sd1" | grep -v '^\.layoutd-store$' | tr '\n' ' ' | sed 's/ $//')" "the state dir's entries"
assert_eq 0 "$(find "$sd1/.layoutd-cache" -mindepth 1 | wc -l)" "entries below the state dir's mount point"

log "w2's cache is its own; git at the workspace's root does not see it"
m2=$WORK/mnt/w2/.layoutd-cache
assert_eq ".gitignore" "$(ls -A "$m2")" "w2's new cache holds its .gitignore only"
[ "$(cache_of w2 source)" != "$src1" ] || fail "w1 and w2 share a cache"
git -C "$WORK/mnt/w2" init -q || fail "git init in w2 failed"
echo src >"$WORK/mnt/w2/src.txt"
mkdir "$m2/pnpm-store" && echo derived >"$m2/pnpm-store/f"
assert_eq "?? src.txt" "$(git -C "$WORK/mnt/w2" status --porcelain)" "git status at w2's root"
git -C "$WORK/mnt/w2" add -A || fail "git add -A in w2 failed"
assert_eq "src.txt" "$(git -C "$WORK/mnt/w2" ls-files --cached)" "what git add -A took in w2"

log "the mount point stays: rmdir and rename fail with EBUSY, rm -rf empties it"
rmdir "$m1" 2>"$WORK/rmdir.err" && fail "rmdir of the cache's mount point succeeded"
grep -q "busy" "$WORK/rmdir.err" || fail "rmdir: not EBUSY: $(cat "$WORK/rmdir.err")"
mv "$m1" "$WORK/mnt/w1/moved" 2>/dev/null && fail "rename of the cache's mount point succeeded"
rm -rf "$m1" 2>/dev/null && fail "rm -rf of the mount point itself succeeded"
assert_eq 0 "$(find "$m1" -mindepth 1 | wc -l)" "the cache after rm -rf"
assert_eq "$m1" "$(findmnt -rn -M "$m1" -o TARGET)" "the cache is still mounted after rm -rf"
echo kept >"$m1/marker"

log "the daemon killed -9: restarted, the cache mounted again, nothing lost"
pid=$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['pid']")
kill -KILL "$pid"
newpid() { running w1 && [ "$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['pid']")" != "$pid" ]; }
wait_for 60 newpid || fail "w1 not restarted"
assert_eq mounted "$(cache_of w1 state)" "w1's cache after the restart"
assert_eq kept "$(cat "$m1/marker")" "the marker after the restart"
[ -f "$m1/.gitignore" ] || fail "the .gitignore that rm -rf took was not made again at the restart"
assert_eq 1 "$(findmnt -rn -M "$m1" | wc -l)" "mounts at the cache after the restart"

log "the agent killed -9, the cache unmounted meanwhile: re-adoption mounts it again"
kill -KILL "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true
umount "$m1" || fail "test setup: cannot unmount the cache"
# And a cache of no workspace meanwhile (a destroy an older agent left
# half done): said at the start, never deleted.
ghost=$WORK/root/volumes/$vol1/derived/ghost
mkdir "$ghost" && echo derived >"$ghost/f" || fail "test setup: cannot make $ghost"
start_agent "$L"
wait_for 60 running w1 || fail "w1 not running after the agent's restart"
grep -qF "workspace ghost on volume $vol1: stray-cache ($ghost)" "$AGENT_LOG" ||
    fail "the stray cache was not reported: $(grep -i stray "$AGENT_LOG")"
assert_eq derived "$(cat "$ghost/f")" "the stray cache's file"
grep -q "stray-cache" <(grep -v ghost "$AGENT_LOG") && fail "a cache of a workspace reported stray: $(grep stray-cache "$AGENT_LOG")"
assert_eq True "$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['adopted']")" "w1 re-adopted"
mounted_again() { [ "$(cache_of w1 state)" = mounted ] && findmnt -rn -M "$m1" >/dev/null; }
wait_for 30 mounted_again || fail "the cache was not mounted again on re-adoption"
assert_eq kept "$(cat "$m1/marker")" "the marker after re-adoption"

log "the cache unmounted behind the running agent's back: mounted again"
umount "$m1" || fail "test setup: cannot unmount the cache"
remounted() { grep -q "w1: its cache at $m1 was unmounted: mounting it again" "$AGENT_LOG" && mounted_again; }
wait_for 30 remounted || fail "the agent did not mount the cache again: $(tail -5 "$AGENT_LOG")"
assert_eq kept "$(cat "$m1/marker")" "the marker after the cache was mounted again"

log "a symlink at the mount point: nothing mounted through it, the workspace runs and says why"
victim=$WORK/victim
mkdir -p "$victim"
# The agent stopped meanwhile, or it mounts the cache again at once.
pid=$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['pid']")
kill -STOP "$AGENT_PID"
umount "$m1" && rmdir "$m1" && ln -s "$victim" "$m1" || { kill -CONT "$AGENT_PID"; fail "test setup: cannot plant the symlink"; }
kill -KILL "$pid"
kill -CONT "$AGENT_PID"
failed_cache() { running w1 && [ "$(cache_of w1 state)" = failed ]; }
wait_for 60 failed_cache || fail "w1 did not run with its cache refused (state $(cache_of w1 state))"
cache_of w1 error | grep -q "symlink" || fail "the error does not name the symlink: $(cache_of w1 error)"
findmnt -rn -M "$victim" >/dev/null && fail "a mount on the symlink's target"
assert_eq 0 "$(find "$victim" -mindepth 1 | wc -l)" "the symlink's target"
[ -f "$src1/marker" ] || fail "the cache's data went"
rm "$m1"
"$LAYOUTCTL" --socket "$SOCK" restart w1 >/dev/null || fail "layoutctl restart failed"
wait_for 60 mounted_again || fail "the cache was not mounted again after the link went"
assert_eq kept "$(cat "$m1/marker")" "the marker after the repair"

log "files in the bare mount point: not hidden under a mount, said"
pid=$(jget "$(api GET /v1/workspaces/w1)" "d['daemon']['pid']")
kill -STOP "$AGENT_PID"
umount "$m1" && echo "written meanwhile" >"$m1/stray" || { kill -CONT "$AGENT_PID"; fail "test setup: cannot write into the bare mount point"; }
kill -KILL "$pid"
kill -CONT "$AGENT_PID"
wait_for 60 failed_cache || fail "w1's cache was mounted over files (state $(cache_of w1 state))"
cache_of w1 error | grep -q "holds files" || fail "the error does not say why: $(cache_of w1 error)"
assert_eq "written meanwhile" "$(cat "$m1/stray")" "the stray file, in sight"
rm "$m1/stray"
"$LAYOUTCTL" --socket "$SOCK" restart w1 >/dev/null || fail "layoutctl restart failed"
wait_for 60 mounted_again || fail "the cache was not mounted again once the mount point was empty"

log "an export leaves the cache out and says so; an import gets an empty cache (its .gitignore only)"
echo source >"$WORK/mnt/w1/src.txt"
"$LAYOUTCTL" --socket "$SOCK" export w1 -o "$WORK/w1.tar.zst" 2>"$WORK/export.err" || fail "export: $(cat "$WORK/export.err")"
tar --zstd -tf "$WORK/w1.tar.zst" >"$WORK/w1.list" || fail "cannot list the archive"
grep -q 'layoutd-cache' "$WORK/w1.list" && fail "the archive holds the cache or its mount point: $(grep 'layoutd-cache' "$WORK/w1.list" | head)"
grep -q 'src.txt' "$WORK/w1.list" || fail "the archive lacks the workspace's file: $(cat "$WORK/w1.list")"
tar --zstd -xOf "$WORK/w1.tar.zst" .layoutd-export/workspace.json >"$WORK/w1.meta" 2>/dev/null ||
    tar --zstd -xOf "$WORK/w1.tar.zst" ./.layoutd-export/workspace.json >"$WORK/w1.meta" || fail "no workspace.json"
assert_eq True "$(jget "$(cat "$WORK/w1.meta")" "d['cache_excluded']")" "workspace.json's cache_excluded"
"$LAYOUTCTL" --socket "$SOCK" import "$WORK/w1.tar.zst" --id w3 >"$WORK/import.out" 2>&1 || fail "import: $(cat "$WORK/import.out")"
wait_for 60 running w3 || fail "w3 not running after the import"
assert_eq mounted "$(cache_of w3 state)" "w3's cache after the import"
assert_eq ".gitignore" "$(ls -A "$WORK/mnt/w3/.layoutd-cache")" "w3's cache is new (its .gitignore only)"
assert_eq source "$(cat "$WORK/mnt/w3/src.txt")" "w3's file from the archive"

log "cache turned off by a reload: the running daemon keeps its cache until its next start"
sed -i 's/^  cache: true$/  cache: false/' "$L"
"$LAYOUTCTL" --socket "$SOCK" reload >/dev/null || fail "reload failed"
assert_eq mounted "$(cache_of w1 state)" "w1's cache after the reload"
"$LAYOUTCTL" --socket "$SOCK" restart w1 >/dev/null || fail "layoutctl restart failed"
no_cache() { running w1 && [ "$(jget "$(api GET /v1/workspaces/w1)" "d['cache']")" = None ]; }
wait_for 60 no_cache || fail "w1 still has a cache after its restart with the cache off"
findmnt -rn -M "$m1" >/dev/null && fail "a cache mount at $m1 with the cache off"

log "a destroy removes the cache with the data"
src2=$(cache_of w2 source)
echo x >"$m2/f"
[ -f "$src2/f" ] || fail "test setup: w2's file not in its source"
api DELETE "/v1/workspaces/w2?destroy_data=true&wait=60" >/dev/null
assert_eq 200 "$(st)" "destroy w2"
[ ! -e "$src2" ] || fail "w2's cache $src2 is left after a destroy"
findmnt -rn -o TARGET | grep -q "^$WORK/mnt/w2" && fail "a mount left below $WORK/mnt/w2"

stop_agent
findmnt -rn -o TARGET | grep -q "^$WORK/mnt/" && fail "mounts left after the agent stopped its workspaces: $(findmnt -rn -o TARGET | grep "^$WORK/mnt/")"
log "PASS"
