# SPDX-License-Identifier: LGPL-2.1-or-later
"""Statistics, tables and plots of the flush-scope benchmark (from OUT/arms.jsonl).

  report(out, exclude_noisy=False) -> the text of OUT/summary.md

Writes OUT/summary.md, OUT/summary.json, OUT/flushscope.png (median
completion time vs N) and OUT/decomposition.png (where a workspace's time
goes, stacked bars; decomposition.gp next to this file). Debian's
/usr/bin/python3, standard library only.
"""
import json
import os
import random
import shutil
import statistics
import subprocess

from arms import ARM, NAMES, TARGETS

BOOTSTRAP = 5000
PUBLISHED_FILES = 8000
NOISY_LOAD = 1.5  # the driver's default; a run's own threshold is in its record
HERE = os.path.dirname(os.path.abspath(__file__))
# One colour per arm in flushscope.png (gnuplot's default cycle has 8).
COLOR = {"shared": "#d62728", "layoutd-b3": "#1f77b4", "layoutd-b3-wscap": "#17becf", "layoutd-b1": "#2ca02c",
         "shared-fdatasync": "#e377c2", "shared-published": "#ff7f0e", "layoutd-b3-published": "#8c564b",
         "shared-nofuse": "#9467bd", "layoutd-b3-nofuse": "#bcbd22", "native-fsync": "#000000",
         "native-buffered": "#7f7f7f", "layoutd-b3-prealloc-nofuse": "#ff9896",
         "layoutd-b3-cachefill": "#aec7e8", "layoutd-b3-fusefill": "#98df8a",
         "layoutd-b3-cachefill-wscap": "#c5b0d5"}


def median(v):
    v = [x for x in v if x is not None]
    return statistics.median(v) if v else None


def mean(v):
    v = [x for x in v if x is not None]
    return sum(v) / len(v) if v else None


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


def ws_flush_s(w):
    """A workspace's time in flush: the daemon's counter, the workload's group commit, or its fsyncs."""
    if w.get("watch") and w["watch"].get("stats"):
        return w["watch"]["stats"]["flush_us"] / 1e6
    if w.get("commit"):
        return w["commit"]["flush_us"] / 1e6
    if w.get("fsync_us") is not None:
        return w["fsync_us"] / 1e6
    if w.get("mode") == "buffered":
        return 0.0
    return None


def decompose(w):
    """Where one workspace's completion time went (seconds). The parts are not
    exclusive in time: the daemon's CPU and its flushes run beside the
    workload, so rest = completed - the parts may be negative (overlap)."""
    wcpu = (w["cpu_user_s"] + w["cpu_sys_s"]) if w.get("cpu_user_s") is not None else None
    d = w.get("daemon_cpu_s") or 0.0
    f = ws_flush_s(w)
    t = w.get("completed_s")
    if wcpu is None or f is None or t is None:
        return None
    return {"completed_s": round(t, 4), "workload_cpu_s": round(wcpu, 4), "daemon_cpu_s": round(d, 4),
            "flush_s": round(f, 4), "rest_s": round(t - wcpu - d - f, 4)}


def is_noisy(a):
    if "noisy" in a:
        return bool(a["noisy"])
    lb = a.get("loadavg_before")  # records of the v1 driver
    return bool(lb and lb[0] > NOISY_LOAD)


def analyse(arms, exclude_noisy=False):
    """Per (rep, n, arm) values, then per (n, arm) summaries with paired ratios."""
    per = {}
    for a in arms:
        if not a.get("ok") or (exclude_noisy and is_noisy(a)):
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
    known = [x for x in NAMES if any(a["arm"] == x for a in arms)]
    rows = []
    for n in ns:
        for arm in known:
            runs = [per[(r, n, arm)] for r in reps if (r, n, arm) in per]
            tried = [a for a in arms if a["n"] == n and a["arm"] == arm]
            row = {"n": n, "arm": arm, "layer": ARM[arm]["layer"], "runs": len(runs),
                   "failed": sum(1 for a in tried if not a.get("ok")),
                   "noisy": sum(1 for a in tried if is_noisy(a)), "tried": len(tried)}
            if runs:
                recs = [x["rec"] for x in runs]
                wss = [w for r in recs for w in r["workspaces"]]
                row.update({
                    "median_s": median([x["median"] for x in runs]),
                    "max_s": max(x["max"] for x in runs),
                    "accepted_s": median([x["accepted"] for x in runs]),
                    "mbps": median([x["mbps"] for x in runs]),
                    # layoutd-b3-cachefill's writer (arms.py): when its
                    # install-sized fill ended, beside the workspaces' runs.
                    "cache_writer_s": median([(r.get("cache_writer") or {}).get("end_s") for r in recs]),
                    "per_rep_median_s": [round(x["median"], 3) for x in runs],
                })
                for op in ("write", "read", "stat"):
                    hs = [w["lat"][op]["hist"] for w in wss]
                    row[f"{op}_p50_us"] = hist_pct(hs, 0.50)
                    row[f"{op}_p95_us"] = hist_pct(hs, 0.95)
                st = [w["watch"]["stats"] for w in wss if w.get("watch") and w["watch"].get("stats")]
                st += [w["commit"] for w in wss if w.get("commit")]
                if st:
                    row["flushes_per_ws"] = median([s["flushes"] for s in st])
                    row["batches_per_ws"] = median([s["batches"] for s in st])
                fl = [ws_flush_s(w) for w in wss]
                if any(x for x in fl if x is not None):
                    row["flush_s_per_ws"] = median(fl)
                    row["flush_share"] = median([f / w["completed_s"] for f, w in zip(fl, wss)
                                                 if f is not None and w["completed_s"] > 0])
                fs = [w["file_fsyncs"] + w["dir_fsyncs"] for w in wss if w.get("file_fsyncs") is not None]
                if arm == "native-fsync" and fs:
                    row["fsyncs_per_ws"] = median(fs)
                wcpu = [w["cpu_user_s"] + w["cpu_sys_s"] for w in wss if w.get("cpu_user_s") is not None]
                if wcpu:
                    row["workload_cpu_s_per_ws"] = median(wcpu)
                dcpu = [w["daemon_cpu_s"] for w in wss if w.get("daemon_cpu_s") is not None]
                if dcpu:
                    row["daemon_cpu_s_per_ws"] = median(dcpu)
                # Time decomposition: means per workspace (means add up, medians do not).
                dec = [w.get("decomp") or decompose(w) for w in wss]
                dec = [d for d in dec if d]
                if dec:
                    row["decomp"] = {k: round(mean([d[k] for d in dec]), 4) for k in dec[0]}
                    oc = [r["other_cpu_s"] / r["n"] for r in recs if r.get("other_cpu_s") is not None]
                    row["decomp"]["other_cpu_s"] = round(mean(oc), 4) if oc else None
                io = lambda kind, key: [sum(v[key] for d, v in (r.get("io") or {}).items()
                                            if v and (r["io_devices"][d] == "loop") == (kind == "loop"))
                                        for r in recs]
                if any(io("loop", "write_bytes")):
                    row["loop_write_MB"] = median(io("loop", "write_bytes")) / 1e6
                    row["loop_flush_ios"] = median(io("loop", "flush_ios"))
                if any(io("root", "write_bytes")):
                    row["rootdisk_write_MB"] = median(io("root", "write_bytes")) / 1e6
                    row["rootdisk_flush_ios"] = median(io("root", "flush_ios"))
                row["cpu_busy_pct"] = median([100 - r["cpu"]["idle_pct"] - r["cpu"]["iowait_pct"] for r in recs])
                row["iowait_pct"] = median([r["cpu"]["iowait_pct"] for r in recs])
                row["steal_pct"] = median([r["cpu"].get("steal_pct") for r in recs])
                row["loadavg"] = median([r["loadavg_before"][0] for r in recs])
                # Dirty memory: medians over the runs of each run's peak.
                mem = [r["mem"] for r in recs if r.get("mem")]
                if mem:
                    mb = lambda k, div=1024.0: median([m[k] / div if m.get(k) is not None else None for m in mem])
                    row["mem"] = {
                        "dirty_peak_MB": mb("dirty_peak_kb"), "writeback_peak_MB": mb("writeback_peak_kb"),
                        "dirty_writeback_peak_MB": mb("dirty_writeback_peak_kb"),
                        "dirty_mean_MB": mb("dirty_mean_kb"),
                        "delalloc_sum_peak_MB": mb("delalloc_sum_peak_bytes", 1 << 20),
                        "delalloc_vol_peak_MB": median([max((v.get("delalloc_bytes_peak") or 0) for v in
                                                            m["volumes"].values()) / (1 << 20)
                                                        if m.get("volumes") else None for m in mem]),
                        "inflight_writes_peak": median([max((v.get("inflight_writes_peak") or 0) for v in
                                                            m["volumes"].values()) if m.get("volumes") else None
                                                        for m in mem]),
                        "bdi_dirty_vol_peak_MB": median([max(v["BdiReclaimable_peak_kb"] for v in m["volumes"].values()
                                                             if "BdiReclaimable_peak_kb" in v) / 1024.0
                                                         if any("BdiReclaimable_peak_kb" in v for v in
                                                                m.get("volumes", {}).values()) else None
                                                         for m in mem]),
                        "host_used_peak_GB": median([m.get("host_used_peak_delta_bytes", 0) / 1e9 for m in mem]),
                    }
                caps = [r.get("bdi") for r in recs if r.get("bdi")]
                if caps:
                    row["bdi_limits"] = caps[0]
            for key, ref in (("vs_shared", "shared"), ("vs_layer", ARM[arm]["ref"]), ("vs_native-fsync", "native-fsync")):
                ratios = [per[(r, n, arm)]["median"] / per[(r, n, ref)]["median"]
                          for r in reps if (r, n, arm) in per and (r, n, ref) in per]
                row[key] = boot_ci(ratios)
            row["layer_ref"] = ARM[arm]["ref"]
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


def quietness(arms, meta):
    """How quiet the invocation was, from every run's load record."""
    noisy = [a for a in arms if is_noisy(a)]
    lb = [a["loadavg_before"][0] for a in arms if a.get("loadavg_before")]
    pre = [a["load"]["pre"]["busy_pct"] for a in arms if (a.get("load") or {}).get("pre")]
    steal = [a["cpu"].get("steal_pct") for a in arms if a.get("cpu")]
    steal1 = [a["mem"].get("steal_max_1s_pct") for a in arms if a.get("mem")]
    settle = [a["load"].get("settle_s", 0) for a in arms if a.get("load")]
    thr = meta.get("noisy_load", NOISY_LOAD)
    verdict = "quiet" if arms and not noisy and (median(pre) or 0) < 10 else "NOT quiet"
    s = (f"**Load discipline: {verdict}.** {len(noisy)} of {len(arms)} arm runs started with a 1-minute load "
         f"above {thr} (marked noisy). 1-minute load at the start of the runs: median {fmt(median(lb), 2)}, "
         f"max {fmt(max(lb) if lb else None, 2)}")
    if pre:
        s += (f"; CPU busy in the {meta.get('pre_window_s', 1)} s before each run (nothing of the benchmark "
              f"running but idle daemons): "
              f"median {fmt(median(pre), 1)} %, max {fmt(max(pre), 1)} %")
    if steal:
        s += f"; CPU steal during the runs: median {fmt(median(steal), 1)} %, max {fmt(max(steal), 1)} %"
        if steal1:
            s += f" (worst 1 s window {fmt(max(steal1), 1)} %)"
    if settle:
        why = {}
        for a in arms:
            k = (a.get("load") or {}).get("settle")
            if k:
                why[k] = why.get(k, 0) + 1
        s += (f"; waited {sum(settle):.0f} s in all for the load to settle to {meta.get('settle_load', thr)} "
              f"(at most {meta.get('settle_max', '?')} s per run"
              + (": " + ", ".join(f"{k} {v}" for k, v in sorted(why.items())) if why else "") + ")")
    la0, la1 = (meta.get("machine") or {}).get("loadavg"), meta.get("loadavg_end")
    if la0:
        s += f". Load average at the start of the invocation {' / '.join(f'{x:.2f}' for x in la0[:3])}"
    if la1:
        s += f", at its end {' / '.join(f'{x:.2f}' for x in la1[:3])}"
    return s + "."


def report(out, exclude_noisy=False):
    with open(f"{out}/arms.jsonl") as f:
        arms = [json.loads(l) for l in f if l.strip()]
    meta = {}
    if os.path.exists(f"{out}/meta.json"):
        with open(f"{out}/meta.json") as f:
            meta = json.load(f)
    rows = analyse(arms, exclude_noisy)
    with open(f"{out}/summary.json", "w") as f:
        json.dump(rows, f, indent=1)
    ns = sorted({r["n"] for r in rows})
    L = []
    L.append(f"Profile `{meta.get('profile', '?')}`: {meta.get('files', '?')} files per workspace "
             f"({meta.get('files_scale', '?')} of the published 8,000), N = {', '.join(map(str, ns))}, "
             f"{meta.get('repeats', '?')} repeat(s); {len(arms)} arm runs, "
             f"{sum(1 for a in arms if not a.get('ok'))} failed, {sum(1 for a in arms if is_noisy(a))} noisy"
             f"{' (noisy runs left out of every figure below)' if exclude_noisy else ''}. "
             f"Wall time {meta.get('wall_seconds', '?')} s.")
    L.append("")
    L.append(quietness(arms, meta))
    L.append("")
    L.append("Completion time = until the workspace's last operation returned *and* its last byte is durable "
             "(native-buffered: never durable, its end time). Ratios are medians of per-repeat paired ratios "
             "(bootstrap 95 % CI in brackets when there is more than one repeat). × layer: against the shared "
             "arm of the same layer (wsfs: shared; wsfs-published: shared-published; nofuse: shared-nofuse). "
             "noisy: runs that started with a 1-minute load above the threshold, of the runs tried.")
    L.append("")
    L.append("| N | arm | runs (failed) | noisy | median s | max s | accepted s | MB/s | × shared | × layer | "
             "× native-fsync | slowdown vs N=1 | write p50/p95 | read p50/p95 | stat p50/p95 |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        L.append(f"| {r['n']} | {r['arm']} | {r['runs']} ({r['failed']}) | {r['noisy']}/{r['tried']} | "
                 f"{fmt(r.get('median_s'))} | {fmt(r.get('max_s'))} | {fmt(r.get('accepted_s'))} | "
                 f"{fmt(r.get('mbps'), 1)} | {fmt(r['vs_shared'])} | "
                 f"{fmt(r['vs_layer']) if r['layer_ref'] != 'shared' else '='} | {fmt(r['vs_native-fsync'])} | "
                 f"{fmt(r['slowdown'])} | "
                 f"{fmt_us(r.get('write_p50_us'))} / {fmt_us(r.get('write_p95_us'))} | "
                 f"{fmt_us(r.get('read_p50_us'))} / {fmt_us(r.get('read_p95_us'))} | "
                 f"{fmt_us(r.get('stat_p50_us'))} / {fmt_us(r.get('stat_p95_us'))} |")
    L.append("")
    L.append("Where the time goes (means per workspace, s; `decomposition.png`). Workload CPU: the workload's "
             "getrusage (user + system, its kernel-side FUSE work and, in the nofuse arms, its committer thread "
             "included); daemon CPU: the workspace's layoutd-wsfs, /proc/PID/stat utime + stime over the run; "
             "flush: the daemon's flush_us (syncfs/fdatasync), the nofuse workload's syncfs time, "
             "native-fsync's fsync time; rest = completion − the three (waiting: for a CPU, the disk, a "
             "lock). The parts run in parallel (daemon threads and the committer beside the workload, on 2 "
             "CPUs), so rest can be negative: that is overlap, not an error. Other CPU: the machine's busy "
             "CPU-seconds during the run (/proc/stat) minus the workloads' and daemons', per workspace "
             "(kernel threads: writeback, loop, jbd2; and anyone else on the machine).")
    L.append("")
    L.append("| N | arm | completion | workload CPU | daemon CPU | flush | rest | other CPU | CPU busy % | "
             "steal % | iowait % |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        d = r.get("decomp") or {}
        L.append(f"| {r['n']} | {r['arm']} | {fmt(d.get('completed_s'))} | {fmt(d.get('workload_cpu_s'))} | "
                 f"{fmt(d.get('daemon_cpu_s'))} | {fmt(d.get('flush_s'))} | {fmt(d.get('rest_s'))} | "
                 f"{fmt(d.get('other_cpu_s'))} | {fmt(r.get('cpu_busy_pct'), 0)} | {fmt(r.get('steal_pct'), 1)} | "
                 f"{fmt(r.get('iowait_pct'), 0)} |")
    L.append("")
    src = meta.get("dirty_sources") or {}
    L.append("Dirty memory (medians over the runs of each run's peak, sampled every "
             f"{meta.get('sample_ms', 100)} ms). Dirty, Writeback: /proc/meminfo, the whole machine. "
             "Volumes: ext4's delayed-allocation blocks per volume filesystem (/sys/fs/ext4/DEV/"
             "delayed_allocation_blocks × block size: data written and not yet allocated, the per-filesystem "
             "part of the dirty pages this kernel exposes without debugfs), as the sum over the run's volumes "
             "at one instant and the largest single volume; in-flight writes: /sys/block/DEV/inflight. "
             "Shared arms: the root filesystem, which also holds everyone else's files. "
             + ("Per-bdi dirty pages from debugfs (BdiReclaimable) are in the last column. "
                if src.get("bdi_debugfs") else
                "debugfs is not mounted here, so the exact per-bdi counters (/sys/kernel/debug/bdi/*/stats) "
                "were not read; /sys/class/bdi/*/ holds only the limits (recorded per run). ")
             + "Host used: the peak growth of the host filesystem's used bytes during the run.")
    L.append("")
    L.append("| N | arm | Dirty peak MB | Writeback peak MB | Dirty+WB peak MB | Dirty mean MB | "
             "volumes delalloc peak MB (sum / max one) | in-flight writes peak | bdi dirty peak MB | "
             "host used peak GB |")
    L.append("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        m = r.get("mem") or {}
        L.append(f"| {r['n']} | {r['arm']} | {fmt(m.get('dirty_peak_MB'), 1)} | {fmt(m.get('writeback_peak_MB'), 1)} | "
                 f"{fmt(m.get('dirty_writeback_peak_MB'), 1)} | {fmt(m.get('dirty_mean_MB'), 1)} | "
                 f"{fmt(m.get('delalloc_sum_peak_MB'), 1)} / {fmt(m.get('delalloc_vol_peak_MB'), 1)} | "
                 f"{fmt(m.get('inflight_writes_peak'), 0)} | {fmt(m.get('bdi_dirty_vol_peak_MB'), 1)} | "
                 f"{fmt(m.get('host_used_peak_GB'), 2)} |")
    L.append("")
    caps = [(r["arm"], r["bdi_limits"]) for r in rows if r.get("bdi_limits") and r["n"] == ns[-1]]
    if caps:
        L.append("Writeback limits of the volumes' bdis as read back at the start of a run "
                 "(/sys/class/bdi/MAJ:MIN/; max_bytes in MiB, strict_limit):")
        L.append("")
        for arm, c in caps:
            L.append(f"- {arm}: " + ", ".join(
                f"{vol} {v['max_bytes'] / (1 << 20):.0f}{' strict' if v.get('strict_limit') else ''}"
                for vol, v in sorted(c.items()) if v and v.get("max_bytes") is not None))
        L.append("")
    L.append("Flushes and I/O (medians per workspace / per run):")
    L.append("")
    L.append("| N | arm | flushes/ws | flush s/ws | flush share | batches/ws | fsyncs/ws | workload CPU s/ws | "
             "daemon CPU s/ws | loop write MB | loop flush IOs | root-disk write MB | root-disk flush IOs |")
    L.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        L.append(f"| {r['n']} | {r['arm']} | {fmt(r.get('flushes_per_ws'), 0)} | {fmt(r.get('flush_s_per_ws'))} | "
                 f"{fmt(r.get('flush_share'))} | {fmt(r.get('batches_per_ws'), 0)} | {fmt(r.get('fsyncs_per_ws'), 0)} | "
                 f"{fmt(r.get('workload_cpu_s_per_ws'))} | {fmt(r.get('daemon_cpu_s_per_ws'))} | "
                 f"{fmt(r.get('loop_write_MB'), 0)} | {fmt(r.get('loop_flush_ios'), 0)} | "
                 f"{fmt(r.get('rootdisk_write_MB'), 0)} | {fmt(r.get('rootdisk_flush_ios'), 0)} |")
    fills = [r for r in rows if r.get("cache_writer_s") is not None]
    if fills:
        L.append("")
        L.append("The install-sized writer of the *fill arms (buffered files during the run, in ws-0's cache on "
                 "its state volume, or through ws-0's FUSE mount; compare their flush s/ws with layoutd-b3's): " +
                 ", ".join(f"N={r['n']} {r['arm']}: done at {fmt(r['cache_writer_s'])} s" for r in fills))
    L.append("")
    L.append("Targets (issue 16):")
    L.append("")
    for arm, ref, lim, n, what in TARGETS:
        row = next((r for r in rows if r["n"] == n and r["arm"] == arm), None)
        key = "vs_native-fsync" if ref == "native-fsync" else ("vs_shared" if ref == "shared" else "vs_layer")
        v = row.get(key) if row else None
        if n not in ns:
            L.append(f"- {what}: not measured (N={n} not in this run)")
        elif v is None:
            L.append(f"- {what}: not measured (a run failed{' or was noisy' if exclude_noisy else ''})")
        else:
            met = "**met**" if v["median"] <= lim else f"**not met** (by {v['median'] / lim:.2f}×)"
            L.append(f"- {what}: {fmt(v)} → {met}")
    L.append("")
    noisy = [a for a in arms if is_noisy(a)]
    if noisy:
        L.append("Noisy runs (rep, N, arm: 1-minute load at the start): " + "; ".join(
            f"{a['rep']}, {a['n']}, {a['arm']}: {a['loadavg_before'][0]:.2f}" for a in noisy[:60])
                 + (" …" if len(noisy) > 60 else "") + ".")
        L.append("")
    fio_md(out, L)
    text = "\n".join(L) + "\n"
    with open(f"{out}/summary.md", "w") as f:
        f.write(text)
    plot_median(out, rows)
    plot_decomposition(out, rows)
    return text


def fio_md(out, L):
    if not os.path.exists(f"{out}/fio.jsonl"):
        return
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


def plot_median(out, rows):
    arm_names = [a for a in NAMES if any(r["arm"] == a and r.get("median_s") is not None for r in rows)]
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
    # Dashed: the arms without a FUSE daemon (nofuse, native).
    style = lambda a: (f"lc rgb '{COLOR.get(a, '#444444')}' "
                       + ("dt 2" if ARM[a]["layer"] in ("nofuse", "native") else "dt 1"))
    plots = ", ".join(f"'plot.dat' index {i} using 1:2:3:4 with yerrorlines lw 2 pt 7 {style(a)} title columnheader(1)"
                      for i, a in enumerate(arm_names))
    script = f"""set terminal pngcairo size 1100,680 font ",11"
set output 'flushscope.png'
set title "Flush scope: median workspace completion time vs N (bars: min-max of per-repeat medians; dashed: no FUSE)"
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


def plot_decomposition(out, rows):
    """decomposition.dat for decomposition.gp: block 0 the bars (x, cumulative
    parts, completion, label), block 1 the N group labels."""
    have = [r for r in rows if r.get("decomp")]
    if not have or not shutil.which("gnuplot"):
        return
    ns = sorted({r["n"] for r in have})
    x, bars, groups = 0.0, [], []
    top = max(max(r["decomp"]["completed_s"], r["decomp"]["workload_cpu_s"] + r["decomp"]["daemon_cpu_s"]
                  + r["decomp"]["flush_s"]) for r in have)
    for n in ns:
        first = x
        for a in NAMES:
            r = next((r for r in have if r["n"] == n and r["arm"] == a), None)
            if not r:
                continue
            d = r["decomp"]
            c1 = d["workload_cpu_s"]
            c2 = c1 + d["daemon_cpu_s"]
            c3 = c2 + d["flush_s"]
            c4 = c3 + max(0.0, d["rest_s"])
            bars.append(f'{x:.1f} {c1:.4f} {c2:.4f} {c3:.4f} {c4:.4f} {d["completed_s"]:.4f} "{a}"')
            x += 1
        groups.append(f'{(first + x - 1) / 2:.2f} {top * 1.08:.4f} "N = {n}"')
        x += 1.5
    with open(f"{out}/decomposition.dat", "w") as f:
        f.write("# x workload_cpu +daemon_cpu +flush +rest completion arm\n")
        f.write("\n".join(bars) + "\n\n\n")
        f.write("# x y label\n" + "\n".join(groups) + "\n")
    gp = os.path.join(HERE, "decomposition.gp")
    width = max(1000, int(40 * x) + 400)
    subprocess.run(["gnuplot", "-e", f"width={width}; ymax={top * 1.15:.4f}", gp], cwd=out, check=False)
