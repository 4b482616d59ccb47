#!/usr/bin/env python3
"""A container root file system as a tar, from files already on this machine:
programs with the shared libraries `ldd` says they load, plain files, links,
directories with an owner and a mode, and the image's one user. No registry,
no package manager inside: `podman import` turns the tar into an image.

    rootfs.py OUT.tar --user NAME:UID \
        [--exe SRC[=DEST]]... [--file SRC[=DEST]]... \
        [--link DEST=TARGET]... [--dir DEST[=UID:MODE]]...

Every entry is owned by root but a `--dir` given another owner; nothing
depends on who runs this (no chown, no fakeroot).
"""

import argparse
import io
import os
import re
import subprocess
import tarfile


def pair(text):
    src, _, dest = text.partition("=")
    return src, dest or src


def shared_libraries(program):
    """The absolute paths of the libraries `program` loads, the dynamic
    loader among them."""
    out = subprocess.run(["ldd", program], capture_output=True, text=True)
    if out.returncode != 0:
        if "not a dynamic executable" in out.stdout + out.stderr:
            return []
        raise SystemExit(f"ldd {program}: {out.stderr.strip()}")
    found = []
    for line in out.stdout.splitlines():
        match = re.search(r"(/\S+) \(0x", line)
        if match:
            found.append(match.group(1))
    return found


class Rootfs:
    def __init__(self, out):
        self.tar = tarfile.open(out, "w")
        self.added = set()

    def parents(self, dest):
        parts = dest.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self.directory("/" + "/".join(parts[:i]), 0, 0o755)

    def directory(self, dest, uid, mode):
        if dest in self.added:
            return
        self.parents(dest)
        info = tarfile.TarInfo(dest.lstrip("/"))
        info.type, info.mode, info.uid, info.gid = tarfile.DIRTYPE, mode, uid, uid
        self.tar.addfile(info)
        self.added.add(dest)

    def file(self, src, dest, mode=None):
        if dest in self.added:
            return
        self.parents(dest)
        with open(os.path.realpath(src), "rb") as f:
            data = f.read()
        info = tarfile.TarInfo(dest.lstrip("/"))
        info.size = len(data)
        info.mode = mode if mode is not None else os.stat(src).st_mode & 0o777
        self.tar.addfile(info, io.BytesIO(data))
        self.added.add(dest)

    def text(self, dest, text, mode=0o644):
        self.parents(dest)
        data = text.encode()
        info = tarfile.TarInfo(dest.lstrip("/"))
        info.size, info.mode = len(data), mode
        self.tar.addfile(info, io.BytesIO(data))
        self.added.add(dest)

    def link(self, dest, target):
        self.parents(dest)
        info = tarfile.TarInfo(dest.lstrip("/"))
        info.type, info.linkname, info.mode = tarfile.SYMTYPE, target, 0o777
        self.tar.addfile(info)
        self.added.add(dest)

    def program(self, src, dest):
        self.file(src, dest, 0o755)
        for library in shared_libraries(src):
            self.file(library, library, 0o755)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--user", required=True, help="NAME:UID")
    parser.add_argument("--exe", action="append", default=[], type=pair)
    parser.add_argument("--file", action="append", default=[], type=pair)
    parser.add_argument("--link", action="append", default=[], type=pair)
    parser.add_argument("--dir", action="append", default=[], type=pair)
    args = parser.parse_args()

    name, _, uid = args.user.partition(":")
    rootfs = Rootfs(args.out)
    rootfs.directory("/tmp", 0, 0o1777)
    rootfs.text("/etc/passwd", f"root:x:0:0:root:/root:/sbin/nologin\n{name}:x:{uid}:{uid}:{name}:/nonexistent:/sbin/nologin\n")
    rootfs.text("/etc/group", f"root:x:0:\n{name}:x:{uid}:\n")
    for src, dest in args.exe:
        rootfs.program(src, dest)
    for src, dest in args.file:
        rootfs.file(src, dest)
    for dest, target in args.link:
        rootfs.link(dest, target)
    for dest, spec in args.dir:
        owner, _, mode = (spec if spec != dest else "0:755").partition(":")
        rootfs.directory(dest, int(owner), int(mode or "755", 8))
    rootfs.tar.close()


if __name__ == "__main__":
    main()
