#!/usr/bin/python3
"""A workspace's writer for the gc concurrency test (tests/wsfs/gc.sh).

    gcwriter.py MOUNT SECONDS SEED MANIFEST

For SECONDS, in MOUNT: creates files from a small set of contents shared
by all writers (so workspaces deduplicate into the same objects), modifies
files in place (a stub is copied up), renames files and whole directories
(stubs move between directories while the sweeper walks), hard-links and
deletes. At the end writes MANIFEST: {path relative to MOUNT: sha256} of
every file that must exist, and exits 0 (1 on any unexpected error).
Standard library only.
"""
import hashlib
import json
import os
import random
import sys
import time


def blob(k):
    r = random.Random(7919 * k + 1)
    n = 5000 + r.randrange(40000)
    return bytes(r.getrandbits(8) for _ in range(n))


def main():
    mnt, seconds, seed, manifest = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = random.Random(seed)
    blobs = [blob(k) for k in range(24)]
    files = {}      # relative path -> bytes
    frozen = set()  # paths with more than one link: never modified in place
    dirs = ["d0", "d1", "d2", "d3"]
    for d in dirs:
        os.makedirs(os.path.join(mnt, d), exist_ok=True)
    serial = 0
    ops = {}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        op = rng.choices(["create", "modify", "rename", "delete", "link", "mvdir"], [40, 15, 15, 18, 6, 2])[0]
        ops[op] = ops.get(op, 0) + 1
        if op == "create" or not files:
            serial += 1
            p = f"{rng.choice(dirs)}/f{seed}_{serial}"
            data = blobs[rng.randrange(len(blobs))]
            with open(os.path.join(mnt, p), "wb") as f:
                f.write(data)
            files[p] = data
        elif op == "modify":
            cand = [p for p in files if p not in frozen]
            if not cand:
                continue
            p = rng.choice(cand)
            data = bytearray(files[p])
            off = rng.randrange(len(data))
            patch = bytes([rng.randrange(256)]) * 7
            data[off:off + 7] = patch  # past the end it grows, as the file does
            data = bytes(data)
            with open(os.path.join(mnt, p), "r+b") as f:
                f.seek(off)
                f.write(patch)
            files[p] = data
        elif op == "rename":
            p = rng.choice(sorted(files))
            serial += 1
            q = f"{rng.choice(dirs)}/r{seed}_{serial}"
            os.rename(os.path.join(mnt, p), os.path.join(mnt, q))
            files[q] = files.pop(p)
            if p in frozen:
                frozen.discard(p)
                frozen.add(q)
        elif op == "delete":
            p = rng.choice(sorted(files))
            os.unlink(os.path.join(mnt, p))
            del files[p]
            frozen.discard(p)
        elif op == "link":
            p = rng.choice(sorted(files))
            serial += 1
            q = f"{rng.choice(dirs)}/l{seed}_{serial}"
            os.link(os.path.join(mnt, p), os.path.join(mnt, q))
            files[q] = files[p]
            frozen.update((p, q))
        elif op == "mvdir":
            # A whole directory of stubs moves (pnpm's pkg_tmp -> pkg).
            i = rng.randrange(len(dirs))
            serial += 1
            new = f"d{seed}_{serial}"
            os.rename(os.path.join(mnt, dirs[i]), os.path.join(mnt, new))
            old = dirs[i] + "/"
            files = {(new + "/" + p[len(old):] if p.startswith(old) else p): v for p, v in files.items()}
            frozen = {(new + "/" + p[len(old):] if p.startswith(old) else p) for p in frozen}
            dirs[i] = new
    with open(manifest, "w") as f:
        json.dump({"files": {p: hashlib.sha256(v).hexdigest() for p, v in files.items()}, "ops": ops}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
