#!/usr/bin/python3
"""Writes a corpus of hostile workspace archives (issue 35.2) into OUTDIR.

    hostile-archives.py OUTDIR VICTIM

VICTIM is a host file outside any workspace; OUTSIDE (its directory) is
where an escaping write would land. Each archive is what an attacker
would hand an operator to `layoutctl import`: the right first entry, then
entries and a manifest that try to read VICTIM (by an absolute or ".."
manifest path, through a symlink, as a hard link), to write beside it, or
to slip an entry past the check. Prints one line per archive:
"FILE<TAB>TEXT", TEXT being what the refusal must say.
"""
import hashlib
import io
import json
import os
import sys
import tarfile

out, victim = sys.argv[1], sys.argv[2]
outside = os.path.dirname(victim)
secret = open(victim, "rb").read()
META_MAX = 64 * 1024 * 1024  # src/archive/ws-archive-import.c


def line(data):
    return {"type": "file", "mode": 0o644, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def add(t, name, data=b"", kind=tarfile.REGTYPE, link=""):
    ti = tarfile.TarInfo(name)
    ti.type, ti.linkname, ti.mtime = kind, link, 1700000000
    ti.mode = 0o755 if kind == tarfile.DIRTYPE else 0o644
    ti.uid, ti.gid = os.getuid(), os.getgid()
    if kind == tarfile.CHRTYPE:
        ti.devmajor, ti.devminor = 1, 3  # /dev/mem
    ti.size = len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(ti, io.BytesIO(data) if ti.size else None)


def archive(name, expect, entries, files=None, count=None, manifest=None):
    """entries: (name, data, kind, link) tuples; files: the manifest's
    lines (default: none); count: its "entries" (default: len(files));
    manifest: raw bytes instead, or False for no manifest at all."""
    files = files or {}
    path = os.path.join(out, name + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT, compresslevel=1) as t:
        add(t, ".layoutd-export/workspace.json", json.dumps({"format": 1, "id": name}).encode())
        for e in entries:
            add(t, *e)
        if manifest is None:
            m = {"format": 1, "entries": len(files) if count is None else count, "files": files}
            manifest = json.dumps(m).encode()
        if manifest is not False:
            add(t, ".layoutd-export/manifest.json", manifest)
    print(f"{path}\t{expect}")


hi = [("a", b"hi")]
archive("abs-manifest", "not a relative path", hi, {"a": line(b"hi"), victim: line(secret)})
archive("dotdot-manifest", "not a relative path", hi,
        {"a": line(b"hi"), "../../../../../../.." + victim: line(secret)})
archive("unlisted-entry", "not every entry is checked", hi + [("b", b"never checked")], {"a": line(b"hi")})
archive("entries-lie", "entries", hi, {"a": line(b"hi")}, count=7)
archive("manifest-through-symlink", "no such entry",
        [("out", b"", tarfile.SYMTYPE, outside)],
        {"out": {"type": "symlink", "mode": 0o777, "link": outside}, "out/" + os.path.basename(victim): line(secret)})
archive("dotdot-entry", "not a relative path", [("../escape", b"x")], manifest=False)
archive("abs-entry", "not a relative path", [(os.path.join(outside, "escape"), b"x")], manifest=False)
archive("entry-through-symlink", "", [("l", b"", tarfile.SYMTYPE, outside), ("l/escape", b"x")], manifest=False)
archive("hardlink-out", "hard link", [("h", b"", tarfile.LNKTYPE, victim)], manifest=False)
archive("device", "device node", [("mem", b"", tarfile.CHRTYPE)], manifest=False)
archive("twice", "twice", hi + hi, {"a": line(b"hi")})
archive("no-manifest", "without its manifest", hi, manifest=False)
archive("huge-manifest", "out of range", hi, manifest=b" " * (META_MAX + 1) + b"{}")
