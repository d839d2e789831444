#!/usr/bin/env python3
"""Stream ./usr/include out of a Debian .deb without downloading the rest.

usage: fetch-headers.py URL DEST

A .deb is an ar archive; its data.tar.* member lists files in sorted order,
so for nvidia-cuda-dev every ./usr/include entry comes first (~0.84 MB of
the 774 MB download). This reads the ar headers off the HTTP stream, pipes
the data member through the matching decompressor into tarfile, extracts
the ./usr/include entries, and closes the connection at the first entry
past them. The tree is written to DEST.tmp-PID and renamed to DEST/usr at
the end, so an interrupted run leaves no partial headers behind.
"""
import os
import posixpath
import shutil
import sys
import tarfile
import time
import urllib.request

PREFIX = "./usr/include"


class Stream:
    """A file-like reader that counts bytes and can be capped at a limit."""

    def __init__(self, f, limit=None):
        self.f, self.n, self.limit = f, 0, limit

    def read(self, k=-1):
        if self.limit is not None:
            left = self.limit - self.n
            k = left if k is None or k < 0 else min(k, left)
        b = self.f.read(k)
        self.n += len(b)
        return b


def safe(m, root):
    """Refuse entries that would land outside root (tarfile's 'data' filter
    where this Python lacks it)."""
    name = posixpath.normpath(m.name)
    if name.startswith("/") or name.startswith(".."):
        raise SystemExit(f"unsafe path in archive: {m.name}")
    if m.issym():
        target = posixpath.normpath(posixpath.join(posixpath.dirname(name), m.linkname))
        if m.linkname.startswith("/") or target.startswith(".."):
            raise SystemExit(f"unsafe symlink in archive: {m.name} -> {m.linkname}")
    elif not (m.isfile() or m.isdir()):
        raise SystemExit(f"unexpected entry type in archive: {m.name}")


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    url, dest = sys.argv[1], sys.argv[2]
    t0 = time.time()
    resp = urllib.request.urlopen(url, timeout=60)
    raw = Stream(resp)
    if raw.read(8) != b"!<arch>\n":
        sys.exit(f"{url}: not an ar archive (.deb)")
    while True:
        hdr = raw.read(60)
        if len(hdr) < 60:
            sys.exit(f"{url}: no data.tar member")
        name = hdr[:16].decode().strip().rstrip("/")
        size = int(hdr[48:58])
        if name.startswith("data.tar"):
            break
        raw.read(size + (size & 1))
    modes = {"data.tar.xz": "r|xz", "data.tar.gz": "r|gz", "data.tar.bz2": "r|bz2", "data.tar": "r|"}
    if name not in modes:
        sys.exit(f"{url}: unsupported member {name}")

    tmp = f"{dest}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    tf = tarfile.open(fileobj=Stream(raw, raw.n + size), mode=modes[name])
    seen = 0
    for m in tf:
        p = m.name.rstrip("/")
        if p in (".", "./usr"):
            continue
        if not (p == PREFIX or p.startswith(PREFIX + "/")):
            if seen:
                break  # sorted archive: nothing of ./usr/include follows
            continue
        safe(m, tmp)
        if hasattr(tarfile, "data_filter"):
            tf.extract(m, tmp, filter="data")
        else:
            tf.extract(m, tmp)
        seen += 1
    resp.close()
    if not seen:
        shutil.rmtree(tmp)
        sys.exit(f"{url}: no {PREFIX} entries")
    os.makedirs(dest, exist_ok=True)
    shutil.rmtree(os.path.join(dest, "usr"), ignore_errors=True)
    os.rename(os.path.join(tmp, "usr"), os.path.join(dest, "usr"))
    shutil.rmtree(tmp)
    print(f"fetch-headers: {seen} entries into {dest}/usr/include; "
          f"read {raw.n / 1e6:.2f} MB of the .deb in {time.time() - t0:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
