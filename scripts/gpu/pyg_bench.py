#!/usr/bin/env python3
"""pyg_bench.py: time PyTorch Geometric full-graph training on exactly the
graph and model a strata config describes, for the strata-vs-PyG table.

    pyg_bench.py --config configs/gpu/gcn.toml --graph rmat-20.strata \\
        [--config configs/gpu/sage.toml ...] [--set train.epochs=12 ...] \\
        [--layout edge_index] [--layout csr] [--device cuda] [--jsonl OUT]
    pyg_bench.py --config configs/gpu/gcn.toml --scale 10 --device cpu   # smoke test
    pyg_bench.py --inspect FILE.strata                                   # reader only

The graph is read from strata's binary graph file (`strata convert`, format
"STRATAG1", core/graph/binfile.go) with numpy alone. Without --graph, a
data.dataset ending in .strata is read; an R-MAT spec ("rmat-20-16-128-16-0",
--scale replacing its scale) is first written to a temporary file with
`strata convert` (--strata BIN, default build/gpu/strata or bin/strata).

The model, its sizes and the optimiser are read from the same strata TOML
config (with the same --set overrides) that the strata run uses, with
strata's defaults (core/config/config.go) for absent keys, so both sides
train the same model: 2 layers of GCNConv / SAGEConv(mean) / GATConv,
model.hidden wide (x model.options.heads for gat), dropout before every
layer (model.input_dropout before the first, default model.dropout), ReLU
(gcn, sage) or ELU (gat) between layers, softmax cross-entropy on the
training nodes, Adam(lr, weight_decay) as torch.optim.Adam.

The graph is prepared exactly as core/train/data.go does: with
data.symmetrize (the default) the union of every edge and its reverse,
without duplicates or self loops; without it, the stored edges minus self
loops (duplicates kept). gcn and gat then add one self loop per node (strata
trains them on adj_self), sage uses the graph without self loops. The JSON
line reports edges (as stored in the file, what strata's result calls
"edges"), edges_sym (after that step) and edges_trained (what the layer
aggregates over) so the two sides can be checked against each other, and
params (which strata's result also reports) to check the model shapes.

Timing: every epoch is one forward, loss, backward and optimizer step
between two torch.cuda.synchronize() calls: epoch_time_median_s is the
median wall-clock time after the first --warmup epochs (2, as strata's
epoch_time_median_s), event_time_median_s the same from CUDA events. Peak memory is
torch.cuda.max_memory_allocated() over the run (graph, features, model,
activations). One JSON line per (config, layout) goes to stdout (and is
appended to --jsonl); a run that fails (out of memory, say) still prints its
line, with "error" set, and the next run goes on.
"""

import argparse
import gc
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zlib

try:
    import tomllib
except ImportError:  # Python < 3.11
    tomllib = None

MAGIC = b"STRATAG1"
# Version 2 adds a CRC-32C per section (checked by strata itself, `strata
# inspect --verify`); the layout this reader uses is the same.
BIN_VERSIONS = (1, 2)
PRELUDE = 24
DTYPES = {"i4": "<i4", "i8": "<i8", "f4": "<f4"}


class BenchError(Exception):
    """A problem with the inputs: printed as one line, exit code 2."""


# ---------------------------------------------------------------------------
# strata's binary graph format (numpy only)


def read_strata(path):
    """Read a STRATAG1 file. Returns a dict: name, source, num_nodes,
    feat_dim, num_classes, nnz, header (the JSON header) and the arrays
    indptr (int64), idx (int32 or int64), features (float32 [n, feat_dim]
    or None), labels (int32 or None), train/valid/test (int32), values
    (float32 or None). The arrays are copy-on-write memory maps."""
    import numpy as np

    size = os.path.getsize(path)
    with open(path, "rb") as f:
        pre = f.read(PRELUDE)
        if len(pre) < 8 or pre[:8] != MAGIC:
            raise BenchError(f"{path}: not a strata binary graph (magic {pre[:8]!r}, want {MAGIC!r})")
        if len(pre) < PRELUDE:
            raise BenchError(f"{path}: truncated preamble")
        version = int.from_bytes(pre[8:12], "little")
        hlen = int.from_bytes(pre[12:16], "little")
        crc = int.from_bytes(pre[16:20], "little")
        if version not in BIN_VERSIONS:
            raise BenchError(f"{path}: format version {version}, this reader knows versions {BIN_VERSIONS}")
        if hlen > 16 << 20 or PRELUDE + hlen > size:
            raise BenchError(f"{path}: header length {hlen} does not fit the {size}-byte file")
        head = f.read(hlen)
    if zlib.crc32(head) & 0xFFFFFFFF != crc:
        raise BenchError(f"{path}: header checksum mismatch (corrupt file)")
    h = json.loads(head)
    if h.get("file_size") != size:
        raise BenchError(f"{path}: file is {size} bytes but the header says {h.get('file_size')}")
    n, nnz, dim = int(h["num_nodes"]), int(h["nnz"]), int(h["feat_dim"])
    if h.get("rows") != n or h.get("cols") != n:
        raise BenchError(f"{path}: graph is {h.get('rows')} x {h.get('cols')}, want {n} x {n}")
    secs = {s["name"]: s for s in h.get("sections", [])}

    def arr(name, dtype, count, required=True):
        s = secs.get(name)
        if s is None:
            if required:
                raise BenchError(f"{path}: section {name!r} is missing")
            return None
        if s["dtype"] != dtype or (count is not None and s["count"] != count):
            raise BenchError(f"{path}: section {name!r} is {s['dtype']} x {s['count']}, want {dtype} x {count}")
        if s["count"] == 0:
            return np.zeros(0, dtype=DTYPES[dtype])
        if s["offset"] + s["count"] * int(dtype[1]) > size:
            raise BenchError(f"{path}: section {name!r} runs past the end of the file")
        return np.memmap(path, dtype=DTYPES[dtype], mode="c", offset=s["offset"], shape=(s["count"],))

    indptr = arr("indptr", "i8", n + 1)
    idx = arr("idx32", "i4", nnz, required=False)
    if idx is None:
        idx = arr("idx64", "i8", nnz, required=False)
    if idx is None:
        raise BenchError(f"{path}: neither an idx32 nor an idx64 section")
    if int(indptr[0]) != 0 or int(indptr[-1]) != nnz:
        raise BenchError(f"{path}: indptr runs from {indptr[0]} to {indptr[-1]}, want 0 to {nnz}")
    feats = arr("features", "f4", n * dim)
    labels = arr("labels", "i4", n if h.get("has_labels") else 0)
    return {
        "path": path, "name": h.get("name", ""), "source": h.get("source", ""), "header": h,
        "num_nodes": n, "nnz": nnz, "feat_dim": dim, "num_classes": int(h.get("num_classes", 0)),
        "indptr": indptr, "idx": idx, "values": arr("values", "f4", nnz, required=False),
        "features": feats.reshape(n, dim) if dim > 0 else None,
        "labels": labels if h.get("has_labels") else None,
        "train": arr("train", "i4", None), "valid": arr("valid", "i4", None), "test": arr("test", "i4", None),
    }


def inspect(path):
    import numpy as np

    g = read_strata(path)
    deg = np.diff(g["indptr"])
    return {
        "file": path, "dataset": g["name"], "source": g["source"], "nodes": g["num_nodes"], "edges": g["nnz"],
        "id_bits": 32 if g["idx"].dtype.itemsize == 4 else 64, "features": g["feat_dim"],
        "classes": g["num_classes"], "train": len(g["train"]), "valid": len(g["valid"]), "test": len(g["test"]),
        "max_in_degree": int(deg.max()) if len(deg) else 0, "isolated_rows": int((deg == 0).sum()),
        "self_loops": int(np.count_nonzero(g["idx"] == np.repeat(np.arange(g["num_nodes"]), deg))),
    }


# ---------------------------------------------------------------------------
# strata configs: defaults of core/config/config.go, --set like strata's


DEFAULTS = {
    "data": {"symmetrize": True, "feature_norm": "auto", "reorder": "none", "synth_features": 0},
    "model": {"name": "gcn", "layers": 2, "hidden": 16, "dropout": 0.5, "input_dropout": -1.0, "options": {}},
    "train": {"mode": "fullgraph", "epochs": 200, "optimizer": "adam", "lr": 0.01, "weight_decay": 5e-4,
              "momentum": 0.0, "seed": 0, "dtype": "float32", "micro_batches": 1, "backend": "cpu"},
}


def parse_override(s):
    key, sep, val = s.partition("=")
    if not sep or not key.strip():
        raise BenchError(f"--set {s}: expected key=value, e.g. --set train.epochs=5")
    try:
        v = tomllib.loads("v = " + val)["v"]
    except Exception:
        v = val  # as strata: a value that is not TOML is a plain string
    return [p.strip().strip('"') for p in key.strip().split(".")], v


def load_config(path, sets):
    if tomllib is None:
        raise BenchError("reading strata's TOML configs needs Python 3.11 or newer (tomllib)")
    with open(path, "rb") as f:
        raw = tomllib.load(f)
    for s in sets:
        keys, v = parse_override(s)
        cur = raw
        for k in keys[:-1]:
            cur = cur.setdefault(k, {})
        cur[keys[-1]] = v
    cfg = {sec: dict(vals) for sec, vals in DEFAULTS.items()}
    for sec, vals in raw.items():
        if isinstance(vals, dict):
            cfg.setdefault(sec, {}).update(vals)
    m, t, d = cfg["model"], cfg["train"], cfg["data"]
    if "dataset" not in d:
        raise BenchError(f"{path}: data.dataset is required")
    if m.get("module"):
        raise BenchError(f"{path}: model.module (a .wasm file) has no PyG counterpart; use model.name")
    if m["name"] not in ("gcn", "sage", "gat"):
        raise BenchError(f"{path}: model.name = {m['name']!r}: pyg_bench knows gcn, sage and gat")
    # micro_batches: train.micro_batches, or [fullgraph] micro_batches (both read by strata)
    if t["mode"] != "fullgraph" or t.get("micro_batches", 1) != 1 or cfg.get("fullgraph", {}).get("micro_batches", 1) != 1:
        raise BenchError(f"{path}: only train.mode = \"fullgraph\" without micro-batches is benchmarked")
    if t["dtype"] != "float32":
        raise BenchError(f"{path}: train.dtype = {t['dtype']!r}: only float32 is benchmarked")
    if t["optimizer"] != "adam":
        raise BenchError(f"{path}: train.optimizer = {t['optimizer']!r}: only adam is benchmarked")
    if d["reorder"] != "none":
        raise BenchError(f"{path}: data.reorder = {d['reorder']!r} is not reproduced here")
    opts = dict(m.get("options") or {})
    if opts.get("batchnorm"):
        raise BenchError(f"{path}: model.options.batchnorm is not reproduced here")
    opts.pop("batchnorm", None)
    known = {"gat": {"heads", "out_heads", "attn_dropout", "negative_slope"}}.get(m["name"], set())
    extra = sorted(set(opts) - known)
    if extra:
        raise BenchError(f"{path}: model.options {', '.join(extra)} not known for {m['name']}")
    m["options"] = opts
    cfg["path"] = path
    return cfg


def rmat_spec_with_scale(spec, scale):
    parts = spec.split("-")
    if len(parts) < 2 or parts[0] != "rmat":
        raise BenchError(f"--scale needs an R-MAT data.dataset (rmat-<scale>-...), not {spec!r}")
    parts[1] = str(scale)
    return "-".join(parts)


def find_strata(explicit):
    here = os.path.dirname(os.path.abspath(__file__))
    cands = [explicit] if explicit else [os.path.join(here, "strata"), "build/gpu/strata", "bin/strata"]
    for c in cands:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise BenchError("an R-MAT dataset must first be written with `strata convert`: give --strata BIN "
                     "(or --graph FILE.strata)")


# ---------------------------------------------------------------------------
# the graph as strata trains it


def median(v, warmup):
    """core/train/run.go median: drop the first warmup entries if enough remain."""
    if len(v) > warmup:
        v = v[warmup:]
    if not v:
        return 0.0
    s = sorted(v)
    k = len(s) // 2
    return s[k] if len(s) % 2 else (s[k - 1] + s[k]) / 2


def prepare_edges(torch, g, symmetrize, device):
    """Return (src, dst) int64 CPU tensors of strata's adjacency "adj" (no
    self loops), sorted by (dst, src) like a CSR by destination row.

    The stored CSR has one row per destination node: row i lists the
    sources j of the edges j -> i (R-MAT groups its edges by destination),
    and strata aggregates row i over its columns, so a PyG edge is
    (source = column, target = row)."""
    import numpy as np

    n = g["num_nodes"]
    indptr = torch.from_numpy(np.asarray(g["indptr"], dtype=np.int64))
    row = torch.repeat_interleave(torch.arange(n, dtype=torch.int64), indptr[1:] - indptr[:-1])
    col = torch.from_numpy(np.asarray(g["idx"]).astype(np.int64))
    dev = torch.device(device)
    row, col = row.to(dev), col.to(dev)
    if symmetrize:
        # core/graph.Symmetrize: the sorted union of (i, j) and (j, i),
        # without duplicates and self loops.
        r = torch.cat([row, col])
        c = torch.cat([col, row])
        del row, col
        keep = r != c
        key = torch.sort(r[keep] * n + c[keep])[0]
        del r, c, keep
        first = torch.ones(key.numel(), dtype=torch.bool, device=key.device)
        first[1:] = key[1:] != key[:-1]
        key = key[first]  # sorted, without duplicates
        del first
        dst, src = key // n, key % n
        del key
    else:
        # core/graph.RemoveSelfLoops: the stored entries minus (i, i),
        # duplicates and order kept.
        keep = row != col
        dst, src = row[keep], col[keep]
    return src.cpu(), dst.cpu()


def prepare_features(torch, g, norm):
    """core/train/data.go prepareFeatures (row-normalise 0/1 features)."""
    import numpy as np

    feats = g["features"]
    if feats is None:
        raise BenchError(f"{g['path']}: the dataset has no node features (data.synth_features is not reproduced)")
    x = torch.from_numpy(np.asarray(feats))
    if norm == "none":
        return x
    if norm == "auto":
        flat = x.reshape(-1)
        step = 1 << 24
        for i in range(0, flat.numel(), step):
            part = flat[i:i + step]
            if not bool(((part == 0) | (part == 1)).all()):
                return x
    s = x.double().sum(dim=1, keepdim=True)
    out = torch.where(s != 0, x.double() / torch.where(s != 0, s, torch.ones_like(s)), torch.zeros_like(s))
    return out.float()


# ---------------------------------------------------------------------------
# the model


def build_model(torch, pyg_nn, cfg, in_dim, classes):
    m = cfg["model"]
    kind = m["name"]
    opts = m["options"]
    heads = int(opts.get("heads", 1)) if kind == "gat" else 1
    out_heads = int(opts.get("out_heads", 1))
    attn = float(opts.get("attn_dropout", 0.0))
    slope = float(opts.get("negative_slope", 0.2))
    layers = int(m["layers"])
    hidden = int(m["hidden"]) * max(heads, 1)  # core/train/model.go: hidden x heads
    drop_in = m["dropout"] if m["input_dropout"] == -1 else m["input_dropout"]
    convs, drops = [], []
    d = in_dim
    for layer in range(layers):
        last = layer == layers - 1
        out = classes if last else hidden
        if kind == "gcn":
            conv = pyg_nn.GCNConv(d, out, cached=True, add_self_loops=True, normalize=True)
        elif kind == "sage":
            conv = pyg_nn.SAGEConv(d, out, aggr="mean")
        else:
            if last:
                conv = pyg_nn.GATConv(d, out, heads=out_heads, concat=False, negative_slope=slope, dropout=attn,
                                      add_self_loops=True)
            else:
                if out % heads:
                    raise BenchError(f"gat: hidden {out} is not divisible by heads {heads}")
                conv = pyg_nn.GATConv(d, out // heads, heads=heads, concat=True, negative_slope=slope,
                                      dropout=attn, add_self_loops=True)
        convs.append(conv)
        drops.append(float(drop_in if layer == 0 else m["dropout"]))
        d = out
    act = torch.nn.functional.elu if kind == "gat" else torch.nn.functional.relu

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.convs = torch.nn.ModuleList(convs)

        def forward(self, x, adj):
            for i, conv in enumerate(self.convs):
                if drops[i] > 0:
                    x = torch.nn.functional.dropout(x, p=drops[i], training=self.training)
                x = conv(x, adj)
                if i < len(self.convs) - 1:
                    x = act(x)
            return x

    return Net(), heads


# ---------------------------------------------------------------------------
# one run


def matmul_precision(torch):
    """How float32 matrix products run: "ieee" (PyTorch's default, like
    strata's cuBLAS SGEMM) or "tf32"."""
    m = torch.backends.cuda.matmul
    try:
        p = m.fp32_precision  # PyTorch >= 2.9
    except (AttributeError, AssertionError):  # older ones assert on unknown names
        p = None
    if isinstance(p, str) and p not in ("", "none"):
        return p
    return "tf32" if m.allow_tf32 else "ieee"


def is_oom(e):
    return "out of memory" in str(e).lower() or type(e).__name__ == "OutOfMemoryError"


def run_one(torch, pyg_nn, cfg, g, edges, x_cpu, layout, device, warmup, meta):
    F = torch.nn.functional
    kind = cfg["model"]["name"]
    n = g["num_nodes"]
    src, dst = edges
    rec = dict(meta)
    rec.update({
        "impl": "pyg", "config": cfg["path"], "model": kind, "layout": layout,
        "layers": int(cfg["model"]["layers"]), "hidden": int(cfg["model"]["hidden"]),
        "dropout": float(cfg["model"]["dropout"]), "epochs": int(cfg["train"]["epochs"]), "warmup": warmup,
        "lr": float(cfg["train"]["lr"]), "weight_decay": float(cfg["train"]["weight_decay"]),
        "seed": int(cfg["train"]["seed"]),
        "edges_sym": int(src.numel()),
        # gcn and gat aggregate over adj_self: one self loop per node added
        # to a graph without any (PyG adds them the same way in the layer).
        "edges_trained": int(src.numel()) + (n if kind in ("gcn", "gat") else 0),
        "error": None,
    })
    if layout == "csr" and kind == "gat":
        rec["error"] = "skipped: GATConv is benchmarked on edge_index only"
        return rec
    dev = torch.device(device)
    cuda = dev.type == "cuda"
    torch.manual_seed(int(cfg["train"]["seed"]))
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(dev)
    state = {}
    try:
        t0 = time.perf_counter()
        x = x_cpu.to(dev)
        y = torch.from_numpy(g["labels"].astype("int64")).to(dev)
        train_idx = torch.from_numpy(g["train"].astype("int64")).to(dev)
        if layout == "edge_index":
            adj = torch.stack([src, dst]).to(dev)
        elif layout == "csr":
            # adj_t: row = target node, as PyG's sparse layers expect.
            crow = torch.zeros(n + 1, dtype=torch.int64)
            crow[1:] = torch.cumsum(torch.bincount(dst, minlength=n), 0)
            adj = torch.sparse_csr_tensor(crow.to(dev), src.to(dev), torch.ones(src.numel(), device=dev),
                                          size=(n, n))
        else:
            raise BenchError(f"unknown layout {layout!r}")
        state.update(x=x, y=y, adj=adj)
        model, heads = build_model(torch, pyg_nn, cfg, x.shape[1], g["num_classes"])
        model = model.to(dev)
        state["model"] = model
        rec["heads"] = heads
        rec["params"] = int(sum(p.numel() for p in model.parameters()))
        opt = torch.optim.Adam(model.parameters(), lr=float(cfg["train"]["lr"]),
                               weight_decay=float(cfg["train"]["weight_decay"]))
        if cuda:
            torch.cuda.synchronize(dev)
        rec["setup_s"] = time.perf_counter() - t0
        times, ev_times, losses = [], [], []
        for _ in range(int(cfg["train"]["epochs"])):
            if cuda:
                torch.cuda.synchronize(dev)
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
            t0 = time.perf_counter()
            model.train()
            opt.zero_grad(set_to_none=True)
            out = model(x, adj)
            loss = F.cross_entropy(out[train_idx], y[train_idx])
            loss.backward()
            opt.step()
            if cuda:
                e1.record()
                torch.cuda.synchronize(dev)
            times.append(time.perf_counter() - t0)
            if cuda:
                ev_times.append(e0.elapsed_time(e1) / 1e3)
            losses.append(float(loss.item()))
            del out, loss
        rec["epoch_time_median_s"] = median(times, warmup)
        rec["epoch_times_s"] = [round(t, 6) for t in times]
        if ev_times:
            rec["event_time_median_s"] = median(ev_times, warmup)
        rec["final_loss"] = losses[-1] if losses else None
        if cuda:
            rec["peak_bytes"] = int(torch.cuda.max_memory_allocated(dev))
            rec["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(dev))
        # Accuracy after the timed epochs, as a sanity check (not timed).
        try:
            model.eval()
            with torch.no_grad():
                pred = model(x, adj).argmax(dim=1)
            for split in ("train", "valid", "test"):
                idx = torch.from_numpy(g[split].astype("int64")).to(dev)
                rec[split + "_acc"] = float((pred[idx] == y[idx]).float().mean()) if idx.numel() else 0.0
            del pred
        except RuntimeError as e:
            rec["eval_error"] = "oom" if is_oom(e) else str(e).splitlines()[0]
    except RuntimeError as e:
        rec["error"] = ("oom: " if is_oom(e) else "") + str(e).splitlines()[0][:300]
        if cuda:
            rec["peak_bytes"] = int(torch.cuda.max_memory_allocated(dev))
    finally:
        state.clear()
        gc.collect()
        if cuda:
            torch.cuda.empty_cache()
    return rec


# ---------------------------------------------------------------------------


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--config", action="append", default=[], help="strata TOML config (repeatable)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a config key, as strata's --set (repeatable; applies to every config)")
    ap.add_argument("--graph", help="strata binary graph file (.strata) to train on")
    ap.add_argument("--scale", type=int, help="replace the scale of an R-MAT data.dataset (small smoke tests)")
    ap.add_argument("--strata", help="strata binary for `strata convert` of an R-MAT spec")
    ap.add_argument("--layout", action="append", choices=["edge_index", "csr"],
                    help="PyG input: edge_index (default) and/or csr (a torch.sparse_csr adj_t; gcn and sage)")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--warmup", type=int, default=2, help="epochs left out of the median (default 2)")
    ap.add_argument("--jsonl", help="also append the JSON lines to this file")
    ap.add_argument("--inspect", metavar="FILE", help="print what the reader sees in a .strata file and exit")
    args = ap.parse_args(argv)

    if args.inspect:
        print(json.dumps(inspect(args.inspect)))
        return 0
    if not args.config:
        ap.error("give at least one --config (or --inspect FILE)")
    cfgs = [load_config(c, args.set) for c in args.config]

    try:
        import torch
    except ImportError as e:
        raise BenchError(f"PyTorch is not importable with {sys.executable} ({e}); run this with the "
                         "venv's python (e.g. /opt/torch/.venv/bin/python)")
    try:
        import torch_geometric
        import torch_geometric.nn as pyg_nn
    except ImportError as e:
        raise BenchError(f"PyTorch Geometric (torch_geometric) is not importable with {sys.executable} "
                         f"({e}); the comparison needs PyG 2.x")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise BenchError("--device cuda but torch.cuda.is_available() is False (use --device cpu for a smoke test)")

    tmpdir = None
    graph = args.graph
    try:
        if not graph:
            spec = cfgs[0]["data"]["dataset"]
            if args.scale is not None:
                spec = rmat_spec_with_scale(spec, args.scale)
            if spec.endswith(".strata"):
                graph = spec
            elif spec.startswith("rmat-"):
                strata = find_strata(args.strata)
                tmpdir = tempfile.mkdtemp(prefix="pyg_bench.")
                graph = os.path.join(tmpdir, spec + ".strata")
                subprocess.run([strata, "convert", "-i", spec, "-o", graph], check=True, stdout=sys.stderr)
            else:
                raise BenchError(f"data.dataset = {spec!r}: give --graph FILE.strata (`strata convert -i {spec} -o FILE`)")
        t0 = time.perf_counter()
        g = read_strata(graph)
        load_s = time.perf_counter() - t0
        if g["labels"] is None or g["num_classes"] < 2 or len(g["train"]) == 0:
            raise BenchError(f"{graph}: needs labels, >= 2 classes and training nodes")
        dev = torch.device(args.device)
        meta = {
            "dataset": g["name"], "graph_file": os.path.abspath(graph), "nodes": g["num_nodes"],
            "edges": g["nnz"], "features": g["feat_dim"], "classes": g["num_classes"],
            "device": str(dev), "device_name": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
            "torch_version": torch.__version__, "pyg_version": getattr(torch_geometric, "__version__", "?"),
            "matmul_fp32": matmul_precision(torch), "load_time_s": load_s,
        }
        layouts = args.layout or ["edge_index"]
        edges_cache, feats_cache = {}, {}
        for cfg in cfgs:
            sym = bool(cfg["data"]["symmetrize"])
            norm = cfg["data"]["feature_norm"]
            if sym not in edges_cache:
                t0 = time.perf_counter()
                edges_cache[sym] = prepare_edges(torch, g, sym, args.device)
                meta_prep = time.perf_counter() - t0
            else:
                meta_prep = 0.0
            if norm not in feats_cache:
                feats_cache[norm] = prepare_features(torch, g, norm)
            for layout in layouts:
                rec = run_one(torch, pyg_nn, cfg, g, edges_cache[sym], feats_cache[norm], layout, args.device,
                              args.warmup, dict(meta, symmetrize=sym, feature_norm=norm, prep_time_s=meta_prep))
                line = json.dumps(rec)
                print(line, flush=True)
                if args.jsonl:
                    with open(args.jsonl, "a") as f:
                        f.write(line + "\n")
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"pyg_bench: {e}", file=sys.stderr)
        sys.exit(2)
    except subprocess.CalledProcessError as e:
        print(f"pyg_bench: {e}", file=sys.stderr)
        sys.exit(2)
