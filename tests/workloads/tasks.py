#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Runs one workload task in a list of directories at once.

  tasks.py list
  tasks.py run TASK [--profile small|full] [--set KEY=VALUE]... [--tag T] [--keep] [--out FILE] DIR...

Each DIR gets its own TASK-TAG/ subdirectory (which must not exist), the
task runs in all of them at the same instant (one thread each, a common
start barrier), verifies its result, and the subdirectory is removed
(untimed) unless --keep. One JSON line per DIR goes to stdout (and is
appended to FILE). Exit status: 0 when every DIR's task ran and verified,
1 otherwise, 2 usage. Inputs (a package store, a repository, ...) are
generated once per parameter set and cached on the host filesystem
(LAYOUTD_WORKLOADS_CACHE, default /var/tmp/layoutd-workloads).

This is the piece other tests reuse: any list of directories will do (the
mounts of workspaces, host dirs, a single workspace of another layout).
Only the Debian python3 standard library (/usr/bin/python3).
"""
import argparse
import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import task_cargo  # noqa: E402
import task_cbuild  # noqa: E402
import task_git  # noqa: E402
import task_pkginstall  # noqa: E402
import task_publish  # noqa: E402
from wlcommon import Phases, TaskError, rm_rf  # noqa: E402

# The order a run takes them in: the package install, which stresses a
# daemon most, last, so that a daemon it breaks does not hide the others.
# (cargo-build is asked for by name only: it needs cargo and Debian's crates.)
TASKS = {m.NAME: m for m in (task_git, task_cbuild, task_publish, task_pkginstall, task_cargo)}


def params_for(name, profile, overrides=None):
    mod = TASKS[name]
    p = dict(mod.PROFILES[profile])
    for k, v in (overrides or {}).items():
        if k not in p:
            raise KeyError(f"{name} has no parameter {k!r} (has {', '.join(sorted(p))})")
        p[k] = type(p[k])(v) if not isinstance(p[k], tuple) else tuple(int(x) for x in v.split(","))
    return p


def prepare(name, params):
    """Generates (or finds cached) the task's inputs; untimed."""
    return TASKS[name].prepare(params)


def _run_one(mod, inp, d, tag, barrier, meet, keep, rec):
    work = os.path.join(d, f"{mod.NAME}-{tag}")
    ph = Phases()
    ph.barrier = meet
    rec.update({"task": mod.NAME, "dir": d, "ok": False, "error": None})
    try:
        os.mkdir(work)
    except OSError as e:
        rec["error"] = f"mkdir {work}: {e}"
    try:
        barrier.wait(timeout=600)
    except threading.BrokenBarrierError:
        rec["error"] = rec["error"] or "start barrier broken"
    if rec["error"]:
        meet.abort()  # the others must not wait for this one at a meeting point
        return
    t0 = time.monotonic()
    try:
        mod.run(inp, work, ph)
        rec["ok"] = True
    except (TaskError, OSError, ValueError) as e:
        rec["error"] = str(e)
    finally:
        if not rec["ok"]:
            meet.abort()
    rec["wall_seconds"] = round(time.monotonic() - t0, 3)
    rec["seconds"] = ph.seconds()
    rec["phases"] = ph.timed
    rec["untimed"] = ph.untimed
    rec["info"] = ph.info
    if not keep:
        t1 = time.monotonic()
        ok, msg = rm_rf(work)
        rec["untimed"]["cleanup"] = round(time.monotonic() - t1, 3)
        if not ok:
            # Kept apart: after a failed task, whether the mount can still
            # delete what it made is evidence of its own.
            rec["cleanup_error"] = msg
            rec["ok"] = False
            rec["error"] = rec["error"] or f"cleanup: {msg}"


def run_batch(name, inp, dirs, tag="0", keep=False):
    """Runs task name in every dir at once. Returns one record per dir,
    in the order of dirs; never raises for a task's failure."""
    mod = TASKS[name]
    barrier = threading.Barrier(len(dirs))
    meet = threading.Barrier(len(dirs))  # the tasks' later meeting points (Phases.together)
    recs = [{} for _ in dirs]
    th = [threading.Thread(target=_run_one, args=(mod, inp, d, tag, barrier, meet, keep, r))
          for d, r in zip(dirs, recs)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return recs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    r = sub.add_parser("run")
    r.add_argument("task", choices=sorted(TASKS))
    r.add_argument("dirs", nargs="+")
    r.add_argument("--profile", default="small", choices=["small", "full"])
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a parameter")
    r.add_argument("--tag", default=str(os.getpid()))
    r.add_argument("--keep", action="store_true", help="leave TASK-TAG/ in each dir")
    r.add_argument("--out", help="append the JSON lines to this file too")
    a = ap.parse_args()
    if a.cmd == "list":
        for n, m in TASKS.items():
            print(f"{n}: target <= {m.TARGET}x host dir; small {m.PROFILES['small']}; full {m.PROFILES['full']}")
        return 0
    try:
        params = params_for(a.task, a.profile, dict(s.split("=", 1) for s in a.set))
    except (KeyError, ValueError) as e:
        print(f"tasks.py: {e}", file=sys.stderr)
        return 2
    inp = prepare(a.task, params)
    if a.task == task_pkginstall.NAME:
        setup, reason = task_pkginstall.pnpm_setup()
        if not setup:
            print(f"tasks.py: real pnpm install --offline: SKIPPED: {reason}", file=sys.stderr)
    recs = run_batch(a.task, inp, [os.path.abspath(d) for d in a.dirs], a.tag, a.keep)
    out = open(a.out, "a") if a.out else None
    for rec in recs:
        rec["params"] = params
        line = json.dumps(rec)
        print(line)
        if out:
            out.write(line + "\n")
        if not rec["ok"]:
            print(f"tasks.py: {a.task} in {rec['dir']}: FAILED: {rec['error']}", file=sys.stderr)
    return 0 if all(x["ok"] for x in recs) else 1


if __name__ == "__main__":
    sys.exit(main())
