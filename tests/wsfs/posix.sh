#!/usr/bin/env bash
# POSIX behaviour of a layoutd-wsfs mount on a small tree, with the
# single-threaded loop (default) or the multi-threaded one (THREADS=N),
# and a real git repository and tar round trip inside the mount.
# URING=1: the same over FUSE's io_uring transport (--io-uring=on): the
# kernel's enable_uring is turned on for the test and put back after, and
# the daemons must have served requests through their rings.
TEST_NAME=wsfs-posix-t${THREADS:-1}${URING:+-uring}
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"
require_cmd git
require_cmd tar
extra=()
if [ "${URING:-}" = 1 ]; then
    param=/sys/module/fuse/parameters/enable_uring
    [ -w "$param" ] || skip "this kernel has no FUSE over io_uring ($param)"
    uring_was=$(cat "$param")
    restore_uring() { echo "$uring_was" > "$param"; }
    on_cleanup restore_uring
    echo Y > "$param"
    extra=(--io-uring=on)
fi
# ring_served NAME: after a stop, the daemon served requests through its rings.
ring_served() {
    [ "${URING:-}" = 1 ] || return 0
    local n
    n=$(sed -n 's/.*io_uring: \([0-9]*\) requests came through the rings.*/\1/p' "$WORK/$1/log")
    [ -n "$n" ] && [ "$n" -gt 0 ] || { cat "$WORK/$1/log" >&2; fail "$1: no request came through the io_uring rings"; }
    log "$1: $n requests came through the io_uring rings"
}

wsfs_start ws --threads="${THREADS:-1}" "${extra[@]}"
m=$WORK/ws/mnt
s=$WORK/ws/state

# create, write, read back; the bytes land in the state dir
printf 'hello\n' > "$m/a"
assert_eq hello "$(cat "$m/a")" "read back"
assert_eq hello "$(cat "$s/a")" "backing file"
printf 'more\n' >> "$m/a"
assert_eq 2 "$(wc -l < "$m/a")" "append"

# rename over an existing file
printf 'new\n' > "$m/b"
mv "$m/b" "$m/a"
assert_eq new "$(cat "$m/a")" "rename over existing"
[ ! -e "$m/b" ] || fail "rename left the source"

# unlink an open file: still readable and writable through the fd
printf 'still here\n' > "$m/open"
exec 7<>"$m/open"
rm "$m/open"
[ ! -e "$m/open" ] || fail "unlinked file still visible"
assert_eq "still here" "$(cat /proc/self/fd/7 2>/dev/null || head -n1 <&7)" "read unlinked open file"
exec 7>&-

# mkdir, rmdir, nested dirs, non-empty rmdir fails
mkdir -p "$m/d1/d2/d3"
touch "$m/d1/d2/d3/f"
! rmdir "$m/d1/d2/d3" 2>/dev/null || fail "rmdir of a non-empty dir succeeded"
rm "$m/d1/d2/d3/f"; rmdir "$m/d1/d2/d3"
[ ! -e "$m/d1/d2/d3" ] || fail "rmdir"
assert_eq "d2" "$(ls "$m/d1")" "readdir"

# symlink, readlink
ln -s a "$m/link"
assert_eq a "$(readlink "$m/link")" "readlink"
assert_eq new "$(cat "$m/link")" "read through symlink"

# truncate (shrink and grow)
printf '0123456789' > "$m/t"
truncate -s 4 "$m/t"; assert_eq 0123 "$(cat "$m/t")" "truncate shrink"
truncate -s 100 "$m/t"; assert_eq 100 "$(stat -c %s "$m/t")" "truncate grow"

# chmod, utimens, ownership of new files
chmod 0640 "$m/t"; assert_eq 640 "$(stat -c %a "$m/t")" "chmod"
touch -m -d '2001-02-03 04:05:06 UTC' "$m/t"
assert_eq 981173106 "$(stat -c %Y "$m/t")" "utimens"
assert_eq 981173106 "$(stat -c %Y "$s/t")" "utimens on the backing file"

# hard links share the inode
ln "$m/t" "$m/t2"
assert_eq 2 "$(stat -c %h "$m/t")" "link count"
assert_eq "$(stat -c %i "$m/t")" "$(stat -c %i "$m/t2")" "hard link inode"
printf 'x' >> "$m/t2"; assert_eq 101 "$(stat -c %s "$m/t")" "write via hard link"
rm "$m/t2"; assert_eq 1 "$(stat -c %h "$m/t")" "unlink of one link"

# a big file, checksummed (also goes through CAS: over the threshold)
head -c $((64 * 1024 * 1024)) /dev/urandom > "$WORK/big.src"
cp "$WORK/big.src" "$m/big"
assert_eq "$(sha256sum < "$WORK/big.src")" "$(sha256sum < "$m/big")" "64 MiB file"

# statfs reflects the state dir's filesystem
assert_eq "$(stat -f -c %b "$s")" "$(stat -f -c %b "$m")" "statfs blocks"

# git: init, add, commit, status, log inside the mount
g=$m/repo
mkdir "$g"
git -C "$g" init -q
git -C "$g" config user.email t@example.com
git -C "$g" config user.name t
for i in $(seq 1 50); do printf 'line %d\n' "$i" > "$g/file$i.txt"; done
mkdir "$g/sub"; cp "$WORK/big.src" "$g/sub/blob.bin"
git -C "$g" add -A
git -C "$g" commit -q -m first
printf 'changed\n' >> "$g/file1.txt"
git -C "$g" commit -q -am second
assert_eq 2 "$(git -C "$g" rev-list --count HEAD)" "git commits"
[ -z "$(git -C "$g" status --porcelain)" ] || fail "git status not clean: $(git -C "$g" status --porcelain)"
git -C "$g" fsck --strict --no-progress 2>/dev/null || fail "git fsck"
git clone -q "$g" "$m/clone"
cmp "$g/sub/blob.bin" "$m/clone/sub/blob.bin" || fail "git clone content"

# tar: extract a real directory tree into the mount and compare
src=/usr/share/doc
tar -C "$src" -cf "$WORK/doc.tar" .
mkdir "$m/doc"
tar -C "$m/doc" -xf "$WORK/doc.tar"
diff -r --no-dereference "$src" "$m/doc" || fail "tar round trip differs"

wsfs_stop ws "$WSFS_PID"
ring_served ws
# Everything is still there in the state dir, served again by a new daemon.
wsfs_start ws --threads="${THREADS:-1}" "${extra[@]}"
assert_eq new "$(cat "$m/a")" "after remount"
assert_eq "$(sha256sum < "$WORK/big.src")" "$(sha256sum < "$m/big")" "big after remount"
[ -z "$(git -C "$g" status --porcelain)" ] || fail "git status after remount"
wsfs_stop ws "$WSFS_PID"
ring_served ws
log "ok"
