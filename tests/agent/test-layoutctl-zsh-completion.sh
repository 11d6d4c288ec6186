#!/usr/bin/env bash
# The zsh completion of layoutctl (agent/ctl/layoutctl.zsh-completion):
# verbs, a verb's options, -o columns from the built layoutctl's --help, no
# ids without an agent, --socket PATH never taken for the verb. zsh's
# completion builtins (compadd, compset, _describe, _files) are replaced by
# functions that print what they were given: what zsh then filters by the
# typed prefix is zsh's own work. Unit: no agent needed.
set -euo pipefail
src=${LAYOUTD_SOURCE_DIR:?}
export PATH=${LAYOUTD_BUILD_DIR:?}/agent:$PATH
fail() { echo "test-layoutctl-zsh-completion: FAIL: $*" >&2; exit 1; }
command -v zsh >/dev/null || { echo "SKIP: zsh is not installed (apt install zsh)"; exit 77; }
zsh -n "$src/agent/ctl/layoutctl.zsh-completion" || fail "zsh -n: a syntax error"
# complete PREFIX WORD... (the last word is the one being completed)
complete() {
    local prefix=$1
    shift
    zsh -f -c '
        compadd() { while [[ $1 == -* && $1 != -- ]]; do [[ $1 == -[SPp] ]] && shift; shift; done; [[ $1 == -- ]] && shift; print -rl -- "$@"; }
        compset() { return 1; }
        _describe() { print -rl -- ${${(P)4}%%:*}; }
        _files() { print -r -- "<files>"; }
        PREFIX=$1; shift
        words=("$@"); CURRENT=$#
        source "$LAYOUTCTL_ZSH"' complete "$prefix" "$@"
}
export LAYOUTCTL_ZSH=$src/agent/ctl/layoutctl.zsh-completion
got=$(complete "" layoutctl "")
for v in status show gc import env is-healthy; do grep -qx "$v" <<<"$got" || fail "verb $v not offered: $got"; done
grep -q ":" <<<"$got" && fail "a verb with its description left on: $got"
got=$(complete --d layoutctl gc --d)
grep -qx -- --dry-run <<<"$got" || fail "gc --d: $got"
got=$(complete "" layoutctl volumes -o "")
for c in NAME USED HEALTH FLUSH; do grep -qx "$c" <<<"$got" || fail "volumes -o: $c not offered: $got"; done
got=$(complete "" layoutctl show ws-1 --type "")
[ "$got" = $'workspace\nvolume' ] || fail "--type: $got"
got=$(complete "" layoutctl --socket /nonexistent rm "")
[ -z "$got" ] || fail "ids without an agent: $got"
got=$(complete --d layoutctl --socket=/nonexistent gc --d)
grep -qx -- --dry-run <<<"$got" || fail "--socket=PATH gc --d: $got"
got=$(complete --d layoutctl --socket /nonexistent gc --d)
grep -qx -- --dry-run <<<"$got" || fail "--socket PATH gc --d: the path taken for the verb? $got"
got=$(complete "" layoutctl validate "")
[ "$got" = "<files>" ] || fail "validate: files expected: $got"
got=$(complete "" layoutctl export ws-1 -o "")
[ "$got" = "<files>" ] || fail "export -o: files expected: $got"
# The ids come from the agent the command line names: a stand-in
# layoutctl earlier in PATH says which arguments it was given.
mkdir -p "${TMPDIR:-/tmp}/zsh-ctl.$$"
trap 'rm -rf "${TMPDIR:-/tmp}/zsh-ctl.$$"' EXIT
cat >"${TMPDIR:-/tmp}/zsh-ctl.$$/layoutctl" <<'STUB'
#!/bin/sh
[ "$1 $2 $3 $4" = "--json --socket /run/x.sock workspaces" ] && echo '{"workspaces": [{"id": "ws-7"}]}'
STUB
chmod +x "${TMPDIR:-/tmp}/zsh-ctl.$$/layoutctl"
got=$(PATH=${TMPDIR:-/tmp}/zsh-ctl.$$:$PATH complete "" layoutctl --socket /run/x.sock rm "")
[ "$got" = ws-7 ] || fail "rm's ids through --socket PATH: '$got'"
got=$(PATH=${TMPDIR:-/tmp}/zsh-ctl.$$:$PATH complete "" layoutctl rm --socket=/run/x.sock "")
[ "$got" = ws-7 ] || fail "rm's ids through --socket=PATH: '$got'"
echo "layoutctl zsh completion ok"
