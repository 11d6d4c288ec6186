# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the flush-scope driver reads from the kernel around and during an arm run.

Debian's /usr/bin/python3, standard library only. Nothing here changes the
system; every reader returns None for what this kernel does not expose.

During a run, Sampler (a thread) reads every 100 ms:
  - /proc/meminfo Dirty, Writeback, WritebackTmp: the machine's dirty memory;
  - /proc/loadavg and the cpu line of /proc/stat (steal);
  - per volume (the run's loop devices; the root disk for the shared arms):
      /sys/fs/ext4/DEV/delayed_allocation_blocks x block size: data written
        but not yet allocated on that filesystem (ext4 delalloc), the part of
        its dirty pages that the kernel counts per filesystem;
      /sys/block/DEV/inflight: write requests in flight on the device;
      statvfs of its mount: bytes used (is the volume big enough?);
      /sys/kernel/debug/bdi/MAJ:MIN/stats (BdiReclaimable = dirty,
        BdiWriteback, BdiDirtyThresh): the exact per-bdi figures, read only
        when debugfs is already mounted (the driver never mounts it);
  - statvfs of the work directory's filesystem (the host's used bytes).
The per-bdi limits (/sys/class/bdi/MAJ:MIN/{max_bytes,max_ratio,strict_limit})
are read once per run: this kernel exposes limits there, not counts.
"""
import os
import threading
import time

BDI_DEBUG = "/sys/kernel/debug/bdi"


def read_first(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def meminfo(keys=("Dirty", "Writeback", "WritebackTmp")):
    """The named /proc/meminfo fields, in kB."""
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in keys:
                out[k] = int(v.split()[0])
    return out


def loadavg():
    """(1, 5, 15 minute load, runnable tasks, all tasks) from /proc/loadavg."""
    with open("/proc/loadavg") as f:
        v = f.read().split()
    run, tot = v[3].split("/")
    return float(v[0]), float(v[1]), float(v[2]), int(run), int(tot)


def cpu_times():
    """The cpu line of /proc/stat, in ticks, folded into the classes we report."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return {"user": v[0] + v[1], "system": v[2] + v[5] + v[6], "idle": v[3], "iowait": v[4], "steal": v[7]}


def cpu_delta(a, b):
    """Percent of all ticks between two cpu_times() per class."""
    d = {k: b[k] - a[k] for k in a}
    tot = sum(d.values()) or 1
    return {k + "_pct": round(100.0 * v / tot, 1) for k, v in d.items()}


def cpu_seconds(a, b):
    """CPU-seconds (all CPUs) between two cpu_times(): busy (user + system), steal, total."""
    hz = os.sysconf("SC_CLK_TCK")
    d = {k: b[k] - a[k] for k in a}
    return {"busy": (d["user"] + d["system"]) / hz, "steal": d["steal"] / hz, "total": sum(d.values()) / hz}


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


def devno(dev):
    """'MAJ:MIN' of a block device name (loop7, vda), or None."""
    return read_first(f"/sys/block/{dev}/dev")


def bdi_limits(dev):
    """The writeback limits of DEV's bdi (what a layout's `writeback:` sets)."""
    n = devno(dev)
    if not n:
        return None
    out = {"bdi": n}
    for k in ("max_ratio", "max_bytes", "strict_limit", "min_ratio"):
        v = read_first(f"/sys/class/bdi/{n}/{k}")
        out[k] = int(v) if v is not None and v.lstrip("-").isdigit() else None
    return out


def bdi_debug_available():
    return os.path.isdir(BDI_DEBUG) and os.access(BDI_DEBUG, os.R_OK)


def bdi_debug_stats(n):
    """/sys/kernel/debug/bdi/MAJ:MIN/stats in kB (only where debugfs is mounted)."""
    try:
        with open(f"{BDI_DEBUG}/{n}/stats") as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("BdiWriteback:", "BdiReclaimable:", "BdiDirtyThresh:"):
            out[parts[0][:-1]] = int(parts[1])
    return out or None


def fs_used_bytes(path):
    try:
        s = os.statvfs(path)
    except OSError:
        return None
    return (s.f_blocks - s.f_bfree) * s.f_frsize


def fs_block_size(path):
    try:
        return os.statvfs(path).f_bsize
    except OSError:
        return None


class Sampler(threading.Thread):
    """Samples the machine every `interval` seconds until stop().

    devs: {device name: mount point or None} of the run's volumes.
    host: a path on the host filesystem (the work directory).
    """

    def __init__(self, devs, host, interval=0.1):
        super().__init__(daemon=True)
        self.devs, self.host, self.interval = dict(devs), host, interval
        self.bsize = {d: fs_block_size(m) if m else None for d, m in self.devs.items()}
        self.ext4 = {d for d in self.devs if os.path.exists(f"/sys/fs/ext4/{d}/delayed_allocation_blocks")}
        self.debug = {d: devno(d) for d in self.devs} if bdi_debug_available() else {}
        self.host_used0 = fs_used_bytes(host)
        self.cpu0 = cpu_times()
        self.t0 = time.monotonic()
        self.samples = []
        self.cpu_s = 0.0
        self._halt = threading.Event()

    def one(self):
        t = time.monotonic() - self.t0
        m = meminfo()
        la = loadavg()
        s = {"t": round(t, 3), "dirty_kb": m.get("Dirty"), "writeback_kb": m.get("Writeback"),
             "writeback_tmp_kb": m.get("WritebackTmp"), "load1": la[0], "running": la[3],
             "cpu": cpu_times(), "host_used": fs_used_bytes(self.host), "vol": {}}
        for d, mnt in self.devs.items():
            v = {}
            if d in self.ext4 and self.bsize.get(d):
                b = read_first(f"/sys/fs/ext4/{d}/delayed_allocation_blocks")
                v["delalloc_bytes"] = int(b) * self.bsize[d] if b and b.isdigit() else None
            f = read_first(f"/sys/block/{d}/inflight")
            if f:
                v["inflight_writes"] = int(f.split()[1])
            if mnt:
                v["used_bytes"] = fs_used_bytes(mnt)
            if self.debug.get(d):
                v["bdi"] = bdi_debug_stats(self.debug[d])
            s["vol"][d] = v
        self.samples.append(s)

    def run(self):
        start = time.thread_time()
        while not self._halt.is_set():
            self.one()
            self._halt.wait(self.interval)
        self.one()
        self.cpu_s = time.thread_time() - start

    def stop(self):
        self._halt.set()
        self.join()

    # ---- what a run records

    def summary(self):
        """Peaks and means of the samples (kB for meminfo, bytes for volumes)."""
        S = self.samples
        if not S:
            return {}

        def peak(key):
            v = [s[key] for s in S if s.get(key) is not None]
            return max(v) if v else None

        def mean(key):
            v = [s[key] for s in S if s.get(key) is not None]
            return round(sum(v) / len(v), 1) if v else None

        out = {"samples": len(S), "interval_ms": int(self.interval * 1000), "sampler_cpu_s": round(self.cpu_s, 3),
               "dirty_peak_kb": peak("dirty_kb"), "dirty_mean_kb": mean("dirty_kb"),
               "writeback_peak_kb": peak("writeback_kb"), "writeback_mean_kb": mean("writeback_kb"),
               "writeback_tmp_peak_kb": peak("writeback_tmp_kb"),
               "dirty_writeback_peak_kb": max((s["dirty_kb"] or 0) + (s["writeback_kb"] or 0) for s in S),
               "load1_max": peak("load1"), "running_max": peak("running"),
               "bdi_debugfs": bool(self.debug)}
        # Steal: over the whole run, and the worst 1 s window.
        k = max(1, int(round(1.0 / self.interval)))
        worst = 0.0
        for i in range(k, len(S)):
            worst = max(worst, cpu_delta(S[i - k]["cpu"], S[i]["cpu"])["steal_pct"])
        out["steal_pct"] = cpu_delta(self.cpu0, S[-1]["cpu"])["steal_pct"]
        out["steal_max_1s_pct"] = worst
        hu = [s["host_used"] for s in S if s.get("host_used") is not None]
        if hu and self.host_used0 is not None:
            out["host_used_peak_delta_bytes"] = max(hu) - self.host_used0
            out["host_used_end_delta_bytes"] = hu[-1] - self.host_used0
        vols = {}
        for d in self.devs:
            vs = [s["vol"].get(d, {}) for s in S]
            v = {}
            for key in ("delalloc_bytes", "inflight_writes", "used_bytes"):
                xs = [x[key] for x in vs if x.get(key) is not None]
                if xs:
                    v[key + "_peak"] = max(xs)
            for key in ("BdiReclaimable", "BdiWriteback"):
                xs = [x["bdi"][key] for x in vs if x.get("bdi") and key in x["bdi"]]
                if xs:
                    v[key + "_peak_kb"] = max(xs)
            vols[d] = v
        out["volumes"] = vols
        # Across volumes at the same instant (what the machine held at once).
        sums = [sum((s["vol"].get(d, {}).get("delalloc_bytes") or 0) for d in self.ext4) for s in S]
        out["delalloc_sum_peak_bytes"] = max(sums) if self.ext4 else None
        return out

    def series(self):
        """The samples as compact columns (samples.jsonl)."""
        S = self.samples
        out = {"t": [s["t"] for s in S], "dirty_kb": [s["dirty_kb"] for s in S],
               "writeback_kb": [s["writeback_kb"] for s in S], "load1": [s["load1"] for s in S],
               "running": [s["running"] for s in S]}
        for d in self.devs:
            out[f"{d}.delalloc_bytes"] = [s["vol"].get(d, {}).get("delalloc_bytes") for s in S]
            out[f"{d}.inflight_writes"] = [s["vol"].get(d, {}).get("inflight_writes") for s in S]
            if self.debug:
                out[f"{d}.bdi_dirty_kb"] = [(s["vol"].get(d, {}).get("bdi") or {}).get("BdiReclaimable") for s in S]
        return out
