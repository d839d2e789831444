#!/usr/bin/env bash
# Does a CPU trainer add throughput with per-trainer batches (issue 33)?
# hybrid.batching = "per-trainer", DRM off, two-stage prefetch, GraphSAGE
# on amazon-computers (2000 training nodes), 256 seeds per simulated
# device: devices only, then a CPU trainer on shares of the step. On
# simulated devices the devices' stages take their simulated times and
# the CPU's stages (sampling, loading, the CPU trainer's bind and
# training) this machine's wall clock; the throughput is Eq. 5 over Eq. 6
# of those measured stage times (hybrid.edges / epoch_pipelined_measured_s),
# the last of 3 epochs, median of REPS runs. The wall clock's MTEPS is
# printed too: on sim it also counts the simulated devices' kernels,
# which run on this machine's cores.
#
#   scripts/hyscale/per-trainer-throughput.sh [reps]      (default 3)
#
# BIN (default bin/strata), DATA (default /work/shared/data), DEVICES
# (default 1; empty for a custom topology in EXTRA), SHARES (default "0 0.05 0.1 0.2"); EXTRA are more --set
# arguments, e.g. EXTRA='--set devices.peak_gflops=600 --set
# devices.mem_gbps=77' for U250-like devices.
set -euo pipefail
# shellcheck disable=SC2086
BIN=${BIN:-bin/strata}
DATA=${DATA:-/work/shared/data}
DEVICES=${DEVICES-1}
SHARES=${SHARES:-0 0.05 0.1 0.2}
reps=${1:-3}
printf 'cpu_share\tpipelined_mteps(median)\twall_mteps(median)\tpredicted_mteps\truns\n'
for share in $SHARES; do
  trainers=1
  [ "$share" = 0 ] && trainers=0
  vals=()
  for _ in $(seq 1 "$reps"); do
    line=$("$BIN" train -c configs/sage-computers-minibatch.toml \
      --set data.dataset="\"$DATA/amazon-computers@random-200-100-seed0\"" \
      --set train.mode='"hybrid"' --set train.backend='"sim"' ${DEVICES:+--set devices.count="$DEVICES"} \
      --set train.batch_size=256 --set train.epochs=3 --set train.eval_every=0 \
      --set hybrid.batching='"per-trainer"' --set hybrid.cpu_trainers="$trainers" --set hybrid.cpu_share="$share" \
      --set hybrid.drm='"off"' --set hybrid.prefetch=true --set output.json=true --set output.progress='"off"' ${EXTRA:-} 2>/dev/null | grep '^{')
    vals+=("$(python3 -c 'import json,sys; h=json.loads(sys.argv[1])["hybrid"]; print(h["edges"]/h["epoch_pipelined_measured_s"]/1e6, h["measured_mteps"], h["predicted_mteps"])' "$line")")
  done
  printf '%s\n' "${vals[@]}" | python3 -c '
import sys, statistics as s
rows = [list(map(float, l.split())) for l in sys.stdin if l.strip()]
col = lambda i: s.median(r[i] for r in rows)
print("'"$share"'\t%.2f\t%.2f\t%.2f\t%d" % (col(0), col(1), col(2), len(rows)))'
done
