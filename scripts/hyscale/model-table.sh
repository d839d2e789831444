#!/usr/bin/env bash
# The HyScale performance model against measurement (issue 13): GraphSAGE
# on R-MAT 2^20 and coauthor-physics, the CPU trainer alone on the cpu
# backend, calibrated in process (hybrid.calibrate), 2 epochs; prints
# the table of docs/performance/hyscale.md, one row per run: each stage's median
# step measured / predicted (the prediction's error; predicted with the
# mean of the calibrations before and after the epoch, and in brackets
# the error with the one before it alone), the epoch's wall time against
# the model's, the calibrated machine, the load average before and after
# the run and the run's peak RSS. Each run holds the shared
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
rates = [("cpu_gflops", "GFLOP/s"), ("cpu_gbps", "GB/s"), ("agg_gbps", "agg GB/s"), ("sample_meps", "M edges/s"),
         ("dropout_meps", "dropout M/s"), ("bind_meps", "bind M edges/s"), ("touch_gbps", "touch GB/s")]
err = lambda m, p: f"{100 * (p / m - 1):+.0f}%"
print("Cells: measured / predicted seconds (error), the prediction with the mean of the calibrations before and")
print("after the epoch; in brackets the error with the calibration before the epoch alone (what DRM uses).\n")
print("| run | load avg (1 min, before / after) | machine before → after the epoch | " + " | ".join(s[1] for s in stages) + " | epoch wall / predicted | peak RSS |")
print("|---|---|---|" + "---|" * len(stages) + "---|---|")
for f in sys.argv[1:]:
    h = json.load(open(f))["hybrid"]
    br = "epoch_pred_bracketed_s" in h
    load = open(f + ".load").read().split()[0] + " / " + open(f + ".loadafter").read().split()[0]
    t = open(f + ".time").read().split()
    rss = f"{float(t[2]) / 1e6:.1f} GB"
    m = ", ".join(f"{h['machine_' + k]:.3g}" + (f"→{h['machine_after_' + k]:.3g}" if br else "") + f" {u}" for k, u in rates if "machine_" + k in h)
    cells = []
    for k, _ in stages:
        ms, pre = h[k + "_med_s"], h[k + "_med_s_pred"]
        if br:
            p = h[k + "_med_s_pred_bracketed"]
            cells.append(f"{ms:.4g} / {p:.4g} ({err(ms, p)}) [{err(ms, pre)}]")
        else:
            cells.append(f"{ms:.4g} / {pre:.4g} ({err(ms, pre)})")
    ew, ep = h["epoch_wall_s"], h["epoch_pred_s"]
    epoch = f"{ew:.3g} / {h['epoch_pred_bracketed_s']:.3g} ({err(ew, h['epoch_pred_bracketed_s'])}) [{err(ew, ep)}]" if br else f"{ew:.3g} / {ep:.3g} ({err(ew, ep)})"
    name = f.rsplit("/", 1)[-1][:-5] + f" ({int(h['steps'])} steps)"
    print(f"| {name} | {load} | {m} | " + " | ".join(cells) + f" | {epoch} | {rss} |")
PY
