#!/usr/bin/env bash
# What package managers and git do to a workspace, each checked for its
# result: copy_file_range and sendfile into the mount from another
# filesystem (and within it), FICLONE refused cleanly so callers fall
# back, a directory renamed while files in it are open (pnpm's
# pkg_tmp_NNN -> pkg), hard links and symlinks (a .pnpm-like layout),
# chmod +x and running the result, utimens, O_TMPFILE or its refusal,
# fsync of a directory, extended attributes (--xattrs) with our own
# namespace hidden, a non-root user's files, git clone/worktree/gc.
TEST_NAME=wsfs-pmops
# Run by hand, find the tests dir from here (never run without common.sh).
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd git
require_cmd setpriv

wsfs_start pm --xattrs --cas-threshold=64K
m=$WORK/pm/mnt
s=$WORK/pm/state
head -c 3000000 /dev/urandom > "$WORK/src.bin"  # on $WORK's fs: another filesystem
sum=$(sha256sum < "$WORK/src.bin" | cut -d' ' -f1)
same_sum() { assert_eq "$sum" "$(sha256sum < "$1" | cut -d' ' -f1)" "$2"; }

# copy_file_range from another filesystem: the kernel refuses across
# filesystems of different types (EXDEV) and callers fall back; either
# way the copy must be whole.
r=$($FSPROBE copy-range "$WORK/src.bin" "$m/cfr.bin")
log "copy_file_range in: $r"
[[ $r == "ok copy_file_range 3000000" || $r == "ok fallback-after-EXDEV 3000000" ]] || fail "copy_file_range into the mount: $r"
same_sum "$m/cfr.bin" "copy_file_range copy"
# ... and within the mount (FUSE_COPY_FILE_RANGE, served by the daemon)
r=$($FSPROBE copy-range "$m/cfr.bin" "$m/cfr2.bin")
[[ $r == "ok copy_file_range 3000000" ]] || fail "copy_file_range within the mount: $r"
same_sum "$m/cfr2.bin" "in-mount copy_file_range"
# sendfile into the mount
r=$($FSPROBE sendfile "$WORK/src.bin" "$m/sf.bin")
assert_eq "ok 3000000" "$r" "sendfile into the mount"
same_sum "$m/sf.bin" "sendfile copy"
# FICLONE: refused with EOPNOTSUPP or EXDEV (cp --reflink=auto falls back)
for src in "$WORK/src.bin" "$m/sf.bin"; do
    r=$($FSPROBE ficlone "$src" "$m/clone.bin")
    [[ $r == EOPNOTSUPP || $r == EXDEV ]] || fail "FICLONE from $src: '$r'"
done
cp --reflink=auto "$m/sf.bin" "$m/reflinked.bin" || fail "cp --reflink=auto"
same_sum "$m/reflinked.bin" "cp --reflink=auto"
kill -USR1 "$WSFS_PID"
wait_for 10 eval 'grep -q "\"copy_file_range\":" "$WORK/pm/stats.json"' || fail "no copy_file_range request counted"

# pnpm: files written into pkg_tmp_<pid>/, the directory renamed to its
# final name while files in it are still open, then finished.
mkdir -p "$m/node_modules/.pnpm"
/usr/bin/python3 - "$m/node_modules/.pnpm" <<'PY' || fail "rename with open files"
import os, sys
base = sys.argv[1]
tmp, final = os.path.join(base, "pkg_tmp_1234"), os.path.join(base, "lodash@4.17.21")
os.makedirs(os.path.join(tmp, "lib"))
w = os.open(os.path.join(tmp, "lib", "index.js"), os.O_WRONLY | os.O_CREAT, 0o644)
os.write(w, b"module.exports = 1;\n")
with open(os.path.join(tmp, "package.json"), "w") as f:
    f.write('{"name":"lodash"}\n')
r = os.open(os.path.join(tmp, "package.json"), os.O_RDONLY)
os.rename(tmp, final)                     # files open inside
os.write(w, b"// more after the rename\n")   # still writable
os.fsync(w)
os.close(w)
assert os.read(r, 100) == b'{"name":"lodash"}\n'
os.close(r)
with open(os.path.join(final, "lib", "index.js")) as f:
    assert f.read() == "module.exports = 1;\n// more after the rename\n"
assert not os.path.exists(tmp)
PY
# The dependency graph: relative symlinks between packages, a bin symlink
# made executable, hard links from a store.
p=$m/node_modules
mkdir -p "$p/.pnpm/lodash@4.17.21/node_modules" "$p/.bin" "$WORK/pm/mnt/store"
ln -s ../../lodash@4.17.21 "$p/.pnpm/lodash@4.17.21/node_modules/lodash"
ln -s .pnpm/lodash@4.17.21/node_modules/lodash "$p/lodash"
assert_eq "module.exports = 1;" "$(head -n1 "$p/lodash/lib/index.js")" "through two symlinks"
printf '#!/bin/sh\necho hello from a bin\n' > "$p/.pnpm/lodash@4.17.21/cli.sh"
chmod +x "$p/.pnpm/lodash@4.17.21/cli.sh"
ln -s ../.pnpm/lodash@4.17.21/cli.sh "$p/.bin/lodash"
assert_eq 755 "$(stat -c %a "$s/node_modules/.pnpm/lodash@4.17.21/cli.sh")" "chmod +x on the backing file"
assert_eq "hello from a bin" "$("$p/.bin/lodash")" "run a bin through a symlink"
printf 'shared\n' > "$m/store/blob"
for i in 1 2 3; do ln "$m/store/blob" "$p/.pnpm/lodash@4.17.21/copy$i"; done
assert_eq 4 "$(stat -c %h "$m/store/blob")" "hard links"
assert_eq "$(stat -c %i "$m/store/blob")" "$(stat -c %i "$p/.pnpm/lodash@4.17.21/copy3")" "hard link inode"
rm "$m/store/blob"
assert_eq shared "$(cat "$p/.pnpm/lodash@4.17.21/copy1")" "a link left after rm"
# A large file hard-linked, stored in the pool, read through every name.
cp "$WORK/src.bin" "$m/store/big"
ln "$m/store/big" "$m/store/big2"
wait_for 10 eval '[ "$(stat_get pm stubs_punched)" -ge 1 ]' || fail "the large file did not become a stub: $(cat "$WORK/pm/stats.json")"
same_sum "$m/store/big2" "a stub through its second name"

# utimens: explicit times (ns), and touch -m
r=$($FSPROBE utime "$m/cfr.bin" 1234567890123456789)
assert_eq ok "$r" "utimensat"
assert_eq 1234567890 "$(stat -c %Y "$m/cfr.bin")" "mtime through the mount"
assert_eq 1234567890 "$(stat -c %Y "$s/cfr.bin")" "mtime on the backing file"
touch -m -d '2020-01-01 00:00:00 UTC' "$m/sf.bin"
assert_eq 1577836800 "$(stat -c %Y "$m/sf.bin")" "touch -m"

# O_TMPFILE: works, or is refused with EOPNOTSUPP (then callers use a
# named temporary file)
r=$($FSPROBE tmpfile "$m" "$m/from-tmpfile")
log "O_TMPFILE: $r"
case $r in
    "ok linked") assert_eq tmpfile "$(cat "$m/from-tmpfile")" "O_TMPFILE content" ;;
    EOPNOTSUPP|EISDIR) ;;
    *) fail "O_TMPFILE: '$r'" ;;
esac

# fsync of a directory (git and package managers do it after renames)
before=$(stat_get pm app_fsyncs)
assert_eq ok "$($FSPROBE fsync-dir "$p")" "fsync of a directory"
kill -USR1 "$WSFS_PID"
wait_for 10 eval '[ "$(stat_get pm app_fsyncs)" -gt "$before" ]' || fail "directory fsync not honoured"

# Extended attributes, with our own namespace hidden and protected
assert_eq ok "$($FSPROBE setxattr "$m/sf.bin" user.mime 5)" "setxattr"
assert_eq "ok vvvvv" "$($FSPROBE getxattr "$m/sf.bin" user.mime)" "getxattr"
assert_eq ok "$($FSPROBE setxattr "$m/store/big" user.note 3)" "setxattr on a stub"
assert_eq "ok user.note" "$($FSPROBE listxattr "$m/store/big")" "listxattr hides user.wsfs.cas"
assert_eq ENODATA "$($FSPROBE getxattr "$m/store/big" user.wsfs.cas)" "our xattr is not shown"
assert_eq EPERM "$($FSPROBE setxattr "$m/sf.bin" user.wsfs.cas 64)" "our xattr cannot be set"
same_sum "$m/store/big" "the stub is still whole"

# A non-root user's files: created with its ids (owner, group, a setgid
# directory's group), readable and writable by it.
chmod 755 "$WORK" "$WORK/pm"  # nobody must reach the mount point
mkdir "$m/home"
chown nobody:nogroup "$m/home"
mkdir "$m/shared"; chgrp daemon "$m/shared"; chmod 2777 "$m/shared"
AS="setpriv --reuid=65534 --regid=65534 --clear-groups --"
$AS sh -c "echo mine > '$m/home/f' && mkdir '$m/home/d' && ln -s f '$m/home/l' && echo g > '$m/shared/g'" || fail "nobody's creates"
assert_eq "nobody:nogroup" "$(stat -c %U:%G "$s/home/f")" "owner of nobody's file"
assert_eq "nobody:nogroup" "$(stat -c %U:%G "$s/home/d")" "owner of nobody's dir"
assert_eq "nobody" "$(stat -c %U "$s/home/l")" "owner of nobody's symlink"
assert_eq "nobody:daemon" "$(stat -c %U:%G "$s/shared/g")" "a setgid directory's group"
assert_eq mine "$($AS cat "$m/home/f")" "nobody reads its file"

# git: clone, worktree, gc, fsck, status, all inside the mount
g=$m/repo
git init -q "$g"
git -C "$g" config user.email t@example.com; git -C "$g" config user.name t
for i in $(seq 1 200); do printf 'line %d\n' "$i" > "$g/f$i.txt"; done
cp "$WORK/src.bin" "$g/blob.bin"
git -C "$g" add -A && git -C "$g" commit -q -m one
for i in $(seq 1 20); do printf 'more %d\n' "$i" >> "$g/f$i.txt"; git -C "$g" commit -q -am "c$i"; done
git clone -q --no-local "$g" "$m/clone" || fail "git clone --no-local"
git -C "$m/clone" worktree add -q "$m/wt" -b side || fail "git worktree add"
printf 'side\n' > "$m/wt/side.txt"
git -C "$m/wt" add side.txt && git -C "$m/wt" -c user.email=t@e -c user.name=t commit -q -m side
git -C "$m/clone" gc -q --prune=now || fail "git gc"
git -C "$m/clone" fsck --strict --no-progress 2>/dev/null || fail "git fsck after gc"
[ -z "$(git -C "$m/clone" status --porcelain)" ] || fail "git status in the clone"
assert_eq 21 "$(git -C "$m/clone" rev-list --count HEAD)" "commits in the clone"
# The workloads' git task (clone, status, grep, worktree, commit, gc,
# fsck): files it deleted still have cached times that the kernel writes
# back at syncfs, which must not fail the syncfs (it did, with ESTALE,
# from the daemon's setattr on a vanished inode).
LAYOUTD_BUILD_DIR=${LAYOUTD_BUILD_DIR:-} /usr/bin/python3 "$LAYOUTD_TESTS/workloads/tasks.py" run git --profile small \
    "$m" >/dev/null || fail "the git workload in the mount"
sync -f "$m" || fail "syncfs of the mount after the git workload"
cmp "$WORK/src.bin" "$m/wt/blob.bin" || fail "the worktree's blob"

wsfs_stop pm "$WSFS_PID"
# All of it again after a restart (nothing but the state dir survives).
wsfs_start pm --xattrs
same_sum "$m/store/big2" "stub after restart"
assert_eq "hello from a bin" "$("$m/node_modules/.bin/lodash")" "bin after restart"
git -C "$m/clone" fsck --strict --no-progress 2>/dev/null || fail "git fsck after restart"
assert_eq "ok vvvvv" "$($FSPROBE getxattr "$m/sf.bin" user.mime)" "xattr after restart"
wsfs_stop pm "$WSFS_PID"

# Without --xattrs the mount answers EOPNOTSUPP, honestly.
wsfs_start plain
m=$WORK/plain/mnt
echo x > "$m/f"
assert_eq EOPNOTSUPP "$($FSPROBE setxattr "$m/f" user.x 1)" "setxattr without --xattrs"
wsfs_stop plain "$WSFS_PID"
log "ok"
