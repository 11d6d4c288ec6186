# SPDX-License-Identifier: LGPL-2.1-or-later
"""The arms of the flush-scope benchmark: one table, read by the driver and the report.

Each arm says where the N workspaces' data lives (storage), who makes it
durable (the FUSE daemon through the agent, or the workload itself: mode),
and which arm is its "shared" reference on the same layer, so that every
layer gets its own layout ratio:
  wsfs            the reference daemon with its efficient defaults (writeback
                  cache, 2+ threads), supervised by the agent;
  wsfs-published  the same daemon with --profile=published (1 thread, no
                  writeback cache): the engine as it was published;
  nofuse          no FUSE: the workload does the daemon's group commit itself
                  (groupcommit.c), the flush-scope effect alone, the upper
                  bound of what any daemon can get from the layout;
  native          no FUSE, per-file fsync or no sync at all (controls).
"""

# The writeback caps of the layoutd-b3-wscap arm, per volume
# (pools.*.writeback in the generated layout; docs/layout.md). Why these:
# this machine's global dirty limit is ~4.6 GiB (vm.dirty_ratio 20 of
# ~23 GiB available; background 10 %), so without caps one volume may hold
# gigabytes of dirty pages that its next syncfs has to write, and every
# workspace on the volume waits for that. A volume's loop device writes its
# backing file at ~1.5 GB/s here (fio seq-write on a loop-ext4 DIO volume,
# docs/benchmarks.md "fio"), so 64 MiB is ~45 ms of writeback: a syncfs of
# a capped state volume costs about one batch window (50 ms) at worst.
# strict_limit makes the cap hold even while the machine is far below its
# global limit (otherwise the kernel lets a bdi exceed its share until the
# global "freerun" point): the writers are throttled to the volume's own
# writeback rate, which moves the cost from the flush to the writes. The
# content volume takes the large files (>= 64 KiB) of all N workspaces,
# so it gets twice the state cap, still a sub-200 ms flush, not N times it:
# the point is to bound the flush, not to keep throughput.
WSCAP = {"state": "64MiB", "content": "128MiB"}

# The cache writer of the layoutd-b3-cachefill arm writes this many
# workspaces' worth of files (the install a coding agent runs is larger
# than its commits).
CACHE_WRITER_FACTOR = 2

ARMS = [
    dict(name="shared", storage="shared", daemon=True, commit="syncfs", profile="default", mode="fuse",
         layer="wsfs", ref="shared",
         doc="all N on one host filesystem (dir backend), wsfs --commit=syncfs (efficient defaults)"),
    dict(name="layoutd-b3", storage="volumes", bound=3, daemon=True, commit="syncfs", profile="default",
         mode="fuse", layer="wsfs", ref="shared",
         doc="wsfs --commit=syncfs on loop-ext4 DIO volumes, workspaces_per_volume 3"),
    dict(name="layoutd-b3-wscap", storage="volumes", bound=3, daemon=True, commit="syncfs", profile="default",
         mode="fuse", layer="wsfs", ref="shared", wscap=True,
         doc=f"as layoutd-b3 with writeback caps per volume (state {WSCAP['state']}, content "
             f"{WSCAP['content']}, strict_limit)"),
    # Issue 36: derived data on a native cache mount (workspace.cache), on
    # the workspace's own state volume. While the N workspaces commit, an
    # install-sized writer (CACHE_WRITER_FACTOR workspaces' worth of files,
    # no syncs: what npm or a copying pnpm leaves dirty) fills ws-0's
    # cache: its dirty pages are in the syncfs of every daemon on ws-0's
    # volume. Against layoutd-b3, the cost of an install in the same flush
    # domain; against layoutd-b3-fusefill (the same writer through ws-0's
    # FUSE mount, where the install goes without a cache), what the cache
    # changes about it.
    dict(name="layoutd-b3-cachefill", storage="volumes", bound=3, daemon=True, commit="syncfs",
         profile="default", mode="fuse", layer="wsfs", ref="shared", cache=True, cache_writer="cache",
         doc="as layoutd-b3, workspace.cache on; a buffered writer fills ws-0's cache during the run"),
    dict(name="layoutd-b3-fusefill", storage="volumes", bound=3, daemon=True, commit="syncfs",
         profile="default", mode="fuse", layer="wsfs", ref="shared", cache=True, cache_writer="fuse",
         doc="as layoutd-b3-cachefill, the writer through ws-0's FUSE mount instead"),
    # The same with the state volumes' writeback capped (WSCAP): what the
    # writer may leave dirty for a neighbour's syncfs is bounded, and the
    # writer is throttled to the volume's own writeback rate instead.
    dict(name="layoutd-b3-cachefill-wscap", storage="volumes", bound=3, daemon=True, commit="syncfs",
         profile="default", mode="fuse", layer="wsfs", ref="shared", cache=True, cache_writer="cache", wscap=True,
         doc=f"as layoutd-b3-cachefill with writeback caps per volume (state {WSCAP['state']}, content "
             f"{WSCAP['content']}, strict_limit)"),
    dict(name="layoutd-b1", storage="volumes", bound=1, daemon=True, commit="syncfs", profile="default",
         mode="fuse", layer="wsfs", ref="shared",
         doc="wsfs --commit=syncfs on loop-ext4 DIO volumes, workspaces_per_volume 1"),
    dict(name="shared-fdatasync", storage="shared", daemon=True, commit="fdatasync", profile="default",
         mode="fuse", layer="wsfs", ref="shared", doc="as shared, wsfs --commit=fdatasync"),
    dict(name="shared-published", storage="shared", daemon=True, commit="syncfs", profile="published",
         mode="fuse", layer="wsfs-published", ref="shared-published",
         doc="as shared, wsfs --profile=published (1 thread, no writeback cache)"),
    dict(name="layoutd-b3-published", storage="volumes", bound=3, daemon=True, commit="syncfs",
         profile="published", mode="fuse", layer="wsfs-published", ref="shared-published",
         doc="as layoutd-b3, wsfs --profile=published"),
    dict(name="shared-nofuse", storage="shared", daemon=False, mode="syncfs", layer="nofuse",
         ref="shared-nofuse",
         doc="no FUSE, on the shared host directory; the workload does the group commit itself "
             "(512 records / 50 ms, then syncfs)"),
    dict(name="layoutd-b3-nofuse", storage="volumes", bound=3, daemon=False, mode="syncfs", layer="nofuse",
         ref="shared-nofuse", doc="as shared-nofuse, on the layoutd-b3 volumes (carved by layoutctl apply)"),
    dict(name="layoutd-b3-prealloc-nofuse", storage="volumes", bound=3, daemon=False, mode="syncfs",
         layer="nofuse", ref="shared-nofuse", prealloc=True,
         doc="as layoutd-b3-nofuse, preallocate: true (backing files fallocated at carve; issue 21)"),
    dict(name="native-fsync", storage="volumes", bound=3, daemon=False, mode="fsync", layer="native",
         ref="shared", doc="no FUSE, on the layoutd-b3 volumes, fsync per file + directories (durable control)"),
    dict(name="native-buffered", storage="volumes", bound=3, daemon=False, mode="buffered", layer="native",
         ref="shared", doc="no FUSE, on the layoutd-b3 volumes, no sync (floor, not durable)"),
]
ARM = {a["name"]: a for a in ARMS}
NAMES = [a["name"] for a in ARMS]
ARM_DOC = {a["name"]: a["doc"] for a in ARMS}

# Issue 16's targets: (arm, reference arm, limit, N, what).
TARGETS = [
    ("layoutd-b3-nofuse", "shared-nofuse", 0.5, 21, "nofuse: layoutd-b3 ≤ 0.5 × shared"),
    ("layoutd-b3", "shared", 0.6, 9, "wsfs (efficient defaults): layoutd-b3 ≤ 0.6 × shared at N=9"),
    ("layoutd-b3", "shared", 0.6, 21, "wsfs (efficient defaults): layoutd-b3 ≤ 0.6 × shared at N=21"),
    ("layoutd-b3", "native-fsync", 1.2, 21, "wsfs (efficient defaults): layoutd-b3 ≤ 1.2 × native-fsync at N=21"),
    ("layoutd-b3", "shared", 0.45, 21, "moonshot, full stack: layoutd-b3 ≤ 0.45 × shared at N=21"),
]
