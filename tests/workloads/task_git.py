# SPDX-License-Identifier: LGPL-2.1-or-later
"""Task: git, the way an agent uses it.

Input (cached on the host filesystem): a generated, deterministic bare
repository (git fast-import with fixed dates, so the same commit ids every
run), with a tag two thirds of the way along and a marker string in known
files. In the directory: `git clone --no-local` (upload-pack and
index-pack through a pipe, then a checkout), `status`, `grep`,
`worktree add` of the tag, an edit and `commit` in that worktree, `gc`,
`fsck --full --strict`. Each step's result is checked (HEAD and tag ids,
a clean status, the exact grep hits, the worktree's HEAD, fsck's exit);
untimed, every checked-out file is hashed back with `git hash-object` and
compared with the index.
"""
import json
import math
import os
import random
import subprocess

from wlcommon import TaskError, cached, text_blob

NAME = "git"
TARGET = 1.3
PROFILES = {
    "small": dict(files=1500, commits=100, dirs=60, seed=2),
    "full": dict(files=5000, commits=300, dirs=250, seed=2),
}
EPOCH = 1_700_000_000
ENV = {
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "wl", "GIT_AUTHOR_EMAIL": "wl@example.invalid",
    "GIT_COMMITTER_NAME": "wl", "GIT_COMMITTER_EMAIL": "wl@example.invalid",
    "GIT_AUTHOR_DATE": f"{EPOCH + 10**7} +0000", "GIT_COMMITTER_DATE": f"{EPOCH + 10**7} +0000",
}


def _git(args, cwd=None, input=None):
    r = subprocess.run(["git"] + args, cwd=cwd, input=input, env=dict(os.environ, **ENV),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise TaskError(f"git {' '.join(args)}: {r.stderr.decode(errors='replace')[-800:]}")
    return r.stdout.decode()


def generate(p, out):
    rng = random.Random(p["seed"])
    marker = f"WL_MARKER_{p['seed']}_grep_me"
    dirs = [f"pkg{d // 25:02d}/mod{d:03d}" + ("/internal" if d % 7 == 0 else "") for d in range(p["dirs"])]
    ext = [".c", ".h", ".py", ".js", ".md", ".txt"]
    files = {}  # path -> list of lines (bytes)
    created = 0

    def new_file():
        nonlocal created
        path = f"{rng.choice(dirs)}/f{created:05d}{rng.choice(ext)}"
        size = min(64 << 10, int(rng.lognormvariate(math.log(3000), 0.9)) + 100)
        body = text_blob(rng, size, f"// {path}\n").split(b"\n")
        head = (marker if created % 23 == 0 else f"file {created}").encode()
        created += 1
        files[path] = [head] + body
        return path

    stream = []
    mark = 0

    def blob(lines):
        nonlocal mark
        mark += 1
        data = b"\n".join(lines) + b"\n"
        stream.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
        return mark

    tag_at = max(1, p["commits"] * 2 // 3)
    tag_mark = tag_files = prev = None
    for c in range(p["commits"]):
        changes = []
        if c == 0:
            for _ in range(p["files"]):
                new_file()
            changes = [(f, "M") for f in files]
        else:
            for f in rng.sample(sorted(files), min(len(files), rng.randint(5, 25))):
                lines = files[f]
                k = rng.randrange(1, len(lines))
                lines[k:k + rng.randint(1, 4)] = text_blob(rng, rng.randint(40, 400), "").split(b"\n")
                changes.append((f, "M"))
            if rng.random() < 0.3:
                changes.append((new_file(), "M"))
            if rng.random() < 0.25 and len(files) > 10:
                victim = rng.choice(sorted(files))
                del files[victim]
                changes = [x for x in changes if x[0] != victim] + [(victim, "D")]
        cmds = []
        for f, op in changes:
            if op == "M":
                cmds.append(b"M 100644 :%d %s\n" % (blob(files[f]), f.encode()))
            else:
                cmds.append(b"D %s\n" % f.encode())
        mark += 1
        msg = f"commit {c}: {len(changes)} files\n".encode()
        t = EPOCH + c * 3600
        stream.append(b"commit refs/heads/main\nmark :%d\nauthor wl <wl@example.invalid> %d +0000\n"
                      b"committer wl <wl@example.invalid> %d +0000\ndata %d\n%s" % (mark, t, t, len(msg), msg))
        if c > 0:
            stream.append(b"from :%d\n" % prev)
        stream.extend(cmds)
        stream.append(b"\n")
        prev = mark
        if c == tag_at:
            tag_mark = mark
            tag_files = len(files)
    stream.append(b"reset refs/tags/v1\nfrom :%d\n\n" % tag_mark)

    src = os.path.join(out, "src.git")
    _git(["init", "-q", "--bare", "-b", "main", src])
    _git(["fast-import", "--quiet"], cwd=src, input=b"".join(stream))
    _git(["repack", "-a", "-d", "-f", "-q", "--window=50", "--depth=50"], cwd=src)
    _git(["prune-packed"], cwd=src)
    meta = {
        "head": _git(["rev-parse", "main"], cwd=src).strip(),
        "tag": _git(["rev-parse", "v1^{commit}"], cwd=src).strip(),
        "files": len(files), "tag_files": tag_files, "marker": marker,
        "grep": sorted(f for f, lines in files.items() if lines[0] == marker.encode()),
    }
    with open(os.path.join(out, "repo.json"), "w") as f:
        json.dump(meta, f)


def prepare(params):
    d = cached("gitrepo", params, __file__, lambda out: generate(params, out))
    with open(os.path.join(d, "repo.json")) as f:
        meta = json.load(f)
    return {"src": os.path.join(d, "src.git"), "meta": meta}


def run(inp, d, ph):
    m = inp["meta"]
    ph.env.update(ENV, HOME=d)
    repo, wt = os.path.join(d, "repo"), os.path.join(d, "wt")
    ph.sh("clone", ["git", "clone", "-q", "--no-local", inp["src"], repo])
    head = ph.sh("rev_parse", ["git", "-C", repo, "rev-parse", "HEAD"]).stdout.decode().strip()
    if head != m["head"]:
        raise TaskError(f"clone: HEAD is {head}, expected {m['head']}")
    st = ph.sh("status", ["git", "-C", repo, "status", "--porcelain"]).stdout
    if st.strip():
        raise TaskError(f"status after clone is not clean: {st.decode(errors='replace')[:300]}")
    g = ph.sh("grep", ["git", "-C", repo, "grep", "-l", "-F", m["marker"]], check=False)
    hits = sorted(g.stdout.decode().split())
    if hits != m["grep"]:
        raise TaskError(f"grep: {len(hits)} files, expected {len(m['grep'])} (exit {g.returncode})")
    ph.sh("worktree_add", ["git", "-C", repo, "worktree", "add", "-q", wt, "v1"])
    wh = ph.sh("wt_rev_parse", ["git", "-C", wt, "rev-parse", "HEAD"]).stdout.decode().strip()
    if wh != m["tag"]:
        raise TaskError(f"worktree: HEAD is {wh}, expected the tag {m['tag']}")
    wt_files = [f for f in ph.sh("wt_ls_files", ["git", "-C", wt, "ls-files", "-z"]).stdout.split(b"\0") if f]
    if len(wt_files) != m["tag_files"]:
        raise TaskError(f"worktree has {len(wt_files)} files, expected {m['tag_files']}")

    def edit():
        for f in wt_files[::max(1, len(wt_files) // 10)][:10]:
            with open(os.path.join(wt.encode(), f), "a") as fh:
                fh.write("// edited by the workload\n")
    ph.step("wt_edit", edit)
    ph.sh("wt_commit", ["git", "-C", wt, "commit", "-q", "-a", "-m", "workload edit"])
    st = ph.sh("wt_status", ["git", "-C", wt, "status", "--porcelain"]).stdout
    if st.strip():
        raise TaskError(f"worktree status after commit is not clean: {st.decode(errors='replace')[:300]}")
    ph.sh("gc", ["git", "-C", repo, "gc", "-q"])
    ph.sh("fsck", ["git", "-C", repo, "fsck", "--full", "--strict", "--no-progress", "--no-dangling"])

    # Untimed: every checked-out file read back and hashed, against the index.
    ls = ph.sh("verify_ls", ["git", "-C", repo, "ls-files", "-s", "-z"], timed=False).stdout.split(b"\0")
    want = {}
    for e in ls:
        if e:
            meta, path = e.split(b"\t", 1)
            want[path] = meta.split()[1]
    if len(want) != m["files"]:
        raise TaskError(f"clone has {len(want)} files in its index, expected {m['files']}")
    paths = list(want)
    got = ph.sh("verify_hash", ["git", "-C", repo, "hash-object", "--no-filters", "--stdin-paths"], timed=False,
                input=b"\n".join(paths) + b"\n").stdout.split()
    bad = [p.decode() for p, h in zip(paths, got) if h != want[p]]
    if len(got) != len(paths) or bad:
        raise TaskError(f"{len(bad)} checked-out files differ from the index: {bad[:5]}")
    ph.info["files"] = len(paths)
