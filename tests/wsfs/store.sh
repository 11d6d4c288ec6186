#!/usr/bin/env bash
# The package store (--store; issue 20, direction 1), with real daemons on
# a loop-backed XFS state volume (reflink) and an ext4 content volume:
#   1. two workspaces of one tenant see one store at MNT/.layoutd-store,
#      not listed by readdir; a third, of another tenant, sees its own;
#   2. files written into the store stay whole (never pool stubs), also
#      above the pool threshold;
#   3. ln and `cp -al` from the store make clones: a new inode per name,
#      the store file's link count stays 1, the data is the same and, on
#      XFS, shares the store file's extents;
#   4. an edit of a clone (write, append, truncate, chmod, rename over)
#      never changes the store or another workspace's clone;
#   5. nothing is linked or renamed into the store or out of it (EXDEV),
#      and the store's own name cannot be made, removed or renamed;
#   6. a user who cannot read a store file cannot clone it;
#   7. clones and the store survive a restart; gc and fsck over both
#      workspaces find nothing missing;
#   8. a store on another filesystem, or inside the state dir, is refused
#      at start; --store=off shows no store.
TEST_NAME=wsfs-store
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd getfattr
require_cmd setpriv
require_cmd mkfs.xfs

wsfs_mkvol svol 1G xfs
wsfs_mkvol cvol 256M ext4 -m 0
S=$WORK/svol
export WSFS_CONTENT=$WORK/cvol
mkdir -p "$S/a" "$S/b" "$S/c"
wsfs_start a --state "$S/a" --store "$S/stores/t1" --commit=fdatasync
PA=$WSFS_PID
wsfs_start b --state "$S/b" --store "$S/stores/t1" --commit=fdatasync
PB=$WSFS_PID
wsfs_start c --state "$S/c" --store "$S/stores/t2" --commit=fdatasync
PC=$WSFS_PID
ma=$WORK/a/mnt mb=$WORK/b/mnt mc=$WORK/c/mnt
is_stub() { getfattr --absolute-names -n user.wsfs.cas "$1" >/dev/null 2>&1; }
ino() { stat -c %i "$1"; }
stat_is() { [ "$(stat_get "$1" "$2")" = "$3" ]; }
# py_errno CODE: runs Python CODE, prints the errno name it failed with, or OK.
py_errno() {
    /usr/bin/python3 -c "import errno, os, sys
try:
    $1
    print('OK')
except OSError as e:
    print(errno.errorcode[e.errno])"
}

# ---- 1. one store per tenant, not listed ----
[ -d "$ma/.layoutd-store" ] || fail "no store at $ma/.layoutd-store"
[ -d "$S/stores/t1" ] && [ -d "$S/stores/t2" ] || fail "the stores were not made"
[ "$(stat -c %a "$S/stores/t1")" = "$(stat -c %a "$S/a")" ] || fail "the store did not get the state dir's mode"
listing=$(ls -a "$ma")
grep -qx '.layoutd-store' <<<"$listing" && fail "readdir lists the store"
mkdir "$ma/.layoutd-store/pkg"
head -c 300000 /dev/urandom > "$WORK/big.src"
cp "$WORK/big.src" "$ma/.layoutd-store/pkg/big"
printf 'small\n' > "$ma/.layoutd-store/pkg/small"
chmod 0644 "$ma/.layoutd-store/pkg/small"
[ -d "$mb/.layoutd-store/pkg" ] || fail "workspace b does not see the store a wrote"
cmp -s "$WORK/big.src" "$mb/.layoutd-store/pkg/big" || fail "b reads other bytes from the store"
# Other workspaces change the store behind b's kernel: a store directory's
# listing is never kept (--cache-dirs leaves the store out), so a file a
# makes shows in b's very next listing, not only after the store's 1 s
# attribute timeout.
ls "$mb/.layoutd-store/pkg" >/dev/null
ls "$mb/.layoutd-store/pkg" >/dev/null
printf 'late\n' > "$ma/.layoutd-store/pkg/late"
ls "$mb/.layoutd-store/pkg" | grep -qx late || fail "b's listing of the store misses the file a just made"
rm "$ma/.layoutd-store/pkg/late"
ls "$mb/.layoutd-store/pkg" | grep -qx late && fail "b's listing of the store shows the file a just removed"
[ -e "$mc/.layoutd-store/pkg" ] && fail "tenant t2 sees tenant t1's store"
log "one store per tenant: ok"

# ---- 2. store files stay whole ----
wait_for 10 all_committed a || fail "a's records were not committed"
sleep 1
is_stub "$S/stores/t1/pkg/big" && fail "a store file became a pool stub"
[ "$(stat_get a objects_stored)" = 0 ] || fail "a published store files to the pool"
log "store files stay whole: ok"

# ---- 3. links from the store are clones ----
mkdir -p "$mb/nm" "$ma/nm"
# Made beside the mounts, so no kernel holds times of it to write back.
printf 'fixed\n' > "$S/stores/t1/pkg/fixed"
times0=$(stat -c '%y %z' "$S/stores/t1/pkg/fixed")
ln "$mb/.layoutd-store/pkg/fixed" "$mb/nm/fixed" || fail "ln of the fixed file from the store failed"
ln "$mb/.layoutd-store/pkg/big" "$mb/nm/big" || fail "ln from the store failed"
ln "$mb/.layoutd-store/pkg/small" "$mb/nm/small"
ln "$ma/.layoutd-store/pkg/big" "$ma/nm/big"
[ "$(ino "$mb/nm/big")" != "$(ino "$mb/.layoutd-store/pkg/big")" ] || fail "the link shares the store's inode"
[ "$(stat -c %h "$mb/.layoutd-store/pkg/big")" = 1 ] || fail "the store file's link count changed"
[ "$(stat -c %h "$mb/nm/big")" = 1 ] || fail "a clone's link count is not 1"
[ "$(stat -c %h "$S/stores/t1/pkg/big")" = 1 ] || fail "the backing store file was linked"
cmp -s "$WORK/big.src" "$mb/nm/big" || fail "the clone reads other bytes"
sync # the kernel writes the linked file's times back (writeback cache): not onto the store file
assert_eq "$times0" "$(stat -c '%y %z' "$S/stores/t1/pkg/fixed")" "the store file's times after a clone"
[ "$(stat -c %Y "$mb/nm/big")" = "$(stat -c %Y "$S/stores/t1/pkg/big")" ] || fail "the clone lost the mtime"
# A large file, or a small one written more than 30 s ago, shares the
# store file's extents; a small one just written is copied (a reflink
# would wait for its dirty pages to reach the disk).
printf 'settled\n' > "$S/stores/t1/pkg/old"
touch -d '-1 hour' "$S/stores/t1/pkg/old"
ln "$mb/.layoutd-store/pkg/old" "$mb/nm/old" || fail "ln of a settled small file failed"
if command -v filefrag >/dev/null 2>&1; then
    filefrag -v "$S/b/nm/big" | grep -q shared || fail "the clone does not share the store file's extents"
    filefrag -v "$S/b/nm/old" | grep -q shared || fail "the clone of a settled small file does not share its extents"
    filefrag -v "$S/b/nm/small" | grep -q shared && fail "a small file just written was reflinked"
fi
wait_for 5 stat_is b store_clones 4 || fail "b counted $(stat_get b store_clones) clones, not 4"
# A real tool: cp -al of a tree from the store.
mkdir -p "$ma/.layoutd-store/tree/d1/d2"
for k in $(seq 1 200); do printf 'file %s\n' "$k" > "$ma/.layoutd-store/tree/d1/d2/f$k"; done
cp -al "$mb/.layoutd-store/tree" "$mb/nm/tree" || fail "cp -al from the store failed"
diff -r "$mb/.layoutd-store/tree" "$mb/nm/tree" >/dev/null || fail "cp -al made another tree"
[ "$(find "$S/stores/t1/tree" -type f -links +1 | wc -l)" = 0 ] || fail "cp -al linked store files"
wait_for 5 stat_is b store_clones 204 || fail "b counted $(stat_get b store_clones) clones, not 204"
log "links from the store are clones: ok"

# ---- 4. an edit of a clone stays in its workspace ----
sum() { sha256sum < "$1" | cut -d' ' -f1; }
want=$(sum "$WORK/big.src")
printf 'appended' >> "$mb/nm/big"
dd if=/dev/zero of="$mb/nm/big" bs=1 count=10 seek=1000 conv=notrunc status=none
truncate -s 5 "$mb/nm/small"
chmod 0600 "$mb/nm/small"
printf 'over\n' > "$WORK/over"; cp "$WORK/over" "$mb/nm/over"; mv "$mb/nm/over" "$mb/nm/tree/d1/d2/f1"
sync
assert_eq "$want" "$(sum "$S/stores/t1/pkg/big")" "the store file after b's edits"
assert_eq "$want" "$(sum "$ma/.layoutd-store/pkg/big")" "the store through a after b's edits"
assert_eq "$want" "$(sum "$ma/nm/big")" "a's clone after b's edits"
assert_eq "small" "$(cat "$S/stores/t1/pkg/small")" "the small store file after b's truncate"
assert_eq "644" "$(stat -c %a "$S/stores/t1/pkg/small")" "the store file's mode after b's chmod"
assert_eq "file 1" "$(cat "$ma/.layoutd-store/tree/d1/d2/f1")" "the store file renamed over in b"
log "edits of clones stay in their workspace: ok"

# ---- 5. nothing crosses the store's edge by name ----
printf 'mine\n' > "$mb/mine"
assert_eq EXDEV "$(py_errno "os.link('$mb/mine', '$mb/.layoutd-store/mine')")" "link into the store"
assert_eq EXDEV "$(py_errno "os.rename('$mb/mine', '$mb/.layoutd-store/mine')")" "rename into the store"
assert_eq EXDEV "$(py_errno "os.rename('$mb/.layoutd-store/pkg/small', '$mb/small')")" "rename out of the store"
[ -e "$S/stores/t1/mine" ] && fail "a workspace file reached the store"
mv "$mb/mine" "$mb/.layoutd-store/mine" || fail "mv (a copy after EXDEV) into the store failed"
ln "$mb/.layoutd-store/pkg/small" "$mb/.layoutd-store/pkg/small2" || fail "a link inside the store failed"
[ "$(stat -c %h "$S/stores/t1/pkg/small")" = 2 ] || fail "a link inside the store is not a link"
assert_eq EEXIST "$(py_errno "os.mkdir('$mb/.layoutd-store')")" "mkdir of the store's name"
assert_eq EEXIST "$(py_errno "open('$mb/.layoutd-store', 'x')")" "create of the store's name"
assert_eq EBUSY "$(py_errno "os.rmdir('$mb/.layoutd-store')")" "rmdir of the store"
assert_eq EBUSY "$(py_errno "os.rename('$mb/.layoutd-store', '$mb/gone')")" "rename of the store"
assert_eq EBUSY "$(py_errno "os.rename('$mb/nm', '$mb/.layoutd-store')")" "rename over the store"
[ -d "$S/stores/t1/pkg" ] || fail "the store lost its contents"
log "nothing crosses the store's edge: ok"

# ---- 6. no clone of what the caller cannot read ----
printf 'secret\n' > "$ma/.layoutd-store/pkg/secret"
chmod 0600 "$ma/.layoutd-store/pkg/secret"
mkdir -m 0777 "$mb/open"
chmod 0755 "$mb/.layoutd-store" "$mb/.layoutd-store/pkg"
chmod o+x "$WORK" "$WORK/b"
# The kernel's own rule (fs.protected_hardlinks) would refuse first: off,
# so that the daemon's check is what is tried.
PH=/proc/sys/fs/protected_hardlinks
ph=$(cat "$PH")
on_cleanup "echo $ph > $PH"
echo 0 > "$PH"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups ln "$mb/.layoutd-store/pkg/secret" "$mb/open/secret" 2>&1) &&
    fail "nobody cloned a file it cannot read: $out"
has -i "cross-device" <<<"$out" || fail "the refused clone said: $out"
[ -e "$S/b/open/secret" ] && fail "a refused clone left a file"
setpriv --reuid=65534 --regid=65534 --clear-groups ln "$mb/.layoutd-store/pkg/small" "$mb/open/small" ||
    fail "nobody could not clone a file it can read"
assert_eq 65534 "$(stat -c %u "$S/b/open/small")" "the clone's owner"
echo "$ph" > "$PH"
log "no clone of an unreadable file: ok"

# ---- 7. restart, gc, fsck ----
wsfs_stop b "$PB"
wsfs_start b --state "$S/b" --store "$S/stores/t1" --commit=fdatasync
PB=$WSFS_PID
cmp -s "$WORK/big.src" "$mb/.layoutd-store/pkg/big" || fail "the store changed across b's restart"
assert_eq over "$(cat "$mb/nm/tree/d1/d2/f1")" "b's edit of its tree after the restart"
cmp -s "$WORK/big.src" "$ma/nm/big" || fail "a's clone changed across b's restart"
"$WSFS" gc --state-root "$S/a" --state-root "$S/b" --state-root "$S/c" --content "$WSFS_CONTENT" --grace 0 \
    >"$WORK/gc.log" 2>&1 || { cat "$WORK/gc.log" >&2; fail "gc failed"; }
"$WSFS" fsck --state-root "$S/a" --state-root "$S/b" --content "$WSFS_CONTENT" >"$WORK/fsck.log" 2>&1 ||
    { cat "$WORK/fsck.log" >&2; fail "fsck found stubs without objects"; }
cmp -s "$WORK/big.src" "$ma/nm/big" || fail "a's clone changed after gc"
log "restart, gc and fsck: ok"

# ---- 8. refused stores, and none ----
wsfs_stop c "$PC"
wsfs_mkvol other 64M ext4
mkdir -p "$WORK/d/mnt"
rc=0; "$WSFS" --state "$S/c" --store "$WORK/other/store" --content "$WSFS_CONTENT" "$WORK/d/mnt" 2>"$WORK/d.log" || rc=$?
[ "$rc" = 2 ] && grep -q "not on the filesystem" "$WORK/d.log" || { cat "$WORK/d.log" >&2; fail "a store on another filesystem was not refused ($rc)"; }
rc=0; "$WSFS" --state "$S/c" --store "$S/c/inner" --content "$WSFS_CONTENT" "$WORK/d/mnt" 2>"$WORK/d.log" || rc=$?
[ "$rc" = 2 ] && grep -q "one holds the other" "$WORK/d.log" || { cat "$WORK/d.log" >&2; fail "a store inside the state dir was not refused ($rc)"; }
LAYOUTD_STORE_DIR=$S/stores/t2 wsfs_start c --state "$S/c" --store off
[ -e "$mc/.layoutd-store" ] && fail "--store off still shows a store"
wsfs_stop c "$WSFS_PID"
LAYOUTD_STORE_DIR=$S/stores/t2 wsfs_start c --state "$S/c"
[ -d "$mc/.layoutd-store" ] || fail "LAYOUTD_STORE_DIR gave no store"
wsfs_stop c "$WSFS_PID"
wsfs_stop a "$PA"
wsfs_stop b "$PB"
log "PASS"
