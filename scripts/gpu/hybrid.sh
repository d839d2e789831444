#!/usr/bin/env bash
# hybrid.sh: strategy.hybrid (docs/hyscale.md) on a real GPU: the device
# trainer is the cuda backend, the CPU trainers are the cpu backend in the
# same process. From the repository root on the GPU machine, after
# `make gpu-bundle` here:
#
#   bash scripts/gpu/hybrid.sh
#
# Runs, each a `strata train` of configs/sage-physics-minibatch.toml's model
# (GraphSAGE, fanouts 10/25, batch 1024) on DATASET, results as JSON lines
# in $OUT/hybrid-NAME.json (stderr in .err, per-epoch CSV in .csv):
#   minibatch  train.mode = "minibatch" on the GPU, 1 epoch, no dropout
#   fixed      hybrid, DRM off, cpu_share 0.5, 1 epoch, no dropout: the
#              same global batches as minibatch, so the final loss agrees
#              to rounding (TestHybridEqualsMinibatch on sim and cpu)
#   devonly    hybrid with every sample on the GPU (cpu_share 0), EPOCHS
#   drm-bad    hybrid from a bad split (cpu_share 0.9), DRM measured, EPOCHS
#   drm-pred   the same with DRM predicted (the performance model)
# and prints a summary table (epoch time, measured/predicted MTEPS, split).
#
# Settings: OUT=./out DATASET=rmat-18-16-128-16-0 EPOCHS=3 RUN_TIMEOUT=150
set -uo pipefail
ROOT=$(pwd)
OUT=${OUT:-$ROOT/out}
DATASET=${DATASET:-rmat-18-16-128-16-0}
EPOCHS=${EPOCHS:-3}
RUN_TIMEOUT=${RUN_TIMEOUT:-150}
mkdir -p "$OUT"
eval "$(bash "$ROOT/build/gpu/run-gpu.sh" env)" || exit 1
base=(-c "$ROOT/configs/sage-physics-minibatch.toml" --set data.dataset="\"$DATASET\""
	--set train.backend='"cuda"' --set train.eval_every=0 --set output.json=true --set output.progress='"off"')
run() { # name overrides...
	local name=$1
	shift
	timeout -k 10 "$RUN_TIMEOUT" "$STRATA" train "${base[@]}" --set output.csv="\"$OUT/hybrid-$name.csv\"" "$@" \
		>"$OUT/hybrid-$name.json" 2>"$OUT/hybrid-$name.err"
	echo "== $name: exit $?"
	tail -n 3 "$OUT/hybrid-$name.err"
}
nodrop=(--set model.dropout=0 --set model.input_dropout=0)
run minibatch "${nodrop[@]}" --set train.epochs=1
hy=(--set train.mode='"hybrid"')
run fixed "${hy[@]}" "${nodrop[@]}" --set train.epochs=1 --set hybrid.cpu_share=0.5 --set hybrid.drm='"off"'
run devonly "${hy[@]}" --set train.epochs="$EPOCHS" --set hybrid.cpu_share=0 --set hybrid.drm='"off"'
run drm-bad "${hy[@]}" --set train.epochs="$EPOCHS" --set hybrid.cpu_share=0.9 --set hybrid.drm='"measured"'
run drm-pred "${hy[@]}" --set train.epochs="$EPOCHS" --set hybrid.cpu_share=0.9 --set hybrid.drm='"predicted"'
"${PYTHON:-python3}" - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print("| run | device | epochs | final loss | test acc | epoch s (median) | MTEPS measured | MTEPS predicted | cpu_share at end | adjustments |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in ["minibatch", "fixed", "devonly", "drm-bad", "drm-pred"]:
    try:
        r = json.loads(open(f"{out}/hybrid-{name}.json").read().strip().splitlines()[-1])
    except Exception as e:
        print(f"| {name} | no result ({e}) |")
        continue
    h = r.get("hybrid", {})
    print(f"| {name} | {r.get('device','')} | {r['epochs']} | {r['final_loss']:.9g} | {r['test_acc']:.4f} | {r['epoch_time_median_s']:.3f} | "
          f"{h.get('measured_mteps', 0):.1f} | {h.get('predicted_mteps', 0):.1f} | {h.get('cpu_share', '')} | {h.get('adjustments', '')} |")
PY
