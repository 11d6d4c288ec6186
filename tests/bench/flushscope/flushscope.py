#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The flush-scope benchmark driver (tests/bench/flushscope/README.md).

Runs N workspaces of flushscope-workload in parallel per arm, for every N
and repeat, arms in a shuffled order per repeat, through the real stack
(layoutd + layoutd-wsfs) and without FUSE, and writes raw JSON lines, a
markdown summary and two gnuplot PNGs. Then a small fio job set on a FUSE
mount and natively on the same volume.

  flushscope.py run --work DIR --build BUILD --out OUT [--profile smoke|full|published] [options]
  flushscope.py report --out OUT [--exclude-noisy]   (re-derive summary and plots from OUT/arms.jsonl)

Only the Debian python3 standard library is used (/usr/bin/python3); the
arms are in arms.py, the kernel readers in sampler.py, the statistics and
plots in report.py. Every arm run is kept; a failed run is recorded, never
retried; the exit status is 1 when any run failed (so CI notices a broken
benchmark), 0 otherwise. Nothing here asserts anything about time.
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

# The modules next to this file; no __pycache__ in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sampler  # noqa: E402
from arms import ARM, ARM_DOC, CACHE_WRITER_FACTOR, NAMES, WSCAP  # noqa: E402
from report import PUBLISHED_FILES, decompose, report  # noqa: E402

PROFILES = {
    # < 3 minutes on the 2-core CI machine: every arm once at N = 1 and 3,
    # no waiting for the load to settle (CI machines are never quiet; the
    # smoke profile proves the code paths, its numbers mean nothing).
    "smoke": dict(ns=[1, 3], repeats=1, files=200, fio_size="16M", fio_runtime=1, settle_max=0, pre_window=0.2),
    # The scale of the v1 full run (25 % of the published files).
    "full": dict(ns=[1, 3, 6, 9, 21], repeats=3, files=2000, fio_size="256M", fio_runtime=5, settle_max=240,
                 pre_window=1.0),
    # The published scale: 8,000 files, ~630 MiB per workspace.
    "published": dict(ns=[1, 9, 21], repeats=3, files=PUBLISHED_FILES, fio_size="256M", fio_runtime=5,
                      settle_max=240, pre_window=1.0),
}
NOISY_LOAD = 1.5    # a run that starts above this 1-minute load is noisy (issue 16)
SAMPLE_S = 0.1      # the sampler's interval
# Host bytes a workspace may take at its peak, per byte the workload plans
# to write (planned_bytes, ~82.5 KB per file): measured as
# host_used_peak_delta_bytes at 2,000 files, N=3 (README.md, "Disk"):
# FUSE arms on volumes 1.81-1.86 (the pool's copy of every file >= 64 KiB,
# overwrites make new objects, and freed blocks of a loop volume stay
# allocated in its sparse backing file), on the host 1.23-1.32; nofuse and
# native 1.01-1.28. With ~20 % margin.
DISK_FACTOR = {"fuse": 2.2, "syncfs": 1.5, "fsync": 1.5, "buffered": 1.5}
MEAN_FILE_BYTES = 82500  # the size mix's mean (workload.c draw_size)


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


def loadavg():
    return list(sampler.loadavg()[:3])


def loops_below(root):
    """Loop devices whose backing file is below root: {name: backing file}."""
    r = sh(["losetup", "-n", "-O", "NAME,BACK-FILE"], check=False)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[1].strip().startswith(root + "/"):
            out[os.path.basename(parts[0])] = parts[1].strip()
    return out


def mount_of(dev):
    r = sh(["findmnt", "-rn", "-S", f"/dev/{dev}", "-o", "TARGET"], check=False)
    return r.stdout.splitlines()[0] if r.stdout.strip() else None


def root_disk():
    """The block device holding / (for the shared arms' I/O counters)."""
    r = sh(["findmnt", "-n", "-o", "SOURCE", "/"], check=False)
    dev = os.path.basename(r.stdout.strip())
    return dev if os.path.exists(f"/sys/block/{dev}") else None


def proc_cpu_s(pid):
    """utime + stime of a process (all its threads), s."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, TypeError):
        return None


def proc_cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
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


def settle(c):
    """Waits for the 1-minute load to fall to c.settle_load: the previous
    arm's own processes weigh on it for minutes (the kernel's load average
    decays as e^(-t/60): from 21 runnable tasks to 1.5 takes ~160 s). Gives
    up after c.settle_max s, or when the load has stopped falling (less than
    10 % in 30 s, where our own share alone would fall by 40 %): what is left
    is someone else's, and waiting longer would not make the run quiet.
    Returns: (seconds waited, why it stopped)."""
    t0, seen = time.monotonic(), []
    while c.settle_max > 0:
        now, load = time.monotonic() - t0, sampler.loadavg()[0]
        if load <= c.settle_load:
            return round(now, 1), "settled"
        if now >= c.settle_max:
            return round(now, 1), "cap"
        before = [l for t, l in seen if t <= now - 30]
        if before and load > 0.9 * before[-1]:
            return round(now, 1), "foreign-load"
        seen.append((now, load))
        time.sleep(1)
    return 0.0, "off"


def pre_window(seconds):
    """The machine's CPU over a short window, with nothing of the benchmark
    running but idle daemons: what everyone else is doing."""
    a = sampler.cpu_times()
    la = sampler.loadavg()
    time.sleep(seconds)
    d = sampler.cpu_delta(a, sampler.cpu_times())
    return {"busy_pct": round(100 - d["idle_pct"] - d["iowait_pct"], 1), "steal_pct": d["steal_pct"],
            "iowait_pct": d["iowait_pct"], "running": la[3]}


def disk_need(c, spec, n):
    """Bytes of the host filesystem an arm run needs free: what it may take
    at its peak (DISK_FACTOR), or for the arms on volumes what the sparse
    backing files may claim if that is more: the engine never overcommits
    the host (backend_check_space), so a carve needs all of it free."""
    use = int(n * c.files * MEAN_FILE_BYTES * DISK_FACTOR[spec["mode"]])
    if spec["storage"] != "volumes":
        return use
    vs, cs = volume_sizes(n, spec["bound"], c.files, spec.get("cache_writer"))
    return max(use, (int(math.ceil(n / spec["bound"])) * vs + cs) << 20)


# ---------------------------------------------------------------- layouts

def volume_sizes(n, bound, files, cache_writer=False):
    # Mean file size of the mix is ~80 KiB; overwrites add 20 % (CAS keeps
    # old objects), stubs hold their data until the batch commits. Sparse
    # backing files: oversizing costs nothing but inode tables. A fill
    # arm's writer adds its files to the state volume (in the cache) or
    # to both (through FUSE, large files go to the pool).
    per_ws = files * 80 * 1024 * 1.6
    extra = CACHE_WRITER_FACTOR * per_ws if cache_writer else 0
    mib = lambda b: int(math.ceil(b / (1 << 20) / 64.0)) * 64
    return mib(bound * per_ws + extra + (256 << 20)), mib(n * per_ws + extra + (256 << 20))


def layout_yaml(c, root, spec, n):
    """The generated layout of one arm run (docs/layout.md)."""
    sock = f"{root}/api.sock"
    # gc: false: the content pool's sweep (hourly, or at once when a content
    # volume is short of free space) would walk every state dir under the
    # pool lock in the middle of a run; objects are never older than its
    # grace period here anyway, so it could only add noise.
    if spec["storage"] == "shared":
        pools = f"""  state: {{backend: dir, min_volumes: 1, max_volumes: 1, workspaces_per_volume: {max(n, 1)}}}
  content: {{backend: dir, shards: 1, gc: false}}"""
    else:
        bound = spec["bound"]
        nvol = int(math.ceil(n / bound))
        vs, cs = volume_sizes(n, bound, c.files, spec.get("cache_writer"))
        wb = lambda role: ((f", writeback: {{max_bytes: {WSCAP[role]}, strict_limit: true}}"
                            if spec.get("wscap") else "") + (", preallocate: true" if spec.get("prealloc") else ""))
        pools = f"""  state: {{backend: loop-ext4, volume_size: {vs}MiB, min_volumes: {nvol}, max_volumes: {nvol}, workspaces_per_volume: {bound}, direct_io: true{wb("state")}}}
  content: {{backend: loop-ext4, volume_size: {cs}MiB, shards: 1, direct_io: true, gc: false{wb("content")}}}"""
    args = [f"--commit={spec.get('commit', 'syncfs')}", f'"--stats-file={root}/stats/{{id}}.json"']
    if spec.get("profile", "default") != "default":
        args.append(f"--profile={spec['profile']}")
    cache = "\n  cache: true" if spec.get("cache") else ""
    # on_agent_stop: stop: the agent keeps its daemons running across a
    # SIGTERM by default (re-adoption); a benchmark arm must never leave
    # daemons or mounts behind for the next one. The driver stops agents
    # with SIGINT, which stops them anyway; this is the second line.
    return f"""# flush-scope benchmark, arm {spec['name']}, N={n} (generated)
version: 1
root: {root}
pools:
{pools}
workspace:
  command: [{c.wsfs}, --state, "{{state_dir}}", --content, "{{content_dirs}}", {", ".join(args)}, "{{mountpoint}}"]
  restart: never
  ready_timeout: 30s
  stop_timeout: 3s
  hang_timeout: 0
  on_agent_stop: stop{cache}
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
            if not (st == 200 and vols and all(x.get("state") == "up" for x in vols)):
                return None
            # Creates are refused (503 not_ready) until the agent has
            # reconciled its record with the volumes: READY=1 comes then.
            st, s = api(self.sock, "GET", "/v1/status")
            return vols if st == 200 and (s or {}).get("state") == "ready" else None
        return poll(up, 300, "layoutd's volumes to be up and the agent ready")

    def stop(self):
        """SIGINT: the agent stops its daemons (SIGTERM, unmount, SIGKILL after
        stop_timeout) and exits. SIGTERM would leave them running for the next
        agent to re-adopt (docs/supervision.md)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
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
            cmd = [c.workload, "--dir", s["dir"], "--files", str(s.get("files", c.files)), "--seed", str(s["seed"]),
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


def carve_without_agent(c, root, layout, spec, n, seeds):
    """The arms without a daemon: the volumes (or the shared directory) by
    `layoutctl apply`, workspace i on state-(i mod volumes), as spread
    placement does."""
    sh([c.layoutctl, "apply", "--layout", layout])
    nvol = 1 if spec["storage"] == "shared" else int(math.ceil(n / spec["bound"]))
    specs = []
    for i in range(n):
        d = f"{root}/volumes/state-{i % nvol}/workspaces/ws-{i}"
        os.makedirs(d)
        specs.append({"id": f"ws-{i}", "dir": d, "seed": seeds[i], "volume": f"state-{i % nvol}",
                      "mode": spec["mode"]})
    vols = [{"name": f"state-{k}"} for k in range(nvol)] + [{"name": "content-0"}]
    return specs, vols


def start_workspaces(c, agent, n, seeds, root):
    """POSTs n workspaces and waits for their daemons; returns the workload specs."""
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
    specs = []
    with open(c.daemon_pidfile, "a") as f:
        for i in range(n):
            w = ws[f"ws-{i}"]
            f.write(f"{w['daemon']['pid']}\n")
            specs.append({"id": w["id"], "dir": w["mountpoint"], "seed": seeds[i], "mode": "fuse",
                          "volume": w["volume"], "flush_scope": w.get("flush_scope"),
                          "pid": w["daemon"]["pid"], "stats": f"{root}/stats/{w['id']}.json",
                          "cache": w.get("cache")})
    return specs


def cache_writer_spec(c, specs, seed, via):
    """The writer of the *fill arms (arms.py): buffered, into ws-0's cache
    (via "cache": the bind mount inside the FUSE mount) or through ws-0's
    FUSE mount itself (via "fuse")."""
    cache = specs[0].get("cache") or {}
    if cache.get("state") != "mounted":
        raise RuntimeError(f"{specs[0]['id']} has no mounted cache: {cache}")
    d = os.path.join(cache["path"] if via == "cache" else os.path.dirname(specs[0]["dir"]), "fill")
    os.makedirs(d)
    return {"id": "cache-writer", "dir": d, "seed": seed, "mode": "buffered", "volume": specs[0]["volume"],
            "files": CACHE_WRITER_FACTOR * c.files}


def leaked_daemons(specs, root):
    """Daemons of this run still alive after the agent stopped (pid reuse is
    ruled out by their command line, which names the run's root)."""
    return [s["pid"] for s in specs if s.get("pid") and root in (proc_cmdline(s["pid"]) or "")]


def run_arm(c, rep, n, arm, order):
    spec = ARM[arm]
    root = f"{c.work}/r{rep}-n{n}-{arm}"
    os.makedirs(f"{root}/stats", exist_ok=True)
    layout = f"{root}.yaml"
    with open(layout, "w") as f:
        f.write(layout_yaml(c, root, spec, n))
    rec = {"rep": rep, "n": n, "arm": arm, "layer": spec["layer"], "order": order, "files_per_ws": c.files,
           "ok": False, "error": None, "wall_start": time.time()}
    agent, specs, smp, writer = None, [], None, None
    t_arm = time.monotonic()
    try:
        need, free = disk_need(c, spec, n), shutil.disk_usage(c.work).free
        rec["disk_need_estimate_bytes"] = need
        if need > free:
            raise RuntimeError(f"would not fit: needs ~{need / 1e9:.1f} GB free on the host filesystem "
                               f"(its peak use, or what its sparse volumes claim), {free / 1e9:.1f} GB free")
        seeds = [c.seed + rep * 1000 + i for i in range(n)]
        if not spec["daemon"]:
            specs, rec["volumes"] = carve_without_agent(c, root, layout, spec, n, seeds)
        else:
            agent = Agent(c, root, layout)
            vols = agent.ready()
            rec["volumes"] = [{k: v.get(k) for k in ("name", "backend", "device", "direct_io", "logical_block_size",
                                                     "writeback")} for v in vols]
            specs = start_workspaces(c, agent, n, seeds, root)
            if spec.get("cache"):
                # A workload checks every file below its directory: the
                # mount's root has the cache (its .gitignore) and, in the
                # fill arms, the writer's files beside it.
                for s in specs:
                    s["dir"] = os.path.join(s["dir"], "work")
                    os.mkdir(s["dir"])
            if spec.get("cache_writer"):
                writer = cache_writer_spec(c, specs, c.seed + rep * 1000 + 999, spec["cache_writer"])
            rec["daemon_comm"] = sorted({(sampler.read_first(f"/proc/{s['pid']}/comm") or "?") for s in specs})
        loops = loops_below(root)
        devs = {d: mount_of(d) for d in sorted(loops)}
        names = {d: os.path.basename(b).rsplit(".img", 1)[0] for d, b in loops.items()}
        if spec["storage"] == "shared" and c.root_disk:
            devs[c.root_disk] = "/"
            names[c.root_disk] = "root fs"
        rec["bdi"] = {names[d]: sampler.bdi_limits(d) for d in devs}
        drop_caches()
        # Load discipline: let the previous run's load decay, then look at
        # the machine for a second with nothing of ours running.
        settle_s, settled = settle(c)
        pre = pre_window(c.pre_window)
        rec["loadavg_before"] = loadavg()
        rec["noisy"] = rec["loadavg_before"][0] > c.noisy_load
        rec["load"] = {"settle_s": settle_s, "settle": settled, "pre": pre, "noisy_load": c.noisy_load}
        io0 = {d: sampler.block_stat(d) for d in devs}
        cpu0 = sampler.cpu_times()
        dcpu0 = {s["id"]: proc_cpu_s(s["pid"]) for s in specs if s.get("pid")}
        smp = sampler.Sampler(devs, c.work, SAMPLE_S)
        smp.start()
        t0 = time.monotonic()
        res = run_workloads(c, specs + ([writer] if writer else []), n)
        if writer:
            # Not a workspace: its figures are the arm's own.
            rec["cache_writer"] = res.pop()
            if not rec["cache_writer"].get("ok"):
                raise RuntimeError(f"the cache writer failed: {rec['cache_writer'].get('error')}")
        rec["arm_seconds"] = round(time.monotonic() - t0, 3)
        cpu1 = sampler.cpu_times()
        # Daemon CPU at the end of the run, before anything stops them.
        dcpu1 = {s["id"]: proc_cpu_s(s["pid"]) for s in specs if s.get("pid")}
        smp.stop()
        rec["mem"] = smp.summary()
        rec["cpu"] = sampler.cpu_delta(cpu0, cpu1)
        rec["cpu_seconds"] = sampler.cpu_seconds(cpu0, cpu1)
        rec["io"] = {d: sampler.stat_delta(io0[d], sampler.block_stat(d)) for d in devs}
        rec["io_devices"] = {d: ("root fs" if d == c.root_disk else "loop") for d in devs}
        rec["dev_names"] = names
        rec["loadavg_after"] = loadavg()
        for r in res:
            d0, d1 = dcpu0.get(r.get("id")), dcpu1.get(r.get("id"))
            if d0 is not None and d1 is not None:
                r["daemon_cpu_s"] = round(d1 - d0, 3)
                r["daemon_cpu_total_s"] = d1
        if agent:
            st, v = api(agent.sock, "GET", "/v1/workspaces")
            for w in (v or {}).get("workspaces", []):
                r = next((x for x in res if x.get("id") == w["id"]), None)
                if r is None:
                    continue
                r["daemon_state"] = w["daemon"].get("state")
                r["daemon_restarts"] = w["daemon"].get("restarts")
                r["flush_scope"] = w.get("flush_scope")
                if r["daemon_state"] != "running" or r["daemon_restarts"]:
                    r["ok"] = False
                    r["error"] = r.get("error") or f"daemon {r['daemon_state']}, {r['daemon_restarts']} restarts"
        for r in res:
            if r.get("ok"):
                r["decomp"] = decompose(r)
        wcpu = sum((r.get("cpu_user_s") or 0) + (r.get("cpu_sys_s") or 0) for r in res)
        dcpu = sum(r.get("daemon_cpu_s") or 0 for r in res)
        rec["other_cpu_s"] = round(rec["cpu_seconds"]["busy"] - wcpu - dcpu, 3)
        rec["workspaces"] = res
        with open(c.samples_path, "a") as f:
            f.write(json.dumps({"rep": rep, "n": n, "arm": arm, "dev_names": names, **smp.series()}) + "\n")
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
        if smp and smp.is_alive():
            smp.stop()
        rec["wall_seconds"] = round(time.monotonic() - t_arm, 3)
        if agent:
            try:
                st, v = api(agent.sock, "GET", "/v1/workspaces", timeout=10)
                for w in (v or {}).get("workspaces", []):
                    api(agent.sock, "DELETE", f"/v1/workspaces/{w['id']}", timeout=30)
                poll(lambda: not (api(agent.sock, "GET", "/v1/workspaces", timeout=10)[1] or {}).get("workspaces"),
                     60, "workspaces to be removed")
            except Exception as e:
                log(f"removing workspaces: {e}, ignoring (the agent stops what is left)")
            agent.stop()
            leaked = leaked_daemons(specs, root)
            if leaked:
                # Never hidden: the next arm would share the machine with them.
                for p in leaked:
                    try:
                        os.kill(p, signal.SIGKILL)
                    except OSError:
                        pass
                rec["leaked_daemons"] = leaked
                rec["ok"] = False
                rec["error"] = rec["error"] or f"{len(leaked)} daemons still running after the agent stopped"
                log(f"rep {rep} N={n} {arm}: {len(leaked)} daemons leaked, killed")
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
        f.write(layout_yaml(c, root, ARM["layoutd-b3"], 1))
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


# ---------------------------------------------------------------- main

def machine():
    def first(cmd):
        return sh(cmd, check=False).stdout.strip()
    with open("/proc/meminfo") as f:
        mem = f.readline().split()[1]
    vm = {k: sampler.read_first(f"/proc/sys/vm/{k}") for k in
          ("dirty_ratio", "dirty_background_ratio", "dirty_bytes", "dirty_background_bytes",
           "dirty_expire_centisecs", "dirty_writeback_centisecs")}
    return {"nproc": os.cpu_count(), "mem_kib": int(mem), "kernel": os.uname().release,
            "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), ""),
            "root_fs": first(["findmnt", "-n", "-o", "SOURCE,FSTYPE,OPTIONS", "/"]),
            "df_root": first(["df", "-h", "--output=size,avail", "/"]).replace("\n", " "),
            "vm": vm, "loadavg": loadavg()}


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
    c.settle_max = prof["settle_max"] if a.settle_max is None else a.settle_max
    c.pre_window = prof["pre_window"]
    c.settle_load = a.settle_load if a.settle_load is not None else a.noisy_load
    c.arms = a.arms.split(",") if a.arms else NAMES
    for x in c.arms:
        if x not in ARM:
            sys.exit(f"unknown arm {x}; arms: {', '.join(NAMES)}")
    c.layoutd = f"{a.build}/agent/layoutd"
    c.layoutctl = f"{a.build}/agent/layoutctl"
    c.wsfs = f"{a.build}/examples/wsfs/layoutd-wsfs"
    c.workload = f"{a.build}/tests/bench/flushscope/flushscope-workload"
    for p in (c.layoutd, c.layoutctl, c.wsfs, c.workload):
        if not os.access(p, os.X_OK):
            sys.exit(f"not built: {p}")
    c.pidfile = f"{a.work}/agent.pids"
    c.daemon_pidfile = f"{a.work}/daemon.pids"
    c.root_disk = root_disk()
    c.arm_timeout = a.arm_timeout or (300 if a.profile == "smoke" else 1800)
    os.makedirs(a.out, exist_ok=True)
    c.samples_path = f"{a.out}/samples.jsonl"
    biggest = max(disk_need(c, ARM[x], max(c.ns)) for x in c.arms)
    free = shutil.disk_usage(a.work).free
    meta = {"profile": a.profile, "files": c.files, "files_scale": round(c.files / PUBLISHED_FILES, 4),
            "ns": c.ns, "repeats": c.repeats, "arms": c.arms, "seed": c.seed, "machine": machine(),
            "started": time.strftime("%Y-%m-%d %H:%M:%S %z"), "arm_doc": ARM_DOC, "wscap": WSCAP,
            "noisy_load": c.noisy_load, "settle_load": c.settle_load, "settle_max": c.settle_max,
            "sample_ms": int(SAMPLE_S * 1000), "pre_window_s": c.pre_window,
            "dirty_sources": {"meminfo": True, "ext4_delalloc": True, "block_inflight": True,
                              "bdi_limits": True, "bdi_debugfs": sampler.bdi_debug_available()},
            "disk": {"largest_arm_need_estimate_bytes": biggest, "free_bytes_at_start": free}}
    log(f"profile {a.profile}: N={c.ns}, {c.repeats} repeat(s), {c.files} files/ws, {len(c.arms)} arms; "
        f"largest arm needs ~{biggest / 1e9:.1f} GB of the {free / 1e9:.1f} GB free"
        + ("" if biggest < free else " (it will be refused)"))
    with open(f"{a.out}/meta.json", "w") as f:
        json.dump(meta, f, indent=1)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    failed = 0
    t0 = time.monotonic()
    if not a.fio_only:
        open(c.samples_path, "w").close()
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
                            f"(arm {r['wall_seconds']:.0f}s, load {r['loadavg_before'][0]:.2f}"
                            f"{' NOISY' if r['noisy'] else ''}, settled {r['load']['settle_s']:.0f}s, "
                            f"total {time.monotonic() - t0:.0f}s)")
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
    r.add_argument("--files", type=int, help=f"files per workspace (published: {PUBLISHED_FILES})")
    r.add_argument("--arms", help=f"comma-separated subset of {','.join(NAMES)}")
    r.add_argument("--seed", type=int, default=1)
    r.add_argument("--arm-timeout", type=int)
    r.add_argument("--noisy-load", type=float, default=NOISY_LOAD,
                   help=f"a run starting above this 1-minute load is marked noisy (default {NOISY_LOAD})")
    r.add_argument("--settle-max", type=int,
                   help="wait at most this many s before each run for the load to settle (smoke: 0, else 240)")
    r.add_argument("--settle-load", type=float, help="the load to wait for (default: --noisy-load)")
    r.add_argument("--no-fio", action="store_true")
    r.add_argument("--fio-only", action="store_true", help="skip the arms, run only the fio job set")
    q = sub.add_parser("report")
    q.add_argument("--out", required=True)
    q.add_argument("--exclude-noisy", action="store_true", help="leave noisy runs out of every figure")
    a = p.parse_args()
    if a.cmd == "report":
        print(report(a.out, a.exclude_noisy))
        return 0
    try:
        return cmd_run(a)
    except Stop as e:  # each arm tore itself down (its finally block) on the way out
        log(f"interrupted ({e}); what ran is in {a.out}/arms.jsonl")
        return 130


if __name__ == "__main__":
    sys.exit(main())
