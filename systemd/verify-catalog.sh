#!/usr/bin/env bash
# The journal catalog: journalctl parses it (--update-catalog on a scratch
# root builds the database it would build in /var/lib/systemd/catalog),
# every MESSAGE_ID of log-messages.h has an entry, and every entry is one
# of those ids. Needs no root.
set -euo pipefail
catalog=$1 header=$2
command -v journalctl >/dev/null || { echo "SKIP: no journalctl"; exit 77; }
tmp=$(mktemp -d /tmp/layoutd-catalog.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/usr/lib/systemd/catalog" "$tmp/var/lib/systemd/catalog"
cp "$catalog" "$tmp/usr/lib/systemd/catalog/"
out=$(journalctl --root="$tmp" --update-catalog 2>&1) || { echo "$out"; echo "FAIL: journalctl --update-catalog"; exit 1; }
if [ -n "$out" ]; then
    echo "$out"; echo "FAIL: journalctl --update-catalog printed diagnostics"; exit 1
fi
[ -s "$tmp/var/lib/systemd/catalog/database" ] || { echo "FAIL: no catalog database was written"; exit 1; }
listed=$(journalctl --root="$tmp" --list-catalog 2>&1 | awk '{print $1}' | sort -u)
want=$(grep -oE '"[0-9a-f]{32}"' "$header" | tr -d '"' | sort -u)
[ -n "$want" ] || { echo "FAIL: no MESSAGE_ID found in $header"; exit 1; }
fail=0
for id in $want; do
    grep -qx "$id" <<<"$listed" || { echo "FAIL: MESSAGE_ID $id of $(basename "$header") has no catalog entry"; fail=1; }
done
for id in $listed; do
    grep -qx "$id" <<<"$want" || { echo "FAIL: catalog entry $id is no MESSAGE_ID of $(basename "$header")"; fail=1; }
done
# Every entry says who defined it and what to read.
entries=$(grep -c '^-- [0-9a-f]\{32\}$' "$catalog")
for field in Subject Defined-By Documentation; do
    n=$(grep -c "^$field: " "$catalog")
    [ "$n" -eq "$entries" ] || { echo "FAIL: $n of $entries entries have $field:"; fail=1; }
done
[ $fail -eq 0 ] || exit 1
echo "catalog ok: $(wc -w <<<"$want") MESSAGE_IDs, parsed by journalctl"
