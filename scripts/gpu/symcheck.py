#!/usr/bin/env python3
"""symcheck.py BINARY...: check that every dynamic symbol the binaries import
resolves in the shared libraries the dynamic loader finds here.

For each binary it reads the ELF file itself (no nm/readelf/objdump needed):
its DT_NEEDED libraries, its undefined dynamic symbols and their symbol
versions (.gnu.version / .gnu.version_r). Then it dlopen()s every needed
library with the current LD_LIBRARY_PATH and looks each symbol up with
dlvsym() (versioned references) or dlsym() (unversioned ones, such as the
references to the link stubs of libcuda.so.1 / libcublas.so.13), and checks
the newest GLIBC_x.y the binary needs against the running glibc.

It prints one line per library (where it was found, how many of the symbols
the binary takes from it are present, and the missing ones) and exits 1 when
a needed library cannot be loaded or a non-weak symbol is missing anywhere,
0 otherwise. Unused missing symbols would be harmless at run time (Go
binaries are bound lazily), but they mean the binary was linked against an
ABI the machine does not have, so they are reported as failures.

    LD_LIBRARY_PATH=/usr/local/cuda/lib64:lib python3 symcheck.py strata cuda.test
    python3 symcheck.py --json report.json strata
"""

import argparse
import ctypes
import json
import os
import struct
import sys

SHT_DYNAMIC = 6
SHT_DYNSYM = 11
SHT_GNU_VERSYM = 0x6FFFFFFF
SHT_GNU_VERNEED = 0x6FFFFFFE
DT_NEEDED = 1
STB_WEAK = 2


class ELFError(Exception):
    pass


def _cstr(blob, off):
    end = blob.index(b"\0", off)
    return blob[off:end].decode("utf-8", "replace")


def read_elf(path):
    """Return {'needed': [...], 'undefined': [(name, version, file, weak)]}.

    version and file are None for unversioned references."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise ELFError(f"{path}: not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ELFError(f"{path}: only 64-bit little-endian ELF files are supported")
    e_shoff = struct.unpack_from("<Q", data, 0x28)[0]
    e_shentsize, e_shnum, _ = struct.unpack_from("<HHH", data, 0x3A)
    if e_shoff == 0 or e_shnum == 0:
        raise ELFError(f"{path}: no section headers")
    secs = []
    for i in range(e_shnum):
        (name, typ, _flags, _addr, off, size, link, info, _align, entsize) = struct.unpack_from(
            "<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
        secs.append({"type": typ, "off": off, "size": size, "link": link, "info": info, "entsize": entsize})

    def body(s):
        return data[s["off"]:s["off"] + s["size"]]

    needed = []
    for s in secs:
        if s["type"] != SHT_DYNAMIC:
            continue
        strtab = body(secs[s["link"]])
        blob = body(s)
        for k in range(0, len(blob) - 15, 16):
            tag, val = struct.unpack_from("<qQ", blob, k)
            if tag == 0:
                break
            if tag == DT_NEEDED:
                needed.append(_cstr(strtab, val))

    dynsym = next((s for s in secs if s["type"] == SHT_DYNSYM), None)
    if dynsym is None:
        return {"needed": needed, "undefined": []}  # static binary
    dynstr = body(secs[dynsym["link"]])
    syms = body(dynsym)
    nsyms = len(syms) // 24

    versions = {}  # version index -> (version name, file)
    for s in secs:
        if s["type"] != SHT_GNU_VERNEED:
            continue
        strtab = body(secs[s["link"]])
        blob = body(s)
        off = 0
        for _ in range(s["info"]):
            _ver, cnt, vn_file, vn_aux, vn_next = struct.unpack_from("<HHIII", blob, off)
            aux = off + vn_aux
            for _ in range(cnt):
                _hash, _flags, other, name, nxt = struct.unpack_from("<IHHII", blob, aux)
                versions[other] = (_cstr(strtab, name), _cstr(strtab, vn_file))
                aux += nxt
            if vn_next == 0:
                break
            off += vn_next
    versym = next((body(s) for s in secs if s["type"] == SHT_GNU_VERSYM), b"")

    undefined = []
    for i in range(1, nsyms):
        st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from("<IBBHQQ", syms, i * 24)
        if st_shndx != 0 or st_name == 0:
            continue
        name = _cstr(dynstr, st_name)
        ver = fil = None
        if len(versym) >= 2 * (i + 1):
            idx = struct.unpack_from("<H", versym, 2 * i)[0] & 0x7FFF
            if idx > 1 and idx in versions:
                ver, fil = versions[idx]
        undefined.append((name, ver, fil, (st_info >> 4) == STB_WEAK))
    return {"needed": needed, "undefined": undefined}


def glibc_tuple(v):
    try:
        return tuple(int(x) for x in v.split("."))
    except ValueError:
        return ()


def running_glibc():
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    except (ValueError, OSError, AttributeError, IndexError):
        return ""


def loaded_path(handle):
    """Path of the file a dlopen() handle refers to, from dlinfo's link map."""
    class LinkMap(ctypes.Structure):
        _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]
    try:
        dlinfo = ctypes.CDLL(None).dlinfo
    except AttributeError:
        return ""
    dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    lm = ctypes.POINTER(LinkMap)()
    RTLD_DI_LINKMAP = 2
    if dlinfo(handle, RTLD_DI_LINKMAP, ctypes.byref(lm)) != 0 or not lm:
        return ""
    name = (lm.contents.l_name or b"").decode("utf-8", "replace")
    return os.path.realpath(name) if name else ""


class Loader:
    def __init__(self):
        libc = ctypes.CDLL(None)
        self.dlsym = libc.dlsym
        self.dlsym.restype = ctypes.c_void_p
        self.dlsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        try:
            self.dlvsym = libc.dlvsym
            self.dlvsym.restype = ctypes.c_void_p
            self.dlvsym.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p]
        except AttributeError:
            self.dlvsym = None
        self.handles = {}  # soname -> (handle or None, path or error)

    def load(self, soname):
        if soname not in self.handles:
            try:
                h = ctypes.CDLL(soname, mode=ctypes.RTLD_LOCAL)
                self.handles[soname] = (h, loaded_path(h._handle))
            except OSError as e:
                self.handles[soname] = (None, str(e))
        return self.handles[soname]

    def has(self, soname, name, ver):
        h, _ = self.load(soname)
        if h is None:
            return False
        if ver and self.dlvsym is not None:
            return bool(self.dlvsym(h._handle, name.encode(), ver.encode()))
        return bool(self.dlsym(h._handle, name.encode()))


def check(path, loader, out):
    info = read_elf(path)
    rep = {"binary": path, "needed": {}, "missing": [], "weak_missing": [], "glibc_needed": "", "ok": True}
    print(f"symcheck: {path}: NEEDED {' '.join(info['needed']) or '(none)'}")
    for so in info["needed"]:
        h, where = loader.load(so)
        rep["needed"][so] = {"loaded": h is not None, "path": where if h else "", "error": "" if h else where,
                             "symbols": 0, "missing": []}
        if h is None:
            rep["ok"] = False
    glibc = ""
    for name, ver, fil, weak in info["undefined"]:
        if ver and ver.startswith("GLIBC_") and glibc_tuple(ver[6:]) > glibc_tuple(glibc):
            glibc = ver[6:]
        # Versioned references name their library; unversioned ones are
        # searched in every needed library, in order (as the loader does).
        cands = [fil] if fil and fil in rep["needed"] else info["needed"]
        found = None
        for so in cands:
            if loader.has(so, name, ver):
                found = so
                break
        if found is not None:
            rep["needed"][found]["symbols"] += 1
            continue
        label = name + (f"@{ver}" if ver else "")
        if weak:
            rep["weak_missing"].append(label)
            continue
        rep["missing"].append(label)
        rep["ok"] = False
        # Attribute the miss to the library it most likely comes from.
        owner = fil if fil in rep["needed"] else guess_owner(name, info["needed"])
        if owner:
            rep["needed"][owner]["missing"].append(label)
    rep["glibc_needed"] = glibc
    have = running_glibc()
    rep["glibc_running"] = have
    if glibc and have and glibc_tuple(have) < glibc_tuple(glibc):
        rep["ok"] = False
        print(f"symcheck: {path}: needs GLIBC_{glibc} but this machine runs glibc {have}")
    for so, r in rep["needed"].items():
        if not r["loaded"]:
            print(f"symcheck:   {so}: CANNOT LOAD ({r['error']})")
            continue
        line = f"symcheck:   {so} ({r['path'] or '?'}): {r['symbols']} referenced symbols present"
        if r["missing"]:
            line += f"; {len(r['missing'])} MISSING: {' '.join(sorted(r['missing']))}"
        print(line)
    unowned = [m for m in rep["missing"] if not any(m in r["missing"] for r in rep["needed"].values())]
    if unowned:
        print(f"symcheck:   MISSING from every needed library: {' '.join(sorted(unowned))}")
    if rep["weak_missing"]:
        print(f"symcheck:   (weak, unresolved, harmless: {len(rep['weak_missing'])})")
    print(f"symcheck: {path}: {'OK' if rep['ok'] else 'FAIL'}"
          f" ({len(info['undefined'])} imported symbols, glibc needed {glibc or '-'}, running {have or '?'})")
    out.append(rep)
    return rep["ok"]


def guess_owner(name, needed):
    prefixes = [("cublasLt", "libcublasLt"), ("cublas", "libcublas"), ("cusparse", "libcusparse"),
                ("nvrtc", "libnvrtc"), ("cuda", "libcudart"), ("cu", "libcuda.")]
    for pre, lib in prefixes:
        if name.startswith(pre):
            for so in needed:
                if so.startswith(lib):
                    return so
    return None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--json", help="also write the report as JSON to this file")
    args = ap.parse_args(argv)
    loader = Loader()
    reports = []
    ok = True
    for b in args.binaries:
        try:
            ok = check(b, loader, reports) and ok
        except (OSError, ELFError, struct.error, ValueError) as e:
            print(f"symcheck: {b}: {e}")
            reports.append({"binary": b, "ok": False, "error": str(e)})
            ok = False
    if args.json:
        with open(args.json, "w") as f:
            json.dump(reports, f, indent=1)
    print(f"symcheck: {'all symbols resolve' if ok else 'FAILED'}"
          f" (LD_LIBRARY_PATH={os.environ.get('LD_LIBRARY_PATH', '')})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
