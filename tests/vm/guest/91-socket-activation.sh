# layoutd.socket under real systemd: the socket is systemd's, the first
# client starts the agent (which takes the socket and says so), a restart
# refuses no client, a stopped agent is started again by a connection and
# re-adopts its daemons, `systemctl reload` fails on a refused layout
# (ExecReload=layoutctl reload) and succeeds on a good one, the record's
# boot id is the one the journal files this boot under, and the catalog
# knows the agent's MESSAGE_IDs.
. "$LAYOUTD_VM_HOME/guest/lib.sh"
systemctl cat layoutd.socket >/dev/null 2>&1 || skip "layoutd.socket not installed by the package"
command -v jq >/dev/null || fail "jq missing in the guest (tests/vm/guest-packages)"
data_mount

unit=layoutd.service
root=/srv/data/sa-root
layouts=/etc/layoutd/layouts.d
sock=/run/layoutd/api.sock
T0=$SECONDS
step() { log "[$((SECONDS - T0))s] $*"; }
api() { curl -sS --max-time 120 --unix-socket "$sock" "$@"; }
get() { api -f "http://localhost$1" || fail "GET $1 failed"; }
prop() { systemctl show -P "$1" "$unit"; }
wait_for() {
    local limit=$1 what=$2; shift 2
    local end=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        [ $SECONDS -lt $end ] || fail "timed out after ${limit}s waiting for: $what"
        sleep 1
    done
}
since() { journalctl -u "$unit" --no-pager -o cat --since "@$1"; }
ws_pid() { get "/v1/workspaces/$1" | jq -r .daemon.pid; }
ws_running() { [ "$(get "/v1/workspaces/$1" | jq -r .daemon.state)" = running ]; }

on_exit "systemctl stop layoutd.socket 2>/dev/null; layoutctl shutdown --stop-workspaces >/dev/null 2>&1;
         systemctl stop $unit 2>/dev/null; systemctl disable layoutd.socket 2>/dev/null;
         layoutctl teardown --layout $layouts/sa.yaml --destroy-data --remove-workspaces >/dev/null 2>&1;
         rm -f $layouts/sa.yaml; for f in /root/parked/*.yaml; do [ -f \$f ] && mv \$f $layouts/; done; true"

step "a small layout; the service stopped, only the socket started"
systemctl stop layoutd.socket $unit 2>/dev/null || true
mkdir -p /root/parked
for f in $layouts/*.yaml; do [ -f "$f" ] && mv "$f" /root/parked/; done   # the agent loads exactly one
cat >$layouts/sa.yaml <<YAML
version: 1
root: $root
pools:
  state:
    backend: loop-ext4
    volume_size: 128MiB
    workspaces_per_volume: 2
  content:
    backend: loop-ext4
    volume_size: 256MiB
workspace:
  command: [/usr/libexec/layoutd/layoutd-wsfs, --state, "{state_dir}", --content, "{content_dirs}", "{mountpoint}"]
api:
  socket: $sock
  group: layoutd
  socket_mode: "0660"
YAML
cp $layouts/sa.yaml /root/sa.yaml.good
layoutctl validate $layouts >/dev/null || fail "layoutctl validate refused the layout"
systemctl enable --now layoutd.socket || fail "cannot start layoutd.socket"
[ "$(systemctl is-active layoutd.socket)" = active ] || fail "layoutd.socket not active"
[ "$(systemctl is-active $unit)" != active ] || fail "the service started with its socket"
[ -S $sock ] || fail "no socket at $sock"
[ "$(stat -c '%a %U %G' $sock)" = "660 root layoutd" ] || fail "socket is $(stat -c '%a %U %G' $sock)"

step "the first client starts the agent; a change waits until it is ready"
ts=$(date +%s)
out=$(layoutctl add ws-1 --wait 300 2>add.err) || { cat add.err; fail "layoutctl add through the socket failed"; }
log "$out"
[ "$(systemctl is-active $unit)" = active ] || fail "the connection did not start the agent"
since "$ts" | has "API listening on $sock (the socket systemd passed)" || fail "the agent did not take systemd's socket"
wait_for 60 "ws-1 running" ws_running ws-1
pid0=$(prop MainPID)
d1=$(ws_pid ws-1)
[ "$(stat -c '%a %G' $sock)" = "660 layoutd" ] || fail "the agent changed the socket to $(stat -c '%a %G' $sock)"

step "systemctl restart refuses no client (they wait in systemd's backlog)"
: >codes.txt
(
    end=$((SECONDS + 40))
    while [ $SECONDS -lt $end ] && [ ! -e restart.done ]; do
        # curl exit 7: could not connect (refused, or no socket); 52/56:
        # the connection was cut (a request in flight when the old agent
        # closed its connections, which the API does not drain yet).
        curl -s -o /dev/null -w '%{http_code}\n' --max-time 60 --unix-socket $sock http://localhost/v1/status >>codes.txt 2>/dev/null ||
            echo "curl-exit-$?" >>codes.txt
        sleep 0.05
    done
) &
loop=$!
sleep 1
systemctl restart $unit || fail "systemctl restart failed"
sleep 2
touch restart.done
wait $loop
n=$(wc -l <codes.txt)
refused=$(grep -c '^curl-exit-7$' codes.txt || true)
other=$(grep -v '^200$' codes.txt | grep -vc '^curl-exit-7$' || true)
log "RESULT restart_requests=$n refused=$refused cut_or_not_200=$other ($(sort codes.txt | uniq -c | tr '\n' ' '))"
[ "$n" -ge 5 ] || fail "too few requests during the restart ($n)"
[ "$refused" -eq 0 ] || fail "$refused of $n connections were refused during systemctl restart"
[ "$other" -le 1 ] || fail "$other of $n requests during systemctl restart were cut or not answered 200"
[ "$(prop MainPID)" != "$pid0" ] || fail "the agent was not restarted"
wait_for 60 "ws-1 re-adopted after the restart" ws_running ws-1
[ "$(ws_pid ws-1)" = "$d1" ] || fail "ws-1's daemon changed across the restart"

step "a stopped agent is started again by the next client, and re-adopts its daemons"
systemctl stop $unit
[ "$(systemctl is-active $unit)" != active ] || fail "still active after stop"
[ "$(systemctl is-active layoutd.socket)" = active ] || fail "the socket went with the service"
[ -d /proc/$d1 ] || fail "ws-1's daemon stopped with the agent (on_agent_stop: keep)"
pid1=$(prop MainPID)
st=$(curl -sS --max-time 120 --unix-socket $sock http://localhost/v1/status) || fail "no answer from a stopped agent's socket"
# The agent answers reads while it starts: the unit is "activating" until
# its READY=1.
[ "$(systemctl is-active $unit)" != inactive ] || fail "the connection did not start the stopped agent"
is_active() { [ "$(systemctl is-active $unit)" = active ]; }
wait_for 120 "the activated agent to be ready" is_active
log "answered by pid $(jq -r .pid <<<"$st") ($(jq -r .state <<<"$st"))"
wait_for 60 "ws-1 running after the activation" ws_running ws-1
[ "$(ws_pid ws-1)" = "$d1" ] || fail "ws-1's daemon was not re-adopted"
[ "$(get /v1/workspaces/ws-1 | jq -r .daemon.adopted)" = true ] || fail "ws-1 not marked adopted"
log "RESULT activation agent_pid=$(prop MainPID) daemon_kept=$d1"

step "systemctl reload: refused layout fails, good one succeeds (ExecReload=layoutctl reload)"
pid2=$(prop MainPID)
sed -i 's/workspaces_per_volume: 2/workspaces_per_volume: zwei/' $layouts/sa.yaml
ts=$(date +%s)
if systemctl reload $unit 2>reload.err; then fail "systemctl reload succeeded with a refused layout"; fi
since "$ts" | has 'layoutctl reload: .*workspaces_per_volume' || fail "the refused reload's error is not in the journal"
[ "$(systemctl is-active $unit)" = active ] || fail "not active after a refused reload"
[ "$(prop MainPID)" = "$pid2" ] || fail "a refused reload restarted the agent"
[ "$(get /v1/status | jq -r .last_reload_error)" != null ] || fail "no last_reload_error"
rc=0; layoutctl status >/dev/null || rc=$?
[ $rc -eq 5 ] || fail "layoutctl status after a refused reload exits $rc, not 5 (degraded)"
cp /root/sa.yaml.good $layouts/sa.yaml
systemctl reload $unit || fail "systemctl reload of the good layout failed"
[ "$(get /v1/status | jq -r .last_reload_error)" = null ] || fail "a good reload left last_reload_error"
layoutctl is-healthy || fail "is-healthy after a good reload exits $?"
log "RESULT reload refused=fails good=succeeds"

step "the record's boot id is this boot's, as the journal files it"
boot=$(tr -d '-' </proc/sys/kernel/random/boot_id)
rec=$(jq -r '.workspaces[] | select(.id == "ws-1") | .daemon.boot_id' $root/layoutd-state.json)
[ "$rec" = "$boot" ] || fail "the record's boot_id is $rec, this boot is $boot"
journalctl --no-pager -o cat _BOOT_ID="$rec" -u $unit | has 'API listening' || fail "journalctl _BOOT_ID=$rec finds nothing of the agent"
journalctl --list-boots --no-pager | has "$rec" || fail "journalctl --list-boots does not list $rec"

step "the journal catalog knows every MESSAGE_ID (postinst ran journalctl --update-catalog)"
for id in afbc69a07e05420484bd9e6d3b7cea50 0b62af66f452441d8d35e4476082f4d2 fe7ea5016b2e46ab901613e57f5d2835; do
    journalctl --list-catalog --no-pager | has "^$id" || fail "the catalog has no entry $id"
done
journalctl --no-pager -x -u $unit MESSAGE_ID=fe7ea5016b2e46ab901613e57f5d2835 | has 'layoutctl validate' ||
    fail "journalctl -x does not show the catalog text of the refused reload"

step "scopes: over the system bus, or the private socket where there is none"
if systemctl is-active --quiet dbus.service; then
    journalctl --no-pager -o cat -u $unit | has "private socket: no system bus" && fail "the agent used the private socket with a bus running"
else
    journalctl --no-pager -o cat -u $unit | has "private socket: no system bus" || fail "no word of the private-socket fallback"
fi
[ "$(get /v1/status | jq -r .cgroups.enabled)" = true ] || fail "no scopes: $(get /v1/status | jq -c .cgroups)"

step "shutdown with the socket stopped first: the agent stays stopped"
systemctl disable --now layoutd.socket
layoutctl shutdown --stop-workspaces || fail "layoutctl shutdown --stop-workspaces"
[ "$(systemctl is-active $unit)" != active ] || fail "still active after shutdown"
layoutctl teardown --layout $layouts/sa.yaml --destroy-data --remove-workspaces || fail "teardown --destroy-data --remove-workspaces"
[ -z "$(findmnt -rn -o TARGET | grep "^$root/")" ] || fail "mounts left after the teardown"
log "ok"
