#!/usr/bin/env bash
# The chaos suite (issue "Nothing lost, nothing crashed"): the real agent
# and its daemons under a seeded schedule of faults, with real workloads
# running in three workspaces, and the invariants checked after every
# fault and at the end.
#
#   tests/chaos/chaos.sh [--seed N] [--duration SEC] [--results FILE]
#
# Profiles: the CI smoke is `--duration 300` with the fixed default seed
# (a run goes on past its duration until every fault kind ran once),
# run by tests/run on the ASan+UBSan build (LAYOUTD_BUILD_DIR=build-asan);
# the soak is `--duration 3600` (docs/reliability.md). The seed fixes the
# order of the faults (a shuffle: every kind once before any repeats) and
# of the writers' operations; which file an operation picks and all
# timing still vary from run to run.
#
# Workloads, one writer per workspace, each in <mount>/data (a directory
# that exists only inside the FUSE mount: while a daemon is down, a writer
# gets ENOENT instead of writing into the bare mountpoint on the host):
#   - files written, fsynced and renamed into place (the directory
#     fsynced: what a writer does that wants the name to survive a crash,
#     which the xfs-shutdown fault is), identical across
#     workspaces (deduplicated in the pool) or distinct, 1 byte to 2.5 MiB,
#     sizes that are and are not multiples of 4 KiB;
#   - files rewritten in place (a stub's copy-up), renamed, deleted;
#   - in c1, a clone of this repository with commits made on it;
#   - c3 writes into its cache (workspace.cache: <mount>/.layoutd-cache,
#     native storage on its state volume, mounted again after every
#     daemon start): what survives a fault there survives it natively;
#   - the content pool swept every minute at the shortest grace (1 min).
# Faults, one per round, drawn from the seed:
#   agent-kill9, agent-term, agent-int (each followed by a restart, the
#   way systemd restarts the unit), daemon-kill9, sweeper-kill9 (a sweep
#   started and its child killed), teardown (SIGINT, then teardown
#   --destroy-data and plain teardown must both refuse, and change
#   nothing, while workspaces are recorded), content-ro (the content volume
#   remounted read-only for a while), fill (a workspace fills its state
#   volume, which grows, then empties it), image-moved (a state volume's
#   backing image moved away while the agent is stopped: its workspaces
#   must be held, not started on a bare directory; then put back),
#   content-shutdown (the same for the content volume: stubs read EIO
#   meanwhile, never zeros, and everything verifies after the restart),
#   xfs-shutdown (a state volume shut down as on an I/O error: the problem
#   must show in /v1/status; the agent is restarted and the volume's log
#   replays), host-full (the host filesystem under the backing images
#   fills up: the agent must report it, nothing fsynced may be lost, and
#   everything serves again once the space is back), api-churn (a dozen
#   creates at once with restarts and an export among them, then the new
#   workspaces removed at once: refusals only for want of room, the bound
#   held, nothing left behind), hostile-archives (a corpus of malicious
#   exports imported: each refused, nothing read or written outside the
#   workspace, no workspace left). The root of the run
#   is its own small ext4 (a loop device) so that this fault fills that,
#   never the machine's filesystem.
# Invariants after each fault (writers paused):
#   - every file in each writer's manifest matches its sha256 after
#     drop_caches (a file that reads as zeros does not match);
#   - c1's repository passes git fsck;
#   - the agent is alive (it crashed if it is not: the run fails);
#   - every workspace answers a write and a read-back;
#   - the record matches the machine: as many loop devices as loop
#     volumes up, one FUSE mount, one cache mount and one daemon per
#     running workspace.
# At the end: the workspaces removed, the agent stopped and teardown
# --destroy-data run: nothing is left
# (no mount, loop device or daemon of this run), and no sanitizer report.
TEST_NAME=chaos
: "${LAYOUTD_TESTS:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
. "$LAYOUTD_TESTS/lib/common.sh"
. "$LAYOUTD_TESTS/agent/lib-agent.sh"
require_root; require_loop; require_fuse
require_cmd curl; require_cmd mkfs.xfs; require_cmd xfs_io; require_cmd git
[ -x "$PY" ] || skip "needs /usr/bin/python3"

SEED=20261202
DURATION=300
RESULTS=
while [ $# -gt 0 ]; do
    case $1 in
        --seed) SEED=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --results) RESULTS=$2; shift 2 ;;
        *) fail "usage: chaos.sh [--seed N] [--duration SEC] [--results FILE]" ;;
    esac
done
RANDOM=$SEED
WSS="c1 c2 c3"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=0}:log_path=$WORK/sanitizer/asan"
export UBSAN_OPTIONS="print_stacktrace=1:log_path=$WORK/sanitizer/ubsan"
mkdir -p "$WORK/sanitizer"
log "seed $SEED, $DURATION s, binaries of $LAYOUTD_BUILD_DIR"

# ---- the host filesystem under the images (see host-full): 8 GiB,
# sparse, no root reserve (root here lacks CAP_SYS_RESOURCE anyway). The
# teardown of common.sh unmounts it if the run fails.
truncate -s 8G "$WORK/host.img"
mkfs.ext4 -q -m 0 "$WORK/host.img" || fail "mkfs.ext4 of the host filesystem"
mkdir -p "$WORK/root"
mount -o loop "$WORK/host.img" "$WORK/root" || fail "mount the host filesystem"

L=$WORK/layout.yaml
cat >"$L" <<YAML
version: 1
root: $WORK/root
pools:
  state:
    backend: loop-xfs
    volume_size: 320MiB
    min_volumes: 1
    max_volumes: 4
    workspaces_per_volume: 2
    workspace_reserve: 8MiB
    direct_io: true
    growth: {threshold: 60%, max_size: 1GiB, host_reserve: 2GiB}
  content:
    backend: loop-xfs
    volume_size: 320MiB
    shards: 1
    direct_io: true
    growth: {threshold: 60%, max_size: 2GiB, host_reserve: 2GiB}
    gc: {interval: 1min, grace: 1min}
workspace:
  mount_root: $WORK/mnt
  command: [$WSFS, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
  restart: on-failure
  backoff: {initial: 200ms, max: 2s, reset_after: 10s}
  ready_timeout: 30s
  stop_timeout: 10s
  cache: true
  # The supervisor starts daemons with a clean environment: the ASan
  # build's daemons get their sanitizer options (and report files) here,
  # the leak check included (it found op_opendir's handles left at exit).
  environment: {ASAN_OPTIONS: "$ASAN_OPTIONS", UBSAN_OPTIONS: "$UBSAN_OPTIONS"}
api:
  socket: $SOCK
  group: layoutd-no-such-group
  flush_probe_interval: 1s
YAML

# ---- counters (the report) ----
declare -A FAULTS=()
VERIFIED=0 ROUNDS=0
count_fault() { FAULTS[$1]=$((${FAULTS[$1]:-0} + 1)); }

ws_state() { jget "$(api GET "/v1/workspaces/$1")" "d['daemon']['state']" 2>/dev/null; }
# Where writer W works: c3 in its cache, the others in their FUSE mounts.
data_dir() { if [ "$1" = c3 ]; then echo "$WORK/mnt/c3/.layoutd-cache/data"; else echo "$WORK/mnt/$1/data"; fi; }
all_running() {
    local w
    for w in $WSS; do [ "$(ws_state "$w")" = running ] || return 1; done
    # once set up, a running workspace shows its files (its daemon serves)
    [ ! -e "$WORK/set-up" ] || { [ -d "$(data_dir c1)" ] && [ -d "$(data_dir c2)" ] && [ -d "$(data_dir c3)" ]; }
}
agent_ready() { [ "$(jget "$(api GET /v1/status)" "d['state']" 2>/dev/null)" = ready ]; }
recover() {
    wait_for 120 agent_ready || { tail -40 "$AGENT_LOG"; fail "after $1: the agent is not ready"; }
    wait_for 120 all_running || { tail -40 "$AGENT_LOG"; fail "after $1: workspaces not running: $(api GET /v1/workspaces)"; }
}
restart_agent() { start_agent "$L"; }
# agent_gone SIGNAL: the agent stopped by the driver, the way systemd would.
agent_gone() {
    kill "-$1" "$AGENT_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 900); do kill -0 "$AGENT_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$AGENT_PID" 2>/dev/null && fail "the agent did not exit after SIG$1"
    wait "$AGENT_PID" 2>/dev/null || true
    # untracked: after hundreds of restarts the teardown must not SIGKILL
    # pids the system has given to someone else since
    _tracked_pids=("${_tracked_pids[@]/#%$AGENT_PID/}")
    AGENT_PID=
}

# ---- sources: shared contents (identical in every workspace) ----
mkdir -p "$WORK/src"
sizes=(1024 70000 100000 262144 300001 1048576 2621440 4096)
for k in "${!sizes[@]}"; do
    head -c "${sizes[$k]}" /dev/urandom >"$WORK/src/s$k"
    sha256sum <"$WORK/src/s$k" | cut -d' ' -f1 >"$WORK/src/s$k.sha"
done

# ---- the writers ----
# writer W SEED: runs until $WORK/stop exists; between operations it
# honours $WORK/pause (and says so in $WORK/paused.W). Its manifest
# ($WORK/man.W, "SHA NAME" lines) lists the files whose last operation
# succeeded: written, fsynced and renamed; a failed operation (its daemon
# was down) drops the files it touched, whose state is then unknown.
writer() {
    local w=$1 d man=$WORK/man.$1 errs=$WORK/errs.$1 n=0 op f g src sha size
    RANDOM=$2
    d=$(data_dir "$w")
    : >"$man"; : >"$errs"
    drop() { grep -v " $1\$" "$man" >"$man.new" || true; mv "$man.new" "$man"; }
    err() { echo "$1: $(tail -1 "$WORK/err.$w" 2>/dev/null)" >>"$errs"; sleep 0.3; }
    pick() { [ -s "$man" ] && shuf -n 1 --random-source=<(yes "$RANDOM") "$man" | cut -d' ' -f2; }
    while [ ! -e "$WORK/stop" ]; do
        if [ -e "$WORK/pause" ]; then touch "$WORK/paused.$w"; sleep 0.05; continue; fi
        n=$((n + 1))
        op=$((RANDOM % 20))
        # at most ~150 files per workspace: past it, new files become deletes
        [ "$op" -ge 9 ] || [ "$(wc -l <"$man")" -lt 150 ] || op=15
        if [ "$op" -lt 9 ] || [ ! -s "$man" ]; then
            # a new file: shared content (deduplicated) or distinct
            if [ $((RANDOM % 2)) = 0 ]; then
                src=$WORK/src/s$((RANDOM % ${#sizes[@]})); sha=$(cat "$src.sha")
            else
                size=$(( (RANDOM * 32768 + RANDOM) % 1500000 + 1 ))
                src=$WORK/tmp.$w; head -c "$size" /dev/urandom >"$src"; sha=$(sha256sum <"$src" | cut -d' ' -f1)
            fi
            f=f$n
            if cp "$src" "$d/.new.$n" 2>"$WORK/err.$w" && sync "$d/.new.$n" 2>>"$WORK/err.$w" &&
                mv "$d/.new.$n" "$d/$f" 2>>"$WORK/err.$w" && sync "$d" 2>>"$WORK/err.$w"; then
                echo "$sha $f" >>"$man"
            else
                err new; rm -f "$d/.new.$n" 2>/dev/null || true
            fi
        elif [ "$op" -lt 12 ]; then
            # rewritten in place (a stub is copied up)
            f=$(pick); src=$WORK/src/s$((RANDOM % ${#sizes[@]})); sha=$(cat "$src.sha")
            drop "$f"
            if { cat "$src" >"$d/$f"; } 2>"$WORK/err.$w" && sync "$d/$f" 2>>"$WORK/err.$w"; then
                echo "$sha $f" >>"$man"
            else err rewrite; fi
        elif [ "$op" -lt 14 ]; then
            f=$(pick); g=r$n; sha=$(grep " $f\$" "$man" | head -1 | cut -d' ' -f1)
            drop "$f"
            if mv "$d/$f" "$d/$g" 2>"$WORK/err.$w" && sync "$d" 2>>"$WORK/err.$w"; then echo "$sha $g" >>"$man"; else err rename; fi
        elif [ "$op" -lt 17 ]; then
            f=$(pick); drop "$f"
            rm "$d/$f" 2>"$WORK/err.$w" || err delete
        elif [ "$w" = c1 ]; then
            # a commit in the clone; a failed one may leave index.lock or a
            # ref's lock behind (this writer is the clone's only user)
            { echo "$n" >>"$d/repo/chaos.txt" && git -C "$d/repo" add chaos.txt &&
                git -C "$d/repo" commit -q -m "chaos $n"; } >/dev/null 2>"$WORK/err.$w" ||
                { err git; find "$d/repo/.git" -name '*.lock' -delete 2>/dev/null || true; }
        else
            # small writes, each fsynced (a publish)
            f=p$n
            if "$PY" -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
for i in range(16):
    os.write(fd, (b"%04d" % i) * 256)
    os.fsync(fd)
os.close(fd)
dfd = os.open(os.path.dirname(sys.argv[1]), os.O_RDONLY)
os.fsync(dfd)' "$d/$f" 2>"$WORK/err.$w"; then
                echo "$("$PY" -c 'import hashlib; print(hashlib.sha256(b"".join((b"%04d" % i) * 256 for i in range(16))).hexdigest())') $f" >>"$man"
            else err publish; fi
        fi
    done
}

pause_writers() {
    rm -f "$WORK"/paused.*
    touch "$WORK/pause"
    local w p
    # a writer that died (an unexpected failure under set -e) says so now
    for p in "${WRITERS[@]}"; do
        # (an exited writer stays a zombie until waited for: kill -0 works on it)
        case $(ps -o stat= -p "$p" 2>/dev/null) in ''|Z*) fail "writer pid $p died (see its errors in $WORK/errs.*)" ;; esac
    done
    for w in $WSS; do wait_for 120 test -e "$WORK/paused.$w" || fail "writer $w did not pause"; done
}
resume_writers() { rm -f "$WORK/pause"; }

# ---- invariants ----
verify_files() {
    local w d line sha f got bad=0
    echo 3 >/proc/sys/vm/drop_caches
    for w in $WSS; do
        d=$(data_dir "$w")
        while read -r sha f; do
            [ -n "$f" ] || continue
            if ! got=$(sha256sum "$d/$f" 2>"$WORK/verify.err") || [ "${got%% *}" != "$sha" ]; then
                got=${got%% *}
                log "LOST: $w/$f: expected $sha, got '${got:-}' ($(cat "$WORK/verify.err"))"
                bad=$((bad + 1))
            fi
            VERIFIED=$((VERIFIED + 1))
        done <"$WORK/man.$w"
    done
    [ "$bad" = 0 ] || fail "after $1: $bad file(s) do not match their manifest"
    git -C "$WORK/mnt/c1/data/repo" fsck --no-progress >"$WORK/fsck.out" 2>&1 ||
        fail "after $1: git fsck in c1: $(tail -5 "$WORK/fsck.out")"
}
verify_writable() {
    local w
    for w in $WSS; do
        echo "probe $ROUNDS" >"$(data_dir "$w")/.probe" && sync "$(data_dir "$w")/.probe" &&
            [ "$(cat "$(data_dir "$w")/.probe")" = "probe $ROUNDS" ] || fail "after $1: $w does not take a write"
    done
}
verify_machine() {
    local loops vols mounts daemons
    loops=$(losetup -n -O BACK-FILE | grep -c "^$WORK/root/") || true
    vols=$(jget "$(api GET /v1/volumes)" "len([v for v in d['volumes'] if v['state'] == 'up'])")
    [ "$loops" = "$vols" ] || fail "after $1: $loops loop device(s) for $vols volume(s) up"
    mounts=$(findmnt -rn -o TARGET | grep -c "^$WORK/mnt/[^/]*$") || true
    [ "$mounts" = 3 ] || fail "after $1: $mounts FUSE mount(s) for 3 running workspaces: $(findmnt -rn -o TARGET,FSTYPE | grep "$WORK/mnt")"
    mounts=$(findmnt -rn -o TARGET | grep -c "^$WORK/mnt/[^/]*/\.layoutd-cache$") || true
    [ "$mounts" = 3 ] || fail "after $1: $mounts cache mount(s) for 3 running workspaces: $(findmnt -rn -o TARGET,FSTYPE | grep "$WORK/mnt")"
    [ "$(jget "$(api GET /v1/workspaces)" "' '.join(w['cache']['state'] for w in d['workspaces'] if w['id'] in ('c1', 'c2', 'c3'))")" = "mounted mounted mounted" ] ||
        fail "after $1: not every cache is mounted: $(api GET /v1/workspaces)"
    daemons=$(pgrep -c -f -- "--state $WORK/root/") || true
    [ "$daemons" = 3 ] || fail "after $1: $daemons daemon(s) for 3 workspaces: $(pgrep -a -f -- "--state $WORK/root/")"
}
check_agent_alive() {
    kill -0 "$AGENT_PID" 2>/dev/null || { tail -40 "$AGENT_LOG"; fail "the agent crashed (before fault $1)"; }
}

# ---- faults ----
state_volume_of() { jget "$(api GET "/v1/workspaces/$1")" "d['volume']" || fail "no volume for $1: $(api GET "/v1/workspaces/$1")"; }
daemon_pids() { local w; for w in $WSS; do jget "$(api GET "/v1/workspaces/$w")" "d['daemon']['pid']"; done | tr '\n' ' '; }
# what a refused teardown must leave exactly as it was
machine_snapshot() {
    findmnt -rn -o TARGET | grep "^$WORK/" | sort || true
    losetup -n -O NAME,BACK-FILE | grep "$WORK/" | sort || true
    find "$WORK/root/volumes/content-0/objects" -type f ! -name '.tmp.*' | sort || true
}
# unmount_volume V: the operator's unmount; a daemon or sweeper that was
# just stopped may hold it for a moment
unmount_volume() {
    wait_for 30 umount "$WORK/root/volumes/$1" 2>/dev/null ||
        fail "cannot unmount $1: $(fuser -vm "$WORK/root/volumes/$1" 2>&1 | head -5)"
}
# restart_kept KIND: after SIGKILL or SIGTERM of the agent the daemons are
# adopted by the next one, never restarted
restart_kept() {
    local before after
    before=$(daemon_pids)
    agent_gone "$1"
    restart_agent
    recover "agent-$1"
    after=$(daemon_pids)
    [ "$before" = "$after" ] || fail "SIG$1 of the agent: daemons $before became $after (not adopted)"
}
# shut_down V: /v1/status says V is shut down: its fs-shutdown problem, or
# (whichever the agent saw first) its flush probe failing with EIO
shut_down() {
    [ "$(jget "$(api GET /v1/status)" "any(p.get('volume') == '$1' and (p['code'] == 'fs-shutdown' or (p['code'] == 'probe-failed' and 'Input/output error' in p['message'])) for p in d['problems'])")" = True ]
}
fault() {
    local kind=$1 w v pid dev sha f got tried=0 eio=0
    case $kind in
        agent-kill9) restart_kept KILL ;;
        agent-term) restart_kept TERM ;;
        agent-int) agent_gone INT; restart_agent ;;
        daemon-kill9)
            w=c$((RANDOM % 3 + 1))
            pid=$(jget "$(api GET "/v1/workspaces/$w")" "d['daemon']['pid']")
            [ "$pid" != None ] || fail "daemon-kill9: $w has no daemon: $(api GET "/v1/workspaces/$w")"
            kill -KILL "$pid" || fail "daemon-kill9: kill $pid" ;;
        sweeper-kill9)
            "$LAYOUTCTL" --socket "$SOCK" gc --no-wait >/dev/null 2>&1 || true
            # only this agent's sweeper (its child), never another run's
            sweeper() { pgrep -P "$AGENT_PID" -f -- "$WSFS gc" >/dev/null; }
            if wait_for 5 sweeper && pkill -KILL -P "$AGENT_PID" -f -- "$WSFS gc"; then count_fault sweeper-caught; fi ;;
        teardown)
            agent_gone INT
            machine_snapshot >"$WORK/before.snap"
            if "$LAYOUTCTL" teardown --layout "$L" --destroy-data >"$WORK/td.out" 2>&1; then
                fail "teardown --destroy-data succeeded with workspaces recorded: $(cat "$WORK/td.out")"
            fi
            grep -q "refuse" "$WORK/td.out" || fail "teardown --destroy-data failed without refusing: $(cat "$WORK/td.out")"
            if "$LAYOUTCTL" teardown --layout "$L" >"$WORK/td.out" 2>&1; then
                fail "plain teardown succeeded with active workspaces recorded: $(cat "$WORK/td.out")"
            fi
            grep -q "refuse" "$WORK/td.out" || fail "plain teardown failed without refusing: $(cat "$WORK/td.out")"
            machine_snapshot >"$WORK/after.snap"
            diff "$WORK/before.snap" "$WORK/after.snap" >&2 || fail "a refused teardown changed mounts, loop devices or objects"
            restart_agent ;;
        content-ro)
            # A remount is refused while a file is open for writing on
            # it (every daemon keeps the pool's gc.lock open read-write,
            # so this is mostly refused and counted as content-ro-busy;
            # content-shutdown is the harder fault): tried for 5 s.
            if wait_for 5 mount -o remount,ro "$WORK/root/volumes/content-0" 2>/dev/null; then
                sleep 3
                mount -o remount,rw "$WORK/root/volumes/content-0" || fail "content-ro: remount rw"
            else
                count_fault content-ro-busy
            fi ;;
        fill)
            w=c$((RANDOM % 3 + 1))
            dd if=/dev/zero of="$(data_dir "$w")/.fill" bs=1M count=220 conv=fsync status=none 2>"$WORK/fill.err" ||
                { log "fill $w: $(cat "$WORK/fill.err")"; count_fault fill-enospc; }
            sleep 2
            rm -f "$(data_dir "$w")/.fill" 2>/dev/null || true ;;
        image-moved)
            # As after a reboot with the image gone: unmounted, detached,
            # moved away. The workspaces on it must be held (never started
            # on the bare mount directory), nothing carved in its place.
            w=c$((RANDOM % 3 + 1)); v=$(state_volume_of "$w")
            agent_gone INT
            dev=$(findmnt -rn -o SOURCE "$WORK/root/volumes/$v") || fail "image-moved: $v is not mounted"
            unmount_volume "$v"
            losetup -d "$dev" || fail "image-moved: losetup -d $dev"
            mv "$WORK/root/images/$v.img" "$WORK/root/moved.img"
            start_agent "$L"
            held() { [ "$(ws_state "$w")" = blocked ]; }
            wait_for 30 held || fail "image-moved: $w on $v is '$(ws_state "$w")', not blocked: $(api GET "/v1/workspaces/$w")"
            [ ! -e "$WORK/root/images/$v.img" ] || fail "image-moved: $v was carved again over its recorded place"
            [ -z "$(ls -A "$WORK/root/volumes/$v" 2>/dev/null)" ] || fail "image-moved: files written into the bare $v directory: $(ls -A "$WORK/root/volumes/$v")"
            agent_gone INT
            mv "$WORK/root/moved.img" "$WORK/root/images/$v.img"
            restart_agent ;;
        content-shutdown)
            # The content pool's filesystem shut down: reads of stubs fail
            # (EIO, never other data), stores fail, files stay whole in
            # their state dirs; the problem shows; the operator's step as
            # for xfs-shutdown.
            xfs_io -x -c shutdown "$WORK/root/volumes/content-0" || fail "content-shutdown: xfs_io"
            cproblem() { shut_down content-0; }
            wait_for 30 cproblem || fail "content-shutdown: content-0 not shown shut down in /v1/status: $(api GET /v1/status)"
            pause_writers
            echo 3 >/proc/sys/vm/drop_caches
            # files of 64 KiB or more are in the pool (stubs) once stored
            while read -r sha f; do
                [ "$(stat -c %s "$WORK/mnt/c2/data/$f" 2>/dev/null || echo 0)" -ge 65536 ] || continue
                tried=$((tried + 1))
                if got=$(sha256sum "$WORK/mnt/c2/data/$f" 2>"$WORK/read.err"); then
                    [ "${got%% *}" = "$sha" ] || fail "content-shutdown: c2/$f read without an error but differs (zeros?)"
                elif grep -q "Input/output error" "$WORK/read.err"; then
                    eio=$((eio + 1)); count_fault content-shutdown-eio-reads
                else
                    fail "content-shutdown: c2/$f: not EIO: $(cat "$WORK/read.err")"
                fi
                [ "$tried" -lt 20 ] || break
            done <"$WORK/man.c2"
            [ "$tried" = 0 ] || [ "$eio" -gt 0 ] || fail "content-shutdown: $tried large files of c2 all read back with the pool down"
            resume_writers
            agent_gone INT
            unmount_volume content-0
            restart_agent ;;
        host-full)
            # Something else on the host takes all the space of the
            # filesystem under the backing images. A write into a volume
            # that needs a new block of its sparse image then fails (EIO
            # from the loop device); the writers see errnos and drop what
            # they could not make durable. The agent must say why.
            avail=$(df -B1 --output=avail "$WORK/root" | tail -1)
            fallocate -l "$avail" "$WORK/root/host-filler" 2>/dev/null || true
            head -c 1G /dev/zero >>"$WORK/root/host-filler" 2>/dev/null || true # what fallocate left
            hproblem() { [ "$(jget "$(api GET /v1/status)" "any(p['code'] == 'host-overcommitted' for p in d['problems'])")" = True ]; }
            wait_for 30 hproblem || fail "host-full: no host-overcommitted problem in /v1/status: $(api GET /v1/status)"
            sleep 5
            rm -f "$WORK/root/host-filler"
            sleep 3
            # A volume whose filesystem shut down on the write errors gets
            # the operator's step, as for xfs-shutdown; seen by a durable
            # write, the kernel's own answer.
            shut=""
            for v in $(ls "$WORK/root/volumes"); do
                dd if=/dev/zero of="$WORK/root/volumes/$v/.chaos-probe" bs=4k count=1 conv=fsync status=none 2>/dev/null || shut="$shut $v"
                rm -f "$WORK/root/volumes/$v/.chaos-probe" 2>/dev/null || true
            done
            if [ -n "$shut" ]; then
                log "host-full: shut down:$shut"
                count_fault host-full-shutdown
                agent_gone INT
                for v in $shut; do unmount_volume "$v"; done
                restart_agent
            fi
            # Stubs whose batch failed while the host was full hold their
            # data twice until they are punched (issue 35.3): each one
            # listed now must be punched within a minute (a file listed
            # later may be a store in flight, so only these are followed).
            twice() { "$LAYOUTCTL" --socket "$SOCK" check --json 2>/dev/null |
                "$PY" -c 'import json,sys; d=json.load(sys.stdin); r=d.get("report") or d["result"]["report"]; print("\n".join(sorted(t["path"] for t in r.get("twice", []))))'; }
            twice_now() { twice >"$WORK/twice-0"; }
            wait_for 60 twice_now || fail "host-full: layoutctl check --json failed for a minute: $("$LAYOUTCTL" --socket "$SOCK" check 2>&1 | tail -3)"
            [ -s "$WORK/twice-0" ] && log "host-full: $(wc -l <"$WORK/twice-0") file(s) held twice after the space came back"
            punched_since() { twice >"$WORK/twice-1" && [ -z "$(comm -12 "$WORK/twice-0" "$WORK/twice-1")" ]; }
            wait_for 60 punched_since ||
                fail "host-full: files still held twice a minute later: $(comm -12 "$WORK/twice-0" "$WORK/twice-1" | head -5)" ;;
        xfs-shutdown)
            w=c$((RANDOM % 3 + 1)); v=$(state_volume_of "$w")
            xfs_io -x -c shutdown "$WORK/root/volumes/$v" || fail "xfs-shutdown: xfs_io"
            problem() { shut_down "$v"; }
            wait_for 30 problem || fail "xfs-shutdown: $v not shown shut down in /v1/status: $(api GET /v1/status)"
            # The operator's step (docs/operations.md): with the agent
            # stopped, the shut-down filesystem is unmounted; the next
            # start mounts it again, which replays its log.
            agent_gone INT
            unmount_volume "$v"
            restart_agent ;;
        api-churn)
            # What an orchestrator does (issue 35): a dozen creates at once
            # with restarts of two running workspaces and an export of the
            # third among
            # them, then every new one removed at once. A create may only
            # be refused for want of room (507), never 409 while a slot is
            # free; each restart and the export succeed; the bound holds;
            # afterwards the record, mounts and daemons are as before
            # (verify_machine) and no removed workspace leaves a trace.
            local codes=() pids=() i c created=()
            for i in $(seq 1 12); do
                curl -s --max-time 120 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
                    -o /dev/null -w '%{http_code}' --data "{\"id\":\"x$i\"}" \
                    "http://layoutd/v1/workspaces?wait=100" >"$WORK/churn-$i.code" 2>/dev/null &
                pids+=($!)
            done
            # c2 is exported meanwhile, so it is not restarted (an export
            # of a workspace whose daemon restarts is refused, 409, rightly).
            for w in c1 c3; do
                curl -s --max-time 120 --unix-socket "$SOCK" -X POST -o /dev/null -w '%{http_code}' \
                    "http://layoutd/v1/workspaces/$w/restart?wait=100" >"$WORK/churn-$w.code" 2>/dev/null &
                pids+=($!)
            done
            "$LAYOUTCTL" --socket "$SOCK" export c2 -o "$WORK/churn.tar.zst" >"$WORK/churn-export.out" 2>&1 &
            local export_pid=$!
            wait "${pids[@]}" || true
            wait "$export_pid" || fail "api-churn: export of c2 among the creates: $(tail -3 "$WORK/churn-export.out")"
            rm -f "$WORK/churn.tar.zst"
            for w in c1 c3; do
                [ "$(cat "$WORK/churn-$w.code")" = 200 ] || fail "api-churn: restart of $w answered $(cat "$WORK/churn-$w.code")"
            done
            for i in $(seq 1 12); do
                c=$(cat "$WORK/churn-$i.code")
                case $c in
                    201) created+=("x$i") ;;
                    507) count_fault api-churn-pool-full ;;
                    *) fail "api-churn: create x$i answered $c (only 201, or 507 for want of room)" ;;
                esac
            done
            [ "$(jget "$(cat "$WORK/root/layoutd-state.json")" \
                "max([sum(1 for w in d['workspaces'] if w['volume']==v and (w.get('active') or w.get('creating'))) for v in set(w['volume'] for w in d['workspaces'])])")" -le 2 ] ||
                fail "api-churn: a volume holds more than workspaces_per_volume (2)"
            log "api-churn: ${#created[@]} of 12 created"
            pids=()
            for w in "${created[@]}"; do
                curl -s --max-time 120 --unix-socket "$SOCK" -X DELETE -o /dev/null -w '%{http_code}' \
                    "http://layoutd/v1/workspaces/$w?destroy_data=true&wait=100" >"$WORK/churn-rm-$w.code" 2>/dev/null &
                pids+=($!)
            done
            wait "${pids[@]}" || true
            for w in "${created[@]}"; do
                [ "$(cat "$WORK/churn-rm-$w.code")" = 200 ] || fail "api-churn: remove of $w answered $(cat "$WORK/churn-rm-$w.code")"
                [ ! -e "$WORK/mnt/$w" ] || fail "api-churn: removed $w left its mount point"
            done
            [ "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" = 3 ] ||
                fail "api-churn: workspaces after the churn: $(api GET /v1/workspaces)" ;;
        hostile-archives)
            # Malicious exports handed to `layoutctl import` (issue 35.2):
            # absolute and ".." manifest paths, unlisted entries, symlinks,
            # hard links out, devices, a huge manifest; each refused with
            # nothing read or written outside (tests/agent/lib-agent.sh).
            hostile_imports chaos-h
            [ "$(jget "$(api GET /v1/workspaces)" "len(d['workspaces'])")" = 3 ] ||
                fail "hostile-archives: workspaces after the imports: $(api GET /v1/workspaces)" ;;
    esac
}
KINDS=(agent-kill9 agent-term agent-int daemon-kill9 sweeper-kill9 teardown content-ro fill
       image-moved xfs-shutdown content-shutdown host-full api-churn hostile-archives)
# CHAOS_KINDS="a b": only these (to try one fault kind while working on it)
[ -z "${CHAOS_KINDS:-}" ] || read -ra KINDS <<<"$CHAOS_KINDS"
# next_kind: the kinds in a seeded shuffle, every one once before any
# repeats (a short smoke sees every kind).
DECK=()
next_kind() {
    if [ ${#DECK[@]} = 0 ]; then
        DECK=("${KINDS[@]}")
        local i j t
        for ((i = ${#DECK[@]} - 1; i > 0; i--)); do
            j=$((RANDOM % (i + 1))); t=${DECK[$i]}; DECK[$i]=${DECK[$j]}; DECK[$j]=$t
        done
    fi
    NEXT_KIND=${DECK[0]}
    DECK=("${DECK[@]:1}")
}

# ---- the run ----
start_agent "$L"
for w in $WSS; do "$LAYOUTCTL" --socket "$SOCK" add "$w" >/dev/null || fail "add $w"; done
recover setup
for w in $WSS; do mkdir "$(data_dir "$w")"; done
touch "$WORK/set-up"
# Durable commits (git's default fsyncs packs only; core.fsync is git
# 2.36+): the state volume is shut down under it, as by a crash, and fsck
# must pass after it. The clone itself is made durable before any fault.
git_version=$(git version | awk '{print $3}')
[ "$(printf '%s\n' 2.36 "$git_version" | sort -V | head -1)" = 2.36 ] || skip "needs git 2.36 or later (core.fsync), have $git_version"
git clone -q -c core.fsync=all -c core.fsyncMethod=fsync -c gc.auto=0 -c user.email=chaos@layoutd.test \
    -c user.name=chaos "$LAYOUTD_SOURCE_DIR" "$WORK/mnt/c1/data/repo" || fail "git clone into c1"
sync -f "$WORK/mnt/c1/data/repo"
i=0
WRITERS=()
for w in $WSS; do
    i=$((i + 1))
    writer "$w" $((SEED + i)) &
    WRITERS+=($!)
    track_pid $!
done
on_cleanup 'touch "$WORK/stop"'

# At least one round of every kind, however slow the rounds are (a
# loaded machine, a sanitizer build): the duration alone may not fit them.
end=$((SECONDS + DURATION))
while [ $SECONDS -lt $end ] || [ "$ROUNDS" -lt ${#KINDS[@]} ]; do
    ROUNDS=$((ROUNDS + 1))
    resume_writers
    sleep $((RANDOM % 6 + 3))
    next_kind
    kind=$NEXT_KIND
    check_agent_alive "$kind"
    log "round $ROUNDS: $kind"
    fault "$kind"
    count_fault "$kind"
    recover "$kind"
    pause_writers
    verify_files "$kind"
    verify_writable "$kind"
    verify_machine "$kind"
done
touch "$WORK/stop"
resume_writers
for p in "${WRITERS[@]}"; do wait "$p" || fail "writer pid $p ended with an error"; done

# ---- the end: stop, teardown, nothing left ----
verify_files end
for w in $WSS; do
    "$LAYOUTCTL" --socket "$SOCK" rm "$w" --destroy-data >/dev/null 2>"$WORK/rm.err" || fail "rm $w: $(cat "$WORK/rm.err")"
done
agent_gone INT
"$LAYOUTCTL" teardown --layout "$L" --destroy-data >"$WORK/td.out" 2>&1 ||
    fail "final teardown --destroy-data: $(cat "$WORK/td.out")"
left=$({ find "$WORK/root/images" -type f 2>/dev/null || true; } | wc -l)
[ "$left" = 0 ] || fail "teardown --destroy-data left $left backing file(s)"
umount "$WORK/root" || fail "unmount the host filesystem: $(findmnt -rn -o TARGET | grep "^$WORK/root/")"
leaks=0
m=$(findmnt -rn -o TARGET | grep -c "^$WORK/") || true
l=$(losetup -n -O BACK-FILE | grep -c "^$WORK/") || true
p=$(pgrep -c -f -- "--state $WORK/root/") || true
[ "$m" = 0 ] || { log "leak: $m mount(s): $(findmnt -rn -o TARGET | grep "^$WORK/")"; leaks=$((leaks + m)); }
[ "$l" = 0 ] || { log "leak: $l loop device(s)"; leaks=$((leaks + l)); }
[ "$p" = 0 ] || { log "leak: $p daemon(s)"; leaks=$((leaks + p)); }
san=$({ grep -l -E "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error" "$WORK"/sanitizer/* "$AGENT_LOG" 2>/dev/null || true; } | wc -l)
[ "$san" = 0 ] || { for f in "$WORK"/sanitizer/*; do head -40 "$f" >&2; done; grep -A20 -E "ERROR: (Address|Leak)Sanitizer|runtime error" "$AGENT_LOG" | head -60 >&2 || true; }

written=0; errors=""
for w in $WSS; do
    written=$((written + $(wc -l <"$WORK/man.$w")))
    errors="$errors$(cut -d: -f1 "$WORK/errs.$w")"$'\n'
done
faults=$(for k in "${!FAULTS[@]}"; do printf '%s=%s ' "$k" "${FAULTS[$k]}"; done)
errs_by_op=$({ grep -v '^$' <<<"$errors" || true; } | sort | uniq -c | awk '{printf "%s=%s ", $2, $1}')
report="seed=$SEED duration=${DURATION}s rounds=$ROUNDS faults: $faults
file_checks=$VERIFIED files_at_end=$written (a lost file, an agent crash or a dead writer fails the run) leaks=$leaks sanitizer_reports=$san
writer_errors by operation (each an errno, while its daemon or volume was down): ${errs_by_op:-none}
load_average(1/5/15 min)=$(cut -d' ' -f1-3 /proc/loadavg)"
log "RESULT $report"
[ -z "$RESULTS" ] || printf '%s\n' "$report" >"$RESULTS"
[ "$leaks" = 0 ] || fail "$leaks leaked object(s)"
for k in "${KINDS[@]}"; do [ "${FAULTS[$k]:-0}" -gt 0 ] || fail "fault kind $k never ran in $ROUNDS rounds"; done
[ "$san" = 0 ] || fail "$san sanitizer report(s)"
log "PASS"
