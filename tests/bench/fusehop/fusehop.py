#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The FUSE-hop benchmark driver (docs/benchmarks.md, "FUSE hop").

What one FUSE hop costs, in one invocation, with paired ratios: the same
workloads natively, through layoutd-wsfs (default), layoutd-wsfs
--profile=published (the engine as published: one thread, no writeback
cache) and libfuse's passthrough_ll (built from Debian's example source),
each over the same loop-ext4 volume (direct-I/O loop, as layoutd carves):

  small   flushscope-workload --mode buffered in N workspaces at once
          (write, read, overwrite, rename, delete, walk; content-checked);
          no durability asked (wsfs --commit=none), so the hop alone
  fio     seq write, seq read, rand write, 70/30 randrw, fsync-heavy
  stream  32 MiB in 1 KiB write(2)s, then fsync (fusehop-stream)
  bigwrite  one large file per workspace in 1 MiB write(2)s, then fsync,
          in N workspaces at once (fusehop-stream --bs 1MiB): what the
          FUSE mount's dirty limit (its bdi: max_ratio 1 % and
          strict_limit for a new mount) costs a streaming writer; the
          *-bdi* arms set the bdi after the mount
  reqs    FUSE requests per file (wsfs arms only, N=1): files created as
          an installer does (stat of the missing name, create, write,
          close; a symlink per package dir), read as a resolver does (cold
          after drop_caches, then warm: stat, a probe of a missing
          sibling, open, read, close; readlink), removed (rm -rf); the
          daemon's counters are read between the phases (SIGUSR1)

Per run: wall time, CPU (workload + daemons, from getrusage and
/proc/PID/stat), the daemon's FUSE request counts per opcode (wsfs's
stats file; passthrough_ll has none), p50/p99 latencies. Arms run in a
shuffled order per repeat; ratios are paired within a repeat (arm /
baseline of the same repeat) and summarised as medians with bootstrap
95 % CIs. Every run is kept (OUT/runs.jsonl); a failed run is recorded,
never retried, and makes the exit status 1. Nothing asserts time.

  fusehop.py run --work DIR --build BUILD --out OUT [--profile smoke|full]
                 [--arms a,b,...] [--repeats N] [--ns 1,6] [--files F]
                 [--kinds small,fio,stream,reqs,bigwrite,tree] [--wsfs-base PATH]
                 [--bigwrite-size BYTES] [--tree-files F]

The tree kind (an install's copy, link and rm -rf with cp and rm, N dirs
at once) also takes the arm "host": plain dirs on the host filesystem,
the baseline a user has without layoutd. Its ratios split a workspace's
cost into the volume's (native / host) and the FUSE hop's (arm / native).

--wsfs-base names another layoutd-wsfs binary (e.g. one built from an
older commit) for the arm "wsfs-base": the before of a before/after.
  fusehop.py report --out OUT

Only the Debian python3 standard library is used (/usr/bin/python3).
"""
import argparse
import json
import math
import os
import random
import resource
import shutil
import signal
import stat
import statistics
import subprocess
import sys
import threading
import time

# name -> (kind, daemon options)
ARMS = {
    # Plain directories on the host filesystem (under --work, not on the
    # volume): what a user has without layoutd. Only the tree kind runs it.
    "host": ("host", []),
    "native": ("native", []),
    "passthrough_ll": ("ptll", []),
    "wsfs": ("wsfs", ["--commit=none"]),
    "wsfs-published": ("wsfs", ["--commit=none", "--profile=published"]),
    # Ablations for the design choices (not in the default set):
    "wsfs-t1": ("wsfs", ["--commit=none", "--threads=1"]),
    "wsfs-t4": ("wsfs", ["--commit=none", "--threads=4"]),
    "wsfs-nowb": ("wsfs", ["--commit=none", "--writeback-cache=off"]),
    "wsfs-splice": ("wsfs", ["--commit=none", "--splice=on"]),
    "wsfs-t1s": ("wsfs", ["--commit=none", "--timeout=1"]),
    "wsfs-nocas": ("wsfs", ["--commit=none", "--cas-threshold=0"]),
    "wsfs-xattrs": ("wsfs", ["--commit=none", "--xattrs"]),
    "ptll-wb": ("ptll", ["-o", "writeback"]),
    # One /dev/fuse fd per worker thread (libfuse's clone_fd), and the
    # thread count with it (issue 20, direction 5).
    "wsfs-clonefd": ("wsfs", ["--commit=none", "--clone-fd=on"]),
    "wsfs-t4-clonefd": ("wsfs", ["--commit=none", "--threads=4", "--clone-fd=on"]),
    "wsfs-t8": ("wsfs", ["--commit=none", "--threads=8"]),
    # The FUSE mount's dirty limit (issue 20, direction 4): the default
    # daemon with its bdi set after the mount (ARM_BDI).
    "wsfs-bdi7": ("wsfs", ["--commit=none"]),
    "wsfs-bdi1g": ("wsfs", ["--commit=none"]),
    "wsfs-bdi7-nostrict": ("wsfs", ["--commit=none"]),
    "ptll-wb-bdi7": ("ptll", ["-o", "writeback"]),
    # Fewer requests per file (README, "Choices, measured"): each cut off
    # alone, and all of them off (the daemon as it was before them).
    "wsfs-noneg": ("wsfs", ["--commit=none", "--negative-entries=off"]),
    "wsfs-flush": ("wsfs", ["--commit=none", "--flush=on"]),
    "wsfs-nocsym": ("wsfs", ["--commit=none", "--cache-symlinks=off"]),
    "wsfs-nokeep": ("wsfs", ["--commit=none", "--keep-cache=off"]),
    "wsfs-nocdirs": ("wsfs", ["--commit=none", "--cache-dirs=off"]),
    "wsfs-nopdir": ("wsfs", ["--commit=none", "--parallel-dirops=off"]),
    "wsfs-rdp-always": ("wsfs", ["--commit=none", "--readdirplus=always"]),
    "wsfs-rdp-off": ("wsfs", ["--commit=none", "--readdirplus=off"]),
    "wsfs-nocuts": ("wsfs", ["--commit=none", "--negative-entries=off", "--flush=on", "--cache-symlinks=off"]),
    # FUSE over io_uring (issue 20, direction 6): the driver turns the
    # kernel's enable_uring on for the run and puts it back after.
    "wsfs-uring": ("wsfs", ["--commit=none", "--io-uring=on"]),
    # --wsfs-base: another binary, default options
    "wsfs-base": ("wsfs-base", ["--commit=none"]),
}
DEFAULT_ARMS = ["native", "passthrough_ll", "wsfs", "wsfs-published"]
# /sys/class/bdi/<the mount's st_dev>/ knobs an arm writes once its daemon
# has mounted, in this order (max_bytes after max_ratio: writing one
# recomputes the other). An arm not listed keeps the kernel's: max_ratio 1,
# strict_limit 1 for a FUSE mount.
ARM_BDI = {
    "wsfs-bdi7": [("max_ratio", 7)],
    "wsfs-bdi1g": [("max_bytes", 1 << 30)],
    "wsfs-bdi7-nostrict": [("max_ratio", 7), ("strict_limit", 0)],
    "ptll-wb-bdi7": [("max_ratio", 7)],
}
BDI_KNOBS = ("max_ratio", "max_bytes", "strict_limit")
PROFILES = {
    # A few minutes on the 2-core CI machine: correctness, not numbers.
    "smoke": dict(ns=[1, 6], repeats=1, files=150, fio_size="16M", fio_runtime=1, stream=8 << 20,
                  bigwrite=128 << 20, tree_files=600),
    "full": dict(ns=[1, 6], repeats=5, files=1500, fio_size="256M", fio_runtime=5, stream=32 << 20,
                 bigwrite=512 << 20, tree_files=20000),
}
FIO_JOBS = [
    ("seqwrite", ["--rw=write", "--bs=1M", "--end_fsync=1"]),
    ("seqread", ["--rw=read", "--bs=1M"]),
    ("randwrite", ["--rw=randwrite", "--bs=4k"]),
    ("randrw7030", ["--rw=randrw", "--rwmixread=70", "--bs=4k"]),
    ("fsyncheavy", ["--rw=randwrite", "--bs=4k", "--fsync=1"]),
]
BOOTSTRAP = 5000
SEED = 20261201


def log(msg):
    print(f"[fusehop] {msg}", file=sys.stderr, flush=True)


class Stop(Exception):
    pass


def on_signal(signum, frame):
    raise Stop(f"signal {signum}")


def sh(cmd, check=True, **kw):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed ({r.returncode}): {r.stderr.strip()[-800:]}")
    return r


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def proc_cpu_s(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            v = f.read().rsplit(")", 1)[1].split()
        return (int(v[11]) + int(v[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def is_fuse_mount(path):
    with open("/proc/self/mountinfo") as f:
        for line in f:
            parts = line.split()
            sep = parts.index("-")
            if parts[4] == path and parts[sep + 1].startswith("fuse"):
                return True
    return False


def wait_for(cond, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.02)
    raise RuntimeError(f"timed out waiting for {what}")


def drop_caches():
    os.sync()
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


URING_PARAM = "/sys/module/fuse/parameters/enable_uring"


def uring_enable():
    """Turns the fuse module's enable_uring on; returns the value to put
    back, or None when this kernel has no FUSE over io_uring."""
    try:
        with open(URING_PARAM) as f:
            was = f.read().strip()
        with open(URING_PARAM, "w") as f:
            f.write("Y\n")
        return was
    except OSError:
        return None


def uring_restore(was):
    if was is not None:
        with open(URING_PARAM, "w") as f:
            f.write(was + "\n")


# ---------------------------------------------------------------- the volume

class Volume:
    """One loop-ext4 volume (sparse file, direct-I/O loop, ext4), as layoutd
    carves them; every arm runs on it."""

    def __init__(self, work, size="12G"):
        self.img = f"{work}/vol.img"
        self.mnt = f"{work}/vol"
        os.makedirs(self.mnt, exist_ok=True)
        sh(["truncate", "-s", size, self.img])
        self.loop = sh(["losetup", "--find", "--show", "--direct-io=on", self.img]).stdout.strip()
        dio = sh(["cat", f"/sys/block/{os.path.basename(self.loop)}/loop/dio"], check=False).stdout.strip()
        self.direct_io = dio == "1"
        sh(["mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", self.loop])
        sh(["mount", self.loop, self.mnt])

    def close(self):
        sh(["umount", self.mnt], check=False)
        sh(["losetup", "-d", self.loop], check=False)


# ---------------------------------------------------------------- daemons

def bdi_dir(mnt):
    d = os.stat(mnt).st_dev
    return f"/sys/class/bdi/{os.major(d)}:{os.minor(d)}"


def bdi_read(mnt):
    out = {}
    for k in BDI_KNOBS:
        try:
            with open(f"{bdi_dir(mnt)}/{k}") as f:
                out[k] = int(f.read().strip())
        except (OSError, ValueError):
            pass
    return out


def bdi_set(mnt, knobs):
    for k, v in knobs:
        with open(f"{bdi_dir(mnt)}/{k}", "w") as f:
            f.write(f"{v}\n")


class Daemon:
    def __init__(self, c, kind, opts, state, mnt, content, stats, bdi=None):
        self.kind, self.mnt, self.stats = kind, mnt, stats
        if kind in ("wsfs", "wsfs-base"):
            cmd = [c.wsfs if kind == "wsfs" else c.wsfs_base, "--state", state, "--content", content,
                   "--stats-file", stats] + opts + [mnt]
            self.kind = kind = "wsfs"
        else:
            cmd = [c.ptll, "-f", "-o", f"source={state}"] + opts + [mnt]
        self.log = open(f"{mnt}.log", "w")
        self.p = subprocess.Popen(cmd, stdout=self.log, stderr=self.log)
        wait_for(lambda: self.p.poll() is not None or is_fuse_mount(mnt), 15, f"{kind} at {mnt}")
        if self.p.poll() is not None:
            raise RuntimeError(f"{kind} exited with {self.p.returncode} (see {mnt}.log)")
        if bdi:
            bdi_set(mnt, bdi)
        self.bdi = bdi_read(mnt)
        self.cpu0 = proc_cpu_s(self.p.pid)

    def ops_now(self):
        """The daemon's request counters now (SIGUSR1 prints them to its
        log; the stats file may lag)."""
        with open(f"{self.mnt}.log") as f:
            before = sum(1 for line in f if line.startswith("layoutd-wsfs: stats ") and line.endswith("\n"))
        self.p.send_signal(signal.SIGUSR1)
        end = time.monotonic() + 10
        while time.monotonic() < end:
            with open(f"{self.mnt}.log") as f:
                # (a line still being written has no newline yet)
                lines = [line for line in f if line.startswith("layoutd-wsfs: stats ") and line.endswith("\n")]
            if len(lines) > before:
                return json.loads(lines[-1][len("layoutd-wsfs: stats "):]).get("ops", {})
            time.sleep(0.02)
        raise RuntimeError("the daemon did not print its counters after SIGUSR1")

    def cpu(self):
        v = proc_cpu_s(self.p.pid)
        return v - self.cpu0 if v is not None and self.cpu0 is not None else None

    def ring_requests(self):
        """After stop(): the requests the daemon served through io_uring
        rings (its exit line), or None when it does not say."""
        try:
            with open(f"{self.mnt}.log") as f:
                for line in f:
                    if "requests came through the rings" in line:
                        return int(line.split("io_uring: ")[1].split()[0])
        except (OSError, ValueError, IndexError):
            pass
        return None

    def stop(self):
        """Returns the wsfs counters (final stats file) or None."""
        if self.p.poll() is None:
            if self.kind == "wsfs":
                self.p.send_signal(signal.SIGTERM)
            else:
                sh(["fusermount3", "-u", self.mnt], check=False)
            try:
                self.p.wait(30)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        if is_fuse_mount(self.mnt):
            sh(["umount", "-l", self.mnt], check=False)
        self.log.close()
        if self.kind == "wsfs":
            try:
                with open(self.stats) as f:
                    return json.loads(f.read())
            except (OSError, ValueError):
                return None
        return None


class Setup:
    """N workspaces of one arm: dirs on the volume, daemons when FUSE."""

    def __init__(self, c, arm, n, tag):
        self.kind, opts = ARMS[arm]
        self.kind = "wsfs" if self.kind == "wsfs-base" else self.kind
        self.root = f"{c.vol.mnt}/{tag}"
        self.daemons, self.dirs, self.cpu = [], [], {}
        if self.kind == "host":
            self.root = f"{c.work}/{tag}"
        os.makedirs(f"{self.root}/content")
        for k in range(n):
            state, mnt = f"{self.root}/state{k}", f"{c.work}/mnt-{tag}-{k}"
            os.makedirs(state)
            if self.kind in ("native", "host"):
                self.dirs.append(state)
                continue
            os.makedirs(mnt)
            self.daemons.append(Daemon(c, ARMS[arm][0], opts, state, mnt, f"{self.root}/content",
                                       f"{c.work}/stats-{tag}-{k}.json", ARM_BDI.get(arm)))
            self.dirs.append(mnt)

    def daemon_cpu(self):
        v = [d.cpu() for d in self.daemons]
        return sum(x for x in v if x is not None) if self.daemons else 0.0

    def close(self):
        ops = {}
        for d in self.daemons:
            st = d.stop()
            for k, v in ((st or {}).get("ops") or {}).items():
                ops[k] = ops.get(k, 0) + v
            rings = d.ring_requests()
            if rings is not None:
                ops["io_uring_served"] = ops.get("io_uring_served", 0) + rings
            shutil.rmtree(d.mnt, ignore_errors=True)
        shutil.rmtree(self.root, ignore_errors=True)
        return ops if any(d.kind == "wsfs" for d in self.daemons) else None


# ---------------------------------------------------------------- workloads

def run_small(c, arm, n, rep):
    tag = f"small-{arm}-n{n}-r{rep}"
    out = {"kind": "small", "arm": arm, "n": n, "rep": rep, "files": c.files, "ok": False}
    s = None
    try:
        drop_caches()
        s = Setup(c, arm, n, tag)
        start = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 300_000_000
        procs = [subprocess.Popen([c.workload, "--dir", d, "--files", str(c.files), "--seed", str(1000 + k),
                                   "--mode", "buffered", "--start-at", str(start), "--id", f"ws{k}"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for k, d in enumerate(s.dirs)]
        res = []
        for p in procs:
            # (each prints one JSON object; its "lat" keeps histograms we drop)
            o, e = p.communicate(timeout=1800)
            try:
                res.append(json.loads(o))
            except ValueError:
                res.append({"ok": False, "error": (e or o).strip()[-300:]})
            if p.returncode != 0:
                res[-1]["ok"] = False
        out["daemon_cpu_s"] = s.daemon_cpu()
        out["workspaces"] = res
        out["ok"] = all(r.get("ok") is True for r in res)
        if not out["ok"]:
            out["error"] = next((r.get("error") for r in res if r.get("error")), "a workload failed")
        out["time_s"] = max(r.get("end_s", 0) for r in res)
        out["workload_cpu_s"] = sum(r.get("cpu_user_s", 0) + r.get("cpu_sys_s", 0) for r in res)
        out["cpu_s"] = out["workload_cpu_s"] + (out["daemon_cpu_s"] or 0)
        for lat in ("write", "read", "stat"):
            v = [r["lat"][lat] for r in res if isinstance(r.get("lat"), dict) and r["lat"].get(lat)]
            if v:
                out[f"lat_{lat}_p50_us"] = statistics.median(x["p50_us"] for x in v)
                out[f"lat_{lat}_p99_us"] = max(x["p99_us"] for x in v)
    except Stop:
        raise
    except Exception as e:
        out["error"] = str(e)
    finally:
        if s:
            out["ops"] = s.close()
    return out


def fio_one(c, d, name, args):
    cmd = ["fio", "--output-format=json", f"--name={name}", f"--directory={d}", "--filename=fio.dat",
           "--ioengine=psync", f"--size={c.fio_size}", f"--runtime={c.fio_runtime}", "--time_based=0",
           "--numjobs=1", "--group_reporting"] + args
    r = sh(cmd, check=False, timeout=c.fio_runtime * 30 + 300)
    out = {"job": name, "ok": r.returncode == 0}
    try:
        j = json.loads(r.stdout[r.stdout.index("{"):])["jobs"][0]
        for k in ("read", "write"):
            s = j.get(k, {})
            if not s.get("total_ios"):
                continue
            pct = s.get("clat_ns", {}).get("percentile", {})
            out[k] = {"bw_MBps": s["bw_bytes"] / 1e6, "iops": s["iops"],
                      "p50_us": pct.get("50.000000", 0) / 1e3, "p99_us": pct.get("99.000000", 0) / 1e3}
        sy = j.get("sync", {}).get("lat_ns", {})
        if sy.get("N"):
            out["sync"] = {"n": sy["N"], "p50_us": sy.get("percentile", {}).get("50.000000", 0) / 1e3,
                           "p99_us": sy.get("percentile", {}).get("99.000000", 0) / 1e3}
        out["cpu_s"] = (j.get("usr_cpu", 0) + j.get("sys_cpu", 0)) / 100.0 * j.get("job_runtime", 0) / 1000.0
        out["time_s"] = j.get("job_runtime", 0) / 1000.0
        if j.get("error"):
            out["ok"], out["error"] = False, f"fio job error {j['error']}"
    except (ValueError, KeyError, IndexError):
        out["ok"] = False
    if not out["ok"]:
        out.setdefault("error", (r.stderr.strip() or r.stdout.strip())[-300:])
    return out


def run_fio(c, arm, rep):
    tag = f"fio-{arm}-r{rep}"
    out = {"kind": "fio", "arm": arm, "n": 1, "rep": rep, "ok": False, "jobs": []}
    s = None
    try:
        s = Setup(c, arm, 1, tag)
        for name, args in FIO_JOBS:
            drop_caches()
            c0 = s.daemon_cpu()
            j = fio_one(c, s.dirs[0], name, args)
            j["daemon_cpu_s"] = s.daemon_cpu() - c0
            out["jobs"].append(j)
        out["ok"] = all(j["ok"] for j in out["jobs"])
        if not out["ok"]:
            out["error"] = next(j.get("error") for j in out["jobs"] if not j["ok"])
    except Stop:
        raise
    except Exception as e:
        out["error"] = str(e)
    finally:
        if s:
            out["ops"] = s.close()
    return out


def run_stream(c, arm, rep):
    tag = f"stream-{arm}-r{rep}"
    out = {"kind": "stream", "arm": arm, "n": 1, "rep": rep, "ok": False, "size": c.stream}
    s = None
    try:
        drop_caches()
        s = Setup(c, arm, 1, tag)
        r = sh([c.stream_bin, "--file", f"{s.dirs[0]}/artifact.bin", "--size", str(c.stream)], check=False,
               timeout=1800)
        try:
            out.update(json.loads(r.stdout))
        except ValueError:
            out["error"] = (r.stderr or r.stdout).strip()[-300:]
        out["ok"] = r.returncode == 0 and out.get("ok", False)
        out["daemon_cpu_s"] = s.daemon_cpu()
        out["time_s"] = out.get("total_s")
        out["cpu_s"] = out.get("cpu_user_s", 0) + out.get("cpu_sys_s", 0) + (out["daemon_cpu_s"] or 0)
    except Stop:
        raise
    except Exception as e:
        out["error"] = str(e)
    finally:
        if s:
            out["ops"] = s.close()
    return out


def run_bigwrite(c, arm, n, rep):
    """One large file per workspace, written at once in N workspaces."""
    tag = f"bigwrite-{arm}-n{n}-r{rep}"
    out = {"kind": "bigwrite", "arm": arm, "n": n, "rep": rep, "ok": False, "size": c.bigwrite}
    s = None
    try:
        drop_caches()
        s = Setup(c, arm, n, tag)
        out["bdi"] = s.daemons[0].bdi if s.daemons else None
        c0 = s.daemon_cpu()

        def each(phase):
            procs = [subprocess.Popen([c.stream_bin, "--file", f"{d}/big.bin", "--size", str(c.bigwrite),
                                       "--bs", str(1 << 20), "--phase", phase],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for d in s.dirs]
            res = []
            for p in procs:
                o, e = p.communicate(timeout=1800)
                try:
                    res.append(json.loads(o))
                except ValueError:
                    res.append({"ok": False, "error": (e or o).strip()[-300:]})
                if p.returncode != 0:
                    res[-1]["ok"] = False
            return res

        t0 = time.monotonic()
        res = each("write")
        out["time_s"] = time.monotonic() - t0  # the slowest writer, open to close
        out["daemon_cpu_s"] = s.daemon_cpu() - c0
        out["write_s"] = max(r.get("write_s", 0) for r in res)
        out["fsync_s"] = max(r.get("fsync_s", 0) for r in res)
        out["workload_cpu_s"] = sum(r.get("cpu_user_s", 0) + r.get("cpu_sys_s", 0) for r in res)
        out["cpu_s"] = out["workload_cpu_s"] + (out["daemon_cpu_s"] or 0)
        out["MiBps"] = n * c.bigwrite / (1 << 20) / out["time_s"]
        out["write_p99_us"] = max(r.get("write_p99_us", 0) for r in res)
        checked = each("verify")
        out["ok"] = all(r.get("ok") is True for r in res + checked)
        if not out["ok"]:
            out["error"] = next((r.get("error") for r in res + checked if r.get("error")), "a writer failed")
    except Stop:
        raise
    except Exception as e:
        out["error"] = str(e)
    finally:
        if s:
            out["ops"] = s.close()
    return out


REQ_PHASES = ["create", "read_cold", "read_warm", "remove"]


def run_reqs(c, arm, rep):
    """FUSE requests per file, by phase, through one daemon."""
    tag = f"reqs-{arm}-r{rep}"
    out = {"kind": "reqs", "arm": arm, "n": 1, "rep": rep, "files": c.files, "ok": False}
    s = None
    per_dir = 50
    data = b"x" * 2048
    try:
        if ARMS[arm][0] not in ("wsfs", "wsfs-base"):
            raise RuntimeError("reqs needs a wsfs arm (the daemon's counters)")
        drop_caches()
        s = Setup(c, arm, 1, tag)
        top, d = s.dirs[0], s.daemons[0]
        names = [(f"{top}/pkg{k // per_dir:04d}", f"f{k:05d}.js") for k in range(c.files)]
        dirs = sorted({p for p, _ in names})

        def create():
            for p in dirs:
                os.makedirs(f"{p}/lib")
                os.symlink("lib/f.js", f"{p}/main.js")
            for p, n in names:
                try:  # an installer's existence check
                    os.stat(f"{p}/lib/{n}")
                    raise RuntimeError(f"{p}/lib/{n} exists before its create")
                except FileNotFoundError:
                    pass
                fd = os.open(f"{p}/lib/{n}", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                os.write(fd, data)
                os.close(fd)

        def read():
            for p in dirs:
                if os.readlink(f"{p}/main.js") != "lib/f.js":
                    raise RuntimeError(f"{p}/main.js: wrong target")
            for p, n in names:
                os.stat(f"{p}/lib/{n}")
                try:  # a resolver's probe of a sibling that is not there
                    os.stat(f"{p}/lib/{n}.mjs")
                    raise RuntimeError(f"{p}/lib/{n}.mjs exists")
                except FileNotFoundError:
                    pass
                fd = os.open(f"{p}/lib/{n}", os.O_RDONLY)
                got = os.read(fd, 8192)
                os.close(fd)
                if got != data:
                    raise RuntimeError(f"{p}/lib/{n}: wrong content")

        def remove():
            for p in dirs:
                shutil.rmtree(p)
            if os.listdir(top):
                raise RuntimeError("left behind after rm -rf")

        prev = d.ops_now()
        out["phases"] = {}
        for phase, fn in (("create", create), ("read_cold", read), ("read_warm", read), ("remove", remove)):
            if phase == "read_cold":
                drop_caches()
                prev = d.ops_now()  # the FORGETs of the drop are not the read's
            t0 = time.monotonic()
            fn()
            dt = time.monotonic() - t0
            now = d.ops_now()
            delta = {k: now.get(k, 0) - prev.get(k, 0) for k in now}
            delta = {k: v for k, v in delta.items() if v}
            out["phases"][phase] = {"time_s": dt, "ops": delta, "total": sum(delta.values())}
            prev = now
        out["ok"] = True
    except Stop:
        raise
    except Exception as e:
        out["error"] = str(e)
    finally:
        if s:
            out["ops"] = s.close()
    return out


TREE_PHASES = ["copy", "link", "rm_link", "rm_copy"]


def make_tree(c):
    """The source tree, made once per run on the host filesystem: a
    node_modules-like set of packages (5-60 files each, in a few nested
    dirs, one symlink per package), sizes log-normal around 1.5 KiB with a
    tail past the pool's 64 KiB threshold. Seeded: every arm and repeat
    copies the same bytes. Returns (path, files, bytes)."""
    src = f"{c.work}/tree-src"
    if getattr(c, "tree", None):
        return c.tree
    shutil.rmtree(src, ignore_errors=True)  # a partial one from a failed attempt
    rng = random.Random(SEED)
    files = size = pkg = 0
    while files < c.tree_files:
        p = f"{src}/pkg{pkg:05d}"
        subs = ["", "lib", "dist", "dist/esm"]
        for d in subs:
            os.makedirs(f"{p}/{d}", exist_ok=True)
        os.symlink("lib/index.js", f"{p}/main.js")
        for k in range(min(rng.randint(5, 60), c.tree_files - files)):
            n = int(min(rng.lognormvariate(math.log(1500), 1.6), 4 << 20))
            with open(f"{p}/{rng.choice(subs)}/f{k:03d}.js", "wb") as f:
                f.write(rng.randbytes(n))
            files += 1
            size += n
        pkg += 1
    os.sync()
    c.tree = (src, files, size)
    return c.tree


def tree_count(top):
    """(regular files, bytes, symlinks, files with more than one link)
    below top, by lstat."""
    files = size = links = multi = 0
    for d, _, names in os.walk(top):
        for n in names:
            st = os.lstat(f"{d}/{n}")
            if stat.S_ISLNK(st.st_mode):
                links += 1
            elif stat.S_ISREG(st.st_mode):
                files += 1
                size += st.st_size
                multi += st.st_nlink > 1
    return files, size, links, multi


def run_tree(c, arm, n, rep):
    """An install's file-system work on a package tree, with real tools,
    N directories at once: copy it in from the host (`cp -a`: what pnpm
    does when its store is on another filesystem), hard-link it from a
    store inside the same directory (`cp -al`: what pnpm does when the
    store is on the same filesystem; the store is copied in first,
    untimed), then `rm -rf` each tree. Per phase: the slowest directory's
    time, the median directory's, the tools' and daemons' CPU, and (wsfs)
    the FUSE requests per file."""
    tag = f"tree-{arm}-n{n}-r{rep}"
    out = {"kind": "tree", "arm": arm, "n": n, "rep": rep, "ok": False, "phases": {}}
    s = None
    procs = []
    try:
        src, files, size = make_tree(c)
        out.update(files=files, bytes=size)
        drop_caches()
        s = Setup(c, arm, n, tag)
        want = tree_count(src)[:3]

        def ops():
            if not s.daemons or s.kind != "wsfs":
                return None
            tot = {}
            for d in s.daemons:
                for k, v in d.ops_now().items():
                    tot[k] = tot.get(k, 0) + v
            return tot

        def phase(name, cmd, check=None, linked=False):
            # The previous phase's writeback is not this one's. A phase's
            # own writeback is not timed either (the next phase's sync
            # takes it): the times are the tools' and the hop's.
            os.sync()
            try:
                o0 = ops()
            except RuntimeError:
                o0 = None
            d0 = s.daemon_cpu()
            r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.monotonic()
            # Started here, not in threads, so that a stop can kill them.
            procs[:] = [subprocess.Popen(cmd(d), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                        for d in s.dirs]
            ends = [None] * n

            def reap(k):
                err = procs[k].communicate()[1]
                ends[k] = (time.monotonic() - t0, procs[k].returncode, (err or "").strip()[-300:])

            ts = [threading.Thread(target=reap, args=(k,)) for k in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            bad = [e for e in ends if e is None or e[1] != 0]
            if bad:
                e = bad[0] or (None, "?", "no exit status")
                raise RuntimeError(f"{name}: {' '.join(cmd('DIR'))} failed ({e[1]}): {e[2]}")
            ph = {"time_s": max(e[0] for e in ends), "median_s": statistics.median(e[0] for e in ends),
                  "tool_cpu_s": (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime),
                  "daemon_cpu_s": s.daemon_cpu() - d0}
            out["phases"][name] = ph  # kept even when the counters below cannot be read
            if o0 is not None:
                try:
                    o1 = ops()
                    delta = {k: o1.get(k, 0) - o0.get(k, 0) for k in o1}
                    ph["ops"] = {k: v for k, v in delta.items() if v}
                except RuntimeError as e:
                    ph["ops_error"] = str(e)
            # The count-back is a walk: it leaves the dentries and
            # attributes cached, as an install leaves them for the rm -rf
            # that follows it.
            for d in s.dirs if check else []:
                got = tree_count(f"{d}/{check}")
                if got[:3] != want:
                    raise RuntimeError(f"{name}: {d}/{check} has {got[:3]} (files, bytes, symlinks), want {want}")
                if linked and got[3] != got[0]:
                    raise RuntimeError(f"{name}: {d}/{check}: {got[0] - got[3]} of {got[0]} files are not hard links")

        phase("copy", lambda d: ["cp", "-a", src, f"{d}/copy"], check="copy")
        phase("store", lambda d: ["cp", "-a", src, f"{d}/store"], check="store")  # untimed in the report
        phase("link", lambda d: ["cp", "-al", f"{d}/store", f"{d}/link"], check="link", linked=True)
        phase("rm_link", lambda d: ["rm", "-rf", f"{d}/link"])
        phase("rm_copy", lambda d: ["rm", "-rf", f"{d}/copy"])
        for d in s.dirs:
            for t in ("link", "copy"):
                if os.path.lexists(f"{d}/{t}"):
                    raise RuntimeError(f"rm -rf left {d}/{t} behind")
        out["time_s"] = sum(out["phases"][p]["time_s"] for p in TREE_PHASES)
        out["ok"] = True
    except Stop:
        raise
    except Exception as e:
        out["error"] = str(e)
    finally:
        for p in procs:  # a stop in the middle of a phase: its tools go first
            if p.poll() is None:
                p.kill()
            p.wait()
        if s:
            out["ops"] = s.close()
            if "--io-uring=on" in ARMS[arm][1] and out["ok"] and not (out["ops"] or {}).get("io_uring_served"):
                out["ok"] = False
                out["error"] = "--io-uring=on, but no request came through the io_uring rings"
    return out


# ---------------------------------------------------------------- statistics

def boot_ci(vals, seed=12345):
    """Median with a bootstrap 95 % CI (percentile method)."""
    vals = [v for v in vals if v is not None]
    if not vals:
        return None
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(vals, k=len(vals))) for _ in range(BOOTSTRAP))
    return {"median": statistics.median(vals), "lo": meds[int(0.025 * BOOTSTRAP)],
            "hi": meds[int(0.975 * BOOTSTRAP) - 1], "n": len(vals)}


def paired(runs, kind, n, arm, base, key):
    """Per-repeat ratio arm/base of runs[key], for the repeats both have."""
    by = {}
    for r in runs:
        if r["kind"] == kind and r["n"] == n and r["ok"] and r.get(key):
            by[(r["arm"], r["rep"])] = r[key]
    reps = sorted({rep for (a, rep) in by if a == arm} & {rep for (a, rep) in by if a == base})
    return [by[(arm, rep)] / by[(base, rep)] for rep in reps]


def fmt_ci(ci, d=2):
    if not ci:
        return "n/a"
    if ci["n"] == 1:
        return f"{ci['median']:.{d}f}"
    return f"{ci['median']:.{d}f} [{ci['lo']:.{d}f}, {ci['hi']:.{d}f}]"


def report(out):
    with open(f"{out}/runs.jsonl") as f:
        runs = [json.loads(line) for line in f if line.strip()]
    with open(f"{out}/meta.json") as f:
        meta = json.load(f)
    arms = meta["arms"]
    L = [f"# fusehop: {meta['profile']} profile", "",
         f"{meta['machine']}; load average at start {meta['load_start']}, at end {meta.get('load_end')}; "
         f"volume loop-ext4, direct I/O {'on' if meta.get('direct_io') else 'OFF'}; " + (f"host dirs on {meta['work_fstype']}; " if meta.get('work_fstype') else "") +
         f"{meta['repeats']} repeat(s), arms shuffled per repeat; ratios paired per repeat, median "
         "[bootstrap 95 % CI] when there is more than one repeat. CPU = workload + daemons.", ""]
    failed = [r for r in runs if not r["ok"]]
    L.append(f"Runs: {len(runs)}, failed: {len(failed)}" +
             "".join(f"\n- FAILED {r['kind']} {r['arm']} n={r['n']} rep {r['rep']}: {r.get('error')}" for r in failed))
    L.append("")
    verdicts = []
    for n in meta["ns"] if any(r["kind"] == "small" for r in runs) else []:
        L += [f"## Small-file workload, N={n} ({meta['files']} files per workspace)", "",
              "| arm | time s | CPU s | time / ptll | CPU / ptll | time / native | write p50/p99 µs | read p50/p99 µs | stat p50/p99 µs |",
              "|---|---|---|---|---|---|---|---|---|"]
        for arm in arms:
            rs = [r for r in runs if r["kind"] == "small" and r["n"] == n and r["arm"] == arm and r["ok"]]
            if not any(r["kind"] == "small" and r["arm"] == arm for r in runs):
                continue  # (the host arm runs only the tree kind)
            if not rs:
                L.append(f"| {arm} | failed | | | | | | | |")
                continue
            t = boot_ci([r["time_s"] for r in rs])
            cpu = boot_ci([r["cpu_s"] for r in rs])
            tp = boot_ci(paired(runs, "small", n, arm, "passthrough_ll", "time_s"))
            cp = boot_ci(paired(runs, "small", n, arm, "passthrough_ll", "cpu_s"))
            tn = boot_ci(paired(runs, "small", n, arm, "native", "time_s"))
            lat = lambda k: "/".join(f"{statistics.median(r.get(k + s, 0) for r in rs):.0f}" for s in ("_p50_us", "_p99_us"))
            L.append(f"| {arm} | {fmt_ci(t)} | {fmt_ci(cpu)} | {fmt_ci(tp)} | {fmt_ci(cp)} | {fmt_ci(tn)} | "
                     f"{lat('lat_write')} | {lat('lat_read')} | {lat('lat_stat')} |")
            if arm == "wsfs" and tp and cp:
                met = tp["median"] <= 1.0 and cp["median"] <= 1.0
                verdicts.append(f"- default wsfs <= 1.0x passthrough_ll at N={n}: time {tp['median']:.2f}x, "
                                f"CPU {cp['median']:.2f}x: **{'met' if met else 'NOT met'}**")
        ops = {}
        for r in runs:
            if r["kind"] == "small" and r["n"] == n and r.get("ops"):
                ops.setdefault(r["arm"], []).append(r["ops"])
        if ops:
            L += ["", "FUSE requests per run (the daemons' own counters, median over repeats):", ""]
            for arm, lst in ops.items():
                keys = sorted({k for o in lst for k in o}, key=lambda k: -statistics.median(o.get(k, 0) for o in lst))
                L.append(f"- {arm}: " + ", ".join(f"{k} {int(statistics.median(o.get(k, 0) for o in lst))}" for k in keys))
        L.append("")
    reqs = [r for r in runs if r["kind"] == "reqs" and r["ok"]]
    if reqs:
        L += [f"## FUSE requests per file ({meta['files']} files, one workspace)", "",
              "Requests the daemon served per file, by phase (median over repeats); the most frequent "
              "opcodes per file in brackets. read_cold follows a drop_caches; read_warm repeats it.", "",
              "| arm | " + " | ".join(REQ_PHASES) + " |", "|---|" + "---|" * len(REQ_PHASES)]
        for arm in [a for a in arms if any(r["arm"] == a for r in reqs)]:
            rs = [r for r in reqs if r["arm"] == arm]
            cells = []
            for ph in REQ_PHASES:
                tot = statistics.median(r["phases"][ph]["total"] for r in rs) / meta["files"]
                keys = sorted({k for r in rs for k in r["phases"][ph]["ops"]},
                              key=lambda k: -statistics.median(r["phases"][ph]["ops"].get(k, 0) for r in rs))
                top = ", ".join(f"{k} {statistics.median(r['phases'][ph]['ops'].get(k, 0) for r in rs) / meta['files']:.2f}"
                                for k in keys[:5])
                cells.append(f"**{tot:.2f}** ({top})")
            L.append(f"| {arm} | " + " | ".join(cells) + " |")
        L.append("")
    tree = [r for r in runs if r["kind"] == "tree"]
    for n in sorted({r["n"] for r in tree}):
        rs0 = [r for r in tree if r["n"] == n and r["ok"]]
        if not rs0:
            continue
        L += [f"## Package tree, N={n} ({rs0[0]['files']} files, {rs0[0]['bytes'] / 1e6:.0f} MB per directory)", "",
              "Per phase: the slowest directory's time (median over repeats), its ratio to the host dirs and "
              "to the volume without FUSE (paired per repeat), CPU of tools + daemons, FUSE requests per file "
              "(wsfs: the daemons' counters). copy = `cp -a` from the host; link = `cp -al` from a store copied "
              "into the same directory first; rm = `rm -rf`.", "",
              "| phase | arm | time s | / host | / native | CPU s | requests per file |", "|---|---|---|---|---|---|---|"]
        for ph in TREE_PHASES:
            for arm in arms:
                rs = [r for r in rs0 if r["arm"] == arm]
                if not rs:
                    if any(r["n"] == n and r["arm"] == arm for r in tree):
                        L.append(f"| {ph} | {arm} | failed | | | | |")
                    continue

                def per_rep(a):
                    return {r["rep"]: r["phases"][ph]["time_s"] for r in rs0 if r["arm"] == a}

                mine = per_rep(arm)
                ratio = {}
                for base in ("host", "native"):
                    b = per_rep(base)
                    ratio[base] = boot_ci([mine[k] / b[k] for k in mine if k in b and b[k] > 0])
                t = statistics.median(r["phases"][ph]["time_s"] for r in rs)
                cpu = statistics.median(r["phases"][ph]["tool_cpu_s"] + r["phases"][ph]["daemon_cpu_s"] for r in rs)
                opsc = ""
                if rs[0]["phases"][ph].get("ops") is not None:
                    per = n * rs[0]["files"]
                    keys = sorted({k for r in rs for k in r["phases"][ph]["ops"]},
                                  key=lambda k: -statistics.median(r["phases"][ph]["ops"].get(k, 0) for r in rs))
                    tot = statistics.median(sum(r["phases"][ph]["ops"].values()) for r in rs) / per
                    opsc = f"**{tot:.2f}** (" + ", ".join(
                        f"{k} {statistics.median(r['phases'][ph]['ops'].get(k, 0) for r in rs) / per:.2f}"
                        for k in keys[:5]) + ")"
                L.append(f"| {ph} | {arm} | {t:.2f} | {fmt_ci(ratio['host'])} | {fmt_ci(ratio['native'])} | "
                         f"{cpu:.2f} | {opsc} |")
        L.append("")
    fio = [r for r in runs if r["kind"] == "fio"]
    if fio:
        L += ["## fio (N=1)", "", "| job | arm | MB/s | IOPS | p50 µs | p99 µs | daemon CPU s | MB/s / native |",
              "|---|---|---|---|---|---|---|---|"]
    for name, _ in (FIO_JOBS if fio else []):
        for arm in arms:
            js = [j for r in fio if r["arm"] == arm for j in r["jobs"] if j["job"] == name and j["ok"]]
            nat = {r["rep"]: j for r in fio if r["arm"] == "native" for j in r["jobs"] if j["job"] == name and j["ok"]}
            if not any(r["arm"] == arm for r in fio):
                continue
            if not js:
                L.append(f"| {name} | {arm} | failed | | | | | |")
                continue
            side = "write" if "write" in js[0] and name != "seqread" else "read"
            bw = boot_ci([j[side]["bw_MBps"] for j in js if side in j])
            iops = statistics.median(j[side]["iops"] for j in js if side in j)
            p50 = statistics.median(j[side]["p50_us"] for j in js if side in j)
            p99 = statistics.median(j[side]["p99_us"] for j in js if side in j)
            dc = statistics.median(j.get("daemon_cpu_s") or 0 for j in js)
            ratio = boot_ci([j[side]["bw_MBps"] / nat[r["rep"]][side]["bw_MBps"]
                             for r in fio if r["arm"] == arm for j in r["jobs"]
                             if j["job"] == name and j["ok"] and r["rep"] in nat and side in nat[r["rep"]]])
            L.append(f"| {name} | {arm} | {fmt_ci(bw, 1)} | {iops:.0f} | {p50:.0f} | {p99:.0f} | {dc:.2f} | {fmt_ci(ratio)} |")
    if any(r["kind"] == "stream" for r in runs):
        L += ["", f"## 1 KiB-write stream ({meta['stream'] >> 20} MiB, then fsync)", "",
              "| arm | total s | write s | fsync s | CPU s | time / native | write p50/p99 µs | FUSE writes |",
              "|---|---|---|---|---|---|---|---|"]
    for arm in arms if any(r["kind"] == "stream" for r in runs) else []:
        rs = [r for r in runs if r["kind"] == "stream" and r["arm"] == arm and r["ok"]]
        if not any(r["kind"] == "stream" and r["arm"] == arm for r in runs):
            continue
        if not rs:
            L.append(f"| {arm} | failed | | | | | | |")
            continue
        tn = boot_ci(paired(runs, "stream", 1, arm, "native", "time_s"))
        w = statistics.median((r.get("ops") or {}).get("write", 0) for r in rs) if rs[0].get("ops") else None
        L.append(f"| {arm} | {fmt_ci(boot_ci([r['time_s'] for r in rs]), 3)} | "
                 f"{statistics.median(r['write_s'] for r in rs):.3f} | {statistics.median(r['fsync_s'] for r in rs):.3f} | "
                 f"{fmt_ci(boot_ci([r['cpu_s'] for r in rs]))} | {fmt_ci(tn)} | "
                 f"{statistics.median(r['write_p50_us'] for r in rs):.1f}/{statistics.median(r['write_p99_us'] for r in rs):.1f} | "
                 f"{'n/a' if w is None else int(w)} |")
        if arm == "wsfs" and tn:
            verdicts.append(f"- 1 KiB stream <= 2x native: {tn['median']:.2f}x: **{'met' if tn['median'] <= 2.0 else 'NOT met'}**")
    big = [r for r in runs if r["kind"] == "bigwrite"]
    for n in meta["ns"] if big else []:
        L += ["", f"## Large-file writes, N={n} ({meta.get('bigwrite', 0) >> 20} MiB per workspace in 1 MiB "
              "write(2)s, then fsync, all at once)", "",
              "| arm | bdi (ratio/bytes/strict) | time s | write s | fsync s | MiB/s (all) | CPU s | time / ptll | "
              "CPU / ptll | write p99 µs |", "|---|---|---|---|---|---|---|---|---|---|"]
        for arm in arms:
            rs = [r for r in big if r["n"] == n and r["arm"] == arm and r["ok"]]
            if not rs:
                if any(r["n"] == n and r["arm"] == arm for r in big):
                    L.append(f"| {arm} | | failed | | | | | | | |")
                continue
            b = rs[0].get("bdi") or {}
            bdi = (f"{b.get('max_ratio', '?')}/{b.get('max_bytes', 0) >> 20}M/{b.get('strict_limit', '?')}"
                   if b else "-")
            L.append(f"| {arm} | {bdi} | {fmt_ci(boot_ci([r['time_s'] for r in rs]))} | "
                     f"{statistics.median(r['write_s'] for r in rs):.2f} | {statistics.median(r['fsync_s'] for r in rs):.2f} | "
                     f"{statistics.median(r['MiBps'] for r in rs):.0f} | {fmt_ci(boot_ci([r['cpu_s'] for r in rs]))} | "
                     f"{fmt_ci(boot_ci(paired(runs, 'bigwrite', n, arm, 'passthrough_ll', 'time_s')))} | "
                     f"{fmt_ci(boot_ci(paired(runs, 'bigwrite', n, arm, 'passthrough_ll', 'cpu_s')))} | "
                     f"{statistics.median(r['write_p99_us'] for r in rs):.0f} |")
    L += ["", "## Targets", ""] + (verdicts or ["- (no paired data)"])
    text = "\n".join(L) + "\n"
    with open(f"{out}/summary.md", "w") as f:
        f.write(text)
    return text


def machine():
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    return f"{os.cpu_count()} CPUs ({model}), {os.uname().release}"


def cmd_run(a):
    p = dict(PROFILES[a.profile])
    for k in ("repeats", "files", "bigwrite", "tree_files"):
        if getattr(a, k) is not None:
            p[k] = getattr(a, k)
    if a.ns:
        p["ns"] = [int(x) for x in a.ns.split(",")]
    arms = a.arms.split(",") if a.arms else list(DEFAULT_ARMS)
    kinds = a.kinds.split(",") if a.kinds else ["small", "fio", "stream", "reqs"]  # bigwrite: only when asked
    for arm in arms:
        if arm not in ARMS:
            log(f"unknown arm {arm}")
            return 2
    c = argparse.Namespace(**p, work=a.work, out=a.out,
                           wsfs=f"{a.build}/examples/wsfs/layoutd-wsfs",
                           ptll=f"{a.build}/tests/bench/fusehop/fusehop-passthrough_ll",
                           workload=f"{a.build}/tests/bench/flushscope/flushscope-workload",
                           stream_bin=f"{a.build}/tests/bench/fusehop/fusehop-stream",
                           wsfs_base=a.wsfs_base)
    if any(ARMS[x][0] == "wsfs-base" for x in arms) and not (a.wsfs_base and os.access(a.wsfs_base, os.X_OK)):
        log("arm wsfs-base needs --wsfs-base PATH (an executable layoutd-wsfs)")
        return 2
    if any(ARMS[x][0] == "ptll" for x in arms) and not os.access(c.ptll, os.X_OK):
        log(f"passthrough_ll not built ({c.ptll}): Debian's libfuse3-dev example source missing? dropping its arms")
        arms = [x for x in arms if ARMS[x][0] != "ptll"]
    uring_was = None
    if any("--io-uring=on" in ARMS[x][1] for x in arms):
        uring_was = uring_enable()
        if uring_was is None:
            log(f"no {URING_PARAM}: this kernel has no FUSE over io_uring; dropping the io_uring arms")
            arms = [x for x in arms if "--io-uring=on" not in ARMS[x][1]]
    os.makedirs(a.out, exist_ok=True)
    signal.signal(signal.SIGTERM, on_signal)
    meta = {"profile": a.profile, "arms": arms, "kinds": kinds, "ns": p["ns"], "repeats": p["repeats"], "files": p["files"],
            "stream": p["stream"], "bigwrite": p["bigwrite"], "tree_files": p["tree_files"], "arm_bdi": {x: ARM_BDI[x] for x in arms if x in ARM_BDI},
            "fio_size": p["fio_size"], "machine": machine(), "load_start": loadavg(),
            # the host arm's filesystem (its dirs are under --work)
            "work_fstype": sh(["findmnt", "-no", "FSTYPE", "-T", a.work], check=False).stdout.strip(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    log(f"profile {a.profile}: arms {arms}, N {p['ns']}, {p['repeats']} repeat(s), {p['files']} files; "
        f"load {meta['load_start']}")
    ok = True
    c.vol = None
    runs_path = f"{a.out}/runs.jsonl"
    open(runs_path, "w").close()
    try:
        c.vol = Volume(a.work)
        meta["direct_io"] = c.vol.direct_io
        for rep in range(p["repeats"]):
            plan = [("small", arm, n) for n in p["ns"] for arm in arms] + \
                   [("fio", arm, 1) for arm in arms] + [("stream", arm, 1) for arm in arms]
            plan += [("reqs", arm, 1) for arm in arms if ARMS[arm][0] in ("wsfs", "wsfs-base")]
            plan += [("bigwrite", arm, n) for n in p["ns"] for arm in arms]
            plan = [x for x in plan if ARMS[x[1]][0] != "host"]  # host dirs: only the tree kind
            plan += [("tree", arm, n) for n in p["ns"] for arm in arms]
            plan = [x for x in plan if x[0] in kinds]
            random.Random(SEED + rep).shuffle(plan)
            for kind, arm, n in plan:
                t0 = time.monotonic()
                r = run_small(c, arm, n, rep) if kind == "small" else run_fio(c, arm, rep) if kind == "fio" \
                    else run_reqs(c, arm, rep) if kind == "reqs" else run_tree(c, arm, n, rep) if kind == "tree" \
                    else run_bigwrite(c, arm, n, rep) \
                    if kind == "bigwrite" else run_stream(c, arm, rep)
                r["load"] = loadavg()
                with open(runs_path, "a") as f:
                    f.write(json.dumps(r) + "\n")
                ok &= r["ok"]
                log(f"rep {rep} {kind} {arm} n={n}: {'ok' if r['ok'] else 'FAILED: ' + str(r.get('error'))} "
                    f"({time.monotonic() - t0:.1f}s" + (f", time {r['time_s']:.3f}s" if r.get("time_s") else "") + ")")
    except Stop as e:
        log(f"stopped: {e}")
        ok = False
    finally:
        if c.vol:
            c.vol.close()
        uring_restore(uring_was)
        meta["load_end"] = loadavg()
        with open(f"{a.out}/meta.json", "w") as f:
            json.dump(meta, f)
    print(report(a.out))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--work", required=True)
    r.add_argument("--build", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--profile", choices=sorted(PROFILES), default="smoke")
    r.add_argument("--arms")
    r.add_argument("--repeats", type=int)
    r.add_argument("--files", type=int)
    r.add_argument("--ns")
    r.add_argument("--kinds")
    r.add_argument("--wsfs-base")
    r.add_argument("--bigwrite-size", dest="bigwrite", type=int, help="bytes per workspace (a multiple of 1 MiB)")
    r.add_argument("--tree-files", dest="tree_files", type=int, help="files in the tree kind's package tree")
    rp = sub.add_parser("report")
    rp.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.cmd == "report":
        print(report(a.out))
        return 0
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
