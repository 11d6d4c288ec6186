#!/usr/bin/env bash
# LICENSE is the LGPL 2.1 the sources name (SPDX-License-Identifier:
# LGPL-2.1-or-later in every file that has one), and the copyright file
# the .deb ships (systemd/deb/copyright.cmake) holds it word for word.
TEST_NAME=docs-license
. "$LAYOUTD_TESTS/lib/common.sh"
src=$LAYOUTD_SOURCE_DIR
[ -f "$src/LICENSE" ] || fail "no LICENSE"
head -3 "$src/LICENSE" | grep -q "GNU LESSER GENERAL PUBLIC LICENSE" || fail "LICENSE is not the LGPL"
grep -q "Version 2.1, February 1999" "$src/LICENSE" || fail "LICENSE is not version 2.1"
other=$(cd "$src" && git grep -h "SPDX-License-Identifier:" -- ':!LICENSE' ':!tests/docs/test-docs-license.sh' 2>/dev/null |
        grep -v "LGPL-2.1-or-later" || true)
[ -z "$other" ] || fail "sources under another license than LICENSE: $other"
"${CMAKE:-cmake}" -DLICENSE="$src/LICENSE" -DOUT="$WORK/copyright" -P "$src/systemd/deb/copyright.cmake" ||
    fail "copyright.cmake failed"
grep -q "^Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/" "$WORK/copyright" || fail "not DEP-5"
grep -q "^License: LGPL-2.1-or-later$" "$WORK/copyright" || fail "no License: paragraph"
# The second License: paragraph is LICENSE, indented one space, blank lines as " .".
awk '/^License: LGPL-2.1-or-later$/ { n++ } n == 2' "$WORK/copyright" | tail -n +7 | sed 's/^ \.$//; s/^ //' >"$WORK/text"
diff -u "$src/LICENSE" "$WORK/text" >"$WORK/diff" || fail "the copyright file's text is not LICENSE: $(head -20 "$WORK/diff")"
log "OK: LICENSE is LGPL-2.1, the sources say so, the .deb's copyright file carries it"
