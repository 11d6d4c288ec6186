#!/usr/bin/env bash
# The code's names against the docs, both ways (see docs-names.py).
TEST_NAME=docs-names
. "$LAYOUTD_TESTS/lib/common.sh"
[ -x /usr/bin/python3 ] || skip "needs /usr/bin/python3"
/usr/bin/python3 "$LAYOUTD_TESTS/docs/docs-names.py" "$LAYOUTD_SOURCE_DIR" || fail "the docs and the code disagree"
