#!/usr/bin/env bash
# The HyScale performance model against measurement (issue 13): GraphSAGE
# on R-MAT 2^20 and coauthor-physics, the CPU trainer alone on the cpu
# backend, calibrated in process (hybrid.calibrate), 2 epochs; prints
# the table of docs/performance.md, one row per run: each stage's median
# step measured / predicted (the prediction's error), the epoch's wall
# time against the model's, the calibrated machine, the load average
# before the run and the run's peak RSS. Each run holds the shared
# big-memory lock (peak RSS 6-12 GB).
#
#   scripts/hyscale/model-table.sh [reps]          (default 2 runs per graph)
#
# BIN (default bin/strata), OUT (default /tmp/hyscale-model), DATA (default
# /work/shared/data), LOCK (default /tmp/strata-bigmem.lock); EXTRA are
# more --set arguments (e.g. EXTRA='--set hybrid.paper_model=true');
# GRAPHS (space-separated datasets) replaces the two graphs, e.g. for a
# dry run on small ones (LOCK=/tmp/some-other.lock then: they need no
# big-memory lock).
set -euo pipefail
BIN=${BIN:-bin/strata}
OUT=${OUT:-/tmp/hyscale-model}
DATA=${DATA:-/work/shared/data}
LOCK=${LOCK:-/tmp/strata-bigmem.lock}
reps=${1:-2}
mkdir -p "$OUT"
graphs=("rmat-20-16-128-16-0@random-1000-500-seed0" "$DATA/coauthor-physics@random-1000-500-seed0")
names=(rmat20 physics)
if [ -n "${GRAPHS:-}" ]; then
  read -r -a graphs <<<"$GRAPHS"
  names=()
  for g in "${graphs[@]}"; do names+=("$(basename "${g%%@*}")"); done
fi
files=()
for r in $(seq 1 "$reps"); do
  for i in "${!graphs[@]}"; do
    f="$OUT/${names[$i]}-$r.json"
    # shellcheck disable=SC2086
    flock "$LOCK" bash -c 'cat /proc/loadavg >"$1.load"; shift; exec "$@"' _ "$f" \
      /usr/bin/time -f "%e s %M KB" -o "$f.time" "$BIN" train -c configs/hybrid-sage-physics.toml \
      --set data.dataset="\"${graphs[$i]}\"" --set train.epochs=2 --set train.eval_every=0 \
      --set hybrid.calibrate=true --set output.json=true --set output.progress=off ${EXTRA:-} >"$f" 2>"$f.err"
    cat /proc/loadavg >"$f.loadafter"
    files+=("$f")
  done
done
python3 - "${files[@]}" <<'PY'
import json, sys
stages = [("sample", "sampling"), ("load", "loading (Eq. 7)"), ("cpu_bind", "CPU bind"), ("cpu_train", "CPU trainer")]
print("| run | load avg (1 min, before / after) | machine (calibrated) | " + " | ".join(s[1] for s in stages) + " | epoch wall / predicted | peak RSS |")
print("|---|---|---|" + "---|" * len(stages) + "---|---|")
for f in sys.argv[1:]:
    h = json.load(open(f))["hybrid"]
    load = open(f + ".load").read().split()[0] + " / " + open(f + ".loadafter").read().split()[0]
    t = open(f + ".time").read().split()
    rss = f"{float(t[2]) / 1e6:.1f} GB"
    m = ", ".join(f"{h['machine_' + k]:.3g} {u}" for k, u in [("cpu_gflops", "GFLOP/s"), ("cpu_gbps", "GB/s"), ("agg_gbps", "agg GB/s"), ("sample_meps", "M edges/s"), ("dropout_meps", "dropout M/s"), ("bind_meps", "bind M edges/s"), ("touch_gbps", "touch GB/s")] if "machine_" + k in h)
    cells = []
    for k, _ in stages:
        ms, ps = h[k + "_med_s"], h[k + "_med_s_pred"]
        cells.append(f"{ms:.4g} / {ps:.4g} ({100 * (ps / ms - 1):+.0f}%)")
    ew, ep = h["epoch_wall_s"], h["epoch_pred_s"]
    name = f.rsplit("/", 1)[-1][:-5] + f" ({int(h['steps'])} steps)"
    print(f"| {name} | {load} | {m} | " + " | ".join(cells) + f" | {ew:.3g} / {ep:.3g} ({100 * (ep / ew - 1):+.0f}%) | {rss} |")
PY
