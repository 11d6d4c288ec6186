# SPDX-License-Identifier: LGPL-2.1-or-later
"""Task: a build's publish step.

Input (cached): a tarball of F files of 4 KiB each (distinct, generated)
and the sha256 manifest of the whole release: those files plus what
wl-publish writes (computed by `wl-publish manifest`, in memory). In the
directory: `tar -xf` into a staging dir, wl-publish write (G generated
files, an M MiB artifact in 1 KiB write()s, fsync, atomic rename, fsync
of the directory, then rename of the staging dir to the release dir and
fsync of its parent). Untimed: `sha256sum -c --strict` of every file of
the release, and no file more or less than the manifest names.
"""
import io
import os
import random
import subprocess
import tarfile

from wlcommon import TaskError, cached, sha256_hex, text_blob, tool

NAME = "publish"
TARGET = 1.5
PROFILES = {
    "small": dict(tar_files=1024, tar_file_size=4096, gen_files=128, artifact_mib=8, seed=4),
    "full": dict(tar_files=1024, tar_file_size=4096, gen_files=128, artifact_mib=32, seed=4),
}


def generate(p, out):
    rng = random.Random(p["seed"])
    lines = []
    with tarfile.open(os.path.join(out, "payload.tar"), "w", format=tarfile.PAX_FORMAT) as tf:
        for i in range(p["tar_files"]):
            name = f"payload/d{i // 128:02d}/f{i:04d}.txt"
            data = text_blob(rng, p["tar_file_size"], f"{name}\n")
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), 1_700_000_000, 0o644
            tf.addfile(ti, io.BytesIO(data))
            lines.append(f"{sha256_hex(data)}  {name}\n")
    r = subprocess.run([tool("wl-publish"), "manifest", "--files", str(p["gen_files"]),
                        "--artifact-mib", str(p["artifact_mib"]), "--seed", str(p["seed"])],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    with open(os.path.join(out, "manifest.sha256"), "w") as f:
        f.write("".join(lines) + r.stdout.decode())


def prepare(params):
    # The manifest depends on wl-publish's stream: key the cache on its source too.
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "wl-publish.c"), "rb") as f:
        src = sha256_hex(f.read())
    d = cached("publish", dict(params, wl_publish_c=src), __file__,
               lambda out: generate(params, out))
    return {"tar": os.path.join(d, "payload.tar"), "manifest": os.path.join(d, "manifest.sha256"), "p": params}


def run(inp, d, ph):
    p = inp["p"]
    stage, release = os.path.join(d, "release.tmp"), os.path.join(d, "release")
    ph.step("mkdir", lambda: os.mkdir(stage))
    ph.sh("extract", ["tar", "-xf", inp["tar"], "-C", stage])
    ph.sh("write_publish", [tool("wl-publish"), "write", "--dir", stage, "--publish-to", release,
                            "--files", str(p["gen_files"]), "--artifact-mib", str(p["artifact_mib"]),
                            "--seed", str(p["seed"])])
    if os.path.lexists(stage):
        raise TaskError("the staging dir still exists after the publish rename")
    ph.sh("verify", ["sha256sum", "-c", "--strict", "--quiet", inp["manifest"]], cwd=release, timed=False)
    with open(inp["manifest"]) as f:
        want = sorted(line.split("  ", 1)[1].rstrip("\n") for line in f)
    have = sorted(os.path.relpath(os.path.join(r, n), release)
                  for r, _, names in os.walk(release) for n in names)
    if have != want:
        extra, missing = sorted(set(have) - set(want)), sorted(set(want) - set(have))
        raise TaskError(f"release holds {len(have)} files, the manifest {len(want)}: "
                        f"extra {extra[:5]}, missing {missing[:5]}")
