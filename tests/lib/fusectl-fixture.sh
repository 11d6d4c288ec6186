#!/usr/bin/env bash
# The ctest fixture `fusectl` (tests/CMakeLists.txt): integration tests
# run in parallel, and a test's teardown must not unmount fusectl
# (/sys/fs/fuse/connections) under the daemons of another test that is
# still running. So the run holds it: `setup STATE` mounts it when it is
# missing and writes down whether it did; `cleanup STATE` unmounts it
# again only then. The machine is left as the run found it.
#
#   fusectl-fixture.sh setup|cleanup STATE_FILE
set -euo pipefail
verb=${1:?usage: fusectl-fixture.sh setup|cleanup STATE_FILE}
state=${2:?usage: fusectl-fixture.sh setup|cleanup STATE_FILE}
dir=/sys/fs/fuse/connections
mounted() { findmnt -rn "$dir" >/dev/null 2>&1; }

# Not root: no integration test runs for real (they skip), nothing to hold.
[ "$(id -u)" -eq 0 ] || exit 0
case $verb in
setup)
    if mounted; then
        echo was-mounted >"$state"
    elif [ -d "$dir" ] && mount -t fusectl fusectl "$dir" 2>/dev/null; then
        echo mounted-here >"$state"
    else
        # No fusectl in this kernel or no FUSE module: the supervisor
        # copes without it, and so do the tests.
        echo absent >"$state"
        echo "fusectl-fixture: fusectl not available; tests run without it" >&2
    fi ;;
cleanup)
    # "absent": a supervisor may have mounted it since (the fuse module
    # loaded by a test); that too was not there before the run.
    was=$(cat "$state" 2>/dev/null || true)
    if { [ "$was" = mounted-here ] || [ "$was" = absent ]; } && mounted; then
        umount "$dir" || { echo "fusectl-fixture: cannot unmount $dir" >&2; exit 1; }
    fi
    rm -f "$state" ;;
*) echo "fusectl-fixture: unknown verb $verb" >&2; exit 2 ;;
esac
