#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The isolation profile (issue 21; README.md "Isolation"): does a noisy
neighbour slow the quiet workspaces? Open loop, measured as latency.

N workspaces through the real stack (layoutd + one layoutd-wsfs each); H
of them "heavy" (files of 4 KiB..1 MiB at a fixed target rate each), the
other N-H "quiet" (a save a second: 8 new 4 KiB files, fsync of the last,
fsync of the directory) on a schedule fixed before the run; latency from
the scheduled start (flushscope-latency, latency.c). Per arm, in one
invocation, order shuffled per (N, H, rate):

  shared               the dir backend on the host filesystem
  layoutd-b3           loop-xfs DIO volumes, workspaces_per_volume 3
  layoutd-b3-wscap     as layoutd-b3, per-volume writeback caps (arms.WSCAP)
  layoutd-b3-prealloc  as layoutd-b3, preallocate: true (both pools)
  solo                 as layoutd-b3, the heavy workspaces exist but idle
  layoutd-b3-flushplace  as layoutd-b3 with the flush probe every second and
                       placement by measured flush cost (slow_flush_factor 4,
                       slow_flush_floor's default): the heavy workspaces are created and
                       writing first, the probe sees their volumes, then the
                       quiet ones are placed (volumes may be carved for them)

and, only when named in --arms (they need a cpu cgroup controller):

  layoutd-b3-cpugroups         as layoutd-b3, a CPU cgroup per workspace
                               (daemon and writer), equal weight
  layoutd-b3-cpugroups-daemon  the same with only the daemons grouped
  shared-cpugroups             as shared, with the same CPU cgroups

  latency.py run --work DIR --build BUILD --out OUT [--configs 21:3,9:1] [--rates 30,150]
                 [--duration 40] [--arms ...] [--seed S]
  latency.py report --out OUT

Writes arms.jsonl (one line per arm run), summary.md, summary.csv and
isolation.png (quiet p99 against heavy rate per arm). Asserts nothing about
time; exits 1 when a run broke (a worker error, a daemon that did not come up).
"""
import argparse
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler  # noqa: E402
from arms import WSCAP  # noqa: E402
from cpugroups import CpuGroups  # noqa: E402
from flushscope import Agent, Stop, api, cleanup_below, loadavg, loops_below, on_signal, poll, root_disk, sh  # noqa: E402

ARMS = {
    "shared": dict(storage="shared", doc="the dir backend on the host filesystem (one flush scope for all)"),
    "layoutd-b3": dict(storage="volumes", doc="loop-xfs DIO volumes, workspaces_per_volume 3, one content volume"),
    "layoutd-b3-wscap": dict(storage="volumes", wscap=True,
                             doc=f"as layoutd-b3, writeback caps per volume (state {WSCAP['state']}, "
                                 f"content {WSCAP['content']}, strict_limit)"),
    "layoutd-b3-prealloc": dict(storage="volumes", prealloc=True,
                                doc="as layoutd-b3, preallocate: true (backing files fallocated at carve)"),
    "solo": dict(storage="volumes", solo=True, doc="as layoutd-b3, the heavy workspaces idle (the reference)"),
    "layoutd-b3-cpugroups": dict(storage="volumes", cpugroups="all",
                                 doc="as layoutd-b3, each workspace's daemon and writer in a CPU cgroup of "
                                     "its own, equal weight (cpugroups.py)"),
    "layoutd-b3-cpugroups-daemon": dict(storage="volumes", cpugroups="daemon",
                                        doc="as layoutd-b3, only the daemons in a CPU cgroup each (what the "
                                            "agent's per-daemon scopes give without the harness's help)"),
    "shared-cpugroups": dict(storage="shared", cpugroups="all",
                             doc="as shared, with layoutd-b3-cpugroups' CPU cgroups"),
    "layoutd-b3-flushplace": dict(storage="volumes", flushplace=True,
                                  doc="as layoutd-b3, flush probe every 1s and placement by measured flush cost: "
                                      "heavy ones created and writing first, quiet ones placed after the probe saw them"),
}
# Not in a default run: cgroups are a host property, and these arms need
# root and a cpu controller (v1 or v2). Name them in --arms.
OPTIONAL = {"layoutd-b3-cpugroups", "layoutd-b3-cpugroups-daemon", "shared-cpugroups"}
ORDER = [a for a in ARMS if a not in OPTIONAL]
BOUND = 3
KEEP_BYTES = 256 << 20   # a heavy workspace keeps its last 256 MiB of files
WARM_S = 45              # flushplace: heavy writers run this long before the quiet saves start
PCTS = (50, 95, 99, 99.9)


def log(msg):
    print(f"[isolation] {msg}", file=sys.stderr, flush=True)


def pct(sorted_v, p):
    """Nearest-rank percentile of a sorted list."""
    if not sorted_v:
        return None
    k = max(0, min(len(sorted_v) - 1, int(math.ceil(p / 100.0 * len(sorted_v))) - 1))
    return sorted_v[k]


def jbd2_host():
    """The host root filesystem's journal statistics, or None when it has
    none (/sys/fs/ext4/DEV/journal_task says '<none>')."""
    dev = root_disk()
    out = {"device": dev, "journal_task": sampler.read_first(f"/sys/fs/ext4/{dev}/journal_task") if dev else None}
    p = f"/proc/fs/jbd2/{dev}-8/info"
    if dev and os.path.exists(p):
        with open(p) as f:
            out["info"] = f.read()
    return out


def sched_wait_ns(pid):
    """Run-queue wait of all threads of pid, ns (/proc/PID/task/*/schedstat,
    second field): time runnable but not running, i.e. waiting for a CPU."""
    total = 0
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/schedstat") as f:
                total += int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return total


def wsfs_stats(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def layout_yaml(c, root, spec, n, h, rate_mb):
    sock = f"{root}/api.sock"
    if spec["storage"] == "shared":
        pools = f"""  state: {{backend: dir, min_volumes: 1, max_volumes: 1, workspaces_per_volume: {n}}}
  content: {{backend: dir, shards: 1, gc: false}}"""
    else:
        nvol = int(math.ceil(n / BOUND))
        # State: the quiet saves and the heavy writers' files below 64 KiB
        # plus the one being written (KEEP_BYTES bounds them). Content:
        # every heavy byte ends up there (gc off); what a solo arm writes
        # is small, so it is sized as the loaded arms for the same carve.
        vs = 1024
        # flushplace: room for the quiet ones away from the heavy ones
        # (placement carves them when every volume with room is slow).
        maxv = max(nvol, int(math.ceil((n - h) / BOUND)) + h) if spec.get("flushplace") else nvol
        cs = int(math.ceil((h * rate_mb * 1e6 * c.duration * 1.25 + (1 << 30)) / (1 << 20) / 64.0)) * 64
        extra = lambda role: ((f", writeback: {{max_bytes: {WSCAP[role]}, strict_limit: true}}"
                               if spec.get("wscap") else "") + (", preallocate: true" if spec.get("prealloc") else "")
                               + (", slow_flush_factor: 4" if role == "state" and spec.get("flushplace") else ""))
        pools = f"""  state: {{backend: loop-xfs, volume_size: {vs}MiB, min_volumes: {nvol}, max_volumes: {maxv}, workspaces_per_volume: {BOUND}, direct_io: true{extra("state")}}}
  content: {{backend: loop-xfs, volume_size: {cs}MiB, shards: 1, direct_io: true, gc: false{extra("content")}}}"""
    return f"""# isolation benchmark, arm {spec['name']}, N={n} H={h} (generated)
version: 1
root: {root}
pools:
{pools}
workspace:
  command: [{c.wsfs}, --state, "{{state_dir}}", --content, "{{content_dirs}}", --commit=syncfs, "--stats-file={root}/stats/{{id}}.json", "{{mountpoint}}"]
  restart: never
  ready_timeout: 30s
  stop_timeout: 3s
  hang_timeout: 0
  on_agent_stop: stop
api:
  socket: {sock}
  flush_probe_interval: {"1s" if spec.get("flushplace") else "0"}
"""


def start(c, agent, n, first=0):
    """Creates ws-FIRST..ws-(N-1) and waits until all N daemons run."""
    for i in range(first, n):
        st, v = api(agent.sock, "POST", "/v1/workspaces", {"id": f"ws-{i}"})
        if st // 100 != 2:
            raise RuntimeError(f"POST ws-{i}: {st} {v}")

    def running():
        ws = (api(agent.sock, "GET", "/v1/workspaces")[1] or {}).get("workspaces", [])
        bad = [w for w in ws if w["daemon"].get("state") in ("failed", "backoff", "stopped")]
        if bad:
            raise RuntimeError(f"daemon of {bad[0]['id']} is {bad[0]['daemon']}")
        return ws if len(ws) == n and all(w["daemon"].get("state") == "running" for w in ws) else None
    ws = {w["id"]: w for w in poll(running, 180, "every workspace daemon to be running")}
    with open(c.daemon_pidfile, "a") as f:
        for w in ws.values():
            f.write(f"{w['daemon']['pid']}\n")
    return [ws[f"ws-{i}"] for i in range(first, n)]


def flush_figures(agent):
    """Each volume's recent flush cost as placement weighs it (ms), or None."""
    vols = (api(agent.sock, "GET", "/v1/volumes")[1] or {}).get("volumes", [])
    return {v["name"]: (None if (v.get("flush_probe") or {}).get("recent_seconds") is None
                        else round(v["flush_probe"]["recent_seconds"] * 1000, 2)) for v in vols}


def run_arm(c, n, h, rate_mb, arm, order):
    spec = dict(ARMS[arm], name=arm)
    root = f"{c.work}/iso-n{n}-h{h}-r{rate_mb}-{arm}"
    layout = f"{root}.yaml"
    os.makedirs(f"{root}/stats", exist_ok=True)
    with open(layout, "w") as f:
        f.write(layout_yaml(c, root, spec, n, h, rate_mb))
    rec = {"n": n, "h": h, "rate_MBps": rate_mb if not spec.get("solo") else 0, "arm": arm, "order": order,
           "duration_s": c.duration, "ok": False, "error": None, "wall_start": time.time()}
    agent, ws, pre, groups = None, [], [], None
    try:
        t = time.monotonic()
        agent = Agent(c, root, layout)
        vols = agent.ready()
        rec["carve_s"] = round(time.monotonic() - t, 3)
        rec["volumes"] = [{k: v.get(k) for k in ("name", "backend", "device", "direct_io")} for v in vols]
        pre, start_at = [], None
        if spec.get("flushplace"):
            # The heavy ones first, writing, until the probe has three
            # samples of their volumes; then the quiet ones are placed.
            ws = start(c, agent, h)
            t0 = time.time_ns() + int(1e9)
            for i, w in enumerate(ws):
                cmd = [c.worker, "--dir", w["mountpoint"], "--role", "heavy", "--start-at", str(t0),
                       "--duration", str(WARM_S + c.duration + 30), "--seed", str(c.seed * 1000 + i), "--id", w["id"],
                       "--period-ms", str(c.period_ms), "--keep-bytes", str(KEEP_BYTES), "--rate", str(int(rate_mb * 1e6))]
                pre.append((w["id"], subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
            hvols = {w["volume"] for w in ws}

            def seen():
                f = flush_figures(agent)
                return f if time.time_ns() > t0 + 5e9 and all(f.get(v) is not None for v in hvols) else None
            rec["flush_ms_before_quiet"] = poll(seen, 60, "the flush probe to measure the heavy volumes", interval=0.5)
            log(f"flush figures before the quiet ones are placed (ms): {rec['flush_ms_before_quiet']}")
            ws += start(c, agent, n, first=h)
            start_at = max(t0 + int(WARM_S * 1e9), time.time_ns() + int((1.0 + 0.05 * n) * 1e9))
            if start_at + c.duration * 1e9 > t0 + (WARM_S + c.duration + 30) * 1e9:
                rec["note"] = "placing the quiet ones took so long that the heavy writers stop before the end"
            rec["flush_ms_after"] = flush_figures(agent)
        else:
            ws = start(c, agent, n)
        if spec.get("cpugroups"):
            groups = CpuGroups(f"layoutd-iso-{os.getpid()}")
            for w in ws:
                groups.move(w["id"], w["daemon"]["pid"])
            rec["cpugroups"] = groups.describe() + f", members: {spec['cpugroups']}"
        heavy = {w["id"] for w in ws[:h]}
        hv = {w["volume"] for w in ws if w["id"] in heavy}
        rec["placement"] = {w["id"]: {"volume": w["volume"], "role": "heavy" if w["id"] in heavy else "quiet",
                                      "with_heavy": w["id"] not in heavy and w["volume"] in hv
                                      and spec["storage"] != "shared"} for w in ws}
        loops = loops_below(root)
        devs = sorted(loops) + ([c.root_disk] if c.root_disk else [])
        backing = {d: sampler.read_first(f"/sys/block/{d}/loop/backing_file") for d in loops}
        alloc0 = {d: os.stat(b).st_blocks * 512 for d, b in backing.items() if b and os.path.exists(b)}
        os.sync()
        rec["loadavg_before"] = loadavg()
        io0 = {d: sampler.block_stat(d) for d in devs}
        cpu0 = sampler.cpu_times()
        rec["jbd2_before"] = jbd2_host()
        wait0 = {w["id"]: sched_wait_ns(w["daemon"].get("pid")) for w in ws}
        st0 = {w["id"]: wsfs_stats(f"{root}/stats/{w['id']}.json") for w in ws}
        start_at = start_at or time.time_ns() + int((1.0 + 0.05 * n) * 1e9)
        procs = list(pre)
        for i, w in enumerate(ws):
            role = rec["placement"][w["id"]]["role"]
            if role == "heavy" and (spec.get("solo") or spec.get("flushplace")):
                continue
            cmd = [c.worker, "--dir", w["mountpoint"], "--role", role, "--start-at", str(start_at),
                   "--duration", str(c.duration), "--seed", str(c.seed * 1000 + i), "--id", w["id"],
                   "--period-ms", str(c.period_ms), "--keep-bytes", str(KEEP_BYTES)]
            if role == "heavy":
                cmd += ["--rate", str(int(rate_mb * 1e6))]
            p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            procs.append((w["id"], p))
            if spec.get("cpugroups") == "all":
                # Before start_at (at least a second away): the writer only
                # sleeps until then.
                groups.move(w["id"], p.pid)
        res = []
        deadline = time.monotonic() + c.duration + 120
        for wid, p in procs:
            try:
                so, se = p.communicate(timeout=max(1, deadline - time.monotonic()))
                r = json.loads(so.strip().splitlines()[-1])
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                r = {"id": wid, "ok": False, "error": "timed out"}
            except (ValueError, IndexError):
                r = {"id": wid, "ok": False, "error": f"no JSON (exit {p.returncode}): {se.strip()[-300:]}"}
            r.update(rec["placement"][wid])
            res.append(r)
        cpu1 = sampler.cpu_times()
        rec["jbd2_after"] = jbd2_host()
        for r in res:
            pid = next(w["daemon"].get("pid") for w in ws if w["id"] == r["id"])
            w1 = sched_wait_ns(pid)
            if w1 is not None and wait0.get(r["id"]) is not None:
                r["daemon_runq_wait_ms"] = round((w1 - wait0[r["id"]]) / 1e6, 1)
            st1 = wsfs_stats(f"{root}/stats/{r['id']}.json")
            for k in ("flushes", "flush_us", "app_fsyncs"):
                if k in st1:
                    r[f"daemon_{k}"] = st1[k] - (st0.get(r["id"]) or {}).get(k, 0)
        rec["cpu"] = sampler.cpu_delta(cpu0, cpu1)
        rec["io"] = {d: sampler.stat_delta(io0[d], sampler.block_stat(d)) for d in devs}
        rec["io_names"] = {d: (os.path.basename(backing.get(d) or "") or "root fs") for d in devs}
        rec["host_alloc_delta_bytes"] = {os.path.basename(b): os.stat(b).st_blocks * 512 - alloc0.get(d, 0)
                                         for d, b in backing.items() if b and os.path.exists(b)}
        rec["loadavg_after"] = loadavg()
        rec["workspaces"] = res
        # Numbers or it did not run: every quiet worker saved, every heavy one wrote.
        for r in res:
            if r.get("ok") and (r.get("role") == "quiet" and not r.get("saves")
                                or r.get("role") == "heavy" and not r.get("bytes")):
                r["ok"], r["error"] = False, "produced no numbers"
        bad = [r for r in res if not r.get("ok")]
        if bad:
            raise RuntimeError(f"{len(bad)} workers failed; first {bad[0]['id']}: {bad[0].get('error')}")
        rec["ok"] = True
    except Stop:
        rec["error"] = "interrupted"
        raise
    except Exception as e:
        rec["error"] = str(e)
        log(f"N={n} H={h} rate={rate_mb} {arm}: FAILED: {e}")
    finally:
        for _, p in pre:  # a heavy writer started early never outlives its arm
            if p.poll() is None:
                p.kill()
                p.communicate()
        if agent:
            try:
                for w in ws:
                    api(agent.sock, "DELETE", f"/v1/workspaces/{w['id']}", timeout=30)
            except Exception as e:
                log(f"removing workspaces: {e}, ignoring (the agent stops what is left)")
            agent.stop()
            for w in ws:  # never leave a daemon for the next arm
                pid = w["daemon"].get("pid")
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        if root.encode() in f.read():
                            os.kill(pid, signal.SIGKILL)
                            rec["ok"], rec["error"] = False, rec["error"] or "daemon leaked"
                except OSError:
                    pass
        if groups:
            groups.close()
        sh([c.layoutctl, "teardown", "--layout", layout, "--destroy-data"], check=False)
        cleanup_below(root)
        shutil.rmtree(root, ignore_errors=True)
        summarize(rec)
        c.out_arms.write(json.dumps(rec) + "\n")
        c.out_arms.flush()
    return rec


def summarize(rec):
    """The figures of one arm run (rec["summary"])."""
    ws = rec.get("workspaces") or []
    q = sorted(x for w in ws if w.get("role") == "quiet" for x in w.get("lat_us", []))
    qh = sorted(x for w in ws if w.get("role") == "quiet" and w.get("with_heavy") for x in w.get("lat_us", []))
    qo = sorted(x for w in ws if w.get("role") == "quiet" and not w.get("with_heavy") for x in w.get("lat_us", []))
    hv = [w for w in ws if w.get("role") == "heavy"]
    s = {"saves": len(q), "quiet_ws": sum(1 for w in ws if w.get("role") == "quiet"),
         "quiet_with_heavy": sorted(w["id"] for w in ws if w.get("with_heavy")),
         "heavy_volumes": sorted({p["volume"] for p in (rec.get("placement") or {}).values() if p["role"] == "heavy"}),
         "heavy_got_MBps": [w.get("got_MBps") for w in hv],
         "heavy_lag_max_ms": max((w.get("lag_max_ms") or 0 for w in hv), default=None)}
    for p in PCTS:
        s[f"p{p:g}_ms"] = round(pct(q, p) / 1000, 2) if q else None
    s["max_ms"] = round(q[-1] / 1000, 2) if q else None
    s["p99_with_heavy_ms"] = round(pct(qh, 99) / 1000, 2) if qh else None
    s["p99_other_ms"] = round(pct(qo, 99) / 1000, 2) if qo else None
    io = rec.get("io") or {}
    names = rec.get("io_names") or {}
    rootd = [d for d, nm in names.items() if nm == "root fs"]
    if rootd and io.get(rootd[0]):
        s["root_flushes"] = io[rootd[0]]["flush_ios"]
        s["root_write_MB"] = round(io[rootd[0]]["write_bytes"] / 1e6, 1)
        s["root_write_ios"] = io[rootd[0]]["write_ios"]
    qw = [w for w in ws if w.get("role") == "quiet"]
    if qw and q and all("runq_wait_us" in w for w in qw):  # (runs from before it was recorded: none)
        tot = sum(q) / 1000.0  # ms of save latency, all quiet saves
        s["quiet_worker_runq_ms_per_save"] = round(sum(w.get("runq_wait_us", 0) for w in qw) / 1000.0 / len(q), 2)
        s["quiet_daemon_runq_ms_per_save"] = round(sum(w.get("daemon_runq_wait_ms") or 0 for w in qw) / len(q), 2)
        s["quiet_flush_ms_per_save"] = round(sum((w.get("daemon_flush_us") or 0) for w in qw) / 1000.0 / len(q), 2)
        s["quiet_mean_ms"] = round(tot / len(q), 2)
    s["host_alloc_MB"] = round(sum((rec.get("host_alloc_delta_bytes") or {}).values()) / 1e6, 1)
    s["cpu_busy_pct"] = round(100 - (rec.get("cpu") or {}).get("idle_pct", 100) - (rec.get("cpu") or {}).get(
        "iowait_pct", 0), 1)
    s["iowait_pct"] = (rec.get("cpu") or {}).get("iowait_pct")
    rec["summary"] = s


# ---------------------------------------------------------------- report

COLS = ["n", "h", "rate", "arm", "heavy got MB/s (each)", "p50", "p95", "p99", "p99.9", "max",
        "p99 with heavy", "p99 other", "mean", "runq wait/save", "flush/save", "root flushes", "host alloc MB",
        "CPU busy %", "carve s", "load before"]


def report(out):
    recs = [json.loads(l) for l in open(f"{out}/arms.jsonl") if l.strip()]
    for r in recs:
        summarize(r)  # from the raw lines: a changed summary re-derives old runs
    rows = []
    rank = {a: i for i, a in enumerate(ARMS)}
    for r in sorted(recs, key=lambda r: (-r["n"], r["rate_MBps"], rank.get(r["arm"], 99))):
        s = r.get("summary") or {}
        got = s.get("heavy_got_MBps") or []
        rows.append([r["n"], r["h"], r["rate_MBps"], r["arm"] + ("" if r["ok"] else " (FAILED)"),
                     "/".join(f"{x:.0f}" for x in got) if got else "-",
                     s.get("p50_ms"), s.get("p95_ms"), s.get("p99_ms"), s.get("p99.9_ms"), s.get("max_ms"),
                     s.get("p99_with_heavy_ms"), s.get("p99_other_ms"), s.get("quiet_mean_ms"),
                     (round(s["quiet_worker_runq_ms_per_save"] + s["quiet_daemon_runq_ms_per_save"], 2)
                      if s.get("quiet_daemon_runq_ms_per_save") is not None else None),
                     s.get("quiet_flush_ms_per_save"), s.get("root_flushes"),
                     s.get("host_alloc_MB"), s.get("cpu_busy_pct"), r.get("carve_s"),
                     (r.get("loadavg_before") or [None])[0]])
    fmt = lambda v: "-" if v is None else str(v)
    md = ["# Isolation: quiet-save latency (ms) under heavy neighbours", "",
          "Latency from each save's scheduled start (8 × 4 KiB files, fsync last, fsync dir), all quiet "
          "workspaces pooled; `p99 with heavy` / `other`: quiet workspaces whose state volume holds / does not "
          "hold a heavy one (shared: all on one). Solo: the heavy workspaces idle. `mean`, `runq wait/save` "
          "(the quiet workers' and their daemons' run-queue wait, schedstat) and `flush/save` (their daemons' "
          "syncfs time, wsfs stats) are per save, in ms. Root flushes: flush requests that reached the host disk.", "",
          "| " + " | ".join(COLS) + " |", "|" + "---|" * len(COLS)]
    md += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    md += ["", "Placement (heavy volumes; quiet workspaces sharing one with a heavy):"]
    for r in recs:
        s = r.get("summary") or {}
        md.append(f"- N={r['n']} H={r['h']} rate={r['rate_MBps']} {r['arm']}: heavy on {s.get('heavy_volumes')}, "
                  f"quiet with heavy {s.get('quiet_with_heavy')}")
    j = next((r.get("jbd2_before") for r in recs if r.get("jbd2_before")), None)
    if j:
        md += ["", f"Host root filesystem {j.get('device')}: journal task {j.get('journal_task')!r}"
               + ("" if j.get("info") else " (no jbd2 statistics: the filesystem has no journal)")]
    with open(f"{out}/summary.md", "w") as f:
        f.write("\n".join(md) + "\n")
    with open(f"{out}/summary.csv", "w") as f:
        f.write(",".join(f'"{c}"' for c in COLS) + "\n")
        for row in rows:
            f.write(",".join(fmt(v) for v in row) + "\n")
    plot(out, recs)
    return "\n".join(md)


def plot(out, recs):
    """isolation.png: quiet p99 against the heavy target rate, one line per
    (arm, N/H); solo (no heavy) drawn flat across the rates."""
    if not shutil.which("gnuplot"):
        return
    series = {}
    rates = sorted({r["rate_MBps"] for r in recs if r["rate_MBps"]})
    for r in recs:
        s = r.get("summary") or {}
        if not r["ok"] or s.get("p99_ms") is None:
            continue
        key = f"{r['arm']} N={r['n']}/H={r['h']}"
        for x in (rates if r["arm"] == "solo" else [r["rate_MBps"]]):
            series.setdefault(key, {}).setdefault(x, []).append(s["p99_ms"])
    if not series:
        return
    plots = []
    for k, (name, by_rate) in enumerate(sorted(series.items())):
        dat = f"{out}/plot-{k}.dat"
        with open(dat, "w") as f:  # the median of the runs at a rate
            for x in sorted(by_rate):
                v = sorted(by_rate[x])
                f.write(f"{x} {v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2}\n")
        dash = "dt 2" if "N=9" in name else "dt 1"
        plots.append(f"'{dat}' using 1:2 with linespoints {dash} lw 2 title '{name}'")
    gp = f"""set terminal pngcairo size 1000,620
set output '{out}/isolation.png'
set title 'Quiet-save p99 under heavy neighbours (open loop, from the scheduled start)'
set xlabel 'heavy target rate per heavy workspace (MB/s)'
set ylabel 'quiet save p99 (ms)'
set logscale y
set key outside right
set grid
plot {", ".join(plots)}
"""
    sh(["gnuplot"], input=gp, check=False)


# ---------------------------------------------------------------- main

def cmd_run(a):
    if not os.path.isabs(a.work) or not os.path.isdir(a.work) or os.path.realpath(a.work) == "/":
        sys.exit(f"--work must be an existing absolute directory other than /, not '{a.work}'")
    c = argparse.Namespace(**vars(a))
    c.layoutd = f"{a.build}/agent/layoutd"
    c.layoutctl = f"{a.build}/agent/layoutctl"
    c.wsfs = f"{a.build}/examples/wsfs/layoutd-wsfs"
    c.worker = f"{a.build}/tests/bench/flushscope/flushscope-latency"
    for p in (c.layoutd, c.layoutctl, c.wsfs, c.worker):
        if not os.access(p, os.X_OK):
            sys.exit(f"not built: {p}")
    c.pidfile = f"{a.work}/agent.pids"
    c.daemon_pidfile = f"{a.work}/daemon.pids"
    c.root_disk = root_disk()
    configs = [tuple(int(x) for x in s.split(":")) for s in a.configs.split(",")]
    rates = [float(x) for x in a.rates.split(",")]
    arms = a.arms.split(",") if a.arms else ORDER
    for x in arms:
        if x not in ARMS:
            sys.exit(f"unknown arm {x}; arms: {', '.join(ARMS)}")
    os.makedirs(a.out, exist_ok=True)
    meta = {"configs": configs, "rates_MBps": rates, "arms": arms, "duration_s": a.duration, "seed": a.seed,
            "period_ms": a.period_ms, "arm_doc": {k: v["doc"] for k, v in ARMS.items()}, "wscap": WSCAP,
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "loadavg": loadavg(), "nproc": os.cpu_count(),
            "kernel": os.uname().release, "host_journal": jbd2_host()}
    with open(f"{a.out}/meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    failed, t0 = 0, time.monotonic()
    with open(f"{a.out}/arms.jsonl", "w") as c.out_arms:
        for n, h in configs:
            if not 0 < h < n:
                sys.exit(f"config {n}:{h}: need 0 < H < N")
            runs = [(r, arm) for r in rates for arm in arms if arm != "solo"]
            if "solo" in arms:
                runs.append((rates[0], "solo"))
            random.Random(a.seed * 31 + n).shuffle(runs)
            for k, (rate, arm) in enumerate(runs):
                r = run_arm(c, n, h, rate, arm, k)
                failed += not r["ok"]
                s = r.get("summary") or {}
                log(f"N={n} H={h} rate={rate:g} {arm}: p50 {s.get('p50_ms')} p99 {s.get('p99_ms')} max "
                    f"{s.get('max_ms')} ms, heavy got {s.get('heavy_got_MBps')}, load {r.get('loadavg_before')}, "
                    f"total {time.monotonic() - t0:.0f}s")
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    meta["loadavg_end"] = loadavg()
    with open(f"{a.out}/meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    print(report(a.out))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--build", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--configs", default="21:3,9:1", help="N:H pairs")
    r.add_argument("--rates", default="30,150", help="heavy target MB/s per heavy workspace")
    r.add_argument("--duration", type=float, default=40)
    r.add_argument("--period-ms", type=float, default=1000)
    r.add_argument("--arms", help=f"comma-separated subset of {','.join(ARMS)} (default: {','.join(ORDER)})")
    r.add_argument("--seed", type=int, default=1)
    q = sub.add_parser("report")
    q.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "report":
        print(report(a.out))
        return 0
    try:
        return cmd_run(a)
    except Stop as e:
        log(f"interrupted ({e}); what ran is in {a.out}/arms.jsonl")
        return 130


if __name__ == "__main__":
    sys.exit(main())
