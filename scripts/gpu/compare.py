#!/usr/bin/env python3
"""compare.py: join strata's and PyG's runs into the speed table.

    compare.py add-strata --jsonl OUT/compare.jsonl --dataset D --model M \\
        --config C --stdout S.out [--rc RC] [--stderr S.err]
        Appends strata's result (the last JSON line `strata train` printed
        with output.json = true) as {"impl": "strata", ...}; a failed run
        (no JSON, or a non-zero RC) is appended with "error" set.
    compare.py report --jsonl OUT/compare.jsonl [--jsonl MORE.jsonl ...] \\
        [--bench OUT/bench.txt] [--csv OUT/compare.csv] [--md OUT/compare.md]
        One row per (dataset, model): strata's and PyG's median epoch time
        (after the warm-up epochs), the ratio strata / PyG (the faster PyG
        layout; goal <= 1.0), the edge counts and parameter counts both
        sides report (they must agree) and peak device memory. With
        --bench, the SpMM benchmarks' bandwidth against the device-to-device
        copy's (lines of `go test -bench` output with GB/s metrics).

pyg_bench.py appends its own lines ({"impl": "pyg", ...}) to the same file.
A later line for the same (impl, dataset, model, layout) replaces an
earlier one.
"""

import argparse
import csv
import io
import json
import re
import sys

GiB = float(1 << 30)


def last_json_line(text):
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def cmd_add_strata(a):
    out = open(a.stdout, errors="replace").read() if a.stdout else ""
    res = last_json_line(out)
    err = None
    if a.rc != 0 or res is None:
        tail = ""
        if a.stderr:
            lines = [ln for ln in open(a.stderr, errors="replace").read().splitlines() if ln.strip()]
            tail = lines[-1] if lines else ""
        why = {124: "timed out", 137: "killed (time limit or memory)", 130: "interrupted"}.get(a.rc, f"exit {a.rc}")
        err = f"{why}: {tail}" if tail else why
        if res is None and a.rc == 0:
            err = "no JSON result on stdout (output.json = true?)"
    rec = {"impl": "strata", "dataset": a.dataset, "model": a.model, "config": a.config}
    if res:
        rec.update(res)
        rec["dataset"], rec["model"] = res.get("dataset") or a.dataset, res.get("model") or a.model
    rec["impl"] = "strata"
    rec["error"] = err
    if a.graph:
        rec["graph_file"] = a.graph
    with open(a.jsonl, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(f"compare: strata {rec['model']} on {rec['dataset']}: "
          + (f"{rec.get('epoch_time_median_s', 0):.4g} s/epoch" if not err else f"FAILED ({err})"))
    return 0


def load(path):
    recs = {}
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                r = json.loads(line)
            except ValueError:
                print(f"compare: {path}:{n}: not JSON, skipped", file=sys.stderr)
                continue
            key = (r.get("impl"), r.get("dataset"), r.get("model"), r.get("layout", ""))
            recs[key] = r
    return list(recs.values())


def strata_peak(r):
    """Peak device bytes of a strata result: the largest non-host tier."""
    tiers = r.get("peak_tier_bytes") or {}
    dev = {k: v for k, v in tiers.items() if k != "host"}
    return max(dev.values()) if dev else None


def fmt_s(v):
    return "" if v is None else f"{v:.4g}"


def fmt_gib(v):
    return "" if v is None else f"{v / GiB:.2f}"


def rows_of(recs):
    keys = []
    for r in recs:
        k = (r.get("dataset"), r.get("model"))
        if k not in keys:
            keys.append(k)
    order = {"gcn": 0, "sage": 1, "gat": 2}
    keys.sort(key=lambda k: (str(k[0]), order.get(k[1], 9), str(k[1])))
    rows = []
    for ds, model in keys:
        s = [r for r in recs if r.get("impl") == "strata" and r.get("dataset") == ds and r.get("model") == model]
        p = [r for r in recs if r.get("impl") == "pyg" and r.get("dataset") == ds and r.get("model") == model]
        s = s[-1] if s else None
        pyg = {r.get("layout", "edge_index"): r for r in p}
        ok = [r for r in pyg.values() if not r.get("error") and r.get("epoch_time_median_s")]
        best = min(ok, key=lambda r: r["epoch_time_median_s"]) if ok else None
        row = {"dataset": ds, "model": model}
        row["nodes"] = (s or {}).get("nodes") or (p[0].get("nodes") if p else None)
        row["edges_strata"] = s.get("edges") if s else None
        row["edges_pyg"] = p[0].get("edges") if p else None
        row["edges_sym_pyg"] = p[0].get("edges_sym") if p else None
        row["edges_trained_pyg"] = p[0].get("edges_trained") if p else None
        # strata may report the aggregated edge count itself (a later field).
        row["edges_trained_strata"] = next((s.get(k) for k in ("edges_trained", "train_edges") if s and k in s), None)
        row["params_strata"] = s.get("params") if s else None
        row["params_pyg"] = next((r.get("params") for r in p if r.get("params")), None)
        row["strata_s"] = s.get("epoch_time_median_s") if s and not s.get("error") else None
        row["strata_error"] = s.get("error") if s else "no strata run"
        row["strata_backend"] = s.get("backend") if s else None
        row["strata_epochs"] = s.get("epochs") if s else None
        row["strata_peak"] = strata_peak(s) if s else None
        row["strata_test_acc"] = s.get("test_acc") if s else None
        for lay in ("edge_index", "csr"):
            r = pyg.get(lay)
            row[f"pyg_{lay}_s"] = r.get("epoch_time_median_s") if r and not r.get("error") else None
            row[f"pyg_{lay}_error"] = r.get("error") if r else None
        row["pyg_best_layout"] = best.get("layout") if best else None
        row["pyg_s"] = best.get("epoch_time_median_s") if best else None
        row["pyg_peak"] = best.get("peak_bytes") if best else max((r.get("peak_bytes") or 0 for r in p), default=None)
        row["pyg_epochs"] = best.get("epochs") if best else None
        row["pyg_test_acc"] = best.get("test_acc") if best else None
        row["pyg_error"] = None if best else ("; ".join(sorted({str(r.get("error")) for r in p})) if p else "no PyG run")
        row["ratio"] = row["strata_s"] / row["pyg_s"] if row["strata_s"] and row["pyg_s"] else None
        checks = []
        if row["edges_strata"] is not None and row["edges_pyg"] is not None and row["edges_strata"] != row["edges_pyg"]:
            checks.append("EDGES DIFFER")
        if row["edges_trained_strata"] is not None and row["edges_trained_pyg"] is not None \
                and row["edges_trained_strata"] != row["edges_trained_pyg"]:
            checks.append("TRAINED EDGES DIFFER")
        if row["params_strata"] and row["params_pyg"] and row["params_strata"] != row["params_pyg"]:
            checks.append("PARAMS DIFFER")
        if row["strata_epochs"] and row["pyg_epochs"] and row["strata_epochs"] != row["pyg_epochs"]:
            checks.append("EPOCHS DIFFER")
        row["checks"] = ", ".join(checks) or ("ok" if s and p else "")
        rows.append(row)
    return rows


def v(x):
    return "" if x is None else str(x)


def short_err(e):
    if not e:
        return ""
    if e.startswith("skipped"):
        return "n/a"
    return "OOM" if e.startswith("oom") else "failed: " + e[:80]


def verdict(row):
    if row["ratio"] is not None:
        return "yes" if row["ratio"] <= 1.0 else "no"
    if row["strata_s"] and not row["pyg_s"] and row["pyg_error"] and "oom" in row["pyg_error"]:
        return "yes (PyG OOM)"
    return ""


def parse_bench(path):
    """Benchmark lines of `go test -bench`: name, iterations, metrics."""
    out = []
    pat = re.compile(r"^(Benchmark\S+)\s+(\d+)\s+(.*)$")
    for line in open(path, errors="replace"):
        m = pat.match(line.strip())
        if not m:
            continue
        name = re.sub(r"-\d+$", "", m.group(1))
        toks = m.group(3).split()
        metrics = {}
        for i in range(0, len(toks) - 1, 2):
            try:
                metrics[toks[i + 1]] = float(toks[i])
            except ValueError:
                break
        out.append({"name": name, "n": int(m.group(2)), "metrics": metrics})
    return out


def bench_md(path):
    try:
        rows = parse_bench(path)
    except OSError as e:
        return [f"(no benchmark results: {e})"]
    if not rows:
        return ["(no benchmark lines in " + path + ")"]
    gbs = [r for r in rows if "GB/s" in r["metrics"]]
    copies = [r["metrics"]["GB/s"] for r in gbs if "copy" in r["name"].lower()]
    ref = max(copies) if copies else None
    lines = ["| benchmark | iterations | time/op | GB/s | of copy bandwidth | other |",
             "|---|---:|---:|---:|---:|---|"]
    for r in rows:
        ns = r["metrics"].get("ns/op")
        t = "" if ns is None else (f"{ns / 1e6:.3f} ms" if ns >= 1e5 else f"{ns / 1e3:.1f} µs")
        g = r["metrics"].get("GB/s")
        share = f"{100 * g / ref:.0f}%" if g is not None and ref else ""
        other = ", ".join(f"{v:.4g} {k}" for k, v in r["metrics"].items() if k not in ("ns/op", "GB/s"))
        lines.append(f"| {r['name']} | {r['n']} | {t} | {'' if g is None else f'{g:.0f}'} | {share} | {other} |")
    if ref:
        lines.append("")
        lines.append(f"Copy reference: {ref:.0f} GB/s (device-to-device copy, bytes read + written, "
                     "as the benchmark reports it).")
    return lines


CSV_COLS = ["dataset", "model", "nodes", "edges_strata", "edges_pyg", "edges_sym_pyg", "edges_trained_pyg",
            "edges_trained_strata", "params_strata", "params_pyg", "strata_backend", "strata_epochs", "pyg_epochs",
            "strata_s", "pyg_edge_index_s", "pyg_csr_s", "pyg_best_layout", "pyg_s", "ratio", "strata_peak",
            "pyg_peak", "strata_test_acc", "pyg_test_acc", "strata_error", "pyg_edge_index_error",
            "pyg_csr_error", "checks"]


def cmd_report(a):
    recs = []
    for path in a.jsonl:  # several files (runs of several device calls) merge
        try:
            recs.extend(load(path))
        except OSError as e:
            print(f"compare: {e}", file=sys.stderr)
    recs = list({(r.get("impl"), r.get("dataset"), r.get("model"), r.get("layout", "")): r for r in recs}.values())
    rows = rows_of(recs)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=CSV_COLS, extrasaction="ignore")
            w.writeheader()
            for r in rows:
                w.writerow(r)
    md = io.StringIO()
    dev = next((r.get("device_name") for r in recs if r.get("device_name")), "?")
    pyg_v = next((f"PyG {r.get('pyg_version')}, torch {r.get('torch_version')}" for r in recs
                  if r.get("impl") == "pyg"), "no PyG run")
    strata_v = next((r.get("version") for r in recs if r.get("impl") == "strata" and r.get("version")), "?")
    md.write("# strata vs PyG: full-graph training, median epoch time\n\n")
    md.write(f"Device: {dev}; strata {strata_v}; {pyg_v}. Median over the epochs after the first 2 "
             "(warm-up), wall clock of forward + loss + backward + Adam step. Ratio = strata / PyG "
             "(the faster PyG input layout); goal <= 1.0.\n\n")
    md.write("| graph | model | nodes | edges (strata / PyG) | edges aggregated (PyG) | params (strata / PyG) "
             "| strata s/epoch | PyG s/epoch (edge_index) | PyG s/epoch (csr) | strata / PyG | <= 1.0 "
             "| strata peak GiB | PyG peak GiB | checks |\n")
    md.write("|---|---|---:|---|---:|---|---:|---:|---:|---:|---|---:|---:|---|\n")
    for r in rows:
        st = fmt_s(r["strata_s"]) or f"failed: {str(r['strata_error'])[:120]}"
        pe = fmt_s(r["pyg_edge_index_s"]) or short_err(r["pyg_edge_index_error"])
        pc = fmt_s(r["pyg_csr_s"]) or short_err(r["pyg_csr_error"])
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else ""
        md.write(f"| {r['dataset']} | {r['model']} | {v(r['nodes'])} | {v(r['edges_strata'])} / {v(r['edges_pyg'])} "
                 f"| {v(r['edges_trained_pyg'])} | {v(r['params_strata'])} / {v(r['params_pyg'])} | {st} | {pe} | {pc} "
                 f"| {ratio} | {verdict(r)} | {fmt_gib(r['strata_peak'])} | {fmt_gib(r['pyg_peak'])} "
                 f"| {r['checks']} |\n")
    if a.bench:
        md.write("\n## SpMM bandwidth on the device\n\n")
        md.write("\n".join(bench_md(a.bench)) + "\n")
    text = md.getvalue()
    if a.md:
        with open(a.md, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("add-strata", help="append a strata run's result")
    s.add_argument("--jsonl", required=True)
    s.add_argument("--dataset", required=True)
    s.add_argument("--model", required=True)
    s.add_argument("--config", default="")
    s.add_argument("--graph", default="")
    s.add_argument("--stdout", required=True)
    s.add_argument("--stderr")
    s.add_argument("--rc", type=int, default=0)
    r = sub.add_parser("report", help="write the table")
    r.add_argument("--jsonl", required=True, action="append", help="results (repeatable: later files win)")
    r.add_argument("--bench")
    r.add_argument("--csv")
    r.add_argument("--md")
    a = ap.parse_args(argv)
    return cmd_add_strata(a) if a.cmd == "add-strata" else cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
