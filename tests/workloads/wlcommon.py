# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every workload task shares: the input cache, a deterministic text
corpus, timed phases and the build dir's tools.

Only the Debian python3 standard library (/usr/bin/python3).
"""
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import threading
import time

CACHE_MAX_AGE_DAYS = 14


class TaskError(Exception):
    """A task failed: a command failed or a result did not verify."""


def build_dir():
    d = os.environ.get("LAYOUTD_BUILD_DIR")
    if not d:
        d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "build")
    return os.path.abspath(d)


def tool(name):
    """A helper built from this folder (wl-pnpm, wl-publish)."""
    p = os.path.join(build_dir(), "tests", "workloads", name)
    if not os.access(p, os.X_OK):
        raise TaskError(f"not built: {p} (cmake --build {build_dir()} --target {name})")
    return p


def cache_root():
    return os.environ.get("LAYOUTD_WORKLOADS_CACHE", "/var/tmp/layoutd-workloads")


def _prune(root):
    """Removes entries not used for CACHE_MAX_AGE_DAYS (a full package
    store is 1 GB; old generator versions must not pile up)."""
    limit = time.time() - CACHE_MAX_AGE_DAYS * 86400
    for name in os.listdir(root):
        p = os.path.join(root, name)
        used = os.path.join(p, ".used")
        try:
            if os.path.isdir(p) and os.path.exists(used) and os.stat(used).st_mtime < limit:
                shutil.rmtree(p, ignore_errors=True)
                if os.path.exists(p + ".lock"):
                    os.unlink(p + ".lock")
            elif ".tmp." in name and os.stat(p).st_mtime < limit:
                shutil.rmtree(p, ignore_errors=True)
        except OSError:
            pass


def cached(kind, params, source_file, build):
    """Returns the directory holding the inputs for (kind, params), built
    by build(tmpdir) when missing. The key covers the parameters and the
    generator's source, so a changed generator never reuses old inputs.
    Safe against concurrent callers (a lock per entry) and interrupted
    builds (built in a temp dir, renamed when complete)."""
    root = cache_root()
    os.makedirs(root, exist_ok=True)
    with open(source_file, "rb") as f:
        src = f.read()
    with open(__file__, "rb") as f:
        src += f.read()
    key = hashlib.sha256(json.dumps(params, sort_keys=True).encode() + src).hexdigest()[:16]
    path = os.path.join(root, f"{kind}-{key}")
    with open(path + ".lock", "w") as lk:
        fcntl.flock(lk, fcntl.LOCK_EX)
        if not os.path.exists(os.path.join(path, ".complete")):
            _prune(root)
            shutil.rmtree(path, ignore_errors=True)
            tmp = f"{path}.tmp.{os.getpid()}"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            t0 = time.monotonic()
            build(tmp)
            with open(os.path.join(tmp, "params.json"), "w") as f:
                json.dump(dict(params, generated_in_s=round(time.monotonic() - t0, 2)), f)
            open(os.path.join(tmp, ".complete"), "w").close()
            os.rename(tmp, path)
        with open(os.path.join(path, ".used"), "w"):
            pass
    return path


_CORPUS = None
_WORDS = ("const let var function return if else for while import export from require module exports "
          "this new class extends super async await yield typeof instanceof null undefined true false "
          "Object Array Promise String Number Symbol Map Set Error props state value options callback "
          "result index length push map filter reduce forEach then catch resolve reject prototype "
          "default type interface readonly string number boolean void never any unknown").split()
_PUNCT = ["(", ")", "{", "}", ";", ",", ".", " = ", " => ", " === ", " + ", "[", "]", ": ", "\n", "\n  ", "\n    "]


def corpus():
    """4 MiB of deterministic JavaScript-like text: compressible the way
    source is (what a VDO layout would see), cheap to slice into files."""
    global _CORPUS
    if _CORPUS is None:
        rng = random.Random(20240601)
        toks = rng.choices(_WORDS + _PUNCT, k=900_000)
        idents = [f"_{rng.getrandbits(24):06x}" for _ in range(4000)]
        for i in range(0, len(toks), 7):
            toks[i] = idents[(i * 2654435761) % len(idents)]
        text = " ".join(toks).encode()
        while len(text) < 4 << 20:
            text += text
        _CORPUS = text[: 4 << 20]
    return _CORPUS


def text_blob(rng, size, header):
    """size bytes of text: a unique header line, then corpus slices from
    random offsets (so no two files share 4 KiB-aligned blocks by accident)."""
    c = corpus()
    out = [header.encode()[:size]]
    have = len(out[0])
    while have < size:
        n = min(size - have, len(c) - 1)
        off = rng.randrange(0, len(c) - n)
        out.append(c[off:off + n])
        have += n
    return b"".join(out)


def sha256_hex(b):
    return hashlib.sha256(b).hexdigest()


class Phases:
    """Times the steps of one task in one directory. Timed phases add up
    to the task's time; untimed ones (verification, cleanup) are recorded
    but not counted."""

    def __init__(self, env=None, timeout=None):
        # A hung mount must not hang the suite: every command gets the
        # time left of the task's budget (LAYOUTD_WORKLOADS_TASK_TIMEOUT).
        if timeout is None:
            timeout = float(os.environ.get("LAYOUTD_WORKLOADS_TASK_TIMEOUT", "1800"))
        self.deadline = time.monotonic() + timeout
        self.timed = {}
        self.untimed = {}
        self.env = dict(os.environ, **(env or {}))
        self.info = {}
        self.barrier = None  # the batch's: set by tasks.run_batch

    def together(self, name):
        """Waits until the batch's other directories get here too (untimed,
        recorded as name): a timed step after an untimed one of uneven
        length (filling a store) must not overlap the others' untimed work.
        Raises TaskError when the batch cannot meet (a directory failed)."""
        if not self.barrier:
            return
        try:
            self.step(name, lambda: self.barrier.wait(timeout=max(1.0, self.deadline - time.monotonic())),
                      timed=False)
        except threading.BrokenBarrierError:
            raise TaskError(f"{name}: another directory of the batch failed before getting here")

    def seconds(self):
        return round(sum(self.timed.values()), 3)

    def step(self, name, fn, timed=True):
        t0 = time.monotonic()
        try:
            return fn()
        finally:
            (self.timed if timed else self.untimed)[name] = round(time.monotonic() - t0, 3)

    def sh(self, name, cmd, cwd=None, timed=True, check=True, input=None, env=None):
        """Runs cmd (a list) as phase name; raises TaskError naming the
        phase and the command's stderr when it fails and check is set."""
        def go():
            return subprocess.run(cmd, cwd=cwd, env=dict(self.env, **(env or {})), input=input,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=max(1.0, self.deadline - time.monotonic()))
        try:
            r = self.step(name, go, timed)
        except subprocess.TimeoutExpired:
            raise TaskError(f"{name}: {' '.join(map(str, cmd))} killed: the task's time budget ran out")
        if check and r.returncode != 0:
            err = (r.stderr or b"").decode(errors="replace").strip()[-1500:]
            out = (r.stdout or b"").decode(errors="replace").strip()[-500:]
            raise TaskError(f"{name}: {' '.join(map(str, cmd))} exited {r.returncode}: {err or out}")
        return r


def rm_rf(path):
    """rm -rf with the real tool; returns (ok, message)."""
    r = subprocess.run(["rm", "-rf", "--one-file-system", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0 or os.path.lexists(path):
        return False, f"rm -rf {path}: exit {r.returncode}: {r.stderr.decode(errors='replace').strip()[-500:]}"
    return True, None


def workspace_at(root):
    """The workspace mounted at root, as GET /v1/workspaces answers it
    (its cache object and environment included), or None when root is no
    workspace of the agent at LAYOUTD_WORKLOADS_SOCK (or none is set)."""
    sock = os.environ.get("LAYOUTD_WORKLOADS_SOCK")
    if not sock:
        return None
    r = subprocess.run(["curl", "-s", "-S", "--max-time", "30", "--unix-socket", sock, "http://layoutd/v1/workspaces"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise TaskError(f"GET /v1/workspaces: {r.stderr.decode(errors='replace').strip()}")
    for w in json.loads(r.stdout).get("workspaces", []):
        if w.get("mountpoint") == root:
            return w
    return None


def mount_of(d):
    """(mount point, fstype) of the filesystem d is on: a workspace's
    task dir is below its mount's root."""
    p = os.path.realpath(d)
    while not os.path.ismount(p):
        p = os.path.dirname(p)
    fstype = ""
    with open("/proc/self/mounts") as f:
        for line in f:
            fields = line.split()
            # Only space, tab, newline and backslash are escaped (\\NNN).
            if len(fields) > 2 and re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[1]) == p:
                fstype = fields[2]  # the last one listed is on top
    return p, fstype
