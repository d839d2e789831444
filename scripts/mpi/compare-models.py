#!/usr/bin/env python3
"""Compare the parameters of strata model files (output.model).

usage: compare-models.py REFERENCE OTHER...

Prints, for every OTHER, the largest difference of any parameter relative
to the largest magnitude of its tensor, and exits 1 when one exceeds
--tol (default 1e-4: float32 rounding of sums in another order).
"""
import json
import struct
import sys
from array import array


def load(path):
    with open(path, "rb") as f:
        pre = f.read(16)
        if pre[:8] != b"STRATAAF":
            sys.exit(f"{path}: not a strata array file")
        (hlen,) = struct.unpack("<I", pre[12:16])
        head = json.loads(f.read(hlen))
        out = {}
        for a in head["arrays"]:
            v = array("d")
            v.frombytes(f.read(8 * a["len"]))
            if sys.byteorder != "little":
                v.byteswap()
            out[a["name"]] = v
    return {k: v for k, v in out.items() if k.startswith("param/")}


def main():
    args = sys.argv[1:]
    tol = 1e-4
    if args and args[0].startswith("--tol="):
        tol = float(args.pop(0).split("=", 1)[1])
    if len(args) < 2:
        sys.exit(__doc__)
    ref = load(args[0])
    bad = False
    for path in args[1:]:
        other = load(path)
        if other.keys() != ref.keys():
            sys.exit(f"{path}: other parameters than {args[0]}")
        worst = max(max(abs(a - b) for a, b in zip(other[k], v)) / max(max(map(abs, v)), 1e-12) for k, v in ref.items())
        print(f"{path}: max relative parameter difference {worst:.3g} to {args[0]}")
        bad |= worst > tol
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
