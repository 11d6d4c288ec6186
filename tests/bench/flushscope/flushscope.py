#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The flush-scope benchmark driver (docs/benchmarks.md, "Flush scope").

Runs N workspaces of flushscope-workload in parallel per arm, for every N
and repeat, arms in a shuffled order per repeat, through the real stack
(layoutd + layoutd-wsfs), and writes raw JSON lines, a markdown summary
and a gnuplot PNG. Then a small fio job set on a FUSE mount and natively
on the same volume.

  flushscope.py run --work DIR --build BUILD --out OUT [--profile smoke|full] [options]
  flushscope.py report --out OUT          (re-derive summary and plot from OUT/arms.jsonl)

Only the Debian python3 standard library is used (/usr/bin/python3).
Every arm run is kept; a failed run is recorded, never retried; the exit
status is 1 when any run failed (so CI notices a broken benchmark), 0
otherwise. Nothing here asserts anything about time.
"""
import argparse
import http.client
import json
import math
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

ARMS = ["shared", "layoutd-b3", "layoutd-b1", "native-fsync", "native-buffered", "shared-fdatasync"]
ARM_DOC = {
    "shared": "all N on one host filesystem (dir backend), wsfs --commit=syncfs",
    "layoutd-b3": "wsfs --commit=syncfs on loop-ext4 DIO volumes, workspaces_per_volume 3",
    "layoutd-b1": "wsfs --commit=syncfs on loop-ext4 DIO volumes, workspaces_per_volume 1",
    "native-fsync": "no FUSE, on the layoutd-b3 volumes, fsync per file + directories (durable control)",
    "native-buffered": "no FUSE, on the layoutd-b3 volumes, no sync (floor, not durable)",
    "shared-fdatasync": "as shared, wsfs --commit=fdatasync",
}
PROFILES = {
    # < 3 minutes on the 2-core CI machine, whatever the noise.
    "smoke": dict(ns=[1, 3], repeats=1, files=200, fio_size="16M", fio_runtime=1),
    # The scale the full run used on this machine (docs/benchmarks.md).
    "full": dict(ns=[1, 3, 6, 9, 21], repeats=3, files=2000, fio_size="256M", fio_runtime=5),
}
PUBLISHED_FILES = 8000
BOOTSTRAP = 5000


def log(msg):
    print(f"[flushscope] {msg}", file=sys.stderr, flush=True)


class Stop(Exception):
    pass


def on_signal(signum, frame):
    raise Stop(f"signal {signum}")


# ---------------------------------------------------------------- helpers

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
            raise RuntimeError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}): {r.stderr.strip()[-800:]}")
    return r


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


def block_stat(dev):
    """/sys/block/DEV/stat as a dict (Documentation/block/stat.rst)."""
    try:
        with open(f"/sys/block/{dev}/stat") as f:
            v = [int(x) for x in f.read().split()]
    except OSError:
        return None
    v += [0] * (17 - len(v))
    return {"read_ios": v[0], "read_bytes": v[2] * 512, "write_ios": v[4], "write_bytes": v[6] * 512,
            "io_ticks_ms": v[9], "flush_ios": v[15], "flush_ticks_ms": v[16]}


def stat_delta(a, b):
    return {k: b[k] - a[k] for k in a} if a and b else None


def loops_below(root):
    """Loop devices whose backing file is below root: {name: backing file}."""
    r = sh(["losetup", "-n", "-O", "NAME,BACK-FILE"], check=False)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip().startswith(root + "/"):
            out[os.path.basename(parts[0])] = parts[1].strip()
    return out


def root_disk():
    """The block device holding / (for the shared arms' I/O counters)."""
    r = sh(["findmnt", "-n", "-o", "SOURCE", "/"], check=False)
    dev = os.path.basename(r.stdout.strip())
    return dev if os.path.exists(f"/sys/block/{dev}") else None


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def cleanup_below(root):
    """Unmounts everything below root (deepest first), detaches its loops."""
    for _ in range(3):
        r = sh(["findmnt", "-rn", "-o", "TARGET"], check=False)
        ms = sorted((m for m in r.stdout.splitlines() if m == root or m.startswith(root + "/")), reverse=True)
        if not ms:
            break
        for m in ms:
            if sh(["umount", m], check=False).returncode != 0:
                sh(["umount", "-l", m], check=False)
    for name in loops_below(root):
        sh(["losetup", "-d", f"/dev/{name}"], check=False)


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


# ---------------------------------------------------------------- layouts

def volume_sizes(n, bound, files):
    # Mean file size of the mix is ~80 KiB; overwrites add 20 % (CAS keeps
    # old objects), stubs hold their data until the batch commits. Sparse
    # backing files: oversizing costs nothing but inode tables.
    per_ws = files * 80 * 1024 * 1.6
    mib = lambda b: int(math.ceil(b / (1 << 20) / 64.0)) * 64
    return mib(bound * per_ws + (256 << 20)), mib(n * per_ws + (256 << 20))


def layout_yaml(c, root, arm, n):
    sock = f"{root}/api.sock"
    if arm.startswith("shared"):
        commit = "fdatasync" if arm == "shared-fdatasync" else "syncfs"
        pools = f"""  state: {{backend: dir, min_volumes: 1, max_volumes: 1, workspaces_per_volume: {max(n, 1)}}}
  content: {{backend: dir, shards: 1}}"""
    else:
        commit = "syncfs"
        bound = 1 if arm == "layoutd-b1" else 3
        nvol = int(math.ceil(n / bound))
        vs, cs = volume_sizes(n, bound, c.files)
        pools = f"""  state: {{backend: loop-ext4, volume_size: {vs}MiB, min_volumes: {nvol}, max_volumes: {nvol}, workspaces_per_volume: {bound}, direct_io: true}}
  content: {{backend: loop-ext4, volume_size: {cs}MiB, shards: 1, direct_io: true}}"""
    return f"""# flush-scope benchmark, arm {arm}, N={n} (generated)
version: 1
root: {root}
pools:
{pools}
workspace:
  command: [{c.wsfs}, --state, "{{state_dir}}", --content, "{{content_dirs}}", --commit={commit}, "--stats-file={root}/stats/{{id}}.json", "{{mountpoint}}"]
  restart: never
  ready_timeout: 30s
  stop_timeout: 3s
  hang_timeout: 0
api:
  socket: {sock}
  flush_probe_interval: 0
"""


# ---------------------------------------------------------------- one arm

class Agent:
    def __init__(self, c, root, layout):
        self.c, self.root, self.layout = c, root, layout
        self.sock = f"{root}/api.sock"
        self.log = open(f"{root}.agent.log", "w")
        self.proc = subprocess.Popen([c.layoutd, "--layout", layout], stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        with open(c.pidfile, "a") as f:
            f.write(f"{self.proc.pid}\n")

    def ready(self):
        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"layoutd exited with {self.proc.returncode} (log {self.log.name})")
            if not os.path.exists(self.sock):
                return None
            try:
                st, v = api(self.sock, "GET", "/v1/volumes")
            except OSError:
                return None
            vols = (v or {}).get("volumes", [])
            return vols if st == 200 and vols and all(x.get("state") == "up" for x in vols) else None
        return poll(up, 300, "layoutd's volumes to be up")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def run_workloads(c, specs, n):
    """Starts one workload per spec at a common instant; returns parsed results."""
    start_at = time.time_ns() + int((0.5 + 0.05 * n) * 1e9)
    procs = []
    try:
        for s in specs:
            cmd = [c.workload, "--dir", s["dir"], "--files", str(c.files), "--seed", str(s["seed"]),
                   "--mode", s["mode"], "--start-at", str(start_at), "--id", s["id"],
                   "--durable-timeout", str(c.arm_timeout)]
            if s.get("stats"):
                cmd += ["--stats-file", s["stats"], "--daemon-pid", str(s["pid"])]
            procs.append(subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        out = []
        deadline = time.monotonic() + c.arm_timeout
        for s, p in zip(specs, procs):
            try:
                so, se = p.communicate(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                so, se = p.communicate()
                out.append({"id": s["id"], "ok": False, "error": f"killed after {c.arm_timeout}s"})
                continue
            try:
                res = json.loads(so.strip().splitlines()[-1])
            except (ValueError, IndexError):
                res = {"id": s["id"], "ok": False, "error": f"no JSON (exit {p.returncode}): {se.strip()[-400:]}"}
            if p.returncode != 0:
                res["ok"] = False
                res.setdefault("error", se.strip()[-400:])
            res["volume"] = s.get("volume")
            out.append(res)
        return out
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def run_arm(c, rep, n, arm, order):
    root = f"{c.work}/r{rep}-n{n}-{arm}"
    os.makedirs(f"{root}/stats", exist_ok=True)
    layout = f"{root}.yaml"
    with open(layout, "w") as f:
        f.write(layout_yaml(c, root, arm, n))
    rec = {"rep": rep, "n": n, "arm": arm, "order": order, "files_per_ws": c.files, "ok": False, "error": None,
           "wall_start": time.time(), "loadavg_before": loadavg()}
    agent = None
    t_arm = time.monotonic()
    try:
        seeds = [c.seed + rep * 1000 + i for i in range(n)]
        specs = []
        if arm.startswith("native"):
            # The layoutd-b3 volumes, carved by layoutctl apply (no agent,
            # no FUSE); workspace i on state-(i mod volumes), as spread
            # placement does.
            with open(layout, "w") as f:
                f.write(layout_yaml(c, root, "layoutd-b3", n))
            sh([c.layoutctl, "apply", "--layout", layout])
            nvol = int(math.ceil(n / 3))
            for i in range(n):
                d = f"{root}/volumes/state-{i % nvol}/workspaces/ws-{i}"
                os.makedirs(d)
                specs.append({"id": f"ws-{i}", "dir": d, "seed": seeds[i], "volume": f"state-{i % nvol}",
                              "mode": "fsync" if arm == "native-fsync" else "buffered"})
            rec["volumes"] = [{"name": f"state-{k}"} for k in range(nvol)] + [{"name": "content-0"}]
        else:
            agent = Agent(c, root, layout)
            vols = agent.ready()
            rec["volumes"] = [{k: v.get(k) for k in ("name", "backend", "device", "direct_io", "logical_block_size")}
                              for v in vols]
            for i in range(n):
                st, v = api(agent.sock, "POST", "/v1/workspaces", {"id": f"ws-{i}"})
                if st // 100 != 2:
                    raise RuntimeError(f"POST ws-{i}: {st} {v}")

            def running():
                st, v = api(agent.sock, "GET", "/v1/workspaces")
                ws = (v or {}).get("workspaces", [])
                bad = [w for w in ws if w["daemon"].get("state") in ("failed", "backoff", "stopped")]
                if bad:
                    raise RuntimeError(f"daemon of {bad[0]['id']} is {bad[0]['daemon']} (log {agent.log.name})")
                return ws if len(ws) == n and all(w["daemon"].get("state") == "running" for w in ws) else None
            ws = {w["id"]: w for w in poll(running, 120, "every workspace daemon to be running")}
            for i in range(n):
                w = ws[f"ws-{i}"]
                specs.append({"id": w["id"], "dir": w["mountpoint"], "seed": seeds[i], "mode": "fuse",
                              "volume": w["volume"], "flush_scope": w.get("flush_scope"),
                              "pid": w["daemon"]["pid"], "stats": f"{root}/stats/{w['id']}.json"})
        devs = sorted(loops_below(root))
        if arm.startswith("shared") and c.root_disk:
            devs.append(c.root_disk)
        drop_caches()
        io0 = {d: block_stat(d) for d in devs}
        cpu0 = cpu_times()
        t0 = time.monotonic()
        res = run_workloads(c, specs, n)
        rec["arm_seconds"] = round(time.monotonic() - t0, 3)
        rec["cpu"] = cpu_delta(cpu0, cpu_times())
        rec["io"] = {d: stat_delta(io0[d], block_stat(d)) for d in devs}
        rec["io_devices"] = {d: ("root fs" if d == c.root_disk else "loop") for d in devs}
        rec["loadavg_after"] = loadavg()
        if agent:
            st, v = api(agent.sock, "GET", "/v1/workspaces")
            for w in (v or {}).get("workspaces", []):
                r = next((x for x in res if x.get("id") == w["id"]), None)
                if r is None:
                    continue
                r["daemon_state"] = w["daemon"].get("state")
                r["daemon_restarts"] = w["daemon"].get("restarts")
                r["daemon_cpu_s"] = proc_cpu_s(w["daemon"].get("pid"))
                r["flush_scope"] = w.get("flush_scope")
                if r["daemon_state"] != "running" or r["daemon_restarts"]:
                    r["ok"] = False
                    r["error"] = r.get("error") or f"daemon {r['daemon_state']}, {r['daemon_restarts']} restarts"
        rec["workspaces"] = res
        bad = [r for r in res if not r.get("ok")]
        if bad:
            raise RuntimeError(f"{len(bad)}/{n} workspaces failed; first: {bad[0]['id']}: {bad[0].get('error')}")
        rec["ok"] = True
    except Stop:
        rec["error"] = "interrupted"
        raise
    except Exception as e:  # recorded, not retried
        rec["error"] = str(e)
        log(f"rep {rep} N={n} {arm}: FAILED: {e}")
    finally:
        rec["wall_seconds"] = round(time.monotonic() - t_arm, 3)
        if agent:
            try:
                st, v = api(agent.sock, "GET", "/v1/workspaces", timeout=10)
                for w in (v or {}).get("workspaces", []):
                    api(agent.sock, "DELETE", f"/v1/workspaces/{w['id']}", timeout=30)
                poll(lambda: not (api(agent.sock, "GET", "/v1/workspaces", timeout=10)[1] or {}).get("workspaces"),
                     60, "workspaces to be removed")
            except Exception as e:
                log(f"removing workspaces: {e}, ignoring (unmounting below {root})")
            agent.stop()
        sh([c.layoutctl, "teardown", "--layout", layout, "--destroy-data"], check=False)
        cleanup_below(root)
        shutil.rmtree(root, ignore_errors=True)
        c.out_arms.write(json.dumps(rec) + "\n")
        c.out_arms.flush()
    return rec


# ---------------------------------------------------------------- fio

FIO_JOBS = [
    ("seq-write", ["--rw=write", "--bs=1M", "--end_fsync=1"]),
    ("seq-read", ["--rw=read", "--bs=1M"]),
    ("rand-write", ["--rw=randwrite", "--bs=4k", "--time_based", "--end_fsync=1"]),
    ("randrw-70-30", ["--rw=randrw", "--rwmixread=70", "--bs=4k", "--time_based"]),
    ("randread-direct", ["--rw=randread", "--bs=4k", "--direct=1", "--time_based"]),
    ("fsync-heavy", ["--rw=write", "--bs=4k", "--fsync=1", "--time_based"]),
]


def fio_one(c, where, d, name, args):
    cmd = ["fio", "--output-format=json", f"--name={name}", f"--directory={d}", "--filename=fio.dat",
           "--ioengine=psync", f"--size={c.fio_size}", f"--runtime={c.fio_runtime}", "--numjobs=1",
           "--group_reporting"] + args
    drop_caches()
    r = sh(cmd, check=False, timeout=c.fio_runtime * 20 + 120)
    out = {"where": where, "job": name, "args": args, "ok": r.returncode == 0}
    if r.stderr.strip():
        out["stderr"] = r.stderr.strip()[-500:]
    try:
        j = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
        for k in ("read", "write", "sync"):
            s = j.get(k, {})
            if k == "sync":
                lat = s.get("lat_ns", {})
                out["sync"] = {"n": lat.get("N", 0), "p50_us": lat.get("percentile", {}).get("50.000000", 0) / 1e3,
                               "p99_us": lat.get("percentile", {}).get("99.000000", 0) / 1e3}
                continue
            if not s.get("total_ios"):
                continue
            pct = s.get("clat_ns", {}).get("percentile", {})
            out[k] = {"bw_MBps": s["bw_bytes"] / 1e6, "iops": s["iops"],
                      "clat_p50_us": pct.get("50.000000", 0) / 1e3, "clat_p99_us": pct.get("99.000000", 0) / 1e3}
        if j.get("error"):
            out["ok"] = False
            out["error"] = f"fio job error {j['error']}"
    except (ValueError, KeyError, IndexError):
        out["ok"] = False
    if not out["ok"]:
        out.setdefault("error", (r.stderr.strip() or r.stdout.strip())[-300:])
    return out


def run_fio(c):
    """One workspace (layoutd-b3 layout, N=1): fio on its FUSE mount and in
    a directory on the same state volume, job by job, alternating."""
    root = f"{c.work}/fio"
    os.makedirs(f"{root}/stats", exist_ok=True)
    layout = f"{root}.yaml"
    with open(layout, "w") as f:
        f.write(layout_yaml(c, root, "layoutd-b3", 1))
    agent, results, ok = None, [], True
    try:
        agent = Agent(c, root, layout)
        agent.ready()
        st, v = api(agent.sock, "POST", "/v1/workspaces", {"id": "fio"})
        if st // 100 != 2:
            raise RuntimeError(f"POST fio: {st} {v}")
        w = poll(lambda: next((w for w in (api(agent.sock, "GET", "/v1/workspaces")[1] or {}).get("workspaces", [])
                               if w["daemon"].get("state") == "running"), None), 120, "the fio workspace")
        native = f"{root}/volumes/{w['volume']}/fio-native"
        os.makedirs(native)
        for k, (name, args) in enumerate(FIO_JOBS):
            pair = [("fuse", w["mountpoint"]), ("native", native)]
            for where, d in (pair if k % 2 == 0 else pair[::-1]):
                r = fio_one(c, where, d, name, args)
                r["volume"] = w["volume"]
                results.append(r)
                log(f"fio {name} {where}: {'ok' if r['ok'] else 'FAILED: ' + r.get('error', '')}")
    except Stop:
        raise
    except Exception as e:
        ok = False
        results.append({"where": "setup", "ok": False, "error": str(e)})
        log(f"fio: FAILED: {e}")
    finally:
        if agent:
            try:
                api(agent.sock, "DELETE", "/v1/workspaces/fio", timeout=30)
                poll(lambda: not (api(agent.sock, "GET", "/v1/workspaces", timeout=10)[1] or {}).get("workspaces"),
                     60, "the fio workspace to be removed")
            except Exception as e:
                log(f"removing the fio workspace: {e}, ignoring")
            agent.stop()
        sh([c.layoutctl, "teardown", "--layout", layout, "--destroy-data"], check=False)
        cleanup_below(root)
        shutil.rmtree(root, ignore_errors=True)
    with open(f"{c.out}/fio.jsonl", "w") as f:
        for r in results:
            f.write(json.dumps(r) + "\n")
    # A FUSE job failing (O_DIRECT) is a result; setup failing is not.
    return ok


# ---------------------------------------------------------------- statistics

def median(v):
    return statistics.median(v) if v else None


def boot_ci(vals, seed=12345):
    """Median of vals with a bootstrap 95 % CI (percentile method)."""
    if not vals:
        return None
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(vals, k=len(vals))) for _ in range(BOOTSTRAP))
    return {"median": statistics.median(vals), "lo": meds[int(0.025 * BOOTSTRAP)],
            "hi": meds[int(0.975 * BOOTSTRAP) - 1], "n": len(vals)}


def hist_pct(hists, q):
    """Percentile from merged [upper_us, count] histograms (upper bound of the bucket)."""
    merged = {}
    for h in hists:
        for up, cnt in h:
            merged[up] = merged.get(up, 0) + cnt
    tot = sum(merged.values())
    if not tot:
        return None
    need, acc = q * tot, 0
    for up in sorted(merged):
        acc += merged[up]
        if acc >= need:
            return up
    return max(merged)


def analyse(arms):
    """Per (rep, n, arm) values, then per (n, arm) summaries with paired ratios."""
    per = {}
    for a in arms:
        if not a.get("ok"):
            continue
        ws = a["workspaces"]
        comp = [w["completed_s"] for w in ws]
        per[(a["rep"], a["n"], a["arm"])] = {
            "median": statistics.median(comp), "max": max(comp),
            "accepted": statistics.median(w["accepted_s"] for w in ws),
            "mbps": sum(w["bytes_written"] for w in ws) / max(comp) / 1e6,
            "rec": a,
        }
    ns = sorted({a["n"] for a in arms})
    reps = sorted({a["rep"] for a in arms})
    arm_names = [x for x in ARMS if any(a["arm"] == x for a in arms)]
    rows = []
    for n in ns:
        for arm in arm_names:
            runs = [per[(r, n, arm)] for r in reps if (r, n, arm) in per]
            tried = [a for a in arms if a["n"] == n and a["arm"] == arm]
            row = {"n": n, "arm": arm, "runs": len(runs), "failed": len(tried) - len(runs)}
            if runs:
                recs = [x["rec"] for x in runs]
                wss = [w for r in recs for w in r["workspaces"]]
                row.update({
                    "median_s": median([x["median"] for x in runs]),
                    "max_s": max(x["max"] for x in runs),
                    "accepted_s": median([x["accepted"] for x in runs]),
                    "mbps": median([x["mbps"] for x in runs]),
                    "per_rep_median_s": [round(x["median"], 3) for x in runs],
                })
                for op in ("write", "read", "stat"):
                    hs = [w["lat"][op]["hist"] for w in wss]
                    row[f"{op}_p50_us"] = hist_pct(hs, 0.50)
                    row[f"{op}_p95_us"] = hist_pct(hs, 0.95)
                st = [w["watch"]["stats"] for w in wss if w.get("watch") and w["watch"].get("stats")]
                if st:
                    row["flushes_per_ws"] = median([s["flushes"] for s in st])
                    row["flush_s_per_ws"] = median([s["flush_us"] / 1e6 for s in st])
                    row["batches_per_ws"] = median([s["batches"] for s in st])
                    row["flush_share"] = median([s["flush_us"] / 1e6 / w["completed_s"] for s, w in
                                                 ((w["watch"]["stats"], w) for w in wss if w.get("watch"))])
                fs = [w["file_fsyncs"] + w["dir_fsyncs"] for w in wss if w.get("file_fsyncs") is not None]
                if arm == "native-fsync" and fs:
                    row["fsyncs_per_ws"] = median(fs)
                wcpu = [w["cpu_user_s"] + w["cpu_sys_s"] for w in wss if w.get("cpu_user_s") is not None]
                if wcpu:
                    row["workload_cpu_s_per_ws"] = median(wcpu)
                dcpu = [w["daemon_cpu_s"] for w in wss if w.get("daemon_cpu_s") is not None]
                if dcpu:
                    row["daemon_cpu_s_per_ws"] = median(dcpu)
                io_loop = [sum(v["write_bytes"] for d, v in r["io"].items() if v and r["io_devices"][d] == "loop")
                           for r in recs]
                fl_loop = [sum(v["flush_ios"] for d, v in r["io"].items() if v and r["io_devices"][d] == "loop")
                           for r in recs]
                io_root = [sum(v["write_bytes"] for d, v in r["io"].items() if v and r["io_devices"][d] != "loop")
                           for r in recs]
                fl_root = [sum(v["flush_ios"] for d, v in r["io"].items() if v and r["io_devices"][d] != "loop")
                           for r in recs]
                if any(io_loop):
                    row["loop_write_MB"] = median(io_loop) / 1e6
                    row["loop_flush_ios"] = median(fl_loop)
                if any(io_root):
                    row["rootdisk_write_MB"] = median(io_root) / 1e6
                    row["rootdisk_flush_ios"] = median(fl_root)
                row["cpu_busy_pct"] = median([100 - r["cpu"]["idle_pct"] - r["cpu"]["iowait_pct"] for r in recs])
                row["iowait_pct"] = median([r["cpu"]["iowait_pct"] for r in recs])
                row["loadavg"] = median([r["loadavg_before"][0] for r in recs])
            for ref in ("shared", "native-fsync"):
                ratios = [per[(r, n, arm)]["median"] / per[(r, n, ref)]["median"]
                          for r in reps if (r, n, arm) in per and (r, n, ref) in per]
                row[f"vs_{ref}"] = boot_ci(ratios)
            slow = [per[(r, n, arm)]["median"] / per[(r, ns[0], arm)]["median"]
                    for r in reps if (r, n, arm) in per and (r, ns[0], arm) in per]
            row["slowdown"] = boot_ci(slow)
            rows.append(row)
    return rows


def fmt(v, d=2):
    if v is None:
        return "–"
    if isinstance(v, dict):
        if v["n"] == 1:
            return f"{v['median']:.{d}f}"
        return f"{v['median']:.{d}f} [{v['lo']:.{d}f}, {v['hi']:.{d}f}]"
    if isinstance(v, float):
        return f"{v:.{d}f}"
    return str(v)


def fmt_us(v):
    if v is None:
        return "–"
    return f"{v / 1000:.1f} ms" if v >= 1000 else f"{v:.0f} µs"


def report(out):
    with open(f"{out}/arms.jsonl") as f:
        arms = [json.loads(l) for l in f if l.strip()]
    meta = {}
    if os.path.exists(f"{out}/meta.json"):
        with open(f"{out}/meta.json") as f:
            meta = json.load(f)
    rows = analyse(arms)
    with open(f"{out}/summary.json", "w") as f:
        json.dump(rows, f, indent=1)
    ns = sorted({r["n"] for r in rows})
    L = []
    L.append(f"Profile `{meta.get('profile', '?')}`: {meta.get('files', '?')} files per workspace "
             f"({meta.get('files_scale', '?')} of the published 8,000), N = {', '.join(map(str, ns))}, "
             f"{meta.get('repeats', '?')} repeat(s); {len(arms)} arm runs, "
             f"{sum(1 for a in arms if not a.get('ok'))} failed. Load average during the runs: "
             f"{fmt(median([a['loadavg_before'][0] for a in arms]), 1)} median, "
             f"{fmt(max((a['loadavg_before'][0] for a in arms), default=None), 1)} max.")
    L.append("")
    L.append("Completion time = until the workspace's last operation returned *and* its last byte is durable "
             "(native-buffered: never durable, its end time). Ratios are medians of per-repeat paired ratios "
             "(bootstrap 95 % CI in brackets when there is more than one repeat).")
    L.append("")
    L.append("| N | arm | runs (failed) | median s | max s | accepted s | MB/s | × shared | × native-fsync | "
             "slowdown vs N=1 | write p50/p95 | read p50/p95 | stat p50/p95 |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        L.append(f"| {r['n']} | {r['arm']} | {r['runs']} ({r['failed']}) | {fmt(r.get('median_s'))} | "
                 f"{fmt(r.get('max_s'))} | {fmt(r.get('accepted_s'))} | {fmt(r.get('mbps'), 1)} | "
                 f"{fmt(r['vs_shared'])} | {fmt(r['vs_native-fsync'])} | {fmt(r['slowdown'])} | "
                 f"{fmt_us(r.get('write_p50_us'))} / {fmt_us(r.get('write_p95_us'))} | "
                 f"{fmt_us(r.get('read_p50_us'))} / {fmt_us(r.get('read_p95_us'))} | "
                 f"{fmt_us(r.get('stat_p50_us'))} / {fmt_us(r.get('stat_p95_us'))} |")
    L.append("")
    L.append("Flushes and I/O (medians per workspace / per run):")
    L.append("")
    L.append("| N | arm | flushes/ws | flush s/ws | flush share | batches/ws | fsyncs/ws | workload CPU s/ws | daemon CPU s/ws | "
             "loop write MB | loop flush IOs | root-disk write MB | root-disk flush IOs | CPU busy % | iowait % |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        L.append(f"| {r['n']} | {r['arm']} | {fmt(r.get('flushes_per_ws'), 0)} | {fmt(r.get('flush_s_per_ws'))} | "
                 f"{fmt(r.get('flush_share'))} | {fmt(r.get('batches_per_ws'), 0)} | {fmt(r.get('fsyncs_per_ws'), 0)} | "
                 f"{fmt(r.get('workload_cpu_s_per_ws'))} | {fmt(r.get('daemon_cpu_s_per_ws'))} | {fmt(r.get('loop_write_MB'), 0)} | "
                 f"{fmt(r.get('loop_flush_ios'), 0)} | {fmt(r.get('rootdisk_write_MB'), 0)} | "
                 f"{fmt(r.get('rootdisk_flush_ios'), 0)} | {fmt(r.get('cpu_busy_pct'), 0)} | "
                 f"{fmt(r.get('iowait_pct'), 0)} |")
    L.append("")
    nmax = ns[-1] if ns else None
    get = lambda arm: next((r for r in rows if r["n"] == nmax and r["arm"] == arm), None)
    hl = get("layoutd-b3")
    if hl:
        L.append(f"Targets at N={nmax} (headline arm layoutd-b3):")
        L.append("")
        for key, ref, lim in (("vs_shared", "shared", 0.45), ("vs_native-fsync", "native-fsync", 1.5)):
            v = hl.get(key)
            if v is None:
                L.append(f"- layoutd ≤ {lim} × {ref}: not measured (a run failed)")
            else:
                met = "**met**" if v["median"] <= lim else f"**not met** (by {v['median'] / lim:.2f}×)"
                L.append(f"- layoutd ≤ {lim} × {ref}: {fmt(v)} → {met}")
        L.append("")
    if os.path.exists(f"{out}/fio.jsonl"):
        with open(f"{out}/fio.jsonl") as f:
            fio = [json.loads(l) for l in f if l.strip()]
        L.append("fio (one workspace: its FUSE mount vs a directory on the same state volume; "
                 "the reference daemon's cost, not layoutd's):")
        L.append("")
        L.append("| job | where | ok | MB/s | IOPS | clat p50 | clat p99 | fsync p50 / p99 | FUSE/native MB/s |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in fio:
            if r.get("where") == "setup":
                L.append(f"| setup | – | no: {r.get('error')} | | | | | | |")
                continue
            side = r.get("write") or r.get("read") or {}
            if r.get("read") and r.get("write"):  # mixed: report both
                side = {"bw_MBps": r["read"]["bw_MBps"] + r["write"]["bw_MBps"],
                        "iops": r["read"]["iops"] + r["write"]["iops"],
                        "clat_p50_us": r["read"]["clat_p50_us"], "clat_p99_us": r["read"]["clat_p99_us"]}
            ratio = ""
            if r["where"] == "fuse":
                nat = next((x for x in fio if x.get("job") == r["job"] and x.get("where") == "native"), None)
                ns_ = nat and (nat.get("write") or nat.get("read"))
                if nat and nat.get("read") and nat.get("write"):
                    ns_ = {"bw_MBps": nat["read"]["bw_MBps"] + nat["write"]["bw_MBps"]}
                if ns_ and side and ns_["bw_MBps"]:
                    ratio = f"{side['bw_MBps'] / ns_['bw_MBps']:.2f}"
            sy = r.get("sync") or {}
            sync = f"{fmt_us(sy['p50_us'])} / {fmt_us(sy['p99_us'])}" if sy.get("n") else ""
            okc = "yes" if r["ok"] else f"no: {str(r.get('error', ''))[:80]}"
            L.append(f"| {r['job']} | {r['where']} | {okc} | {fmt(side.get('bw_MBps'), 1)} | "
                     f"{fmt(side.get('iops'), 0)} | {fmt_us(side.get('clat_p50_us'))} | "
                     f"{fmt_us(side.get('clat_p99_us'))} | {sync} | {ratio} |")
        L.append("")
    text = "\n".join(L) + "\n"
    with open(f"{out}/summary.md", "w") as f:
        f.write(text)
    plot(out, rows)
    return text


def plot(out, rows):
    arm_names = [a for a in ARMS if any(r["arm"] == a and r.get("median_s") is not None for r in rows)]
    if not arm_names or not shutil.which("gnuplot"):
        return
    with open(f"{out}/plot.dat", "w") as f:
        for a in arm_names:
            f.write(f'"{a}"\n')
            for r in rows:
                if r["arm"] == a and r.get("median_s") is not None:
                    lo, hi = min(r["per_rep_median_s"]), max(r["per_rep_median_s"])
                    f.write(f"{r['n']} {r['median_s']:.4f} {lo:.4f} {hi:.4f}\n")
            f.write("\n\n")
    plots = ", ".join(f"'plot.dat' index {i} using 1:2:3:4 with yerrorlines lw 2 pt 7 title columnheader(1)"
                      for i in range(len(arm_names)))
    script = f"""set terminal pngcairo size 1000,620 font ",11"
set output 'flushscope.png'
set title "Flush scope: median workspace completion time vs N (bars: min-max of per-repeat medians)"
set xlabel "workspaces in parallel (N)"
set ylabel "median completion time per workspace (s)"
set key top left
set grid
set xtics ({", ".join(str(n) for n in sorted({r['n'] for r in rows}))})
set xrange [0:{max(r['n'] for r in rows) + 1}]
set yrange [0:*]
plot {plots}
"""
    with open(f"{out}/plot.gp", "w") as f:
        f.write(script)
    subprocess.run(["gnuplot", "plot.gp"], cwd=out, check=False)


# ---------------------------------------------------------------- main

def machine():
    def first(cmd):
        return sh(cmd, check=False).stdout.strip()
    with open("/proc/meminfo") as f:
        mem = f.readline().split()[1]
    return {"nproc": os.cpu_count(), "mem_kib": int(mem), "kernel": os.uname().release,
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
            "root_fs": first(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "/"]),
            "df_root": first(["df", "-h", "--output=size,avail", "/"]).replace("\n", " "),
            "loadavg": loadavg()}


def cmd_run(a):
    if not os.path.isabs(a.work) or not os.path.isdir(a.work) or os.path.realpath(a.work) == "/":
        sys.exit(f"--work must be an existing absolute directory other than /, not '{a.work}'")
    prof = PROFILES[a.profile]
    c = argparse.Namespace(**vars(a))
    c.ns = [int(x) for x in a.ns.split(",")] if a.ns else prof["ns"]
    c.repeats = a.repeats or prof["repeats"]
    c.files = a.files or prof["files"]
    c.fio_size = prof["fio_size"]
    c.fio_runtime = prof["fio_runtime"]
    c.arms = a.arms.split(",") if a.arms else ARMS
    for x in c.arms:
        if x not in ARMS:
            sys.exit(f"unknown arm {x}; arms: {', '.join(ARMS)}")
    c.layoutd = f"{a.build}/agent/layoutd"
    c.layoutctl = f"{a.build}/agent/layoutctl"
    c.wsfs = f"{a.build}/examples/wsfs/layoutd-wsfs"
    c.workload = f"{a.build}/tests/bench/flushscope/flushscope-workload"
    for p in (c.layoutd, c.layoutctl, c.wsfs, c.workload):
        if not os.access(p, os.X_OK):
            sys.exit(f"not built: {p}")
    c.pidfile = f"{a.work}/agent.pids"
    c.root_disk = root_disk()
    c.arm_timeout = a.arm_timeout or (300 if a.profile == "smoke" else 1800)
    os.makedirs(a.out, exist_ok=True)
    meta = {"profile": a.profile, "files": c.files, "files_scale": round(c.files / PUBLISHED_FILES, 4),
            "ns": c.ns, "repeats": c.repeats, "arms": c.arms, "seed": c.seed, "machine": machine(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "arm_doc": ARM_DOC}
    with open(f"{a.out}/meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    failed = 0
    t0 = time.monotonic()
    with open(f"{a.out}/arms.jsonl", "a" if a.fio_only else "w") as c.out_arms:
        for rep in range(0 if a.fio_only else c.repeats):
            for n in c.ns:
                order = list(c.arms)
                random.Random(c.seed * 7919 + rep * 101 + n).shuffle(order)
                for k, arm in enumerate(order):
                    r = run_arm(c, rep, n, arm, k)
                    failed += not r["ok"]
                    if r["ok"]:
                        comp = sorted(w["completed_s"] for w in r["workspaces"])
                        log(f"rep {rep} N={n} {arm}: median {statistics.median(comp):.2f}s max {comp[-1]:.2f}s "
                            f"(arm {r['wall_seconds']:.0f}s, total {time.monotonic() - t0:.0f}s)")
    fio_ok = True
    if not a.no_fio:
        fio_ok = run_fio(c)
    meta["finished"] = time.strftime("%Y-%m-%d %H:%M:%S %z")
    meta["wall_seconds"] = round(time.monotonic() - t0, 1)
    meta["loadavg_end"] = loadavg()
    with open(f"{a.out}/meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    print(report(a.out))
    log(f"results in {a.out} ({meta['wall_seconds']}s)")
    if failed or not fio_ok:
        log(f"{failed} arm run(s) failed{'' if fio_ok else ', fio setup failed'}")
        return 1
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True, help="scratch dir (on the root fs); everything is made below it")
    r.add_argument("--build", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--profile", choices=PROFILES, default="smoke")
    r.add_argument("--ns", help="comma-separated N values (default: the profile's)")
    r.add_argument("--repeats", type=int)
    r.add_argument("--files", type=int, help="files per workspace (published: 8000)")
    r.add_argument("--arms", help=f"comma-separated subset of {','.join(ARMS)}")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--arm-timeout", type=int)
    r.add_argument("--no-fio", action="store_true")
    r.add_argument("--fio-only", action="store_true", help="skip the arms, run only the fio job set")
    q = sub.add_parser("report")
    q.add_argument("--out", required=True)
    a = p.parse_args()
    if a.cmd == "report":
        print(report(a.out))
        return 0
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
