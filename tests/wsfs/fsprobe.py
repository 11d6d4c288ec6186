#!/usr/bin/python3
"""One filesystem operation, and what it returned: for the wsfs tests.

    fsprobe.py OP ARGS...

Prints "ok" (and a value for some ops) or the errno's name (ENOSPC, ...);
for multi-call ops, "CALL:ERRNO" names the call that failed. Exit status 0
whether the operation failed or not: the caller compares what it printed.
Exit status 2 on a bad command line. Standard library only (Debian's
/usr/bin/python3).
"""
import errno
import fcntl
import os
import sys

FICLONE = 0x40049409


def name(e):
    if e.errno == errno.EOPNOTSUPP:  # == ENOTSUP on Linux; one spelling
        return "EOPNOTSUPP"
    return errno.errorcode.get(e.errno, str(e.errno))


def write_file(path, nbytes, chunk=65536, flags=os.O_WRONLY | os.O_CREAT | os.O_TRUNC):
    """open, write nbytes, fsync, close: the first call that fails."""
    step = "open"
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        return "open:" + name(e)
    try:
        step = "write"
        buf = b"x" * chunk
        left = nbytes
        while left > 0:
            n = os.write(fd, buf[:min(chunk, left)])
            left -= n
        step = "fsync"
        os.fsync(fd)
    except OSError as e:
        res = step + ":" + name(e)
        try:
            os.close(fd)
        except OSError as e2:
            res += ",close:" + name(e2)
        return res
    try:
        os.close(fd)
    except OSError as e:
        return "close:" + name(e)
    return "ok"


def write_close(path, nbytes):
    """open, write, close without fsync: what close(2) says."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as e:
        return "open:" + name(e)
    try:
        os.write(fd, b"y" * nbytes)
    except OSError as e:
        os.close(fd)
        return "write:" + name(e)
    try:
        os.close(fd)
    except OSError as e:
        return "close:" + name(e)
    return "ok"


def fill(path, chunk=1 << 20):
    """Writes path until the filesystem is full (ENOSPC/EDQUOT), then fsync."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    total = 0
    err = "none"
    # Smaller and smaller writes: the last blocks too.
    for size in (chunk, 65536, 4096):
        try:
            while True:
                total += os.write(fd, b"f" * size)
        except OSError as e:
            err = name(e)
    try:
        os.fsync(fd)
    except OSError as e:
        err = err + ",fsync:" + name(e)
    try:
        os.close(fd)
    except OSError as e:
        err = err + ",close:" + name(e)
    return "%s %d" % (err, total)


def call(fn):
    try:
        r = fn()
        return "ok" if r is None else "ok " + str(r)
    except OSError as e:
        return name(e)


def hold_open(dirpath, count):
    """Opens count files in dirpath and keeps them; reports the first
    failure, then checks that the ones that opened still work and close."""
    fds = []
    first = "none"
    for i in range(count):
        try:
            fds.append(os.open(os.path.join(dirpath, "held%d" % i), os.O_RDWR | os.O_CREAT, 0o644))
        except OSError as e:
            first = name(e)
            break
    bad = 0
    for fd in fds:
        try:
            os.write(fd, b"still works\n")
            os.lseek(fd, 0, 0)
            if os.read(fd, 64) != b"still works\n":
                bad += 1
        except OSError:
            bad += 1
    close_errs = 0
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            close_errs += 1
    return "%s opened=%d bad=%d close_errors=%d" % (first, len(fds), bad, close_errs)


def copy_range(src, dst):
    """copy_file_range src -> dst; on EXDEV/EOPNOTSUPP falls back to
    read/write as callers do. Prints how it went and the bytes copied."""
    how = "copy_file_range"
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        size = os.fstat(fi.fileno()).st_size
        done = 0
        try:
            while done < size:
                n = os.copy_file_range(fi.fileno(), fo.fileno(), size - done)
                if n == 0:
                    break
                done += n
        except OSError as e:
            if e.errno not in (errno.EXDEV, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                return name(e)
            how = "fallback-after-" + name(e)
            fi.seek(done)
            fo.seek(done)
            while True:
                b = fi.read(1 << 20)
                if not b:
                    break
                fo.write(b)
                done += len(b)
    return "ok %s %d" % (how, done)


def sendfile(src, dst):
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        size = os.fstat(fi.fileno()).st_size
        off = 0
        try:
            while off < size:
                n = os.sendfile(fo.fileno(), fi.fileno(), off, size - off)
                if n == 0:
                    break
                off += n
        except OSError as e:
            return name(e)
    return "ok %d" % off


def ficlone(src, dst):
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        try:
            fcntl.ioctl(fo.fileno(), FICLONE, fi.fileno())
        except OSError as e:
            return name(e)
    return "ok"


def tmpfile(dirpath, linkname):
    try:
        fd = os.open(dirpath, os.O_TMPFILE | os.O_RDWR, 0o600)
    except OSError as e:
        return name(e)
    try:
        os.write(fd, b"tmpfile\n")
        os.link("/proc/self/fd/%d" % fd, linkname, follow_symlinks=True)
    except OSError as e:
        return "link:" + name(e)
    finally:
        os.close(fd)
    return "ok linked"


def fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    except OSError as e:
        return name(e)
    finally:
        os.close(fd)
    return "ok"


def main(argv):
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    op, a = argv[1], argv[2:]
    ops = {
        "create": lambda: call(lambda: os.close(os.open(a[0], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))),
        "write": lambda: write_file(a[0], int(a[1])),
        "append": lambda: write_file(a[0], int(a[1]), flags=os.O_WRONLY | os.O_APPEND),
        "write-close": lambda: write_close(a[0], int(a[1])),
        "fill": lambda: fill(a[0]),
        "mkdir": lambda: call(lambda: os.mkdir(a[0])),
        "rmdir": lambda: call(lambda: os.rmdir(a[0])),
        "symlink": lambda: call(lambda: os.symlink(a[0], a[1])),
        "link": lambda: call(lambda: os.link(a[0], a[1])),
        "rename": lambda: call(lambda: os.rename(a[0], a[1])),
        "unlink": lambda: call(lambda: os.unlink(a[0])),
        "chmod": lambda: call(lambda: os.chmod(a[0], int(a[1], 8))),
        "utime": lambda: call(lambda: os.utime(a[0], ns=(int(a[1]), int(a[1])))),
        "open-rw": lambda: call(lambda: os.close(os.open(a[0], os.O_RDWR))),
        "setxattr": lambda: call(lambda: os.setxattr(a[0], a[1], b"v" * int(a[2]))),
        "getxattr": lambda: call(lambda: os.getxattr(a[0], a[1]).decode(errors="replace")),
        "listxattr": lambda: call(lambda: ",".join(sorted(os.listxattr(a[0])))),
        "hold-open": lambda: hold_open(a[0], int(a[1])),
        "copy-range": lambda: copy_range(a[0], a[1]),
        "sendfile": lambda: sendfile(a[0], a[1]),
        "ficlone": lambda: ficlone(a[0], a[1]),
        "tmpfile": lambda: tmpfile(a[0], a[1]),
        "fsync-dir": lambda: fsync_dir(a[0]),
    }
    if op not in ops:
        print("fsprobe: unknown op %s" % op, file=sys.stderr)
        return 2
    print(ops[op]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
