# SPDX-License-Identifier: LGPL-2.1-or-later
"""Task: a package install, as pnpm does it in copy mode.

Input (cached on the host filesystem): a generated, deterministic package
store shaped like pnpm's (content-addressed files, "-exec" for
executables) with the size mix of a node_modules tree, and a lock file
for it. In the directory: wl-pnpm install (copy of every file into
pkg_tmp_<pid>_<n>/, rename, dependency symlinks, chmod +x of bins, shims),
wl-pnpm verify (every entry, mode, symlink target and sha256), rm -rf.
Timed: install and rm -rf. Then, when pnpm and a warmed store exist on
the machine, a real `pnpm install --offline` and rm -rf, with pnpm's
defaults and then with --package-import-method=copy (see real_pnpm()),
timed on its own: info.pnpm.
"""
import json
import math
import os
import random
import shutil
import signal
import subprocess
import time

from wlcommon import cache_root, TaskError, cached, mount_of, rm_rf, sha256_hex, text_blob, tool, workspace_at

NAME = "pkg-install"
TARGET = 1.3
PROFILES = {
    # A few hundred KiB to a few MiB per kind: every code path (bundles over
    # the CAS threshold, a multi-MiB file, scoped names, bins, second
    # versions) in a few seconds.
    "small": dict(packages=250, files=8000, bundles=200, big=6, big_mib=(1, 4), tops=12, seed=1,
                  real_pnpm=0, pnpm_modes="default,copy"),
    # About 1,400 packages, 60,000 files, 1 GB: a real app's node_modules.
    # real_pnpm: also the real pnpm install of tests/workloads/pnpm-project
    # (when tests/workloads/pnpm-warm has run): a minute per directory.
    # pnpm_modes: which of PNPM_MODES the real install runs, in order.
    "full": dict(packages=1400, files=55000, bundles=2400, big=60, big_mib=(1, 24), tops=40, seed=1, real_pnpm=1,
                 pnpm_modes="default,copy"),
}

# File kinds of the small files: (extension, share, median bytes), from the
# make-up of real node_modules trees (many .js, .d.ts and .map files).
KINDS = [(".js", 0.44, 1500), (".d.ts", 0.22, 800), (".js.map", 0.14, 3000), (".mjs", 0.05, 1500),
         (".cjs", 0.05, 1500), (".json", 0.05, 400), (".md", 0.05, 2000)]
SUBDIRS = ["lib", "dist", "types", "src", "esm", "cjs", "lib/internal", "dist/esm", "dist/cjs",
           "lib/utils", "src/core", "build/lib", "lib/internal/streams", "dist/types/core"]
LICENSES = [("MIT License\n\nPermission is hereby granted, free of charge, to any person obtaining a copy "
             "of this software and associated documentation files (the \"Software\"), to deal in the Software "
             "without restriction...\n" * 3).encode(),
            ("ISC License\n\nPermission to use, copy, modify, and/or distribute this software for any purpose "
             "with or without fee is hereby granted...\n" * 4).encode(),
            ("Apache License\nVersion 2.0, January 2004\n\nTERMS AND CONDITIONS FOR USE, REPRODUCTION, AND "
             "DISTRIBUTION\n" * 40).encode(),
            ("BSD 3-Clause License\n\nRedistribution and use in source and binary forms, with or without "
             "modification, are permitted provided that the following conditions are met...\n" * 3).encode()]


def _names(rng, n):
    syll = ["lo", "da", "sh", "re", "act", "vue", "ex", "press", "web", "pack", "ba", "bel", "ts", "lint",
            "es", "build", "ro", "llup", "ch", "alk", "de", "bug", "ms", "glob", "mini", "match", "yar", "gs"]
    out, seen = [], set()
    while len(out) < n:
        base = "".join(rng.choice(syll) for _ in range(rng.randint(2, 4)))
        if rng.random() < 0.1:
            base += "-" + rng.choice(["core", "utils", "types", "plugin", "cli", "runtime", "parser"])
        name = f"@{rng.choice(['types', 'babel', 'swc', 'vitest', 'aws-sdk', 'octokit'])}/{base}" \
            if rng.random() < 0.2 else base
        if name not in seen:
            seen.add(name)
            out.append(name)
    return out


def generate(p, out):
    """Writes the store (out/files/..) and the lock (out/lock.tsv)."""
    rng = random.Random(p["seed"])
    n = p["packages"]
    nsecond = n // 10  # second versions of existing packages
    names = _names(rng, n - nsecond)
    pkgs = [{"name": nm, "version": f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 20)}"}
            for nm in names]
    for i in range(nsecond):
        src = pkgs[rng.randrange(len(names))]
        pkgs.append({"name": src["name"], "version": f"1{rng.randint(0, 9)}.0.{i}", "second_of": src})
    rng.shuffle(pkgs)

    # Files per package: heavy-tailed (most packages small, a few huge).
    w = [rng.paretovariate(1.1) for _ in pkgs]
    small_total = p["files"] - p["bundles"] - p["big"] - 3 * n
    counts = [max(0, int(small_total * x / sum(w))) for x in w]
    for i in range(small_total - sum(counts)):
        counts[i % n] += 1

    store = os.path.join(out, "files")
    stored = set()
    total_bytes = 0

    def put(content, mode):
        nonlocal total_bytes
        h = sha256_hex(content)
        total_bytes += len(content)
        key = h + ("-exec" if mode & 0o111 else "")
        if key not in stored:
            stored.add(key)
            d = os.path.join(store, h[:2])
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, key), "wb") as f:
                f.write(content)
            os.chmod(os.path.join(d, key), mode)
        return h

    bundle_owner = [rng.randrange(n) for _ in range(p["bundles"])]
    big_owner = [rng.randrange(n) for _ in range(p["big"])]
    lo, hi = p["big_mib"]
    # First versions before second ones, so that a second can share files.
    for i in sorted(range(n), key=lambda k: "second_of" in pkgs[k]):
        pk = pkgs[i]
        files = {}  # rel -> (content, mode)
        nm, ver = pk["name"], pk["version"]
        short = nm.split("/")[-1]
        files["README.md"] = (text_blob(rng, int(rng.lognormvariate(math.log(3000), 1.0)) + 200,
                                        f"# {nm}\n\n"), 0o644)
        files["LICENSE"] = (rng.choice(LICENSES) if rng.random() < 0.7 else
                            LICENSES[0] + f"Copyright (c) {rng.randint(2010, 2024)} {short} authors\n".encode(),
                            0o644)
        for k in range(counts[i]):
            ext = rng.choices([x[0] for x in KINDS], [x[1] for x in KINDS])[0]
            med = dict((x[0], x[2]) for x in KINDS)[ext]
            size = min(60_000, int(rng.lognormvariate(math.log(med), 1.1)) + 40)
            sub = rng.choice(SUBDIRS[: 3 + min(len(SUBDIRS) - 3, counts[i] // 20)])
            rel = f"{sub}/{short}-{k:04d}{ext}"
            files[rel] = (text_blob(rng, size, f"// {nm}@{ver} {rel}\n"), 0o644)
        for b, owner in enumerate(bundle_owner):
            if owner == i:
                size = int(math.exp(rng.uniform(math.log(10 << 10), math.log(500 << 10))))
                rel = f"dist/{short}.bundle-{b}.{rng.choice(['js', 'min.js', 'umd.js', 'esm.js'])}"
                files[rel] = (text_blob(rng, size, f"/*! {nm}@{ver} bundle */\n"), 0o644)
        for b, owner in enumerate(big_owner):
            if owner == i:
                size = int(math.exp(rng.uniform(math.log(lo << 20), math.log(hi << 20))))
                if b % 3 == 0:  # a native module: incompressible
                    files[f"prebuilds/linux-x64/{short}-{b}.node"] = (rng.randbytes(size), 0o644)
                else:
                    files[f"lib/{short}-{b}.js"] = (text_blob(rng, size, f"/* {nm}@{ver} */\n"), 0o644)
        bins = []
        if rng.random() < 0.06:
            bins.append((short, "bin/cli.js"))
            files["bin/cli.js"] = (b"#!/usr/bin/env node\n" + text_blob(rng, 2000, f"// {nm} cli\n"), 0o755)
        # A second version shares most files with the first, as real ones do.
        first = pk.get("second_of")
        if first and "files" in first:
            for rel, (c, m) in first["files"].items():
                if rng.random() < 0.8:
                    files[rel] = (c, m)
        files["package.json"] = (json.dumps(dict(name=nm, version=ver, license="MIT", main="lib/index.js",
                                                 bin={b[0]: b[1] for b in bins} or None), indent=2).encode(),
                                 0o644)
        pk["files"] = files
        pk["bins"] = bins

    # Dependencies: a handful each, unique names, never the package itself.
    for i, pk in enumerate(pkgs):
        deps, seen = [], {pk["name"]}
        for _ in range(min(n - 1, int(rng.expovariate(1 / 3.0)))):
            j = rng.randrange(n)
            if pkgs[j]["name"] not in seen:
                seen.add(pkgs[j]["name"])
                deps.append(j)
        pk["deps"] = deps
    tops, seen = [], set()
    while len(tops) < min(p["tops"], len(names)):
        j = rng.randrange(n)
        if pkgs[j]["name"] not in seen:
            seen.add(pkgs[j]["name"])
            tops.append(j)

    nfiles = 0
    with open(os.path.join(out, "lock.tsv"), "w") as lock:
        lock.write("# wl-pkgstore lock v1\n")
        for i, pk in enumerate(pkgs):
            lock.write(f"P\t{i}\t{pk['name']}\t{pk['version']}\n")
            for rel in sorted(pk["files"]):
                c, m = pk["files"][rel]
                lock.write(f"F\t{put(c, m)}\t{m:o}\t{len(c)}\t{rel}\n")
                nfiles += 1
            for d in pk["deps"]:
                lock.write(f"D\t{d}\n")
            for b in pk["bins"]:
                lock.write(f"B\t{b[0]}\t{b[1]}\n")
        for t in tops:
            lock.write(f"T\t{t}\n")
    with open(os.path.join(out, "store.json"), "w") as f:
        json.dump({"packages": n, "files": nfiles, "bytes": total_bytes, "store_objects": len(stored)}, f)


def prepare(params):
    params = dict(params)
    real = bool(int(params.pop("real_pnpm", 0)))  # not part of the store's key
    modes = params.pop("pnpm_modes", "default,copy").split(",")
    unknown = [m for m in modes if m not in dict(PNPM_MODES)]
    if unknown:
        raise TaskError(f"pnpm_modes: unknown {', '.join(unknown)} (have {', '.join(dict(PNPM_MODES))})")
    d = cached("pkgstore", params, __file__, lambda out: generate(params, out))
    with open(os.path.join(d, "store.json")) as f:
        meta = json.load(f)
    return {"store": d, "lock": os.path.join(d, "lock.tsv"), "meta": meta, "real_pnpm": real, "pnpm_modes": modes,
            "jobs": int(os.environ.get("LAYOUTD_WORKLOADS_PNPM_JOBS", "4"))}


def _json_out(r, what):
    try:
        return json.loads(r.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise TaskError(f"{what}: no JSON (exit {r.returncode}): {r.stderr.decode(errors='replace')[-800:]}")


def run(inp, d, ph):
    wl = tool("wl-pnpm")
    args = ["--store", inp["store"], "--lock", inp["lock"], "--dir", d, "--jobs", str(inp["jobs"])]
    r = ph.sh("install", [wl, "install"] + args, check=False)
    st = _json_out(r, "install")
    ph.info["install"] = {k: st.get(k) for k in ("files", "bytes", "symlinks", "bins", "ficlone",
                                                 "copy_file_range_bytes", "read_write_bytes",
                                                 "copy_file_range_refusals", "copy_file_range_refused_with",
                                                 "seconds")}
    if r.returncode != 0 or not st.get("ok"):
        raise TaskError(f"install: {st.get('problems')} problem(s): {'; '.join(st.get('first_problems', [])[:5])}")
    fc = st.get("ficlone") or {}
    if fc.get("tries", 0) < 1:
        raise TaskError("install: FICLONE was never tried")
    r = ph.sh("verify", [wl, "verify"] + args, timed=False, check=False)
    v = _json_out(r, "verify")
    ph.info["verify"] = {k: v.get(k) for k in ("entries", "files", "symlinks", "bytes_hashed", "missing", "extra")}
    if r.returncode != 0 or not v.get("ok"):
        raise TaskError(f"verify: {v.get('problems')} problem(s) (missing {v.get('missing')}, extra "
                        f"{v.get('extra')}): {'; '.join(v.get('first_problems', [])[:5])}")
    if v.get("bytes_hashed", 0) < inp["meta"]["bytes"]:
        raise TaskError(f"verify hashed {v.get('bytes_hashed')} bytes, the store has {inp['meta']['bytes']}")
    ok, msg = ph.step("rm_rf", lambda: rm_rf(os.path.join(d, "node_modules")))
    if not ok:
        raise TaskError(msg)
    left = os.listdir(d)
    if left:
        raise TaskError(f"left behind after rm -rf: {left[:5]}")
    if inp.get("real_pnpm"):
        real_pnpm(d, ph, inp["pnpm_modes"])
    else:
        ph.info["pnpm"] = {"skipped": "this profile does not run the real pnpm install (real_pnpm=0)"}


# ------------------------------------------------------------------ real pnpm

def pnpm_setup():
    """(pnpm, store, project) when a real offline install can run here, or
    (None, reason). The project is a dir with package.json and
    pnpm-lock.yaml whose packages are all in the warmed store."""
    # tests/workloads/pnpm-warm puts pnpm, the real project and a warmed
    # store into the cache; the variables override each.
    warm = os.path.join(cache_root(), "pnpm")
    own = os.path.join(warm, "node_modules", ".bin", "pnpm")
    pnpm = os.environ.get("LAYOUTD_WORKLOADS_PNPM") or (own if os.access(own, os.X_OK) else shutil.which("pnpm"))
    if not pnpm:
        return None, ("pnpm is not installed (not on PATH, LAYOUTD_WORKLOADS_PNPM unset, no "
                      "tests/workloads/pnpm-warm run); not fetched by the test")
    proj = os.environ.get("LAYOUTD_WORKLOADS_PNPM_PROJECT") or (
        os.path.join(warm, "project") if os.path.exists(os.path.join(warm, "project", "pnpm-lock.yaml")) else None)
    if not proj or not os.path.exists(os.path.join(proj, "pnpm-lock.yaml")):
        return None, ("LAYOUTD_WORKLOADS_PNPM_PROJECT is not a project with a pnpm-lock.yaml "
                      "(one whose packages are in a warmed store)")
    store = os.environ.get("LAYOUTD_WORKLOADS_PNPM_STORE") or (
        os.path.join(warm, "store") if os.path.isdir(os.path.join(warm, "store")) else None)
    if not store:
        r = subprocess.run([pnpm, "store", "path"], cwd=proj, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        store = r.stdout.decode().strip() if r.returncode == 0 else ""
    if not store or not os.path.isdir(store):
        return None, f"no warmed pnpm store (LAYOUTD_WORKLOADS_PNPM_STORE unset, `pnpm store path` gave {store!r})"
    return (pnpm, store, proj), None


# The real install runs twice per directory: with pnpm's defaults (what a
# user has: on the host, where the store is on the same filesystem, pnpm
# hard-links every file from it; across filesystems it copies), and with
# --package-import-method=copy (the extra arm: a copy in both places).
# "instore" is pnpm's defaults with the warmed store first copied (untimed)
# into the directory itself, so that pnpm can hard-link inside the mount:
# what a warm store on the workspace's own filesystem (issue 20's direction
# 1, docs/installs.md) would at best give, before the store exists.
# "store" is pnpm's defaults with its store in the workspace's package store
# (MNT/.layoutd-store, which the agent hands every workspace of a tenant on
# a state volume; examples/wsfs/README.md, "The package store"): filled
# untimed from the warmed store, one copy per directory (the N run at once;
# the tenant's first install fills a shared one in real use), so pnpm's
# links there are answered with clones. Host dirs have no such store: they
# use pnpm's own store on the host, as in "default".
# "cache" is pnpm's defaults plus only the environment the agent hands out
# for the workspace's cache (docs/api.md, "The cache": the store and the
# virtual store inside <mountpoint>/.layoutd-cache, native storage, so
# node_modules on the mount holds only pnpm's symlinks): the store filled
# there untimed from the warmed one (cp --reflink=auto: metadata only on
# XFS), as an operator seeds it; the timed rm -rf removes the virtual store
# too, the same work as the host's rm of node_modules. Host dirs have no
# cache: pnpm's defaults, as in "default".
PNPM_MODES = [("default", []), ("copy", ["--package-import-method=copy"]), ("instore", []), ("store", []),
              ("cache", [])]


def workspace_of(root):
    """The workspace mounted at root, with a mounted cache, or None when
    root is no workspace of the agent (wlcommon.workspace_at)."""
    w = workspace_at(root)
    if w is not None:
        c = w.get("cache")
        if not c or c.get("state") != "mounted":
            raise TaskError(f"pnpm install (cache): workspace {w.get('id')} has no mounted cache: {c}")
    return w


def daemon_requests(ws):
    """The FUSE requests workspace ws's daemon has served so far, from its
    stats file (LAYOUTD_WORKLOADS_STATS_DIR/<id>.stats), made fresh with
    SIGUSR1 (examples/wsfs/README.md, "Counters"); None if unknown."""
    d, pid = os.environ.get("LAYOUTD_WORKLOADS_STATS_DIR"), (ws.get("daemon") or {}).get("pid")
    if not d or not pid:
        return None
    path = os.path.join(d, ws["id"] + ".stats")
    try:
        before = os.stat(path).st_mtime_ns
    except OSError:
        before = None
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return None
    for _ in range(100):
        try:
            if os.stat(path).st_mtime_ns != before:
                with open(path) as f:
                    return json.load(f).get("operations")
        except (OSError, ValueError):
            pass  # not there yet, or caught between its write and rename
        time.sleep(0.02)
    return None


def made_below(*tops):
    """Files and symlinks below tops (symlinks not followed): what an
    install made."""
    n = 0
    for top in tops:
        for where, dirs, files in os.walk(top):
            n += len(files) + sum(1 for x in dirs if os.path.islink(os.path.join(where, x)))
    return n


def real_pnpm(d, ph, modes):
    setup, reason = pnpm_setup()
    if not setup:
        ph.info["pnpm"] = {"skipped": reason}
        return
    pnpm, store, proj = setup
    info = {"project": proj}
    for mode in modes:
        info[mode] = real_pnpm_once(d, ph, pnpm, store, proj, mode, dict(PNPM_MODES)[mode])
    # "seconds" stays what it was named for: the install a user has (defaults).
    if "default" in info:
        info["seconds"] = info["default"]["seconds"]
    ph.info["pnpm"] = info


def real_pnpm_once(d, ph, pnpm, store, proj, mode, extra):
    dst = os.path.join(d, "pnpm-project")
    sfx = "" if mode == "default" else "_" + mode
    # Untimed for the task's own number (which must mean the same whether
    # or not pnpm is here); its time is reported on its own (info.pnpm).
    ph.step("pnpm_copy_project" + sfx, lambda: shutil.copytree(proj, dst, symlinks=True,
                                                               ignore=shutil.ignore_patterns("node_modules")),
            timed=False)
    own = None
    env = None
    vstore = None
    ws = None
    if mode == "cache":
        root, fstype = mount_of(d)
        ws = workspace_of(root)
        env = ws["cache"]["environment"] if ws else None
        if env is None and fstype.startswith("fuse."):
            raise TaskError(f"pnpm install (cache): {root} is not a workspace of the agent (LAYOUTD_WORKLOADS_SOCK)")
        if env:
            own = env["npm_config_store_dir"]
            vstore = env["npm_config_virtual_store_dir"]
            # One directory per workspace: the environment names one store
            # and one virtual store per cache.
            if os.path.lexists(own) or os.path.lexists(vstore):
                raise TaskError(f"pnpm install (cache): {root}'s cache has a store already: one directory per "
                                "workspace in this mode")
    if mode == "instore":
        own = os.path.join(d, "pnpm-store")
    elif mode == "store":
        root, fstype = mount_of(d)
        if os.path.isdir(os.path.join(root, ".layoutd-store")):
            # One per directory: the workspaces of a volume share one
            # store, and several directories may share a mount.
            own = os.path.join(root, ".layoutd-store", "-".join(
                ["pnpm", os.path.basename(root), os.path.relpath(d, root).replace("/", "-")]))
        elif fstype.startswith("fuse.layoutd-wsfs"):
            # A workspace without its store: the figures would be the
            # default mode's under the store's name.
            raise TaskError(f"pnpm install (store): {root} shows no .layoutd-store (workspace.package_store off?)")
    if own and mode == "cache":
        # Clones where the filesystem shares extents (XFS): how an operator
        # seeds each workspace's store from a tenant's warm one.
        ph.sh("pnpm_copy_store" + sfx, ["cp", "-a", "--reflink=auto", store, own], timed=False)
        ph.step("pnpm_sync_store" + sfx, os.sync, timed=False)
        store = own
    elif own:
        ph.step("pnpm_copy_store" + sfx, lambda: shutil.copytree(store, own, symlinks=True), timed=False)
        # A warm store was written before, not just now: its pages are on
        # disk (the N copies' writeback must not land in the timed install).
        ph.step("pnpm_sync_store" + sfx, os.sync, timed=False)
        store = own
    # The N installs start together, after every directory's untimed setup.
    ph.together("pnpm_start" + sfx)
    # With the cache, the store is named by the environment alone.
    where = [] if env else ["--store-dir", store]
    req0 = daemon_requests(ws) if ws else None
    ph.sh("pnpm_install" + sfx, [pnpm, "install", "--offline", "--frozen-lockfile"] + extra + where +
          ["--reporter=append-only"], cwd=dst, timed=False, env=env)
    req1 = daemon_requests(ws) if req0 is not None else None
    with open(os.path.join(dst, "package.json")) as f:
        pj = json.load(f)
    deps = list((pj.get("dependencies") or {}).keys()) + list((pj.get("devDependencies") or {}).keys())
    linked = 0
    for dep in deps:
        m = os.path.join(dst, "node_modules", dep, "package.json")
        try:
            with open(m) as f:
                got = json.load(f).get("name")
            linked += os.stat(m).st_nlink > 1
        except (OSError, ValueError) as e:
            raise TaskError(f"pnpm install ({mode}): {dep}: {e}")
        if got != dep:
            raise TaskError(f"pnpm install ({mode}): node_modules/{dep}/package.json names {got!r}")
    if vstore and not os.path.isdir(vstore):
        raise TaskError(f"pnpm install (cache): no virtual store at {vstore}: pnpm did not take the environment")

    made = made_below(os.path.join(dst, "node_modules"), *([vstore] if vstore else [])) \
        if req1 is not None else None

    def remove():
        ok, msg = rm_rf(dst)
        return rm_rf(vstore) if ok and vstore else (ok, msg)
    req2 = daemon_requests(ws) if req1 is not None else None
    ok, msg = ph.step("pnpm_rm_rf" + sfx, remove, timed=False)
    req3 = daemon_requests(ws) if req2 is not None else None
    if not ok:
        raise TaskError(msg)
    if own:
        ok, msg = ph.step("pnpm_rm_store" + sfx, lambda: rm_rf(store), timed=False)
        if not ok:
            raise TaskError(msg)
    inst, rm = ph.untimed["pnpm_install" + sfx], ph.untimed["pnpm_rm_rf" + sfx]
    # hard_linked: of the direct dependencies' package.json, how many have
    # more than one link (pnpm linked them from the store rather than copied)
    out = {"direct_deps_checked": len(deps), "hard_linked": linked, "install_s": inst, "rm_rf_s": rm,
           "seconds": round(inst + rm, 3)}
    if made and req1 is not None:
        # rm -rf's count includes the project's own files (a few dozen,
        # on the FUSE mount) that it removes too.
        out["files_made"] = made
        out["daemon_requests_install"] = req1 - req0
        out["daemon_requests_per_file_install"] = round((req1 - req0) / made, 4)
        if req3 is not None:
            out["daemon_requests_rm_rf"] = req3 - req2
            out["daemon_requests_per_file_rm_rf"] = round((req3 - req2) / made, 4)
    return out
