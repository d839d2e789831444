#!/usr/bin/env python3
"""Random-read rate of the disk under a file, cold: the bound of a disk
feature tier's epoch (every host-cache miss of a row is one random read
when the page cache is dropped). Drops the file's pages from the page
cache (posix_fadvise DONTNEED), turns readahead off (RANDOM), then issues
N reads of one 512-byte row at random 4 KiB-aligned offsets from Q
threads at once, for each Q given. Prints one JSON line per Q.

    python3 scripts/perf/random-read-iops.py FILE [N] [Q ...]
    python3 scripts/perf/random-read-iops.py /data/rmat-24.strata 20000 4 32 256
"""
import json
import os
import random
import sys
import threading
import time


def measure(path, n, q):
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pages = size // 4096 - 1
        if pages < 1:
            raise SystemExit(f"{path}: smaller than two pages")
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)

        def worker(seed, count):
            r = random.Random(seed)
            for _ in range(count):
                os.pread(fd, 512, r.randrange(pages) * 4096)

        threads = [threading.Thread(target=worker, args=(i, n // q)) for i in range(q)]
        t0 = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        dt = time.perf_counter() - t0
        done = (n // q) * q
        return {"file": path, "reads": done, "in_flight": q, "seconds": round(dt, 3), "reads_per_s": round(done / dt)}
    finally:
        os.close(fd)


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    path = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20000
    qs = [int(a) for a in sys.argv[3:]] or [1, 4, 32, 256]
    for q in qs:
        if q < 1 or n < q:
            raise SystemExit(f"in-flight count {q}: want 1..{n}")
        print(json.dumps(measure(path, n, q)), flush=True)


if __name__ == "__main__":
    main()
