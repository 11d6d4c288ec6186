#!/usr/bin/env bash
# Keeps the man pages honest:
#  1. scdoc builds each page in docs/man/ (syntax errors fail);
#  2. `man --warnings -l` renders each one without a single warning (when
#     man is installed);
#  3. every verb `layoutctl --help` lists has its own section in
#     layoutctl(8), and every --option that the global help or a verb's
#     help mentions, and every exit status it lists, is there;
#  4. every option and signal `layoutd --help` mentions is in layoutd(8);
#  5. every key of the top-level, pool, vdo, workspace and api tables of
#     docs/layout.md (and every command placeholder) is in layoutd.yaml(5);
#  6. every option `layoutd-csi --help` mentions, its environment variable
#     and every gRPC call it serves is in layoutd-csi(8).
# Runs as any user; needs the built layoutctl, layoutd and layoutd-csi.
TEST_NAME=docs-man
. "$LAYOUTD_TESTS/lib/common.sh"

: "${SCDOC:=$(command -v scdoc || true)}"
case "$SCDOC" in ""|*NOTFOUND*) SCDOC=$(command -v scdoc || true) ;; esac
[ -n "$SCDOC" ] && [ -x "$SCDOC" ] || skip "needs scdoc (Debian package scdoc)"
: "${LAYOUTCTL:=$LAYOUTD_BUILD_DIR/agent/layoutctl}"
: "${LAYOUTD:=$LAYOUTD_BUILD_DIR/agent/layoutd}"
: "${LAYOUTD_CSI:=$LAYOUTD_BUILD_DIR/agent/csi/layoutd-csi}"
[ -x "$LAYOUTCTL" ] || fail "layoutctl not built: $LAYOUTCTL"
[ -x "$LAYOUTD" ] || fail "layoutd not built: $LAYOUTD"
[ -x "$LAYOUTD_CSI" ] || fail "layoutd-csi not built: $LAYOUTD_CSI"
PAGES="layoutd.8 layoutctl.8 layoutd.yaml.5 layoutd-csi.8"

MAN=$LAYOUTD_SOURCE_DIR/docs/man
errors=0
bad() { log "FAIL: $*"; errors=$((errors + 1)); }

# 1. Build.
for page in $PAGES; do
    [ -f "$MAN/$page.scd" ] || { bad "$page.scd missing"; continue; }
    if ! "$SCDOC" <"$MAN/$page.scd" >"$WORK/$page" 2>"$WORK/$page.err"; then
        bad "scdoc $page.scd: $(cat "$WORK/$page.err")"
        continue
    fi
    grep -q '^\.SH NAME' "$WORK/$page" || bad "$page has no NAME section"
done
[ $errors -eq 0 ] || fail "$errors problem(s) building the pages"

# 2. Render. groff's warnings (-w all via man --warnings) go to stderr.
if command -v man >/dev/null 2>&1; then
    for page in $PAGES; do
        out=$(LC_ALL=C.UTF-8 MANWIDTH=80 MAN_DISABLE_SECCOMP=1 man --warnings -l "$WORK/$page" 2>"$WORK/$page.warn") ||
            bad "man -l $page failed: $(cat "$WORK/$page.warn")"
        [ -s "$WORK/$page.warn" ] && bad "man -l $page warns: $(head -5 "$WORK/$page.warn")"
        grep -q "^NAME" <<<"$out" || bad "man -l $page rendered no NAME heading"
    done
else
    log "man not installed: rendering not checked (scdoc built every page)"
fi

# roff bold text: scdoc writes *x* as \fBx\fR, and puts the zero-width
# \& after every period ("backoff.\&initial"); compare without those.
for page in $PAGES; do sed 's/\\&//g' "$WORK/$page" >"$WORK/$page.roff"; done
has_bold() { grep -qF "\\fB$2\\fR" "$WORK/$1.roff"; }

# 3. layoutctl: verbs, options, exit statuses.
help=$("$LAYOUTCTL" --help)
mapfile -t verbs < <(awk '/^Commands:/{on=1; next} on && /^$/{exit} on {print $1}' <<<"$help")
[ ${#verbs[@]} -ge 10 ] || fail "could not read the verbs from layoutctl --help (got ${#verbs[@]})"
for v in "${verbs[@]}"; do
    grep -qx "\.SS $v" "$WORK/layoutctl.8.roff" || bad "layoutctl(8) has no section for verb '$v'"
    vhelp=$("$LAYOUTCTL" "$v" --help) || bad "layoutctl $v --help failed"
    for opt in $(grep -oE -- '--[a-z][a-z-]*[a-z]' <<<"$vhelp" | sort -u); do
        has_bold layoutctl.8 "$opt" || bad "layoutctl(8) does not document '$v $opt'"
    done
done
for opt in $(grep -oE -- '--[a-z][a-z-]*[a-z]' <<<"$help" | sort -u); do
    has_bold layoutctl.8 "$opt" || bad "layoutctl(8) does not document global option '$opt'"
done
mapfile -t codes < <(awk '/^Exit status:/{on=1; next} on && /^$/{exit} on {print $1}' <<<"$help")
[ ${#codes[@]} -ge 3 ] || fail "could not read the exit statuses from layoutctl --help"
exit_section=$(awk '/^\.SH EXIT STATUS/{on=1; next} on && /^\.SH /{exit} on' "$WORK/layoutctl.8.roff")
for c in "${codes[@]}"; do
    grep -qxF "\\fB$c\\fR" <<<"$exit_section" || bad "layoutctl(8) EXIT STATUS lacks $c"
done

# 4. layoutd: options and signals.
dhelp=$("$LAYOUTD" --help)
for opt in $(grep -oE -- '--[a-z][a-z-]*[a-z]' <<<"$dhelp" | sort -u); do
    has_bold layoutd.8 "$opt" || bad "layoutd(8) does not document option '$opt'"
done
for sig in $(grep -oE 'SIG[A-Z0-9]+' <<<"$dhelp" | sort -u); do
    has_bold layoutd.8 "$sig" || bad "layoutd(8) does not document $sig"
done
for env in NOTIFY_SOCKET WATCHDOG_USEC; do
    has_bold layoutd.8 "$env" || bad "layoutd(8) does not document \$$env"
done

# 5. layout.md keys. The first cell of each table row of these sections.
layout_md=$LAYOUTD_SOURCE_DIR/docs/layout.md
mapfile -t keys < <(awk '
    /^#/ { sec = ($0 ~ /^## Top level/ || $0 ~ /^## Pools/ || $0 ~ /^### `vdo:`/ ||
                  $0 ~ /^## `workspace`/ || $0 ~ /^### `command` placeholders/ || $0 ~ /^## `api`/) }
    sec && /^\| `/ { split($0, a, "`"); print a[2] }' "$layout_md")
[ ${#keys[@]} -ge 50 ] || fail "could not read the keys of docs/layout.md (got ${#keys[@]})"
for k in "${keys[@]}"; do
    has_bold layoutd.yaml.5 "$k" || bad "layoutd.yaml(5) does not document key '$k' of docs/layout.md"
done

# 6. layoutd-csi: options, environment, the calls it serves (from its
# own method table, so a new call without a line in the page fails).
chelp=$("$LAYOUTD_CSI" --help)
for opt in $(grep -oE -- '--[a-z][a-z-]*[a-z]' <<<"$chelp" | sort -u); do
    has_bold layoutd-csi.8 "$opt" || bad "layoutd-csi(8) does not document option '$opt'"
done
has_bold layoutd-csi.8 CSI_ENDPOINT || bad "layoutd-csi(8) does not document \$CSI_ENDPOINT"
mapfile -t rpcs < <(grep -oE '"/csi\.v1\.[A-Za-z]+/[A-Za-z]+"' "$LAYOUTD_SOURCE_DIR/agent/csi/layoutd-csi.c" | sed 's|.*/||; s|"||')
[ ${#rpcs[@]} -ge 8 ] || fail "could not read the calls from agent/csi/layoutd-csi.c (got ${#rpcs[@]})"
for rpc in "${rpcs[@]}"; do
    has_bold layoutd-csi.8 "$rpc" || bad "layoutd-csi(8) does not document the call $rpc"
done

[ $errors -eq 0 ] || fail "$errors problem(s)"
log "OK: 4 pages; ${#rpcs[@]} CSI calls; ${#verbs[@]} verbs, ${#codes[@]} exit statuses, ${#keys[@]} layout keys checked"
