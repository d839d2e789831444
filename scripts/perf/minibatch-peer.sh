#!/bin/bash
# minibatch-peer.sh: mini-batch GraphSAGE-mean against the PyTorch peer
# ../shared/peers/minibatch.py, run back to back on the same machine and
# the same graph: test accuracy, the median epoch time, the evaluation
# time and the peak RSS of each side, per dataset and seed, then the
# medians and the ratios strata / peer. Run it on a quiet machine.
#
#   scripts/perf/minibatch-peer.sh [BIN] [SEEDS] [DATASETS...]
#
#   BIN       the strata binary (default ./bin/strata)
#   SEEDS     seeds 0 .. SEEDS-1 (default 3)
#   DATASETS  coauthor-physics rmat-20 (default); a name under ../shared/data;
#             rmat-<scale>[-...]: the peer's R-MAT graph (data.py writes it
#             in the OGB raw layout, which strata reads as it is); or a
#             strata stand-in synth:<name>[:<divisor>[:<seed>]] (e.g.
#             synth:ogbn-products, synth:ogbn-products:4 for a quarter),
#             written once in the OGB raw layout by `strata convert --to ogb`
#             into $CACHE/<name with : as -> and reused while that exists
#             (delete it after changing the generator)
#
# Before the first seed of each dataset the peer parses it once (data.py
# info), so that its text parse, cached as .npy, is in no measured run.
#
# Environment: PEERS (the peer harness, default /work/shared/peers), DATA
# (default /work/shared/data), CACHE (the converted stand-ins, default
# /tmp/strata-ogb-cache), PY (default /usr/bin/python3), OUT (the raw
# JSON lines, default /tmp/minibatch-peer.jsonl), FANOUTS (default 10,10:
# seeds first, the peer's order; strata gets them reversed), BATCH
# (default 1024), HIDDEN (default 128), EPOCHS (default 5), EXTRA (more
# arguments of strata train; default: layer-wise evaluation, as the peer's,
# --set minibatch.inference=layerwise).
#
# Commands: strata `train --set data.dataset=D --set train.mode=minibatch
# --set model.name=sage --set model.hidden=H --set sampler.name=uniform
# --set sampler.fanouts=[F2,F1] --set minibatch.batch_size=B --set
# train.epochs=E --set train.lr=0.003 --set train.weight_decay=0 --set
# model.dropout=0.5 --set model.input_dropout=0 --set train.threads=2
# --set train.seed=S` (the peer's hyperparameters); the peer
# `minibatch.py --dataset D --fanouts F1,F2 --batch-size B --hidden H
# --epochs E --threads 2 --seed S`. strata's median epoch is over all
# epochs, the peer's excludes its first (--warmup 1); each side evaluates
# once per epoch on every node's full neighbourhood, timed apart.
set -euo pipefail
BIN=${1:-./bin/strata}
SEEDS=${2:-3}
shift $(( $# > 2 ? 2 : $# )) || true
DATASETS=("$@")
[ ${#DATASETS[@]} -eq 0 ] && DATASETS=(coauthor-physics rmat-20)
PEERS=${PEERS:-/work/shared/peers}
DATA=${DATA:-/work/shared/data}
PY=${PY:-/usr/bin/python3}
CACHE=${CACHE:-/tmp/strata-ogb-cache}
OUT=${OUT:-/tmp/minibatch-peer.jsonl}
FANOUTS=${FANOUTS:-10,10}
BATCH=${BATCH:-1024}
HIDDEN=${HIDDEN:-128}
EPOCHS=${EPOCHS:-5}
read -r -a EXTRA_ARGS <<< "${EXTRA:---set minibatch.inference=layerwise}"
REVERSED=$(echo "$FANOUTS" | tr ',' '\n' | tac | paste -sd, -)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
: > "$OUT"
for ds in "${DATASETS[@]}"; do
	spec="$DATA/$ds"
	case "$ds" in
	rmat-*) spec=$(cd "$PEERS" && "$PY" -c 'import data, sys; print(data._resolve(sys.argv[1]))' "$ds") ;;
	synth:*)
		spec="$CACHE/${ds//:/-}"
		if [ ! -d "$spec" ]; then
			mkdir -p "$CACHE"
			"$BIN" convert --to ogb -i "$ds" -o "$spec" >&2
		fi
		;;
	esac
	(cd "$PEERS" && "$PY" data.py info "$spec" >&2)
	for ((s = 0; s < SEEDS; s++)); do
		/usr/bin/time -f '%M' -o "$TMP/rss" "$BIN" train --set data.dataset="$spec" --set train.mode=minibatch \
			--set model.name=sage --set model.hidden="$HIDDEN" --set sampler.name=uniform --set "sampler.fanouts=[$REVERSED]" \
			--set minibatch.batch_size="$BATCH" --set train.epochs="$EPOCHS" --set train.lr=0.003 --set train.weight_decay=0 \
			--set model.dropout=0.5 --set model.input_dropout=0 --set train.threads=2 --set train.seed="$s" \
			--set output.progress=off --set output.json=true "${EXTRA_ARGS[@]}" > "$TMP/out"
		"$PY" -c 'import json,sys; r=json.loads(open(sys.argv[3]).readlines()[-1]); rss=int(open(sys.argv[4]).read().split()[-1]); print(json.dumps(dict(side="strata", dataset=sys.argv[1], seed=int(sys.argv[2]), acc=r["test_acc"], epoch_s=r["epoch_time_median_s"], eval_s=r["eval_time_median_s"], rss_mib=rss/1024)))' "$ds" "$s" "$TMP/out" "$TMP/rss" >> "$OUT"
		(cd "$PEERS" && /usr/bin/time -f '%M' -o "$TMP/rss" "$PY" minibatch.py --dataset "$spec" --fanouts "$FANOUTS" --batch-size "$BATCH" \
			--hidden "$HIDDEN" --epochs "$EPOCHS" --threads 2 --seed "$s" 2>/dev/null) > "$TMP/out"
		"$PY" -c 'import json,sys; r=json.loads(open(sys.argv[3]).readlines()[-1]); rss=int(open(sys.argv[4]).read().split()[-1]); print(json.dumps(dict(side="peer", dataset=sys.argv[1], seed=int(sys.argv[2]), acc=r["test_acc"], epoch_s=r["epoch_time_median_s"], eval_s=r["eval_median_s"], rss_mib=rss/1024)))' "$ds" "$s" "$TMP/out" "$TMP/rss" >> "$OUT"
		tail -2 "$OUT"
	done
done
"$PY" - "$OUT" <<'PY'
import json, statistics as st, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for ds in dict.fromkeys(r["dataset"] for r in rows):
    m = {side: [r for r in rows if r["dataset"] == ds and r["side"] == side] for side in ("strata", "peer")}
    med = lambda side, k: st.median(r[k] for r in m[side])
    ratio = lambda k: med("strata", k) / med("peer", k)
    print(f"{ds}: test accuracy {med('strata','acc'):.4f} vs {med('peer','acc'):.4f}, "
          f"epoch {med('strata','epoch_s'):.3f} / {med('peer','epoch_s'):.3f} s = {ratio('epoch_s'):.2f}x, "
          f"evaluation {med('strata','eval_s'):.3f} / {med('peer','eval_s'):.3f} s = {ratio('eval_s'):.2f}x, "
          f"peak RSS {med('strata','rss_mib'):.0f} / {med('peer','rss_mib'):.0f} MiB = {ratio('rss_mib'):.2f}x")
    print(json.dumps(dict(dataset=ds, epoch_ratio=ratio("epoch_s"), eval_ratio=ratio("eval_s"), rss_ratio=ratio("rss_mib"),
                          acc_strata=med("strata", "acc"), acc_peer=med("peer", "acc"))))
PY
