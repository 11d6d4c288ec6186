#!/usr/bin/env bash
# A workspace moved between two agents on one host (two roots), the test of
# a host-to-host move (issue 23):
#  1. agent A's workspace gets files of several sizes (>= 1 MiB ones go to
#     the content pool as stubs), an empty file, a symlink, a hard link
#     pair, a user.* xattr, odd modes, owners, a deep tree and a real git
#     repository; `layoutctl export` streams it out of A;
#  2. `layoutctl import` into agent B: same sha256 for every file, modes,
#     owners, mtimes, link targets, hard-link identity, xattrs, labels and
#     tenant; git fsck passes in B; large files are stubs in B's pool;
#  3. a truncated archive fails with a clear error and leaves no workspace
#     behind on B; so does a file that is not an archive;
#  4. the API's errors: export of an unknown workspace is 404.
TEST_NAME=agent-export
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse; require_cmd curl; require_cmd mkfs.ext4
require_cmd git; require_cmd setfattr; require_cmd getfattr; require_cmd zstd
[ -x "$PY" ] || skip "needs /usr/bin/python3"
[ -x "$WSFS" ] || fail "reference daemon not built: $WSFS"

# layout FILE NAME: a small loop-ext4 layout on its own root below $WORK/NAME.
layout() {
    mkdir -p "$WORK/$2"
    cat >"$1" <<YAML
version: 1
root: $WORK/$2/root
pools:
  state:
    backend: loop-ext4
    volume_size: 128MiB
    min_volumes: 1
    max_volumes: 2
    workspaces_per_volume: 3
    workspace_reserve: 4MiB
  content:
    backend: loop-ext4
    volume_size: 256MiB
    shards: 1
workspace:
  mount_root: $WORK/$2/mnt
  command: [$WSFS, --xattrs, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  restart: on-failure
  ready_timeout: 10s
  stop_timeout: 5s
api:
  socket: $WORK/$2/api.sock
  group: layoutd-no-such-group
  flush_probe_interval: 5s
YAML
}
ctl_a() { "$LAYOUTCTL" --socket "$WORK/a/api.sock" "$@"; }
ctl_b() { "$LAYOUTCTL" --socket "$WORK/b/api.sock" "$@"; }

# Two agents: A (the source) and B (the destination).
layout "$WORK/a.yaml" a
layout "$WORK/b.yaml" b
SOCK=$WORK/a/api.sock start_agent "$WORK/a.yaml"
PID_A=$AGENT_PID
SOCK=$WORK/b/api.sock start_agent "$WORK/b.yaml"
PID_B=$AGENT_PID
SOCK=$WORK/a/api.sock # api() and st(): agent A unless told otherwise
# On failure: stop both (SIGINT stops their workspaces) before the teardown.
on_cleanup "kill -INT $PID_A $PID_B 2>/dev/null; for i in \$(seq 1 100); do kill -0 $PID_A 2>/dev/null || kill -0 $PID_B 2>/dev/null || break; sleep 0.1; done"

ctl_a add src-1 --tenant acme --label team=build --label tier=gold >/dev/null || fail "add src-1 on A"
m=$WORK/a/mnt/src-1

# ---- 1. the workspace's content --------------------------------------------------
log "filling src-1"
mkdir -p "$m/tree/a/b/c/d" "$m/big" "$m/modes"
head -c 3M /dev/urandom >"$m/big/three-mib.bin"
head -c 1M /dev/urandom >"$m/big/one-mib.bin"
head -c 1M /dev/urandom >"$m/big/one-mib-a"
cp "$m/big/one-mib-a" "$m/big/one-mib-b"          # the same content twice: dedup in the pool
head -c 200K /dev/urandom >"$m/tree/a/mid.bin"
printf 'hello\n' >"$m/tree/a/b/c/d/small.txt"
for i in $(seq 1 50); do printf 'file %d\n' "$i" >"$m/tree/a/b/f$i"; done
: >"$m/empty"
ln -s ../tree/a/b/c/d/small.txt "$m/big/link-to-small"
ln -s /nonexistent/target "$m/dangling"
printf 'linked\n' >"$m/hard-1"
ln "$m/hard-1" "$m/tree/hard-2"
head -c 2M /dev/urandom >"$m/big/hard-big-1"
ln "$m/big/hard-big-1" "$m/big/hard-big-2"
setfattr -n user.origin -v "agent-a" "$m/tree/a/mid.bin"
setfattr -n user.empty -v "" "$m/hard-1"
setfattr -n user.dir -v "on-a-dir" "$m/tree/a"
printf 'x\n' >"$m/modes/m600"; chmod 600 "$m/modes/m600"
printf 'x\n' >"$m/modes/m4755"; chmod 4755 "$m/modes/m4755"
printf 'x\n' >"$m/modes/m000"; chmod 000 "$m/modes/m000"
printf 'x\n' >"$m/modes/m1777"; chmod 1777 "$m/modes/m1777"
mkdir "$m/modes/d700"; chmod 700 "$m/modes/d700"
mkdir "$m/modes/d2775"; chmod 2775 "$m/modes/d2775"
printf 'x\n' >"$m/modes/owned"; chown 1234:5678 "$m/modes/owned"
touch -m -d '2001-02-03 04:05:06.123456789' "$m/tree/a/b/c/d/small.txt"
# A real git repository with history.
( cd "$m" && git init -q repo && cd repo &&
  git config user.email t@example.invalid && git config user.name t &&
  printf 'one\n' >README && git add README && git commit -qm one &&
  head -c 1500K /dev/urandom >blob.bin && mkdir -p src && printf 'int main(void){return 0;}\n' >src/main.c &&
  git add -A && git commit -qm two && git tag v1 && printf 'two\n' >>README && git commit -qam three &&
  git gc -q ) || fail "git repo in src-1"
git -C "$m/repo" fsck --full --no-progress || fail "git fsck in A"
HEAD_A=$(git -C "$m/repo" rev-parse HEAD)
sync -f "$m"

# What the tree looks like: path, type, mode, owner, size, mtime (whole
# seconds: the daemon keeps ns, but the check needs no more), link target,
# sha256, xattrs. Hard links by a group number in walk order.
snapshot() {
    "$PY" - "$1" <<'PY'
import hashlib, os, stat, sys
root = sys.argv[1]
inodes = {}
for dirpath, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(dirs + files):
        p = os.path.join(dirpath, name)
        rel = os.path.relpath(p, root)
        st = os.lstat(p)
        kind = 'l' if stat.S_ISLNK(st.st_mode) else 'd' if stat.S_ISDIR(st.st_mode) else 'f'
        extra = ''
        if kind == 'l':
            extra = os.readlink(p)
        elif kind == 'f':
            with open(p, 'rb') as f:
                extra = hashlib.sha256(f.read()).hexdigest()
            if st.st_nlink > 1:
                g = inodes.setdefault(st.st_ino, len(inodes))
                extra += ' hardlink-group=%d nlink=%d' % (g, st.st_nlink)
        xa = ''
        if kind != 'l':
            xa = ','.join('%s=%r' % (k, os.getxattr(p, k, follow_symlinks=False))
                          for k in sorted(os.listxattr(p, follow_symlinks=False)) if k.startswith('user.'))
        mtime = int(st.st_mtime) if kind == 'f' else '-'
        print(rel, kind, oct(stat.S_IMODE(st.st_mode)) if kind != 'l' else '-', '%d:%d' % (st.st_uid, st.st_gid),
              st.st_size if kind == 'f' else '-', mtime, extra, xa)
PY
}
snapshot "$m" >"$WORK/snap-a.txt" || fail "snapshot of A"
[ "$(wc -l <"$WORK/snap-a.txt")" -gt 80 ] || fail "the snapshot of A is too small: $(wc -l <"$WORK/snap-a.txt")"

# ---- 4. export errors first (cheap) ------------------------------------------------
out=$(api GET /v1/workspaces/no-such/export)
[ "$(st)" = 404 ] || fail "export of an unknown workspace: $(st) $out"
ctl_a export no-such -o "$WORK/x.tar.zst" 2>"$WORK/err.txt" && fail "layoutctl export of an unknown workspace succeeded"
has -i "no workspace" <"$WORK/err.txt" || fail "export error: $(cat "$WORK/err.txt")"
[ ! -e "$WORK/x.tar.zst" ] && [ ! -e "$WORK/x.tar.zst.partial" ] || fail "a failed export left a file"

# ---- 1. export -----------------------------------------------------------------------
log "export from A"
# A Unix socket (made after A's snapshot): tar has no type for it, so the
# export leaves it out instead of failing, and B has none.
"$PY" -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$m/tree/live.sock" ||
    fail "cannot make a socket in src-1"
[ -S "$m/tree/live.sock" ] || fail "no socket in src-1"
ctl_a export src-1 -o "$WORK/src-1.tar.zst" 2>"$WORK/export.txt" || fail "export: $(cat "$WORK/export.txt")"
[ -s "$WORK/src-1.tar.zst" ] || fail "empty archive"
zstd -t -q "$WORK/src-1.tar.zst" || fail "not a valid zstd stream"
# A standard archive: any tar reads it; metadata first, manifest last.
zstd -dc "$WORK/src-1.tar.zst" | tar --warning=no-unknown-keyword -tf - >"$WORK/list.txt" || fail "tar cannot list the archive"
assert_eq ".layoutd-export/workspace.json" "$(head -1 "$WORK/list.txt")" "first entry"
assert_eq ".layoutd-export/manifest.json" "$(tail -1 "$WORK/list.txt")" "last entry"
meta=$(zstd -dc "$WORK/src-1.tar.zst" | tar --warning=no-unknown-keyword -xOf - .layoutd-export/workspace.json)
assert_eq "src-1 acme gold 1" "$(jget "$meta" "d['id'],d['tenant'],d['labels']['tier'],d['format']" | tr -d "(),'")" "metadata"
# Real bytes, not stubs: the 3 MiB file is in the archive whole.
zstd -dc "$WORK/src-1.tar.zst" | tar --warning=no-unknown-keyword -xOf - big/three-mib.bin | cmp - "$m/big/three-mib.bin" ||
    fail "the archive's big/three-mib.bin differs from the workspace's"
# Stdout works as well, byte for byte the same tree.
ctl_a export src-1 -o - >"$WORK/stdout.tar.zst" 2>/dev/null || fail "export -o -"
zstd -dc "$WORK/stdout.tar.zst" | tar --warning=no-unknown-keyword -tf - | cmp - "$WORK/list.txt" || fail "export -o - lists differently"
grep -q '"workspace.exported"' <(curl -s --max-time 2 --unix-socket "$WORK/a/api.sock" "http://l/v1/events?since=0") ||
    fail "no workspace.exported event"

# ---- 2. import into B ------------------------------------------------------------------
log "import into B"
ctl_b import "$WORK/src-1.tar.zst" >"$WORK/import.txt" 2>&1 || fail "import: $(cat "$WORK/import.txt")"
has "verified against the manifest" <"$WORK/import.txt" || fail "import output: $(cat "$WORK/import.txt")"
mb=$WORK/b/mnt/src-1
ws=$(SOCK=$WORK/b/api.sock api GET /v1/workspaces/src-1)
assert_eq "acme build gold" "$(jget "$ws" "d['tenant'],d['labels']['team'],d['labels']['tier']" | tr -d "(),'")" \
    "tenant and labels in B"
[ ! -e "$mb/tree/live.sock" ] || fail "the socket came through the archive"
snapshot "$mb" >"$WORK/snap-b.txt" || fail "snapshot of B"
diff -u "$WORK/snap-a.txt" "$WORK/snap-b.txt" >"$WORK/snap.diff" || { cat "$WORK/snap.diff" >&2; fail "B differs from A"; }
# Nanoseconds too, where set explicitly.
assert_eq "$(stat -c %y "$m/tree/a/b/c/d/small.txt")" "$(stat -c %y "$mb/tree/a/b/c/d/small.txt")" "mtime with ns"
git -C "$mb/repo" fsck --full --no-progress || fail "git fsck in B"
assert_eq "$HEAD_A" "$(git -C "$mb/repo" rev-parse HEAD)" "git HEAD in B"
git -C "$mb/repo" status --porcelain | grep -q . && fail "git status in B is not clean: $(git -C "$mb/repo" status --porcelain)"
# Through the normal data path: the large files are objects in B's pool.
objs=$(find "$WORK/b/root/volumes/content-0/objects" -type f ! -name '.tmp.*' | wc -l)
[ "$objs" -ge 4 ] || fail "B's content pool has $objs objects: the large files did not go through the data path"
# The same 1 MiB twice is one object: count objects by content.
n_one=$(find "$WORK/b/root/volumes/content-0/objects" -type f -size 1024k ! -name '.tmp.*' | wc -l)
[ "$n_one" -le 2 ] || fail "the duplicated 1 MiB files were not deduplicated in B ($n_one objects of 1 MiB)"
# A second import of the same archive refuses the ID, then works under another.
ctl_b import "$WORK/src-1.tar.zst" 2>"$WORK/err.txt" >/dev/null && fail "import over an existing workspace"
has "exists already" <"$WORK/err.txt" || fail "import over an existing workspace: $(cat "$WORK/err.txt")"
ctl_b import "$WORK/src-1.tar.zst" --id copy-2 --tenant other >/dev/null 2>&1 || fail "import --id copy-2"
assert_eq "other" "$(jget "$(SOCK=$WORK/b/api.sock api GET /v1/workspaces/copy-2)" "d['tenant']")" "--tenant"
snapshot "$WORK/b/mnt/copy-2" | cmp - "$WORK/snap-a.txt" || fail "copy-2 differs from A"

# A pipe from one agent to the other (export -o - | import -).
ctl_a export src-1 -o - 2>/dev/null | ctl_b import - --id piped-3 >/dev/null 2>"$WORK/pipe.txt" ||
    fail "export | import: $(cat "$WORK/pipe.txt")"
snapshot "$WORK/b/mnt/piped-3" | cmp - "$WORK/snap-a.txt" || fail "piped-3 differs from A"

# ---- 5. an export that dies mid-stream, and a client that goes away -------------
# A slow reader keeps the worker mid-archive (the pipe fills); killing the
# worker must cut the HTTP answer (no final chunk: curl exit 18), never end
# it as if whole.
workers() { pgrep -f -- "--export-worker $m" || true; }
has_worker() { [ -n "$(workers)" ]; }
no_worker() { [ -z "$(workers)" ]; }
curl -s --unix-socket "$WORK/a/api.sock" --limit-rate 200k -o "$WORK/slow.tar.zst" \
    http://l/v1/workspaces/src-1/export &
CURL=$!
wait_for 10 has_worker || fail "no export worker while a client reads slowly"
sleep 0.5
kill -KILL $(workers)
rc=0; wait "$CURL" || rc=$?
[ "$rc" = 18 ] || fail "a killed export worker: curl exit $rc, expected 18 (transfer cut)"
grep -q "export of workspace src-1 failed" "$AGENT_LOG" || fail "the agent did not log the failed export"
# A client that goes away: the worker is killed, nothing is left running.
curl -s --unix-socket "$WORK/a/api.sock" --limit-rate 100k --max-time 1 -o /dev/null \
    http://l/v1/workspaces/src-1/export || true
wait_for 10 no_worker || fail "an export worker outlived its client: $(workers)"
grep -q "export of workspace src-1 cancelled" "$AGENT_LOG" || fail "the agent did not log the cancelled export"
# The agent still answers and exports.
ctl_a export src-1 -o "$WORK/again.tar.zst" 2>"$WORK/again.err" || fail "export after a cut and a cancel: $(cat "$WORK/again.err")"

# ---- 3. bad archives ----------------------------------------------------------------------
log "bad archives"
size=$(stat -c %s "$WORK/src-1.tar.zst")
head -c $((size / 2)) "$WORK/src-1.tar.zst" >"$WORK/cut.tar.zst"
ctl_b import "$WORK/cut.tar.zst" --id cut-1 >"$WORK/cut.txt" 2>&1 && fail "a truncated archive was imported"
log "truncated: $(tail -2 "$WORK/cut.txt" | tr "\n" " ")"
grep -qiE "truncat|damaged|incomplete|premature|unexpected end" "$WORK/cut.txt" || fail "truncated archive: unclear error: $(cat "$WORK/cut.txt")"
out=$(SOCK=$WORK/b/api.sock api GET /v1/workspaces/cut-1)
[ "$(st)" = 404 ] || fail "a failed import left workspace cut-1: $(st) $out"
[ ! -e "$WORK/b/mnt/cut-1" ] || [ -z "$(ls -A "$WORK/b/mnt/cut-1")" ] || fail "a failed import left files in $WORK/b/mnt/cut-1"
ls "$WORK"/b/root/volumes/state-*/workspaces/ | grep -qx cut-1 && fail "a failed import left cut-1's state directory"
head -c 100000 /dev/urandom >"$WORK/noise.bin"
ctl_b import "$WORK/noise.bin" --id noise-1 >"$WORK/noise.txt" 2>&1 && fail "noise was imported"
has -i "archive" <"$WORK/noise.txt" || fail "noise: unclear error: $(cat "$WORK/noise.txt")"
out=$(SOCK=$WORK/b/api.sock api GET /v1/workspaces/noise-1)
[ "$(st)" = 404 ] || fail "noise left workspace noise-1"
# A manifest that lies is caught after extraction: the byte-for-byte check.
mkdir "$WORK/lie" && ( cd "$WORK/lie" && zstd -dc "$WORK/src-1.tar.zst" | tar --warning=no-unknown-keyword -xpf - --xattrs --xattrs-include='user.*' ) ||
    fail "unpacking for the lie"
"$PY" - "$WORK/lie/.layoutd-export/manifest.json" <<'PY'
import json, sys
p = sys.argv[1]; m = json.load(open(p))
m['files']['tree/a/mid.bin']['sha256'] = '0' * 64
json.dump(m, open(p, 'w'))
PY
( cd "$WORK/lie" && tar -cf - --format=pax --xattrs .layoutd-export/workspace.json $(ls -A | grep -v '^.layoutd-export$') \
    .layoutd-export/manifest.json | zstd -q >"$WORK/lie.tar.zst" ) || fail "repacking the lie"
ctl_b import "$WORK/lie.tar.zst" --id lie-1 >"$WORK/lie.txt" 2>&1 && fail "an archive whose manifest lies was imported"
grep -q "MISMATCH.*tree/a/mid.bin" "$WORK/lie.txt" || fail "manifest mismatch: unclear error: $(cat "$WORK/lie.txt")"
out=$(SOCK=$WORK/b/api.sock api GET /v1/workspaces/lie-1)
[ "$(st)" = 404 ] || fail "a mismatching import left workspace lie-1"

# Hostile archives (issue 35.2): refused, nothing read or written outside.
SOCK=$WORK/b/api.sock hostile_imports hostile

# Both agents still serve what they had.
cmp "$m/big/three-mib.bin" "$mb/big/three-mib.bin" || fail "after all that, B's big file differs"
kill -INT "$PID_A" "$PID_B"
for i in $(seq 1 300); do kill -0 "$PID_A" 2>/dev/null || kill -0 "$PID_B" 2>/dev/null || break; sleep 0.1; done
log "PASS"
