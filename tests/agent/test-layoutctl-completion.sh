#!/usr/bin/env bash
# The bash completion of layoutctl: verbs, a verb's options, -o columns,
# all taken from the built layoutctl's --help (unit: no agent needed).
set -euo pipefail
src=${LAYOUTD_SOURCE_DIR:?}
export PATH=${LAYOUTD_BUILD_DIR:?}/agent:$PATH
. "$src/agent/ctl/layoutctl.bash-completion"
fail() { echo "test-layoutctl-completion: FAIL: $*" >&2; exit 1; }
complete_words() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _layoutctl; echo "${COMPREPLY[*]}"; }
[ "$(complete_words layoutctl s)" = "status show shutdown" ] || fail "verbs for 's': $(complete_words layoutctl s)"
grep -qw gc <<<"$(complete_words layoutctl '')" || fail "gc is not offered"
got=$(complete_words layoutctl volumes --)
for o in --output --noheadings --no-legend --raw --pairs --bytes --json --socket --wait; do grep -q -- "$o" <<<"$got" || fail "volumes $o not offered: $got"; done
[ "$(complete_words layoutctl gc --d)" = "--dry-run" ] || fail "gc --d: $(complete_words layoutctl gc --d)"
[ "$(complete_words layoutctl volumes -o US)" = "USED USE%" ] || fail "-o US: $(complete_words layoutctl volumes -o US)"
[ "$(complete_words layoutctl volumes -o NAME,HE)" = "NAME,HEALTH" ] || fail "-o NAME,HE: $(complete_words layoutctl volumes -o NAME,HE)"
[ "$(complete_words layoutctl workspaces -o +MOU)" = "+MOUNTPOINT" ] || fail "-o +MOU: $(complete_words layoutctl workspaces -o +MOU)"
[ "$(complete_words layoutctl volumes -o NAME,FL)" = "NAME,FLUSH NAME,FLUSH-ERROR" ] ||
    fail "-o NAME,FL: $(complete_words layoutctl volumes -o NAME,FL)"
[ "$(complete_words layoutctl show ws-1 --type v)" = "volume" ] || fail "--type v: $(complete_words layoutctl show ws-1 --type v)"
[ "$(complete_words layoutctl export ws-1 -o /etc/hostnam)" = "/etc/hostname" ] ||
    fail "export -o: a file expected: $(complete_words layoutctl export ws-1 -o /etc/hostnam)"
[ "$(complete_words layoutctl i)" = "is-healthy import" ] || fail "verbs for 'i': $(complete_words layoutctl i)"
[ "$(complete_words layoutctl --socket /nonexistent rm '')" = "" ] || fail "ids without an agent"
# "--socket=PATH" reaches the function as three words ("=" breaks words):
# the path is not taken for the verb.
[ "$(complete_words layoutctl --socket = /nonexistent gc --d)" = "--dry-run" ] ||
    fail "--socket = PATH gc --d: $(complete_words layoutctl --socket = /nonexistent gc --d)"
echo "layoutctl completion ok"
