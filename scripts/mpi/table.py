#!/usr/bin/env python3
"""Print the docs/performance/mpi.md table of scripts/mpi/acceptance.sh's runs.

usage: table.py OUT

Reads OUT/results.jsonl, OUT/<run>.model and OUT/<run>.rss and prints one
Markdown row per run: the largest parameter difference to the 1-rank run
of the case (relative to the tensor's largest magnitude), test accuracy,
loss, the bytes all ranks sent in the epoch by kind against the
partition's prediction of them (predicted_by_purpose), the slowest rank's
median epoch time and the largest peak RSS of a rank.
"""
import importlib.util
import json
import os
import sys

spec = importlib.util.spec_from_file_location("cmp", os.path.join(os.path.dirname(__file__), "compare-models.py"))
cmp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cmp)


def diff(a, b):
    return max(max(abs(x - y) for x, y in zip(b[k], v)) / max(max(map(abs, v)), 1e-12) for k, v in a.items())


def main():
    out = sys.argv[1]
    runs = [json.loads(line) for line in open(os.path.join(out, "results.jsonl"))]
    print("| case | ranks | partition | max param diff vs 1 rank | test acc | loss | halo / features B sent | predicted B | topology + requests B | gradients B | epoch s (slowest rank) | peak RSS a rank |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    refs = {}
    for r in runs:
        name = f"{r['case']}-{r['ranks']}-{r['partition']}"
        res = r["result"]
        model = cmp.load(os.path.join(out, name + ".model"))
        if r["ranks"] == 1:
            refs[r["case"]] = model
        d = "—" if r["ranks"] == 1 or r["case"] not in refs else f"{diff(refs[r['case']], model):.1e}"
        sent, pred = {}, {}
        for s in res.get(res.get("mode"), {}).get("ranks", []):
            for k, v in s.get("sent_by_purpose", {}).items():
                sent[k] = sent.get(k, 0) + v
            for k, v in s.get("predicted_by_purpose", {}).items():
                pred[k] = pred.get(k, 0) + v
        data = sum(v for k, v in sent.items() if k.startswith("halo") or k == "features")
        topo = sent.get("topology", 0) + sent.get("requests", 0)
        epoch = max([s["epoch_time_median_s"] for s in res.get(res.get("mode"), {}).get("ranks", [])] or [res["epoch_time_median_s"]])
        rss = 0
        try:
            rss = max(int(x) for x in open(os.path.join(out, name + ".rss")) if x.strip().isdigit())
        except OSError:
            pass
        part = "—" if r["ranks"] == 1 else r["partition"]
        print(f"| {r['case']} | {r['ranks']} | {part} | {d} | {res['test_acc']:.4f} | {res['final_loss']:.9f} | {data:,} | {sum(pred.values()):,} | {topo:,} | {sent.get('gradients', 0):,} | {epoch:.3f} | {rss / 1024**2:.2f} GiB |")


if __name__ == "__main__":
    main()
