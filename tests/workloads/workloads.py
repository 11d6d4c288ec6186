#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The real-workloads suite's driver (tests/workloads/README.md).

  workloads.py run --work DIR --build BUILD --out OUT [--profile small|full] [--n N] [--repeats R]
                   [--tasks a,b] [--set TASK.KEY=VALUE]... [--daemon PATH] [--daemon-arg ARG]...
                   [--per-volume B] [--shards S] [--state-size SIZE] [--content-size SIZE]
                   [--backend loop-ext4|loop-xfs]
  workloads.py report --out OUT        (re-derive the summary from OUT/runs.jsonl)

Starts the real agent on a loop-ext4 (or --backend loop-xfs) layout below DIR, makes N workspaces
through its API and waits for each to run and to be mounted as a FUSE
filesystem of the expected type; makes N plain host directories below
DIR. Then, per repeat and task, runs the task in the N workspace mounts at
once and in the N host dirs at once (tasks.run_batch), the two arms in an
order that alternates, with the page cache dropped before each batch.
Every run is recorded (OUT/runs.jsonl, one line per directory and run;
OUT/batches.jsonl, one per batch) and summarised (OUT/summary.md,
OUT/summary.json): per task the median time in workspaces and in host
dirs, their ratio, and the target, met or not.

A daemon that dies or restarts fails the runs of its workspace; the
workspaces are then made anew (new ids) before the next batch, so one
task's breakage is not blamed on the next. Nothing here asserts anything
about time: the exit status is 1 when any run failed (either arm) or the
stack did not come up, 0 otherwise.

Environment (the same as the options; the options win):
  LAYOUTD_WORKLOADS_DAEMON       the daemon binary (default BUILD/examples/wsfs/layoutd-wsfs)
  LAYOUTD_WORKLOADS_DAEMON_ARGS  extra arguments for it, shell-split (e.g. "--threads=2")
  LAYOUTD_WORKLOADS_COMMAND      the layout's whole workspace.command, a YAML flow list
                                 with the layout's placeholders; replaces the two above
  LAYOUTD_WORKLOADS_FSTYPE       the mount type to wait for (default fuse.layoutd-wsfs
                                 for layoutd-wsfs, any fuse.* otherwise)
Only the Debian python3 standard library (/usr/bin/python3).
"""
import argparse
import http.client
import json
import math
import os
import platform
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tasks  # noqa: E402

PROFILES = {
    # CI: correctness only, a few minutes on the 2-core machine. Two
    # repeats: the arms' order alternates between them, so each runs both
    # first and second; a third added 2.7 min to every run and nothing
    # the second does not check (issue 38).
    "small": dict(n=6, repeats=2, state_size="2GiB", content_size="2GiB", per_volume=3, shards=1),
    # The benchmark: N=8, three repeats. State volumes hold three
    # workspaces' installs at once (3 x ~1 GB + metadata for 180,000
    # inodes); content shards hold the deduplicated objects (~1 GB). The
    # backing files are sparse, but the agent never overcommits the host
    # filesystem: 3 x 12 + 4 x 4 = 52 GiB must be free at carve time.
    "full": dict(n=8, repeats=3, state_size="12GiB", content_size="4GiB", per_volume=3, shards=4),
}
ORDER = ["git", "c-build", "publish", "pkg-install"]
ARMS = ["workspace", "host"]


def log(msg):
    print(f"[workloads] {msg}", file=sys.stderr, flush=True)


class Stop(Exception):
    pass


def on_signal(signum, frame):
    raise Stop(f"signal {signum}")


class SetupError(Exception):
    pass


# ---------------------------------------------------------------- the agent's API

class UnixHTTP(http.client.HTTPConnection):
    def __init__(self, path, timeout=60):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


def api(sock, method, path, body=None, timeout=60):
    c = UnixHTTP(sock, timeout)
    try:
        c.request(method, path, body=json.dumps(body) if body is not None else None,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        try:
            return r.status, json.loads(data) if data else None
        except ValueError:
            return r.status, {"raw": data.decode(errors="replace")}
    finally:
        c.close()


def poll(cond, timeout, what, interval=0.1):
    """Polls cond() until it returns a true value (the only place we poll)."""
    end = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > end:
            raise SetupError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def mount_types():
    """{mount point: fs type} from /proc/self/mountinfo."""
    out = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            a, b = line.split(" - ", 1)
            mp = a.split()[4].encode().decode("unicode_escape")
            out[mp] = b.split()[0]
    return out


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, TypeError):
        return None


def fd_count(pid):
    """Open fds of a process (a daemon that keeps one per inode grows this)."""
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, TypeError):
        return None


def nofile_limit(pid):
    try:
        with open(f"/proc/{pid}/limits") as f:
            for line in f:
                if line.startswith("Max open files"):
                    return [int(x) if x.isdigit() else x for x in line.split()[3:5]]
    except OSError:
        pass
    return None


def cpu_times():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return {"user": v[0] + v[1], "system": v[2] + v[5] + v[6], "idle": v[3], "iowait": v[4], "steal": v[7]}


def cpu_delta(a, b):
    d = {k: b[k] - a[k] for k in a}
    tot = sum(d.values()) or 1
    return {k + "_pct": round(100.0 * v / tot, 1) for k, v in d.items()}


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Stack:
    """The agent on its layout, and the workspaces it serves."""

    def __init__(self, c):
        self.c = c
        self.root = os.path.join(c.work, "root")
        self.sock = os.path.join(c.work, "api.sock")
        self.layout = os.path.join(c.work, "layout.yaml")
        self.proc = None
        self.gen = 0
        self.ids = []
        self.workspaces = {}
        self.tainted = False  # a run failed in these workspaces

    def command(self):
        if self.c.command:
            return self.c.command
        argv = [self.c.daemon, "--state", "{state_dir}", "--content", "{content_dirs}"] + self.c.daemon_args + \
            ["{mountpoint}"]
        return "[" + ", ".join(json.dumps(a) for a in argv) + "]"

    def layout_yaml(self):
        c = self.c
        nvol = int(math.ceil(c.n / c.per_volume))
        # mkfs.ext4's lazy init would write the inode tables during the
        # runs; XFS allocates its inodes as it goes and has none to turn off.
        mkfs = 'mkfs_options: ["-E", "lazy_itable_init=0,lazy_journal_init=0"]' if c.backend == "loop-ext4" else ""
        return f"""# tests/workloads, profile {c.profile}, N={c.n}, {c.backend} (generated)
# The shape of layouts/ext4-dio.yaml, sized for the profile.
version: 1
root: {self.root}
pools:
  state:
    backend: {c.backend}
    volume_size: {c.state_size}
    min_volumes: {nvol}
    max_volumes: {nvol}
    workspaces_per_volume: {c.per_volume}
    direct_io: true
    writeback: {{max_bytes: 256MiB, strict_limit: true}}
    {mkfs}
    mount_options: noatime
    placement: spread
    workspace_reserve: 512MiB
    workspace_reserve_inodes: 65536
  content:
    backend: {c.backend}
    volume_size: {c.content_size}
    shards: {c.shards}
    direct_io: true
    writeback: {{max_bytes: 512MiB}}
    mount_options: noatime
workspace:
  mount_root: {self.root}/mnt
  command: {self.command()}
  package_store: true  # used only by pkg-install's pnpm_modes=store
  cache: true  # used by pkg-install's pnpm_modes=cache and cargo-build
  restart: never
  ready_timeout: 30s
  stop_timeout: 20s
  hang_timeout: 0
api:
  socket: {self.sock}
  flush_probe_interval: 0
"""

    def start(self):
        with open(self.layout, "w") as f:
            f.write(self.layout_yaml())
        # pkg-install's pnpm_modes=cache asks the agent for the cache's
        # environment, as an orchestrator would.
        os.environ["LAYOUTD_WORKLOADS_SOCK"] = self.sock
        # ... and counts the requests its install costs the daemon
        # (<root>/run/<id>.stats, the agent's LAYOUTD_STATS_FILE).
        os.environ["LAYOUTD_WORKLOADS_STATS_DIR"] = os.path.join(self.root, "run")
        self.log = open(os.path.join(self.c.work, "agent.log"), "w")
        self.proc = subprocess.Popen([self.c.layoutd, "--layout", self.layout], stdout=self.log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        with open(os.path.join(self.c.work, "agent.pids"), "a") as f:
            f.write(f"{self.proc.pid}\n")

        def up():
            if self.proc.poll() is not None:
                raise SetupError(f"layoutd exited with {self.proc.returncode}: {self.log_tail()}")
            if not os.path.exists(self.sock):
                return None
            try:
                st, v = api(self.sock, "GET", "/v1/volumes")
            except OSError:
                return None
            vols = (v or {}).get("volumes", [])
            bad = [x for x in vols if x.get("state") == "failed"]
            if bad:
                raise SetupError(f"volume {bad[0]['name']} failed: {bad[0].get('message')}")
            if not (st == 200 and vols and all(x.get("state") == "up" for x in vols)):
                return None
            # Creates are refused (503 not_ready) until the agent has
            # reconciled its record with the volumes: READY=1 comes then.
            st, s = api(self.sock, "GET", "/v1/status")
            return vols if st == 200 and (s or {}).get("state") == "ready" else None
        vols = poll(up, 600, "the agent's volumes to be up and the agent ready")
        self.volumes = [{k: v.get(k) for k in ("name", "backend", "device", "direct_io", "size_bytes")}
                        for v in vols]
        log(f"agent up: {len(vols)} volumes ({', '.join(v['name'] for v in vols)})")

    def log_tail(self, n=30):
        try:
            with open(self.log.name) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""

    def make_workspaces(self):
        self.gen += 1
        self.ids = [f"ws-{i}" if self.gen == 1 else f"ws-{i}-g{self.gen}" for i in range(self.c.n)]
        for wid in self.ids:
            # 201: created and running; 202: the create (an operation) outlasted
            # the agent's wait; either way the poll below waits for it.
            st, v = api(self.sock, "POST", "/v1/workspaces", {"id": wid}, timeout=120)
            if st not in (201, 202):
                raise SetupError(f"POST /v1/workspaces {wid}: {st} {v}")

        def running():
            st, v = api(self.sock, "GET", "/v1/workspaces")
            ws = {w["id"]: w for w in (v or {}).get("workspaces", []) if w["id"] in self.ids}
            bad = [w for w in ws.values() if w["daemon"].get("state") in ("failed", "backoff", "stopped")]
            if bad:
                raise SetupError(f"daemon of {bad[0]['id']} is {bad[0]['daemon']}: {self.log_tail()}")
            if len(ws) != len(self.ids) or not all(w["daemon"].get("state") == "running" for w in ws.values()):
                return None
            types = mount_types()
            if not all(self.fstype_ok(types.get(w["mountpoint"])) for w in ws.values()):
                return None
            return ws
        self.workspaces = poll(running, 120, f"{self.c.n} workspaces running and mounted as {self.c.fstype}")
        mroot = os.path.join(self.root, "mnt")
        types = mount_types()
        for w in self.workspaces.values():
            if w["mountpoint"] != os.path.join(mroot, w["id"]):
                raise SetupError(f"{w['id']} is mounted at {w['mountpoint']}, not below mount_root {mroot}")
            w["fstype"] = types.get(w["mountpoint"])
        log(f"workspaces {', '.join(self.ids)} running on "
            f"{', '.join(sorted(set(w['volume'] for w in self.workspaces.values())))}")

    def fstype_ok(self, t):
        if t is None:
            return False
        return t == self.c.fstype if self.c.fstype != "fuse.*" else t.startswith("fuse")

    def dirs(self):
        return [self.workspaces[i]["mountpoint"] for i in self.ids]

    def daemons(self):
        """{id: daemon record} as the agent sees them now."""
        st, v = api(self.sock, "GET", "/v1/workspaces", timeout=30)
        return {w["id"]: w["daemon"] for w in (v or {}).get("workspaces", []) if w["id"] in self.ids}

    def remove_workspaces(self):
        for wid in self.ids:
            try:
                api(self.sock, "DELETE", f"/v1/workspaces/{wid}?destroy_data=true", timeout=60)
            except OSError as e:
                log(f"DELETE {wid}: {e}, ignoring")
        ids = set(self.ids)
        poll(lambda: not any(w["id"] in ids for w in
                             (api(self.sock, "GET", "/v1/workspaces", timeout=30)[1] or {}).get("workspaces", [])),
             120, "the workspaces to be removed")
        self.ids, self.workspaces = [], {}
        self.tainted = False

    def stop(self):
        # SIGINT, not SIGTERM: SIGTERM leaves the daemons serving for the
        # next agent (re-adoption); a finished run must leave nothing behind.
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(120)
            except subprocess.TimeoutExpired:
                log("the agent did not stop within 120 s of SIGINT; killing it")
                self.proc.kill()
                self.proc.wait()
        if self.proc:
            self.log.close()


# ---------------------------------------------------------------- one batch

def daemon_counter(stack, i, key):
    """A counter from workspace i's daemon stats file (<root>/run/<id>.stats,
    which the agent names in LAYOUTD_STATS_FILE), or None."""
    try:
        with open(os.path.join(stack.root, "run", i + ".stats")) as f:
            return json.load(f).get(key)
    except (OSError, ValueError):
        return None


def run_arm(c, stack, rep, task, arm, inp, order):
    if arm == "workspace":
        dirs = stack.dirs()
        pids = {i: stack.workspaces[i]["daemon"]["pid"] for i in stack.ids}
        cpu_d0 = {i: proc_cpu_s(p) for i, p in pids.items()}
        clones0 = {i: daemon_counter(stack, i, "store_clones") for i in stack.ids}
    else:
        dirs = c.host_dirs
    batch = {"rep": rep, "task": task, "arm": arm, "n": len(dirs), "order": order,
             "loadavg_before": loadavg(), "wall_start": time.time()}
    drop_caches()
    # The daemons' fd counts, sampled once a second during the batch: the
    # peak is the evidence for (or against) fds bounded by the file count.
    peak, done = {}, threading.Event()

    def sample():
        while not done.wait(1.0):
            for i, p in pids.items():
                k = fd_count(p)
                if k is not None and k > peak.get(i, -1):
                    peak[i] = k
    sampler = threading.Thread(target=sample, daemon=True) if arm == "workspace" else None
    if sampler:
        sampler.start()
    cpu0 = cpu_times()
    t0 = time.monotonic()
    recs = tasks.run_batch(task, inp, dirs, tag=f"r{rep}")
    batch["makespan_seconds"] = round(time.monotonic() - t0, 3)
    done.set()
    if sampler:
        sampler.join()
    batch["cpu"] = cpu_delta(cpu0, cpu_times())
    batch["loadavg_after"] = loadavg()
    if arm == "workspace":
        dm = stack.daemons()
        batch["daemon_cpu_seconds"] = {}
        for i, rec in zip(stack.ids, recs):
            d = dm.get(i, {})
            rec["workspace"] = i
            rec["volume"] = stack.workspaces[i]["volume"]
            rec["daemon_state"] = d.get("state")
            rec["daemon_restarts"] = d.get("restarts")
            c1, c0 = proc_cpu_s(pids[i]), cpu_d0.get(i)
            rec["daemon_cpu_seconds"] = round(c1 - c0, 3) if c1 is not None and c0 is not None else None
            rec["daemon_fds_peak"] = peak.get(i)
            rec["daemon_fds_after"] = fd_count(pids[i])
            rec["daemon_nofile_limit"] = nofile_limit(pids[i])
            # Links from the package store answered with a clone (the
            # stats file is written within ~100 ms of a batch).
            k1, k0 = daemon_counter(stack, i, "store_clones"), clones0.get(i)
            rec["daemon_store_clones"] = k1 - k0 if k1 is not None and k0 is not None else None
            batch["daemon_cpu_seconds"][i] = rec["daemon_cpu_seconds"]
            if d.get("state") != "running" or d.get("restarts") or d.get("pid") != pids[i]:
                rec["ok"] = False
                rec["error"] = (rec.get("error") or "") + \
                    f" [daemon {d.get('state')}, {d.get('restarts')} restarts, last exit {d.get('last_exit')}]"
    batch["ok"] = sum(1 for r in recs if r["ok"])
    if arm == "workspace" and batch["ok"] < len(recs):
        stack.tainted = True
    for i, rec in enumerate(recs):
        rec.update({"rep": rep, "arm": arm, "dir_index": i, "n": len(dirs)})
        c.runs.write(json.dumps(rec) + "\n")
        if not rec["ok"]:
            log(f"rep {rep} {task} {arm} #{i}: FAILED: {rec['error'][:600]}")
    c.runs.flush()
    c.batches.write(json.dumps(batch) + "\n")
    c.batches.flush()
    ok = [r["seconds"] for r in recs if r["ok"]]
    log(f"rep {rep} {task:11s} {arm:9s}: {batch['ok']}/{len(dirs)} ok, median "
        f"{statistics.median(ok) if ok else float('nan'):.2f}s, makespan {batch['makespan_seconds']:.2f}s, "
        f"cpu {batch['cpu']}")
    return all(r["ok"] for r in recs)


def healthy(stack):
    try:
        dm = stack.daemons()
    except OSError:
        return False
    return all(dm.get(i, {}).get("state") == "running" and not dm.get(i, {}).get("restarts") for i in stack.ids)


# ---------------------------------------------------------------- summary

def median(v):
    return round(statistics.median(v), 3) if v else None


def summarize(out):
    runs = []
    with open(os.path.join(out, "runs.jsonl")) as f:
        runs = [json.loads(line) for line in f if line.strip()]
    with open(os.path.join(out, "meta.json")) as f:
        meta = json.load(f)
    n = meta["n"]
    res = {"meta": meta, "tasks": {}}
    for task in meta["tasks"]:
        t = {"target": tasks.TASKS[task].TARGET}
        for arm in ARMS:
            rs = [r for r in runs if r["task"] == task and r["arm"] == arm]
            ok = [r["seconds"] for r in rs if r["ok"]]
            t[arm] = {"runs": len(rs), "ok": len(ok), "median_s": median(ok),
                      "min_s": round(min(ok), 3) if ok else None, "max_s": round(max(ok), 3) if ok else None,
                      "errors": sorted(set((r.get("error") or "").replace("\n", " | ")[:300] for r in rs if not r["ok"]))[:5]}
        cpu = [r["daemon_cpu_seconds"] for r in runs if r["task"] == task and r["arm"] == "workspace" and r["ok"]
               and r.get("daemon_cpu_seconds") is not None]
        t["workspace"]["daemon_cpu_median_s"] = median(cpu)
        fds = [r["daemon_fds_peak"] for r in runs if r["task"] == task and r.get("daemon_fds_peak") is not None]
        t["workspace"]["daemon_fds_peak_max"] = max(fds) if fds else None
        # Per step, over the runs that verified: where the ratio comes from.
        steps = {}
        for r in runs:
            if r["task"] == task and r["ok"]:
                for k, v in (r.get("phases") or {}).items():
                    steps.setdefault(k, {}).setdefault(r["arm"], []).append(v)
        t["steps"] = {k: {arm: median(v.get(arm, [])) for arm in ARMS} for k, v in steps.items()}
        w, h = t["workspace"], t["host"]
        complete = w["runs"] > 0 and h["runs"] > 0 and w["ok"] == w["runs"] and h["ok"] == h["runs"]
        t["ratio"] = round(w["median_s"] / h["median_s"], 2) if w["median_s"] and h["median_s"] else None
        if not w["runs"] or not h["runs"]:
            t["met"] = None
            t["why"] = f"not run to the end ({w['runs']} workspace and {h['runs']} host-dir runs)"
        elif not complete:
            t["met"] = False
            t["why"] = f"{w['runs'] - w['ok']} workspace and {h['runs'] - h['ok']} host-dir runs failed"
        elif n < 8:
            t["met"] = None
            t["why"] = f"targets are stated for N=8; this run had N={n}"
        else:
            t["met"] = t["ratio"] is not None and t["ratio"] <= t["target"]
        res["tasks"][task] = t
    # The real pnpm, per import mode (task_pkginstall.PNPM_MODES): pnpm's
    # defaults (the user's case), --package-import-method=copy and, when
    # asked for, the defaults with a store inside the directory; install
    # and rm -rf each, and how many checked files were hard links.
    for mode in ("default", "copy", "instore", "store", "cache"):
        got = {arm: [r["info"]["pnpm"][mode] for r in runs if r["task"] == "pkg-install" and r["arm"] == arm
                     and r["ok"] and mode in ((r.get("info") or {}).get("pnpm") or {})] for arm in ARMS}
        if not (got["workspace"] or got["host"]):
            continue
        rp = {"runs": {a: len(v) for a, v in got.items()}}
        for key in ("install_s", "rm_rf_s", "seconds"):
            w, h = median([x[key] for x in got["workspace"]]), median([x[key] for x in got["host"]])
            rp[key] = {"workspace_median_s": w, "host_median_s": h, "ratio": round(w / h, 2) if w and h else None}
        rp["hard_linked"] = {a: median([x["hard_linked"] for x in v]) for a, v in got.items()}
        rp["direct_deps_checked"] = max((x["direct_deps_checked"] for v in got.values() for x in v), default=0)
        # What an install and its rm -rf cost the workspace's daemon, per
        # file or link they made (the cache's point: about 0).
        for key in ("daemon_requests_per_file_install", "daemon_requests_per_file_rm_rf"):
            v = [x[key] for x in got["workspace"] if x.get(key) is not None]
            if v:
                rp[key] = median(v)
        if mode == "store":
            rp["store_clones_per_workspace"] = median([r.get("daemon_store_clones") or 0 for r in runs
                                                       if r["task"] == "pkg-install" and r["arm"] == "workspace"
                                                       and r["ok"]])
        res["real_pnpm" if mode == "default" else "real_pnpm_" + mode] = rp
    skipped = sorted(set(((r.get("info") or {}).get("pnpm") or {}).get("skipped") for r in runs
                         if r["task"] == "pkg-install") - {None})
    if skipped:
        res["real_pnpm_skipped"] = skipped
    if "pkg-install" in res["tasks"]:
        p = res["tasks"]["pkg-install"]["workspace"]
        res["pkg_install_correct_in_all_workspaces"] = p["runs"] > 0 and p["ok"] == p["runs"]
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(res, f, indent=1)

    L = [f"# Real workloads: profile {meta['profile']}, N={n}, {meta['repeats']} repeat(s)", "",
         f"{meta['started']}; load average before {meta['loadavg_before']}, after {meta.get('loadavg_after')}; "
         f"kernel {meta['kernel']}; daemon command `{meta['command']}`; {meta['git']}", "",
         "Median time of a task's timed steps per directory (N at once), workspace mounts vs host dirs:", "",
         "| task | workspaces (s) | host dirs (s) | ratio | target | met | runs ok (ws / host) |",
         "|---|---|---|---|---|---|---|"]
    for task, t in res["tasks"].items():
        w, h = t["workspace"], t["host"]
        met = {True: "yes", False: "**no**", None: "n/a"}[t["met"]]
        L.append(f"| {task} | {w['median_s']} | {h['median_s']} | {t['ratio']} | <= {t['target']}x | {met} | "
                 f"{w['ok']}/{w['runs']} / {h['ok']}/{h['runs']} |")
    if "pkg_install_correct_in_all_workspaces" in res:
        L += ["", f"Package install correct in all {n} workspaces (every repeat): "
              f"{'yes' if res['pkg_install_correct_in_all_workspaces'] else '**no**'}"]
    L += ["", "Per step (median seconds over the runs that verified; the step's own ratio), "
          "the daemons' CPU and their peak fd count:", ""]
    for task, t in res["tasks"].items():
        parts = []
        for k, v in t["steps"].items():
            w, h = v["workspace"], v["host"]
            if (w or 0) + (h or 0) >= 0.05:
                parts.append(f"{k} {w}/{h}" + (f" ({w / h:.1f}x)" if w and h else ""))
        w = t["workspace"]
        L.append(f"- {task}: {', '.join(parts) or 'no verified run'}; daemon CPU {w['daemon_cpu_median_s']} s "
                 f"per workspace; daemon fds peak {w['daemon_fds_peak_max']}")
    for ev in meta.get("daemon_deaths_between_batches", []):
        L += ["", f"**A daemon died or restarted between batches** (rep {ev['rep']}, before {ev['before']}): "
              f"{json.dumps(ev['daemons'])[:600]}"]
    if meta.get("setup_error"):
        L += ["", f"**Setup failed**: {meta['setup_error']}"]
    for key, what in (("real_pnpm", "pnpm's defaults"), ("real_pnpm_copy", "`--package-import-method=copy`"),
                      ("real_pnpm_instore", "pnpm's defaults with the warm store copied into each directory "
                       "first (untimed), so that pnpm links inside the mount"),
                      ("real_pnpm_store", "pnpm's defaults with its store in the workspace's package store "
                       "(`.layoutd-store`, filled untimed; host dirs: pnpm's own store on the host)"),
                      ("real_pnpm_cache", "pnpm's defaults plus the environment of each workspace's cache "
                       "(its store seeded untimed; host dirs: pnpm's defaults, its store on the host)")):
        if key not in res:
            continue
        rp = res[key]
        L += ["", f"Real `pnpm install --offline`, {what}, not counted above (median s, workspaces / host dirs, "
              f"ratio; runs ok {rp['runs']['workspace']} / {rp['runs']['host']}; of {rp['direct_deps_checked']} "
              f"direct dependencies' package.json, hard links: {rp['hard_linked']['workspace']} in workspaces, "
              f"{rp['hard_linked']['host']} in host dirs):", ""]
        L += [f"- {step}: {rp[k]['workspace_median_s']} / {rp[k]['host_median_s']} = {rp[k]['ratio']}x"
              for step, k in (("install", "install_s"), ("rm -rf", "rm_rf_s"), ("both", "seconds"))]
        if "daemon_requests_per_file_install" in rp:
            L += [f"- the daemon's FUSE requests per file or link made (median): install "
                  f"{rp['daemon_requests_per_file_install']}, rm -rf {rp.get('daemon_requests_per_file_rm_rf')}"]
        if "store_clones_per_workspace" in rp:
            L += [f"- links answered with a clone by each workspace's daemon (median): "
                  f"{rp['store_clones_per_workspace']}"]
    for why in res.get("real_pnpm_skipped", []):
        L += ["", f"Real `pnpm install --offline`: skipped: {why}"]
    notes = []
    for task, t in res["tasks"].items():
        for arm in ARMS:
            for e in t[arm]["errors"]:
                notes.append(f"- {task}, {arm}: {e}")
        if t.get("why") and t["met"] is not True:
            notes.append(f"- {task}: {t['why']}")
    if notes:
        L += ["", "Failures (up to five distinct messages per task and arm) and unmet or unjudged targets:", ""] + notes
    L += ["", "Raw data: runs.jsonl (one line per directory and run, with each step's time), "
          "batches.jsonl (one per batch: makespan, CPU, daemon CPU), agent.log."]
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    return res, "\n".join(L)


# ---------------------------------------------------------------- main

def git_rev():
    r = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always", "--dirty"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return "commit " + (r.stdout.decode().strip() or "?")


def cmd_run(a):
    prof = dict(PROFILES[a.profile])
    for k in ("n", "repeats", "per_volume", "shards", "state_size", "content_size"):
        if getattr(a, k) is not None:
            prof[k] = getattr(a, k)
    c = argparse.Namespace(**prof, profile=a.profile, backend=a.backend, work=os.path.abspath(a.work),
                           out=os.path.abspath(a.out))
    c.layoutd = os.path.join(a.build, "agent", "layoutd")
    c.daemon = a.daemon or os.environ.get("LAYOUTD_WORKLOADS_DAEMON") or \
        os.path.join(a.build, "examples", "wsfs", "layoutd-wsfs")
    c.daemon_args = a.daemon_arg if a.daemon_arg else shlex.split(os.environ.get("LAYOUTD_WORKLOADS_DAEMON_ARGS", ""))
    c.command = os.environ.get("LAYOUTD_WORKLOADS_COMMAND")
    c.fstype = os.environ.get("LAYOUTD_WORKLOADS_FSTYPE") or \
        ("fuse.layoutd-wsfs" if not c.command and os.path.basename(c.daemon) == "layoutd-wsfs" else "fuse.*")
    names = a.tasks.split(",") if a.tasks else ORDER
    for t in names:
        if t not in tasks.TASKS:
            log(f"unknown task {t} (have {', '.join(tasks.TASKS)})")
            return 2
    c.overrides = {}
    for kv in a.set:
        try:
            tk, v = kv.split("=", 1)
            t, k = tk.split(".", 1)
            c.overrides.setdefault(t, {})[k] = v
            tasks.params_for(t, c.profile, c.overrides[t])
        except (ValueError, KeyError) as e:
            log(f"--set {kv}: {e} (the form is TASK.KEY=VALUE)")
            return 2
    os.makedirs(c.out, exist_ok=True)
    for f in ("runs.jsonl", "batches.jsonl"):
        if os.path.exists(os.path.join(c.out, f)):
            os.rename(os.path.join(c.out, f), os.path.join(c.out, f + ".old"))
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    log(f"profile {c.profile}: N={c.n}, {c.repeats} repeat(s), tasks {', '.join(names)}; "
        f"load average {loadavg()}; results in {c.out}")
    inputs = {}
    for t in names:
        t0 = time.monotonic()
        inputs[t] = tasks.prepare(t, tasks.params_for(t, c.profile, c.overrides.get(t)))
        log(f"inputs of {t} ready in {time.monotonic() - t0:.1f}s")
    if "pkg-install" in names:
        setup, reason = tasks.task_pkginstall.pnpm_setup()
        log(f"real pnpm install --offline: {'runs with ' + setup[0] if setup else 'SKIPPED: ' + reason}")
    c.host_dirs = [os.path.join(c.work, "host", f"h-{i}") for i in range(c.n)]
    for d in c.host_dirs:
        os.makedirs(d)

    stack = Stack(c)
    meta = {"profile": c.profile, "n": c.n, "repeats": c.repeats, "tasks": names, "order": "alternating",
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "loadavg_before": loadavg(),
            "kernel": platform.release(), "cpus": os.cpu_count(), "command": stack.command(), "backend": c.backend,
            "fstype": c.fstype, "git": git_rev(), "work": c.work,
            "params": {t: tasks.params_for(t, c.profile, c.overrides.get(t)) for t in names},
            "inputs": {t: inputs[t].get("meta") for t in names if t == "pkg-install"},
            "host_fs": subprocess.run(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "-T", c.work],
                                      stdout=subprocess.PIPE).stdout.decode().strip()}
    c.runs = open(os.path.join(c.out, "runs.jsonl"), "w")
    c.batches = open(os.path.join(c.out, "batches.jsonl"), "w")
    failed = False
    try:
        stack.start()
        meta["volumes"] = stack.volumes
        meta["layout"] = stack.layout_yaml()
        stack.make_workspaces()
        meta["workspaces"] = {i: {"volume": w["volume"], "flush_scope": w.get("flush_scope"), "fstype": w["fstype"]}
                              for i, w in stack.workspaces.items()}
        with open(os.path.join(c.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        for rep in range(c.repeats):
            for k, task in enumerate(names):
                arms = ARMS if (rep + k) % 2 == 0 else ARMS[::-1]
                for order, arm in enumerate(arms):
                    if arm == "workspace" and (stack.tainted or not healthy(stack)):
                        if not stack.tainted:
                            # Died between batches: no run saw it, but it is a failure of the stack.
                            ev = {"rep": rep, "before": task, "daemons": stack.daemons()}
                            meta.setdefault("daemon_deaths_between_batches", []).append(ev)
                            log(f"a workspace daemon died or restarted between batches: {ev['daemons']}")
                            failed = True
                        log("making the workspaces anew")
                        stack.remove_workspaces()
                        stack.make_workspaces()
                    if not run_arm(c, stack, rep, task, arm, inputs[task], order):
                        failed = True
    except Stop:
        log("interrupted")
        failed = True
    except (SetupError, OSError) as e:
        log(f"FAILED: {e}")
        meta["setup_error"] = str(e)
        failed = True
    finally:
        meta["loadavg_after"] = loadavg()
        meta["agent_log_problems"] = {}
        try:
            if stack.proc and stack.proc.poll() is None and stack.ids:
                stack.remove_workspaces()
        except (SetupError, OSError) as e:
            log(f"removing the workspaces: {e}, ignoring (the teardown unmounts)")
        stack.stop()
        c.runs.close()
        c.batches.close()
        alog = os.path.join(c.work, "agent.log")
        if os.path.exists(alog):
            with open(alog, errors="replace") as f:
                text = f.read()
            for pat in ("Too many open files", "EMFILE", "EBADF", "Bad file descriptor", "No space left",
                        "Input/output error", "failed"):
                if text.count(pat):
                    meta["agent_log_problems"][pat] = text.count(pat)
            with open(os.path.join(c.out, "agent.log"), "w") as f:
                f.write(text)
        with open(os.path.join(c.out, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
    if not os.path.getsize(os.path.join(c.out, "runs.jsonl")):
        log("no run was made: no summary")
        return 1
    _, text = summarize(c.out)
    print(text)
    if meta["agent_log_problems"]:
        log(f"agent log mentions: {meta['agent_log_problems']} (see {c.out}/agent.log)")
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--build", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--profile", default="small", choices=sorted(PROFILES))
    r.add_argument("--n", type=int)
    r.add_argument("--repeats", type=int)
    r.add_argument("--tasks", help=f"comma-separated, of {','.join(tasks.TASKS)} (default: {','.join(ORDER)})")
    r.add_argument("--per-volume", dest="per_volume", type=int, help="workspaces_per_volume (flush-scope bound)")
    r.add_argument("--shards", type=int)
    r.add_argument("--state-size", dest="state_size")
    r.add_argument("--content-size", dest="content_size")
    r.add_argument("--backend", default="loop-ext4", choices=("loop-ext4", "loop-xfs"),
                   help="both pools' backend (default loop-ext4, as layouts/ext4-dio.yaml; loop-xfs is the "
                   "default layout's, where copy_file_range reflinks)")
    r.add_argument("--daemon", help="the workspace daemon binary")
    r.add_argument("--daemon-arg", action="append", default=[], help="an extra daemon argument (repeatable)")
    r.add_argument("--set", action="append", default=[], metavar="TASK.KEY=VALUE",
                   help="change one parameter of a task's profile (e.g. pkg-install.files=20000)")
    s = sub.add_parser("report")
    s.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "report":
        print(summarize(os.path.abspath(a.out))[1])
        return 0
    if a.n is not None and a.n < 1:
        log("--n must be at least 1")
        return 2
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
