#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write a newc cpio archive (an initramfs) of a staging directory, adding
/dev/console as a character device (5, 1) so the kernel can give init a
console. Written here instead of with cpio(1) so no root (mknod) is needed.

usage: mkcpio.py STAGING_DIR OUT.cpio
"""
import os
import stat
import sys


def header(ino, mode, nlink, size, rdev, name):
    # newc: magic then 13 eight-digit hex fields, then the name, NUL, pad to 4.
    maj, mnr = (rdev >> 8) & 0xfff, rdev & 0xff
    fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, maj, mnr, len(name) + 1, 0]
    h = b"070701" + b"".join(b"%08x" % f for f in fields) + name.encode() + b"\0"
    return h + b"\0" * (-len(h) % 4)


def entries(root):
    yield "dev", stat.S_IFDIR | 0o755, None, 0
    yield "dev/console", stat.S_IFCHR | 0o600, None, (5 << 8) | 1
    for d in ("proc", "sys", "tmp"):
        yield d, stat.S_IFDIR | 0o755, None, 0
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(dirpath, root)
        if rel != ".":
            yield rel, stat.S_IFDIR | 0o755, None, 0
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            name = os.path.normpath(os.path.join(rel, f))
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                yield name, stat.S_IFLNK | 0o777, os.readlink(path).encode(), 0
            else:
                with open(path, "rb") as fh:
                    yield name, stat.S_IFREG | (st.st_mode & 0o777), fh.read(), 0


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[2], "wb") as out:
        for ino, (name, mode, data, rdev) in enumerate(entries(sys.argv[1]), 1):
            data = data or b""
            nlink = 2 if stat.S_ISDIR(mode) else 1
            out.write(header(ino, mode, nlink, len(data), rdev, name))
            out.write(data + b"\0" * (-len(data) % 4))
        out.write(header(0, 0, 1, 0, 0, "TRAILER!!!"))


if __name__ == "__main__":
    main()
