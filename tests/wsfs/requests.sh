#!/usr/bin/env bash
# Fewer FUSE requests per file (issue 20, direction 2): each cut does what
# it says, the kernel still sees every change made through the mount, and
# each option turns its cut off again. Counts come from the daemon's own
# per-opcode counters (ops.lookup, ops.flush, ops.readlink).
TEST_NAME=wsfs-requests
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/wsfs/lib.sh"

# ops NAME KEY: a request counter, read right after a SIGUSR1 (the line
# the daemon prints to its log; the stats file may lag).
ops() {
    local name=$1 key=$2 n
    n=$(grep -c '^layoutd-wsfs: stats ' "$WORK/$name/log" || true)
    kill -USR1 "$(cat "$WORK/$name/pid")"
    wait_for 10 _stats_after "$name" "$n" || fail "$name printed no counters after SIGUSR1"
    grep '^layoutd-wsfs: stats ' "$WORK/$name/log" | tail -n 1 | sed -n "s/.*\"ops\":{[^}]*\"$key\":\([0-9]*\).*/\1/p" |
        grep . || echo 0
}
_stats_after() { [ "$(grep -c '^layoutd-wsfs: stats ' "$WORK/$1/log" || true)" -gt "$2" ]; }

start() { # NAME [options...]
    wsfs_start "$@"
    echo "$WSFS_PID" >"$WORK/$1/pid"
}

# --- defaults: the cuts on ---------------------------------------------------
start on
m=$WORK/on/mnt
grep -q "negative-entries=on flush=off cache-symlinks=on parallel-dirops=on keep-cache=on cache-dirs=on readdirplus=auto" \
    "$WORK/on/log" || fail "the defaults are not in the banner: $(cat "$WORK/on/log")"

# A failed lookup is cached: the second stat of a missing name asks nothing.
l0=$(ops on lookup)
! stat "$m/missing" 2>/dev/null || fail "missing exists"
l1=$(ops on lookup)
! stat "$m/missing" 2>/dev/null || fail "missing exists"
! stat "$m/missing" 2>/dev/null || fail "missing exists"
l2=$(ops on lookup)
[ "$l1" -gt "$l0" ] || fail "the first stat of a missing name sent no LOOKUP ($l0 -> $l1)"
assert_eq "$l1" "$l2" "LOOKUPs for a missing name already looked up (negative entry cached)"

# ... and the kernel drops it when the name is made through the mount, by
# each kind of creation.
echo data >"$m/missing"
assert_eq data "$(cat "$m/missing")" "a file made over a cached negative entry"
! stat "$m/d" 2>/dev/null && mkdir "$m/d" && [ -d "$m/d" ] || fail "mkdir over a negative entry"
! stat "$m/l" 2>/dev/null && ln -s missing "$m/l" && assert_eq data "$(cat "$m/l")" "symlink over a negative entry"
! stat "$m/h" 2>/dev/null && ln "$m/missing" "$m/h" && assert_eq data "$(cat "$m/h")" "link over a negative entry"
echo x >"$m/src"
! stat "$m/dst" 2>/dev/null && mv "$m/src" "$m/dst" && assert_eq x "$(cat "$m/dst")" "rename over a negative entry"
! stat "$m/src" 2>/dev/null || fail "src still there after its rename"
rm "$m/dst"
! stat "$m/dst" 2>/dev/null || fail "dst still there after its unlink"
echo y >"$m/dst"
assert_eq y "$(cat "$m/dst")" "a name made again after its unlink"

# FLUSH: answered ENOSYS once, then the kernel sends no more.
for i in 1 2 3 4 5; do echo "$i" >"$m/f$i"; done
f=$(ops on flush)
[ "$f" -le 1 ] || fail "FLUSH was sent $f times with --flush=off (at most the one answered ENOSYS)"
for i in 1 2 3 4 5; do assert_eq "$i" "$(cat "$m/f$i")" "f$i read back"; done

# Symlink targets are cached: a second readlink asks nothing.
ln -s f1 "$m/sl"
readlink "$m/sl" >/dev/null
r1=$(ops on readlink)
readlink "$m/sl" >/dev/null
readlink "$m/sl" >/dev/null
r2=$(ops on readlink)
assert_eq "$r1" "$r2" "READLINKs of a symlink read before (FUSE_CAP_CACHE_SYMLINKS)"
assert_eq f1 "$(readlink "$m/sl")" "symlink target"
# A directory's listing is kept across opens: a second listing of an
# unchanged directory reads nothing from the daemon ...
mkdir "$m/ls"
for i in 1 2 3 4 5 6; do echo "$i" >"$m/ls/e$i"; done
ls_dir() { (cd "$m/ls" && ls -f | grep -v '^\.\.\?$' | sort | tr '\n' ' '); }
readdirs() { echo $(($(ops on readdir) + $(ops on readdirplus))); }
assert_eq "e1 e2 e3 e4 e5 e6 " "$(ls_dir)" "the first listing"
d1=$(readdirs)
assert_eq "e1 e2 e3 e4 e5 e6 " "$(ls_dir)" "the second listing"
assert_eq "e1 e2 e3 e4 e5 e6 " "$(ls_dir)" "the third listing"
d2=$(readdirs)
assert_eq "$d1" "$d2" "READDIR(PLUS)es for listings of an unchanged directory (--cache-dirs)"
# ... and every change made through the mount shows in the next one.
echo 7 >"$m/ls/e7"
assert_eq "e1 e2 e3 e4 e5 e6 e7 " "$(ls_dir)" "the listing after a create"
rm "$m/ls/e1"
assert_eq "e2 e3 e4 e5 e6 e7 " "$(ls_dir)" "the listing after an unlink"
mv "$m/ls/e2" "$m/ls/r2"
assert_eq "e3 e4 e5 e6 e7 r2 " "$(ls_dir)" "the listing after a rename within"
mv "$m/ls/e3" "$m/d/"
assert_eq "e4 e5 e6 e7 r2 " "$(ls_dir)" "the listing after a rename out"
mv "$m/d/e3" "$m/ls/in"
assert_eq "e4 e5 e6 e7 in r2 " "$(ls_dir)" "the listing after a rename in"
ln "$m/ls/e4" "$m/ls/h4" && ln -s e5 "$m/ls/s5" && mkdir "$m/ls/sub"
assert_eq "e4 e5 e6 e7 h4 in r2 s5 sub " "$(ls_dir)" "the listing after link, symlink, mkdir"
rmdir "$m/ls/sub"
assert_eq "e4 e5 e6 e7 h4 in r2 s5 " "$(ls_dir)" "the listing after rmdir"
[ "$(readdirs)" -gt "$d2" ] || fail "no directory was read again after its changes"
wsfs_stop on "$(cat "$WORK/on/pid")"

# The state dir holds what was made (nothing was only in the kernel's cache).
for f in missing h dst f1 f5; do [ -f "$WORK/on/state/$f" ] || fail "$f not in the state dir"; done
[ -d "$WORK/on/state/d" ] && [ -L "$WORK/on/state/l" ] || fail "d or l not in the state dir"

# --- each option turns its cut off -------------------------------------------
start off --negative-entries=off --flush=on --cache-symlinks=off --cache-dirs=off
m=$WORK/off/mnt
! stat "$m/missing" 2>/dev/null || fail "missing exists"
l1=$(ops off lookup)
! stat "$m/missing" 2>/dev/null || fail "missing exists"
l2=$(ops off lookup)
[ "$l2" -gt "$l1" ] || fail "--negative-entries=off: no LOOKUP for a name that was missing ($l1 -> $l2)"
for i in 1 2 3; do echo "$i" >"$m/f$i"; done
f=$(ops off flush)
[ "$f" -ge 3 ] || fail "--flush=on: $f FLUSHes for 3 closes"
ln -s f1 "$m/sl"
readlink "$m/sl" >/dev/null
r1=$(ops off readlink)
readlink "$m/sl" >/dev/null
r2=$(ops off readlink)
[ "$r2" -gt "$r1" ] || fail "--cache-symlinks=off: the second readlink asked nothing ($r1 -> $r2)"
ls "$m" >/dev/null
d1=$(($(ops off readdir) + $(ops off readdirplus)))
ls "$m" >/dev/null
d2=$(($(ops off readdir) + $(ops off readdirplus)))
[ "$d2" -gt "$d1" ] || fail "--cache-dirs=off: the second listing read nothing ($d1 -> $d2)"
wsfs_stop off "$(cat "$WORK/off/pid")"

# The published profile keeps the published engine's behaviour.
start pub --profile=published
grep -q "negative-entries=off flush=on cache-symlinks=off parallel-dirops=on keep-cache=off cache-dirs=off" "$WORK/pub/log" ||
    fail "the published profile's request options: $(cat "$WORK/pub/log")"
wsfs_stop pub "$(cat "$WORK/pub/pid")"

# Bad values are refused before anything is mounted.
mkdir -p "$WORK/bad/state" "$WORK/bad/mnt"
for o in --negative-entries=maybe --flush=2 --cache-symlinks= --keep-cache=x --cache-dirs=1x --parallel-dirops=y --readdirplus=some --io-uring=maybe; do
    rc=0
    "$WSFS" --state "$WORK/bad/state" --content "$WORK/content" "$o" "$WORK/bad/mnt" >"$WORK/bad/out" 2>&1 || rc=$?
    assert_eq 2 "$rc" "exit status for $o"
    grep -q -- "${o%%=*}" "$WORK/bad/out" || fail "$o: the message does not name the option: $(cat "$WORK/bad/out")"
done
log "ok"
